"""tools/plantedcheck (bench/plantedcheck.py): an effect planted with a known sign passes only
when the verdict rule decides it with that sign; a bad call or folder is one line and exit 2."""
import json
import random

import pytest

from idlelab.bench import ab, plantedcheck
from idlelab.derive import pairs


def _rows(effect_of):
    """ab.compare's rows, in ab.FIGURES order: each figure's verdict on 3 boots x 4 pairs of
    differences around effect_of(label) (None: not measured)."""
    rng = random.Random(3)
    out = []
    for label, unit, whose, _ in ab.FIGURES:
        effect = effect_of(label)
        if effect is None:
            out.append((label, unit, whose, None, None, None))
            continue
        diffs = {b: [effect + rng.gauss(0, 0.5) for _ in range(4)] for b in range(3)}
        v = pairs.verdict(diffs, pairs.threshold_of(0.05, 50.0), pairs.UP, resamples=300)
        out.append((label, unit, whose, 50.0, 50.0 + effect, v))
    return out


def test_a_planted_rise_passes_as_above_and_fails_as_below():
    rows = _rows(lambda label: 20.0 if label == "host CPU" else 0.0)
    lines, ok = plantedcheck.judge(rows, [("host CPU", "above")])
    assert ok and "B above A" in lines[0] and "as planted" in lines[0] and "95 % CI [" in lines[0]
    lines, ok = plantedcheck.judge(rows, [("host CPU", "below")])
    assert not ok and "NOT AS PLANTED (B below A)" in lines[0]


def test_no_effect_or_a_figure_not_measured_is_not_as_planted():
    rows = _rows(lambda label: None if label == "polls caught" else 0.0)
    lines, ok = plantedcheck.judge(rows, [("host CPU", "above"), ("polls caught", "below")])
    assert not ok
    assert lines[0].startswith("host CPU (host): no effect") and "NOT AS PLANTED" in lines[0]
    assert lines[1].startswith("polls caught (KVM): not measured")


def test_every_expectation_must_hold():
    rows = _rows(lambda label: {"polls caught": -10.0, "host polling": 5.0}.get(label, 0.0))
    _, ok = plantedcheck.judge(rows, [("polls caught", "below")])
    assert ok
    _, ok = plantedcheck.judge(rows, [("polls caught", "below"), ("host polling", "below")])
    assert not ok


@pytest.mark.parametrize("args", [["host CPU"], ["host CPU=up"], ["cpu=above"], []])
def test_a_bad_expectation_is_refused_in_one_line(args):
    with pytest.raises(plantedcheck.CallError) as e:
        plantedcheck.parse_expectations(args)
    assert "\n" not in str(e.value)


def test_the_latency_figure_keeps_its_name_whatever_the_workload_measures():
    assert plantedcheck.parse_expectations(["latency=above", "host CPU=below"]) == \
        [("latency", "above"), ("host CPU", "below")]


def _folder(tmp_path, arms):
    raw = tmp_path / "raw"
    raw.mkdir()
    rec = {"matrix": ab.MATRIX_ID, "name": "ab", "status": "failed", "plan": {"arms": arms},
           "halt_poll": {"scope": None, "ns": None}}
    (raw / "0001.json").write_text(json.dumps(rec))
    return str(tmp_path)


def test_a_folder_that_is_not_one_comparison_of_two_arms_is_exit_2(tmp_path, capsys):
    assert plantedcheck.main([str(tmp_path / "none"), "host CPU=above"]) == 2
    assert plantedcheck.main([str(tmp_path), "host CPU=above"]) == 2          # no raw/
    assert "not a results folder" in capsys.readouterr().err
    folder = _folder(tmp_path, {"A": "idle=halt", "B": "idle=halt"})
    assert plantedcheck.main([folder, "host CPU=above"]) == 2
    err = capsys.readouterr().err
    assert "not one tools/bench --ab comparison of two different arms" in err
    assert err.count("\n") == 1
