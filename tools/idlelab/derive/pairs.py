"""Verdicts by evidence: an effect with its 95 % confidence interval, from windows paired
inside each boot, and one of four verdicts. Pure, standard library only, deterministic for a
given seed. docs/verdicts.md says why each choice.

- The order of a boot's windows (schedule): rounds of every compared setting once, ABBA (each
  round the reverse of the last, the next boot starting the other way) or a seeded coin.
- The pairs (paired): in each round of a boot, B's window minus A's. A boot's offset (a slower
  boot is slower for both) cancels in the difference; what is left is the effect and noise.
- The effect: the Hodges-Lehmann estimate of the pooled differences (derive/bootstrap.py),
  or their median if asked.
- The interval: the hierarchical bootstrap of derive/bootstrap.py, boots then pairs.
- The verdict, against the claim's practical threshold (absolute, or a share of A's median):
  reproduced / reversed (the interval excludes 0 and the effect is at least the threshold,
  in or against the claimed direction), no effect (the interval inside +- the threshold),
  not decided (neither; with about how many more pairs would decide it). One pair decides
  nothing; fewer than MIN_BOOTS boots decide nothing either, but say what the rule alone
  would have said.
- The false-positive check: many A/A comparisons judged by a rule, and the share that
  claimed an effect."""
import math
import random
from dataclasses import dataclass, field

# median, hodges_lehmann and RESAMPLES too: the callers of the verdicts take them from here
from idlelab.derive.bootstrap import (DEFAULT_ESTIMATOR, RESAMPLES, bootstrap_ci,
                                      bootstrap_ci_unpaired, effective_n, estimator_of,
                                      hodges_lehmann, median, shift_estimate, t_quantile)

REPRODUCED, REVERSED, NO_EFFECT, NOT_DECIDED = ("reproduced", "reversed", "no effect",
                                                "not decided")
VERDICTS = (REPRODUCED, REVERSED, NO_EFFECT, NOT_DECIDED)
DECIDED = (REPRODUCED, REVERSED, NO_EFFECT)
CLAIMED = (REPRODUCED, REVERSED)     # what an A/A comparison must not say
UP, DOWN = 1, -1
DEFAULT_REL_THRESHOLD = 0.05   # a change under 5 % of A's median is no effect
MIN_BOOTS = 3                  # the design: boot-to-boot variation of the effect is seen
MIN_PAIRS = 2
MAX_FALSE_SHARE = 0.05         # the bar: at least 95 % of A/A comparisons claim nothing
ORDERS = ("abba", "random")


# --- the order of the windows ------------------------------------------------------------------

def schedule(rounds, labels=("A", "B"), order="abba", seed=None, boot=1):
    """(labels of a boot's windows in order, the seed to record: None for abba).

    Each round runs every label once, and the windows of one round are the pair: with two
    labels, windows 2k-1 and 2k (from 1) are round k. abba: round r in `labels` order when
    r + boot is even, reversed when odd (A B B A A B ... in boot 1, B A A B ... in boot 2),
    so a drift inside a boot falls on both arms alike. random: each round shuffled by
    random.Random(seed); with seed None one is drawn, and returned so it can be recorded."""
    labels = list(labels)
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: one of {', '.join(ORDERS)}")
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise ValueError("two labels or more, each once")
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds {rounds!r}: a whole number from 1")
    out = []
    if order == "abba":
        for r in range(1, rounds + 1):
            out += labels if (r + boot) % 2 == 0 else labels[::-1]
        return out, None
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 32)
    rng = random.Random(seed)
    for _ in range(rounds):
        one = labels[:]
        rng.shuffle(one)
        out += one
    return out, seed


# --- the pairs ---------------------------------------------------------------------------------

@dataclass
class Pairs:
    diffs: dict                  # {boot: [B - A per round, in round order]}
    rel: dict                    # {boot: [(B - A) / A]}, rounds where A is 0 left out
    dropped: int = 0             # rounds with a window missing or not measured


def _round_of(w):
    if w.get("round") is not None:
        return w["round"]
    if w.get("index") is not None:
        # two arms per round: windows 2k-1 and 2k (from 1) are round k
        return (w["index"] - 1) // 2 + 1
    raise ValueError(f"window {w!r}: neither its round nor its index")


def paired(windows, a="A", b="B"):
    """The Pairs of windows {boot, round (or index), arm, value}; a value None is a window
    not measured, and its round gives no pair (it is counted in `dropped`)."""
    cells = {}
    for w in windows:
        try:
            key, arm, value = (w["boot"], _round_of(w)), w["arm"], w["value"]
        except KeyError as e:
            raise ValueError(f"window {w!r}: no {e.args[0]}") from None
        if arm in cells.setdefault(key, {}):
            raise ValueError(f"boot {key[0]} round {key[1]}: two windows of arm {arm}")
        cells[key][arm] = value
    out = Pairs({}, {})
    for (boot, _), arms in sorted(cells.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        va, vb = arms.get(a), arms.get(b)
        if va is None or vb is None:
            out.dropped += 1
            continue
        out.diffs.setdefault(boot, []).append(vb - va)
        if va != 0:
            out.rel.setdefault(boot, []).append((vb - va) / va)
    return out


def pairs_from_windows(windows, a="A", b="B", relative=False):
    """{boot: [B - A per round]} (relative: [(B - A) / A]) of `paired`."""
    p = paired(windows, a, b)
    return p.rel if relative else p.diffs


# --- the threshold -----------------------------------------------------------------------------

def threshold_of(rel, a_median, absolute=None):
    """A claim's practical threshold: `absolute` (the figure's unit) if the claim states one,
    else `rel` (DEFAULT_REL_THRESHOLD unless the claim says) of A's median. A median of 0
    gives 0: then nothing is no effect, and any interval clear of 0 decides."""
    if absolute is not None:
        return abs(absolute)
    return abs(rel * a_median)


# --- the verdict -------------------------------------------------------------------------------

@dataclass
class Verdict:
    verdict: str
    effect: float = None          # B - A, in the figure's unit
    ci: tuple = None              # (lo, hi), 95 %
    threshold: float = None       # the practical threshold it was judged against
    n_boots: int = 0
    n_pairs: int = 0              # pairs (paired design) or windows per cell (unpaired)
    more_pairs: int = None        # not decided: about how many more would decide it
    note: str = ""                # what it lacks: "1 pair", "2 boots; the design asks for 3"
    paired: bool = True
    provisional: str = None       # too few boots: what the rule alone says
    dropped: int = 0              # pairs lost to a window not measured
    estimator: str = DEFAULT_ESTIMATOR

    @property
    def decided(self):
        return self.verdict in DECIDED


def decide(effect, ci, threshold, direction=UP):
    """The rule: reproduced / reversed if the interval excludes 0 and |effect| is at least
    the threshold (the sign against `direction` picks which), no effect if the interval
    lies inside [-threshold, +threshold], else not decided. A threshold of 0 (A's median
    is 0) leaves room for no effect only to an interval of exactly [0, 0]: the figure did not
    move in any pair (IPIs of a workload that sends none)."""
    lo, hi = ci
    if (lo > 0 or hi < 0) and abs(effect) >= threshold and effect != 0:
        return REPRODUCED if (effect > 0) == (direction == UP) else REVERSED
    if (threshold > 0 or lo == hi == 0) and -threshold <= lo and hi <= threshold:
        return NO_EFFECT
    return NOT_DECIDED


def more_needed(effect, ci, threshold, n, n_eff=None, n_boots=None):
    """About how many more pairs would decide it, added as more boots of the same size: each
    side of the interval (its distance from the effect) taken to narrow as the interval's
    own half-width does, t(df) sqrt(n_eff / df) / sqrt(n_eff), with n_eff the boots'
    effective number of pairs (bootstrap.effective_n), which grows with the boots and not
    with pairs inside them when the boots differ. An effect at least the threshold needs its
    near side to clear 0; one below it needs both sides inside +- the threshold. None when
    no number would (an effect exactly at 0 with a threshold of 0, an interval of no width).
    Without n_eff the pairs are taken as independent."""
    lo, hi = ci
    below, above = effect - lo, hi - effect
    if n <= 0 or below < 0 or above < 0:
        return None
    if abs(effect) >= threshold and effect != 0:
        side = below if effect > 0 else above
        room = abs(effect)
        if side == 0:
            return None
        scale = room / side
    else:
        if threshold <= 0 or below + above == 0:
            return None
        scale = min((threshold + effect) / below if below else math.inf,
                    (threshold - effect) / above if above else math.inf)
    if scale <= 0:
        return None
    k = n_boots or n
    n_eff = n_eff or n
    target = _half_width(n_eff) * scale
    for more in range(1, MAX_MORE_BOOTS + 1):
        if _half_width(n_eff * (k + more) / k) <= target:
            return max(math.ceil(more * n / k), 1)
    return None


MAX_MORE_BOOTS = 10000     # beyond it, "about N more" would say nothing useful


def _half_width(n_eff):
    """The interval's half-width for n_eff independent values, in standard deviations."""
    df = math.floor(n_eff) - 1
    if df < 1:
        return math.inf
    return t_quantile(df) * math.sqrt((df + 1) / df) / math.sqrt(n_eff)


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _finish(out, n_boots, n, n_eff=None):
    """Too few boots, or not decided: say what it lacks, or how many more pairs."""
    if n_boots < MIN_BOOTS:
        # within one or two boots the boot-to-boot variation of the effect is not seen
        out.provisional = out.verdict
        out.verdict = NOT_DECIDED
        out.note = f"{_plural(n_boots, 'boot')}{' each' if not out.paired else ''}; " \
            f"the design asks for {MIN_BOOTS}"
    elif out.verdict == NOT_DECIDED:
        out.more_pairs = more_needed(out.effect, out.ci, out.threshold, n, n_eff, n_boots)
    return out


def verdict(diffs_by_boot, threshold, direction=UP, rng_seed=1, resamples=RESAMPLES,
            estimator=DEFAULT_ESTIMATOR, dropped=0):
    """The Verdict of paired differences {boot: [B - A, ...]}; `dropped` the pairs lost to a
    window not measured (Pairs.dropped), said on the line."""
    est = estimator_of(estimator)
    if threshold is None or threshold < 0 or direction not in (UP, DOWN):
        raise ValueError("a threshold of 0 or more and a direction UP or DOWN")
    diffs_by_boot = {k: v for k, v in diffs_by_boot.items() if v}
    pooled = [d for v in diffs_by_boot.values() for d in v]
    n, nb = len(pooled), len(diffs_by_boot)
    base = dict(threshold=threshold, n_boots=nb, n_pairs=n, dropped=dropped,
                estimator=estimator)
    if n == 0:
        return Verdict(NOT_DECIDED, note="no pair measured", **base)
    effect = est(pooled)
    if n < MIN_PAIRS:
        return Verdict(NOT_DECIDED, effect, note=_plural(n, "pair"), **base)
    ci = bootstrap_ci(diffs_by_boot, est, resamples, rng_seed)
    out = Verdict(decide(effect, ci, threshold, direction), effect, ci, **base)
    return _finish(out, nb, n, effective_n([v for v in diffs_by_boot.values()]))


def verdict_unpaired(a_by_boot, b_by_boot, threshold, direction=UP, rng_seed=1,
                     resamples=RESAMPLES):
    """The Verdict of two cells made in boots of their own ({boot: [value, ...]} each): a
    setting that cannot change inside a boot (hz=, the guest's kernel). Boot-to-boot noise
    stays in the difference, so it decides less than pairs do. The effect is the
    two-sample Hodges-Lehmann shift."""
    a = [x for v in a_by_boot.values() for x in v]
    b = [x for v in b_by_boot.values() for x in v]
    nb = min(sum(1 for v in a_by_boot.values() if v), sum(1 for v in b_by_boot.values() if v))
    base = dict(threshold=threshold, n_boots=nb, n_pairs=min(len(a), len(b)), paired=False,
                estimator="hodges-lehmann shift")
    if not a or not b:
        return Verdict(NOT_DECIDED, note="a cell not measured", **base)
    effect = shift_estimate(a, b)
    if min(len(a), len(b)) < MIN_PAIRS:
        return Verdict(NOT_DECIDED, effect, note="1 run each", **base)
    ci = bootstrap_ci_unpaired(a_by_boot, b_by_boot, resamples, rng_seed)
    out = Verdict(decide(effect, ci, threshold, direction), effect, ci, **base)
    return _finish(out, nb, min(len(a), len(b)), float(nb))


# --- the text ----------------------------------------------------------------------------------

def num(v, unit=""):
    """A figure as the tables print it: three significant digits, whole from 100 up."""
    if v is None:
        return "-"
    return (f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}") + unit


def diff_unit(unit):
    """The unit of a difference of figures in `unit`: of two shares it is points, not %."""
    return " points" if unit.strip() == "%" else unit


def ci_text(v):
    """`95 % CI [lo, hi]`, the issue's form, or `no interval` (one pair, none measured)."""
    return f"95 % CI [{num(v.ci[0])}, {num(v.ci[1])}]" if v.ci else "no interval"


def verdict_text(v, up=REPRODUCED, down=REVERSED):
    """The verdict word, with what it lacks or how close it is: `not decided (1 pair)`,
    `not decided (about 6 more pairs)`, `not decided (2 boots; the design asks for 3; the
    rule alone: reproduced)`. up/down name the two decided directions for a comparison
    without a claim (`B above A`)."""
    words = {REPRODUCED: up, REVERSED: down}
    word = words.get(v.verdict, v.verdict)
    if v.verdict != NOT_DECIDED:
        return word
    unit = "pairs" if v.paired else "runs each"
    if v.note:
        if v.provisional and v.provisional != NOT_DECIDED:
            return f"{word} ({v.note}; the rule alone: {words.get(v.provisional, v.provisional)})"
        return f"{word} ({v.note})"
    if v.more_pairs:
        return f"{word} (about {v.more_pairs} more {unit})"
    return word


def line(name, a, b, v, unit="", seed=None, why=None):
    """One verdict line (a markdown list item) for a claim `name` whose cells measured a
    (A's median) and b (B's), in `unit`:
    `- **reproduced**: NAME: 4.1 % → 9.8 % (+5.7 points, +139%; 95 % CI [4.9, 6.6]; 3 boots
    x 4 pairs; threshold 1 points). Seed: SEED. Why: WHY`"""
    size = "-" if v.effect is None else f"{v.effect:+.3g}{diff_unit(unit)}"
    if v.effect is not None and a:
        size += f", {v.effect / a:+.0%}"
    how = f"{_plural(v.n_boots, 'boot')} x {_plural(v.n_pairs, 'pair')}" if v.paired \
        else f"{_plural(v.n_boots, 'boot')} each, unpaired"
    lacks = verdict_text(v)[len(v.verdict):].strip(" ()")
    if lacks in ("1 pair", "1 run each"):         # the counts already say so
        lacks = ""
    extra = [f"{_plural(v.dropped, 'pair')} lost to a window not measured"] if v.dropped \
        else []
    if v.estimator not in (DEFAULT_ESTIMATOR, "hodges-lehmann shift"):
        extra.append(f"the {v.estimator} of the pairs")
    parts = [size, ci_text(v), how, f"threshold {num(v.threshold, diff_unit(unit))}"] + \
        extra + ([lacks] if lacks else [])
    text = f"- **{v.verdict}**: {name}: {num(a, unit)} → {num(b, unit)} ({'; '.join(parts)})."
    if seed:
        text += f" Seed: {seed}."
    if why:
        text += f" Why: {why}"
    return text


# --- counts ------------------------------------------------------------------------------------

def tally(verdicts):
    """{verdict: count} over the four, in their order."""
    counts = {k: 0 for k in VERDICTS}
    for v in verdicts:
        counts[v.verdict] += 1
    return counts


def summary(verdicts):
    """`12 comparisons: 3 reproduced, 0 reversed, 4 no effect, 5 not decided; 7 decided.`"""
    counts = tally(verdicts)
    decided = sum(counts[k] for k in DECIDED)
    return (f"{_plural(sum(counts.values()), 'comparison')}: "
            + ", ".join(f"{n} {k}" for k, n in counts.items()) + f"; {decided} decided.")


# --- the false-positive check ------------------------------------------------------------------

@dataclass
class FalsePositives:
    n: int
    claimed: int                      # reproduced or reversed: an effect that is not there
    counts: dict = field(default_factory=dict)
    bar: float = MAX_FALSE_SHARE

    @property
    def share(self):
        return self.claimed / self.n if self.n else 0.0

    @property
    def passed(self):
        return self.n > 0 and self.share <= self.bar

    def text(self):
        return (f"{self.n} A/A comparisons, {self.claimed} claimed an effect "
                f"({self.share:.1%}; bar {self.bar:.0%}): "
                + ", ".join(f"{n} {k}" for k, n in self.counts.items()))


def _judge_paired(dataset, i):
    diffs, threshold = dataset
    return verdict(diffs, threshold, rng_seed=i + 1)


def false_positive_check(datasets, judge=_judge_paired, n=40, bar=MAX_FALSE_SHARE):
    """Judge the first `n` A/A datasets (both arms the same settings) and count those that
    claimed an effect. `datasets`: an iterable (a generator) of what `judge(dataset, i)`
    takes, by default (diffs_by_boot, threshold) judged by `verdict` with seed i + 1; give
    another judge to check another rule by the same harness."""
    vs = []
    for i, d in enumerate(datasets):
        if i == n:
            break
        vs.append(judge(d, i))
    if len(vs) < n:
        raise ValueError(f"{len(vs)} datasets, {n} wanted")
    counts = tally(vs)
    return FalsePositives(n, sum(counts[k] for k in CLAIMED), counts, bar)
