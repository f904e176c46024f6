"""The seed verdicts (derive/effects.py): reproduced, reversed, no effect or not decided from
the windows of two cells (paired by boot and round when they shared boots, by boots apart
when not), not judged without them, and the line a table shows."""
from idlelab.derive import effects
from idlelab.derive.runrow import RunRow, aggregate


def windows(name, values, paired=True, boot_run="boot"):
    """A cell's aggregated row from {boot: [value per round]}."""
    rows = [RunRow(name=name, matrix="m", status="ok", repeat=boot, boot_run=boot_run,
                   window_round=(r + 1) if paired else None, host_cpu_pct=v)
            for boot, vs in values.items() for r, v in enumerate(vs)]
    return aggregate(rows)[0]


def effect(a, b, direction=effects.UP, threshold=None):
    return effects.Effect("B against A: host CPU", "1 % -> 10 %", a, b, "host_cpu_pct",
                          direction, " %", "because", threshold)


BOOTS = (1, 2, 3)


def test_paired_windows_in_the_seeds_direction_are_reproduced():
    # boot offsets of +-30 % cancel in the pairs: B is A + 40 in every round
    a = windows("a", {b: [10 * b, 10 * b + 1, 10 * b - 1] for b in BOOTS})
    b = windows("b", {b: [10 * b + 40, 10 * b + 41, 10 * b + 39] for b in BOOTS})
    v = effects.judge(effect(a, b))
    assert v.verdict == effects.REPRODUCED
    assert v.change == 40 and v.stats.ci == (40, 40) and v.stats.n_pairs == 9
    assert effects.judge(effect(a, b, effects.DOWN)).verdict == effects.REVERSED


def test_the_same_values_unpaired_are_not_decided_by_the_boots_own_noise():
    """What the pairs buy: across boots apart, the boot offsets stay in the difference."""
    a = windows("a", {b: [10 * b, 12 * b] for b in BOOTS}, paired=False)
    b = windows("b", {b: [10 * b + 3, 12 * b + 3] for b in BOOTS}, paired=False)
    v = effects.judge(effect(a, b))
    assert v.verdict == effects.NOT_DECIDED and not v.stats.paired
    ap = windows("a", {b: [10 * b, 12 * b] for b in BOOTS})
    bp = windows("b", {b: [10 * b + 3, 12 * b + 3] for b in BOOTS})
    assert effects.judge(effect(ap, bp)).verdict == effects.REPRODUCED


def test_windows_of_two_boots_apart_are_not_paired_by_their_repeat_numbers():
    """Cells of two within=/boot= rows ran in different boots that share repeat numbers
    (boot 1 of each): pairing their rounds would pair windows of unrelated boots."""
    a = windows("a", {b: [10 * b, 12 * b] for b in BOOTS}, boot_run="rr")
    b = windows("b", {b: [10 * b + 3, 12 * b + 3] for b in BOOTS}, boot_run="idle")
    v = effects.judge(effect(a, b))
    assert not v.stats.paired and v.verdict == effects.NOT_DECIDED


def test_an_interval_inside_the_threshold_is_no_effect():
    a = windows("a", {b: [100, 101, 99, 100] for b in BOOTS})
    b = windows("b", {b: [101, 100, 100, 101] for b in BOOTS})
    v = effects.judge(effect(a, b))
    assert v.verdict == effects.NO_EFFECT and v.stats.threshold == 5.0
    v = effects.judge(effect(a, b, threshold=0.2))     # a claim's own, tighter threshold
    assert v.verdict != effects.NO_EFFECT


def test_one_boot_decides_nothing_and_says_why():
    a = windows("a", {1: [10, 11, 9]})
    b = windows("b", {1: [50, 51, 49]})
    v = effects.judge(effect(a, b))
    assert v.verdict == effects.NOT_DECIDED and "1 boot" in v.stats.note
    one_a, one_b = windows("a", {1: [10]}), windows("b", {1: [50]})
    v = effects.judge(effect(one_a, one_b))
    assert v.verdict == effects.NOT_DECIDED
    assert effects.line(effect(one_a, one_b)).startswith("- **not decided**:")
    assert "1 boot x 1 pair;" in effects.line(effect(one_a, one_b))


def test_missing_failed_or_not_run_cells_are_not_judged():
    ok = windows("a", {1: [5]})
    assert effects.judge(effect(None, ok)).verdict == effects.NOT_JUDGED
    v = effects.judge(effect(ok, RunRow(name="b", status="not run", reason="read-only")))
    assert v.verdict == effects.NOT_JUDGED and v.note == "b not run: read-only"
    v = effects.judge(effect(RunRow(name="a", status="failed"), ok))
    assert v.verdict == effects.NOT_JUDGED and v.note == "a failed"
    v = effects.judge(effects.Effect("x", "y", ok, ok, "rtt_p50_us", effects.UP))
    assert v.verdict == effects.NOT_JUDGED and "not measured" in v.note


def test_the_line_and_the_section_say_the_figures_the_interval_and_why():
    a = windows("a", {b: [10, 11, 9] for b in BOOTS})
    b = windows("b", {b: [50, 51, 49] for b in BOOTS})
    text = effects.line(effect(a, b))
    assert text.startswith("- **reproduced**: B against A: host CPU: 10 % → 50 % (+40 %, +400%;"
                           " 95 % CI [40, 40]; 3 boots x 9 pairs; threshold 0.5 %)")
    assert text.endswith("Seed: 1 % -> 10 %. Why: because")
    lines = effects.section([effect(a, b), effect(b, a)])
    assert lines[0].startswith("## Verdicts") and lines[2] == \
        "2 effects: 1 reproduced, 1 reversed; 2 decided."
    assert effects.section([]) == []


def test_a_deterministic_prediction_is_judged_by_its_difference():
    """The simulator's hardware rows, one run each: the same configuration always predicts
    the same, so the difference against the threshold decides, with no interval (it was
    "not decided (1 pair)")."""
    a, b = windows("a", {1: [10]}, paired=False), windows("b", {1: [50]}, paired=False)
    v = effects.judge(effect(a, b), deterministic=True)
    assert v.verdict == effects.REPRODUCED and v.change == 40
    assert effects.judge(effect(a, b, effects.DOWN), deterministic=True).verdict == \
        effects.REVERSED
    near = windows("b", {1: [10.2]}, paired=False)
    assert effects.judge(effect(a, near), deterministic=True).verdict == effects.NO_EFFECT
    text = effects.line(effect(a, b), effects.judge(effect(a, b), deterministic=True))
    assert "predicted, deterministic: no interval" in text and "CI" not in text
    lines = effects.section([effect(a, b)], deterministic=True)
    assert "1 effects: 1 reproduced; 1 decided." in lines
