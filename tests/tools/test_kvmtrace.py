"""KVM's halt trace (derive/kvmtrace.py): tracefs text to the window's raw events, and the
story read from them: each halt with the window it polled with (KVM changes the window for
the next halt just before it traces this one's wake-up), the counts the seed 004 table shows,
and the snippet printed as the seed printed it."""
from idlelab.derive import kvmtrace

HEADER = """# tracer: nop
#
# entries-in-buffer/entries-written: 9/11   #P:2
#
#                                _-----=> irqs-off/BH-disabled
"""


def line(tid, t_s, event, body, comm="CPU 1/KVM"):
    return f"       {comm}-{tid}    [001] d..1.  {t_s:.6f}: {event}: {body}"


def trace():
    """vCPU 1's halts, each as kvm_vcpu_halt ends it: its change to the window for the next
    halt (if any), then its wake-up. The window opens at 10.000000 s."""
    rows = [
        # before the window: a short halt opens the window at 10 us
        line(201, 9.9, "kvm_halt_poll_ns", "vcpu 1: halt_poll_ns 10000 (grow 0)"),
        line(201, 9.900001, "kvm_vcpu_wakeup", "poll time 50000 ns, polling valid"),
        # caught by the 10 us poll: no change
        line(201, 10.001, "kvm_vcpu_wakeup", "poll time 4000 ns, polling valid"),
        # polled 10 us in vain, slept 50 us (short): grows to 20 us
        line(201, 10.002, "kvm_halt_poll_ns", "vcpu 1: halt_poll_ns 20000 (grow 10000)"),
        line(201, 10.002001, "kvm_vcpu_wakeup", "wait time 50000 ns, polling valid"),
        # polled 20 us in vain, slept 900 us (long): reset to 0
        line(201, 10.003, "kvm_halt_poll_ns", "vcpu 1: halt_poll_ns 0 (shrink 20000)"),
        line(201, 10.003001, "kvm_vcpu_wakeup", "wait time 900000 ns, polling valid"),
        # window 0: slept at once; then window 0 with the wake-up already there
        line(201, 10.004, "kvm_vcpu_wakeup", "wait time 30000 ns, polling valid"),
        line(201, 10.0045, "kvm_vcpu_wakeup", "poll time 2000 ns, polling valid"),
        line(200, 10.005, "kvm_vcpu_wakeup", "wait time 30000 ns, polling invalid",
             comm="CPU 0/KVM"),
        line(999, 10.005, "kvm_vcpu_wakeup", "poll time 1 ns, polling valid", comm="other"),
        line(201, 10.5, "kvm_vcpu_wakeup", "poll time 1 ns, polling valid"),   # after close
    ]
    return HEADER + "\n".join(rows) + "\n"


OPEN, CLOSE = 10_000_000_000, 10_010_000_000


def test_the_raw_events_are_kept_up_to_the_close():
    part = kvmtrace.window_part(trace(), {0: 200, 1: 201}, OPEN, CLOSE)
    assert part["lost"] == 2 and not part["truncated"]
    assert part["events"][:3] == [[-100_000_000, 1, "change", 10000, 0, 1],
                                  [-99_999_000, 1, "wakeup", 0, 50000, 1],
                                  [1_000_000, 1, "wakeup", 0, 4000, 1]]
    assert len(part["events"]) == 10 and all(e[1] in (0, 1) for e in part["events"])


def test_each_halt_has_the_window_it_polled_with():
    changes, halts = kvmtrace.story(kvmtrace.window_part(trace(), {0: 200, 1: 201}, OPEN,
                                                         CLOSE))
    assert changes == [[2_000_000, 1, 20000, 10000, "grow"],
                       [3_000_000, 1, 0, 20000, "reset"]]
    assert halts == [
        [1_000_000, 1, "poll_hit", 4000, 10000, 1],
        [2_001_000, 1, "poll_miss", 50000, 10000, 1],
        [3_001_000, 1, "poll_miss", 900000, 20000, 1],
        [4_000_000, 1, "no_poll", 30000, 0, 1],
        [4_500_000, 1, "no_wait", 2000, 0, 1],
        [5_000_000, 0, "no_poll", 30000, 0, 0],
    ]


def test_the_summary_splits_halts_at_the_hosts_maximum_window():
    part = kvmtrace.window_part(trace(), {0: 200, 1: 201}, OPEN, CLOSE)
    s = kvmtrace.summary(part, [1], 200_000)
    assert (s["grow"], s["shrink"], s["reset"]) == (1, 0, 1)
    assert (s["poll_hit"], s["short_poll_miss"], s["long_poll_miss"], s["short_no_poll"],
            s["long_no_poll"], s["no_wait"]) == (1, 1, 1, 1, 0, 1)
    assert kvmtrace.summary(part, [0, 1], 200_000)["no_poll"] == 2


def test_a_change_that_keeps_the_window_is_named_by_its_direction():
    """grow=1 and shrink=1 (seed 000's always-poll) change nothing, but KVM still says which
    it did."""
    text = HEADER + "\n".join([
        line(201, 10.001, "kvm_halt_poll_ns", "vcpu 1: halt_poll_ns 500000 (grow 500000)"),
        line(201, 10.001001, "kvm_vcpu_wakeup", "wait time 4000000 ns, polling valid"),
        line(201, 10.002, "kvm_halt_poll_ns", "vcpu 1: halt_poll_ns 500000 (shrink 500000)"),
        line(201, 10.002001, "kvm_vcpu_wakeup", "wait time 4000000 ns, polling valid")])
    changes, _ = kvmtrace.story(kvmtrace.window_part(text, {1: 201}, OPEN, CLOSE))
    assert [c[4] for c in changes] == ["grow", "shrink"]


def test_the_snippet_reads_as_the_seeds_trace():
    part = kvmtrace.window_part(trace(), {1: 201}, OPEN, CLOSE)
    assert kvmtrace.snippet(part, 1) == [
        "    2000.0 us: kvm_halt_poll_ns: vcpu 1: halt_poll_ns 20000 (grow 10000)",
        "    3000.0 us: kvm_halt_poll_ns: vcpu 1: halt_poll_ns 0 (shrink 20000)"]
    assert kvmtrace.snippet(part, 0) == []


def test_a_long_trace_keeps_its_first_events_and_says_so(monkeypatch):
    monkeypatch.setattr(kvmtrace, "MAX_ITEMS", 2)
    part = kvmtrace.window_part(trace(), {0: 200, 1: 201}, OPEN, CLOSE)
    assert part["truncated"] and len(part["events"]) == 2


def test_each_line_is_one_event_whatever_its_columns():
    """parse_trace reads the whole text with one multi-line pattern: a line's columns (a
    tgid, no flags, an empty body) are read as they were line by line, and no event is made
    of two lines (a thread cut off at its tid and the next line's CPU and stamp)."""
    text = HEADER + "\n".join([
        "       CPU 1/KVM-201    [001] d..1.  10.000001: kvm_exit: reason HLT rip 0x10",
        "  qemu-system-x86-300   (  300) [000] ....  10.000002: sched_wakeup: comm=a pid=5",
        "          <idle>-0     [001]  10.000003: sched_switch: prev_pid=0",
        "",
        "   \t ",
        "#  CPU 1/KVM-201    [001] d..1.  10.000009: kvm_exit: a comment, not an event",
        "       cut-off-77",
        "[001] d..1.  10.000004: kvm_entry: vcpu 1",
        "       CPU 0/KVM-200    [000] d..1.  10.000005: kvm_entry:",
    ]) + "\n"
    events, lost = kvmtrace.parse_trace(text)
    E = kvmtrace.HostEvent
    assert events == [E(201, 10.000001, "kvm_exit", "reason HLT rip 0x10", "CPU 1/KVM", 1),
                      E(300, 10.000002, "sched_wakeup", "comm=a pid=5", "qemu-system-x86", 0),
                      E(0, 10.000003, "sched_switch", "prev_pid=0", "<idle>", 1),
                      E(200, 10.000005, "kvm_entry", "", "CPU 0/KVM", 0)]
    assert lost == 2
