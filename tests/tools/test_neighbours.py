"""neighbour= and pin=: the matrix keys (parsed, and refused naming file:line and the key),
the hog (started, pinned, counted, stopped on every path), the slowdown figures and the
neighbours table from canned records, and under KVM: the quick neighbours matrix through the
bench (a hog sharing vCPU 1's host CPU) and the guest's steal time, non-zero with the hog on
vCPU 1's CPU and about zero without it."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from conftest import TOP, require
from idlelab.bench import matrix, matrixvalues
from idlelab.derive import runrow as derive
from idlelab.host import neighbour
from idlelab.report import plots, tables
from idlelab.report.layouts import neighbours as neighbours_table
from test_report import META, record

BENCH = os.path.join(TOP, "tools", "bench")
QUICK = os.path.join(TOP, "tools", "matrices", "quick", "neighbours.txt")
FULL = os.path.join(TOP, "tools", "matrices", "neighbours.txt")
BASE = "a: workload=x duration=1s "


def hogs_running():
    """Pids of build/host/hog processes (this tree's) still alive."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/exe") == neighbour.HOG:
                out.append(int(pid))
        except OSError:
            pass
    return out


@pytest.fixture(scope="module", autouse=True)
def built_hog():
    subprocess.run(["make", "-s", "-C", TOP, "build/host/hog"], check=True, timeout=120)


# --- the matrix keys ---------------------------------------------------------------------

def test_neighbour_and_pin_parse():
    runs = matrix.parse("defaults: workload=x duration=1s\n"
                        "a: neighbour=hog:2@0,1 pin=0+1\n"
                        "b: neighbour=none,hog:1@1,hog:3\n"
                        "c: neighbour=vm:workload=pingpong+pingpong.mode=spin+smp=2\n"
                        "d:\n", "m.txt", guest_knobs=matrix.guest_knob_names())
    a, *b, c, d = runs
    assert a.neighbour == matrixvalues.Neighbour("hog", "hog:2@0,1", threads=2, cpus=(0, 1))
    assert a.pin == (0, 1)
    assert [r.neighbour and r.neighbour.text for r in b] == [None, "hog:1@1", "hog:3"]
    assert [r.name for r in b] == ["b-neighbour=none", "b-neighbour=hog_1@1",
                                   "b-neighbour=hog_3"]
    assert c.neighbour.kind == "vm" and c.neighbour.smp == 2
    assert c.neighbour.knobs == ("workload=pingpong", "pingpong.mode=spin")
    assert d.neighbour is None and d.pin is None


@pytest.mark.parametrize("text, message", [
    (BASE + "neighbour=hog", "matrix.txt:1: neighbour=hog: expected 'none', 'hog:N[@CPU,...]'"),
    (BASE + "neighbour=hog:0", "matrix.txt:1: neighbour=hog:0: expected 'none', 'hog:N"),
    (BASE + "neighbour=hog:x", "matrix.txt:1: neighbour=hog:x: expected"),
    (BASE + "neighbour=hog:2@0,1,1", "matrix.txt:1: neighbour=hog:2@0,1,1: expected hog:2@... "
     "with one CPU for all threads or one per thread (2), not 3"),
    (BASE + "neighbour=hog:1@9999", "matrix.txt:1: neighbour=hog:1@9999: expected hog:N@CPU,... "
     "with host CPUs below"),
    (BASE + "neighbour=hog:1@a", "matrix.txt:1: neighbour=hog:1@a: expected hog:N@CPU,... with "
     "host CPU numbers (decimal)"),
    (BASE + "neighbour=cat", "matrix.txt:1: neighbour=cat: expected 'none', 'hog:N[@CPU,...]' "
     "or 'vm:KNOB=VALUE+...'"),
    (BASE + "neighbour=vm:hz=0", "matrix.txt:1: neighbour=vm:hz=0: expected vm:KNOBS naming a "
     "workload="),
    (BASE + "neighbour=vm:workload", "matrix.txt:1: neighbour=vm:workload: expected "
     "vm:KNOB=VALUE+KNOB=VALUE..."),
    (BASE + "neighbour=vm:workload=idle+duration=1s", "matrix.txt:1: "
     "neighbour=vm:workload=idle+duration=1s: expected vm: knobs without duration="),
    (BASE + "neighbour=vm:workload=idle+peroid=1us", "matrix.txt:1: "
     "neighbour=vm:workload=idle+peroid=1us: unknown guest knob 'peroid' (did you mean "
     "'period'?)"),
    (BASE + "neighbour=vm:workload=idle+smp=0", "matrix.txt:1: "
     "neighbour=vm:workload=idle+smp=0: expected vm:...+smp=N with N in 1..64"),
    (BASE + "neighbour=none,none", "matrix.txt:1: neighbour: a value repeats"),
    (BASE + "pin=0", "matrix.txt:1: pin=0: run 'a' has 2 vCPUs; pin= needs one host CPU per "
     "vCPU, joined by '+', not 1"),
    (BASE + "pin=0+x", "matrix.txt:1: pin=0+x: expected 'none' or CPU+CPU+... (vCPU i on the "
     "i-th) with host CPU numbers (decimal)"),
    ("defaults: pin=0+0\n" + BASE + "smp=1", "matrix.txt:2: pin=0+0: run 'a' has 1 vCPUs"),
    (BASE + "neighbor=hog:1", "matrix.txt:1: unknown key 'neighbor' (did you mean "
     "'neighbour'?)"),
])
def test_malformed_values_are_refused_naming_file_line_and_key(text, message):
    with pytest.raises(matrix.MatrixError) as e:
        matrix.parse(text, "matrix.txt", guest_knobs=matrix.guest_knob_names())
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_the_shipped_matrices_parse():
    knobs = matrix.guest_knob_names()
    full = matrix.load(FULL, guest_knobs=knobs)
    assert {r.name.split(".")[0] for r in full} >= {"neither", "host-poll", "guest-poll", "both",
                                                    "guest-poll-steal10"}
    assert any(r.neighbour and r.neighbour.threads == 2 for r in full)
    assert any(r.pin == (0, 1) for r in full) and any(r.pin == (0, 0) for r in full)
    assert all(r.neighbour for r in matrix.load(QUICK, guest_knobs=knobs))


# --- the hog -------------------------------------------------------------------------------

def test_a_hog_counts_pins_and_stops(tmp_path):
    spec = matrixvalues.parse_neighbour("hog:2@0")
    h = neighbour.start(spec, str(tmp_path))
    try:
        assert len(h.tids) == 2
        for tid in h.tids:
            assert os.sched_getaffinity(tid) == {0}
        a = h.read()
        time.sleep(0.2)
        t = neighbour.throughput(a, h.read())
        assert t["ops_per_s"] > 1e6 and all(n > 0 for n in t["per_thread_ops"]), t
        assert 0 < t["cpu_pct"] <= 110, t
    finally:
        h.stop()
    assert h.proc.poll() is not None and h.proc.pid not in hogs_running()
    assert not os.path.exists(h.path)


def test_a_hog_dies_with_its_parent(tmp_path):
    """PR_SET_PDEATHSIG: a bench killed with SIGKILL leaves no hog behind."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from idlelab.bench import matrixvalues\nfrom idlelab.host import neighbour\n"
            "h = neighbour.start(matrixvalues.parse_neighbour('hog:1'), %r)\n"
            "print(h.proc.pid, flush=True)\n"
            "import time; time.sleep(60)\n") % (os.path.join(TOP, "tools"), str(tmp_path))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    assert pid in hogs_running()
    p.send_signal(signal.SIGKILL)
    p.wait()
    for _ in range(100):
        if pid not in hogs_running():
            break
        time.sleep(0.02)
    assert pid not in hogs_running()


def test_measure_alone_reports_throughput_and_other_load(tmp_path):
    t = neighbour.measure_alone(matrixvalues.parse_neighbour("hog:1"), 200_000_000, str(tmp_path))
    assert t["ops_per_s"] > 1e6 and 0.15 < t["seconds"] < 1
    assert "other_pct" in t["load"]


# --- figures and the report from canned records -----------------------------------------------

def neighbour_record(name, config, with_ops, alone_ops, knobs=None, steal=None):
    rec = record("neighbours", name, config, "pingpong", knobs=knobs)
    rec["settings"] = {"neighbour": "hog:1@1", "pin": "0+1"}
    rec["pin"] = [0, 1]
    rec["neighbour"] = {"spec": "hog:1@1", "kind": "hog", "error": None,
                        "window": {"seconds": 1.0, "ops_per_s": with_ops, "cpu_pct": 50.0},
                        "alone": {"seconds": 1.0, "ops_per_s": alone_ops, "cpu_pct": 99.0,
                                  "load": {"other_pct": 1.5}}}
    return rec


def test_slowdown_is_one_minus_with_over_alone():
    row = derive.summarize(neighbour_record("neither.shared1", "neither", 3e9, 4e9))
    assert (row.neighbour, row.pin) == ("hog:1@1", "0+1")
    assert row.neighbour_ops_per_s == 3e9 and row.neighbour_alone_ops_per_s == 4e9
    assert row.neighbour_slowdown == 0.25 and row.neighbour_alone_other_load == 1.5
    assert derive.slowdown(None, 4e9) is None and derive.slowdown(1, 0) is None
    plain = derive.summarize(record("m", "plain", "plain", "pingpong"))
    assert plain.neighbour is None and plain.neighbour_slowdown is None


def test_a_neighbour_not_read_fails_the_run():
    from idlelab.bench import onerun
    from idlelab.host.qemu import Outcome
    rec = neighbour_record("x.shared1", "x", 1, 1)
    rec["neighbour"]["window"] = None
    status, reason = onerun.verdict(rec, Outcome("SUCCESS", 0x10, ""))
    assert status == "failed" and "neighbour=hog:1@1" in reason


def test_the_neighbours_table_and_verdict():
    rows = [derive.summarize(neighbour_record(f"{c}.shared1", c, ops, 4e9))
            for c, ops in (("neither", 3.6e9), ("host-poll", 3.4e9), ("guest-poll", 2.0e9),
                           ("both", 2.1e9))]
    md = tables.markdown("neighbours", rows, META)
    assert "| guest-poll | shared1 | 2000 | 50.0 |" in md
    assert "- shared1: host polling yields where guest polling does not: the hog kept 35.0 " \
        "points more" in md and "DISTURBED" not in md
    assert "host-poll +5.0 points" in md and "guest-poll +40.0 points" in md


def test_the_neighbours_plot(tmp_path, monkeypatch):
    """A point per run at (its round trip, the neighbour's throughput), named by its
    configuration, a series per neighbour case: read back from the figure drawn."""
    plt = plots.pyplot()
    if plt is None:
        pytest.skip("matplotlib is not installed")
    runs = [("neither.shared1", 2e9, 600.0), ("guest-poll.shared1", 4e9, 450.0),
            ("neither.shared2", 3e9, 700.0)]
    rows = [replace(derive.summarize(neighbour_record(n, n.split(".")[0], ops, 5e9)),
                    rtt_p50_us=rtt) for n, ops, rtt in runs]
    drawn = []
    monkeypatch.setattr(plots, "save", lambda fig, path, plt, note="": drawn.append(fig))
    plots.neighbours(rows, str(tmp_path / "n.png"), plt)
    (ax,) = drawn[0].axes
    series = {c.get_label(): [tuple(p) for p in c.get_offsets()] for c in ax.collections}
    assert series == {case: [(r.rtt_p50_us, r.neighbour_ops_per_s / 1e6) for r in rows
                             if r.name.endswith("." + case)] for case in ("shared1", "shared2")}
    assert [(t.get_text(), t.xy) for t in ax.texts] == \
        [(r.config, (r.rtt_p50_us, r.neighbour_ops_per_s / 1e6)) for r in
         sorted(rows, key=lambda r: r.name.split(".")[1])]
    assert "neighbours" in plots.PLOTS and neighbours_table.MATRIX == "neighbours"


# --- under KVM -------------------------------------------------------------------------------

def bench(tmp_path, matrix_path, timeout=180, ok=True):
    res = subprocess.run([sys.executable, BENCH, "--matrix", str(matrix_path), "--require-kvm",
                          "--no-cost-table", "--wait-quiet", "0",
                          "--results-dir", str(tmp_path / "res")],
                         capture_output=True, text=True, timeout=timeout)
    assert res.returncode == (0 if ok else 1), res.stdout[-3000:] + res.stderr[-3000:]
    out = tmp_path / "res" / os.readlink(tmp_path / "res" / "latest")
    recs = []
    for name in sorted(os.listdir(out / "raw")):
        with open(out / "raw" / name) as f:
            recs.append(json.load(f))
    with open(out / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    return out, recs, rows


@pytest.mark.kvm
@pytest.mark.kvm_full
def test_quick_neighbours_through_the_bench(tmp_path):
    """The quick matrix: a hog on vCPU 1's host CPU, guest polling off and on. Every run
    records the neighbour and its throughput over the window; no hog outlives the bench."""
    require("kvm")
    before = set(hogs_running())
    out, recs, rows = bench(tmp_path, QUICK)
    assert set(hogs_running()) <= before
    assert [r["status"] for r in recs] == ["ok", "ok"], [r["reason"] for r in recs]
    for rec, row in zip(recs, rows):
        n = rec["neighbour"]
        assert n["spec"] == "hog:1@1" and n["window"]["ops_per_s"] > 0
        assert n["alone"]["ops_per_s"] > 0
        assert rec["host"]["pinned"] == {"0": 0, "1": 1}
        tid = rec["host"]["vcpu_threads"]["1"]
        assert row["neighbour"] == "hog:1@1" and row["pin"] == "0+1"
        assert float(row["neighbour_ops_per_s"]) > 0 and row["neighbour_slowdown"] != ""
        assert tid
    # one alone measurement for the one spec, shared by both runs
    assert recs[0]["neighbour"]["alone"] == recs[1]["neighbour"]["alone"]
    assert (out / "neighbours.md").exists()


def steal_window_ns(rec):
    from idlelab.derive import guestrun
    return guestrun.parse_run(rec["serial"]).window_ns


def steal_of(rec, vcpu):
    from idlelab.derive import guestrun
    run = guestrun.parse_run(rec["serial"])
    assert run.idle["steal_time"] == "kvm"
    return {c["id"]: c["steal_ns"] for c in run.cpus}[vcpu] / run.window_ns


@pytest.mark.kvm
@pytest.mark.kvm_full
def test_guest_steal_time_with_a_hog_on_the_vcpus_cpu(tmp_path):
    """vCPU 1 busy (idle=poll) on host CPU 1, a hog pinned there too: KVM charges vCPU 1
    steal for the time the hog ran, and the guest reads it; without the hog, about none:
    below 10 % plus what the machine's other load over the window can explain (another job
    on the host steals from a vCPU just as the hog does, and so do QEMU's own threads)."""
    require("kvm")
    (tmp_path / "steal.txt").write_text(
        "defaults: smp=2 workload=idle duration=500ms guest.warmup=50ms guest.idle=poll "
        "guest.hz=0 pin=0+1\n"
        "shared: neighbour=hog:1@1\n"
        "alone:\n")
    _, (shared, alone), _ = bench(tmp_path, tmp_path / "steal.txt")
    assert shared["status"] == alone["status"] == "ok"
    with_hog, without = steal_of(shared, 1), steal_of(alone, 1)
    # The reader against the host's own figure: KVM's steal is the vCPU thread's run-queue
    # wait (schedstat), read by the probe at the same markers.
    for rec, steal in ((shared, with_hog), (alone, without)):
        window = steal_window_ns(rec)
        host = rec["host"]["run_delay_ns"]["1"] / window
        assert abs(steal - host) < 0.05 + 0.1 * host, (steal, host)
    load = alone["load"].get("window", {}).get("other_pct")
    assert with_hog > 0.2, f"steal with the hog on vCPU 1's CPU: {with_hog:.1%}"
    # other_pct is a share of all host CPUs, and all of it may have run on vCPU 1's CPU; QEMU's
    # own threads and the harness are not other load, yet share that CPU too (5.0 % of steal
    # alone with 0.0 % other load, once, on this 2-CPU machine): 10 % for them
    assert without < 0.10 + os.cpu_count() * (load or 0) / 100, \
        f"steal alone: {without:.1%} (other load {load} % of {os.cpu_count()} CPUs)"
    if load is not None and load < 20:      # a quiet machine: alone is clearly below
        assert without < with_hog / 3, (without, with_hog)


@pytest.mark.kvm
@pytest.mark.kvm_full
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_bench_leaves_no_neighbour_running(tmp_path, sig):
    """The bench stopped by a signal while a hog and the guest run: it reports what it has
    and exits 128 + the signal, and no hog outlives it."""
    require("kvm")
    (tmp_path / "m.txt").write_text("long: workload=pingpong duration=20s guest.warmup=10ms "
                                    "neighbour=hog:1 pin=0+1\n")
    before = set(hogs_running())
    p = subprocess.Popen([sys.executable, BENCH, "--matrix", str(tmp_path / "m.txt"),
                          "--require-kvm", "--no-cost-table", "--wait-quiet", "0",
                          "--results-dir", str(tmp_path / "res")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not set(hogs_running()) - before:
        time.sleep(0.05)
    assert set(hogs_running()) - before, "the hog never started"
    time.sleep(1.5)            # past the alone reference: the hog beside the guest
    p.send_signal(sig)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, out[-2000:]
    assert not set(hogs_running()) - before
    assert not [pid for pid in filter(str.isdigit, os.listdir("/proc"))
                if _cmdline(pid).startswith("qemu-system") and str(tmp_path) in _cmdline(pid)]


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.kvm
@pytest.mark.kvm_full
def test_a_second_guest_as_the_neighbour(tmp_path):
    """neighbour=vm:...: a second idlelab guest spinning beside the measured one; its
    throughput is its QEMU's CPU (CPU-ms per second of the window), and it is stopped."""
    require("kvm")
    (tmp_path / "vm.txt").write_text(
        "vmn: workload=pingpong duration=300ms guest.warmup=50ms "
        "neighbour=vm:workload=pingpong+pingpong.mode=spin+hz=0+smp=2\n"
        "dies: workload=pingpong duration=300ms guest.warmup=50ms "
        "neighbour=vm:workload=pingpong+hz=0\n")                 # 1 vCPU: pingpong refuses
    _, (rec, dead), (row, _) = bench(tmp_path, tmp_path / "vm.txt", ok=False)
    # it refuses its configuration and exits: at once, or later on a slow machine
    assert dead["status"] == "failed" and "neighbour=vm:workload=pingpong+hz=0" in \
        dead["reason"] and ("it exited" in dead["reason"] or "exited at once" in dead["reason"]), \
        dead["reason"]
    n = rec["neighbour"]
    assert rec["status"] == "ok" and n["kind"] == "vm", rec["reason"]
    assert 0 < n["window"]["ops_per_s"] <= 1000 * os.cpu_count() * 1.1
    assert n["alone"]["ops_per_s"] > 100          # a spinning vCPU: most of a CPU alone
    assert row["neighbour_slowdown"] != ""
    assert not [pid for pid in filter(str.isdigit, os.listdir("/proc"))
                if "idlelab-neighbour" in _cmdline(pid)]


def test_a_neighbour_and_the_cpu_split_switch_between_windows_of_one_boot(tmp_path):
    """within=neighbour (under TCG: the harness's side is the same as under KVM): a hog
    started before one arm's windows and stopped before the other's, its throughput read over
    its own windows only; pin=0+1 alone=1 keeps vCPU 1's host CPU for it, and every window
    has that CPU's mpstat split. No hog outlives the bench."""
    before = set(hogs_running())
    (tmp_path / "m.txt").write_text(
        "defaults: smp=2 workload=idle duration=300ms accel=tcg pin=0+1 alone=1 repeat=1\n"
        "w: neighbour=none,hog:1@0 within=neighbour rounds=1\n")
    res = subprocess.run([sys.executable, BENCH, "--matrix", str(tmp_path / "m.txt"),
                          "--accel", "tcg", "--no-cost-table", "--wait-quiet", "0",
                          "--results-dir", str(tmp_path / "res")],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert set(hogs_running()) <= before
    out = tmp_path / "res" / os.readlink(tmp_path / "res" / "latest")
    rec, = [json.load(open(out / "raw" / n)) for n in sorted(os.listdir(out / "raw"))]
    assert rec["status"] == "ok", rec["reason"]
    assert rec["alone"]["cpu"] == 1 and rec["alone"]["moved"] >= 1 and not rec["alone"]["error"]
    by_arm = {w["arm"]: w for w in rec["windows"]}
    assert len(by_arm) == 2
    hogged = [w for w in rec["windows"] if w["neighbour"]]
    assert len(hogged) == 1 and hogged[0]["neighbour"]["window"]["ops_per_s"] > 0
    assert hogged[0]["switched"]["neighbour"] == "hog:1@0"
    assert [w["neighbour"] for w in rec["windows"] if w is not hogged[0]] == [None]
    with open(out / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["neighbour"] for r in rows) == ["", "hog:1@0"]
    for r in rows:
        assert r["mpstat_cpu"] == "1" and r["mpstat_idle_pct"] != ""
    hog_row, = [r for r in rows if r["neighbour"]]
    assert float(hog_row["neighbour_ops_per_s"]) > 0
