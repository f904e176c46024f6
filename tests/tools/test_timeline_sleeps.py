"""tools/idlelab/timeline/sleeps.py on made-up logs: each sleep is set against its CPU's idle
states and its thread's next run, binned by length; sleeps whose end or thread the log does not
hold are left out; the `sleep` event is an instant with its length and no target CPU."""
import pytest

from idlelab.timeline import chrometrace, records as R, sleeps as Z, spans as S

HZ = 2_000_000_000          # 2 cycles a ns: µs = cycles / 2000
T0 = 10_000_000
IDLE, HALT, WORK = R.IDLE_THREAD, R.END_HALT, R.END_WORK
KINDS = {"r": "run", "h": "halt", "p": "poll", "e": "idle_end", "s": "sleep"}


def ev(us, kind, arg=0):
    return R.Event(T0 + int(us * 2000), kind, arg)


def timeline(*logs):
    return R.Timeline(tsc_hz=HZ, t0=T0, t_end=T0 + 10_000 * 2000, asked=64, per_cpu=64,
                      per_line=8, kinds=dict(KINDS),
                      cpus=[R.CpuLog(c, list(log), False) for c, log in enumerate(logs)])


def slept(at, length_us, late_us, to_idle_us=60, state="halt", thread=3):
    """A sleep at `at` that idled `to_idle_us` after the call and whose thread ran again
    `late_us` past its deadline."""
    end = at + length_us + late_us
    return [ev(at, "sleep", length_us * 1000), ev(at + to_idle_us - 2, "run", IDLE),
            ev(at + to_idle_us, state), ev(end - 2, "idle_end", HALT | WORK),
            ev(end, "run", thread)]


def test_an_idled_sleep_gives_its_way_into_idle_and_its_lateness():
    log = [ev(0, "run", 3)] + slept(10, 200, 150) + slept(600, 40, 90, to_idle_us=55)
    found = Z.sleeps(timeline(log))
    assert [(s.length_ns, s.idled) for s in found] == [(200_000, True), (40_000, True)]
    assert found[0].to_idle_us == pytest.approx(60)
    assert found[0].late_us == pytest.approx(150)
    assert found[1].to_idle_us == pytest.approx(55)
    assert found[1].late_us == pytest.approx(90)


def test_a_sleep_that_never_blocked_ends_at_the_next_sleep_and_never_idled():
    log = [ev(0, "run", 3), ev(10, "sleep", 20_000), ev(80, "sleep", 300_000),
           ev(140, "run", IDLE), ev(142, "halt"), ev(500, "idle_end", HALT | WORK),
           ev(502, "run", 3)]
    found = Z.sleeps(timeline(log))
    assert [(s.length_ns, s.idled) for s in found] == [(20_000, False), (300_000, True)]
    assert found[1].late_us == pytest.approx(502 - 80 - 300)


def test_a_block_whose_wake_came_before_any_idle_state_did_not_idle():
    log = [ev(0, "run", 3), ev(10, "sleep", 30_000), ev(70, "run", IDLE), ev(75, "run", 3)]
    assert [s.idled for s in Z.sleeps(timeline(log))] == [False]


def test_the_poll_state_counts_as_idling_and_other_threads_do_not_end_a_sleep():
    log = [ev(0, "run", 3), ev(10, "sleep", 100_000), ev(60, "run", IDLE), ev(61, "poll"),
           ev(90, "idle_end", WORK), ev(91, "run", 5), ev(95, "run", IDLE), ev(300, "run", 3)]
    found = Z.sleeps(timeline(log))
    assert [(s.idled, round(s.to_idle_us), round(s.late_us)) for s in found] == [(True, 51, 190)]


def test_sleeps_whose_end_or_thread_the_log_lacks_are_left_out():
    # before the CPU's first run event the sleeping thread is not known; the last sleep has
    # no end in the log
    log = [ev(5, "sleep", 50_000), ev(100, "run", 3), ev(110, "sleep", 50_000),
           ev(170, "run", IDLE), ev(172, "halt")]
    assert Z.sleeps(timeline(log)) == []


def test_each_sleep_is_its_threads_on_a_shared_cpu():
    """Thread 3 sleeps 500 us, thread 5 then sleeps on the same CPU: both halt; each ends at
    its own thread's run, thread 3's 1 us late, thread 5's never idled (it ran on to a wake)."""
    log = [ev(0, "run", 3), ev(10, "sleep", 500_000), ev(70, "run", 5), ev(80, "sleep", 20_000),
           ev(90, "wake", 1), ev(95, "run", IDLE), ev(100, "halt"),
           ev(509, "idle_end", HALT | WORK), ev(511, "run", 3)]
    found = Z.sleeps(timeline(log))
    assert [(s.length_ns, s.idled) for s in found] == [(20_000, False), (500_000, True)]
    assert found[1].late_us == pytest.approx(1) and found[1].to_idle_us == pytest.approx(90)


def test_an_early_wake_does_not_end_a_sleep():
    """thread_sleep_ns blocks again after a wake before its deadline: the sleep ends at the
    thread's run past it."""
    log = [ev(0, "run", 3), ev(10, "sleep", 200_000), ev(70, "run", IDLE), ev(72, "halt"),
           ev(200, "idle_end", HALT | WORK), ev(209, "run", 3), ev(215, "run", IDLE),
           ev(217, "halt"), ev(285, "idle_end", HALT | WORK), ev(290, "run", 3)]
    (s,) = Z.sleeps(timeline(log))
    assert s.idled and s.late_us == pytest.approx(80) and s.to_idle_us == pytest.approx(62)


def test_a_sleep_ended_by_the_threads_own_wake_never_idled_though_the_cpu_idles_later():
    """pingpong's think=: a sleep the thread never blocked in, then its hand-over (a wake),
    then its block for the partner: the idle after it is not the sleep's."""
    log = [ev(0, "run", 2), ev(10, "sleep", 30_000), ev(75, "wake", 1), ev(76, "ipi_sent", 1),
           ev(160, "run", IDLE), ev(162, "halt"), ev(400, "idle_end", HALT | WORK),
           ev(402, "run", 2)]
    assert [s.idled for s in Z.sleeps(timeline(log))] == [False]


def test_bins_count_the_never_idled_share_and_the_idled_lateness():
    found = [Z.Sleep(0, 10_000, False, 0, 0), Z.Sleep(0, 20_000, True, 60, 100),
             Z.Sleep(0, 30_000, True, 62, 300), Z.Sleep(0, 5_000_000, True, 40, 250)]
    rows = Z.by_length(found, edges=(0, 25, 1000))
    assert rows == [
        {"lo_us": 0, "hi_us": 25, "sleeps": 2, "never_idled_pct": 50.0, "to_idle_p50_us": 60.0,
         "late_p50_us": 100.0, "late_p90_us": 100.0, "late_mean_us": 100.0},
        {"lo_us": 25, "hi_us": 1000, "sleeps": 1, "never_idled_pct": 0.0,
         "to_idle_p50_us": 62.0, "late_p50_us": 300.0, "late_p90_us": 300.0,
         "late_mean_us": 300.0},
        {"lo_us": 1000, "hi_us": None, "sleeps": 1, "never_idled_pct": 0.0,
         "to_idle_p50_us": 40.0, "late_p50_us": 250.0, "late_p90_us": 250.0,
         "late_mean_us": 250.0}]
    many = Z.by_length([Z.Sleep(0, 10_000, True, 60, v) for v in range(1, 11)], edges=(0,))
    assert (many[0]["late_p50_us"], many[0]["late_p90_us"]) == (5.0, 9.0)   # by rank
    assert Z.by_length([Z.Sleep(0, 1, True, 1, v) for v in (1, 2)], edges=(0,))[0][
        "late_p50_us"] == 1.0
    only_never = Z.by_length([Z.Sleep(0, 10_000, False, 0, 0)], edges=(0, 25))
    assert only_never[0]["never_idled_pct"] == 100.0 and only_never[0]["late_p50_us"] is None


def test_the_text_table_has_a_line_a_bin_and_nothing_without_sleeps():
    log = [ev(0, "run", 3)] + slept(10, 200, 150)
    got = Z.lines(timeline(log))
    assert len(got) == 2 and got[1].split()[:3] == ["200-300", "1", "0.0"]
    assert Z.lines(timeline([ev(0, "run", 3), ev(5, "halt")])) == []


def test_a_sleep_is_an_instant_with_its_length_and_no_target():
    tl = timeline([ev(0, "run", 3), ev(10, "sleep", 123_000)])
    (i,) = S.instants(tl, 0)
    assert (i.kind, i.target, i.sleep_ns) == ("sleep", -1, 123_000)
    marks = [e for e in chrometrace.build(tl)["traceEvents"] if e.get("ph") == "i"]
    assert marks[0]["args"] == {"sleep_ns": 123_000} and marks[0]["cat"] == "sleep"


def test_the_kernel_defines_the_sleep_kind_and_its_cap():
    with open(R.TIMELINE_H, encoding="utf-8") as f:
        text = f.read()
    assert "X(TL_SLEEP, 's', \"sleep\")" in text and "#define TL_SLEEP_MAX" in text
