"""Figures made of two CPUs' TSC stamps, under KVM and TCG: the wakepath record's phases that
start at the waker's stamp are numbers only where the boot's TSC check found agreement, `na`
where it did not, and never a negative difference wrapped to near 2^64; and no CPU's idle time
exceeds the window, whatever the TSCs' offset."""
import re

import pytest

from idlelab.derive.guestrun import IDLE_SLACK_NS, parse_run
from test_boot import ACCELS, assert_tsc_check_fields, boot, one

WRAPPED = 10**10  # ns: a phase this long is a negative difference read as unsigned
CROSS = ("total_p50_ns", "total_p90_ns", "total_p99_ns", "going_idle_p50_ns",
         "going_idle_p90_ns", "notice_p50_ns", "notice_p90_ns", "notice_p99_ns")
OWN = ("run_p50_ns", "run_p90_ns", "run_p99_ns")


@pytest.mark.parametrize("accel", ACCELS)
def test_cross_cpu_figures_follow_the_tsc_check(accel):
    res = boot(accel, smp=2, cmdline="workload=pingpong warmup=50ms duration=200ms")
    b = one(res, "boot")
    assert_tsc_check_fields(b)
    w = one(res, "wakepath")
    run = parse_run(res.output)
    for name in CROSS:
        if b["tsc_sync"] == "1":
            assert re.fullmatch(r"\d+", w[name]) and int(w[name]) < WRAPPED, (name, w)
        else:
            assert w[name] == "na", (name, w)
    for name in OWN:
        assert re.fullmatch(r"\d+", w[name]) and int(w[name]) < WRAPPED, (name, w)
    assert int(w["busy"]) <= int(w["sampled"])
    for c in run.cpus:
        assert c["idle_ns"] <= run.window_ns + IDLE_SLACK_NS, (c, run.window_ns)
