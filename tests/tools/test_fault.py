"""stall=VCPU@OFFSET+DURATION: one vCPU thread stopped with ptrace inside the window.

Without QEMU: fault.Stall on a child process's busy thread (it really stops: its CPU time
does not advance), the error path, and the report of a canned disturbed record. Under KVM:
tools/bench runs a one-second pingpong with vCPU 1 stopped 300 ms; the record, runs.csv,
the markdown and the console line must all say so, and the guest's worst round trip must
have waited out the stall."""
import csv
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import TOP, require
from idlelab.bench import matrixvalues, onerun
from idlelab.derive import runrow
from idlelab.host import fault
from idlelab.report import console, tables
from idlelab.host.qemu import Outcome
from test_report import META, record

BENCH = os.path.join(TOP, "tools", "bench")
SPEC = matrixvalues.Stall(vcpu=1, offset_ns=200_000_000, duration_ns=300_000_000)
LIVE = ("# one pingpong second with vCPU 1's host thread stopped 300 ms, 200 ms in\n"
        "stalled: workload=pingpong duration=1s guest.warmup=50ms stall=1@200ms+300ms\n")


@pytest.fixture
def spinner():
    """A child process burning CPU on its one thread."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.2)
    yield proc
    proc.kill()
    proc.wait()


def test_a_stall_stops_the_thread_and_detaches(spinner):
    spec = matrixvalues.Stall(vcpu=0, offset_ns=50_000_000, duration_ns=200_000_000)
    s = fault.Stall(spec, spinner.pid, {0: spinner.pid})
    s.start(time.monotonic_ns())
    s._thread.join(5)
    r = s.result()
    assert r["done"] and r["error"] is None, r
    a = r["actual"]
    assert 50 <= a["start_ms"] < 150 and 200 <= a["duration_ms"] < 300, a
    assert a["thread_cpu_during_ms"] < 5 and a["thread_cpu_before_ms"] > 0, a
    # detached and running again: it burns CPU, and is nobody's tracee
    before = fault._cpu_ns(spinner.pid, spinner.pid)
    time.sleep(0.2)
    assert fault._cpu_ns(spinner.pid, spinner.pid) - before > 20_000_000
    with open(f"/proc/{spinner.pid}/status") as f:
        assert "TracerPid:\t0\n" in f.read()
    assert spinner.poll() is None


def test_cancel_ends_a_stall_early_and_says_so(spinner):
    spec = matrixvalues.Stall(vcpu=0, offset_ns=0, duration_ns=5_000_000_000)
    s = fault.Stall(spec, spinner.pid, {0: spinner.pid})
    s.start(time.monotonic_ns())
    time.sleep(0.3)
    t = time.monotonic()
    s.cancel()
    assert time.monotonic() - t < 1
    r = s.result()
    assert not r["done"] and "cut short" in r["error"]
    with open(f"/proc/{spinner.pid}/status") as f:
        assert "TracerPid:\t0\n" in f.read()


def test_a_stall_that_cannot_be_made_is_an_error_not_a_skip():
    gone = subprocess.Popen(["true"])
    gone.wait()
    s = fault.Stall(SPEC, gone.pid, {1: gone.pid})
    s.start(time.monotonic_ns() - SPEC.offset_ns)
    s._thread.join(5)
    r = s.result()
    assert not r["done"] and "ptrace on vCPU 1's thread" in r["error"], r
    assert "No such process" in r["error"]
    no_tid = fault.Stall(SPEC, 1, {0: 5}).result()
    assert not no_tid["done"] and "window never opened" in no_tid["error"]


def disturbed_record(done=True):
    rec = record("m", "stalled", "stalled", "pingpong", rtt=700000)
    rec["settings"] = {"stall": "1@200ms+300ms"}
    actual = {"requested_at_ms": 200.9, "start_ms": 201.2, "stop_latency_ms": 0.3,
              "duration_ms": 301.4, "thread_cpu_during_ms": 0.0,
              "thread_cpu_before_ms": 0.1}
    rec["fault"] = {"kind": "stall", "vcpu": 1, "thread_id": 12, "method": "ptrace",
                    "requested": {"offset_ms": 200.0, "duration_ms": 300.0},
                    "done": done, "error": None if done else "ptrace: Operation not permitted",
                    "actual": actual if done else {}}
    return rec


def test_the_report_marks_a_disturbed_run():
    rec = disturbed_record()
    row = runrow.summarize(rec)
    assert (row.stall, row.stall_ms, row.stall_at_ms, row.stall_thread_cpu_ms) == \
        ("1@200ms+300ms", 301.4, 201.2, 0.0)
    assert row.disturbed and row.rtt_max_us == 1000.0
    text = "vCPU 1 stopped 301 ms at +201 ms (asked: 300 ms at +200 ms)"
    assert runrow.disturbance_text(row) == text
    md = tables.markdown("m", [row], META)
    assert f"| stalled **DISTURBED**: {text} |" in md
    assert f"- Disturbed on purpose (stall=: a vCPU thread stopped by the host with ptrace " \
           f"inside the window): stalled: {text}." in md
    assert console.result_line(rec, row).endswith(f" | DISTURBED: {text}")
    plain = runrow.summarize(record("m", "plain", "plain", "pingpong"))
    assert not plain.disturbed and plain.stall is None and plain.stall_ms is None
    assert "Disturbed" not in tables.markdown("m", [plain], META)


def test_a_stall_not_made_is_not_run_never_ok():
    rec = disturbed_record(done=False)
    status, reason = onerun.verdict(rec, Outcome("SUCCESS", 0x10, ""))
    assert status == "not run"
    assert reason == ("stall=1@200ms+300ms was not injected, so this is not the run asked "
                      "for: ptrace: Operation not permitted")
    rec.update(status=status, reason=reason)
    row = runrow.summarize(rec)
    assert row.stall == "1@200ms+300ms" and row.stall_ms is None
    assert "not done" in tables.markdown("m", [row], META)


@pytest.mark.kvm
@pytest.mark.kvm_full
def test_stall_under_kvm_through_the_bench(tmp_path):
    """The real thing: vCPU 1 of a pingpong guest stopped 300 ms, 200 ms into a 1 s window."""
    require("kvm")
    (tmp_path / "stall.txt").write_text(LIVE)
    started = time.monotonic()
    res = subprocess.run([sys.executable, BENCH, "--matrix", str(tmp_path / "stall.txt"),
                          "--require-kvm", "--no-cost-table", "--wait-quiet", "0",
                          "--results-dir", str(tmp_path / "res")],
                         capture_output=True, text=True, timeout=60)
    wall = time.monotonic() - started
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    out = tmp_path / "res" / os.readlink(tmp_path / "res" / "latest")
    (raw,) = os.listdir(out / "raw")
    with open(out / "raw" / raw) as f:
        rec = json.load(f)
    assert rec["status"] == "ok", rec["reason"]
    f = rec["fault"]
    assert f["done"] and f["error"] is None and f["vcpu"] == 1 and f["method"] == "ptrace"
    assert f["thread_id"] == rec["host"]["vcpu_threads"]["1"]
    assert f["requested"] == {"offset_ms": 200.0, "duration_ms": 300.0}
    a = f["actual"]
    assert 250 <= a["duration_ms"] <= 800, a
    assert 200 <= a["start_ms"] <= 400, a
    assert a["thread_cpu_during_ms"] < 5, a      # stopped means no CPU time
    with open(out / "runs.csv") as fh:
        (row,) = csv.DictReader(fh)
    assert row["stall"] == "1@200ms+300ms" and float(row["stall_ms"]) == \
        pytest.approx(a["duration_ms"], abs=0.1)
    # the guest's worst round trip waited out the stop of its partner vCPU
    assert float(row["rtt_max_us"]) >= 0.8 * a["duration_ms"] * 1000, row
    md = (out / "stall.md").read_text()
    assert "**DISTURBED**: vCPU 1 stopped" in md and "- Disturbed on purpose" in md
    assert "DISTURBED: vCPU 1 stopped" in res.stderr
    assert wall < 15, f"the live stall test took {wall:.1f} s"
