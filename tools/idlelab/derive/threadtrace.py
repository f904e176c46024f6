"""A vCPU thread's halts as the host's scheduler saw them: which part of a halt-and-wake the
thread spends on a host CPU (charged to it) and which part it waits off CPU, from one trace
of the cost table's boot (costtable/tracedboot.py). The simulator prices a halt by these parts
(tools/sim/costs/here.txt: halt_exit, ipi_latency, wake_latency, wake_entry), and the host's
CPU time follows only from the right split: a wake the thread spends running costs the host
as much as polling would, one spent waiting costs nothing.

A halt that slept, traced event by event; the waker's events are another vCPU thread's:

    target: kvm_exit (hlt) -> out (asleep) . . . . . . sched_wakeup -> in -> kvm_entry
    waker:                 kvm_exit (ICR) -> kvm_apic_ipi
            |- thread_halt -|              |-kick-|------ thread_wake ------|-- entry --|

thread_halt is KVM's halt handling up to the sleep (charged), thread_kick the waker's exit
up to its kick of the halted vCPU (the waker's, part of its IPI send), thread_wake from the
kick to the target running again (its wake-up crossing to its host CPU and its wait there:
not charged), thread_entry from running again to the guest (charged). These four are taken
from halts an IPI woke (a kvm_apic_ipi to the vCPU's APIC ID, which is its index in idlelab
and in Linux guests); those a timer woke (no kick, and the LAPIC hrtimer the thread armed
expired inside the halt; KVM's timer on the thread's own CPU) have TIMER_PARTS:
thread_halt_timer, thread_wake_timer (from sched_wakeup: no kick), thread_entry_timer, and
thread_timer_late, from the expiry of the LAPIC timer the thread armed (hrtimer_start of
apic_timer_fn, on the trace's clock) to its wake, where it expired inside the halt: how late
KVM's software timer wakes a halted vCPU. The two kinds differ (a cost table boot on the nested
host, 2026-12-02: the way back to the guest 35 us after an IPI, 71 after a timer, whose expiry
KVM handles on the way in), and the simulator charges a halt by its wake's kind. Only halts
with no host poll count (the window in force was 0, from kvm_halt_poll_ns; a poll's time
would land in thread_halt), and only halts whose thread went to sleep, not one preempted on
the way (prev_state R). A wake that finds nothing for the guest and sleeps again (a rewake)
is charged too, while the guest still halts: per ns asleep, rewake_ppm (the simulator's
block_charge_ppm). The trace clock prints microseconds, so each part is known to 1 us.

Pure: the text comes from tracefs.
"""
import math
import re
from typing import NamedTuple, Optional

from idlelab.derive import kvmtrace

EVENTS = ("kvm/kvm_exit", "kvm/kvm_entry", "kvm/kvm_halt_poll_ns", "kvm/kvm_apic_ipi",
          "sched/sched_switch", "sched/sched_wakeup", "timer/hrtimer_start")
PARTS = ("thread_halt", "thread_kick", "thread_wake", "thread_entry")      # halts an IPI woke
TIMER_PARTS = ("thread_halt_timer", "thread_wake_timer", "thread_entry_timer",   # the others
               "thread_timer_late", "thread_timer_slept")
# A timer's wake after a long sleep is slower on the nested host (2026-12-03, three boots:
# expiry to the guest 145-161 us after a ~0.4 ms sleep, 254-266 after the idle CPU's ~3.4 ms
# ones), so the
# timer-woken halts are split at this sleep: TIMER_PARTS from the shorter, the same with
# LONG_SUFFIX from the longer, each with its median sleep (thread_timer_slept) for the
# simulator to price a halt between the two by how long it slept.
LONG_SLEEP_NS = 1_000_000
LONG_SUFFIX = "_long"
# The trace slows what it times: each traced event costs the CPU it fires on, on the nested
# host microseconds of emulated kernel, and bench=exits ran 1.3-1.4x slower in a traced boot
# than in an untraced one of the same host boot (cpuid 38 -> 51 us, ipi_halt_rtt 230 -> 323,
# timer_sleep 254 -> 310; 2026-12-03). The runs these parts price are not traced, so the cost
# table comes from an untraced boot and each kind of wake's parts are scaled by its own
# guest-timed path's ratio, untraced over traced, from the two boots (unprobed()): the trace
# says how a halt splits, the untraced boot how long the whole takes.
PROBE_BASIS = {"ipi": "ipi_halt_rtt", "timer": "timer_sleep"}
VCPU_COMM = re.compile(r"^CPU (\d+)/KVM$")    # QEMU's vCPU threads with debug-threads=on
_REASON = re.compile(r"\breason (\S+)")
_RIP = re.compile(r"\brip (0x[0-9a-f]+)")
# the exit KVM takes when the interrupt window it asked for opens (SVM's VINTR; VMX's name)
WINDOW_EXITS = ("vintr", "interrupt_window")
_SWITCH = re.compile(r"prev_comm=.*? prev_pid=(\d+) .*?prev_state=(\S+) ==> "
                     r"next_comm=.*? next_pid=(\d+)")
_NEXT_COMM = re.compile(r"next_comm=(.*?) next_pid=")
_WAKEUP = re.compile(r"\bpid=(\d+)\b")
_TARGET_CPU = re.compile(r"\btarget_cpu=(\d+)")
_CPUS = re.compile(r"#P:(\d+)")            # the trace header's CPU count
_IPI = re.compile(r"^dst ([0-9a-f]+) vec \d+ \(Fixed\|physical\|")
# KVM's software LAPIC timer (no VMX preemption timer: SVM, or nested), armed by the vCPU
# thread when the guest writes its deadline; `expires` is on CLOCK_MONOTONIC, the trace's clock
_APIC_TIMER = re.compile(r"\bfunction=apic_timer_fn\b.*?\bexpires=(\d+)")


def _vcpu_tids(events, tids=None):
    """{tid: vcpu} of the threads that took VM exits and carry QEMU's vCPU name (only those
    of `tids` where given: one VM's)."""
    out, vcpu = {}, {}          # vcpu: each name matched once (a trace has a few names)
    for e in events:
        if e.event == "kvm_exit" and (tids is None or e.tid in tids):
            if e.comm not in vcpu:
                m = VCPU_COMM.match(e.comm)
                vcpu[e.comm] = int(m.group(1)) if m else None
            if vcpu[e.comm] is not None:
                out[e.tid] = vcpu[e.comm]
    return out


class Halt(NamedTuple):
    vcpu: int
    thread_halt: int               # ns, kvm_exit to asleep
    thread_kick: Optional[int]     # the waker's kvm_exit to its kick (None: no IPI woke it)
    thread_wake: Optional[int]     # the kick to switched in (None: no IPI woke it)
    thread_entry: int              # switched in to kvm_entry
    woken: int                     # the (last) sched_wakeup to switched in
    timer_late: Optional[int]      # KVM's LAPIC timer: its expiry to the wake (None: unknown)
    timer_slept: Optional[int]     # the HLT's exit to that expiry (None: unknown)
    asleep: int                    # asleep to the last switch in, rewakes included
    rewake: int                    # ns on a CPU in rewakes
    rewakes: int                   # wakes that went back to sleep without entering


class _Open:
    """One halt of one thread being followed."""

    def __init__(self, t_exit):
        self.phase, self.t_exit = "exited", t_exit
        self.t_out = self.t_in = self.t_woken = self.rewake = self.rewakes = 0
        self.kick = None               # (t_kick, the waker's part) of the last kick
        self.timer_late = self.timer_slept = None


def halts(events, tids=None, span=None):
    """[Halt] of every halt that slept without a host poll, in trace order. A thread woken
    that sleeps again without entering (KVM found nothing for it: a spurious wake-up) is
    still in the same halt: its time on a CPU then is `rewake`, and the wake that counts is
    the last one. `tids`: the vCPU threads of one VM (None: every thread QEMU named);
    `span`: (from, to) in the trace clock's ns, the halts whose exit lies in it (a run's
    window)."""
    vcpu_of = _vcpu_tids(events, tids)
    tid_of = {v: tid for tid, v in vcpu_of.items()}
    window = {tid: 0 for tid in vcpu_of}
    last_exit = {}
    expires = {}        # tid -> the expiry of the LAPIC timer it armed last (ns)
    state = {}          # tid -> _Open
    out = []
    for e in events:
        ts = round(e.ts * 1e9)
        if e.event == "kvm_exit" and e.tid in vcpu_of:
            last_exit[e.tid] = ts
            m = _REASON.search(e.body)
            if m and m.group(1).lower() == "hlt" and window[e.tid] == 0:
                state[e.tid] = _Open(ts)
            else:
                state.pop(e.tid, None)
        elif e.event == "hrtimer_start" and e.tid in vcpu_of:
            m = _APIC_TIMER.search(e.body)
            if m:
                expires[e.tid] = int(m.group(1))
        elif e.event == "kvm_halt_poll_ns" and e.tid in vcpu_of:
            m = kvmtrace.POLL_NS.search(e.body)
            if m:
                window[e.tid] = int(m.group(2))      # the next halt's window
        elif e.event == "kvm_apic_ipi" and e.tid in last_exit:
            m = _IPI.match(e.body)
            st = state.get(tid_of.get(int(m.group(1), 16))) if m else None
            # (a kick can come while the target is still on its way to sleep: KVM's last
            # check passed, the switch not yet made; the wake then follows at once)
            if st and st.phase in ("exited", "asleep"):
                st.kick = (ts, ts - last_exit[e.tid])
        elif e.event == "sched_switch":
            m = _SWITCH.search(e.body)
            if not m:
                continue
            prev, prev_state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
            st = state.get(prev)
            if st and st.phase in ("exited", "in"):
                if not prev_state.startswith(("S", "D")):
                    del state[prev]        # preempted, not asleep: not a clean halt
                elif st.phase == "exited":
                    st.phase, st.t_out = "asleep", ts
                else:                      # woken, but back to sleep without entering
                    st.phase, st.kick = "asleep", None
                    st.rewake, st.rewakes = st.rewake + ts - st.t_in, st.rewakes + 1
            st = state.get(nxt)
            if st and st.phase == "woken":
                st.phase, st.t_in = "in", ts
        elif e.event == "sched_wakeup":
            m = _WAKEUP.search(e.body)
            tid = int(m.group(1)) if m else None
            st = state.get(tid)
            if st and st.phase == "asleep":
                st.phase, st.t_woken = "woken", ts
                if st.t_exit <= expires.get(tid, -1) <= ts:
                    st.timer_late = ts - expires[tid]
                    st.timer_slept = expires[tid] - st.t_exit
                else:
                    st.timer_late = st.timer_slept = None
        elif e.event == "kvm_entry" and e.tid in vcpu_of:
            st = state.pop(e.tid, None)
            if st and st.phase == "in" and (span is None
                                            or span[0] <= st.t_exit <= span[1]):
                kick = st.kick
                out.append(Halt(vcpu_of[e.tid], st.t_out - st.t_exit,
                                kick[1] if kick else None, st.t_in - kick[0] if kick else None,
                                ts - st.t_in, st.t_in - st.t_woken,
                                st.timer_late if kick is None else None,
                                st.timer_slept if kick is None else None, st.t_in - st.t_out,
                                st.rewake, st.rewakes))
    return out


class Preemption(NamedTuple):
    vcpu: int
    t_out: int                     # ns: switched out runnable (prev_state R)
    off: int                       # ns until it ran again
    by: str                        # the task switched in in its place


class ShadowBreak(NamedTuple):
    vcpu: int
    t_exit: int                    # ns: the HLT's exit
    slept: Optional[int]           # ns: that exit to the thread's next kvm_entry (None: the
                                   # trace has none: it ended first, or lost the entry)


def shadow_breaks(events, tids=None, span=None):
    """[ShadowBreak] of every interrupt KVM injected on a HLT instruction: an interrupt-window
    exit at the rip of the same thread's next HLT exit. A guest that sleeps in `sti; hlt`
    (idlelab's idle loop, Linux's) gives a correct host no such window: STI's interrupt
    shadow covers the HLT, whose exit comes first and finds the interrupt pending, so the
    halt ends at once. Where the shadow is dropped across an exit (seen on the nested host:
    the emulated SVM under QEMU's TCG), the window opens on the HLT, the handler runs before
    it, and the HLT then sleeps with its wake already taken until some other interrupt
    comes: a lost wake-up, the host's. `span`: the breaks whose HLT exit lies in it.
    None where the trace has no exit with a rip to judge by (unknown, not none)."""
    vcpu_of = _vcpu_tids(events, tids)
    lo, hi = span if span else (-math.inf, math.inf)
    window_rip, asleep, out, judged = {}, {}, [], False
    for e in events:
        if e.tid not in vcpu_of or e.event not in ("kvm_entry", "kvm_exit"):
            continue
        ts = round(e.ts * 1e9)
        i = asleep.pop(e.tid, None)      # the break's HLT ends at its thread's next entry
        if i is not None and e.event == "kvm_entry":
            out[i] = out[i]._replace(slept=ts - out[i].t_exit)
        if e.event != "kvm_exit":
            continue
        reason, rip = _REASON.search(e.body), _RIP.search(e.body)
        if not (reason and rip):
            continue
        judged = True
        reason = reason.group(1).lower()
        if reason in WINDOW_EXITS:
            window_rip[e.tid] = rip.group(1)
        elif reason == "hlt":
            if window_rip.pop(e.tid, None) == rip.group(1) and lo <= ts <= hi:
                asleep[e.tid] = len(out)
                out.append(ShadowBreak(vcpu_of[e.tid], ts, None))
    return out if judged else None


class Contention(NamedTuple):
    preempted: list                # [Preemption]
    woken_beside: dict             # {vcpu: tasks woken onto its CPU while it ran there}
    on_cpu: dict                   # {vcpu: ns on a CPU}
    vcpu_wakes: int                # vCPU threads woken after another one's IPI kicked them
    vcpu_wakes_beside: int         # ... onto the CPU that waker ran on (behind it)
    other_runs: list               # ns: each stretch a CPU ran tasks other than the vCPUs
    other_span: int                # ns the other_runs were looked for over
    cpus: int                      # host CPUs the trace saw


def contention(events, tids=None, span=None):
    """The host's other tasks against the vCPU threads, inside `span` (the whole trace where
    None): each switch-out of a thread still runnable (another task took its CPU: a
    preemption, not a sleep) with the time until it ran again; the tasks woken onto a CPU
    while a vCPU thread ran there (sched_wakeup's target_cpu: what ends a KVM poll, whose
    loop stops once single_task_running() fails, and what may preempt it); each thread's
    time on a CPU."""
    vcpu_of = _vcpu_tids(events, tids)
    tid_of = {v: tid for tid, v in vcpu_of.items()}
    lo, hi = span if span else (-math.inf, math.inf)
    d_lo, d_hi = span if span else _guest_span(events, vcpu_of)
    t_in, out_at, current, kick_cpu = {}, {}, {}, {}
    other_since, other_runs, seen_cpu = {}, [], set()
    on_cpu = {v: 0 for v in vcpu_of.values()}
    beside = {v: 0 for v in vcpu_of.values()}
    found, kicked, kicked_beside = [], 0, 0
    for e in events:
        ts = round(e.ts * 1e9)
        if e.event == "sched_wakeup":
            m, t = _WAKEUP.search(e.body), _TARGET_CPU.search(e.body)
            if not (m and t and lo <= ts <= hi):
                continue
            woken, target = int(m.group(1)), int(t.group(1))
            running = current.get(target)
            if running in vcpu_of and woken != running:
                beside[vcpu_of[running]] += 1
            # the wake of a vCPU thread an IPI kicked (sched_wakeup may be recorded on the
            # woken thread's CPU, so the waker's CPU is the kick's): did it land on the
            # waker's CPU, behind it, rather than on a CPU of its own?
            if woken in kick_cpu:
                kicked += 1
                kicked_beside += target == kick_cpu.pop(woken)
            continue
        if e.event == "kvm_apic_ipi" and e.tid in vcpu_of:
            m = _IPI.match(e.body)
            woken = tid_of.get(int(m.group(1), 16)) if m else None
            if woken is not None and woken != e.tid and woken not in current.values():
                kick_cpu[woken] = e.cpu   # off its CPU: asleep, or on its way there
            continue
        if e.event != "sched_switch":
            continue
        m = _SWITCH.search(e.body)
        if not m:
            continue
        prev, prev_state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
        current[e.cpu] = nxt
        # a stretch of other tasks on this CPU: from the switch to the first of them to the
        # switch back to idle or a vCPU thread (one task after another is one stretch); one
        # running when the trace began, from the span's start
        if e.cpu not in seen_cpu and prev != 0 and prev not in vcpu_of:
            other_since[e.cpu] = d_lo
        seen_cpu.add(e.cpu)
        if nxt != 0 and nxt not in vcpu_of:
            other_since.setdefault(e.cpu, ts)
        elif e.cpu in other_since:
            start, end = max(other_since.pop(e.cpu), d_lo), min(ts, d_hi)
            if end > start:
                other_runs.append(end - start)
        kick_cpu.pop(nxt, None)        # running: a kick after this one wakes nothing
        if prev in vcpu_of:
            if prev in t_in:
                on_cpu[vcpu_of[prev]] += max(0, min(ts, hi) - max(t_in.pop(prev), lo))
            if prev_state.startswith("R"):
                out_at[prev] = (ts, _NEXT_COMM.search(e.body).group(1))
        if nxt in vcpu_of:
            t_in[nxt] = ts
            if nxt in out_at:
                t_out, by = out_at.pop(nxt)
                if lo <= t_out <= hi:
                    found.append(Preemption(vcpu_of[nxt], t_out, ts - t_out, by))
    for start in other_since.values():     # still running when the trace ended
        if d_hi > max(start, d_lo):
            other_runs.append(d_hi - max(start, d_lo))
    cpus = 1 + max((e.cpu for e in events), default=0)
    return Contention(found, beside, on_cpu, kicked, kicked_beside, other_runs,
                      max(0, d_hi - d_lo), cpus)


def _guest_span(events, vcpu_of):
    """(first, last) ns of the vCPU threads' exits: the whole trace but QEMU's start and end,
    whose own work is no other task's demand while the guest runs."""
    stamps = [round(e.ts * 1e9) for e in events if e.event == "kvm_exit" and e.tid in vcpu_of]
    return (min(stamps), max(stamps)) if stamps else (0, 0)


def rank_pct(sorted_values, q):
    """The q-quantile (0 < q <= 1) of sorted values by rank: the ceil(q * n)-th smallest."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def _part(values):
    """A part as the summary keeps it: {"ns_p50", "ns_p90", "ns_p99", "n"} of ns values (not
    empty). The p99 is the tail the simulator draws beyond the p90 (a wake's slowest 10 % on
    the nested host reach 2-10 times further than a shifted exponential through the p50 and
    the p90 puts them: docs/notebook/2026-12-07-the-way-into-idle.md)."""
    ordered = sorted(values)
    return {"ns_p50": float(rank_pct(ordered, 0.5)), "ns_p90": float(rank_pct(ordered, 0.9)),
            "ns_p99": float(rank_pct(ordered, 0.99)), "n": len(ordered)}


def summary(text, tids=None, span=None, demand=True):
    """{"halts": n, "lost": events the buffer dropped, "vcpus": n, PART: {"ns_p50", "ns_p90",
    "n"} for each of PARTS (halts an IPI woke) and TIMER_PARTS (the others), "rewakes": n,
    "rewake_ppm": ns on a CPU in rewakes per ns asleep x 1e6, "thread_preempt" (as a part),
    "preempted_by": {comm: ms}, "on_cpu_ms", "preempt_per_s" (per second on a CPU),
    "preempted_ms", "woken_beside_per_s" (tasks woken onto a vCPU thread's CPU while it ran
    there, per second on a CPU), "vcpu_wakes" (vCPU threads another one woke) and
    "vcpu_wake_beside_ppm" (of those, put on the waker's own CPU, x 1e6), "thread_other_run"
    (as a part: each stretch a host CPU ran other tasks, in the span or while the guest ran),
    "other_per_s" (such stretches a second, all CPUs) and "host_cpus", "shadow_breaks"
    (interrupts injected on a HLT: shadow_breaks(); missing where no exit had a rip) and
    "shadow_break_slept" (as a part: how long those HLTs slept, of those whose entry the trace
    holds)} from a trace's text (halts() says what `tids` and `span` keep); a
    part is missing where no halt counted; the other tasks' demand only where `demand` (a
    trace that followed the vCPU threads alone does not have the other tasks' switches)."""
    events, lost = kvmtrace.parse_trace(text)
    found = halts(events, tids, span)
    out = {"halts": len(found), "lost": lost, "vcpus": len(_vcpu_tids(events, tids))}
    kicked = [h for h in found if h.thread_kick is not None]
    # a timer's: its LAPIC timer expired inside the halt (an IPI the trace did not pair is not)
    timed = [h for h in found if h.thread_kick is None and h.timer_late is not None]
    short = [h for h in timed if h.timer_slept < LONG_SLEEP_NS]
    long = [h for h in timed if h.timer_slept >= LONG_SLEEP_NS]
    fields = ("thread_halt", "woken", "thread_entry", "timer_late", "timer_slept")
    columns = [(p, p, kicked) for p in PARTS] + [
        (part + suffix, field, among) for suffix, among in (("", short), (LONG_SUFFIX, long))
        for part, field in zip(TIMER_PARTS, fields)]
    for part, field, among in columns:
        values = [v for v in (getattr(h, field) for h in among) if v is not None]
        if values:
            out[part] = _part(values)
    asleep = sum(h.asleep for h in found)
    out["rewakes"] = sum(h.rewakes for h in found)
    if asleep:
        out["rewake_ppm"] = round(sum(h.rewake for h in found) * 1e6 / asleep, 1)
    c = contention(events, tids, span)
    taken, on_cpu = c.preempted, c.on_cpu
    if taken:
        out["thread_preempt"] = _part(p.off for p in taken)
        by = {}
        for p in taken:
            by[p.by] = by.get(p.by, 0) + p.off
        out["preempted_by"] = {c: round(ns / 1e6, 2) for c, ns in
                               sorted(by.items(), key=lambda kv: -kv[1])[:6]}
    if sum(on_cpu.values()):
        out["on_cpu_ms"] = round(sum(on_cpu.values()) / 1e6, 2)
        out["preempt_per_s"] = round(len(taken) * 1e9 / sum(on_cpu.values()), 1)
        out["preempted_ms"] = round(sum(p.off for p in taken) / 1e6, 2)
        out["woken_beside_per_s"] = round(sum(c.woken_beside.values()) * 1e9
                                          / sum(on_cpu.values()), 1)
    if demand and c.other_span and c.other_runs:
        # the other tasks' demand for a CPU, whatever the vCPU threads did: the simulator
        # lets each stretch take an idle CPU where one is, and a vCPU thread's where none is
        out["thread_other_run"] = _part(c.other_runs)
        out["other_per_s"] = round(len(c.other_runs) * 1e9 / c.other_span, 1)
        cpus = _CPUS.search(text)
        out["host_cpus"] = int(cpus.group(1)) if cpus else c.cpus
    if c.vcpu_wakes:
        out["vcpu_wakes"] = c.vcpu_wakes
        out["vcpu_wake_beside_ppm"] = round(c.vcpu_wakes_beside * 1e6 / c.vcpu_wakes, 1)
    broken = shadow_breaks(events, tids, span)
    if broken is not None:
        out["shadow_breaks"] = len(broken)
        slept = [b.slept for b in broken if b.slept is not None]
        if slept:
            out["shadow_break_slept"] = _part(slept)
    return out


def unprobed(parts, prims, traced_prims):
    """summary()'s parts of a traced boot scaled to an untraced one (PROBE_BASIS): the IPI-woken
    halts' PARTS by ipi_halt_rtt's ratio of medians (untraced over traced), the timer-woken
    ones' TIMER_PARTS of both classes by timer_sleep's, p50, p90 and p99 alike; how long a halt
    slept, the preemptions and the counts as traced. The ratios are kept in "probe". A summary
    that is a reason stays one; a basis either boot lacks makes the parts one too (parts the
    trace slowed by a third would price every wake that much too dear)."""
    if "why" in parts:
        return parts
    scale = {}
    for kind, prim in PROBE_BASIS.items():
        fast, slow = ((t.get(prim) or {}).get("ns_p50") for t in (prims, traced_prims))
        if not fast or not slow:
            return {"what": parts.get("what", "threads"),
                    "why": f"the trace's cost could not be measured: {prim} missing from the "
                           f"{'untraced' if not fast else 'traced'} boot"}
        scale[kind] = fast / slow
    timed = [p for p in TIMER_PARTS if p != "thread_timer_slept"]
    kinds = [(p, "ipi") for p in PARTS] + [(p + suffix, "timer") for p in timed
                                           for suffix in ("", LONG_SUFFIX)]
    out = dict(parts)
    for name, kind in kinds:
        if name in parts:
            out[name] = dict(parts[name], **{k: parts[name][k] * scale[kind]
                                             for k in ("ns_p50", "ns_p90", "ns_p99")
                                             if k in parts[name]})
    out["probe"] = dict(scale, basis=dict(PROBE_BASIS))
    return out
