"""The thread parts of several traced pairs of cost-table boots made one (costtable/measuring.py).

One traced boot is one sample of the host's state: on the nested host one bench's traced
parts in another's place moved its five-making model by 33 of 555 runs (docs/notebook/
2026-12-07-halts-that-never-block.md), and the p90s spread most (over 22 benches, thread_wake's
p90 0.68x the traced boot's ipi_halt_rtt at the median, 0.89x in one: docs/notebook/
2026-12-07-the-timer-a-poll-catches.md). Each statistic of a part (p50, p90, p99) is the
median of the pairs' (a pair's outlier moves it little, where a pool of every halt would carry
it in); the halts counted are summed, the rates and shares are the median of the pairs'. Pure.
"""
import statistics

# counts and totals: summed over the pairs; every other number is a rate, a share or a size
SUMMED = ("halts", "lost", "rewakes", "vcpu_wakes", "shadow_breaks", "on_cpu_ms",
          "preempted_ms")
STATS = ("ns_p50", "ns_p90", "ns_p99")


def _is_part(v):
    return isinstance(v, dict) and "ns_p50" in v


def pooled(summaries):
    """One summary (threadtrace.summary(), unprobed) of several, with "pairs": how many;
    "preempted_by" summed by task; the first's other fields that are neither numbers nor parts
    (what), and a field some pair has in another kind, as the first has them; "probe" the
    median of the pairs' probes."""
    if len(summaries) == 1:
        return dict(summaries[0], pairs=1)
    out = dict(summaries[0])
    keys = {k for s in summaries for k in s}
    for k in keys:
        have = [s[k] for s in summaries if k in s]
        if all(_is_part(v) for v in have):
            # a statistic some pair lacks is left out: a median over fewer pairs could put
            # the p99 under the p90
            out[k] = {stat: statistics.median(v[stat] for v in have) for stat in STATS
                      if all(stat in v for v in have)}
            out[k]["n"] = sum(v.get("n", 0) for v in have)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in have):
            out[k] = sum(have) if k in SUMMED else statistics.median(have)
    by = {}
    for s in summaries:
        for comm, ms in (s.get("preempted_by") or {}).items():
            by[comm] = round(by.get(comm, 0) + ms, 2)
    if by:      # beside preempted_ms, summed as well: threadtrace's six that took most
        out["preempted_by"] = dict(sorted(by.items(), key=lambda kv: -kv[1])[:6])
    probes = [s["probe"] for s in summaries if "probe" in s]
    if probes:
        out["probe"] = dict(probes[0], **{kind: statistics.median(p[kind] for p in probes)
                                          for kind in ("ipi", "timer")})
    out["pairs"] = len(summaries)
    return out
