"""haltpoll's plateau, as measured: what one run says about it, where a sweep of runs puts it,
and what haltpoll's window did over time when it formed nowhere. Pure: rows and timelines
in, values out (bench/plateau.py makes the boots, report/layouts/governors.py the tables).

The plateau (docs/haltpoll-spec.md §1.10.3): an idle gap a little longer than haltpoll's
window, which then settles below the gap, so that it polls on every wake-up and every poll
expires (the host CPU of a whole window burnt, and the halt paid anyway). A run is on it
where haltpoll polls on at least every other wake-up and under PLATEAU_HIT_PCT of those polls
catch one. Shorter gaps: the polls hit ("hits"). Longer ones: the window shrinks to nothing
and haltpoll halts at once ("halts"). The plateau lies where the hit ratio collapses, between
the two, and may be narrow enough to slip between the points of a coarse sweep: hence a fine
sweep there (FINE_POINTS between the last point that hit and the first that did not)."""

import statistics

PLATEAU_HIT_PCT = 10.0      # under this share of its polls hit: haltpoll polls for nothing
POLLS_PER_WAKEUP = 0.5      # at least this many polls per wake-up: haltpoll still polls
HITS, PLATEAU, HALTS = "hits", "plateau", "halts"
# The coarse sweep, in units of haltpoll's largest window (guest_halt_poll_ns), added to a
# wake-up's own cost (the cost table's `timer` for a period; nothing for a think time, which
# is already the responder's gap less the round trip): from well inside the window to twice
# it, where the window must have collapsed.
COARSE_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.85, 1.0, 1.15, 1.3, 1.6, 2.0)
FINE_POINTS = 5
WINDOW_BINS = 10            # the window over time, in this many stretches of the timeline


def hit_pct(entries, hits):
    """Poll hits per poll entry, %; None without polls."""
    return None if not entries else round(100.0 * (hits or 0) / entries, 1)


def state(has_wakeups, entries, wakeups, hits):
    """HITS, PLATEAU or HALTS for one run of haltpoll; None where it cannot say (no wake-ups
    of the workload's own, or none counted)."""
    if not has_wakeups or not wakeups:
        return None
    if (entries or 0) < POLLS_PER_WAKEUP * wakeups:
        return HALTS
    return PLATEAU if hit_pct(entries, hits) < PLATEAU_HIT_PCT else HITS


def coarse_ns(base_ns, max_window_ns):
    """The coarse sweep's values, ns."""
    return [round(base_ns + f * max_window_ns) for f in COARSE_FRACTIONS]


def fine_ns(points):
    """The fine sweep between the last coarse point that hit and the first after it that did
    not ([] where the sweep never left HITS, or never hit): FINE_POINTS values strictly
    between them. points: [(ns, state)] in increasing ns."""
    lo = hi = None
    for ns, st in points:
        if st == HITS:
            lo, hi = ns, None
        elif lo is not None and hi is None and st is not None:
            hi = ns
    if lo is None or hi is None:
        return []
    step = (hi - lo) / (FINE_POINTS + 1)
    return [round(lo + step * (i + 1)) for i in range(FINE_POINTS)]


def locate(points):
    """Where the plateau lies, from every point of the sweeps, [(ns, state, hit %)]:
    {"found": True, "ns": the middle one of the points on it, "on": [ns...]} or, where no
    point is on it, {"found": False, "ns": the stand-in, "why": one line}: the first point
    after the last one whose polls hit (the bracket fine_ns() sweeps, so that a point that
    missed by chance between two that hit is not taken for the collapse), or where every
    point hit, the one with the fewest hits. None where no point hit (nothing to place by)."""
    points = sorted(p for p in points if p[1] is not None)
    on = [ns for ns, st, _ in points if st == PLATEAU]
    if on:
        return {"found": True, "ns": on[(len(on) - 1) // 2], "on": on}
    hits = [i for i, (_, st, _) in enumerate(points) if st == HITS]
    if not hits:
        return None
    if hits[-1] + 1 < len(points):
        last, nearest = points[hits[-1]][0], points[hits[-1] + 1][0]
        why = (f"haltpoll's polls hit up to {last / 1000:.0f} µs and from "
               f"{nearest / 1000:.0f} µs it stopped polling on most wake-ups, with no "
               "point between where it polled and missed")
    else:
        pct, nearest = min((pct, ns) for ns, st, pct in points if st == HITS)
        why = (f"haltpoll never stopped hitting: at best {pct:.1f} % of its polls hit (at "
               f"{nearest / 1000:.0f} µs)")
    return {"found": False, "ns": nearest, "on": [], "why": why}


def window_over_time(tl, cpu, end_work, end_halt, reflect="reflect", idle_end="idle_end",
                     bins=WINDOW_BINS):
    """haltpoll's window on one CPU of a timeline, over the recorded stretch in `bins` equal
    parts: [{"from_us", "to_us", "window_us": (min, median, max) of the window each reflect
    left, "polls", "hits" (polls that saw work), "halts"}]; [] without reflects. An idle
    state's end says which it was by its bits (end_work, end_halt: timeline/records.py's
    END_WORK and END_HALT, from kernel/timeline.h)."""
    events = tl.cpus[cpu].events
    refl = [e for e in events if e.kind == reflect]
    if not refl:
        return []
    t0, t1 = tl.t0, max(tl.end_of(cpu), events[-1].tsc)
    width = max(1, (t1 - t0) / bins)
    out = [{"from_us": round(tl.us(t0 + i * width), 1),
            "to_us": round(tl.us(t0 + (i + 1) * width), 1), "windows": [],
            "polls": 0, "hits": 0, "halts": 0} for i in range(bins)]

    def part(tsc):
        return out[min(bins - 1, max(0, int((tsc - t0) / width)))]

    for e in events:
        if e.kind == reflect:
            part(e.tsc)["windows"].append(e.arg / 1000)
        elif e.kind == idle_end and e.arg & end_halt:
            part(e.tsc)["halts"] += 1
        elif e.kind == idle_end:
            part(e.tsc)["polls"] += 1
            part(e.tsc)["hits"] += bool(e.arg & end_work)
    for p in out:
        w = p.pop("windows")
        p["window_us"] = (round(min(w), 1), round(statistics.median(w), 1),
                          round(max(w), 1)) if w else None
    return out
