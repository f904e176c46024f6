"""The estimates behind a verdict and their intervals: the median, the Hodges-Lehmann
estimates (one sample, and the shift between two), and intervals from a hierarchical
bootstrap that resamples boots, then the values inside each chosen boot (Kalibera and Jones,
"Rigorous benchmarking in reasonable time", ISMM 2013), widened for few boots (interval()). Pure and
deterministic for a seed (random.Random). docs/verdicts.md says why each choice.

Cost: one resample draws n values and recomputes the estimate; the Hodges-Lehmann one
sorts n(n+1)/2 Walsh sums, so it is O(n^2 log n) per resample: about 4 us at 15 pooled
pairs, 40 us at 50, 2 ms at 200 on this host's CPython. The Walsh sums are made by
itertools in C (a Python double loop is 1.5 to 4 times slower); the median is cheap at any n."""
import math
import random
import statistics
from statistics import NormalDist
from itertools import combinations_with_replacement, starmap
from operator import add

RESAMPLES = 2000
LEVEL = 0.95
# Student's t, 0.975 quantile, by degrees of freedom: the expansion below at LEVEL 0.95
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        raise ValueError("median of nothing")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def hodges_lehmann(xs):
    """The one-sample Hodges-Lehmann estimate: the median of the Walsh averages
    (x_i + x_j) / 2 over i <= j (each value with itself included)."""
    if not xs:
        raise ValueError("Hodges-Lehmann estimate of nothing")
    # the median of the sums, halved once: the same figure, one division instead of n^2
    return median(list(starmap(add, combinations_with_replacement(xs, 2)))) / 2


def shift_estimate(a, b):
    """The two-sample Hodges-Lehmann shift: the median of every b_j - a_i."""
    if not a or not b:
        raise ValueError("shift estimate of an empty cell")
    return median([y - x for x in a for y in b])


ESTIMATORS = {"hodges-lehmann": hodges_lehmann, "median": median}
# Hodges-Lehmann: robust like the median (up to 29 % of wild windows cannot carry it
# away), yet nearly as precise as the mean on well-behaved noise, where the median needs
# about 1.5 times the pairs for the same interval: pairs are what a boot is short of.
DEFAULT_ESTIMATOR = "hodges-lehmann"


def estimator_of(name):
    if name not in ESTIMATORS:
        raise ValueError(f"estimator {name!r}: one of {', '.join(ESTIMATORS)}")
    return ESTIMATORS[name]


def percentile_interval(stats, level=LEVEL):
    """(lo, hi): the (1 - level) / 2 and (1 + level) / 2 quantiles of the resampled
    estimates, the outer of the two order statistics at each end (never narrower)."""
    s = sorted(stats)
    tail = (1 - level) / 2
    last = len(s) - 1
    return s[math.floor(tail * last)], s[math.ceil((1 - tail) * last)]


def effective_n(groups):
    """How many independent values the groups are worth: N / (1 + (m - 1) ICC), m the mean
    group size and ICC the share of the variance between groups (one-way ANOVA's
    estimate; Kish's design effect), between the number of groups (values of a boot
    that vary together) and N (boots that do not differ)."""
    k, sizes = len(groups), [len(g) for g in groups]
    n = sum(sizes)
    if k < 2 or n <= k:
        return float(k if k >= 2 else n)
    mean = sum(map(sum, groups)) / n
    means = [sum(g) / len(g) for g in groups]
    msb = sum(len(g) * (m - mean) ** 2 for g, m in zip(groups, means)) / (k - 1)
    msw = sum((x - m) ** 2 for g, m in zip(groups, means) for x in g) / (n - k)
    m0 = (n - sum(x * x for x in sizes) / n) / (k - 1)
    between = max(0.0, (msb - msw) / m0)
    if between + msw == 0:
        return float(n)
    icc = between / (between + msw)
    return min(float(n), max(float(k), n / (1 + (n / k - 1) * icc)))


def expanded_level(n_eff, level=LEVEL):
    """The level of the percentile interval that covers `level` from n_eff independent
    values: Hesterberg's expanded percentile interval ("What teachers should know about the
    bootstrap", 2015), its tails cut where a normal's would be at sqrt(n / (n - 1)) *
    t(n - 1) in place of z (degrees of freedom rounded down). A plain percentile interval
    over few boots is too narrow: the bootstrap's spread is the boots' times
    sqrt((n - 1) / n), and a normal's tails stand in for a t's (docs/verdicts.md, "Few
    boots": an A/A check claimed an effect in 10 % of its comparisons at the plain 95 %)."""
    df = math.floor(n_eff) - 1
    if df < 1 or level != LEVEL:
        return level
    return 1 - 2 * (1 - NormalDist().cdf(math.sqrt((df + 1) / df) * t_quantile(df)))


def two_level_resample(groups, rng):
    """One hierarchical resample, pooled: len(groups) groups drawn with replacement, and
    inside each drawn group as many values as it has, drawn with replacement."""
    out = []
    choices = rng.choices
    for g in choices(groups, k=len(groups)):
        out += choices(g, k=len(g))
    return out


def _groups(by_boot):
    groups = [list(v) for v in by_boot.values() if v]
    if not groups:
        raise ValueError("no boot has a value")
    return groups


def t_quantile(df):
    """Student's t at 0.975 for df degrees of freedom (df >= 1)."""
    z975 = NormalDist().inv_cdf(0.975)
    return T975[df - 1] if df <= len(T975) else z975 + (z975 ** 3 + z975) / (4 * df)


def interval(stats, centre, n_eff, level=LEVEL):
    """(lo, hi) from the resampled estimates: the wider, at each end, of the expanded
    percentile interval and the bootstrap-t one, centre +- t(df) sqrt(n / (n - 1)) times
    their standard deviation. Either alone is too narrow somewhere: the percentiles of a
    few boots' resamples are coarse at the expanded level, and the t interval ignores a
    skew. An A/A check of 12 boots (docs/verdicts.md, "Few boots") claimed effects in 3 of
    40 comparisons with the first alone, 2 with the second, 1 with both."""
    lo, hi = percentile_interval(stats, expanded_level(n_eff, level))
    df = math.floor(n_eff) - 1
    if df < 1 or level != LEVEL or len(stats) < 2:
        return lo, hi
    half = t_quantile(df) * math.sqrt((df + 1) / df) * statistics.pstdev(stats)
    return min(lo, centre - half), max(hi, centre + half)


def bootstrap_ci(diffs_by_boot, estimator=DEFAULT_ESTIMATOR, resamples=RESAMPLES, seed=1,
                 level=LEVEL):
    """(lo, hi): the interval (interval()) of the estimate of the pooled paired differences
    over `resamples` hierarchical resamples of {boot: [difference, ...]}."""
    est = estimator_of(estimator) if isinstance(estimator, str) else estimator
    groups = _groups(diffs_by_boot)
    rng = random.Random(seed)
    stats = [est(two_level_resample(groups, rng)) for _ in range(resamples)]
    return interval(stats, est([x for g in groups for x in g]), effective_n(groups), level)


def bootstrap_ci_unpaired(a_by_boot, b_by_boot, resamples=RESAMPLES, seed=1, level=LEVEL):
    """(lo, hi) of the shift estimate B - A of two cells measured in boots of their own:
    each cell resampled apart, its boots and then its values."""
    a, b = _groups(a_by_boot), _groups(b_by_boot)
    rng = random.Random(seed)
    stats = [shift_estimate(two_level_resample(a, rng), two_level_resample(b, rng))
             for _ in range(resamples)]
    return interval(stats, shift_estimate([x for g in a for x in g], [x for g in b for x in g]),
                    min(effective_n(a), effective_n(b)), level)
