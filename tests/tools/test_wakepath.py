"""The wake-up path: pingpong's spin floor and phase stamps, and its instruction count
under TCG held against the baseline kept in tests/wakepath/insns-baseline.txt."""
import os
import re

import pytest

from conftest import TOP, require
from idlelab.derive import records
from idlelab.host import qemu
from idlelab.wakepath import insncount

BASELINE = os.path.join(TOP, "tests", "wakepath", "insns-baseline.txt")
GROWTH_ALLOWED = 1.05


def baseline():
    with open(BASELINE, encoding="utf-8") as f:
        return {k: int(v) for k, v in re.findall(r"^(\S+)\s+(\d+)\s*$", f.read(), re.M)}


def test_haltpoll_path_does_not_grow_past_its_baseline():
    """A count, not a time: the same on every machine. Growth above 5 % fails; a deliberate
    change updates the baseline file with its reason."""
    want = baseline()["idle=haltpoll"]
    c = insncount.count("idle=haltpoll")
    assert c.round_trips == insncount.ITERS
    assert c.per_rt() <= want * GROWTH_ALLOWED, (
        f"idle=haltpoll now costs {c.per_rt():.0f} instructions per round trip, "
        f"baseline {want}: {insncount.table([('idle=haltpoll', c)])}")
    # the phases add up to (nearly) the whole path: little falls between the marks
    assert sum(c.phases.values()) >= 0.9 * c.path


def test_path_insns_for_the_cost_table(monkeypatch):
    """What a bench keeps in its cost table for the simulator: idle=halt's phases per round
    trip (the simulator reads them by these names); a count that cannot be made says why."""
    p = insncount.path_insns()
    assert p["knobs"] == insncount.PATH_KNOBS == "idle=halt" and p["round_trips"] == 200
    assert [k for k in p if k in dict((n, 0) for n, _, _ in insncount.PHASES)] == \
        ["user", "wake", "block", "enter", "run"]
    c = insncount.count("idle=halt")
    # the same kernel counted again: the window's edges move a phase by an instruction or two
    assert all(abs(p[n] - c.per_rt(n)) <= 0.02 * c.per_rt(n) + 1 and p[n] > 0
               for n, _, _ in insncount.PHASES), (p, c.phases)
    monkeypatch.setattr(insncount, "PLUGIN", "/nonexistent/libinsncount.so")
    assert "libinsncount.so is missing" in insncount.path_insns()["error"]


def test_the_count_leaves_out_waiting():
    """The floor's threads spin for their turn: that is waiting, not path."""
    c = insncount.count("pingpong.mode=spin", iters=20)   # spinning is slow to count
    assert c.waiting > 10 * c.path or c.waiting > 100_000
    assert c.phases["block"] == c.phases["enter"] == c.phases["run"] == 0


def test_analyse_on_a_made_up_log():
    ids = insncount.probe_ids()
    m = [(0, ids["WINDOW_OPEN"], 100),
         (0, ids["WAKE_BEGIN"], 110), (0, ids["WAKE_END"], 150), (0, ids["IDLE_ENTER"], 200),
         (0, ids["IDLE_WAIT"], 220), (1, ids["RUNNING"], 5000), (0, ids["NOTICE"], 9000),
         (0, ids["RUNNING"], 9100), (0, ids["WINDOW_CLOSE"], 9130)]
    c = insncount.analyse(m, ids, round_trips=1, spin=False)
    assert c.phases == {"user": 0, "wake": 40, "block": 50, "enter": 20, "run": 100}
    assert c.waiting == 9000 - 220
    assert c.path == 9130 - 100 - c.waiting


def test_a_spin_the_window_close_preempts_is_waiting():
    """Spin mode: the controller closes the window on ping's vCPU mid-spin (seen once as a
    floor of 44295 instructions per round trip instead of 125)."""
    ids = insncount.probe_ids()
    m = [(0, ids["WINDOW_OPEN"], 100), (0, ids["RUNNING"], 110),
         (0, ids["WAKE_BEGIN"], 150), (0, ids["WAKE_END"], 155),
         (0, ids["WINDOW_CLOSE"], 9_000_155)]
    c = insncount.analyse(m, ids, round_trips=1, spin=True)
    assert c.path == 10 + 40 + 5 and c.waiting == 9_000_000


def test_a_spin_the_window_open_preempts_is_waiting_and_a_late_start_is_named():
    """A slow first boot under TCG, as logged: ping handed over and spun before the window;
    the controller opened the window on its vCPU mid-spin, and pong's vCPU, idle until then,
    ran its thread for the first time inside the window. The spin after the open is waiting
    (it was counted as 2.6 M instructions of path per round trip), and the late start is
    named so that count() boots again with a longer warmup."""
    ids = insncount.probe_ids()
    m = [(1, ids["IDLE_ENTER"], 229854), (1, ids["IDLE_WAIT"], 229878),
         (0, ids["WAKE_BEGIN"], 8826172), (0, ids["WAKE_END"], 8826175),
         (0, ids["WINDOW_OPEN"], 13943269), (1, ids["NOTICE"], 229957),
         (1, ids["RUNNING"], 230066), (1, ids["WAKE_BEGIN"], 230164),
         (1, ids["WAKE_END"], 230166), (0, ids["RUNNING"], 66819695),
         (0, ids["WAKE_BEGIN"], 66819857), (0, ids["WAKE_END"], 66819860),
         (0, ids["WINDOW_CLOSE"], 66820000)]
    c = insncount.analyse(m, ids, round_trips=1, spin=True)
    assert c.waiting == 66819695 - 13943269 + 66820000 - 66819860
    assert c.path == 109 + 98 + 2 + 162 + 3 and c.started_inside == [1]
    assert insncount.analyse(m[4:], ids, round_trips=1, spin=True).started_inside == []


def test_teardown_after_the_stop_is_not_path():
    """The workload marks the close before it tells its threads to stop; a thread that sees
    the stop and goes idle before the window's edge marks the close again is teardown (a
    spin floor once counted it: block 109)."""
    ids = insncount.probe_ids()
    m = [(0, ids["WINDOW_OPEN"], 100), (1, ids["RUNNING"], 5),
         (1, ids["WAKE_BEGIN"], 10), (1, ids["WAKE_END"], 15),
         (0, ids["WINDOW_CLOSE"], 300), (1, ids["IDLE_ENTER"], 124),
         (0, ids["WINDOW_CLOSE"], 400)]
    c = insncount.analyse(m, ids, round_trips=1, spin=True)
    assert c.phases["block"] == 0 and c.path == 200 + 5 + 5


@pytest.mark.parametrize("accel", ["kvm", "tcg"])
@pytest.mark.parametrize("knobs", ["pingpong.mode=spin", "idle=poll", "idle=haltpoll",
                                   "idle=halt"])
def test_wakepath_record(accel, knobs):
    require(accel)
    res = qemu.run(qemu.Config(smp=2, accel=accel,
                               cmdline=f"workload=pingpong duration=200ms warmup=20ms {knobs}"),
                   timeout=60)
    assert res.outcome.ok, res.output[-1500:]
    w = [f for k, f in records.parse_records(res.output) if k == "wakepath"]
    assert len(w) == 1, res.output[-1500:]
    w = w[0]
    spin = "spin" in knobs
    # the phases from the waker's stamp are `na` where the boot's TSC check found no agreement
    cross = [f for k, f in records.parse_records(res.output) if k == "boot"][0]["tsc_sync"] == "1"
    assert w["mode"] == ("spin" if spin else "block")
    assert int(w["sampled"]) > 0
    if cross:
        assert 0 < int(w["total_p50_ns"]) <= int(w["total_p99_ns"])
    else:
        assert w["total_p50_ns"] == w["notice_p50_ns"] == "na"
    if spin:
        assert w["notice_p50_ns"] == ("0" if cross else "na") and w["run_p50_ns"] == "0"
    else:
        assert w["idle"] == knobs.split("=")[1]
        assert int(w["run_p50_ns"]) > 0 and (not cross or int(w["notice_p50_ns"]) > 0)
