"""Snapshot deltas and derived figures (synthetic), and vCPU thread discovery and CPU time on
a live, paused QEMU."""
import json
import os
import time

import pytest

from conftest import require
from idlelab.derive import kvmdelta
from idlelab.host import qmp, vcputhreads
from idlelab.derive.kvmdelta import Snapshot, delta
import live
from live import start_paused

sockdir = live.sockdir  # a fixture: short paths for unix sockets


def hist(**buckets):
    h = [0] * 32
    for k, v in buckets.items():
        h[int(k[1:])] = v
    return h


def test_counters_histograms_and_instants():
    a = Snapshot(1_000_000_000, {0: {"halt_exits": 10, "blocking": 1,
                                     "halt_wait_hist": hist(b3=2, b17=1)}}, {0: 5_000})
    b = Snapshot(3_000_000_000, {0: {"halt_exits": 25, "blocking": 0,
                                     "halt_wait_hist": hist(b3=5, b17=1, b20=4)}}, {0: 9_000})
    d = delta(a, b)
    assert d.elapsed_ns == 2_000_000_000
    assert d.per_vcpu_stats[0] == {"halt_exits": 15, "blocking": 0,
                                   "halt_wait_hist": hist(b3=3, b20=4)}
    assert d.per_thread_cpu_ns == {0: 4_000}
    assert d.figures(0)["halt_exits_per_s"] == pytest.approx(7.5)


def test_spec_h1_counters_give_the_expected_figures():
    """Spec 2.7 H1 after 7 halts: 6 polls attempted, 3 hits, 225000 + 70000 ns polled."""
    zero = {k: 0 for k in ("halt_exits", "halt_attempted_poll", "halt_successful_poll",
                           "halt_poll_success_ns", "halt_poll_fail_ns", "halt_wait_ns")}
    h1 = {"halt_exits": 7, "halt_attempted_poll": 6, "halt_successful_poll": 3,
          "halt_poll_success_ns": 225000, "halt_poll_fail_ns": 70000, "halt_wait_ns": 230000}
    d = delta(Snapshot(0, {1: zero}, {1: 0}), Snapshot(525000, {1: h1}, {1: 525000}))
    f = d.figures(1)
    assert f["poll_success_ratio"] == 0.5
    assert f["poll_ns"] == 295000
    assert f["cpu_percent"] == pytest.approx(100.0)
    assert f["halt_exits_per_s"] == pytest.approx(7 / 525e-6)


def test_figures_without_polls_or_stats_are_none():
    d = delta(Snapshot(0, {0: {"halt_attempted_poll": 0}}), Snapshot(0, {0: {
        "halt_attempted_poll": 0}}))
    f = d.figures(0)
    assert f == {"halt_exits_per_s": None, "poll_success_ratio": None, "poll_ns": None,
                 "cpu_percent": None}
    # TCG: no stats at all, only thread CPU time
    d = delta(Snapshot(0, {}, {0: 0, 1: 10}), Snapshot(10, {}, {0: 5, 1: 10}))
    assert d.vcpus() == [0, 1]
    assert d.figures(0)["cpu_percent"] == 50.0 and d.figures(0)["poll_ns"] is None



def two_vcpu_delta():
    """1 s: vCPU 0 polled 50 ms of 10 halts (4 polls, 3 hits), vCPU 1 only halted."""
    z = {"halt_exits": 0, "halt_attempted_poll": 0, "halt_successful_poll": 0,
         "halt_poll_success_ns": 0, "halt_poll_fail_ns": 0}
    v0 = {"halt_exits": 10, "halt_attempted_poll": 4, "halt_successful_poll": 3,
          "halt_poll_success_ns": 30_000_000, "halt_poll_fail_ns": 20_000_000}
    v1 = dict(z, halt_exits=30)
    return delta(Snapshot(0, {0: z, 1: z}, {0: 0, 1: 0}),
                 Snapshot(10 ** 9, {0: v0, 1: v1}, {0: 250_000_000, 1: 500_000_000}))


def test_delta_derives_every_figure_the_report_shows():
    d = two_vcpu_delta()
    assert d.total("halt_exits") == 40 and d.total("no_such_stat") == 0
    assert (d.cpu_percent(0), d.cpu_percent(1), d.cpu_percent(2)) == (25.0, 50.0, None)
    assert (d.poll_percent(0), d.poll_percent(1)) == (5.0, 0.0)
    assert (d.halt_exits_per_s(0), d.halt_exits_per_s(1)) == (10.0, 30.0)
    assert d.poll_success_percent() == 75.0     # over every vCPU: 3 of 4
    empty = delta(Snapshot(0, {0: {"halt_attempted_poll": 0}}),
                  Snapshot(1, {0: {"halt_attempted_poll": 0}}))
    assert empty.poll_success_percent() is None


def test_delta_survives_the_raw_records_json_round_trip():
    d = two_vcpu_delta()
    back = kvmdelta.Delta.from_json(json.loads(json.dumps(d.to_json())))
    assert back == d and sorted(back.per_vcpu_stats) == [0, 1]


def test_per_event_and_mpstat_split():
    assert kvmdelta.per_event(150, 100) == 1.5
    for count, events in ((None, 100), (150, 0), ("n/a (TCG)", 100), (True, 100)):
        assert kvmdelta.per_event(count, events) is None
    assert kvmdelta.mpstat_split(90.0, 30.0) == (30.0, 60.0, 10.0)
    assert kvmdelta.mpstat_split(40.0, None) == (0.0, 40.0, 60.0)

def test_schemas_decide_what_is_instant_or_peak():
    schemas = {"halt_exits": {"type": "cumulative"}, "max_thing": {"type": "peak"},
               "blocking": {"type": "instant"}}
    a = Snapshot(0, {0: {"halt_exits": 1, "max_thing": 7, "blocking": 1}})
    b = Snapshot(1, {0: {"halt_exits": 4, "max_thing": 9, "blocking": 0}})
    assert delta(a, b, schemas).per_vcpu_stats[0] == {"halt_exits": 3, "max_thing": 9,
                                                      "blocking": 0}
    assert delta(a, b).per_vcpu_stats[0]["max_thing"] == 2  # without schemas: a counter


def test_totals_sum_counters_over_vcpus():
    a = Snapshot(0, {0: {"halt_exits": 0, "blocking": 0, "h": [0, 0]},
                     1: {"halt_exits": 0, "blocking": 0, "h": [0, 0]}})
    b = Snapshot(1, {0: {"halt_exits": 3, "blocking": 1, "h": [1, 0]},
                     1: {"halt_exits": 4, "blocking": 1, "h": [0, 2]}})
    assert delta(a, b).totals() == {"halt_exits": 7}


@pytest.mark.parametrize("a, b, match", [
    ({0: {"x": 5}}, {0: {"x": 4}}, "went backwards"),
    ({0: {"h": [1, 2]}}, {0: {"h": [1, 1]}}, r"h\[1\] went backwards"),
    ({0: {"h": [1, 2]}}, {0: {"h": [1, 2, 3]}}, "changed size"),
    ({0: {}}, {0: {"x": 1}}, "missing from the earlier"),
])
def test_inconsistent_snapshots_raise(a, b, match):
    with pytest.raises(ValueError, match=match):
        delta(Snapshot(0, a), Snapshot(1, b))


def test_snapshots_out_of_order_raise():
    with pytest.raises(ValueError, match="out of order"):
        delta(Snapshot(2, {}), Snapshot(1, {}))


def test_vcpus_missing_from_one_snapshot_are_left_out():
    d = delta(Snapshot(0, {0: {"x": 1}, 1: {"x": 1}}), Snapshot(1, {0: {"x": 2}}))
    assert d.per_vcpu_stats == {0: {"x": 1}}


def _fake_task(root, pid, tid, comm, schedstat=None, utime=0, stime=0):
    d = os.path.join(root, str(pid), "task", str(tid))
    os.makedirs(d)
    with open(os.path.join(d, "comm"), "w") as f:
        f.write(comm + "\n")
    if schedstat is not None:
        with open(os.path.join(d, "schedstat"), "w") as f:
            f.write(f"{schedstat} 12 3\n")
    rest = " ".join(["0"] * 10 + [str(utime), str(stime)] + ["0"] * 30)
    with open(os.path.join(d, "stat"), "w") as f:
        f.write(f"{tid} (odd ) name) S {rest}\n")


def test_thread_discovery_and_cpu_time_from_a_fake_proc(tmp_path):
    root = str(tmp_path)
    _fake_task(root, 100, 100, "qemu-system-x86")
    _fake_task(root, 100, 101, "CPU 0/KVM", schedstat=123456789)
    _fake_task(root, 100, 102, "CPU 1/KVM", utime=3, stime=2)   # no schedstat: stat ticks
    _fake_task(root, 100, 103, "CPU 10/TCG", schedstat=5)
    _fake_task(root, 100, 104, "ALL CPUs/TCG", schedstat=5)      # single-threaded TCG
    threads = vcputhreads.find_vcpu_threads(100, root)
    assert threads == {0: 101, 1: 102, 10: 103}
    tick = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    assert vcputhreads.vcpu_cpu_ns(100, proc_root=root) == {0: 123456789, 1: 5 * tick, 10: 5}


@pytest.fixture(params=["kvm", "tcg"])
def live(request, sockdir):
    require(request.param)
    vm, path = start_paused(sockdir, request.param, smp=2)
    session = qmp.QMP(path, timeout=10, proc=vm.proc)
    yield request.param, vm, session
    session.close()
    vm.stop()


def test_vcpu_threads_are_found_by_name_on_live_qemu(live):
    accel, vm, session = live
    by_qmp = {c["cpu-index"]: c["thread-id"] for c in session.query_cpus_fast()}
    assert vcputhreads.find_vcpu_threads(vm.pid) == by_qmp
    with open(f"/proc/{vm.pid}/task/{by_qmp[1]}/comm") as f:
        comm = f.read().strip()
    assert comm == f"CPU 1/{accel.upper()}"


def test_cpu_time_is_monotonic_and_snapshots_work(live):
    accel, vm, session = live
    threads = vcputhreads.find_vcpu_threads(vm.pid)
    first = vcputhreads.take_snapshot(session, vm.pid, threads=threads)
    samples = [first.per_thread_cpu_ns]
    # 0.5 s: reading KVM's stats runs on each vCPU thread, which costs milliseconds on the
    # nested host; over 50 ms that alone came to 5 % there
    for _ in range(5):
        time.sleep(0.1)
        samples.append(vcputhreads.vcpu_cpu_ns(vm.pid, threads))
    for earlier, later in zip(samples, samples[1:]):
        assert all(later[c] >= earlier[c] for c in earlier)
    last = vcputhreads.take_snapshot(session, vm.pid, threads=threads)
    d = delta(first, last)
    assert d.elapsed_ns > 50_000_000
    assert sorted(d.per_thread_cpu_ns) == [0, 1]
    if accel == "kvm":
        assert sorted(d.per_vcpu_stats) == [0, 1]
        # paused: the vCPUs do not run, so nothing halts and nothing polls
        assert all(s["halt_exits"] == 0 and s["halt_attempted_poll"] == 0
                   for s in d.per_vcpu_stats.values())
        assert all(f < 5.0 for f in (d.figures(c)["cpu_percent"] for c in (0, 1)))
    else:
        assert d.per_vcpu_stats == {}
