"""A guest timeline (timeline_records.Timeline) as what a picture shows: per CPU, the states
it was in and for how long, the instants (wakes, IPIs, sleeps), and which event answered
which (a wake and the target's noticing it, an IPI and its arrival).

States, from the events that begin them:
  run        a thread runs (run with a thread's slot)
  idle loop  on the way into an idle state: the idle thread, or a blocked thread idling in
             place (run with TL_IDLE_THREAD)
  poll       the poll state (poll)
  halt       HLT (halt)
  waking     from the idle state's end until the next event: the way back into a thread
             (idle_end with work), or into another state (an expired poll, a HLT ended by
             an interrupt that brought no work)
Before a CPU's first state event its state is inferred where the event says it (an idle_end
as the first: the CPU was in that idle state since the window opened), else `unknown`.
"""
from dataclasses import dataclass

from idlelab.timeline.records import END_HALT, END_WORK, IDLE_THREAD

STATE_KINDS = ("run", "poll", "halt", "idle_end")
INSTANT_KINDS = ("wake", "ipi_sent", "ipi_avoided", "ipi_pending", "ipi_received", "sleep")
# Instants whose arg is not another CPU: ipi_received (the sender is not recorded) and
# sleep (the sleep asked, ns: Instant.sleep_ns)
NO_TARGET = ("ipi_received", "sleep")
STATES = ("run", "idle loop", "poll", "halt", "waking", "unknown")
IDLE = ("idle loop", "poll", "halt")


@dataclass(frozen=True)
class Span:
    cpu: int
    start: int      # guest TSC
    end: int
    state: str      # one of STATES
    detail: str = ""

    @property
    def cycles(self):
        return self.end - self.start


@dataclass(frozen=True)
class Instant:
    cpu: int
    tsc: int
    kind: str       # one of INSTANT_KINDS
    target: int     # the other CPU, or -1 (NO_TARGET)
    sleep_ns: int = 0   # sleep: the sleep asked


@dataclass(frozen=True)
class Link:
    """An event on one CPU answered on another: a wake and the target noticing it (its idle
    state's end, or its thread running if it was not idle), or an IPI sent and received."""
    kind: str       # "wake" or "ipi"
    src_cpu: int
    src_tsc: int
    dst_cpu: int
    dst_tsc: int
    dst_what: str   # "idle_end", "run" or "ipi_received"


def _state_of(e):
    if e.kind == "run":
        if e.arg == IDLE_THREAD:
            return "idle loop", ""
        return "run", f"thread {e.arg}"
    if e.kind in ("poll", "halt"):
        return e.kind, ""
    what = "halt" if e.arg & END_HALT else "poll"
    return "waking", f"{what} ended" + (", work" if e.arg & END_WORK else ", no work")


def _before_first(e):
    """What the CPU was doing from the window's opening to its first state event."""
    if e.kind == "idle_end":
        return "halt" if e.arg & END_HALT else "poll", "since before the window"
    return "unknown", "before the first event"


def spans(tl, cpu):
    """[Span] of CPU `cpu` covering the window's opening to the end of its log."""
    log = tl.cpus[cpu]
    marks = [e for e in log.events if e.kind in STATE_KINDS]
    end = tl.end_of(cpu)
    out = []
    if not marks:
        return [Span(cpu, tl.t0, end, "unknown", "no state event recorded")] if end > tl.t0 \
            else []
    first = marks[0]
    if first.tsc > tl.t0:
        out.append(Span(cpu, tl.t0, first.tsc, *_before_first(first)))
    for e, nxt in zip(marks, marks[1:] + [None]):
        stop = nxt.tsc if nxt else end
        if stop > e.tsc:
            out.append(Span(cpu, e.tsc, stop, *_state_of(e)))
    return out


def instants(tl, cpu):
    return [Instant(cpu, e.tsc, e.kind, -1 if e.kind in NO_TARGET else e.arg,
                    e.arg if e.kind == "sleep" else 0)
            for e in tl.cpus[cpu].events if e.kind in INSTANT_KINDS]


def _state_at(span_list, tsc):
    for s in span_list:
        if s.start <= tsc < s.end:
            return s.state
    return None


def links(tl):
    """IPI sent -> received, and wake -> noticed pairs whose both ends were recorded. A wake is
    paired only if its target was idle or on its way into idle (poll, halt, idle loop); it
    is noticed at the first idle state's end with work (or the first thread run, if the
    idle loop saw the work before entering a state)."""
    all_spans = [spans(tl, c) for c in range(len(tl.cpus))]
    out = []
    for src in range(len(tl.cpus)):
        for i in instants(tl, src):
            if i.kind not in ("wake", "ipi_sent") or i.target == src \
                    or not 0 <= i.target < len(tl.cpus):
                continue
            dst = tl.cpus[i.target].events
            if i.kind == "ipi_sent":
                hit = next((e for e in dst if e.kind == "ipi_received" and e.tsc >= i.tsc),
                           None)
                what = "ipi_received"
            elif _state_at(all_spans[i.target], i.tsc) in IDLE:
                hit = next((e for e in dst if e.tsc >= i.tsc and (
                    (e.kind == "idle_end" and e.arg & END_WORK)
                    or (e.kind == "run" and e.arg != IDLE_THREAD))), None)
                what = hit.kind if hit else ""
            else:
                continue    # the target was busy: its thread takes the wake when it blocks
            if hit is not None:
                out.append(Link("ipi" if i.kind == "ipi_sent" else "wake", src, i.tsc,
                                i.target, hit.tsc, what))
    return out
