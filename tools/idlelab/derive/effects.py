"""One verdict per effect a seed claims, computed from the windows of two cells with its 95 %
confidence interval (derive/pairs.py, docs/verdicts.md), with the measured reason beside it.

An effect is "configuration B moves figure F of the workload this way against configuration
A" (seed 003: halt_poll_ns 400 us against 200 us raises the host CPU of a vCPU woken at a
period just inside the window). The rule, the same for every seed:
- both cells need runs that succeeded; otherwise the effect is not judged, and says why;
- cells measured inside the same boots (a within= matrix row: their windows take turns) are
  compared on the paired differences of each round, B - A; cells made in boots of their own
  (a setting that cannot change inside a boot, hz= say) on their boots apart, which leaves
  the boots' own variation in the difference and so decides less;
- the effect and its interval decide: reproduced (in the seed's direction) or reversed (the
  interval excludes 0 and the effect is at least the claim's threshold: `threshold`, in the
  figure's unit, or else MIN_REL of A's median), no effect (the interval inside +- the
  threshold), not decided (neither: it says about how many more pairs would decide it, or
  what it lacks: one run, one boot).

Pure: rows in (derive/runrow.RunRow, aggregated over repeats, `members` the windows or boots
aggregated), lines out.
"""
from dataclasses import dataclass

from idlelab.derive import pairs
from idlelab.derive.records import is_number

REPRODUCED, REVERSED, NO_EFFECT, NOT_DECIDED = (pairs.REPRODUCED, pairs.REVERSED,
                                                pairs.NO_EFFECT, pairs.NOT_DECIDED)
NOT_JUDGED = "not judged"
MIN_REL = pairs.DEFAULT_REL_THRESHOLD   # a change under 5 % of A's median is no effect
UP, DOWN = pairs.UP, pairs.DOWN


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
    threshold: float = None   # the claim's practical threshold in the figure's unit; None:
                              # MIN_REL of A's median


@dataclass
class Verdict:
    verdict: str
    a: float = None
    b: float = None
    change: float = None       # the effect, B - A (the paired estimate)
    rel: float = None          # change / a, None where a is 0
    note: str = ""             # why not judged
    stats: pairs.Verdict = None   # the interval and counts behind it


def _members(row):
    return [m for m in (row.members or [row]) if m.ok]


def _values(row, key):
    """[(boot, round or None, value)] of a cell's windows (or boots) that measured `key`; a
    boot is its run and repeat (two boot= or within= rows' boots share repeat numbers)."""
    out = []
    for m in _members(row):
        v = getattr(m, key, None)
        if is_number(v):
            out.append(((getattr(m, "boot_run", None), m.repeat), m.window_round, v))
    return out


def exact(e, a, b, threshold):
    """A deterministic prediction's verdict (the simulator's rows: the same configuration
    always gives the same figures, so there is no interval to compute): the difference
    itself against the threshold."""
    change = b - a
    if abs(change) < threshold or change == 0:
        word = NO_EFFECT
    else:
        word = REPRODUCED if (change > 0) == (e.direction == UP) else REVERSED
    stats = pairs.Verdict(word, change, (change, change), threshold, 1, 1, note="deterministic",
                          paired=False)
    return Verdict(word, a, b, change, change / a if a else None, stats=stats)


def paired_rows(a, b):
    """True where two rows ran as windows of the same boots: every window measured has its
    round (a within= or boot= row's) and both rows' windows come from the same boots (their
    run and repeat), so judge() pairs them round by round."""
    ms = [_members(r) for r in (a, b)]
    boots = [{(getattr(m, "boot_run", None) or m.config, m.repeat) for m in side}
             for side in ms]
    return all(ms) and all(m.window_round is not None for m in ms[0] + ms[1]) and \
        boots[0] == boots[1]


def judge(e, deterministic=False):
    """The Verdict of one effect (`deterministic`: both cells are predictions, judged
    exactly)."""
    for label, row in (("A", e.base), ("B", e.other)):
        if row is None:
            return Verdict(NOT_JUDGED, note=f"configuration {label} was not in this run")
        if not row.ok:
            what = "not run" if row.status == "not run" else "failed"
            return Verdict(NOT_JUDGED, note=f"{row.name} {what}"
                           + (f": {row.reason}" if row.reason else ""))
    a_vals, b_vals = _values(e.base, e.key), _values(e.other, e.key)
    a, b = getattr(e.base, e.key, None), getattr(e.other, e.key, None)
    if not a_vals or not b_vals or not is_number(a) or not is_number(b):
        return Verdict(NOT_JUDGED, note=f"{e.key} not measured")
    threshold = pairs.threshold_of(MIN_REL, a, e.threshold)
    if deterministic:
        return exact(e, a, b, threshold)
    shared = {bt for bt, _, _ in a_vals} & {bt for bt, _, _ in b_vals}
    if shared and all(r is not None for _, r, _ in a_vals + b_vals):
        windows = [dict(boot=bt, round=r, arm="A", value=v) for bt, r, v in a_vals] + \
                  [dict(boot=bt, round=r, arm="B", value=v) for bt, r, v in b_vals]
        stats = pairs.verdict(pairs.pairs_from_windows(windows), threshold, e.direction)
    else:
        by = ({}, {})
        for side, vals in zip(by, (a_vals, b_vals)):
            for bt, _, v in vals:
                side.setdefault(bt, []).append(v)
        stats = pairs.verdict_unpaired(*by, threshold, e.direction)
    change = stats.effect if stats.effect is not None else b - a
    return Verdict(stats.verdict, a, b, change, change / a if a else None, stats=stats)


def _num(v, unit):
    return f"{v:.3g}{unit}" if abs(v) < 100 else f"{v:.0f}{unit}"


def line(e, v=None):
    """The verdict line of one effect, for a seed's table (markdown list item)."""
    v = v or judge(e)
    if v.verdict == NOT_JUDGED:
        return f"- **{v.verdict}**: {e.name} ({v.note}). Seed: {e.seed}."
    st = v.stats
    size = f"{v.change:+.3g}{e.unit}"
    if v.rel is not None:
        size += f", {v.rel:+.0%}"
    boots = f"{st.n_boots} boot{'s' if st.n_boots != 1 else ''}"
    how = (f"{boots} x {st.n_pairs} pair{'s' if st.n_pairs != 1 else ''}" if st.paired
           else f"{boots} each, unpaired")
    if st.note == "deterministic":
        text = (f"- **{st.verdict}**: {e.name}: {_num(v.a, e.unit)} → {_num(v.b, e.unit)} "
                f"({size}; predicted, deterministic: no interval; threshold "
                f"{_num(st.threshold, e.unit)}). Seed: {e.seed}.")
        return text + (f" Why: {e.why}" if e.why else "")
    lacks = pairs.verdict_text(st)[len(st.verdict):].strip(" ()")
    if lacks in ("1 pair", "1 run each"):       # the counts already say so
        lacks = ""
    text = (f"- **{st.verdict}**: {e.name}: {_num(v.a, e.unit)} → "
            f"{_num(v.b, e.unit)} ({size}; {pairs.ci_text(st)}; {how}; threshold "
            f"{_num(st.threshold, e.unit)}{'; ' + lacks if lacks else ''}). Seed: {e.seed}.")
    if e.why:
        text += f" Why: {e.why}"
    return text


def section(effects, title="Verdicts (paired windows, 95 % CI; derive/effects.py)",
            deterministic=False):
    """The verdict lines under a heading, and a count by verdict (`deterministic`: the
    cells are the simulator's predictions, judged exactly)."""
    if not effects:
        return []
    judged = [(e, judge(e, deterministic)) for e in effects]
    counts = {}
    for _, v in judged:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    tally = ", ".join(f"{n} {k}" for k, n in counts.items())
    decided = sum(n for k, n in counts.items() if k in pairs.DECIDED)
    return [f"## {title}", "", f"{len(effects)} effects: {tally}; {decided} decided.", ""] + \
        [line(e, v) for e, v in judged] + [""]
