"""`tools/bench --ab "A" "B"` (bench/ab.py): what it refuses before anything boots, the plan
it makes, and one comparison made end to end (under TCG: the guest's side, the KVM columns
said not measured, and no verdict from one pair)."""
import os
import subprocess

import pytest

from conftest import TOP
from idlelab.bench import ab, windowplan


@pytest.mark.parametrize("a, b, what", [
    ("idle=halt", "smp=4", "smp= cannot change between the windows of one boot"),
    ("idle=halt", "hz=100", "hz cannot change while the guest runs"),
    ("halt_poll_ns=200us", "idle=halt", "cannot be taken back inside a boot"),
    ("idle=halt", "idle=sometimes", "idle"),
])
def test_what_cannot_be_compared_inside_a_boot_is_refused_in_one_line(a, b, what):
    with pytest.raises(windowplan.PlanError) as e:
        ab.build(a, b)
    assert what in str(e.value) and "\n" not in str(e.value)


def test_the_plan_states_every_setting_in_every_window():
    (_, _, [run]), = ab.build("idle=halt", "idle=haltpoll haltpoll.guest_halt_poll_ns=400us",
                              base="workload=periodic period=300us duration=200ms",
                              boots=3, npairs=2)
    assert run.repeat == 3 and run.guest["period"] == "300us"
    plan = run.windows.for_boot(1)
    assert [a.label for a in plan.arms] == ["A", "B", "B", "A"]
    assert [a.label for a in run.windows.for_boot(2).arms] == ["B", "A", "A", "B"]
    # A returns the tunable B changed to the kernel's default
    assert plan.guest_line(1) == "haltpoll.guest_halt_poll_ns=200us idle=halt"
    assert plan.guest_line(2) == "haltpoll.guest_halt_poll_ns=400us idle=haltpoll"


def test_a_comparison_end_to_end_under_tcg(tmp_path):
    res = subprocess.run(
        ["/usr/bin/python3", os.path.join(TOP, "tools", "bench"), "--accel", "tcg",
         "--no-cost-table", "--ab", "idle=halt", "idle=poll", "--ab-base",
         "workload=periodic period=1ms duration=100ms warmup=20ms window_gap=10ms",
         "--boots", "1", "--pairs", "1", "--results-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    md = (tmp_path / "latest" / "ab.md").read_text()
    assert "1 boots, 2 windows (2 ok)" in md
    hlt = next(ln for ln in md.splitlines() if ln.startswith("| HLT |"))
    assert "not decided (1 pair)" in hlt
    assert "| halt_exits | KVM | - | - | - | - | not measured |" in md
    with open(tmp_path / "latest" / "runs.csv") as f:
        assert sum(1 for ln in f if ",ab.A," in ln or ",ab.B," in ln) == 2
