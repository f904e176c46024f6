"""The Linux guest (tools/linuxguest/, `--guest linux`, `guest=linux`): its initramfs builds
from Debian's packages, and under TCG each workload boots Debian's kernel, prints the records
the harness reads, honours the window markers (it waits for the host's byte at each) and
counts coherently; a bad knob ends it with the kernel parser's message and BAD_KNOB; and one
bench matrix row with guest=linux is measured as an idlelab guest is."""
import csv
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP
from idlelab.bench import cli
from idlelab.derive import guestrun
from idlelab.host import qemu

BOOT_TIMEOUT_S = 240     # Debian's kernel under TCG on a loaded 2-CPU machine: ~20-60 s
SHORT = "duration=300ms warmup=100ms window_sync=1 window_sync_timeout=60s"


@pytest.fixture(scope="module")
def built():
    """The initramfs (and the nested host's image, whose kernel the guest boots)."""
    env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    res = subprocess.run(["make", "-s", "--no-print-directory", "-C", TOP,
                          "build/nested/image/manifest.json", "build/linuxguest/initrd.img"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    for f in (qemu.LINUX_KERNEL, qemu.LINUX_INITRD):
        assert os.path.isfile(f), f


def boot(cmdline, smp=2):
    """One TCG boot; the test acknowledges each synchronised marker as the probe does. On
    machine pc: under TCG, microvm gives Linux no HPET or ACPI PM timer to calibrate its TSC
    against, and on a busy host its PIT calibration fails and the boot hangs."""
    procs, acks = [], []

    def line(text):
        if text.startswith("@idlelab window ") and "sync=1" in text:
            qemu.acknowledge(procs[0])
            acks.append(text)

    cfg = qemu.Config(smp=smp, machine="pc", accel="tcg", guest="linux", cmdline=cmdline)
    res = qemu.run(cfg, timeout=BOOT_TIMEOUT_S, on_start=procs.append, on_line=line)
    return res, acks


def test_the_initramfs_holds_busybox_init_and_the_static_program(built):
    listing = subprocess.run(f"gzip -dc {qemu.LINUX_INITRD} | cpio -it --quiet", shell=True,
                             capture_output=True, text=True, timeout=60).stdout.split()
    assert {"init", "bin/busybox", "bin/idlelab-linux"} <= set(listing)
    prog = os.path.join(TOP, "build", "linuxguest", "idlelab-linux")
    kind = subprocess.run(["file", "-L", prog], capture_output=True, text=True).stdout
    assert "statically linked" in kind


def test_the_qemu_command_boots_linux_with_its_own_command_line():
    cfg = qemu.Config(smp=2, accel="tcg", guest="linux", cmdline="workload=idle")
    argv, _ = qemu.build_command(cfg)
    assert argv[argv.index("-kernel") + 1] == qemu.LINUX_KERNEL
    assert argv[argv.index("-initrd") + 1] == qemu.LINUX_INITRD
    # no "--": Linux would hand what follows it to init instead of parsing it
    assert argv[argv.index("-append") + 1] == f"{qemu.LINUX_CMDLINE} workload=idle"
    idl, _ = qemu.build_command(qemu.Config(accel="tcg", cmdline="workload=idle"))
    assert "-initrd" not in idl and idl[idl.index("-append") + 1] == "-- workload=idle"
    with pytest.raises(ValueError, match="guest must be one of idlelab|linux"):
        qemu.build_command(qemu.Config(accel="tcg", guest="bsd"))


def test_qemu_run_refuses_an_unknown_guest_in_one_line():
    res = subprocess.run([sys.executable, os.path.join(TOP, "tools", "qemu-run"),
                          "--guest", "bsd", "--print-cmd"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "--guest" in res.stderr


def test_the_bench_lists_which_runs_boot_linux(capsys):
    assert cli.main(["--matrix", os.path.join(TOP, "tools", "matrices", "linux.txt"),
                     "--list"]) == 0
    lines = {ln.split(":")[0].strip(): ln for ln in capsys.readouterr().out.splitlines()}
    assert lines["linux-guest-poll x3"].endswith(" guest=linux")
    assert "cpuidle_haltpoll.force=1" in lines["linux-guest-poll x3"]
    assert "guest=" not in lines["guest-poll x3"]


def check_common(res, acks, workload):
    """What every Linux run must show; returns the parsed run."""
    assert res.outcome.name == "SUCCESS", res.output[-3000:]
    run = guestrun.parse_run(res.output)
    assert run.boot["guest"] == "linux" and run.boot["cpus"] == 2
    assert run.idle["policy"].startswith("linux-") and run.idle["governor"]
    assert run.config["workload"] == workload and run.config["window_sync"] == "1"
    assert [(w["state"], w["sync"]) for w in run.windows] == [("open", 1), ("close", 1)]
    assert len(acks) == 2          # it waited for the host at both markers
    # the window the markers bound holds the measured duration (300 ms) and the markers'
    # own time (~30 ms here). Real-time spinners would starve the kworker that carries the
    # console's bytes: their markers took ~1 s each (RT throttling), this bound catches it
    assert 300e6 <= run.window_ns < 300e6 + 1e9
    assert [c["id"] for c in run.cpus] == [0, 1]
    assert run.result["workload"] == workload and run.result["ok"] == 1
    assert run.exit["name"] == "SUCCESS"
    assert guestrun.check_invariants(run) == []
    return run


def test_pingpong_under_tcg(built):
    res, acks = boot(f"workload=pingpong {SHORT}")
    run = check_common(res, acks, "pingpong")
    assert run.idle["override"] == "none"
    r = run.result
    assert r["iters"] > 0 and r["pairs"] == 1
    assert 0 < r["rtt_p50_ns"] <= r["rtt_p90_ns"] <= r["rtt_p99_ns"] <= r["rtt_max_ns"]
    # each round trip wakes each side at most once: a futex wake that found nobody asleep
    # (the other side had not gone to sleep yet) is not one
    assert 0 < run.total("wakeups") <= 2 * r["iters"] + 2
    assert abs(r["rt_per_s"] - r["iters"] * 1e9 / r["window_ns"]) <= 1


def test_idle_under_tcg_counts_idle_time_inside_the_window(built):
    res, acks = boot(f"workload=idle idle=halt {SHORT}")
    run = check_common(res, acks, "idle")
    assert run.total("wakeups") == 0
    assert run.idle["override"] == "halt"     # Linux's idle=, not the program's
    if run.idle["driver"] != "none":
        # an idle guest spends most of its window idle (invariants bound it above)
        assert all(c["idle_ns"] > run.window_ns // 4 for c in run.cpus), run.cpus
        assert all("poll_hits" not in c for c in run.cpus)   # Linux cannot tell hits


def test_a_marker_the_host_never_acknowledges_ends_the_run_with_sync_timeout(built):
    cfg = qemu.Config(smp=2, machine="pc", accel="tcg", guest="linux",
                      cmdline="workload=idle duration=100ms window_sync=1 "
                              "window_sync_timeout=2s")
    res = qemu.run(cfg, timeout=BOOT_TIMEOUT_S)      # nobody acknowledges
    assert res.outcome.name == "SYNC_TIMEOUT", res.output[-2000:]
    (err,) = res.records("error")
    assert err[1]["what"] == "window_sync" and err[1]["msg"].startswith("open marker: no "
                                                                        "acknowledgement")
    assert [r[1]["state"] for r in res.records("window")] == ["open"]


def test_a_bad_knob_ends_the_run_with_the_kernel_parsers_message(built):
    res, _ = boot("workload=random duration=1s", smp=1)
    assert res.outcome.name == "BAD_KNOB", res.output[-2000:]
    (err,) = res.records("error")
    assert err[1]["what"] == "knob" and "workload=random" in err[1]["msg"]



def test_a_bench_row_with_guest_linux_is_measured_like_idlelabs(built, tmp_path):
    """One matrix row through tools/bench under TCG: the probe reads and acknowledges the
    Linux guest's markers as an idlelab guest's, and runs.csv says which guest ran, with the
    guest's figures (and the KVM columns n/a under TCG)."""
    (tmp_path / "m.txt").write_text(
        "defaults: smp=2 workload=periodic duration=300ms guest.period=2ms machine=pc\n"
        "linux: guest=linux accel=tcg guest.window_sync_timeout=60s\n")
    res = subprocess.run([sys.executable, os.path.join(TOP, "tools", "bench"), "--matrix",
                          str(tmp_path / "m.txt"), "--accel", "tcg", "--no-cost-table",
                          "--timeout", str(BOOT_TIMEOUT_S), "--results-dir",
                          str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=BOOT_TIMEOUT_S + 120)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    with open(tmp_path / "out" / "latest" / "runs.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["status"], row["guest"], row["accel"]) == ("ok", "linux", "tcg")
    assert row["guest_idle"].startswith("linux-") and row["window_sync"] == "1"
    assert int(row["wakes"]) > 0 and int(row["guest_wakeups"]) == int(row["wakes"])
    assert row["host_halt_exits"] == "n/a (TCG)" and row["guest_poll_hits"] == ""
    assert float(row["host_cpu_pct"]) > 0      # the vCPU threads were read at both markers
    # the periodic workload itself, from the guest's records in the raw record
    (raw,) = (tmp_path / "out" / "latest" / "raw").iterdir()
    run = guestrun.parse_run(json.loads(raw.read_text())["serial"])
    r = run.result
    assert r["cpus"] == 2 and r["period_ns"] == 2_000_000
    # the per-CPU wake-ups count the same sleeps as the result, CPU by CPU
    assert run.total("wakeups") == r["wakes"] > 0
    assert r["achieved_period_ns"] >= 2_000_000 * 0.9
    assert r["late_p50_ns"] <= r["late_p99_ns"] <= r["late_max_ns"]
    assert guestrun.check_invariants(run) == []
