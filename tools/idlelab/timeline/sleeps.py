"""A guest timeline's sleeps (the `sleep` event of thread_sleep_ns) set against what their
CPU did: whether it idled before the sleeping thread ran again, when it got there, and how
late past the sleep's deadline the thread ran. Binned by the sleep's length, it is the run's
own measure of two things the simulator prices from bench=exits (tools/sim/costs/here.txt):
the lead under which a sleep never idles (sleep_cut) and a timer's way back to its thread
(timer_slack, timer_wake, timer_entry, timer_irq), as a function of how long the sleep was.

A sleep starts at its event (stamped just before thread_sleep_ns reads its own start, so a
deadline here is early by that much) and ends when its thread runs again on the CPU at or past
its deadline (a run before it is an early wake: thread_sleep_ns blocks again). It idled if its
CPU entered an idle state (HLT, or the poll loop: one entered with the wake already pending
counts too, the timeline does not tell) after the thread left it and before that run. A
thread that never left its CPU ran on: its sleep ended without idling, seen at the thread's
next sleep or the next wake logged on its CPU while it ran (an interrupt handler's wake there
counts too: rare, a window's end). A sleep whose end the log does not hold (the window or the
log ran out), or made before the CPU's first run event (whose thread is not known: the
window's controller's own sleep, its CPU's first event), is left out. Several threads may
sleep on one CPU: each sleep is its thread's.
"""
import statistics
from dataclasses import dataclass

from idlelab.derive.threadtrace import rank_pct
from idlelab.timeline.records import IDLE_THREAD

# Bin edges of a sleep's length, µs: the workloads' sleeps (seed 004's random ones, mean
# 200 µs; seed 003's periods) fall in the first few, where a sleep may end before its CPU idles.
EDGES_US = (0, 25, 50, 75, 100, 150, 200, 300, 500, 1000)
IDLE_KINDS = ("halt", "poll")


@dataclass(frozen=True)
class Sleep:
    cpu: int
    length_ns: int
    idled: bool             # the CPU entered an idle state (HLT or the poll loop) first
    to_idle_us: float       # the call to that idle state's start (idled only)
    late_us: float          # the deadline to the thread running again (idled only)


class _Open:
    def __init__(self, e):
        self.e = e
        self.left = False       # the thread left the CPU (blocked) since the call
        self.idle_tsc = None    # the CPU's first idle state after it left


WAKE_KINDS = ("wake", "ipi_sent", "ipi_avoided", "ipi_pending")


def sleeps(tl):
    """[Sleep] of every CPU's log, in the order each ended."""
    out = []
    for log in tl.cpus:
        current = None      # the thread running on this CPU (a run event's arg)
        open_ = {}          # thread -> _Open
        for e in log.events:
            if e.kind == "run":
                if current in open_ and e.arg != current:
                    open_[current].left = True
                current = e.arg
                o = open_.get(e.arg)
                if o is not None and e.tsc >= _deadline(tl, o.e):
                    out.append(_ended(tl, log.cpu, open_.pop(e.arg), e.tsc))
            elif e.kind == "sleep":
                if current is None or current == IDLE_THREAD:
                    continue
                o = open_.pop(current, None)
                if o is not None and not o.left:
                    out.append(_ended(tl, log.cpu, o, None))    # it ran on: never idled
                open_[current] = _Open(e)
            elif e.kind in IDLE_KINDS:
                for o in open_.values():
                    if o.left and o.idle_tsc is None:
                        o.idle_tsc = e.tsc
            elif e.kind in WAKE_KINDS and current in open_ and not open_[current].left:
                out.append(_ended(tl, log.cpu, open_.pop(current), None))
    return out


def _deadline(tl, e):
    return e.tsc + tl.cycles(e.arg)


def _ended(tl, cpu, o, ran_tsc):
    e = o.e
    if ran_tsc is None or o.idle_tsc is None:
        return Sleep(cpu, e.arg, False, 0.0, 0.0)
    return Sleep(cpu, e.arg, True, (o.idle_tsc - e.tsc) * 1e6 / tl.tsc_hz,
                 (ran_tsc - _deadline(tl, e)) * 1e6 / tl.tsc_hz)


def _pct(xs, p):
    return rank_pct(sorted(xs), p / 100)


def by_length(found, edges=EDGES_US):
    """Per bin of sleep length ([lo, hi) µs; the last open): {lo_us, hi_us, sleeps,
    never_idled_pct, to_idle_p50_us, late_p50_us, late_p90_us, late_mean_us}; the idled
    sleeps' figures are None in a bin without one. Bins without a sleep are left out."""
    rows = []
    for i, lo in enumerate(edges):
        hi = edges[i + 1] if i + 1 < len(edges) else None
        inside = [s for s in found if s.length_ns >= lo * 1000
                  and (hi is None or s.length_ns < hi * 1000)]
        if not inside:
            continue
        idled = [s for s in inside if s.idled]
        late = [s.late_us for s in idled]
        rows.append({
            "lo_us": lo, "hi_us": hi, "sleeps": len(inside),
            "never_idled_pct": round(100.0 * (len(inside) - len(idled)) / len(inside), 1),
            "to_idle_p50_us": round(_pct([s.to_idle_us for s in idled], 50), 1) if idled else None,
            "late_p50_us": round(_pct(late, 50), 1) if late else None,
            "late_p90_us": round(_pct(late, 90), 1) if late else None,
            "late_mean_us": round(statistics.mean(late), 1) if late else None,
        })
    return rows


def lines(tl):
    """The table as text lines (none if the timeline holds no sleep)."""
    rows = by_length(sleeps(tl))
    if not rows:
        return []

    def cell(v):
        return "-" if v is None else f"{v:.1f}"
    out = ["sleeps by length (µs): sleeps, never idled %, call to idle p50, "
           "deadline to the thread running p50 / p90 / mean (those that idled)"]
    for r in rows:
        span = f"{r['lo_us']}-{r['hi_us']}" if r["hi_us"] is not None else f">={r['lo_us']}"
        out.append(f"  {span:>9} {r['sleeps']:6d} {r['never_idled_pct']:6.1f} "
                   f"{cell(r['to_idle_p50_us']):>8} {cell(r['late_p50_us']):>8} / "
                   f"{cell(r['late_p90_us'])} / {cell(r['late_mean_us'])}")
    return out
