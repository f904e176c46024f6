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
from idlelab.bench import ab, cli, matrix, windowplan, workplan
from idlelab.derive import guestrun, windows
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
    assert "guest=" not in lines["guest-msr x3"]
    assert lines["linux-hpgov-guest-poll-windows x3"].endswith(" linux_kernel=haltpoll-gov")


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


# --- windows= and settings switched between them (docs/windows.md) -------------------------

LINUX_TXT = os.path.join(TOP, "tools", "matrices", "linux.txt")
# The peer table's rows by name: an interface (runs.csv, the layout's pairing), whether a row
# runs in boots of its own or as windows of a within= row's boots.
PEER_NAMES = {"floor", "neither", "host-poll", "guest-poll", "guest-msr", "both",
              "host-poll.placed", "guest-poll.placed", "linux-floor", "linux-neither",
              "linux-host-poll", "linux-guest-poll", "linux-guest-msr",
              "linux-host-poll.placed", "linux-hpgov-floor", "linux-hpgov-guest-poll",
              "linux-hpgov-guest-msr", "linux-hpgov-guest-poll.placed"}


def test_the_peer_matrix_runs_neither_and_host_poll_inside_the_same_boots():
    """They differ in the kvm parameter alone (boot=): windows of the same boots, their
    names kept, the placed window too (resolved from the cost table before the boot); so do
    the guest-poll rows, in the guest's window alone (idlelab's, and Linux's under its
    haltpoll governor); the rows that differ in what a guest sets at boot stay apart."""
    runs = matrix.load(LINUX_TXT, guest_knobs=matrix.guest_knob_names())
    names = {c.name for r in runs for c in matrix.cells(r) if not c.name.count("sweep")}
    assert names == PEER_NAMES
    within = {r.name: r for r in runs if r.windows is not None}
    assert set(within) == {"neither-host-poll", "linux-neither-host-poll",
                           "guest-poll-windows", "linux-hpgov-guest-poll-windows"}
    for prefix, r in (("", within["neither-host-poll"]),
                      ("linux-", within["linux-neither-host-poll"])):
        assert [c.name for c in matrix.cells(r)] == [f"{prefix}neither", f"{prefix}host-poll",
                                                     f"{prefix}host-poll.placed"]
        # the rows differ in the kvm parameter alone, which the host switches
        assert [(a.host_params, a.guest) for a in r.windows.arms] == [
            ({"halt_poll_ns": 0}, {}), ({"halt_poll_ns": 300_000}, {}),
            ({"halt_poll_ns": "ipi_halt_rtt*8"}, {})]
        assert r.windows.windows == 6 and r.repeat == 3 and r.guest["idle"] == "halt"
        assert "windows=6" in matrix.guest_cmdline(r)
    assert within["linux-neither-host-poll"].guest_os == "linux"
    for prefix in ("", "linux-hpgov-"):
        r = within[f"{prefix}guest-poll-windows"]
        assert [c.name for c in matrix.cells(r)] == [f"{prefix}guest-poll",
                                                     f"{prefix}guest-poll.placed"]
        # the rows differ in the guest's haltpoll window alone, which both guests switch
        assert [(a.host_params, a.guest) for a in r.windows.arms] == [
            ({}, {"haltpoll.guest_halt_poll_ns": "300us"}),
            ({}, {"haltpoll.guest_halt_poll_ns": "ipi_halt_rtt*8"})]
    # a boot-time difference stays across boots (Debian's kernel has no haltpoll governor)
    assert all(r.windows is None for r in runs
               if r.name in ("linux-guest-poll", "linux-guest-msr", "guest-msr") or
               "floor" in r.name)
    workplan.check_cmdlines(workplan.load_matrices([LINUX_TXT]))      # nothing refused


def linux_matrix(tmp_path, row):
    path = tmp_path / "m.txt"
    path.write_text("defaults: smp=2 workload=pingpong duration=300ms guest=linux\n" + row + "\n")
    return [str(path)]


def test_what_the_linux_guest_cannot_switch_is_refused_before_the_boot_in_one_line(tmp_path):
    """Linux reads idle= and cpuidle_haltpoll.force at boot: idlelab switches them between
    windows, the Linux guest cannot, and its own list (tools/linuxguest/switchable.c) says so
    before anything boots."""
    for knob, values in (("guest.idle", "halt,poll"),
                         ("guest.cpuidle_haltpoll.force", "0,1")):
        paths = linux_matrix(tmp_path, f"a: {knob}={values} within={knob}")
        with pytest.raises(matrix.MatrixError) as e:
            workplan.check_cmdlines(workplan.load_matrices(paths))
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"{paths[0]}:2: run 'a'")
        assert f"{knob[len('guest.'):]} cannot change while the Linux guest runs" in msg
    # the same rows for idlelab's kernel switch
    idl = tmp_path / "i.txt"
    idl.write_text("i: workload=pingpong duration=300ms guest.idle=halt,poll within=guest.idle\n")
    workplan.check_cmdlines(workplan.load_matrices([str(idl)]))
    # the haltpoll governor's tunables switch in the Linux guest too
    workplan.check_cmdlines(workplan.load_matrices(linux_matrix(
        tmp_path, "b: guest.haltpoll.guest_halt_poll_ns=300us,2ms "
                  "within=guest.haltpoll.guest_halt_poll_ns")))


def test_ab_with_a_linux_base_is_judged_by_the_linux_guests_list():
    with pytest.raises(windowplan.PlanError, match="arm A: idle cannot change while the Linux"):
        ab.build("idle=halt", "idle=poll", base="guest=linux workload=pingpong duration=300ms")
    (_, _, (run,)), = ab.build("haltpoll.guest_halt_poll_ns=300us",
                               "haltpoll.guest_halt_poll_ns=1ms",
                               base="guest=linux workload=pingpong duration=300ms")
    assert run.guest_os == "linux" and run.windows.windows == 8


def test_the_host_tool_says_the_guests_own_refusal():
    assert workplan.kernel_refuses_switch("haltpoll.guest_halt_poll_grow=4", "linux") is None
    assert "pollflag cannot change while the Linux guest runs" in \
        workplan.kernel_refuses_switch("pollflag=0", "linux")
    assert workplan.kernel_refuses_switch("pollflag=0") is None          # idlelab's: it can
    res = subprocess.run([workplan.LINUX_KNOBCHECK], capture_output=True, text=True)
    assert res.returncode == 2 and "usage" in res.stderr


def windowed_boot(cmdline, settings=()):
    """A TCG boot of windows= that sends `settings` in order with the acknowledgements of the
    set and close markers (an empty line: none), as the window probe does."""
    procs, acks, todo = [], [], list(settings)

    def line(text):
        if text.startswith("@idlelab window ") and "sync=1" in text:
            state = text.split("state=", 1)[1].split()[0]
            qemu.acknowledge(procs[0], todo.pop(0) if state in ("set", "close") and todo
                             else "")
            acks.append(state)

    cfg = qemu.Config(smp=2, machine="pc", accel="tcg", guest="linux", cmdline=cmdline)
    return qemu.run(cfg, timeout=BOOT_TIMEOUT_S, on_start=procs.append, on_line=line), acks


WINDOWED = "workload=pingpong duration=200ms warmup=50ms window_gap=20ms window_sync=1 " \
           "window_sync_timeout=60s windows=3"


def test_three_windows_under_tcg_are_numbered_and_counted_apart(built):
    res, acks = windowed_boot(WINDOWED)
    assert res.outcome.name == "SUCCESS", res.output[-3000:]
    assert acks == ["set", "open", "close", "open", "close", "open", "close"]
    marks = [f for _, f in res.records("window")]
    assert [(m["state"], m["window"]) for m in marks] == [
        ("set", "1"), ("open", "1"), ("close", "1"), ("open", "2"), ("close", "2"),
        ("open", "3"), ("close", "3")]
    _, by_window, _ = windows.stretches(res.output)
    assert sorted(by_window) == [1, 2, 3]
    for k, lines in by_window.items():
        run = guestrun.parse_run(windows.window_serial([], lines, []))
        # each window's records after its close marker, its counts its own
        assert [c["id"] for c in run.cpus] == [0, 1] and run.result["ok"] == 1
        assert 200e6 <= run.result["window_ns"] < 200e6 + 1e9
        assert 0 < run.total("wakeups") <= 2 * run.result["iters"] + 2, (k, lines)


def test_a_setting_linux_takes_only_at_boot_ends_the_run_as_idlelabs_does(built):
    res, _ = windowed_boot(WINDOWED, ["", "cpuidle_haltpoll.force=1"])
    assert res.outcome.name == "BAD_KNOB", res.output[-3000:]
    (err,) = res.records("error")
    assert err[1]["what"] == "settings" and err[1]["window"] == "2"
    assert err[1]["msg"].startswith("cpuidle_haltpoll.force cannot change while the Linux")
    # refused at window 1's close barrier, before its records: nothing past it runs
    assert not res.records("result")
    assert [f["state"] for _, f in res.records("window")][-1] == "close"


def test_a_haltpoll_tunable_on_a_kernel_without_the_governor_is_refused(built):
    """Debian's kernel has no haltpoll governor, so no parameter to write."""
    res, _ = windowed_boot(WINDOWED, ["haltpoll.guest_halt_poll_ns=1ms"])
    assert res.outcome.name == "BAD_KNOB", res.output[-3000:]
    (err,) = res.records("error")
    assert err[1]["what"] == "settings" and err[1]["window"] == "1"
    assert "this kernel has no haltpoll governor" in err[1]["msg"]
    assert [f["state"] for _, f in res.records("window")] == ["set"]


@pytest.mark.kvm
@pytest.mark.kvm_full
def test_three_windows_under_the_nested_kvm_switch_the_hosts_window_between_them(built,
                                                                                tmp_path):
    """windows=3 under a real KVM (the nested host: Debian's kernel does not boot under this
    machine's own KVM, docs/platform-notes.md), the per-VM window switched before each
    window by the host as for idlelab: 0, 100 and 200 us, each window's row its own, and KVM
    polling only where its window is open (the guest idles by HLT: idle=halt)."""
    (tmp_path / "m.txt").write_text(
        "w: smp=2 workload=pingpong duration=300ms guest=linux guest.idle=halt repeat=1 "
        "halt_poll_ns=0,100us,200us within=halt_poll_ns rounds=1\n")
    res = subprocess.run([sys.executable, os.path.join(TOP, "tools", "bench"), "--matrix",
                          str(tmp_path / "m.txt"), "--accel", "nested", "--no-cost-table",
                          "--results-dir", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    with open(tmp_path / "out" / "latest" / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["name"], r["window"], r["status"]) for r in rows] == [
        ("w-halt_poll_ns=0", "1", "ok"), ("w-halt_poll_ns=100us", "2", "ok"),
        ("w-halt_poll_ns=200us", "3", "ok")]
    assert all(r["guest"] == "linux" and r["accel"] == "kvm" for r in rows)
    assert [int(r["halt_poll_ns"]) for r in rows] == [0, 100_000, 200_000]
    assert int(rows[0]["host_attempted_poll"]) == 0          # window closed: KVM never polls
    assert all(int(r["iters"]) > 0 for r in rows)
    (raw,) = (tmp_path / "out" / "latest" / "raw").iterdir()
    rec = json.loads(raw.read_text())
    lines = rec["serial"].splitlines()
    marks = [ln.split("state=")[1].split()[0] + ln.split("window=")[1]
             for ln in lines if ln.startswith("@idlelab window ")]
    assert marks == ["set1", "open1", "close1", "open2", "close2", "open3", "close3"]
    assert sum(ln.startswith("@idlelab result ") for ln in lines) == 3
    # what the host wrote before each window, as its record says it
    assert [w["switched"]["vm_halt_poll_ns"] for w in rec["windows"]] == [0, 100_000, 200_000]
