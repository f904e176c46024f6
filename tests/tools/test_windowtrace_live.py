"""trace=halt_poll_ns end to end under KVM: one bench run with KVM's halt events over its
window, and the story told from them (derive/kvmtrace.py) held to KVM's own counters over the
same window, vCPU by vCPU: the polls it says were attempted and caught are exactly
halt_attempted_poll and halt_successful_poll. That checks the window edges (the trace's mono
clock against the probe's), the thread filter and the order of KVM's events at once."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP, require
from idlelab.derive import kvmtrace

pytestmark = pytest.mark.kvm
BENCH = os.path.join(TOP, "tools", "bench")
# A per-VM window, so the run is made on a host whose module parameters are read-only too.
MATRIX = ("a: workload=pingpong smp=2 duration=300ms guest.warmup=50ms guest.idle=halt "
          "halt_poll_ns=200us trace=halt_poll_ns\n")


def test_the_trace_agrees_with_kvms_counters(tmp_path):
    require("kvm")
    (tmp_path / "m.txt").write_text(MATRIX)
    p = subprocess.run([sys.executable, BENCH, "--matrix", str(tmp_path / "m.txt"),
                        "--accel", "kvm", "--no-cost-table", "--results-dir",
                        str(tmp_path / "res")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    raw = os.path.join(os.path.realpath(tmp_path / "res" / "latest"), "raw")
    (name,) = os.listdir(raw)
    with open(os.path.join(raw, name)) as f:
        rec = json.load(f)
    part = rec["trace"]
    if "why" in part:
        pytest.skip(f"no trace on this host: {part['why']}")
    assert part["lost"] == 0 and not part["truncated"]
    # the trace starts before the window: each vCPU's window is followed from its first halt
    assert any(e[0] < 0 for e in part["events"])
    _, halts = kvmtrace.story(part)
    attempted = 0
    for v in rec["per_vcpu"]:
        mine = [h for h in halts if h[1] == v["vcpu"]]
        hits = sum(h[2] == kvmtrace.POLL_HIT for h in mine)
        polled = hits + sum(h[2] == kvmtrace.POLL_MISS for h in mine)
        assert (polled, hits) == (v["host"]["halt_attempted_poll"],
                                  v["host"]["halt_successful_poll"]), v
        assert 0 < len(mine) <= v["host"]["halt_exits"], v
        attempted += polled
    assert attempted > 0          # a 200 us window over a pingpong: KVM polled
