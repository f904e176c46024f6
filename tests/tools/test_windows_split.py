"""A boot of several windows becomes one record per window (derive/windows.py), and the plan
of a boot's windows (bench/windowplan.py) states every setting in every window."""
import pytest

from idlelab.bench import windowplan, workplan
from idlelab.derive import windows

SERIAL = """idlelab: booted
@idlelab boot cpus=1 tsc_hz=1000000000
@idlelab config idle=auto
@idlelab idle policy=haltpoll governor=haltpoll
@idlelab window state=set what=periodic t_ns=1 sync=1 window=1
@idlelab settings window=1 idle=halt
@idlelab idle policy=halt governor=haltpoll
@idlelab window state=open what=periodic t_ns=2 sync=1 window=1
@idlelab window state=close what=periodic t_ns=3 sync=1 window=1
@idlelab cpu id=0 hlt=10
@idlelab result workload=periodic ok=1 window_ns=1
@idlelab settings window=2 idle=haltpoll
@idlelab idle policy=haltpoll governor=haltpoll
@idlelab window state=open what=periodic t_ns=4 sync=1 window=2
@idlelab window state=close what=periodic t_ns=5 sync=1 window=2
@idlelab cpu id=0 hlt=2
@idlelab result workload=periodic ok=1 window_ns=1
@idlelab exit code=0x10 name=SUCCESS cpu=0
"""


def test_each_window_gets_its_own_stretch_and_idle_record():
    pre, by_window, tail = windows.stretches(SERIAL)
    assert [ln.split()[1] for ln in pre if ln.startswith("@")] == ["boot", "config", "idle"]
    assert sorted(by_window) == [1, 2]
    assert "hlt=10" in "\n".join(by_window[1]) and "hlt=2" not in "\n".join(by_window[1])
    assert tail == ["@idlelab exit code=0x10 name=SUCCESS cpu=0"]
    two = windows.window_serial(pre, by_window[2], tail)
    idle = [ln for ln in two.splitlines() if ln.startswith("@idlelab idle")]
    assert idle == ["@idlelab idle policy=haltpoll governor=haltpoll"]
    one = windows.window_serial(pre, by_window[1], tail)
    assert [ln for ln in one.splitlines() if ln.startswith("@idlelab idle")] == [
        "@idlelab idle policy=halt governor=haltpoll"]
    assert "state=set" not in one


def _rec(status="ok", hosts=({"delta": {}}, {"delta": {}})):
    return {"name": "ab", "repeat": 2, "status": status, "reason": None, "serial": SERIAL,
            "halt_poll": {"scope": "vm", "ns": 200000}, "host_params": {},
            "guest_knobs": {"duration": "1s"},
            "windows": [{"window": k, "arm": arm, "guest": f"idle={idle}", "host_params": {},
                         "vm_halt_poll_ns": None, "host": host, "load": {}}
                        for k, arm, idle, host in ((1, "A", "halt", hosts[0]),
                                                   (2, "B", "haltpoll", hosts[1]))]}


def test_split_names_each_window_by_its_arm_and_keeps_the_boot():
    a, b = windows.split(_rec())
    assert (a["name"], b["name"]) == ("ab.A", "ab.B")
    assert a["boot_window"] == {"boot": 2, "run": "ab", "window": 1, "arm": "A", "windows": 2,
                                "guest": "idle=halt", "host_params": {},
                                "vm_halt_poll_ns": None, "round": None}
    assert a["guest_knobs"] == {"duration": "1s", "idle": "halt"}
    assert "windows" not in a


def test_a_window_the_host_missed_fails_alone():
    a, b = windows.split(_rec(hosts=({"delta": {}}, {})))
    assert a["status"] == "ok"
    assert b["status"] == "failed" and "window 2" in b["reason"]


def test_a_one_window_record_is_itself():
    rec = {"name": "x", "status": "ok"}
    assert windows.split(rec) == [rec]


def _plan(*arms, base=None, params=None):
    return windowplan.Plan(tuple(arms), "abba", None, base or {}, params or {})


def test_every_window_states_every_setting_any_arm_names():
    a = windowplan.parse_arm("A", "idle=halt")
    b = windowplan.parse_arm("B", "idle=haltpoll haltpoll.guest_halt_poll_ns=400us "
                                  "host_shrink=0")
    plan = _plan(a, b, b, a, base={"haltpoll.guest_halt_poll_ns": "100us"},
                 params={"halt_poll_ns_shrink": 2})
    assert plan.guest_line(1) == "haltpoll.guest_halt_poll_ns=100us idle=halt"
    assert plan.guest_line(2) == "haltpoll.guest_halt_poll_ns=400us idle=haltpoll"
    assert plan.host_params(1) == {"halt_poll_ns_shrink": 2}
    assert plan.host_params(2) == {"halt_poll_ns_shrink": 0}
    plan.check()


@pytest.mark.parametrize("text, what", [
    ("smp=4", "cannot change between the windows of one boot"),
    ("halt_poll_ns=host", "a time or global:<time>"),
    ("idle", "is not key=value"),
    ("host_shrink=-1", "host_shrink=-1"),
])
def test_what_cannot_switch_inside_a_boot_is_one_line(text, what):
    with pytest.raises(windowplan.PlanError) as e:
        windowplan.parse_arm("B", text)
    assert what in str(e.value) and "\n" not in str(e.value)


def test_a_per_vm_window_must_be_in_every_arm():
    a = windowplan.parse_arm("A", "halt_poll_ns=200us")
    b = windowplan.parse_arm("B", "idle=halt")
    with pytest.raises(windowplan.PlanError, match="cannot be taken back"):
        _plan(a, b).check()


def test_the_guest_refuses_a_knob_fixed_at_boot_before_anything_runs():
    with pytest.raises(windowplan.PlanError, match="hz cannot change while the guest runs"):
        workplan.check_arms([windowplan.parse_arm("A", "hz=100")])


def test_a_windows_row_says_the_settings_it_ran_with_not_the_boots_config(monkeypatch):
    """The boot's config record says the first settings; a window's row reads what the host
    sent before it (seed 003's period, seed 002's guest window, switched between windows)."""
    from idlelab.derive import runrow
    monkeypatch.setattr(runrow, "host_figures", lambda rec, vcpus: {})    # no host samples here
    monkeypatch.setattr(runrow, "accuracy", lambda rec: {})
    summarize = runrow.summarize
    rec = dict(_rec(), workload="periodic", smp=1, guest_knobs={"period": "250us"})
    rec["windows"][0]["guest"] = "period=250us haltpoll.guest_halt_poll_ns=100us"
    rec["windows"][1]["guest"] = "period=728us haltpoll.guest_halt_poll_ns=954us"
    a, b = (summarize(w) for w in windows.split(rec))
    assert (a.period_us, a.guest_halt_poll_ns) == (250, "100us")
    assert (b.period_us, b.guest_halt_poll_ns) == (728, "954us")
