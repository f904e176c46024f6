"""Many measured windows per boot (windows=N) and settings switched between them, inside one
boot: each window has its own markers and records, the host's acknowledgement of the marker
before a window's gap carries its settings, and the guest applies them with every CPU parked
(kernel/reconfigure.c). What the guest then does in each window must be the new setting's."""
import os
import tempfile

import pytest

from idlelab.bench import windowprobe
from idlelab.derive import records, windows as split_windows
from idlelab.host import qemu
from test_boot import ACCELS, one, run

SHORT = "warmup=30ms duration=150ms window_gap=20ms"


class Lines:
    """The probe's switch: window k's guest settings line, from a list."""

    def __init__(self, lines):
        self.lines = lines
        self.plan = type("Plan", (), {"windows": len(lines)})()
        self.asked = []

    def __call__(self, k):
        self.asked.append(k)
        return self.lines[k - 1]


def windowed_run(cfg, lines, expect="SUCCESS"):
    """Boots cfg with len(lines) synchronised windows, window k getting lines[k-1]."""
    cfg.cmdline = f"{cfg.cmdline} window_sync=1 windows={len(lines)}"
    switch = Lines(lines)
    with tempfile.TemporaryDirectory(prefix="idlelab-windows-") as sockets:
        cfg.qmp = os.path.join(sockets, "qmp")
        p = windowprobe.WindowProbe(cfg.qmp, qemu.resolve_accel(cfg.accel), 0, switch=switch)
        try:
            res = run(cfg, expect, on_line=p.on_line, on_start=p.on_start)
        finally:
            p.close()
    return res, p, switch


def per_window(res, kind):
    """{window: [fields]} of one record kind, by the stretch of the console it falls in."""
    _, by_window, _ = split_windows.stretches(res.output)
    return {k: [f for t, f in (records.parse_line(ln) or (None, None) for ln in lines)
                if t == kind]
            for k, lines in by_window.items()}


@pytest.mark.parametrize("accel", ACCELS)
def test_each_window_runs_the_idle_policy_it_was_sent(accel):
    """poll, halt, poll: the static branches switched back and forth while the CPUs were
    parked; a polling window halts (nearly) never, the halting one on every idle entry."""
    res, probe, switch = windowed_run(
        qemu.Config(smp=2, accel=accel, cmdline=f"{SHORT} workload=periodic period=1ms"),
        ["idle=poll", "idle=halt", "idle=poll"])
    assert switch.asked == [1, 2, 3]
    assert not probe.errors, probe.errors
    marks = [m for _, m in res.records("window")]
    assert [(m["state"], m.get("window")) for m in marks] == [
        ("set", "1"), ("open", "1"), ("close", "1"), ("open", "2"), ("close", "2"),
        ("open", "3"), ("close", "3")]
    idle = per_window(res, "idle")
    assert [idle[k][0]["policy"] for k in (1, 2, 3)] == ["poll", "halt", "poll"]
    cpus = per_window(res, "cpu")
    for k in (1, 2, 3):
        assert len(cpus[k]) == 2
        hlt = sum(int(c["hlt"]) for c in cpus[k])
        entries = sum(int(c["idle_entries"]) for c in cpus[k])
        if k == 2:
            assert hlt > 0.9 * entries > 0, (k, cpus[k])
        else:
            assert hlt == 0, (k, cpus[k])
    assert set(probe.by_window) == {1, 2, 3}
    assert all({"open", "close"} <= set(s) for s in probe.by_window.values())


def test_each_window_sleeps_the_period_it_was_sent():
    """Seed 003's sweep inside one boot: period= switched between windows; each window's
    result says the period it ran at (not the next window's, applied before it prints) and
    its wake-ups come at that rate."""
    res, probe, _ = windowed_run(
        qemu.Config(smp=2, accel="tcg", cmdline=f"{SHORT} workload=periodic cpus=0x2"),
        ["period=1ms", "period=5ms", "period=2ms"])
    assert not probe.errors, probe.errors
    results = per_window(res, "result")
    periods = [int(results[k][0]["period_ns"]) for k in (1, 2, 3)]
    assert periods == [1_000_000, 5_000_000, 2_000_000]
    for k, period in zip((1, 2, 3), periods):
        achieved = int(results[k][0]["achieved_period_ns"])
        assert period <= achieved < 1.5 * period, (k, results[k])


@pytest.mark.kvm
def test_guest_hlt_equals_halt_exits_in_every_window():
    """Each window's own markers are exact: per vCPU the guest's HLTs equal KVM's halt_exits
    delta of that window, across switches of policy and of the poll-control MSR."""
    from idlelab.derive import kvmdelta
    res, probe, _ = windowed_run(
        qemu.Config(smp=2, accel="kvm", cmdline=f"{SHORT} workload=pingpong"),
        ["idle=halt hostpoll=on", "idle=haltpoll hostpoll=off", "idle=halt hostpoll=on",
         "idle=haltpoll hostpoll=off"])
    assert not probe.errors, probe.errors
    cpus = per_window(res, "cpu")
    idle = per_window(res, "idle")
    assert [idle[k][0]["msr"] for k in (1, 2, 3, 4)] == ["1", "0", "1", "0"]
    for k, s in probe.by_window.items():
        d = kvmdelta.delta(s["open"]["snapshot"], s["close"]["snapshot"])
        for c in cpus[k]:
            assert int(c["hlt"]) == d.per_vcpu_stats[int(c["id"])]["halt_exits"], (k, c)


@pytest.mark.parametrize("line, what", [
    ("hz=100", "hz cannot change while the guest runs"),
    ("idle=sometimes", "idle"),
])
def test_a_setting_the_guest_cannot_take_ends_the_boot_naming_it(line, what):
    res, _, _ = windowed_run(qemu.Config(smp=2, accel="tcg", cmdline=f"{SHORT} workload=idle"),
                             [line, ""], expect="BAD_KNOB")
    err = one(res, "error")
    assert err["what"] == "settings" and err["window"] == "1"
    assert what in err["msg"]


def test_iters_is_refused_with_several_windows():
    cfg = qemu.Config(smp=2, accel="tcg", cmdline="workload=pingpong iters=100 windows=2")
    res = run(cfg, "TEST_FAILED")
    assert "needs windows of duration=" in one(res, "error")["msg"]


def _spool_pointers(res):
    return [int(f["at"], 16) for _, f in res.records("spool")]


@pytest.mark.parametrize("accel", ACCELS)
def test_records_through_the_spool_come_back_in_their_windows(accel):
    """record_spool=1 (the bench's boots): each window's cpu and result records reach the
    console's readers from guest memory, in their own window, and the guest reuses its
    buffer once the host acknowledged a marker after them (kernel/spool.c's invariant): the
    second half of the settings switch there proves the host read each batch in time."""
    res, probe, _ = windowed_run(
        qemu.Config(smp=2, accel=accel, spool=True,
                    cmdline=f"{SHORT} workload=periodic period=1ms"),
        ["idle=poll", "idle=halt", "idle=poll"])
    assert not probe.errors, probe.errors
    assert one(res, "config")["record_spool"] == "1"
    cpus, results = per_window(res, "cpu"), per_window(res, "result")
    assert [len(cpus[k]) for k in (1, 2, 3)] == [2, 2, 2], res.output
    assert [len(results[k]) for k in (1, 2, 3)] == [1, 1, 1], res.output
    settings = per_window(res, "settings")
    assert [s[0]["idle"] for s in (settings[1], settings[2], settings[3])] == \
        ["poll", "halt", "poll"]
    at = _spool_pointers(res)
    sizes = [int(f["bytes"]) for _, f in res.records("spool")]
    # per window: its settings (after the marker before its gap), then its records (after
    # its close marker); each marker's acknowledgement rewinds, so a window's records start
    # the buffer again and the next window's settings follow them
    assert len(at) == 6, res.output
    assert at[1::2] == [at[0]] * 3, at
    assert at[2::2] == [at[0] + sizes[1], at[0] + sizes[3]], (at, sizes)
    console = res.output.splitlines()
    assert not any(ln.startswith("idlelab-host:") for ln in console), res.output


def test_without_acknowledgements_the_spool_only_grows():
    """window_sync=0: nothing tells the guest the host has read a batch, so none is
    overwritten; the records are the same as the console gives without the spool."""
    cmd = f"{SHORT} workload=periodic period=1ms windows=3"
    spooled = run(qemu.Config(smp=2, accel="tcg", spool=True, cmdline=cmd))
    plain = run(qemu.Config(smp=2, accel="tcg", cmdline=cmd))
    at = _spool_pointers(spooled)
    sizes = [int(f["bytes"]) for _, f in spooled.records("spool")]
    assert len(at) == 3 and all(b == a + n for a, b, n in zip(at, at[1:], sizes)), at
    assert not plain.records("spool")
    for kind in ("cpu", "result"):
        assert [sorted(f) for _, f in spooled.records(kind)] == \
            [sorted(f) for _, f in plain.records(kind)]
