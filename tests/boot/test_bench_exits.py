"""bench=exits: the platform's cost table, in real QEMU runs. A benchmark, not a pass/fail
test: only that every primitive reports what it measured, or says why it was skipped."""
import re

import pytest

from idlelab.costtable import PRIMS
from test_boot import ACCELS, boot

ITERS = 50
# the primitives the cost table reads, one definition: every one must be reported
NAMES = set(PRIMS)
PAIR = {"ipi_send", "ipi_halt_rtt", "poll_wake_rtt", "ipi_run_rtt", "ipi_poll_rtt"}
# TCG offers no poll-control MSR (so no way to let the host poll the responder either), and
# its APIC here is xAPIC without the TSC-deadline timer: no x2APIC EOI write and no deadline
# write to time
TCG_SKIPS = {"wrmsr_pollctl", "eoi", "tsc_deadline", "ipi_poll_rtt", "timer_poll"}
# The record layout is an interface: these fields first, in this order.
LAYOUT = re.compile(r'@idlelab bench name=exits prim=(\w+) '
                    r'(?:ns_p50=\d+\.\d{3} ns_p90=\d+\.\d{3} n=\d+|skipped=1 why="[^"]+" n=0)'
                    r'(?: \S+)*$')


def exits_records(res):
    recs = {}
    for _, f in res.records("bench"):
        if f.get("name") != "exits":
            continue
        assert f["prim"] not in recs, f"two records for {f['prim']}:\n{res.output}"
        recs[f["prim"]] = f
    lines = [ln.strip() for ln in res.output.splitlines() if "@idlelab bench name=exits" in ln]
    for ln in lines:
        assert LAYOUT.search(ln), f"bad record layout: {ln}"
    assert len(lines) == len(recs)
    return recs


def check(res, expect_skipped):
    recs = exits_records(res)
    assert set(recs) == NAMES, res.output
    skipped = {p for p, f in recs.items() if f.get("skipped") == "1"}
    assert skipped == expect_skipped, res.output
    for prim, f in recs.items():
        if prim in skipped:
            assert f["n"] == "0" and f["why"], f
            continue
        assert int(f["n"]) == ITERS, f
        assert 0 < float(f["ns_p50"]) <= float(f["ns_p90"]), f
        assert int(f["ops_per_sample"]) >= 1, f
        # how many of its HLTs the host broke STI's shadow on: none under TCG (a nested
        # host under QEMU 7.2 may: docs/platform-notes.md)
        assert int(f["shadow_breaks"]) >= 0, f
    return recs


@pytest.mark.parametrize("accel", ACCELS)
def test_bench_exits_reports_every_primitive(accel):
    res = boot(accel, smp=2, cmdline=f"bench=exits iters={ITERS}")
    # The run script offers MSR_KVM_POLL_CONTROL under KVM; TCG's leaf 0x40000001 is 0.
    recs = check(res, set() if accel == "kvm" else TCG_SKIPS)
    if accel == "tcg":
        assert all(f["shadow_breaks"] == "0" for f in recs.values() if f.get("n") != "0")
    if accel == "tcg":
        assert "POLL_CONTROL" in recs["wrmsr_pollctl"]["why"]
        assert "POLL_CONTROL" in recs["ipi_poll_rtt"]["why"]
        assert "POLL_CONTROL" in recs["timer_poll"]["why"]
        assert "x2APIC" in recs["eoi"]["why"] and "TSC-deadline" in recs["tsc_deadline"]["why"]
    assert recs["ipi_halt_rtt"]["answer"] == "memory"
    assert recs["ipi_halt_rtt"]["target"] == "halted"
    assert int(recs["ipi_halt_rtt"]["settle_ns"]) > 0
    if accel == "kvm":
        # the same round trip with the host let poll the responder, the IPI sent one CPUID
        # round trip after its HLT (well before ipi_halt_rtt's settle, which outlasts a poll)
        poll = recs["ipi_poll_rtt"]
        assert (poll["target"], poll["host_poll"], poll["answer"]) == \
            ("halted", "allowed", "memory")
        assert 0 < int(poll["settle_ns"]) < int(recs["ipi_halt_rtt"]["settle_ns"])
    assert recs["poll_wake_rtt"]["answer"] == "memory"
    assert recs["timer"]["timer"] == ("tsc_deadline" if accel == "kvm" else "oneshot")
    # the timer as the idle loop meets it: armed with interrupts off, slept for in HLT
    assert (recs["timer"]["wait"], recs["timer_halt"]["wait"]) == ("spin", "halt")
    # and a sleep as a workload's: how late a deadline half a millisecond ahead ran
    sleep = recs["timer_sleep"]
    assert (sleep["wait"], sleep["ahead_ns"], sleep["measures"]) == ("halt", "500000", "late")
    if accel == "kvm":
        # the same with the host let poll the halt (under the host's own parameters here:
        # only the record's layout is checked)
        polled = recs["timer_poll"]
        assert (polled["wait"], polled["ahead_ns"], polled["measures"], polled["host_poll"]) \
            == ("halt", "200000", "late", "allowed")
    # the instruction kinds the wake path is made of: a dependent load, a call with its
    # return, irq_save()'s PUSHF and POP
    assert (recs["load"]["chain"], recs["call"]["with"], recs["pushf"]["with"]) == \
        ("dependent", "ret", "pop")
    # A human-readable table follows the records.
    assert re.search(r"^\s+ipi_halt_rtt\s+1\s+\d+\.\d{3}\s+\d+\.\d{3}", res.output, re.M)


@pytest.mark.parametrize("accel", ACCELS)
def test_bench_exits_on_one_cpu_skips_the_cpu_pairs(accel):
    res = boot(accel, smp=1, cmdline=f"bench=exits iters={ITERS}")
    recs = check(res, PAIR | (set() if accel == "kvm" else TCG_SKIPS))
    for prim in PAIR:
        assert "2 CPUs" in recs[prim]["why"], recs[prim]
