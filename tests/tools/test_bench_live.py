"""`make bench QUICK=1` end to end under KVM: the results folder, the MSR=0 check (a guest
that polls with hostpoll=auto stops the host polling even with the host window open), and
the accuracy check (guest HLT count vs host halt_exits) within its bounds. One bench run
(about 35 s here) serves every test in this file."""
import csv
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import TOP, require
from idlelab import costtable
from idlelab.derive import kvmtrace, runrow, tolerance, windows
from idlelab.host import kvmparams

pytestmark = [pytest.mark.kvm, pytest.mark.kvm_full]   # the quick bench: minutes on the nested host


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    require("kvm")
    parent = tmp_path_factory.mktemp("bench")
    started = time.monotonic()
    res = subprocess.run(
        # ACCEL=kvm: this host's KVM whatever its parameters (auto would take the nested host
        # where they are read-only, and this test checks what a read-only host reports)
        ["make", "-s", "--no-print-directory", "-C", TOP, "bench", "QUICK=1", "ACCEL=kvm",
         f"PYTHON={sys.executable}", "BENCH_WAIT_QUIET=10",
         f"BENCH_ARGS=--require-kvm --results-dir {parent}"],
        capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - started
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = os.path.join(parent, os.readlink(os.path.join(parent, "latest")))
    with open(os.path.join(out, "runs.csv")) as f:
        rows = {r["name"]: r for r in csv.DictReader(f)}
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    return {"dir": out, "rows": rows, "meta": meta, "stderr": res.stderr, "wall": wall}


def test_quick_bench_writes_a_new_results_folder(bench):
    files = set(os.listdir(bench["dir"]))
    assert {"meta.json", "runs.csv", "raw", "seed000.md", "seed002.md", "seed003.md",
            "seed004.md", "seed000_latency.png", "seed000_idle_cpu.png", "seed002_latency.png",
            "seed003_cpu_vs_period.png", "seed004_poll_success.png"} <= files
    raw = os.listdir(os.path.join(bench["dir"], "raw"))
    # 35 runs in 9 boots: each seed measures the settings it compares as windows of one
    # boot (within= and boot= rows), but what cannot share a boot
    assert len(raw) == 9 and len(bench["rows"]) == 35
    assert bench["meta"]["accel"] == "kvm" and bench["meta"]["quick"] is True
    # how long it took is a benchmark's figure (make bench-nested), not a verdict
    assert not [r["name"] for r in bench["rows"].values() if r["status"] == "failed"]
    # the progress line: which run, how many left, ETA
    assert "[ 1/9] seed000 idle-hz=0 (idle, 300ms) | 8 left, ETA" in bench["stderr"]


def test_msr_zero_keeps_the_host_from_polling(bench):
    """guest-msr opens its VM's window (per VM, so it runs where the module parameters are
    read-only too); host-poll, beside it, is the seed's global window, made where the host
    lets us."""
    gp, hp = bench["rows"]["guest-msr"], bench["rows"]["host-poll"]
    assert (gp["guest_idle"], gp["hostpoll"], gp["msr"]) == ("haltpoll", "auto", "0")
    assert gp["halt_poll_ns"] == "300000"      # the host window is open...
    assert int(gp["host_halt_exits"]) > 0
    assert int(gp["host_attempted_poll"]) == 0  # ...yet the host never polls
    if hp["status"] == "ok":
        assert (hp["msr"], hp["guest_idle"]) == ("1", "halt")
        assert int(hp["host_attempted_poll"]) > 0
    else:
        assert hp["reason"] == f"halt_poll_ns is read-only (fixed at " \
            f"{kvmparams.read('halt_poll_ns')})"


def test_guest_and_host_counts_are_exact_per_vcpu(bench):
    """Every window edge is synchronised, so every vCPU's HLT count equals KVM's halt_exits
    delta: read per vCPU from the raw records, not from the report's own flag."""
    checked = 0
    for r in bench["rows"].values():
        if r["status"] != "ok":
            continue
        assert r["window_sync"] == "1", r["name"]
        assert r["accuracy_flag"] == "False", (r["name"], r["hlt_diff_vcpus"])
        checked += 1
    for name in os.listdir(os.path.join(bench["dir"], "raw")):
        with open(os.path.join(bench["dir"], "raw", name)) as f:
            rec = json.load(f)
        for v in rec.get("per_vcpu", []):
            assert not tolerance.hlt_mismatch(v["guest"]["hlt"], v["host"]["halt_exits"]), \
                (name, v)
    # where the module parameters are ours every run is made; where they are read-only,
    # only those asking for the values the host has (and the per-VM ones)
    made = sum(r["status"] == "ok" for r in bench["rows"].values())
    assert checked == made >= (30 if kvmparams.writable(["halt_poll_ns"]) else 5)
    assert "HLT guest" in bench["stderr"]   # the difference is printed for every run


def test_read_only_shrink_is_reported_not_faked(bench):
    """Where the global shrink parameter is read-only (as here) the other value is reported
    as not run, with the reason, once; where root can write it, both rows run."""
    rows = bench["rows"]
    if kvmparams.writable(["halt_poll_ns_shrink"]):
        for w in ("random", "pingpong", "placed-random"):
            assert rows[f"{w}-host_shrink=0"]["status"] == "ok"
            assert rows[f"{w}-host_shrink=2"]["status"] == "ok"
        return
    fixed = kvmparams.read("halt_poll_ns_shrink")
    for w in ("random", "pingpong"):
        want_other = rows[f"{w}-host_shrink={0 if fixed != 0 else 2}"]
        assert want_other["status"] == "not run"
        assert want_other["reason"] == f"halt_poll_ns_shrink is read-only (fixed at {fixed})"
    assert bench["stderr"].count("kvm parameters read-only here") == 1   # said once


def test_the_cost_table_is_measured_first_and_kept(bench):
    """bench=exits runs before the matrices: every primitive in meta.json (KVM: only the
    documented skips may be missing figures) and the table in every seed file."""
    table = bench["meta"]["cost_table"]
    assert table["accel"] == "kvm" and set(table["prims"]) == set(costtable.PRIMS)
    for prim, e in table["prims"].items():
        if not e.get("skipped"):
            assert e["n"] == table["iters"] and 0 < e["ns_p50"] <= e["ns_p90"], (prim, e)
    # and the kernel's wake path by phase, for the simulator's here table
    path = table["path_insns"]
    assert path["knobs"] == "idle=halt" and all(path[p] > 0 for p in
                                                ("user", "wake", "block", "enter", "run"))
    for seed in ("seed000", "seed002", "seed003", "seed004"):
        with open(os.path.join(bench["dir"], f"{seed}.md"), encoding="utf-8") as f:
            text = f.read()
        assert "The platform's cost table" in text and "| ipi_halt_rtt |" in text, seed
    # seed 003's periods were placed by it: timer+300us resolved to the timer's median + 300
    timer_us = table["prims"]["timer"]["ns_p50"] / 1000
    periods = {float(r["period_us"]) for r in bench["rows"].values()
               if r["matrix"] == "seed003" and r["status"] == "ok"}
    assert any(abs(p - (timer_us + 300)) <= 1 for p in periods), (timer_us, periods)


def test_seed004_runs_carry_kvms_trace_of_the_window(bench):
    """trace=halt_poll_ns: every run that ran has KVM's halt events over its window, or says
    why not; where they were had, the story told from them agrees with KVM's own counters
    over the same window on every vCPU (polls attempted and successful), and every halt of
    the workload vCPUs is counted once by outcome in runs.csv."""
    traced = halted = 0
    # each window of a boot on its own: the boot's trace cut to the window (derive/windows.py)
    recs = []
    for name in os.listdir(os.path.join(bench["dir"], "raw")):
        with open(os.path.join(bench["dir"], "raw", name)) as f:
            recs += [(f"{name}#{w.get('boot_window', {}).get('window')}", w)
                     for w in windows.split(json.load(f))]
    for name, rec in recs:
        if rec["matrix"] != "seed004" or rec["status"] != "ok":
            continue
        part = rec["trace"]
        assert part["what"] == "halt_poll_ns" and ("events" in part or part["why"]), name
        if "events" not in part:
            continue
        traced += 1
        _, halts = kvmtrace.story(part)
        for v in runrow.side_by_side(rec):
            mine = [h for h in halts if h[1] == v["vcpu"]]
            hits = sum(h[2] == kvmtrace.POLL_HIT for h in mine)
            polled = hits + sum(h[2] == kvmtrace.POLL_MISS for h in mine)
            assert (polled, hits) == (v["host"]["halt_attempted_poll"],
                                      v["host"]["halt_successful_poll"]), (name, v["vcpu"])
            # a HLT that finds an interrupt pending is not blocked: no wake-up event
            assert len(mine) <= v["host"]["halt_exits"], (name, v["vcpu"])
        row = runrow.summarize(rec)
        vcpus = {int(c) for c in row.workload_vcpus.split()}
        counted = sum(getattr(row, k) for k in ("trace_poll_hit", "trace_no_wait",
                                                "trace_short_poll_miss", "trace_short_no_poll",
                                                "trace_long_poll_miss", "trace_long_no_poll"))
        assert counted == sum(h[1] in vcpus for h in halts), name
        halted += counted
    assert traced == 0 or halted > 0      # (a fast host's random sleeps may never halt)
    if kvmparams.writable(["halt_poll_ns_shrink"]):
        assert traced >= 4        # where the parameters are ours, every run ran and traced
