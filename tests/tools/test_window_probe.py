"""The bench's window probe (bench/windowprobe.py) against a stand-in QEMU: where in
each marker it reads the vCPU threads' CPU time. The close marker is sampled at its first
bytes, the markers' common prefix once the open one was seen (the line still arriving, each
character of it a VM exit while every vCPU spins at the guest's barrier), the CPU time
before the stats; at the open marker the CPU time is read last, just before the
acknowledgement lets the guest go."""
import pytest

from idlelab.bench import onerun, windowprobe
from idlelab.derive import runrow
from idlelab.host import qemu, vcputhreads

READ_WAKE_COUNTS = vcputhreads.thread_wake_counts     # the fixture stands it in


class FakeQMP:
    def __init__(self, calls):
        self.calls = calls

    def query_stats_vcpus(self, names):
        self.calls.append("stats")
        return {0: {"halt_exits": 1}}


@pytest.fixture
def probe(monkeypatch):
    calls = []
    monkeypatch.setattr(vcputhreads, "vcpu_cpu_ns",
                        lambda pid, threads: calls.append("cpu") or {0: len(calls)})
    monkeypatch.setattr(windowprobe, "load_sample", lambda pid: calls.append("load") or {})
    monkeypatch.setattr(vcputhreads, "thread_run_delay_ns", lambda pid, tid: 0)
    wakes = iter([{"nr_wakeups": 10, "nr_wakeups_local": 2, "nr_migrations": 1},
                  {"nr_wakeups": 110, "nr_wakeups_local": 62, "nr_migrations": 4}])
    monkeypatch.setattr(vcputhreads, "thread_wake_counts", lambda pid, tid: next(wakes, None))
    acks = []
    monkeypatch.setattr(qemu, "acknowledge", lambda proc, settings="": acks.append(proc))
    p = windowprobe.WindowProbe("/nowhere", "kvm", hold_ns=0)
    p.session, p.pid, p.threads, p.proc = FakeQMP(calls), 1, {0: 1}, "qemu"
    return p, calls, acks


OPEN = "@idlelab window state=open what=idle t_ns=1000 sync=1"
CLOSE = "@idlelab window state=close what=idle t_ns=301000 sync=1"


def test_the_open_markers_cpu_time_is_read_last_before_the_acknowledgement(probe):
    p, calls, acks = probe
    p.on_partial(OPEN[:30])                   # the open marker arriving: sampled whole
    assert calls == [] and p.samples == {}
    p.on_line(OPEN)
    assert calls == ["load", "stats", "cpu"] and acks == ["qemu"]
    assert p.samples["open"]["synced"] is True


def test_the_close_marker_is_sampled_at_its_first_bytes_cpu_first(probe):
    p, calls, acks = probe
    p.on_line(OPEN)
    del calls[:]
    p.on_partial(CLOSE[:12])                  # not yet a marker
    assert calls == []
    p.on_partial(CLOSE[:16])                  # "@idlelab window ": after the open one
    assert calls == ["cpu", "stats", "load"] and acks == ["qemu"]
    p.on_partial(CLOSE[:40])                  # more of it: sampled once
    p.on_line(CLOSE)
    assert calls == ["cpu", "stats", "load"] and acks == ["qemu", "qemu"]
    assert p.samples["close"]["synced"] is True and not p.errors
    assert p.has_window()


def test_a_close_marker_seen_only_whole_is_sampled_then(probe):
    p, calls, _ = probe
    p.on_line(OPEN)
    p.on_line(CLOSE.replace("sync=1", "sync=0"))
    assert calls[-3:] == ["cpu", "stats", "load"] and p.samples["close"]["synced"] is False
    p.on_line(CLOSE)
    assert p.errors == ["a second 'close' window marker in one window"]


def test_a_close_sample_that_failed_is_not_tried_again_at_every_byte(probe):
    """A QMP read that fails at the close marker's first bytes is said once: not retried as
    the line keeps arriving, nor at its end (a hung QMP would hold the reader each time)."""
    p, calls, acks = probe
    p.on_line(OPEN)

    def broken(names):
        calls.append("stats")
        raise OSError("QMP gone")
    p.session.query_stats_vcpus = broken
    for n in range(16, len(CLOSE)):
        p.on_partial(CLOSE[:n])
    p.on_line(CLOSE)
    assert p.errors == ["QMP at the close marker: QMP gone"]
    assert acks == ["qemu", "qemu"] and "close" not in p.samples


def test_the_vcpu_threads_wake_placement_over_the_window(probe, tmp_path):
    """Each vCPU thread's wake-ups at both edges (schedstats), their difference in the
    record, and the share the host put on the waker's CPU in the run's row; none where the
    host has no schedstats."""
    p, _, _ = probe
    p.on_line(OPEN)
    p.on_line(CLOSE)
    host = onerun.host_part(p)
    assert host["wakes"] == {0: {"nr_wakeups": 100, "nr_wakeups_local": 60,
                                 "nr_migrations": 3}}
    assert runrow.wake_placement({"host": host}, [0]) == {"host_wakes_local_pct": 60.0,
                                                        "host_migrations": 3}
    assert runrow.wake_placement({"host": {"wakes": {}}}, [0]) == {}
    f = tmp_path / "sched"
    f.write_text("se.nr_migrations                             :                    7\n"
                 "nr_switches                                  :                   40\n")
    (tmp_path / "5" / "task" / "6").mkdir(parents=True)
    (tmp_path / "5" / "task" / "6" / "sched").write_text(f.read_text())
    assert READ_WAKE_COUNTS(5, 6, str(tmp_path)) is None   # no schedstats
    (tmp_path / "5" / "task" / "6" / "sched").write_text(
        f.read_text() + "nr_wakeups                                   :                   30\n"
        "nr_wakeups_local                             :                   12\n")
    assert READ_WAKE_COUNTS(5, 6, str(tmp_path)) == {
        "nr_wakeups": 30, "nr_wakeups_local": 12, "nr_migrations": 7}
