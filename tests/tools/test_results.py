"""The run parser and the invariant checker, on canned guest output."""
import pytest

from idlelab.derive.guestrun import RunError, check_invariants, parse_run

CPU = ("@idlelab cpu id={id} ctx_switches=5 wakeups=3 wakeups_local=1 wakeups_remote=2 "
       "ipi_sent=2 ipi_avoided=0 ipi_received=2 timer_irqs=4 ticks=3 idle_entries=6 "
       "poll_entries=2 poll_hits=1 poll_immediate=0 poll_expired=1 halts=4 halts_aborted=1 "
       "hlt={hlt} grow=1 shrink=0 window_ns=50000 idle_ns=300 poll_ns=100 halt_ns=200 "
       "poll_overshoot_ns=7 poll_overshoot_max_ns=7")

TEXT = "\n".join([
    "idlelab: booted via multiboot1",
    "@idlelab boot cpus=2 tsc_hz=2596136000 x2apic=1 protocol=multiboot1",
    "@idlelab idle policy=haltpoll reason=realtime_hint msr=0",
    "@idlelab config hz=250 idle=haltpoll period=250us",
    "@idlelab config workload=pingpong",
    "@idlelab window state=open what=pingpong t_ns=1000",
    "@idlelab window state=close what=pingpong t_ns=501000",
    "cpu wakeups ...",
    CPU.format(id=0, hlt=3),
    CPU.format(id=1, hlt=3),
    "@idlelab result workload=pingpong ok=1 pairs=1 iters=10 rtt_p50_ns=0x10",
    "@idlelab exit code=0x10 name=SUCCESS cpu=0",
])


def test_parse_run_collects_every_record():
    run = parse_run(TEXT)
    assert run.boot["cpus"] == 2 and run.idle["policy"] == "haltpoll"
    assert run.config == {"hz": "250", "idle": "haltpoll", "period": "250us",
                          "workload": "pingpong"}
    assert run.window_ns == 500000
    assert run.total("ipi_sent") == 4
    assert run.result["rtt_p50_ns"] == 16 and run.exit["name"] == "SUCCESS"
    assert check_invariants(run) == []


def test_invariant_violations_are_named():
    run = parse_run(TEXT.replace("hlt=3", "hlt=2", 1))
    assert check_invariants(run) == ["cpu 0: hlt 2 != halts 4 - aborted 1"]


def test_incomplete_window_and_duplicates_are_errors():
    with pytest.raises(RunError, match="no complete measurement window"):
        _ = parse_run(TEXT.replace("state=close", "state=open")).window_ns
    with pytest.raises(RunError, match="two result records"):
        parse_run(TEXT + "\n@idlelab result workload=idle ok=1\n")
    with pytest.raises(RunError, match="one per CPU in order"):
        parse_run(TEXT.replace("cpu id=1", "cpu id=3"))


def test_idle_time_longer_than_the_window_is_a_violation():
    # the window is 500000 ns; a CPU idle for longer was not measured inside it
    run = parse_run(TEXT.replace("idle_ns=300 poll_ns=100 halt_ns=200",
                                 "idle_ns=600000 poll_ns=100 halt_ns=599900", 1))
    assert check_invariants(run) == ["cpu 0: idle_ns 600000 > window 500000 ns"]


def test_sums_the_kernel_prints_as_sums_are_not_rechecked():
    # wakeups is printed as local + remote: a mismatch here would be a printf bug, not data
    run = parse_run(TEXT.replace("wakeups=3 ", "wakeups=9 "))
    assert check_invariants(run) == []
