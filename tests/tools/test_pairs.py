"""The statistics behind every verdict (derive/pairs.py): the windows' order, the pairs, the
Hodges-Lehmann effect, the hierarchical bootstrap interval, and the four verdicts; checked on
synthetic experiments that look like the nested host's boots (a boot offset of ~10 % that
the pairs cancel, window noise, an effect that itself varies from boot to boot)."""
import random

import pytest

from idlelab.derive import bootstrap, pairs


def test_abba_is_balanced_and_alternates_across_boots():
    one, seed = pairs.schedule(4, ("A", "B"), "abba", boot=1)
    two, _ = pairs.schedule(4, ("A", "B"), "abba", boot=2)
    assert seed is None
    assert "".join(one) == "ABBAABBA" and "".join(two) == "BAABBAAB"
    three, _ = pairs.schedule(2, ("x", "y", "z"), "abba", boot=2)
    assert three == ["z", "y", "x", "x", "y", "z"]
    for r in range(4):              # every round runs every arm once
        assert sorted(one[2 * r:2 * r + 2]) == ["A", "B"]


def test_a_random_order_is_recorded_and_repeatable():
    a, seed = pairs.schedule(20, ("A", "B"), "random")
    b, again = pairs.schedule(20, ("A", "B"), "random", seed)
    assert a == b and again == seed
    assert a.count("A") == a.count("B") == 20
    with pytest.raises(ValueError):
        pairs.schedule(2, ("A", "A"))
    with pytest.raises(ValueError):
        pairs.schedule(2, ("A", "B"), "latin")


def test_pairs_are_formed_within_a_round_and_a_missing_window_drops_its_pair():
    ws = [dict(boot=1, round=1, arm="A", value=10), dict(boot=1, round=1, arm="B", value=13),
          dict(boot=1, round=2, arm="B", value=20), dict(boot=1, round=2, arm="A", value=None),
          dict(boot=2, round=1, arm="A", value=5), dict(boot=2, round=1, arm="B", value=4)]
    assert pairs.pairs_from_windows(ws) == {1: [3], 2: [-1]}


def test_hodges_lehmann_on_hand_checked_samples():
    # Walsh averages of 1, 2, 9: 1, 1.5, 5, 2, 5.5, 9 -> median (2 + 5) / 2
    assert pairs.hodges_lehmann([1, 2, 9]) == 3.5
    assert pairs.hodges_lehmann([4]) == 4
    # one wild window moves it little: (2.5 + 3) / 2 of the ten Walsh averages
    assert pairs.hodges_lehmann([1, 2, 3, 1000]) == 2.75
    assert pairs.shift_estimate([1, 2], [3, 5]) == 2.5


def test_the_bootstrap_is_deterministic_for_a_seed_and_covers_the_estimate():
    d = {1: [1.0, 2.0, 3.0], 2: [2.0, 4.0], 3: [0.5, 3.5, 2.5]}
    assert pairs.bootstrap_ci(d, seed=7) == pairs.bootstrap_ci(d, seed=7)
    lo, hi = pairs.bootstrap_ci(d, seed=7)
    assert lo <= pairs.hodges_lehmann([x for v in d.values() for x in v]) <= hi


def experiment(rng, effect=0.0, boots=3, rounds=4, boot_sd=0.10, window_sd=0.03,
               effect_sd=0.0, base=100.0):
    """{boot: [B - A]}: each boot scales both arms by its own offset (the pairs cancel it),
    each window has its own noise, and the effect may differ from boot to boot."""
    out = {}
    for b in range(boots):
        scale = 1 + rng.gauss(0, boot_sd)
        eff = effect + rng.gauss(0, effect_sd)
        out[b] = [base * scale * (1 + eff + rng.gauss(0, window_sd))
                  - base * scale * (1 + rng.gauss(0, window_sd)) for _ in range(rounds)]
    return out


def test_a_over_a_rarely_claims_an_effect():
    """The false-positive check: both arms the same, 40 comparisons, at least 95 % end no
    effect or not decided. (The effect varies by boot too: the interval must see it.)"""
    rng = random.Random(2026)
    verdicts = [pairs.verdict(experiment(rng, effect_sd=0.01), 5.0, rng_seed=i, resamples=500)
                for i in range(40)]
    false = sum(v.verdict in (pairs.REPRODUCED, pairs.REVERSED) for v in verdicts)
    assert false <= 2, [v.verdict for v in verdicts]
    assert any(v.verdict == pairs.NO_EFFECT for v in verdicts)     # it can also say so


def test_a_planted_effect_is_decided_with_its_sign():
    rng = random.Random(4)
    for sign, want in ((1, pairs.REPRODUCED), (-1, pairs.REVERSED)):
        v = pairs.verdict(experiment(rng, effect=0.3 * sign), 5.0, pairs.UP, resamples=500)
        assert v.verdict == want and (v.effect > 0) == (sign > 0)
        assert v.ci[0] <= v.effect <= v.ci[1]


def test_unpaired_boots_cannot_see_what_the_pairs_see():
    """The same windows judged as boots apart carry the boots' own 10 % in the difference: an
    effect of 8 % that the pairs decide stays undecided unpaired. The check would fail if the
    unpaired rule ignored the boot offsets."""
    rng = random.Random(11)
    a, b, diffs = {}, {}, {}
    for boot in range(3):
        scale = 1 + rng.gauss(0, 0.12)
        a[boot] = [100 * scale * (1 + rng.gauss(0, 0.01)) for _ in range(4)]
        b[boot] = [x * 1.08 for x in a[boot]]
        diffs[boot] = [y - x for x, y in zip(a[boot], b[boot])]
    assert pairs.verdict(diffs, 5.0, resamples=500).verdict == pairs.REPRODUCED
    assert pairs.verdict_unpaired(a, b, 5.0, resamples=500).verdict == pairs.NOT_DECIDED


def test_the_four_verdicts_and_what_a_small_sample_lacks():
    three = {1: [10, 11, 9], 2: [10, 10, 11], 3: [9, 10, 10]}
    assert pairs.verdict(three, 1.0).verdict == pairs.REPRODUCED
    assert pairs.verdict(three, 1.0, pairs.DOWN).verdict == pairs.REVERSED
    assert pairs.verdict({1: [0.1, -0.1], 2: [0, 0.05], 3: [0.02, -0.03]}, 1.0).verdict == \
        pairs.NO_EFFECT
    big_above_threshold_but_wide = {1: [10, -8], 2: [12, -9], 3: [11, 9]}
    v = pairs.verdict(big_above_threshold_but_wide, 1.0)
    assert v.verdict == pairs.NOT_DECIDED and v.more_pairs >= 1
    assert "about" in pairs.verdict_text(v) and "more pairs" in pairs.verdict_text(v)
    one = pairs.verdict({1: [40]}, 1.0)
    assert one.verdict == pairs.NOT_DECIDED and pairs.verdict_text(one) == \
        "not decided (1 pair)"
    # a figure that is 0 in every window of both arms (IPIs of a periodic workload): A's
    # median 0 makes the threshold 0, and the interval [0, 0] is no effect; any other
    # interval at that threshold is not
    still = pairs.verdict({1: [0, 0], 2: [0, 0], 3: [0, 0]}, 0.0)
    assert still.verdict == pairs.NO_EFFECT and still.ci == (0, 0)
    assert pairs.verdict({1: [0, 0], 2: [0, 1], 3: [0, 0]}, 0.0).verdict == pairs.NOT_DECIDED
    two_boots = pairs.verdict({1: [10, 11], 2: [10, 12]}, 1.0)
    assert two_boots.verdict == pairs.NOT_DECIDED and "the design asks for 3" in two_boots.note


def test_more_pairs_needed_shrinks_as_the_interval_does():
    wide = pairs.more_needed(2.0, (-3.0, 7.0), 1.0, 10)
    narrow = pairs.more_needed(2.0, (0.5, 3.5), 1.0, 10)
    assert wide > narrow >= 1
    assert pairs.more_needed(0.0, (0.0, 0.0), 1.0, 10) is None


def test_more_pairs_count_the_boots_when_the_boots_differ():
    # 3 boots x 6 pairs worth ~3 values (the boots differ) need more pairs than 18 independent
    # ones would to narrow the same interval: they come as boots, and t(df) falls with them
    independent = pairs.more_needed(10.0, (-0.3, 20.9), 1.0, 18)
    clustered = pairs.more_needed(10.0, (-0.3, 20.9), 1.0, 18, n_eff=3.2, n_boots=3)
    assert clustered > independent >= 1
    assert clustered == 6      # one more boot of 6 pairs takes t(2) to t(3)
    same = {1: [9.0, 11.0, 10.5], 2: [8.0, 12.0, 9.5], 3: [10.0, 9.0, 11.5]}
    spread = {1: [1.0, 1.5, 0.5], 2: [19.0, 20.5, 19.5], 3: [10.0, 9.5, 10.5]}
    assert bootstrap.effective_n(list(same.values())) == 9.0
    assert bootstrap.effective_n(list(spread.values())) == pytest.approx(3.0, abs=0.01)


def test_a_threshold_is_absolute_or_a_share_of_a():
    assert pairs.threshold_of(0.05, 200) == 10
    assert pairs.threshold_of(0.05, -200) == 10
    assert pairs.threshold_of(0.05, 200, absolute=-3) == 3


def test_ci_text_is_the_issues_form():
    v = pairs.verdict({1: [1, 2], 2: [2, 3], 3: [1, 3]}, 0.5)
    assert pairs.ci_text(v).startswith("95 % CI [") and pairs.ci_text(v).endswith("]")


def test_few_boots_widen_the_interval_as_a_t_does():
    """Hesterberg's expansion by the boots' worth: identical boots count as one value each,
    boots that do not differ as all their values; three boots that differ widen the
    interval to nearly all of the resamples."""
    same_boots = [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    apart = [[1.0, 1.0, 1.0], [5.0, 5.0, 5.0], [9.0, 9.0, 9.0]]
    assert bootstrap.effective_n(same_boots) == 9
    assert bootstrap.effective_n(apart) == 3
    assert bootstrap.expanded_level(3) > 0.9999
    assert 0.95 < bootstrap.expanded_level(40) < 0.96
    assert bootstrap.expanded_level(1000) == pytest.approx(0.95, abs=0.001)
    rng = random.Random(5)
    diffs = {b: [off + rng.gauss(0, 0.5) for _ in range(6)]
             for b, off in enumerate((4.0, 9.0, -1.0))}
    lo, hi = bootstrap.bootstrap_ci(diffs, resamples=500)
    plain = bootstrap.percentile_interval(
        [bootstrap.hodges_lehmann(bootstrap.two_level_resample(list(diffs.values()), r))
         for r in [random.Random(1)] for _ in range(500)])
    assert lo < plain[0] and hi > plain[1]
