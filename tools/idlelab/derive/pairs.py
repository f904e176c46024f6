"""Verdicts by evidence: an effect with its 95 % confidence interval, from windows paired
inside each boot, and one of four verdicts. Pure, standard library only, deterministic for a
given seed. docs/verdicts.md says why each choice.

- The order of a boot's windows (schedule): rounds of every compared setting once, ABBA (each
  round the reverse of the last, the next boot starting the other way) or a seeded coin.
- The paired differences: in each round of a boot, B's window minus A's. A boot's offset
  (it is a slower boot) cancels in the difference; what is left is the effect and its noise.
- The effect: the Hodges-Lehmann estimate (the median of the Walsh averages) of the pooled
  differences: as robust as the median to one wild window, less noisy on few pairs.
- The interval: a hierarchical bootstrap (Kalibera and Jones, "Rigorous benchmarking in
  reasonable time", 2013): resample boots with replacement, then each chosen boot's pairs,
  and take the 2.5th and 97.5th percentiles of the estimate. The boots are the level that
  varies most here, so they are resampled first; an effect that differs from boot to boot
  widens the interval, as it should.
- The verdict, against the claim's practical threshold (per claim: absolute, or a share of
  A's median): reproduced / reversed (the interval excludes 0 and the effect is at least the
  threshold, in or against the claimed direction), no effect (the interval inside +- the
  threshold), not decided (neither; with about how many more pairs would decide it).
  Fewer than MIN_BOOTS boots or MIN_PAIRS pairs decide nothing."""
import math
import random
from dataclasses import dataclass

REPRODUCED, REVERSED, NO_EFFECT, NOT_DECIDED = ("reproduced", "reversed", "no effect",
                                                "not decided")
DECIDED = (REPRODUCED, REVERSED, NO_EFFECT)
UP, DOWN = 1, -1
DEFAULT_REL_THRESHOLD = 0.05   # a change under 5 % of A's median is no effect
MIN_BOOTS = 3                  # the design: boot-to-boot variation of the effect is seen
MIN_PAIRS = 2
RESAMPLES = 2000
ORDERS = ("abba", "random")


def median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        raise ValueError("median of nothing")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def hodges_lehmann(xs):
    """The median of the Walsh averages (x_i + x_j) / 2, i <= j: the one-sample estimate."""
    n = len(xs)
    return median([(xs[i] + xs[j]) / 2 for i in range(n) for j in range(i, n)])


def shift_estimate(a, b):
    """The two-sample Hodges-Lehmann shift: the median of every b_j - a_i."""
    return median([y - x for x in a for y in b])


# --- the order of the windows ------------------------------------------------------------------

def schedule(rounds, labels, order="abba", seed=None, boot=1):
    """(labels of a boot's windows in order, the seed used). Each round runs every label once.
    abba: round r in `labels` order when r + boot is even, reversed when odd (two labels:
    A B B A A B ... in boot 1, B A A B ... in boot 2); random: each round shuffled by a
    random.Random(seed), the seed drawn and returned when None, so it can be recorded."""
    labels = list(labels)
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: one of {', '.join(ORDERS)}")
    if len(set(labels)) != len(labels) or len(labels) < 2:
        raise ValueError("two labels or more, each once")
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


def pairs_from_windows(windows, a="A", b="B"):
    """{boot: [b - a per round]} from windows {boot, round, arm, value}; a round missing
    either value (not measured, failed) gives no pair."""
    cells = {}
    for w in windows:
        if w.get("value") is None:
            continue
        cells.setdefault((w["boot"], w["round"]), {})[w["arm"]] = w["value"]
    out = {}
    for (boot, _), arms in sorted(cells.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if a in arms and b in arms:
            out.setdefault(boot, []).append(arms[b] - arms[a])
    return out


# --- the interval ----------------------------------------------------------------------------

def bootstrap_ci(diffs_by_boot, estimator=hodges_lehmann, resamples=RESAMPLES, seed=1,
                 level=0.95):
    """(lo, hi): percentile interval of `estimator` over hierarchical resamples: boots with
    replacement, then each chosen boot's pairs with replacement."""
    boots = [list(v) for v in diffs_by_boot.values() if v]
    rng = random.Random(seed)
    stats = []
    for _ in range(resamples):
        sample = []
        for _ in boots:
            chosen = boots[rng.randrange(len(boots))]
            sample += [chosen[rng.randrange(len(chosen))] for _ in chosen]
        stats.append(estimator(sample))
    stats.sort()
    tail = (1 - level) / 2
    return (stats[int(math.floor(tail * (resamples - 1)))],
            stats[int(math.ceil((1 - tail) * (resamples - 1)))])


def bootstrap_ci_unpaired(a_by_boot, b_by_boot, resamples=RESAMPLES, seed=1, level=0.95):
    """The same for two cells measured in boots of their own (no pairs): each cell's boots,
    then its values, resampled apart; the shift estimate of each resample."""
    rng = random.Random(seed)

    def draw(by_boot):
        boots = [list(v) for v in by_boot.values() if v]
        out = []
        for _ in boots:
            chosen = boots[rng.randrange(len(boots))]
            out += [chosen[rng.randrange(len(chosen))] for _ in chosen]
        return out

    stats = sorted(shift_estimate(draw(a_by_boot), draw(b_by_boot)) for _ in range(resamples))
    tail = (1 - level) / 2
    return (stats[int(math.floor(tail * (resamples - 1)))],
            stats[int(math.ceil((1 - tail) * (resamples - 1)))])


# --- the verdict -----------------------------------------------------------------------------

@dataclass
class Verdict:
    verdict: str
    effect: float = None          # B - A, in the figure's unit
    ci: tuple = None              # (lo, hi), 95 %
    threshold: float = None       # the practical threshold it was judged against
    n_boots: int = 0
    n_pairs: int = 0              # pairs (paired design) or windows per cell (unpaired)
    more_pairs: int = None        # not decided: about how many more would decide it
    note: str = ""
    paired: bool = True

    @property
    def decided(self):
        return self.verdict in DECIDED


def threshold_of(rel, a_median, absolute=None):
    """A claim's practical threshold: `absolute` (the figure's unit) if given, else `rel` of
    A's median (never 0: a median of 0 gets the absolute floor of 0 and so only an interval
    of exactly 0 is no effect)."""
    if absolute is not None:
        return abs(absolute)
    return abs(rel * a_median)


def _decide(effect, ci, threshold, direction):
    lo, hi = ci
    if (lo > 0 or hi < 0) and abs(effect) >= threshold and effect != 0:
        return REPRODUCED if (effect > 0) == (direction == UP) else REVERSED
    if -threshold <= lo and hi <= threshold and threshold > 0:
        return NO_EFFECT
    return NOT_DECIDED


def more_needed(effect, ci, threshold, n):
    """About how many more pairs would decide it, if the interval narrows as 1/sqrt(n): to
    clear 0 (an effect at least the threshold) or to fit inside the threshold (one below)."""
    half = (ci[1] - ci[0]) / 2
    room = abs(effect) if abs(effect) >= threshold else threshold - abs(effect)
    if half <= 0 or room <= 0 or n <= 0:
        return None
    need = math.ceil(n * (half / room) ** 2)
    return max(need - n, 1)


def verdict(diffs_by_boot, threshold, direction=UP, rng_seed=1, resamples=RESAMPLES):
    """The Verdict of paired differences {boot: [B - A, ...]}."""
    diffs_by_boot = {k: v for k, v in diffs_by_boot.items() if v}
    pooled = [d for v in diffs_by_boot.values() for d in v]
    n, nb = len(pooled), len(diffs_by_boot)
    if n == 0:
        return Verdict(NOT_DECIDED, threshold=threshold, note="no pair measured")
    effect = hodges_lehmann(pooled)
    if n < MIN_PAIRS:
        return Verdict(NOT_DECIDED, effect, None, threshold, nb, n,
                       note=f"{n} pair")
    ci = bootstrap_ci(diffs_by_boot, seed=rng_seed, resamples=resamples)
    out = Verdict(_decide(effect, ci, threshold, direction), effect, ci, threshold, nb, n)
    if nb < MIN_BOOTS:
        # within one or two boots the boot-to-boot variation of the effect is not seen
        out.note = f"{nb} boot{'s' if nb > 1 else ''}; the design asks for {MIN_BOOTS}"
        out.verdict = NOT_DECIDED
    if out.verdict == NOT_DECIDED and out.note == "":
        out.more_pairs = more_needed(effect, ci, threshold, n)
    return out


def verdict_unpaired(a_by_boot, b_by_boot, threshold, direction=UP, rng_seed=1,
                     resamples=RESAMPLES):
    """The Verdict of two cells made in boots of their own ({boot: [value, ...]} each): a
    setting that cannot change inside a boot (hz=, the guest's kernel). Boot-to-boot noise
    stays in the difference, so it decides less than pairs do."""
    a = [x for v in a_by_boot.values() for x in v]
    b = [x for v in b_by_boot.values() for x in v]
    nb = min(len([v for v in a_by_boot.values() if v]), len([v for v in b_by_boot.values() if v]))
    if not a or not b:
        return Verdict(NOT_DECIDED, threshold=threshold, note="a cell not measured",
                       paired=False)
    effect = shift_estimate(a, b)
    if min(len(a), len(b)) < MIN_PAIRS:
        return Verdict(NOT_DECIDED, effect, None, threshold, nb, min(len(a), len(b)),
                       note="1 run each", paired=False)
    ci = bootstrap_ci_unpaired(a_by_boot, b_by_boot, resamples, rng_seed)
    out = Verdict(_decide(effect, ci, threshold, direction), effect, ci, threshold, nb,
                  min(len(a), len(b)), paired=False)
    if nb < MIN_BOOTS:
        out.note = f"{nb} boot{'s' if nb > 1 else ''} each; the design asks for {MIN_BOOTS}"
        out.verdict = NOT_DECIDED
    if out.verdict == NOT_DECIDED and out.note == "":
        out.more_pairs = more_needed(effect, ci, threshold, min(len(a), len(b)))
    return out


def _num(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def ci_text(v):
    return f"95 % CI [{_num(v.ci[0])}, {_num(v.ci[1])}]" if v.ci else "no interval"


def verdict_text(v, up="reproduced", down="reversed"):
    """The verdict word, with what decided it or what it lacks: `not decided (1 pair)`,
    `not decided (about 6 more pairs)`. up/down name the two decided directions for a
    comparison without a claim (`B above A`)."""
    word = {REPRODUCED: up, REVERSED: down}.get(v.verdict, v.verdict)
    if v.verdict != NOT_DECIDED:
        return word
    unit = "pairs" if v.paired else "boots"
    if v.note:
        return f"{word} ({v.note})"
    if v.more_pairs:
        return f"{word} (about {v.more_pairs} more {unit})"
    return word


def tally(verdicts):
    """{verdict: count} over the four, in their order, and the decided share."""
    counts = {k: 0 for k in (REPRODUCED, REVERSED, NO_EFFECT, NOT_DECIDED)}
    for v in verdicts:
        counts[v.verdict] += 1
    return counts
