"""One verdict per effect a seed claims: reproduced, not reproduced or reversed, computed from
the repeats of two cells, with the measured reason beside it.

An effect is "configuration B moves figure F of the workload this way against configuration
A" (seed 003: halt_poll_ns 400 us against 200 us raises the host CPU of a vCPU woken at a
period just inside the window). The rule, the same for every seed:
- both cells need runs that succeeded; otherwise the effect is not judged, and says why;
- the size is B's median minus A's (and relative to A's where A is not 0);
- the effect shows only where the two cells' repeats do not overlap (B's lowest above A's
  highest, or B's highest below A's lowest: these machines vary by 10 % and more from run to
  run, so medians alone decide nothing) and the medians differ by at least MIN_REL of A's;
- shown in the seed's direction: reproduced; the other way: reversed; not shown: not
  reproduced, with the spread that hid it.
A cell of one run has no spread: the verdict then says it rests on one run each.

Pure: rows in (derive/runrow.RunRow, aggregated over repeats), lines out.
"""
from dataclasses import dataclass

from idlelab.derive.records import is_number

REPRODUCED, NOT_REPRODUCED, REVERSED, NOT_JUDGED = (
    "reproduced", "not reproduced", "reversed", "not judged")
MIN_REL = 0.05        # a difference of the medians below 5 % of A's is no effect
UP, DOWN = 1, -1


@dataclass
class Effect:
    """What a seed claims, and the two cells that test it here."""
    name: str            # "halt_poll_ns 400 us vs 200 us at period 250 us: host CPU %"
    seed: str            # the seed's own figures for it: "4.3 % -> 89.6 % sys"
    base: object         # RunRow of configuration A (aggregated), or None
    other: object        # RunRow of configuration B
    key: str             # the RunRow column compared
    direction: int       # UP: the seed saw B above A; DOWN: below
    unit: str = ""       # after a value: " %", " µs"
    why: str = ""        # the measured reason, from the cells' counters (the layout's)


@dataclass
class Verdict:
    verdict: str
    a: float = None
    b: float = None
    change: float = None       # b - a
    rel: float = None          # (b - a) / a, None where a is 0
    note: str = ""             # why not judged, or what the spread hid


def _median_spread(row, key):
    v = getattr(row, key, None)
    if not is_number(v):
        return None, (None, None)
    lo, hi = (row.spread or {}).get(key, (v, v))
    return v, (lo, hi)


def judge(e):
    """The Verdict of one effect."""
    for label, row in (("A", e.base), ("B", e.other)):
        if row is None:
            return Verdict(NOT_JUDGED, note=f"configuration {label} was not in this run")
        if not row.ok:
            what = "not run" if row.status == "not run" else "failed"
            return Verdict(NOT_JUDGED, note=f"{row.name} {what}"
                           + (f": {row.reason}" if row.reason else ""))
    a, (a_lo, a_hi) = _median_spread(e.base, e.key)
    b, (b_lo, b_hi) = _median_spread(e.other, e.key)
    if a is None or b is None:
        return Verdict(NOT_JUDGED, note=f"{e.key} not measured")
    change = b - a
    rel = change / a if a else None
    out = Verdict(NOT_REPRODUCED, a, b, change, rel)
    big = abs(change) >= MIN_REL * abs(a) and change != 0
    apart = b_lo > a_hi or b_hi < a_lo
    if not big:
        out.note = f"the medians differ by less than {MIN_REL:.0%} of A's"
    elif not apart:
        out.note = (f"within the spread of the repeats (A {a_lo:g}..{a_hi:g}, "
                    f"B {b_lo:g}..{b_hi:g})")
    else:
        out.verdict = REPRODUCED if (change > 0) == (e.direction == UP) else REVERSED
    if min(e.base.repeat or 1, e.other.repeat or 1) < 2:
        out.note = "; ".join(x for x in (out.note, "one run each: no spread to judge by") if x)
    return out


def _num(v, unit):
    return f"{v:.3g}{unit}" if abs(v) < 100 else f"{v:.0f}{unit}"


def line(e, v=None):
    """The verdict line of one effect, for a seed's table (markdown list item)."""
    v = v or judge(e)
    head = f"- **{v.verdict}**: {e.name}"
    if v.verdict == NOT_JUDGED:
        return f"{head} ({v.note}). Seed: {e.seed}."
    size = f"{v.change:+.3g}{e.unit}"
    if v.rel is not None:
        size += f", {v.rel:+.0%}"
    text = f"{head}: {_num(v.a, e.unit)} → {_num(v.b, e.unit)} ({size})"
    if v.note:
        text += f"; {v.note}"
    text += f". Seed: {e.seed}."
    if e.why:
        text += f" Why: {e.why}"
    return text


def section(effects, title="Verdicts (from the repeats; derive/effects.py)"):
    """The verdict lines under a heading, and a count by verdict."""
    if not effects:
        return []
    judged = [(e, judge(e)) for e in effects]
    counts = {}
    for _, v in judged:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    tally = ", ".join(f"{n} {k}" for k, n in counts.items())
    return [f"## {title}", "", f"{len(effects)} effects: {tally}.", ""] + \
        [line(e, v) for e, v in judged] + [""]
