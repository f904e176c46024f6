"""The host CPU's mpstat split (host/cpustat.py) and alone= (host/alone.py)."""
import json
import os
import threading

import pytest

from idlelab.host import alone, cpustat


def test_the_split_is_mpstats():
    # user 30 of which guest 20, system 10, idle 55, irq 2, softirq 3: 100 ticks in all
    a = [100, 0, 50, 1000, 0, 5, 5, 0, 40, 0]
    b = [130, 0, 60, 1055, 0, 7, 8, 0, 60, 0]
    s = cpustat.split(a, b)
    assert s["ticks"] == 100
    assert (s["usr"], s["guest"], s["sys"], s["idle"], s["irq"], s["soft"]) == \
        (10.0, 20.0, 10.0, 55.0, 2.0, 3.0)
    assert sum(s[k] for k in cpustat.COLUMNS) == pytest.approx(100.0)
    assert cpustat.split(a, a) is None                # no tick passed
    assert cpustat.split(b, a) is None                # went back: not one CPU's readings


def test_read_takes_the_cpus_asked(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 0 1 9 0 0 0 0 0 0\n"
                    "cpu1 5 0 2 7 0 0 0 0 3 0\nintr 5\n")
    assert cpustat.read([1, 7], str(stat)) == {1: [5, 0, 2, 7, 0, 0, 0, 0, 3, 0]}
    live = cpustat.read([0])
    assert len(live[0]) == len(cpustat.FIELDS)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="alone= needs two host CPUs")
def test_alone_moves_our_threads_off_the_cpu_and_puts_them_back():
    """The bench's own threads leave the CPU (another host's tasks are not touched), the kept
    thread stays, and restore() gives every moved one its mask back."""
    stop = threading.Event()
    kept = threading.Thread(target=stop.wait)
    kept.start()
    try:
        tid = kept.native_id
        before = os.sched_getaffinity(0)
        a = alone.Alone(1, 1, tid, os.getpid(), own_host=False).apply()
        assert a.error is None and a.moved
        assert 1 not in os.sched_getaffinity(0)
        assert 1 in os.sched_getaffinity(tid)
        part = a.part()
        assert part["cpu"] == 1 and part["others_moved"] is False
        a.restore()
        assert os.sched_getaffinity(0) == before and a.part()["moved"] >= 1
    finally:
        stop.set()
        kept.join()


def test_alone_refuses_a_cpu_the_host_lacks():
    a = alone.Alone(0, 4096, os.getpid(), os.getpid(), own_host=False).apply()
    assert "4096" in a.error and not a.moved


def test_the_row_takes_the_alone_vcpus_cpu():
    from idlelab.derive import runrow
    split = cpustat.split([100, 0, 50, 1000, 0, 5, 5, 0, 40, 0], [130, 0, 60, 1055, 0, 7, 8, 0, 60, 0])
    rec = {"pin": [0, 1], "alone": {"vcpu": 1}, "host": {"mpstat": {"0": None, "1": split}}}
    got = runrow.mpstat_figures(rec, [1])
    assert got == {"mpstat_cpu": 1, "mpstat_usr_pct": 10.0, "mpstat_sys_pct": 10.0,
                   "mpstat_guest_pct": 20.0, "mpstat_irq_pct": 5.0, "mpstat_steal_pct": 0.0,
                   "mpstat_idle_pct": 55.0}
    assert runrow.mpstat_figures(dict(rec, pin=None), [1]) == {}
    assert runrow.mpstat_figures(dict(rec, alone=None), [0]) == {"mpstat_cpu": 0}


def test_pin_switches_between_windows():
    """within=pin: an arm's pin, the boot's for an arm that says none, and the switch sets
    the threads' affinity (None: every CPU again)."""
    from idlelab.bench import windowplan, windowswitch
    a = windowplan.parse_arm("A", "pin=0+0")
    b = windowplan.parse_arm("B", "pin=none")
    other = windowplan.parse_arm("C", "idle=poll")
    assert (a.pin, b.pin, other.pin) == ((0, 0), None, False)
    plan = windowplan.Plan((a, b, other), "abba", base_guest={"idle": "halt"}, base_pin=(1, 1))
    assert plan.pins() and [plan.pin(k) for k in (1, 2, 3)] == [(0, 0), None, (1, 1)]
    assert plan.describe(1)["pin"] == [0, 0] and plan.describe(2)["pin"] is None
    with pytest.raises(windowplan.PlanError, match="pin=x"):
        windowplan.parse_arm("A", "pin=x")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        sw = windowswitch.Switcher(windowplan.Plan((a, b), "abba"))
        sw.threads = {0: t.native_id}
        sw(1)
        assert os.sched_getaffinity(t.native_id) == {0} and sw.state(1)["pinned"] == {0: 0}
        sw(2)
        assert os.sched_getaffinity(t.native_id) == set(range(os.cpu_count()))
        assert sw.state(2)["pinned"] == {0: None}
    finally:
        stop.set()
        t.join()


def test_a_boot_priced_with_its_own_cost_table(tmp_path):
    """boot_costs=: the guest measures the table first (bench=exits iters=N on its command
    line), and predict prices that boot's windows with it, ipi_poll_rtt taken from the
    bench's table (it needs the cost boots' always-poll host); another boot gets none."""
    from idlelab.bench import matrix
    from idlelab.sim import predict
    run, = matrix.parse("a: workload=periodic duration=500ms boot_costs=100\n", "m.txt")
    assert run.boot_costs == 100 and "bench=exits iters=100" in matrix.guest_cmdline(run)
    with pytest.raises(matrix.MatrixError, match="boot_costs=5: expected 'none' or"):
        matrix.parse("a: workload=periodic duration=500ms boot_costs=5\n", "m.txt")
    meta = {"cost_table": {"prims": {"timer": {"ns_p50": 90000.0},
                                     "ipi_poll_rtt": {"ns_p50": 80000.0}},
                           "threads": {"what": "threads"}, "traced_boot": {"prims": {}}}}
    boot = {"cost_table": {"in_boot": True, "iters": 100,
                           "prims": {"timer": {"ns_p50": 70000.0},
                                     "ipi_poll_rtt": {"ns_p50": 300000.0}}}}
    spec = predict.boot_cost_spec(str(tmp_path), boot, meta, 7)
    assert spec == f"here:{tmp_path}/boot-costs-007.json"
    table = json.load(open(tmp_path / "boot-costs-007.json"))["cost_table"]
    assert table["prims"]["timer"]["ns_p50"] == 70000.0
    assert table["prims"]["ipi_poll_rtt"]["ns_p50"] == 80000.0
    assert table["in_boot"] == {"iters": 100, "from_bench": ["ipi_poll_rtt"]}
    assert "traced_boot" not in table and table["threads"] == {"what": "threads"}
    assert predict.boot_cost_spec(str(tmp_path), {"cost_table": None}, meta, 8) is None
