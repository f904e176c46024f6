"""A vCPU thread's halts split by the host's scheduler (derive/threadtrace.py): the part
before it sleeps, the woken thread's wait for a CPU and its way back to the guest, from
tracefs text; halts a poll, a preemption or a pending interrupt made different are left
out, and so are threads that are not QEMU's vCPUs."""
from pytest import approx

from idlelab.derive import threadtrace

HEADER = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 40/40   #P:2\n#\n"
VCPU0, VCPU1 = "CPU 0/KVM", "CPU 1/KVM"


def alike(ns, n):
    """A part whose samples are all `ns`: every percentile the summary keeps is that."""
    return {"ns_p50": ns, "ns_p90": ns, "ns_p99": ns, "n": n}


def line(comm, tid, t_us, event, body):
    return f"  {comm}-{tid}    [001] d..1.  {100 + t_us / 1e6:.6f}: {event}: {body}"


def switch(t_us, prev, prev_pid, state, nxt, next_pid):
    return line(prev, prev_pid, t_us, "sched_switch",
                f"prev_comm={prev} prev_pid={prev_pid} prev_prio=120 prev_state={state} ==> "
                f"next_comm={nxt} next_pid={next_pid} next_prio=120")


def halt(t0, tid=11, comm=VCPU0, out=20, wake=500, into=540, entry=600, state="S", kick=None):
    """One halt that slept: exit at t0, asleep at +out, woken at +wake (from the idle task),
    running at +into, in the guest at +entry (us); `kick` (us): vCPU 1 (tid 12) sends it an IPI,
    its exit 6 us before the kick."""
    kicked = [] if kick is None else [
        line(VCPU1, 12, t0 + kick - 6, "kvm_exit", "vcpu 1 reason msr rip 0x102104"),
        line(VCPU1, 12, t0 + kick, "kvm_apic_ipi", "dst 0 vec 224 (Fixed|physical|assert|edge|dst)"),
        line(VCPU1, 12, t0 + kick + 80, "kvm_entry", "vcpu 1, rip 0x102106")]
    return [
        line(comm, tid, t0, "kvm_exit", "vcpu 0 reason hlt rip 0x1000 info1 0x0 info2 0x0"),
        switch(t0 + out, comm, tid, state, "swapper/1", 0),
        *kicked,
        line("<idle>", 0, t0 + wake, "sched_wakeup", f"comm={comm} pid={tid} prio=120 "
             "target_cpu=001"),
        switch(t0 + into, "swapper/1", 0, "R", comm, tid),
        line(comm, tid, t0 + entry, "kvm_entry", "vcpu 0, rip 0x1001"),
    ]


def arm(t_us, expires_us, tid=11, comm=VCPU0):
    """The vCPU thread arms KVM's LAPIC timer at t_us to expire at expires_us."""
    at = 100_000_000_000 + expires_us * 1000
    return line(comm, tid, t_us, "hrtimer_start", f"hrtimer=0000000012345678 "
                f"function=apic_timer_fn [kvm] expires={at} softexpires={at} "
                "mode=ABS|HARD was_armed=0")


def text(rows):
    return HEADER + "\n".join(rows) + "\n"


def parsed(rows):
    return threadtrace.halts(threadtrace.kvmtrace.parse_trace(text(rows))[0])


def test_a_halt_an_ipi_woke_splits_into_its_four_parts():
    """Kicked at 300 us by vCPU 1 (its exit 6 us before), running at 540, in the guest at 600."""
    assert parsed(halt(0, kick=300)) == [(0, 20_000, 6_000, 240_000, 60_000, 40_000, None,
                                          None, 520_000, 0, 0)]


def test_a_halt_no_ipi_woke_has_no_kick_and_no_wake_part():
    """A timer's wake: the parts of the thread's own, not the waker's."""
    assert parsed(halt(0)) == [(0, 20_000, None, None, 60_000, 40_000, None, None, 520_000, 0,
                                0)]


def test_a_timer_wake_is_late_by_the_lapic_timers_expiry_to_the_wake():
    """The vCPU armed KVM's LAPIC timer (hrtimer_start of apic_timer_fn) to expire 450 us
    after its HLT exit; woken at 500: 50 us late. Another hrtimer of the thread's, or an
    expiry outside the halt, says nothing."""
    arm = line(VCPU0, 11, -5, "hrtimer_start", "hrtimer=0000000012345678 function=apic_timer_fn "
               f"[kvm] expires={100_000_450_000} softexpires={100_000_450_000} "
               "mode=ABS|HARD was_armed=0")
    other = line(VCPU0, 11, -3, "hrtimer_start", "hrtimer=00000000abcdef00 function="
                 f"hrtimer_wakeup expires={100_000_480_000} softexpires=0 mode=ABS was_armed=0")
    assert [(h.timer_late, h.timer_slept) for h in parsed([arm, other] + halt(0))] == \
        [(50_000, 450_000)]
    stale = arm.replace("100000450000", "99999000000")
    assert [h.timer_late for h in parsed([stale] + halt(0))] == [None]
    s = threadtrace.summary(text([arm] + halt(0)))
    assert s["thread_timer_late"] == alike(50_000.0, 1)


def test_timer_wakes_after_a_long_sleep_are_summed_up_apart():
    """Three halts whose timer expired 480 us after the HLT, two after 4 ms (the idle CPU's
    tick): the long sleeps' parts, slower here, go under *_long, each class with its sleep."""
    rows = []
    for i, (slept, wake, entry) in enumerate(((480, 500, 540), (480, 500, 540), (480, 500, 540),
                                              (4000, 4100, 4200), (4000, 4100, 4200))):
        t0 = i * 10_000
        rows += [arm(t0 - 5, t0 + slept)] + halt(t0, wake=wake, into=wake + 40,
                                                 entry=entry + 60)
    s = threadtrace.summary(text(rows))
    assert s["thread_timer_late"] == alike(20_000.0, 3)
    assert s["thread_timer_slept"]["ns_p50"] == 480_000.0
    assert s["thread_timer_late_long"] == alike(100_000.0, 2)
    assert s["thread_timer_slept_long"]["ns_p50"] == 4_000_000.0
    assert s["thread_entry_timer"]["ns_p50"] == 60_000.0
    assert s["thread_entry_timer_long"]["ns_p50"] == 120_000.0
    assert s["thread_wake_timer"]["n"] == 3 and s["thread_wake_timer_long"]["n"] == 2


def test_the_summary_has_each_parts_median_and_p90_apart_for_ipi_and_timer_wakes():
    """The first four halts an IPI woke, the other six a timer (their way back is slower)."""
    rows = []
    for i, out in enumerate((10, 20, 30, 40, 50, 60, 70, 80, 90, 100)):
        kicked = i < 4
        rows += ([] if kicked else [arm(i * 1000 - 5, i * 1000 + 480)]) + \
            halt(i * 1000, out=out, kick=300 if kicked else None, entry=600 if kicked else 640)
    s = threadtrace.summary(text(rows))
    assert s["halts"] == 10 and s["vcpus"] == 2 and s["lost"] == 0
    assert s["thread_halt"] == {"ns_p50": 20_000.0, "ns_p90": 40_000.0, "ns_p99": 40_000.0, "n": 4}
    assert s["thread_wake"] == alike(240_000.0, 4)
    assert s["thread_kick"]["n"] == 4 and s["thread_entry"]["ns_p50"] == 60_000.0
    assert s["thread_halt_timer"] == {"ns_p50": 70_000.0, "ns_p90": 100_000.0,
                                      "ns_p99": 100_000.0, "n": 6}
    assert s["thread_wake_timer"] == alike(40_000.0, 6)
    assert s["thread_entry_timer"]["ns_p50"] == 100_000.0
    assert s["thread_timer_late"] == alike(20_000.0, 6)
    assert s["thread_timer_slept"]["ns_p50"] == 480_000.0
    assert not any(p + threadtrace.LONG_SUFFIX in s for p in threadtrace.TIMER_PARTS)
    # a halt neither kicked nor its timer's (an IPI the trace did not pair): in neither kind
    s = threadtrace.summary(text(halt(0)))
    assert s["halts"] == 1 and not any(p in s for p in threadtrace.TIMER_PARTS)


def test_a_halt_with_a_host_window_is_left_out_until_the_window_is_0_again():
    rows = halt(0)
    rows.append(line(VCPU0, 11, 700, "kvm_halt_poll_ns", "vcpu 0: halt_poll_ns 10000 (grow 0)"))
    rows += halt(1000)                      # polled 10 us first: its thread_halt has a poll
    rows.append(line(VCPU0, 11, 1700, "kvm_halt_poll_ns", "vcpu 0: halt_poll_ns 0 (shrink 10000)"))
    rows += halt(2000, out=30)
    assert [h[1] for h in parsed(rows)] == [20_000, 30_000]


def test_preempted_not_halted_and_pending_halts_are_left_out():
    rows = halt(0, state="R+")              # preempted before it slept
    rows += [line(VCPU0, 11, 1000, "kvm_exit", "vcpu 0 reason hlt rip 0x1000"),
             line(VCPU0, 11, 1010, "kvm_entry", "vcpu 0, rip 0x1001")]    # an irq was pending
    rows += [line(VCPU0, 11, 1100, "kvm_exit", "vcpu 0 reason msr rip 0x1000"),
             switch(1120, VCPU0, 11, "S", "swapper/1", 0)]              # not a halt
    rows += halt(2000, out=25)
    assert [(h.vcpu, h.thread_halt, h.thread_entry) for h in parsed(rows)] == [(0, 25_000, 60_000)]


def test_only_qemus_vcpu_threads_count_and_each_vcpu_is_named():
    rows = halt(0, tid=12, comm=VCPU1) + halt(5000, tid=99, comm="qemu-system-x86")
    assert [(h.vcpu, h.thread_halt) for h in parsed(rows)] == [(1, 20_000)]


def test_vmx_spells_the_reason_in_capitals():
    rows = [r.replace("reason hlt", "reason HLT") for r in halt(0)]
    assert len(parsed(rows)) == 1


def test_no_halt_gives_counts_and_no_parts():
    s = threadtrace.summary(HEADER)
    assert s == {"halts": 0, "lost": 0, "vcpus": 0, "rewakes": 0}   # no exit: no shadow known


def test_a_wake_that_sleeps_again_is_a_rewake_of_the_same_halt():
    """Woken at 100 us, on a CPU 110-130 us and asleep again without entering: a rewake (20
    us on a CPU while the guest halts); the wake that counts is the last one."""
    rows = halt(0, kick=300)
    rows[2:2] = [line("<idle>", 0, 100, "sched_wakeup", "comm=CPU 0/KVM pid=11 prio=120"),
                 switch(110, "swapper/1", 0, "R", VCPU0, 11),
                 switch(130, VCPU0, 11, "S", "swapper/1", 0)]
    assert parsed(rows) == [(0, 20_000, 6_000, 240_000, 60_000, 40_000, None, None, 520_000,
                             20_000, 1)]
    s = threadtrace.summary(text(rows + halt(1000)))
    assert s["rewakes"] == 1 and s["rewake_ppm"] == round(20_000 * 1e6 / 1_040_000, 1)


def test_only_the_given_vms_threads_count():
    """Another VM on the host names its vCPU threads alike: given one VM's tids, its halts
    alone count."""
    rows = halt(0) + halt(5000, tid=41)         # tid 41: another QEMU's `CPU 0/KVM`
    events = threadtrace.kvmtrace.parse_trace(text(rows))[0]
    assert len(threadtrace.halts(events)) == 2
    assert [h.thread_halt for h in threadtrace.halts(events, {11, 12})] == [20_000]
    assert threadtrace.summary(text(rows), {41})["halts"] == 1


def test_the_boots_vcpu_threads_are_found_once_qemu_has_made_them(monkeypatch):
    from idlelab.costtable import tracedboot
    from idlelab.host import vcputhreads

    seen = iter([{}, {0: 5}, {0: 5, 1: 6}])
    monkeypatch.setattr(vcputhreads, "find_vcpu_threads", lambda pid: next(seen))

    class Proc:
        pid = 1234

        def poll(self):
            return None

    t = tracedboot.ThreadTrace("kvm")
    t.find_threads(Proc())
    t._finder.join(timeout=5)
    assert t.tids == {0: 5, 1: 6}
    assert tracedboot.ThreadTrace("tcg").part() == {"what": "threads",
                                                    "why": "no KVM host to trace (TCG)"}


def test_a_window_keeps_the_halts_that_began_in_it():
    """trace=threads cuts a run's trace to its window (mono ns): a halt counts where its
    exit lies inside."""
    rows = halt(0) + [arm(995, 1480)] + halt(1000, out=30) + [arm(1995, 2480)] + \
        halt(2000, out=40)
    s = threadtrace.summary(text(rows), {11}, (100_000_500_000, 100_002_000_000))
    assert s["halts"] == 2 and s["thread_halt_timer"]["ns_p50"] == 30_000.0


def test_a_kick_before_the_target_is_asleep_still_counts():
    """KVM's kick can come after the target's last check but before its switch out: the wake
    follows at once, and it is the IPI's, not a timer's."""
    rows = halt(0, kick=10)
    rows.insert(3, rows.pop(1))       # the switch out (asleep) after the kick
    (h,) = parsed(rows)
    assert (h.thread_kick, h.thread_wake) == (6_000, 530_000)


def wakeup(t_us, pid, comm="python3", cpu=1):
    return line("<idle>", 0, t_us, "sched_wakeup", f"comm={comm} pid={pid} prio=120 "
                f"target_cpu={cpu:03d}")


def test_a_vcpu_thread_switched_out_runnable_is_preempted_for_as_long_as_it_waits():
    """vCPU 0 runs on CPU 1 from 0 to 1000 us; python3, woken onto that CPU at 390, takes it
    at 400 for 300 us; it sleeps (S) at 1000: one preemption of 300 us over 700 us on a CPU,
    and one task woken beside it (not python3's wake while python3 ran, nor one onto CPU 0,
    nor the vCPU thread's own). A sleep is no preemption, nor is another VM's thread's; the
    span keeps the preemptions that began in it and the time on a CPU inside it."""
    rows = [switch(0, "swapper/1", 0, "R", VCPU0, 11),
            line(VCPU0, 11, 10, "kvm_exit", "vcpu 0 reason msr rip 0x1000"),
            wakeup(390, 77), wakeup(395, 78, cpu=0),
            switch(400, VCPU0, 11, "R+", "python3", 77),
            wakeup(500, 79, "sleep"),
            switch(700, "python3", 77, "S", VCPU0, 11),
            switch(1000, VCPU0, 11, "S", "swapper/1", 0),
            wakeup(1050, 11, VCPU0),
            switch(1100, "swapper/1", 0, "R", VCPU0, 11),
            switch(1200, VCPU0, 11, "S", "swapper/1", 0)]
    events = threadtrace.kvmtrace.parse_trace(text(rows))[0]
    c = threadtrace.contention(events)
    assert c.preempted == [(0, 100_000_400_000, 300_000, "python3")]
    assert (c.on_cpu, c.woken_beside) == ({0: 800_000}, {0: 1})
    s = threadtrace.summary(text(rows))
    assert s["thread_preempt"] == alike(300_000.0, 1)
    assert (s["preempt_per_s"], s["preempted_ms"], s["on_cpu_ms"]) == (1250.0, 0.3, 0.8)
    assert (s["preempted_by"], s["woken_beside_per_s"]) == ({"python3": 0.3}, 1250.0)
    assert threadtrace.contention(events, {12}).preempted == []
    late = threadtrace.contention(events, span=(100_000_500_000, 100_001_150_000))
    assert (late.preempted, late.on_cpu, late.woken_beside) == ([], {0: 300_000 + 50_000},
                                                                {0: 0})


def test_the_other_tasks_demand_is_each_stretch_a_cpu_runs_them_while_the_guest_runs():
    """What other tasks want of the host's CPUs whatever the vCPU threads do: on CPU 0,
    python3 from 100 us then kworker until 350 (one stretch, 250 us: a task after another);
    on CPU 1, python3 preempting vCPU 0 from 400 to 700 (300 us). The guest ran from its first
    exit (0) to its last (2000): a stretch before it is clipped to it, one after it is not
    counted. Two stretches in 2 ms, on the header's 2 CPUs; the host's CPUs are the header's
    where it has them. A task running when the trace begins, or still running when it ends,
    is a stretch from the span's start or to its end. A trace that followed the vCPU threads
    alone (`demand` False) gives no demand."""
    def on_cpu0(row):
        return row.replace("[001]", "[000]")

    rows = [switch(-100, "swapper/1", 0, "R", VCPU0, 11),
            line(VCPU0, 11, 0, "kvm_exit", "vcpu 0 reason msr rip 0x1000"),
            on_cpu0(switch(100, "swapper/0", 0, "R", "python3", 77)),
            on_cpu0(switch(200, "python3", 77, "S", "kworker/0:1", 90)),
            on_cpu0(switch(350, "kworker/0:1", 90, "I", "swapper/0", 0)),
            switch(400, VCPU0, 11, "R+", "python3", 78),
            switch(700, "python3", 78, "S", VCPU0, 11),
            line(VCPU0, 11, 2000, "kvm_exit", "vcpu 0 reason hlt rip 0x1001"),
            on_cpu0(switch(2100, "swapper/0", 0, "R", "python3", 77)),
            on_cpu0(switch(2300, "python3", 77, "S", "swapper/0", 0))]
    c = threadtrace.contention(threadtrace.kvmtrace.parse_trace(text(rows))[0])
    assert (sorted(c.other_runs), c.other_span, c.cpus) == ([250_000, 300_000], 2_000_000, 2)
    s = threadtrace.summary(text(rows))
    assert (s["thread_other_run"]["ns_p50"], s["thread_other_run"]["n"]) == (250_000.0, 2)
    assert (s["other_per_s"], s["host_cpus"]) == (1000.0, 2)
    early = [on_cpu0(switch(-50, "swapper/0", 0, "R", "python3", 77)),
             on_cpu0(switch(50, "python3", 77, "S", "swapper/0", 0))] + rows
    assert sorted(threadtrace.contention(threadtrace.kvmtrace.parse_trace(text(early))[0])
                  .other_runs) == [50_000, 250_000, 300_000]
    assert threadtrace.summary(text(rows).replace("#P:2", "#P:4"))["host_cpus"] == 4
    assert "other_per_s" not in threadtrace.summary(text(rows), demand=False)
    # kworker on CPU 0 since before the trace (its first switch is away from it), and
    # python3 from 1900 on CPU 0 past the guest's last exit: 0-50 and 1900-2000
    edges = ([on_cpu0(switch(50, "kworker/0:1", 90, "I", "swapper/0", 0))] + rows[:-2]
             + [on_cpu0(switch(1900, "swapper/0", 0, "R", "python3", 77))])
    assert sorted(threadtrace.contention(threadtrace.kvmtrace.parse_trace(text(edges))[0])
                  .other_runs) == [50_000, 100_000, 250_000, 300_000]


def window_exit(t_us, rip, tid=11, comm=VCPU0):
    return line(comm, tid, t_us, "kvm_exit", f"vcpu 0 reason vintr rip {rip} info1 0x0 info2 0x0")


def test_an_interrupt_injected_on_the_hlt_is_a_broken_shadow():
    """`sti; hlt` at 0x1000: the interrupt window opening on the HLT itself (a vintr exit at
    its rip) means the handler ran before it, so the HLT that follows slept with its wake
    taken (QEMU 7.2's emulated SVM drops STI's shadow at VMRUN). A window that opens
    elsewhere, or a HLT at another rip, is not one; `span` keeps the HLT exits inside it."""
    rows = [window_exit(0, "0x1000"),
            line(VCPU0, 11, 5, "kvm_entry", "vcpu 0, rip 0x1000"),
            line(VCPU0, 11, 30, "kvm_exit", "vcpu 0 reason msr rip 0x2000 info1 0x1 info2 0x0"),
            line(VCPU0, 11, 40, "kvm_entry", "vcpu 0, rip 0x2002"),
            *halt(100, entry=50_000),                         # slept 50 ms: the lost wake
            window_exit(60_000, "0x3000"),                    # a window elsewhere: not one
            line(VCPU0, 11, 60_010, "kvm_entry", "vcpu 0, rip 0x3000"),
            *halt(60_100),
            line("python3", 99, 60_200, "kvm_exit", "vcpu 0 reason vintr rip 0x1000")]  # not QEMU's
    events = threadtrace.kvmtrace.parse_trace(text(rows))[0]
    (brk,) = threadtrace.shadow_breaks(events)
    assert brk == (0, 100_000_100_000, 50_000_000)
    assert threadtrace.shadow_breaks(events, span=(100_000_200_000, 10**15)) == []
    s = threadtrace.summary(text(rows))
    assert s["shadow_breaks"] == 1 and s["shadow_break_slept"]["ns_p50"] == 50_000_000
    assert threadtrace.summary(text(halt(0)))["shadow_breaks"] == 0


def test_a_broken_shadow_whose_hlt_is_still_asleep_counts():
    """The longest lost wake-ups may outlast the trace: the break counts at the HLT's exit,
    its sleep unknown; an entry the trace lost (the thread's next event another exit) does
    not make the sleep run on to a later one."""
    rows = [window_exit(0, "0x1000"),
            line(VCPU0, 11, 5, "kvm_entry", "vcpu 0, rip 0x1000"),
            line(VCPU0, 11, 100, "kvm_exit", "vcpu 0 reason hlt rip 0x1000 info1 0x0")]
    events = threadtrace.kvmtrace.parse_trace(text(rows))[0]
    assert threadtrace.shadow_breaks(events) == [(0, 100_000_100_000, None)]
    s = threadtrace.summary(text(rows))
    assert s["shadow_breaks"] == 1 and "shadow_break_slept" not in s
    rows += [line(VCPU0, 11, 300, "kvm_exit", "vcpu 0 reason msr rip 0x2000 info1 0x1"),
             line(VCPU0, 11, 900, "kvm_entry", "vcpu 0, rip 0x2002")]
    events = threadtrace.kvmtrace.parse_trace(text(rows))[0]
    assert threadtrace.shadow_breaks(events) == [(0, 100_000_100_000, None)]


def test_the_cost_tables_line_says_the_broken_shadows():
    from idlelab.costtable import render
    s = threadtrace.summary(text(halt(0, kick=300)))
    assert "injected on a HLT" not in render.threads_markdown(s)[0]
    s.update(shadow_breaks=2, shadow_break_slept={"ns_p50": 47e6, "ns_p90": 90e6, "n": 2})
    said = render.threads_markdown(s)[0]
    assert ("; 2 interrupts injected on a HLT inside STI's shadow, which the host dropped "
            "(lost wake-ups: those HLTs slept 47.0 ms p50)") in said
    assert "shadow_break_slept" not in said            # not a part of a halt


def _table(**medians):
    return {p: {"ns_p50": float(v), "ns_p90": 2.0 * v, "n": 500} for p, v in medians.items()}


def test_the_parts_are_scaled_to_the_untraced_boot_by_their_own_wakes_path():
    """The trace slows what it times (1.3-1.4x on the nested host): an IPI's parts take
    ipi_halt_rtt's untraced/traced ratio, a timer's (both classes) timer_sleep's; how long a
    halt slept and the preemptions stay as traced."""
    part = {"ns_p50": 100_000.0, "ns_p90": 200_000.0, "ns_p99": 500_000.0, "n": 9}
    parts = {"what": "threads", "halts": 9, "rewake_ppm": 50.0,
             **{p: dict(part) for p in threadtrace.PARTS},
             **{p + s: dict(part) for p in threadtrace.TIMER_PARTS for s in ("", "_long")},
             "thread_preempt": dict(part)}
    fast = _table(ipi_halt_rtt=210_000, timer_sleep=240_000, cpuid=30_000)
    slow = _table(ipi_halt_rtt=300_000, timer_sleep=300_000, cpuid=40_000)
    got = threadtrace.unprobed(parts, fast, slow)
    assert got["probe"] == {"ipi": approx(0.7), "timer": approx(0.8),
                            "basis": threadtrace.PROBE_BASIS}
    for p in threadtrace.PARTS:
        assert (got[p]["ns_p50"], got[p]["ns_p90"], got[p]["ns_p99"], got[p]["n"]) == \
            (approx(70_000), approx(140_000), approx(350_000), 9)
    for p in ("thread_halt_timer", "thread_entry_timer_long", "thread_timer_late_long"):
        assert (got[p]["ns_p50"], got[p]["ns_p90"], got[p]["ns_p99"]) == \
            (approx(80_000), approx(160_000), approx(400_000))
    for p in ("thread_timer_slept", "thread_timer_slept_long", "thread_preempt"):
        assert got[p] == part
    assert got["rewake_ppm"] == 50.0 and parts["thread_halt"] == part    # not changed in place


def test_parts_whose_trace_cost_is_unknown_are_refused_not_kept_as_traced():
    parts = {"what": "threads", "halts": 3, "thread_halt": {"ns_p50": 1.0, "ns_p90": 2.0}}
    skipped = dict(_table(ipi_halt_rtt=2), timer_sleep={"skipped": True, "why": "no TSC deadline"})
    got = threadtrace.unprobed(parts, skipped, _table(ipi_halt_rtt=3, timer_sleep=3))
    assert "thread_halt" not in got and "timer_sleep missing from the untraced boot" in got["why"]
    why = {"what": "threads", "why": "no KVM host to trace (TCG)"}
    assert threadtrace.unprobed(why, {}, {}) is why
