"""Whose fault a late or lost wake-up was: `late_host` or `late_guest` (`lost_host`,
`lost_guest`), from selftest=wakeup's late_wakeup_seen and lost_wakeup records and what the
host measured of each vCPU's waits. Pure: records and a wait source in, verdicts out.

attribute() reads those records and asks a wait source (host/vcpuwaits.py's Waits, or a fake
in the tests) how long the host kept each vCPU from running. A wake-up is late by its
lateness, the time beyond the bound (lost: its whole wait). The host's share is what the
target and the waker vCPU waited over the wake-up, each taken as the larger of the host's
own measure (schedstat run delay and the harness's stalls) and the guest's steal time from
KVM, and the two added (the waker's wait delays its seeing the answer as the target's
delays the answer); or, if larger, what any other vCPU waited over it: a vCPU the host did
not run may be halfway through a step the wake-up waits for (another waker's wake of the
same thread, begun and not finished: seen when only a third vCPU was stopped, the
lock-holder preemption of a lock-free protocol). When that covers the lateness the verdict
is late_host (lost_host), else late_guest (lost_guest): the guest would have been late even
had the host run every vCPU at once."""
from idlelab.derive.records import parse_records

LATE_HOST, LATE_GUEST = "late_host", "late_guest"
LOST_HOST, LOST_GUEST = "lost_host", "lost_guest"
GUEST_FAULTS = (LATE_GUEST, LOST_GUEST)


def guest_to_host(records, arrivals):
    """The offset that turns the guest's t_ns clock into the host's monotonic ns: from the
    last open window marker, the host instant its line arrived minus the guest's t_ns
    (the line's travel through the serial port makes it late by at most a few ms, which
    widens every interval by as much). None without an open marker."""
    opens = [(i, f) for i, (k, f) in enumerate(records)
             if k == "window" and f.get("state") == "open"]
    if not opens or opens[-1][0] >= len(arrivals):
        return None
    i, f = opens[-1]
    return arrivals[i] - int(f["t_ns"])


def attribute(records, arrivals, waits):
    """[{kind, target_cpu, waker_cpu, after_ns, bound_ns, late_ns, host_wait_ns}] for every
    late_wakeup_seen and lost_wakeup record. records: parse_records() of the serial output,
    arrivals: the host monotonic ns at which each record's line arrived (same order), waits:
    an object with wait_ns(cpu, start_ns, end_ns) -> ns or None and cpus() -> the vCPUs."""
    offset = guest_to_host(records, arrivals)
    out = []
    for kind, f in records:
        what = f.get("what") if kind == "error" else None
        if what not in ("late_wakeup_seen", "lost_wakeup"):
            continue
        lost = what == "lost_wakeup"
        target, waker = int(f["target_cpu"]), int(f["waker_cpu"])
        after = int(f["waited_ns"] if lost else f["after_ns"])
        bound = int(f.get("bound_ns", 0))
        late = after if lost else after - bound
        host = [int(f.get("steal_ns", 0)), int(f.get("waker_steal_ns", 0))]
        measured, others = None, 0
        if offset is not None and "t0_ns" in f:
            start = int(f["t0_ns"]) + offset
            m = [waits.wait_ns(cpu, start, start + after) for cpu in (target, waker)]
            if None not in m:
                measured = m
                host = [max(h, w) for h, w in zip(host, m)]
                others = max([waits.wait_ns(cpu, start, start + after) or 0
                              for cpu in waits.cpus() if cpu not in (target, waker)],
                             default=0)
        wait = max(sum(host), others)
        if lost:
            verdict = LOST_HOST if wait >= late else LOST_GUEST
        else:
            verdict = LATE_HOST if wait >= late else LATE_GUEST
        out.append({"kind": verdict, "target_cpu": target, "waker_cpu": waker,
                    "after_ns": after, "bound_ns": bound, "late_ns": late,
                    "host_wait_ns": wait, "measured": measured is not None})
    return out


def attribute_output(lines_with_times, waits):
    """attribute() from [(host monotonic ns, line)] of a run's console."""
    records, arrivals = [], []
    for t, line in lines_with_times:
        for rec in parse_records(line):
            records.append(rec)
            arrivals.append(t)
    return attribute(records, arrivals, waits)


def summary(events):
    """{kind: count} over the four kinds."""
    return {k: sum(e["kind"] == k for e in events)
            for k in (LATE_HOST, LATE_GUEST, LOST_HOST, LOST_GUEST)}


def describe(e):
    """One event in one line, for a test's failure or a table's note."""
    return (f"{e['kind']}: wake-up of CPU {e['target_cpu']} by CPU {e['waker_cpu']} took "
            f"{e['after_ns'] / 1e6:.1f} ms ({e['late_ns'] / 1e6:.1f} ms late); the host kept "
            f"the two vCPUs waiting {e['host_wait_ns'] / 1e6:.1f} ms"
            + ("" if e["measured"] else " (steal time only: no host measure)"))
