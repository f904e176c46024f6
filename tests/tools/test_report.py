"""tools/bench's reports from canned run records (no QEMU): the RunRow of a run, the
accuracy check, TCG marking, repeats, runs.csv, each seed's markdown table and the plots."""
import builtins
import csv
import errno
import json
import os
import re
import statistics
import subprocess

import pytest

from conftest import TOP
from idlelab import usage
from idlelab.bench import cli, invocation
from idlelab.derive import effects, guestrun, runrow as derive, runrow, tolerance
from idlelab.report import console, plots, resultsdir, tables
from idlelab.report.layouts import governors as governors_table
from idlelab.sim import predict
from idlelab.derive.runrow import NA_TCG

CPU = ("@idlelab cpu id={id} ctx_switches=5 wakeups=3 wakeups_local=1 wakeups_remote=2 "
       "ipi_sent={ipi} ipi_avoided=0 ipi_received=2 timer_irqs=4 ticks=3 idle_entries={ie} "
       "poll_entries=0 poll_hits=0 poll_immediate=0 poll_expired=0 halts={halts} "
       "halts_aborted=1 hlt={hlt} grow=0 shrink=0 window_ns=0 idle_ns=300 poll_ns=0 "
       "halt_ns=300 poll_overshoot_ns=0 poll_overshoot_max_ns=0")
RESULTS = {
    "pingpong": "workload=pingpong ok=1 pairs=1 iters={n} window_ns=1000000000 "
                "rtt_p50_ns={rtt} rtt_p90_ns=700000 rtt_p99_ns=900000 rtt_max_ns=1000000 "
                "rt_per_s={n} think_ns=0",
    "idle": "workload=idle ok=1 cpus=2 window_ns=1000000000",
    "periodic": "workload=periodic ok=1 cpus=1 period_ns=1000000 window_ns=1000000000 "
                "wakes=1000 achieved_period_ns=1000000 late_p50_ns=400000 late_p99_ns=500000 "
                "late_max_ns=600000",
    "random": "workload=random ok=1 cpus=1 dist=exp mean_ns=200000 spread_ns=250000 seed=1 "
              "window_ns=1000000000 wakes=900 interval_mean_ns=210000 late_p50_ns=420000 "
              "late_p99_ns=900000 late_max_ns=1000000",
}
SEC = 1_000_000_000
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def numbers(text):
    """Every number in a piece of the reports' text, in order: what a test asserts of a
    sentence, whose wording may change."""
    return [float(x) for x in NUMBER.findall(text)]


def verdict(md, about):
    """(verdict, figures) of the effect line `- **VERDICT**: ABOUT...`: the numbers between
    `about` and the line's first ';' (what was measured, and its change)."""
    for line in md.splitlines():
        m = re.match(r"- \*\*([a-z ]+)\*\*: (.*)", line)
        if m and m.group(2).startswith(about):
            return m.group(1), numbers(m.group(2)[len(about):].split(";")[0])
    raise AssertionError(f"no verdict on {about!r} in:\n{md}")


def sentence(text, start):
    """The sentence of `text` that begins with `start` (up to a full stop and a blank)."""
    at = text.index(start)
    return re.split(r"\.(?:\s|$)", text[at:], maxsplit=1)[0]


def named(text, pattern):
    """What a verdict's sentence names where `pattern` (a regex with one group: the list)
    matches: the list's items, as the layout joins them with ", "."""
    m = re.search(pattern, text)
    assert m, (pattern, text)
    return m.group(1).split(", ")


def serial(workload, knobs, hlt, policy="halt", msr=1, rtt=600000, n=1000):
    """Guest output as the kernel prints it (the records derive/runrow.py reads)."""
    lines = ["idlelab: booted via multiboot1",
             f"@idlelab idle policy={policy} reason=knob pollflag=1 hostpoll="
             f"{knobs.get('hostpoll', 'auto')} msr={msr}",
             "@idlelab boot cpus=2 tsc_hz=2596136000 kvm=1",
             "@idlelab config " + " ".join(
                 f"{k}={v}" for k, v in dict({"hz": "250", "idle": policy, "cpus": "0",
                                              "hostpoll": "auto", "period": "250us",
                                              "haltpoll.guest_halt_poll_ns": "200us"},
                                             **knobs).items()),
             f"@idlelab window state=open what={workload} t_ns=1000",
             f"@idlelab window state=close what={workload} t_ns={1000 + SEC}"]
    for i, h in enumerate(hlt):
        lines.append(CPU.format(id=i, ipi=n, ie=h + 1, halts=h + 1, hlt=h))
    lines.append("@idlelab result " + RESULTS[workload].format(n=n, rtt=rtt))
    lines.append("@idlelab exit code=0x10 name=SUCCESS cpu=0")
    return "\n".join(lines) + "\n"


HOST_PARAMS = {"halt_poll_ns": 200000, "halt_poll_ns_grow": 2,
               "halt_poll_ns_grow_start": 10000, "halt_poll_ns_shrink": 2}


def record(matrix, name, config, workload, knobs=None, vm_ns=200000, hlt=(500, 500),
           exits=None, attempted=(0, 0), ok=(0, 0), cpu_pct=(50.0, 50.0), poll_ns=(0, 0),
           status="ok", reason=None, accel="kvm", shrink=None, msr=1, policy="halt",
           rtt=600000, repeat=1, other=0.5, trace=None):
    """A raw record shaped like onerun.execute()'s, after a JSON round trip."""
    knobs = dict(knobs or {})
    wanted = {} if shrink is None else {"halt_poll_ns_shrink": shrink}
    rec = {"matrix": matrix, "name": name, "config": config, "repeat": repeat, "repeats": 1,
           "workload": workload, "smp": 2, "accel": accel, "status": status, "reason": reason,
           "guest_knobs": knobs, "halt_poll": {"scope": "vm", "ns": vm_ns},
           "host_params": {"wanted": wanted, "values": HOST_PARAMS,
                           "read_only": list(HOST_PARAMS), "changed": {}},
           "settings": {}, "sweep": {}}
    if status != "ok":
        return rec
    exits = hlt if exits is None else exits
    stats = {} if accel != "kvm" else {
        str(c): {"halt_exits": exits[c], "halt_attempted_poll": attempted[c],
                 "halt_successful_poll": ok[c], "halt_poll_invalid": 0,
                 "halt_wakeup": exits[c], "halt_poll_success_ns": poll_ns[c],
                 "halt_poll_fail_ns": 0, "halt_wait_ns": 1, "exits": 2 * exits[c],
                 "irq_exits": 0, "insn_emulation": 10, "halt_wait_hist": [0] * 32}
        for c in range(2)}
    rec.update(
        serial=serial(workload, knobs, hlt, policy=policy, msr=msr, rtt=rtt),
        qemu={"status": 33, "outcome": "SUCCESS", "timed_out": False, "seconds": 2.0},
        host={"vcpu_threads": {"0": 11, "1": 12}, "errors": [],
              "open": {"sample_ms": 9.0, "read_ms": 3.0, "late": False},
              "close": {"sample_ms": 3.5, "read_ms": 3.5, "late": False},
              "delta": {"elapsed_ns": SEC, "stats": stats,
                        "thread_cpu_ns": {str(c): int(cpu_pct[c] * SEC / 100)
                                          for c in range(2)}}},
        load={"run": {"other_pct": other, "steal_pct": 0.0},
              "window": {"other_pct": other}, "loadavg": [0.3, 0.2, 0.1]},
        haltpoll_cap=[vm_ns])
    if trace is not None:
        rec["trace"] = trace
    return json.loads(json.dumps(rec))


def test_summarize_puts_host_deltas_next_to_guest_counters():
    rec = record("seed002", "host-poll", "host-poll", "pingpong", {"idle": "halt"},
                 vm_ns=300000, hlt=(500, 480), exits=(500, 500), attempted=(400, 300),
                 ok=(380, 250), cpu_pct=(90.0, 70.0), poll_ns=(100_000_000, 50_000_000))
    row = derive.summarize(rec)
    assert (row.config, row.workload, row.halt_poll_ns, row.guest_idle,
            row.hostpoll, row.msr) == ("host-poll", "pingpong", 300000, "halt", "auto", "1")
    assert (row.guest_hlt, row.host_halt_exits, row.host_attempted_poll,
            row.host_successful_poll) == (980, 1000, 700, 630)
    assert row.poll_success_pct == 90.0
    assert row.host_cpu_pct == 80.0 and row.host_cpu_pct_vcpus == "90.0/70.0"
    assert row.host_poll_pct == 7.5 and row.halt_exits_per_s == 500.0
    assert (row.hlt_diff, row.hlt_diff_pct, row.hlt_diff_vcpus, row.accuracy_flag) == \
        (20, 2.0, "+0/+20", True)
    assert (row.rtt_p50_us, row.rt_per_s, row.iters) == (600.0, 1000, 1000)
    assert (row.other_load, row.loadavg_1m) == (0.5, 0.3)
    text = derive.accuracy_text(row)
    assert numbers(text.split(" DIFFERENCE")[0]) == [980, 1000, 20, 2.0, 0, 20]
    assert tolerance.describe() in text      # flagged, saying by which rule
    assert row.guest_shadow_breaks is None      # a kernel that does not count them


def test_a_broken_shadow_is_counted_and_named_the_hosts():
    """The per-CPU records' shadow_breaks, summed, in the row and in the progress line."""
    rec = record("seed002", "host-poll", "host-poll", "pingpong", {"idle": "halt"},
                 vm_ns=300000, hlt=(500, 500), exits=(500, 500), attempted=(400, 300),
                 ok=(380, 250), cpu_pct=(90.0, 70.0), poll_ns=(100_000_000, 50_000_000))
    rec["serial"] = re.sub(r"(@idlelab cpu id=(\d)[^\n]*)", lambda m: m.group(1) +
                           f" shadow_breaks={m.group(2)}", rec["serial"])
    row = derive.summarize(rec)
    assert row.guest_shadow_breaks == 1
    said = derive.accuracy_text(row).split("; ")[-2]     # the last clause, before its own ";"
    assert numbers(said) == [1] and "shadow" in said


def test_side_by_side_pairs_guest_and_host_per_vcpu():
    rec = record("seed002", "host-poll", "host-poll", "pingpong", hlt=(500, 480),
                 exits=(500, 490), attempted=(400, 300), cpu_pct=(90.0, 70.0))
    a, b = derive.side_by_side(rec)
    assert (a["vcpu"], a["guest"]["hlt"], a["host"]["halt_exits"], a["host_cpu_pct"]) == \
        (0, 500, 500, 90.0)
    assert (b["guest"]["hlt"], b["host"]["halt_exits"], b["host"]["halt_attempted_poll"]) == \
        (480, 490, 300)


def test_accuracy_is_exact_and_per_vcpu():
    """Synchronised edges make every HLT one halt exit on the same vCPU: equal sums hide
    nothing, one exit of difference on one vCPU is flagged."""
    equal = derive.summarize(record("m", "a", "a", "idle", hlt=(100, 7), exits=(100, 7)))
    assert (equal.hlt_diff, equal.hlt_diff_vcpus, equal.accuracy_flag) == (0, "+0/+0", False)
    one = derive.summarize(record("m", "a", "a", "idle", hlt=(100, 7), exits=(100, 8)))
    assert (one.hlt_diff, one.hlt_diff_vcpus, one.accuracy_flag) == (1, "+0/+1", True)
    assert "DIFFERENCE" in derive.accuracy_text(one)
    # a difference that cancels out in the sum is still two vCPUs off
    swapped = derive.summarize(record("m", "a", "a", "idle", hlt=(100, 7), exits=(99, 8)))
    assert (swapped.hlt_diff, swapped.hlt_diff_vcpus, swapped.accuracy_flag) == \
        (0, "-1/+1", True)


def test_idle_workload_leaves_out_the_marker_vcpu():
    row = derive.summarize(record("seed000", "n.idle-hz=250", "n", "idle", {"hz": "250"},
                                  cpu_pct=(15.0, 9.0)))
    assert row.workload_vcpus == "1" and row.host_cpu_pct == 9.0 and row.hz == 250
    assert derive.workload_vcpus("periodic", 2, 0x2) == [1]
    assert derive.workload_vcpus("pingpong", 2, 0) == [0, 1]


def test_tcg_marks_the_host_columns():
    row = derive.summarize(record("seed002", "neither", "neither", "pingpong", accel="tcg"))
    assert row.host_halt_exits == NA_TCG and row.host_attempted_poll == NA_TCG
    assert row.accuracy_flag == NA_TCG
    assert row.halt_poll_ns == 200000    # what the run asked for, still named
    assert row.guest_hlt == 1000 and row.host_cpu_pct == 50.0
    text = derive.accuracy_text(row)
    assert numbers(text) == [1000] and text.endswith(NA_TCG)


def test_not_run_rows_keep_what_the_matrix_asked():
    rec = record("seed004", "random-host_shrink=0", "random", "random", {"idle": "halt"},
                 status="not run", reason="halt_poll_ns_shrink is read-only (fixed at 2)",
                 shrink=0)
    row = derive.summarize(rec)
    assert (row.status, row.host_shrink, row.guest_idle) == ("not run", 0, "halt")
    assert row.host_halt_exits is None


def test_aggregate_takes_medians_over_repeats():
    rows = [derive.summarize(record("seed002", "neither", "neither", "pingpong", rtt=r,
                                    repeat=i)) for i, r in enumerate((500000, 700000, 600000))]
    (agg,) = runrow.aggregate(rows)
    assert agg.rtt_p50_us == 600.0 and agg.repeat == 3


# seed 003's periods as the matrix names them, and as the guest got them
SEED003_PERIODS = (("250us", "250us"), ("timer+300us", "1ms"), ("2ms", "2ms"))
# KVM's trace of a seed 004 run (trace=halt_poll_ns), as onerun keeps it
TRACE = {"what": "halt_poll_ns", "lost": 0, "truncated": False,
         "events": [[-5000, 1, "change", 10000, 0, 1], [-4900, 1, "wakeup", 0, 5000, 1],
                    [1000, 1, "wakeup", 1, 50000, 1],
                    [4900, 1, "change", 20000, 10000, 1], [5000, 1, "wakeup", 1, 40000, 1],
                    [8900, 1, "change", 10000, 20000, 0], [9000, 1, "wakeup", 1, 900000, 1],
                    [9500, 1, "wakeup", 0, 3000, 1]]}


def seed_records(varied=False):
    """A canned set covering the four seed matrices, shaped like the quick run. varied: three
    repeats of each run, every boot with figures of its own (no two alike), so that a report
    cell or a plotted point taken from another run, another column or one repeat instead of
    their median shows against runs.csv."""
    recs = []

    def add(*args, **kw):
        if not varied:
            recs.append(record(*args, **kw))
            return
        for rep in (1, 2, 3):
            n = len(recs) + 1
            kw.update(repeat=rep, cpu_pct=(1.0 + n / 8, 2.0 + n / 4), rtt=400_000 + 1_000 * n,
                      hlt=(100 + n, 200 + 3 * n), attempted=(100 + n, 100 + 2 * n),
                      ok=(n, 2 * n))
            recs.append(record(*args, **kw))

    for cfg, ns, cpu250 in (("no-poll", 0, 9.0), ("always-poll", 10_000_000, 88.0),
                            ("dynamic-poll", 200000, 11.0)):
        for hz, cpu in (("0", 0.02), ("250", cpu250)):
            add("seed000", f"{cfg}.idle-hz={hz}", cfg, "idle", {"idle": "halt", "hz": hz},
                vm_ns=ns, cpu_pct=(5.0, cpu))
        add("seed000", f"{cfg}.rr", cfg, "pingpong", {"idle": "halt"}, vm_ns=ns,
            rtt={"no-poll": 590000}.get(cfg, 500000))
    for cfg, pol, msr, ns, rtt in (("neither", "halt", 1, 0, 600000),
                                   ("host-poll", "halt", 1, 300000, 500000),
                                   ("guest-poll", "haltpoll", 0, 300000, 480000),
                                   ("both", "haltpoll", 1, 300000, 470000)):
        add("seed002", cfg, cfg, "pingpong",
            {"idle": pol, "haltpoll.guest_halt_poll_ns": "300us"}, vm_ns=ns, policy=pol,
            msr=msr, rtt=rtt)
    for asked, period in SEED003_PERIODS:
        for ns in (0, 200000, 400000):
            hot = asked == "timer+300us" and ns == 400000
            add("seed003", f"periodic-period={asked}-halt_poll_ns={ns}", "periodic",
                "periodic", {"idle": "halt", "hz": "0", "cpus": "0x2", "period": period},
                vm_ns=ns, cpu_pct=(1.0, 98.0 if hot else 60.0),
                poll_ns=(0, 300_000_000 if hot else 0), hlt=(1, 1000))
    for w in ("random", "pingpong"):
        add("seed004", f"{w}-host_shrink=0", w, w, {"idle": "halt"}, status="not run",
            shrink=0, reason="halt_poll_ns_shrink is read-only (fixed at 2)")
        add("seed004", f"{w}-host_shrink=2", w, w, {"idle": "halt"}, shrink=2,
            attempted=(100, 100), ok=(20, 40), trace=TRACE)
    return recs


META = {"results": "results/20990101-000000", "quick": True, "accel": "kvm", "host_cpus": 2,
        "started": "2099-01-01 00:00:00",
        "host_params_note": "kvm parameters read-only here: halt_poll_ns=200000 "
                            "halt_poll_ns_grow=2 halt_poll_ns_grow_start=10000 "
                            "halt_poll_ns_shrink=2"}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    recs = seed_records()
    paths = resultsdir.write_all(str(out), recs, META)
    return out, recs, paths


def test_csv_has_one_row_per_run_and_the_required_columns(written):
    out, recs, _ = written
    with open(out / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(recs)
    for col in ("config", "workload", "halt_poll_ns", "guest_idle", "hostpoll", "guest_hlt",
                "host_halt_exits", "host_attempted_poll", "host_successful_poll",
                "host_cpu_pct", "other_load", "rtt_p50_us", "late_p50_us"):
        assert col in rows[0], col
    nr = [r for r in rows if r["status"] == "not run"]
    assert len(nr) == 2 and nr[0]["reason"] == "halt_poll_ns_shrink is read-only (fixed at 2)"
    gp = next(r for r in rows if r["name"] == "guest-poll")
    assert (gp["guest_idle"], gp["msr"], gp["host_attempted_poll"]) == ("haltpoll", "0", "0")


def _table(md, first_cell):
    """The table row whose first cell is `first_cell`, as a list of cells."""
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            return cells[1:]
    raise AssertionError(f"no row {first_cell!r} in:\n{md}")


def test_seed000_table_is_laid_out_like_the_seed(written):
    md = (written[0] / "seed000.md").read_text()
    assert _table(md, "") == ["no-poll", "always-poll", "dynamic-poll"]
    assert _table(md, "Idle (nohz) vCPU host CPU %") == ["0.02", "0.02", "0.02"]
    assert _table(md, "Idle (250HZ) vCPU host CPU %") == ["9.00", "88.00", "11.00"]
    assert _table(md, "pingpong RTT p50, µs (TCP_RR latency)") == ["590", "500", "500"]
    assert "results/20990101-000000" in md and "read-only" in md
    published = next(ln for ln in md.splitlines() if ln.startswith("TCP_RR latency"))
    assert numbers(published) == [34, 27, 26.7]    # the seed's own table, for comparison


def test_seed002_rows_and_reference_ratio(written):
    md = (written[0] / "seed002.md").read_text()
    assert _table(md, "neither: halt_poll_ns=0 / no guest busy spin")[:3] == \
        ["600", "1.00", "100.0"]
    row = _table(md, "guest-poll: halt_poll_ns=300000 (MSR=0: host polling off) / "
                     "guest_halt_poll_ns=300us")
    assert row[:3] == ["480", "0.80", "125.0"]
    # host polling's 300 µs window; 500 µs and 480 µs round trips: -20 µs, -4 %, one run
    # each: no verdict from a single run (derive/pairs.py)
    assert verdict(md, "round trip: guest polling (host window 0) against host polling") == \
        ("not decided", [300, 500, 480, -20, -4])


def test_seed003_rows_are_periods_and_columns_windows(written):
    md = (written[0] / "seed003.md").read_text()
    head = _table(md, "period µs")
    assert head == ["achieved µs (halt_poll_ns=0)"] + [
        x for w in (0, 200000, 400000)
        for x in (f"halt_poll_ns={w}: host CPU %", "polling %", "halt exits/s")]
    assert _table(md, "1000")[0] == "1000"
    assert _table(md, "1000")[1::3] == ["60.0", "60.0", "98.0"]
    placed = md[md.index("mpstat view at period timer+300us (1000 µs"):]
    assert _table(placed, "400000")[:2] == ["98.00", "30.00"]
    # the vCPU's host CPU, 60 % at either window but the largest at timer+300us (1000 µs)
    # one run each here: the figures are shown, the verdict waits for pairs
    assert verdict(md, "halt_poll_ns 400 µs against 200 µs at the placed period") == \
        ("not decided", [300, 1000, 60, 98, 38, 63])
    assert verdict(md, "halt_poll_ns 400 µs against 200 µs at the seed's period") == \
        ("not decided", [250, 60, 60, 0, 0])


def test_seed004_base_is_not_run_and_shrink_2_measured(written):
    md = (written[0] / "seed004.md").read_text()
    assert _table(md, "workload: metric") == ["Base (shrink=0)", "Shrink Enabled (value 2)",
                                               "Delta"]
    row = _table(md, "random: successful polls, % of attempted")
    assert row == ["not run: halt_poll_ns_shrink is read-only (fixed at 2)", "30.0", "n/a"]


def test_predict_fills_runs_csv_and_the_cells_that_could_not_run(tmp_path):
    """tools/bench --predict: every boot gets the simulator's figures beside its own, with
    the error; seed 004's shrink=0 column, which cannot run here, shows the simulated
    figures labelled so, and its Delta compares two simulated figures."""
    subprocess.run(["make", "-s", "build/idlelab-sim"], cwd=TOP, check=True)
    recs = seed_records()
    for i, rec in enumerate(recs, 1):
        rec["cmdline"] = " ".join([f"workload={rec['workload']}", "duration=300ms"] +
                                  [f"{k}={v}" for k, v in rec["guest_knobs"].items()])
        resultsdir.write_json(resultsdir.raw_path(str(tmp_path), i, rec), rec)
    resultsdir.write_json(str(tmp_path / "meta.json"), META)
    assert predict.write_report(str(tmp_path), costs="hardware") == 0
    with open(tmp_path / "runs.csv") as f:
        rows = {(r["matrix"], r["name"]): r for r in csv.DictReader(f)}
    base = rows[("seed004", "random-host_shrink=0")]
    assert base["status"] == "not run" and base["predicted_costs"] == "hardware"
    assert float(base["predicted_host_halt_exits"]) > 0 and base["predicted_within"] == ""
    assert base["predicted_err_host_halt_exits_pct"] == ""       # nothing measured
    measured = rows[("seed002", "neither")]
    exits, pred = float(measured["host_halt_exits"]), float(measured["predicted_host_halt_exits"])
    assert float(measured["predicted_err_host_halt_exits_pct"]) == \
        pytest.approx(100 * (pred - exits) / exits, abs=0.1)
    assert measured["predicted_within"] in ("True", "False")
    md = (tmp_path / "seed004.md").read_text()
    exits_row = _table(md, "random: halt exits/s/vCPU")
    assert exits_row[0].endswith(" (simulated)") and float(exits_row[0].split()[0]) > 0
    assert exits_row[2].endswith("% (simulated)")
    assert "not run" not in _table(md, "random: host CPU %/vCPU")[0]
    assert (tmp_path / "predicted.md").exists()
    # beside each seed table, the same matrix on hardware costs, judged by the same rule
    for mid in ("seed000", "seed002", "seed003", "seed004"):
        md = (tmp_path / f"{mid}.md").read_text()
        hw = md[md.index("## The same on hardware KVM, predicted"):]
        assert "## Verdicts on the prediction" in hw and "- **" in hw, mid
    hw = (tmp_path / "seed003.md").read_text().split("## The same on hardware KVM")[1]
    said, figures = verdict(hw, "hardware, predicted: halt_poll_ns 400 µs against 200 µs at "
                                "the seed's period")
    assert said in ("reproduced", "reversed", "no effect", "not decided") and figures[0] == 250


@pytest.fixture(scope="module")
def varied(tmp_path_factory):
    """The reports of seed_records(varied=True): (folder, runs.csv's rows, {plot file: its
    figure as drawn}, the paths written)."""
    out = tmp_path_factory.mktemp("varied")
    drawn, save = {}, plots.save

    def keep(fig, path, plt, note=""):
        drawn[os.path.basename(path)] = fig
        save(fig, path, plt, note)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, "save", keep)
        paths = resultsdir.write_all(str(out), seed_records(varied=True), META)
    with open(out / "runs.csv") as f:
        return out, list(csv.DictReader(f)), drawn, paths


def median_of(rows, matrix, name, col):
    """A run's figure in the reports: the median of runs.csv's column over its repeats that
    ran; None when none did."""
    got = [float(r[col]) for r in rows if (r["matrix"], r["name"], r["status"]) ==
           (matrix, name, "ok")]
    return statistics.median(got) if got else None


def runs(rows, matrix, **want):
    """The run names of a matrix in runs.csv order, each once, whose columns have the
    wanted values."""
    return list(dict.fromkeys(r["name"] for r in rows if r["matrix"] == matrix and
                              all(r[k] == v for k, v in want.items())))


def bars(ax):
    """The axes' bar chart (matplotlib's BarContainer)."""
    return next(c for c in ax.containers if hasattr(c, "patches"))


def bar_heights(ax):
    return [p.get_height() for p in bars(ax).patches]


def whisker_tops(ax):
    (_, _, (segments,)) = bars(ax).errorbar.lines
    return [seg[1][1] for seg in segments.get_segments()]


def labels(ax):
    return [t.get_text() for t in ax.get_xticklabels()]


def test_plots_draw_the_runs_csv_figures(varied):
    """Each plot's bars and lines, read back from its figure, are the medians runs.csv
    gives for the runs it names, in the report's order; and the PNG files are written."""
    out, rows, drawn, paths = varied
    assert sorted(drawn) == sorted(n for names in plots.PLOTS.values() for n, _ in names
                                   if n.startswith("seed"))
    for name in drawn:
        assert (out / name).read_bytes().startswith(b"\x89PNG") and str(out / name) in paths
    for mid in ("seed000", "seed002"):
        (ax,) = drawn[f"{mid}_latency.png"].axes
        names = runs(rows, mid, workload="pingpong")
        assert labels(ax) == [next(r["config"] for r in rows if r["name"] == n) for n in names]
        assert bar_heights(ax) == pytest.approx(
            [median_of(rows, mid, n, "rtt_p50_us") for n in names])
        assert whisker_tops(ax) == pytest.approx(
            [median_of(rows, mid, n, "rtt_p99_us") for n in names])
    (ax,) = drawn["seed000_idle_cpu.png"].axes
    names = runs(rows, "seed000", workload="idle")
    assert labels(ax) == [n.replace(".idle-", "\n") for n in names]
    assert bar_heights(ax) == pytest.approx(
        [median_of(rows, "seed000", n, "host_cpu_pct") for n in names])
    cpu, exits = drawn["seed003_cpu_vs_period.png"].axes
    for ax, col in ((cpu, "host_cpu_pct"), (exits, "halt_exits_per_s")):
        assert [ln.get_label() for ln in ax.get_lines()] == \
            [f"halt_poll_ns={w}" for w in (0, 200000, 400000)]
        for line in ax.get_lines():
            names = runs(rows, "seed003", halt_poll_ns=line.get_label().split("=")[1])
            by_period = sorted((float(next(r["period_us"] for r in rows if r["name"] == n)), n)
                               for n in names)
            assert list(line.get_xdata()) == [p for p, _ in by_period]
            assert list(line.get_ydata()) == pytest.approx(
                [median_of(rows, "seed003", n, col) for _, n in by_period])
    (ax,) = drawn["seed004_poll_success.png"].axes
    names = runs(rows, "seed004")
    assert bar_heights(ax) == pytest.approx(
        [median_of(rows, "seed004", n, "poll_success_pct") or 0 for n in names])
    assert [t.get_text() for t in ax.texts].count("not run (read-only)") == \
        sum(median_of(rows, "seed004", n, "poll_success_pct") is None for n in names)
    # the dots: every window or boot behind the medians, at its bar; the note says where
    dots = sorted(float(y) for c in ax.collections for _, y in c.get_offsets())
    assert dots == pytest.approx(sorted(float(r["poll_success_pct"]) for r in rows
                                        if r["matrix"] == "seed004" and r["poll_success_pct"]))
    for fig in drawn.values():
        assert any("bench" in t.get_text() and "dots:" in t.get_text() for t in fig.texts)


def cells(md, first_cell):
    """A table row's cells as numbers (the first number in each cell)."""
    return [float(re.match(r"[-+]?[0-9.]+", c).group()) for c in _table(md, first_cell)]


def test_seed_tables_show_the_runs_csv_figures(varied):
    """Every figure of the seed tables against runs.csv: the median of the run the cell
    names, to the digits the cell shows (no run alike, repeats differing)."""
    out, rows, _, _ = varied
    med = median_of
    md = (out / "seed000.md").read_text()
    configs = _table(md, "")
    for hz, label in (("0", "Idle (nohz)"), ("250", "Idle (250HZ)")):
        assert cells(md, f"{label} vCPU host CPU %") == pytest.approx(
            [med(rows, "seed000", f"{c}.idle-hz={hz}", "host_cpu_pct") for c in configs],
            abs=0.005)
    assert cells(md, "pingpong RTT p50, µs (TCP_RR latency)") == pytest.approx(
        [med(rows, "seed000", f"{c}.rr", "rtt_p50_us") for c in configs], abs=0.5)

    md = (out / "seed002.md").read_text()
    ref = med(rows, "seed002", "neither", "rtt_p50_us")
    for name in runs(rows, "seed002"):
        row = next(ln for ln in md.splitlines() if ln.startswith(f"| {name}: "))
        got = [float(re.match(r"[0-9.]+", c.strip()).group())
               for c in row.strip("|").split("|")[1:]]
        rtt, ratio, pct, p99, cpu, exits = got[:6]
        iters = med(rows, "seed002", name, "iters")
        assert ratio == pytest.approx(med(rows, "seed002", name, "rtt_p50_us") / ref, abs=0.006)
        assert (rtt, pct, p99, cpu, exits) == pytest.approx(
            (med(rows, "seed002", name, "rtt_p50_us"),
             100 * ref / med(rows, "seed002", name, "rtt_p50_us"),
             med(rows, "seed002", name, "rtt_p99_us"),
             med(rows, "seed002", name, "host_cpu_pct"),
             med(rows, "seed002", name, "host_halt_exits") / iters), abs=0.051), row

    md = (out / "seed003.md").read_text()
    for asked, _ in SEED003_PERIODS:
        names = [f"periodic-period={asked}-halt_poll_ns={w}" for w in (0, 200000, 400000)]
        p = med(rows, "seed003", names[0], "period_us")
        want = [med(rows, "seed003", names[0], "achieved_period_us")]
        for n in names:
            want += [med(rows, "seed003", n, "host_cpu_pct"),
                     med(rows, "seed003", n, "host_poll_pct"),
                     med(rows, "seed003", n, "halt_exits_per_s")]
        assert cells(md, f"{p:.0f}") == pytest.approx(want, abs=0.5)

    md = (out / "seed004.md").read_text()
    for w in ("random", "pingpong"):
        for col, label, digits in (("poll_success_pct", "successful polls, % of attempted", 1),
                                   ("host_cpu_pct", "host CPU %/vCPU", 1),
                                   ("halt_exits_per_s", "halt exits/s/vCPU", 0)):
            base, enabled, delta = _table(md, f"{w}: {label}")
            assert base.startswith("not run") and delta == "n/a"
            assert float(enabled.split()[0]) == pytest.approx(
                med(rows, "seed004", f"{w}-host_shrink=2", col), abs=0.5 * 10 ** -digits)


def test_report_only_rebuilds_from_raw(tmp_path, capsys):
    recs = seed_records()
    for i, rec in enumerate(recs, 1):
        resultsdir.write_json(resultsdir.raw_path(str(tmp_path), i, rec), rec)
    resultsdir.write_json(str(tmp_path / "meta.json"), META)
    assert cli.main(["--report", str(tmp_path)]) == 0
    assert (tmp_path / "seed003.md").exists() and (tmp_path / "runs.csv").exists()
    assert sorted(os.listdir(tmp_path / "raw"))[0] == "001-seed000-no-poll.idle-hz=0.json"


def test_a_run_name_too_long_for_a_file_name_keeps_its_raw_file(tmp_path):
    """A sweep's expanded name can outgrow a file name (255 bytes): the raw file's name is
    cut and ends in a hash of the whole, the record keeps the name in full, and the folder
    reads back and resumes (its files still start NNN-)."""
    long = "pingpong" + "".join(f"-knob{i}=1000us" for i in range(24))     # 344 characters
    recs = [record("m", long + end, "pingpong", "pingpong") for end in ("-a", "-b")]
    for i, rec in enumerate(recs, 1):
        resultsdir.write_json(resultsdir.raw_path(str(tmp_path), i, rec), rec)
    names = sorted(os.listdir(tmp_path / "raw"))
    assert [n[:6] for n in names] == ["001-m-", "002-m-"]
    assert all(len(os.fsencode(n + ".tmp")) <= 255 for n in names), names
    assert [r["name"] for r in resultsdir.read_raw(str(tmp_path))] == [long + "-a", long + "-b"]
    assert invocation.resume_state(str(tmp_path))["recs"] == recs
    # the hash tells apart names alike up to the cut, whatever their number
    assert resultsdir.raw_path("d", 1, recs[0]) != resultsdir.raw_path("d", 1, recs[1])
    assert resultsdir.raw_path("d", 7, record("m", "a", "a", "idle")) == "d/raw/007-m-a.json"


def complete_folder(path, recs):
    """A results folder its bench completed, holding these records."""
    for i, rec in enumerate(recs, 1):
        resultsdir.write_json(resultsdir.raw_path(str(path), i, rec), rec)
    planned = {}
    for rec in recs:
        planned[rec["matrix"]] = planned.get(rec["matrix"], 0) + 1
    resultsdir.write_meta(str(path), dict(META, status="complete", runs_made=len(recs),
                                      runs_planned=len(recs), runs_planned_by_matrix=planned,
                                      seconds=9.0))


def test_report_says_raw_records_missing_from_a_complete_folder(tmp_path, capsys):
    recs = [record("m", f"r{i}", "r", "pingpong") for i in range(3)]
    complete_folder(tmp_path, recs + [record("n", "s", "s", "idle")])
    assert cli.main(["--report", str(tmp_path)]) == 0
    assert "missing" not in capsys.readouterr().err
    assert "Incomplete" not in (tmp_path / "m.md").read_text()
    os.remove(resultsdir.raw_path(str(tmp_path), 2, recs[1]))
    assert cli.main(["--report", str(tmp_path)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    # 1 of the 4 written is gone; the 3 left are reported
    assert len(err) == 1 and "missing" in err[0] and numbers(err[0].split(":")[-1]) == [1, 4, 3], \
        err
    md = (tmp_path / "m.md").read_text()
    note = md[md.index("**Incomplete"):].split("\n")[0]
    # 2 of m's 3 runs in raw/; the bench made 4 of its 4; 1 of the 4 written is missing
    assert "completed" in note and numbers(note) == [2, 3, 4, 4, 1, 4], note
    assert "Incomplete" not in (tmp_path / "n.md").read_text()      # n has all its runs
    with open(tmp_path / "runs.csv") as f:
        assert [r["name"] for r in csv.DictReader(f)] == ["r0", "r2", "s"]
    meta = resultsdir.read_meta(str(tmp_path))
    assert (meta["status"], meta["runs_made"]) == ("complete", 4)  # what the bench made


def test_report_says_raw_records_missing_from_an_interrupted_folder(tmp_path, capsys):
    recs = [record("m", f"r{i}", "r", "pingpong") for i in range(3)]
    complete_folder(tmp_path, recs)
    meta = resultsdir.read_meta(str(tmp_path))
    resultsdir.write_meta(str(tmp_path), dict(meta, status="interrupted", runs_planned=5,
                                          runs_planned_by_matrix={"m": 5}, signal="SIGINT",
                                          where="between runs 3 and 4 of 5"))
    os.remove(resultsdir.raw_path(str(tmp_path), 1, recs[0]))
    assert cli.main(["--report", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "missing" in err and numbers(err.split(":")[-1]) == [1, 3, 2], err
    md = (tmp_path / "m.md").read_text()
    note = md[md.index("**Incomplete"):].split("\n")[0]
    # 2 of 5 in raw/; where it stopped (between 3 and 4 of 5); 3 of 5 made; 1 of 3 missing
    assert "SIGINT" in note and numbers(note) == [2, 5, 3, 4, 5, 3, 5, 1, 3], note


@pytest.fixture(params=["complete", "incomplete"])
def read_only(request, tmp_path, monkeypatch):
    """A results folder that cannot be written, complete or left by a killed bench (which
    --report marks first). As root chmod a-w stops no write: a read-only bind mount of it
    where this process may mount, else report/resultsdir.py's open() refusing to write there
    as a read-only filesystem does (EROFS)."""
    folder = tmp_path / "res"
    complete_folder(folder, [record("m", "a", "a", "pingpong")])
    if request.param == "incomplete":
        resultsdir.write_meta(str(folder), dict(META, status="running",
                                            owner={"pid": 999999999, "start": 1}))
    ro = tmp_path / "ro"
    ro.mkdir()
    try:
        mounted = subprocess.run(["mount", "--bind", str(folder), str(ro)],
                                 capture_output=True).returncode == 0
    except OSError:             # no mount(8)
        mounted = False
    if mounted:
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True,
                           capture_output=True)
            with pytest.raises(OSError):
                open(ro / "probe", "w").close()
            yield ro
        finally:
            subprocess.run(["umount", str(ro)], check=True)
        return

    def refusing(path, mode="r", *args, **kwargs):
        if set(mode) & set("wax+") and os.path.abspath(path).startswith(f"{folder}/"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return builtins.open(path, mode, *args, **kwargs)
    monkeypatch.setattr(resultsdir, "open", refusing, raising=False)
    yield folder


def test_report_into_a_read_only_folder_is_one_line(read_only, capsys):
    before = (read_only / "meta.json").read_text()
    assert cli.main(["--report", str(read_only)]) == usage.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"bench: --report {read_only}/"), err
    assert "cannot write it: Read-only file system" in err[0], err
    assert (read_only / "meta.json").read_text() == before


def test_console_summary_shows_each_seed_table(varied):
    """The terminal's summary: the counts runs.csv holds, and each matrix's main table as
    its markdown file has it (whose figures test_seed_tables_show_the_runs_csv_figures
    holds to runs.csv)."""
    out, rows, _, paths = varied
    recs = seed_records(varied=True)
    text = console.summary(recs, dict(META, seconds=30.0), paths)
    count = {s: sum(r["status"] == s for r in rows) for s in ("ok", "not run", "failed")}
    flags = sum(r["accuracy_flag"] == "True" for r in rows)
    assert f"{count['ok']} ok, {count['not run']} not run, {count['failed']} failed; " \
        f"{flags} accuracy flags" in text
    for mid in ("seed000", "seed002", "seed003", "seed004"):
        table = tables.first_table((out / f"{mid}.md").read_text())
        at = text.index(f"-- {mid}\n")
        assert text[at:].split("\n")[1:1 + len(table)] == table, mid
    assert "```" not in text


def test_csv_header_is_the_run_row_fields_in_order(written):
    """runs.csv's header is RunRow's fields, in order (docs/records.md's table of them is
    generated from the same fields: test_docs.py); the measured columns follow the run's
    identity, and the predicted ones come last, a block each."""
    with open(written[0] / "runs.csv") as f:
        header = next(csv.reader(f))
    assert header == runrow.COLUMNS
    first_measured, first_predicted = header.index("guest_hlt"), header.index("predicted_costs")
    assert runrow.MEASURED == header[first_measured:first_predicted]
    assert runrow.PREDICTED == header[first_predicted:]
    assert set(runrow.HOST_KVM) < set(runrow.MEASURED) and "host_cpu_pct" not in \
        runrow.HOST_KVM   # thread CPU time exists under TCG too


def test_a_row_is_typed_and_a_not_run_row_is_empty_but_named():
    row = derive.summarize(record("seed002", "neither", "neither", "pingpong"))
    assert isinstance(row, runrow.RunRow) and row.ok
    assert isinstance(row.host_halt_exits, int) and isinstance(row.rtt_p50_us, float)
    nr = derive.summarize(record("m", "x", "x", "idle", status="not run", reason="r"))
    assert not nr.ok and nr.name == "x"
    assert all(getattr(nr, k) is None for k in runrow.MEASURED)


def test_accuracy_flag_follows_the_one_tolerance():
    """Just inside and just outside tolerance.py's bound, whatever its value."""
    n, t = 1000, tolerance.HLT_TOLERANCE_EXITS
    assert not tolerance.hlt_mismatch(n, n + t) and not tolerance.hlt_mismatch(n, n - t)
    assert tolerance.hlt_mismatch(n, n + t + 1) and tolerance.hlt_mismatch(n, n - t - 1)
    row = derive.summarize(record("m", "a", "a", "idle", hlt=(n, n), exits=(n, n + t + 1)))
    assert row.accuracy_flag is True and tolerance.describe() in derive.accuracy_text(row)


def test_seed003_prose_is_computed_from_the_rows(written):
    """Its sentences' figures are the rows': the 250 µs asked came out at 1000 µs (at
    halt_poll_ns=0), where the largest window's 98 % host CPU is 38 points over 60 %."""
    md = (written[0] / "seed003.md").read_text()
    assert numbers(sentence(md, "The shortest period asked for")) == [250, 1000, 0]
    assert numbers(sentence(md, "The largest window cost most")) == [1000, 98.0 - 60.0]
    for machine_claim in ("On this machine", " here,", "about 1 ms"):
        assert machine_claim not in md


def test_governors_table_and_verdict():
    """The governors layout on made-up rows: the plateau found from haltpoll's polls (on every
    other wake-up or more, under 10 % hit), periodic or not; the goal met where the other
    governor hits >= 90 % at no more CPU per wake-up; a row where haltpoll rarely polls is
    off the plateau however few of its polls hit. A configuration swept over another value
    (plateau-ipi's think=) is a row per value, each judged (it was one, the first)."""
    rows = []
    for gov, hits in (("haltpoll", 0), ("predict", 990)):
        for period in (800, 1500):
            rows.append(runrow.RunRow(
                matrix="governors", name=f"plateau-period=timer+{period}us-cpuidle.governor={gov}",
                config="plateau",
                status="ok", workload="periodic", governor=gov, period_us=float(period),
                guest_poll_entries=1000, guest_poll_hits=hits if period == 1500 else 500,
                guest_wakeups=1000,
                host_cpu_us_per_wakeup=1400.0 if gov == "haltpoll" else 1390.0,
                halt_exits_per_s=600.0, late_p50_us=400.0))
        for think, cpu in (("300us", 500.0), ("1000us", 800.0)):
            rows.append(runrow.RunRow(
                matrix="governors", name=f"plateau-ipi-think={think}-cpuidle.governor={gov}",
                config="plateau-ipi", status="ok", workload="pingpong", governor=gov,
                guest_poll_entries=900, guest_wakeups=1000, guest_poll_hits=hits * 9 // 10,
                host_cpu_us_per_wakeup=cpu if gov == "haltpoll" or think == "300us"
                else 900.0, rtt_p50_us=300.0))
        rows.append(runrow.RunRow(
            matrix="governors", name=f"random-exp-cpuidle.governor={gov}", config="random-exp",
            status="ok", workload="random", governor=gov, guest_poll_entries=40,
            guest_wakeups=1000, guest_poll_hits=1, host_cpu_us_per_wakeup=900.0,
            late_p50_us=400.0, guest_takeovers=3 if gov == "predict" else 0))
    text = governors_table.markdown(rows, {"accel": "kvm"})
    assert "| 1500 | 0.0 | 1400 |" in text and "| 99.0 | 1390 |" in text
    assert "| plateau-ipi-think=300us |" in text and "| plateau-ipi-think=1000us |" in text
    v = governors_table.verdict(rows)[0]
    # the plateau: haltpoll's polls hit under 10 % at 1500 and on both plateau-ipi rows
    assert named(v, r"covers 3 rows \(([^)]*)\)") == [
        "1500", "plateau-ipi-think=300us", "plateau-ipi-think=1000us"]
    # predict's goal met where it hits >= 90 % at no more CPU per wake-up: 1390 µs against
    # 1400 at 1500, 500 against 500 at think=300us
    assert named(v, r"on 2 of them \(([^)]*)\)") == ["1500", "plateau-ipi-think=300us"]
    # at think=1000us predict's 900 µs/wake-up is more than 5 % over haltpoll's 800
    assert named(v, r"more than 5 % worse on: ([^.;]*)") == ["plateau-ipi-think=1000us"]
    assert named(v, r"decided \(the repeats do not overlap\), on: ([^.;]*)") == ["none"]
    assert named(v, r"\(the `takeovers` count\) on: ([^.;]*)") == ["random-exp (3)"]


def test_per_wakeup_cpu_only_where_the_workload_has_wakeups():
    """The idle workload wakes nothing of its own (its counted wake-ups are the
    controller's): runs.csv has no CPU per wake-up for it, the same record as pingpong has
    one (the column stays), and the governors layout gives its host CPU % instead and judges
    it by that; missed polls there are no plateau."""
    idle = derive.summarize(record("governors", "i", "idle-250hz", "idle"))
    pp = derive.summarize(record("governors", "p", "pingpong", "pingpong"))
    assert idle.guest_wakeups and idle.host_cpu_pct == 50.0
    assert idle.host_cpu_us_per_wakeup is None
    assert pp.host_cpu_us_per_wakeup == round(1000000 * 2 * 0.5 / pp.guest_wakeups, 1)
    rows = [runrow.RunRow(matrix="governors", name=f"idle-250hz-cpuidle.governor={gov}",
                          config="idle-250hz", status="ok", workload="idle", governor=gov,
                          guest_wakeups=1, guest_poll_entries=5, guest_poll_hits=0,
                          host_cpu_pct=pct, halt_exits_per_s=250.0)
            for gov, pct in (("haltpoll", 1.6), ("predict", 2.4))]
    text = governors_table.markdown(rows, {"accel": "kvm"})
    assert "| idle-250hz | 0.0 | — | 1.6 | 250 | — | 0.0 | — | 2.4 | 250 | — |" in text, text
    assert not governors_table.on_plateau(rows[0])
    assert governors_table.worse_than(rows[1], rows[0]) == governors_table.WORSE
    assert governors_table.worse_than(rows[0], rows[1]) is None
    assert named(governors_table.verdict(rows)[0],
                 r"decided \(the repeats do not overlap\), on: ([^.;]*)") == ["idle-250hz"]


def test_off_plateau_worse_only_beyond_the_spread_of_the_repeats():
    """Medians 10 % apart: worse where every repeat of the second is above every repeat of
    the first, only "within the spread" where the repeats overlap (run-to-run noise here is
    10 % and more); aggregate() records each measurement's (lowest, highest)."""
    def rows(gov, cpus):
        return [runrow.RunRow(matrix="governors", name=f"random-exp-cpuidle.governor={gov}",
                              config="random-exp",
                              repeat=i, status="ok", workload="random", governor=gov,
                              host_cpu_us_per_wakeup=c, late_p50_us=400.0)
                for i, c in enumerate(cpus, 1)]
    a = runrow.aggregate(rows("haltpoll", [900.0, 1000.0, 1100.0]))[0]
    assert a.host_cpu_us_per_wakeup == 1000.0 and \
        a.spread["host_cpu_us_per_wakeup"] == (900.0, 1100.0)
    overlapping = runrow.aggregate(rows("predict", [1050.0, 1100.0, 1300.0]))[0]
    apart = runrow.aggregate(rows("predict", [1150.0, 1100.5, 1200.0]))[0]
    assert governors_table.worse_than(overlapping, a) == governors_table.WITHIN_SPREAD
    assert governors_table.worse_than(apart, a) == governors_table.WORSE
    assert governors_table.worse_than(a, a) is None
    v = governors_table.verdict([a, overlapping])[0]
    assert named(v, r"decided \(the repeats do not overlap\), on: ([^.;]*)") == ["none"]
    assert named(v, r"run-to-run noise\) on: ([^.;]*)") == ["random-exp"]


def test_off_plateau_worse_by_the_paired_windows_when_the_governors_share_boots():
    """within=guest.cpuidle.governor: the two governors' windows alternate in each boot, and
    a governor is worse where the paired differences' 95 % CI says B is above A by more
    than 5 %, even where the boots' own spread overlaps (each boot runs at its own speed)."""
    def rows(gov, cpus):
        return [runrow.RunRow(matrix="governors", name=f"random-exp-cpuidle.governor={gov}",
                              config="random-exp", repeat=boot, window_round=rnd,
                              status="ok", workload="random", governor=gov,
                              host_cpu_us_per_wakeup=c, late_p50_us=400.0)
                for (boot, rnd), c in zip([(b, r) for b in (1, 2, 3) for r in (1, 2)], cpus)]
    speeds = [800.0, 810.0, 1000.0, 1010.0, 1200.0, 1190.0]      # three boots far apart
    a = runrow.aggregate(rows("haltpoll", speeds))[0]
    b = runrow.aggregate(rows("predict", [x * 1.2 for x in speeds]))[0]
    same = runrow.aggregate(rows("predict", [x + d for x, d in zip(speeds, (3, -4, 2, -1,
                                                                            4, -3))]))[0]
    assert effects.paired_rows(a, b)
    assert a.spread["host_cpu_us_per_wakeup"][1] > b.spread["host_cpu_us_per_wakeup"][0]
    assert governors_table.worse_than(b, a) == governors_table.WORSE
    assert governors_table.worse_than(same, a) is None
    v = governors_table.verdict([a, b])[0]
    assert named(v, r"decided \(by the paired windows' 95 % CI: the governors took turns in "
                 r"each boot\), on: ([^.;]*)") == ["random-exp"]


LINUX_SERIAL = """\
@idlelab boot cpus=2 guest=linux kernel=6.1.0-57-amd64 ram_mb=203 kvm=1 pollctl=1 realtime=1
@idlelab idle policy=linux-haltpoll governor=menu driver=haltpoll states=POLL,haltpoll \
cpuidle_haltpoll.force=1 msr=0
@idlelab config workload=pingpong duration=1s warmup=100ms period=250us cpus=0 think=0s \
window_sync=1 window_sync_timeout=5s
@idlelab window state=open what=pingpong t_ns=1000 sync=1
@idlelab window state=close what=pingpong t_ns=1000001000 sync=1
@idlelab cpu id=0 wakeups=900 ipi_received=950 timer_irqs=4 idle_entries=1500 \
poll_entries=1000 halts=500 hlt=500 idle_ns=600000000 poll_ns=100000000 halt_ns=500000000
@idlelab cpu id=1 wakeups=950 ipi_received=900 timer_irqs=4 idle_entries=1400 \
poll_entries=920 halts=480 hlt=480 idle_ns=600000000 poll_ns=100000000 halt_ns=500000000
@idlelab result workload=pingpong ok=1 pairs=1 iters=1000 window_ns=1000000000 \
rtt_p50_ns=500000 rtt_p90_ns=700000 rtt_p99_ns=900000 rtt_max_ns=1000000 rt_per_s=1000 \
think_ns=0 mode=block
@idlelab exit code=0x10 name=SUCCESS cpu=0
"""


def test_a_linux_guests_record_summarizes_with_its_missing_fields_empty():
    """The Linux guest prints no poll hits, IPIs sent, aborted halts or hz: those columns
    stay empty (not 0), and the rest is derived as for idlelab's guest."""
    rec = record("linux", "linux-guest-poll", "linux-guest-poll", "pingpong",
                 hlt=(500, 480), exits=(499, 480), cpu_pct=(60.0, 40.0))
    rec.update(guest="linux", serial=LINUX_SERIAL)
    row = derive.summarize(rec)
    assert (row.guest, row.guest_idle, row.governor, row.msr) == \
        ("linux", "linux-haltpoll", "menu", "0")
    assert (row.guest_hlt, row.guest_poll_entries, row.guest_wakeups) == (980, 1920, 1850)
    assert (row.guest_poll_hits, row.guest_ipi_sent, row.guest_ipi_avoided, row.hz,
            row.hostpoll, row.guest_takeovers) == (None,) * 6
    assert (row.hlt_diff, row.hlt_diff_vcpus) == (-1, "-1/+0")
    assert row.host_cpu_us_per_wakeup == round(1.0 * 1e6 / 1850, 1)
    assert guestrun.check_invariants(guestrun.parse_run(LINUX_SERIAL)) == []
    assert dict(zip(runrow.COLUMNS, runrow.csv_cells(row)))["guest_poll_hits"] == ""


def test_the_control_gives_the_noise_floor_of_the_medians():
    """haltpoll against itself (`control-<line>`, warm-up 101 ms): the rows where its second
    run is more than 5 % worse by the medians, beyond the spread or not, said in one line;
    the control rows are in no other table and no governor's verdict."""
    def row(name, config, gov, cpus, workload="random"):
        return runrow.aggregate([runrow.RunRow(
            matrix="governors", name=name, config=config, repeat=i, status="ok",
            workload=workload, governor=gov, host_cpu_us_per_wakeup=c, late_p50_us=400.0)
            for i, c in enumerate(cpus, 1)])[0]
    rows = [row("random-exp-cpuidle.governor=haltpoll", "random-exp", "haltpoll",
                [900.0, 1000.0, 1100.0]),
            row("random-exp-cpuidle.governor=predict", "random-exp", "predict",
                [900.0, 1000.0, 1100.0]),
            row("control-random-exp", "control-random-exp", "haltpoll", [1050.0, 1100.0, 1300.0]),
            row("idle-cpuidle.governor=haltpoll", "idle", "haltpoll", [1000.0] * 3),
            row("idle-cpuidle.governor=predict", "idle", "predict", [1000.0] * 3),
            row("control-idle", "control-idle", "haltpoll", [1200.0, 1210.0, 1220.0])]
    assert [k for k, _, _ in governors_table.control_pairs(rows)] == ["random-exp", "idle"]
    line = governors_table.control_verdict(rows)[0]
    # both controls' medians are over 5 % worse; only idle's repeats all lie beyond
    m = re.search(r"on (\d+) of (\d+) rows \(([^)]*)\), beyond the spread of the repeats "
                  r"on (\d+) \(([^)]*)\)", line)
    assert m and m.groups() == ("2", "2", "random-exp, idle", "1", "idle"), line
    assert [k for k, _, _ in governors_table.pairs(rows, "haltpoll", "predict")] == \
        ["random-exp", "idle"]
    text = governors_table.markdown(rows, {"accel": "kvm"})
    assert "| control-" not in text.split("## Against the goals")[0].split("## Other")[1]
    assert governors_table.control_verdict(rows[:2]) == []


def test_a_nested_bench_is_reported_on_this_machine(tmp_path, monkeypatch, capsys):
    """The bench inside the nested host writes raw/ and runs.csv only (--no-report, and no
    --predict): its tables, summary and predictions are made here, where nothing is
    emulated, from the folder it left, whatever its exit status."""
    seen = {}
    folder = tmp_path / "20990101-000000"

    def inner(argv, prog="bench", folders=None):
        seen["argv"] = argv
        complete_folder(folder, seed_records())
        folders.append(str(folder))
        return usage.EXIT_RUN_FAILED
    monkeypatch.setattr(cli.hosts, "delegate_bench", inner)
    monkeypatch.setattr(cli.predict, "write_report", lambda f: seen.setdefault("predicted", f))
    args = cli.parse_args(["--predict", "--results-dir", str(tmp_path)])
    code = cli.nested_bench(["--predict", "--results-dir", str(tmp_path)], args, "")
    assert code == usage.EXIT_RUN_FAILED
    assert "--no-report" in seen["argv"] and "--predict" not in seen["argv"]
    assert (folder / "seed003.md").exists() and seen["predicted"] == str(folder)
    assert "== idlelab bench:" in capsys.readouterr().out
