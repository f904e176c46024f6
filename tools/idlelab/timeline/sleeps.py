"""A guest timeline's sleeps (the `sleep` event of thread_sleep_ns) set against what their
CPU did: whether it idled before the sleeping thread ran again, when it got there, and how
late past the sleep's deadline the thread ran. Binned by the sleep's length, it is the run's
own measure of two things the simulator prices from bench=exits (tools/sim/costs/here.txt):
the lead under which a sleep never idles (sleep_cut) and a timer's way back to its thread
(timer_slack, timer_wake, timer_entry, timer_irq), as a function of how long the sleep was.

A sleep starts at its event (stamped just before thread_sleep_ns reads its own start, so a
deadline here is early by that much) and ends when its thread runs again on the CPU (a `run`
of the thread that was running at the call), or, if the thread never blocked, at the CPU's
next event of the thread's own (its next sleep). A sleep whose end the log does not hold (the
window or the log ran out) is left out.
"""
import statistics
from dataclasses import dataclass

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


def sleeps(tl):
    """[Sleep] of every CPU's log, in order."""
    out = []
    for log in tl.cpus:
        current = None      # the thread running on this CPU (a run event's arg)
        open_ = None        # (event, thread, first idle state's TSC or None)
        for e in log.events:
            if e.kind == "sleep":
                if open_ is not None and open_[2] is None:
                    out.append(_ended(tl, log.cpu, open_, None))  # never blocked: no idle
                # a sleep before the CPU's first run event: whose thread is not known
                open_ = (e, current, None) if current is not None else None
            elif e.kind in IDLE_KINDS and open_ is not None and open_[2] is None:
                open_ = (open_[0], open_[1], e.tsc)
            elif e.kind == "run":
                current = e.arg
                if open_ is not None and e.arg == open_[1] and e.arg != IDLE_THREAD:
                    out.append(_ended(tl, log.cpu, open_, e.tsc))
                    open_ = None
    return out


def _ended(tl, cpu, open_, ran_tsc):
    e, _, idle_tsc = open_
    if ran_tsc is None or idle_tsc is None:
        return Sleep(cpu, e.arg, False, 0.0, 0.0)
    deadline = e.tsc + tl.cycles(e.arg)
    return Sleep(cpu, e.arg, True, (idle_tsc - e.tsc) * 1e6 / tl.tsc_hz,
                 (ran_tsc - deadline) * 1e6 / tl.tsc_hz)


def _pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


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
