"""Each workload, briefly, under KVM and TCG: the output parses and its identities hold."""
import pytest

from idlelab.host import qemu, wakeup_verdict
from idlelab.host.vcpuwaits import Waits
from idlelab.derive.guestrun import check_invariants, parse_run
from conftest import require
from test_boot import ACCELS, TIMEOUT, assert_exit, boot, one

SHORT = "warmup=50ms duration=200ms"


def run_workload(accel, cmdline, smp=2, host_waits=False):
    """One boot of a workload with its identities checked; with host_waits, also how long
    the host kept CPU 0's vCPU (the one that prints the window markers) waiting between the
    two markers' arrival (vcpuwaits.Waits: with the nested host's own vCPUs, where it is one)."""
    if host_waits:
        require(accel)
        att = wakeup_verdict.run(qemu.Config(smp=smp, accel=accel, cmdline=f"{SHORT} {cmdline}"),
                                 timeout=TIMEOUT)
        res = att.res
        assert not res.timed_out, res.output
        assert_exit(res, "SUCCESS")
        marks = [t for t, ln in att.lines if "@idlelab window state=" in ln]
        waited = Waits(att.sampler).wait_ns(0, marks[0], marks[-1]) if len(marks) == 2 else None
    else:
        res = boot(accel, smp=smp, cmdline=f"{SHORT} {cmdline}")
    run = parse_run(res.output)
    assert run.result is not None and run.result["ok"] == 1, res.output
    assert len(run.cpus) == smp
    assert check_invariants(run) == [], res.output
    # IPIs still in flight when the window closes are the only allowed difference
    assert abs(run.total("ipi_sent") - run.total("ipi_received")) <= smp, res.output
    assert 0 < run.window_ns
    return (run, res, waited) if host_waits else (run, res)


@pytest.mark.parametrize("accel", ACCELS)
# periodic on the nested host: the window between the markers came out 305 ms against the
# result's 200 ms in 2 of 2 runs there (not yet understood; docs/platform-notes.md), so it
# runs in make test-kvm-full there, and in every make test on a machine with /dev/kvm.
@pytest.mark.parametrize("workload", ["pingpong",
                                      pytest.param("periodic", marks=pytest.mark.kvm_full),
                                      "idle", "random", "pipeline"])
def test_workload_runs_and_adds_up(accel, workload):
    """The result's own window and the markers' agree within a fifth, beyond what the host
    kept the marker-printing vCPU waiting in between (a starved host stretched the markers'
    window by 75 ms, 37 %, on the nested host: not the guest's doing)."""
    run, _, waited = run_workload(accel, f"workload={workload}", host_waits=True)
    r = run.result
    assert r["workload"] == workload
    assert waited is not None, "the host's wait was not measured"
    assert abs(r["window_ns"] - run.window_ns) < run.window_ns / 5 + waited, \
        (r["window_ns"], run.window_ns, waited)
    if workload == "pingpong":
        assert r["iters"] > 0 and 0 < r["rtt_p50_ns"] <= r["rtt_p99_ns"] <= r["rtt_max_ns"]
        # a round trip is two cross-CPU wakes; one may straddle each window edge
        assert run.total("wakeups_remote") >= 2 * r["iters"] - 2
    elif workload in ("periodic", "random"):
        assert r["wakes"] > 0 and r["late_p50_ns"] <= r["late_p99_ns"]
    elif workload == "pipeline":
        assert r["laps"] > 0


@pytest.mark.parametrize("accel", ACCELS)
def test_pingpong_counts_exactly_iters(accel):
    run, _ = run_workload(accel, "workload=pingpong iters=150")
    assert run.result["iters"] == 150


def test_two_pairs_on_four_cpus():
    run, _ = run_workload("tcg", "workload=pingpong pairs=2 iters=100", smp=4)
    assert run.result["pairs"] == 2 and run.result["iters"] == 200


def test_tickless_idle_workload_leaves_cpus_alone():
    run, _ = run_workload("tcg", "workload=idle hz=0")
    assert run.cpus[1]["timer_irqs"] == 0 and run.cpus[1]["hlt"] <= 1


def test_cpus_mask_selects_the_cpus():
    run, _ = run_workload("tcg", "workload=periodic cpus=0x2 period=1ms")
    assert run.result["cpus"] == 1
    assert run.cpus[1]["timer_irqs"] > run.cpus[0]["timer_irqs"] / 2


def test_random_echoes_its_distribution():
    run, _ = run_workload("tcg", "workload=random dist=bimodal mean=300us spread=200us seed=7")
    r = run.result
    assert (r["dist"], r["mean_ns"], r["spread_ns"], r["seed"]) == ("bimodal", 300000, 200000, 7)


@pytest.mark.parametrize("cmdline, says", [
    ("workload=periodic cpus=0x8", "names CPUs this VM lacks"),
    ("workload=pingpong pairs=2", "pairs=2 needs 4 CPUs"),
])
def test_impossible_configurations_fail_clearly(cmdline, says):
    res = boot("tcg", smp=2, cmdline=cmdline, expect="TEST_FAILED")
    assert says in one(res, "error")["msg"]


def test_predict_takes_over_on_haltpolls_plateau_in_the_kernel():
    """A plateau of haltpoll's booted with each governor under TCG: vCPU 1 woken by its own
    timer every 2100 us, cap 2 ms, grow_start 200 us, so haltpoll's window climbs 200, 400,
    800, 1600 us and stays there (the residual halt, 500 us, never exceeds it), below every
    idle period: its polls expire. A timer late by more than 1100 us grows it to the cap,
    still below the period, so the polls go on expiring however late the timers come (with
    an 1800 us period and grow_start 300 us, a timer 600 us late, seen under TCG on a loaded
    machine, grew the window past the period and ended the plateau). predict's `takeovers` must count that it set this rule
    aside, and haltpoll's none. The host vectors check the rule itself; this checks that
    the kernel runs it through its direct calls and that the `cpu` record counts it (hit
    ratios are left out: a late timer here, a host hiccup, moves them). warmup=0, so that
    the takeover, about eight periods in, falls inside the window."""
    knobs = ("workload=periodic period=2100us cpus=0x2 hz=0 idle=haltpoll warmup=0ms "
             "duration=300ms haltpoll.guest_halt_poll_ns=2ms "
             "haltpoll.guest_halt_poll_grow_start=200us")
    got = {}
    for gov in ("haltpoll", "predict"):
        run = parse_run(boot("tcg", smp=2, cmdline=f"{knobs} cpuidle.governor={gov}").output)
        got[gov] = run.cpus[1]
    assert got["haltpoll"]["takeovers"] == 0, got
    assert got["haltpoll"]["poll_expired"] >= 10, got    # the premise: it polled and missed
    assert got["predict"]["takeovers"] >= 1, got
