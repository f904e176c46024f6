"""Whose fault a late or lost wake-up was (derive/latewake.py), from canned records and waits; and
the wait sources it asks (host/vcpuwaits.py): the sampled run delay with its brackets and stalls,
and the nested host's outer waits mapped onto the inner clock."""
import json
import time

from idlelab.derive import latewake
from idlelab.host import vcpuwaits

MS = 1_000_000


class FakeWaits:
    """wait_ns from a table {cpu: ns}, the same for any interval."""

    def __init__(self, per_cpu):
        self.per_cpu = per_cpu
        self.asked = []

    def cpus(self):
        return sorted(self.per_cpu)

    def wait_ns(self, cpu, start, end):
        self.asked.append((cpu, start, end))
        return self.per_cpu.get(cpu)


def canned(*errors, open_t=1_000 * MS):
    recs = [("window", {"state": "open", "what": "wakeup", "t_ns": str(open_t)})]
    recs += [("error", e) for e in errors]
    return recs


def late(target=0, waker=2, t0=1_100 * MS, after=250 * MS, steal=0, wsteal=0):
    return {"what": "late_wakeup_seen", "target_cpu": str(target), "waker_cpu": str(waker),
            "t0_ns": str(t0), "after_ns": str(after), "bound_ns": str(200 * MS),
            "steal_ns": str(steal), "waker_steal_ns": str(wsteal)}


def lost(target=0, waker=1, t0=1_100 * MS, waited=1_000 * MS):
    return {"what": "lost_wakeup", "target_cpu": str(target), "waker_cpu": str(waker),
            "t0_ns": str(t0), "waited_ns": str(waited)}


def test_a_wait_that_covers_the_lateness_is_the_hosts():
    recs = canned(late(after=250 * MS))
    arrivals = [5_000 * MS, 0]          # the open marker arrived at host 5 s
    w = FakeWaits({0: 30 * MS, 2: 25 * MS, 1: 0, 3: 0})
    (e,) = latewake.attribute(recs, arrivals, w)
    assert e["kind"] == latewake.LATE_HOST and e["late_ns"] == 50 * MS
    assert e["host_wait_ns"] == 55 * MS and e["measured"]
    # the interval asked is the wake-up's, moved onto the host's clock by the open marker
    assert (0, 5_100 * MS, 5_350 * MS) in w.asked


def test_a_wait_short_of_the_lateness_is_the_guests():
    (e,) = latewake.attribute(canned(late(after=250 * MS)), [5_000 * MS, 0],
                                 FakeWaits({0: 20 * MS, 2: 20 * MS, 1: 0}))
    assert e["kind"] == latewake.LATE_GUEST and e["host_wait_ns"] == 40 * MS


def test_a_third_vcpu_held_off_covers_it_too():
    """Lock-holder preemption: neither party waited, another vCPU did, longer than late."""
    (e,) = latewake.attribute(canned(late(after=300 * MS)), [0, 0],
                                 FakeWaits({0: 0, 2: MS, 3: 150 * MS}))
    assert e["kind"] == latewake.LATE_HOST and e["host_wait_ns"] == 150 * MS


def test_steal_time_counts_where_the_host_measure_is_smaller_or_missing():
    (e,) = latewake.attribute(canned(late(after=260 * MS, steal=70 * MS)), [0, 0],
                                 FakeWaits({0: 10 * MS, 2: 0}))
    assert e["kind"] == latewake.LATE_HOST and e["host_wait_ns"] == 70 * MS
    # no open marker: no interval to ask about; steal alone decides, and says so
    (e,) = latewake.attribute([("error", late(after=260 * MS, steal=10 * MS))], [0],
                                 FakeWaits({0: 999 * MS}))
    assert e["kind"] == latewake.LATE_GUEST and not e["measured"]
    assert "no host measure" in latewake.describe(e)


def test_a_lost_wakeup_needs_its_whole_wait_covered():
    recs = canned(lost(waited=1_000 * MS))
    (e,) = latewake.attribute(recs, [0, 0], FakeWaits({0: 0, 1: 300 * MS}))
    assert e["kind"] == latewake.LOST_GUEST and e["late_ns"] == 1_000 * MS
    (e,) = latewake.attribute(recs, [0, 0], FakeWaits({0: 600 * MS, 1: 450 * MS}))
    assert e["kind"] == latewake.LOST_HOST
    assert latewake.summary([e]) == {"late_host": 0, "late_guest": 0, "lost_host": 1,
                                        "lost_guest": 0}


def test_other_errors_are_not_attributed():
    recs = canned({"what": "late_wakeup", "target_cpu": "0", "waker_cpu": "1"},
                   {"what": "knob", "msg": "x"})
    assert latewake.attribute(recs, [0, 0, 0], FakeWaits({})) == []


def sampler(times, delays, stalls=()):
    s = vcpuwaits.WaitSampler()
    s.times, s.delays, s.tids = times, delays, {c: 100 + c for c in delays[0]}
    for st in stalls:
        s.add_stall(*st)
    return s


def test_the_sampled_wait_brackets_the_interval_and_adds_the_stalls():
    s = sampler([0, 10, 20, 30], [{0: 0, 1: 0}, {0: 4, 1: 0}, {0: 9, 1: 1}, {0: 9, 1: 5}],
                stalls=[(12, 18, [1]), (25, 40, None)])
    assert s.wait_ns(0, 12, 18) == 5              # samples 10..20; no stall of its own
    assert s.wait_ns(1, 12, 18) == 1 + 6          # samples 10..20 (1) + its own stall (6)
    assert s.wait_ns(0, 0, 30) == 9 + 5           # + the VM stall's part inside (25..30)
    assert s.wait_ns(2, 0, 30) is None            # no such vCPU


def test_the_sampler_stretches_its_period_to_keep_its_own_cpu_under_its_duty():
    s = vcpuwaits.WaitSampler(period_s=0.005, duty=0.01)
    assert s.wait_s() == 0.005                    # nothing measured yet: the period
    s.turn_ns = 20_000                            # 20 us a turn: 1 % at 2 ms, so 5 ms
    assert s.wait_s() == 0.005
    s.turn_ns = 1_500_000                         # 1.5 ms a turn (the nested host)
    assert s.wait_s() == 0.15
    assert vcpuwaits.WaitSampler(period_s=0.005, duty=None).wait_s() == 0.005
    s.turns, s.cpu_ns = 10, 15 * MS
    s.t_start, s.t_stop = 1_000 * MS, 1_500 * MS  # its CPU over its whole life
    s.times = [1_010 * MS, 1_160 * MS, 1_310 * MS, 1_470 * MS]
    assert s.footprint() == {"turns": 10, "cpu_ms": 15.0, "cpu_pct": 3.0, "period_ms": 150.0}


def test_the_sampler_closes_its_files_and_keeps_its_last_instant(tmp_path):
    """A live sampler over a fake /proc: it finds the vCPU threads, reads through files it
    keeps open, samples once more at stop and closes them."""
    task = tmp_path / "42" / "task"
    for tid, cpu in ((100, 0), (101, 1)):
        (task / str(tid)).mkdir(parents=True)
        (task / str(tid) / "comm").write_text(f"CPU {cpu}/KVM\n")
        (task / str(tid) / "schedstat").write_text(f"5 {cpu * 1000 + 7} 3\n")
    s = vcpuwaits.WaitSampler(period_s=0.001, proc_root=str(tmp_path))
    s.start(42, expect=2)
    while len(s.times) < 3:
        time.sleep(0.001)
    s.stop()
    assert s.tids == {0: 100, 1: 101} and s.delays[-1] == {0: 7, 1: 1007}
    assert s._fds == {} and s.footprint()["turns"] >= 3


def test_edges_past_the_sampled_span_are_read_from_the_nearest_sample_only_when_near():
    s = sampler([100, 200], [{0: 10}, {0: 30}])
    assert s.wait_ns(0, 100, 200 + vcpuwaits.EDGE_NS) == 20
    assert s.wait_ns(0, 100, 200 + vcpuwaits.EDGE_NS + 1) is None
    assert s.wait_ns(0, 100 - vcpuwaits.EDGE_NS - 1, 200) is None


def test_the_outer_waits_are_mapped_onto_the_inner_clock(tmp_path):
    """The outer file is on the outer clock; beats say what the inner uptime was when seen.
    The inner asks on its own monotonic clock (BOOTTIME here, minus the difference)."""
    path = tmp_path / "outer-wait.jsonl"
    offset = 7_000 * MS                              # outer = inner uptime + 7 s
    lines = [{"beat": [offset + 1_000 * MS + 3 * MS, 1_000 * MS]},   # seen 3 ms late
             {"beat": [offset + 1_200 * MS + 1 * MS, 1_200 * MS]}]   # seen 1 ms late
    for k, t in enumerate(range(0, 3_000 * MS, 100 * MS)):
        lines.append({"t": offset + t, "d": {"0": k * 2 * MS, "1": k * 5 * MS}})
    lines.append({"t": 1})                          # a line cut short would not parse: skip
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{\"t\": ")
    outer = vcpuwaits.OuterWait(str(path))
    boot_minus_mono = time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns()
    start = 1_000 * MS - boot_minus_mono               # inner monotonic of inner uptime 1 s
    got = outer.max_wait_ns(start, start + 500 * MS)
    # with the 1 ms estimate error the bracket is 1.0..1.6 s: vCPU 1's 5 ms per 100 ms
    assert got == 6 * 5 * MS, got
    assert outer.max_wait_ns(start + 10_000 * MS, start + 11_000 * MS) is None


def test_waits_add_the_outer_machines_share(tmp_path, monkeypatch):
    s = sampler([0, 10], [{0: 0}, {0: 3}])

    class Outer:
        def max_wait_ns(self, a, b):
            return 100

    assert vcpuwaits.Waits(s, Outer()).wait_ns(0, 0, 10) == 103
    monkeypatch.delenv(vcpuwaits.OUTER_ENV, raising=False)
    assert vcpuwaits.Waits(s).wait_ns(0, 0, 10) == 3


def test_a_jobs_outer_wait_summary_totals_and_finds_the_worst_second():
    """nested.outer_wait over a long job's samples (here 400 s at 10 ms): each vCPU's total,
    and the most in any second, where vCPU 1 was held off for 600 ms from t = 200 s."""
    from idlelab.host.nested import outer_wait
    n, step = 40_000, 10 * MS
    delays, held = [], 0
    for i in range(n):
        if 20_000 <= i < 20_060:
            held += step                      # 60 samples = 600 ms runnable, not running
        delays.append({0: i * 1000, 1: held})
    s = sampler([i * step for i in range(n)], delays)
    w = outer_wait(s)
    assert w["total_ms"] == {0: round((n - 1) * 1000 / 1e6, 1), 1: 600.0}
    assert 590.0 <= w["worst_1s_ms"] <= 600.0   # windows start every half second
