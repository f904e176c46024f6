"""The host's side of a guest timeline: KVM's trace events for the guest's vCPU threads
(tracefs.py), put on the guest's clock and checked against the guest's own halts.

Clocks. The trace is stamped with the host TSC (trace_clock x86-tsc); the guest stamps with
its TSC, which KVM makes host TSC + the vCPU's offset (tscoffset.py). With both, an event is
placed at host TSC + offset. Without either, or if the check below fails, the host events are
not drawn at all, and the status line says why: never a picture that is silently wrong.

The check. kvm_vcpu_wakeup fires on the vCPU thread when a halted vCPU wakes, which must lie
inside one of the guest's halts (from just before its HLT to its noticing the wake-up). Once
aligned, the share of host wake-ups that do is reported, and alignment is accepted only if it
is at least CHECK_MIN (with at least CHECK_N wake-ups to judge by; fewer: drawn, marked
unchecked).
"""
from dataclasses import dataclass, field

from idlelab.derive.kvmtrace import parse_trace
from idlelab.derive.kvmtrace import POLL_NS as _POLL_NS, WAKEUP as _WAKEUP
from idlelab.timeline.spans import Span, spans

CHECK_MIN = 0.9
CHECK_N = 5


@dataclass(frozen=True)
class HostInstant:
    cpu: int
    tsc: int        # guest TSC
    name: str
    detail: str


@dataclass
class Overlay:
    status: str                 # one line for people, beginning "host overlay: "
    aligned: bool = False
    spans: list = field(default_factory=list)       # timeline/spans.Span, guest TSC
    instants: list = field(default_factory=list)    # HostInstant
    counts: dict = field(default_factory=dict)      # event -> how many, our vCPUs only


def unavailable(reason):
    return Overlay(f"host overlay: not available ({reason})")


def _place(tl, cpu, e, offset):
    """One host event on the guest's clock: (spans, instants) it adds on CPU `cpu`."""
    at = int(e.ts) + offset
    if e.event == "kvm_vcpu_wakeup":
        m = _WAKEUP.search(e.body)
        if not m:
            return [], [HostInstant(cpu, at, e.event, e.body)]
        how, ns, valid = m.group(1), int(m.group(2)), m.group(3)
        state = "host: polled" if how == "poll" else "host: blocked"
        return [Span(cpu, at - round(tl.cycles(ns)), at, state,
                     f"kvm_vcpu_wakeup: {how} {ns} ns, polling {valid}")], []
    if e.event == "kvm_halt_poll_ns":
        m = _POLL_NS.search(e.body)
        detail = (f"{m.group(3)} {m.group(4)} -> {m.group(2)} ns" if m else e.body)
        return [], [HostInstant(cpu, at, "halt_poll_ns", detail)]
    return [], [HostInstant(cpu, at, e.event.replace("kvm_", ""), e.body)]


def check(tl, host_spans):
    """(matched, judged): host wake-ups inside the recorded part of the guest's log that fall
    inside one of that CPU's guest halts."""
    halts = {c: [s for s in spans(tl, c) if s.state == "halt"] for c in range(len(tl.cpus))}
    matched = judged = 0
    for s in host_spans:
        if not tl.t0 <= s.end <= tl.end_of(s.cpu):
            continue
        judged += 1
        matched += any(h.start <= s.end <= h.end for h in halts[s.cpu])
    return matched, judged


def build(tl, trace_text, tids, offsets=None, clock="x86-tsc", why_no_offsets=None):
    """The Overlay of a host trace on timeline `tl`. tids: {guest CPU: vCPU thread id};
    offsets: {guest CPU: TSC offset}, or None with why_no_offsets saying why."""
    events, lost = parse_trace(trace_text)
    cpu_of = {tid: cpu for cpu, tid in tids.items() if cpu < len(tl.cpus)}
    ours = [e for e in events if e.tid in cpu_of]
    counts = {}
    for e in ours:
        counts[e.event] = counts.get(e.event, 0) + 1
    seen = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no events"
    tail = f"; {lost} events lost (trace buffer full)" if lost else ""
    if clock != "x86-tsc":
        return Overlay(f"host overlay: not drawn: trace clock {clock}, not the TSC, so it "
                       f"cannot be put on the guest's clock ({seen}{tail})", counts=counts)
    missing = sorted(set(cpu_of.values()) - set(offsets or {}))
    if offsets is not None and missing:
        why_no_offsets, offsets = f"none read for vCPU {missing[0]}", None
    if offsets is None:
        return Overlay(f"host overlay: not drawn: no TSC offsets ({why_no_offsets}) ({seen}"
                       f"{tail})", counts=counts)
    ov = Overlay("", counts=counts)
    for e in ours:
        cpu = cpu_of[e.tid]
        sp, ins = _place(tl, cpu, e, offsets[cpu])
        ov.spans += [s for s in sp if s.end >= tl.t0 and s.start <= tl.end_of(cpu)]
        ov.instants += [i for i in ins if tl.t0 <= i.tsc <= tl.end_of(cpu)]
    matched, judged = check(tl, ov.spans)
    offs = ", ".join(f"vCPU {c} {o:+d}" for c, o in sorted(offsets.items()))
    how = f"host TSC + tsc-offset from debugfs ({offs})"
    if judged >= CHECK_N and matched < CHECK_MIN * judged:
        return Overlay(f"host overlay: not drawn: with {how}, only {matched} of {judged} host "
                       f"wake-ups fall inside a guest halt ({seen}{tail})", counts=counts)
    ov.aligned = True
    verdict = (f"{matched} of {judged} host wake-ups inside a guest halt" if judged >= CHECK_N
               else f"unchecked: {judged} host wake-ups to check by")
    ov.status = f"host overlay: aligned by {how}; {verdict} ({seen}{tail})"
    return ov
