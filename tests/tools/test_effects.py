"""The seed verdicts (derive/effects.py): reproduced, reversed or not reproduced from the
repeats of two cells, not judged without them, and the line a table shows."""
from idlelab.derive import effects
from idlelab.derive.runrow import RunRow


def row(median, lo=None, hi=None, repeat=3, status="ok", name="r", reason=None):
    lo = median if lo is None else lo
    hi = median if hi is None else hi
    return RunRow(name=name, status=status, reason=reason, repeat=repeat,
                  host_cpu_pct=median if status == "ok" else None,
                  spread={"host_cpu_pct": (lo, hi)} if status == "ok" else {})


def effect(a, b, direction=effects.UP):
    return effects.Effect("B against A: host CPU", "1 % -> 10 %", a, b, "host_cpu_pct",
                          direction, " %", "because")


def test_apart_in_the_seeds_direction_is_reproduced():
    v = effects.judge(effect(row(10, 9, 11), row(50, 45, 55)))
    assert (v.verdict, v.a, v.b, v.change, v.rel) == (effects.REPRODUCED, 10, 50, 40, 4.0)
    assert v.note == ""


def test_apart_the_other_way_is_reversed():
    v = effects.judge(effect(row(10, 9, 11), row(5, 4, 6)))
    assert v.verdict == effects.REVERSED
    v = effects.judge(effect(row(10, 9, 11), row(5, 4, 6), direction=effects.DOWN))
    assert v.verdict == effects.REPRODUCED


def test_overlapping_repeats_are_not_reproduced_however_far_the_medians():
    v = effects.judge(effect(row(10, 5, 30), row(20, 12, 40)))
    assert v.verdict == effects.NOT_REPRODUCED
    assert "within the spread of the repeats (A 5..30, B 12..40)" in v.note


def test_a_difference_below_the_floor_is_not_an_effect():
    v = effects.judge(effect(row(100, 100, 100), row(103, 103, 103)))
    assert v.verdict == effects.NOT_REPRODUCED and "less than 5%" in v.note
    v = effects.judge(effect(row(0), row(0)))           # nothing on either side
    assert v.verdict == effects.NOT_REPRODUCED


def test_one_run_each_says_it_has_no_spread():
    v = effects.judge(effect(row(10, repeat=1), row(50, repeat=1)))
    assert v.verdict == effects.REPRODUCED and "one run each" in v.note


def test_missing_failed_or_not_run_cells_are_not_judged():
    assert effects.judge(effect(None, row(5))).verdict == effects.NOT_JUDGED
    v = effects.judge(effect(row(5), row(0, status="not run", name="b", reason="read-only")))
    assert v.verdict == effects.NOT_JUDGED and v.note == "b not run: read-only"
    v = effects.judge(effect(row(0, status="failed", name="a"), row(5)))
    assert v.verdict == effects.NOT_JUDGED and v.note == "a failed"
    v = effects.judge(effects.Effect("x", "y", row(1), row(2), "rtt_p50_us", effects.UP))
    assert v.verdict == effects.NOT_JUDGED and "not measured" in v.note


def test_the_line_and_the_section_say_the_figures_the_seed_and_why():
    e = effect(row(10, 9, 11), row(50, 45, 55))
    text = effects.line(e)
    assert text.startswith("- **reproduced**: B against A: host CPU: 10 % → 50 % (+40 %, +400%)")
    assert text.endswith("Seed: 1 % -> 10 %. Why: because")
    lines = effects.section([e, effect(row(10, 9, 11), row(5, 4, 6))])
    assert lines[0].startswith("## Verdicts") and lines[2] == \
        "2 effects: 1 reproduced, 1 reversed."
    assert effects.section([]) == []
