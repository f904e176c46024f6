"""What `trace=halt_poll_ns` costs the boots it traces, from their own cost tables, for the
simulator to price those boots' windows with it.

The trace (a tracefs instance that follows the vCPU threads: host/windowtrace.py) adds work
to every halt: its events, and the pid filter's checks on every switch into and out of the
threads. The bench's table is measured untraced; a traced boot's own table (boot_costs=) is
measured under the trace. The difference of medians, traced boots against the untraced
ones of the same folder and the bench's table, is its cost: per IPI-woken halt by
`ipi_halt_rtt`, per timer-woken one by `timer_sleep` (one halt in each sample of either).
It lands inside the halt KVM times, on the way from the wake to the thread running (the
nested host's traced pingpong halts, slept, 205-240 us at p50 against the untraced model's
174: docs/notebook/2026-12-07-halts-that-never-block.md), so it is added to the thread parts
there (`thread_wake`, and the timer's). A folder without traced boots, or with no untraced
table beside them, has none. Pure.
"""
import statistics

from idlelab.derive.threadtrace import LONG_SUFFIX, PROBE_BASIS

TRACED = "halt_poll_ns"         # the trace= whose cost this is
WAKE_PARTS = {"ipi": ("thread_wake",),           # where it lands, by the probe's kinds
              "timer": ("thread_wake_timer", "thread_wake_timer" + LONG_SUFFIX)}


def traced(boot):
    """Whether a raw record's boot ran under trace=halt_poll_ns."""
    return (boot.get("trace") or {}).get("what") == TRACED


def untraced(boot):
    """Whether it ran under no trace at all (trace=threads slows it too)."""
    return not (boot.get("trace") or {}).get("what")


def priceable(threads):
    """Whether a table's thread parts can take the cost (parts, not a reason)."""
    return bool(threads) and "why" not in threads and any(
        part in threads for parts in WAKE_PARTS.values() for part in parts)


def _p50(prims, name):
    v = (prims or {}).get(name) or {}
    return v.get("ns_p50")


def measure(boots, bench_prims):
    """{"ipi_ns", "timer_ns", "traced_tables", "untraced_tables"} from the boots' own tables
    (raw records with `cost_table.prims`) and the bench's, or None where there is no traced
    table or no untraced one to hold it against. A cost below 0 (the boots' spread) is 0."""
    def prims(b):
        return (b.get("cost_table") or {}).get("prims")
    with_trace = [prims(b) for b in boots if traced(b) and prims(b)]
    without = [prims(b) for b in boots if untraced(b) and prims(b)] + (
        [bench_prims] if bench_prims else [])
    if not with_trace or not without:
        return None
    out = {}
    for kind, prim in PROBE_BASIS.items():
        a = [x for x in (_p50(p, prim) for p in with_trace) if x]
        b = [x for x in (_p50(p, prim) for p in without) if x]
        if not a or not b:
            return None
        out[f"{kind}_ns"] = round(max(0.0, statistics.median(a) - statistics.median(b)), 1)
    return dict(out, traced_tables=len(with_trace), untraced_tables=len(without),
                with_bench=bool(bench_prims))


def priced(threads, cost):
    """The thread parts (cost_table.threads) with the trace's cost added to the parts it lands
    in, p50, p90 and p99 alike; the parts as they were without a cost or parts."""
    if not cost or not priceable(threads):
        return threads
    out = dict(threads)
    for kind, parts in WAKE_PARTS.items():
        for part in parts:
            if part in out:
                out[part] = dict(out[part], **{k: out[part][k] + cost[f"{kind}_ns"]
                                               for k in ("ns_p50", "ns_p90", "ns_p99")
                                               if k in out[part]})
    return out
