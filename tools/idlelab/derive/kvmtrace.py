"""KVM's halt trace events as tracefs prints them, and one window's halt-polling story told
from them: each vCPU's window changes (kvm_halt_poll_ns: grow, shrink, reset to 0) and each
halt's outcome (kvm_vcpu_wakeup: the poll caught the wake-up, or the vCPU waited).

Why both events: KVM's counters say how many polls succeeded, not which halts a window
setting turned from successful polls into misses. kvm_vcpu_halt ends a halt by growing or
shrinking the window for the next one and then emits kvm_vcpu_wakeup, so a change event
belongs to the halt whose wake-up follows it: the window a halt polled with is the one in
force before its own change, and a vCPU's window is 0 until its first change (the trace
starts before the vCPU's first halt). The wake-up says "poll" whenever the vCPU did not
sleep, polled or not: with a window of 0 that is a wake-up already pending (no poll, no
sleep). A HLT that finds an interrupt pending is not blocked at all and has no wake-up event,
so KVM's halt_exits can exceed the halts here; its halt_attempted_poll and
halt_successful_poll are the poll_hit + poll_miss and poll_hit below.

Pure: the host side (host/windowtrace.py) collects the text.
"""
import re
from typing import NamedTuple

# One event a line: the thread (its name may hold spaces and dashes), the tgid where the
# trace prints it, the CPU, the flags where printed, the stamp, the event and its text. Read
# over the whole text at once (re.M: a line is up to its \n; [^\S\n] a space that does not
# end one; tracefs ends its lines so), not line by line: the cost table's traced boot is
# ~650 000 lines, read inside the emulated nested host, where parse_trace took 37.5 s and
# takes 25.5-27.4 now (2026-12-07, with HostEvent's change below).
_LINE = re.compile(r"^(?!#)[^\S\n]*(?P<comm>.*?)-(?P<tid>\d+)[^\S\n]+"
                   r"(?:\([^\S\n]*[\d-]+\)[^\S\n]+)?\[(?P<hcpu>\d+)\][^\S\n]+"
                   r"(?:(?P<flags>[^\s\d]\S*)[^\S\n]+)?(?P<ts>\d+(?:\.\d+)?):[^\S\n]+"
                   r"(?P<event>\w+):[^\S\n]?(?P<body>.*)$", re.M)
_ENTRIES = re.compile(r"^#\s*entries-in-buffer/entries-written:\s*(\d+)/(\d+)", re.M)
WAKEUP = re.compile(r"(wait|poll) time (\d+) ns, polling (valid|invalid)")
POLL_NS = re.compile(r"vcpu (\d+): halt_poll_ns (\d+) \((grow|shrink) (\d+)\)")

# A halt's outcome, from the window it polled with and kvm_vcpu_wakeup's poll/wait.
POLL_HIT = "poll_hit"       # the wake-up came while KVM polled
POLL_MISS = "poll_miss"     # KVM polled its whole window, then the vCPU slept
NO_POLL = "no_poll"         # the window was 0: the vCPU slept at once
NO_WAIT = "no_wait"         # the window was 0 and the wake-up was there: no poll, no sleep
OUTCOMES = (POLL_HIT, POLL_MISS, NO_POLL, NO_WAIT)
# How a window change is named in the seed's snippet and counted.
GROW, SHRINK, RESET = "grow", "shrink", "reset"
MAX_ITEMS = 50_000          # per list in a record: a longer window keeps its first ones


# A tuple, not a frozen dataclass: a cost table's traced boot is ~650 000 events, parsed
# inside the emulated nested host, where the dataclass's construction took 9.6 s under
# cProfile (2026-12-07)
class HostEvent(NamedTuple):
    tid: int
    ts: float       # the trace clock's value (seconds with mono, TSC cycles with x86-tsc)
    event: str
    body: str
    comm: str = ""      # the thread's name (QEMU names its vCPU threads `CPU n/KVM`)
    cpu: int = -1       # the host CPU the event was recorded on


def parse_trace(text):
    """([HostEvent], events lost to a full buffer) from a tracefs `trace` file."""
    events = [HostEvent(int(tid), float(ts), event, body, comm.strip(), int(cpu))
              for comm, tid, cpu, _, ts, event, body in _LINE.findall(text)]
    lost = sum(int(w) - int(b) for b, w in _ENTRIES.findall(text))
    return events, lost


def window_part(text, tids, t_open_ns, t_close_ns):
    """The record's trace part from a trace stamped with the mono clock: `events`, our vCPU
    threads' (`tids` {vcpu: tid}) halt events in trace order up to the window's close, times
    from the window's opening (negative before it: the window a halt polled with is followed
    from the vCPU's first halt): [t_ns, vcpu, "change", new, old, grew (0/1)] and [t_ns, vcpu, "wakeup",
    slept (0/1), halt_ns, valid (0/1)]. Kept unjudged, so story() can be read again. `lost`
    counts events the buffer dropped; `truncated` says the list was cut at MAX_ITEMS."""
    events, lost = parse_trace(text)
    vcpu_of = {tid: v for v, tid in tids.items()}
    out = []
    for e in events:
        v = vcpu_of.get(e.tid)
        t = round(e.ts * 1e9) - t_open_ns
        if v is None or t > t_close_ns - t_open_ns:
            continue
        if e.event == "kvm_halt_poll_ns":
            m = POLL_NS.search(e.body)
            if m:
                out.append([t, v, "change", int(m.group(2)), int(m.group(4)),
                            int(m.group(3) == "grow")])
        elif e.event == "kvm_vcpu_wakeup":
            m = WAKEUP.search(e.body)
            if m:
                out.append([t, v, "wakeup", int(m.group(1) == "wait"), int(m.group(2)),
                            int(m.group(3) == "valid")])
    return {"lost": lost, "truncated": len(out) > MAX_ITEMS, "events": out[:MAX_ITEMS]}


def story(part):
    """(changes, halts) inside the window: changes [t_ns, vcpu, new, old, kind] and halts
    [t_ns, vcpu, outcome, halt_ns, window_ns, valid], each halt with the window it polled
    with (the one in force before its own change)."""
    window, after = {}, {}
    changes, halts = [], []
    for ev in part.get("events", []):
        t, v, what = ev[0], ev[1], ev[2]
        if what == "change":
            new, old, grew = ev[3], ev[4], ev[5]
            after[v] = new
            if t >= 0:
                kind = GROW if grew else (RESET if new == 0 else SHRINK)
                changes.append([t, v, new, old, kind])
            continue
        slept, ns, valid = ev[3], ev[4], ev[5]
        w = window.get(v, 0)
        window[v] = after.pop(v, w)
        if t < 0:
            continue
        outcome = (POLL_MISS if slept else POLL_HIT) if w else (NO_POLL if slept else NO_WAIT)
        halts.append([t, v, outcome, ns, w, valid])
    return changes, halts


def summary(part, vcpus, max_ns):
    """Counts over the window for the vCPUs the workload runs on: window changes by kind,
    halts by outcome, and halts by outcome split at the host's maximum window `max_ns`
    (a halt shorter than it is one a window of max_ns would have caught)."""
    vcpus = set(vcpus)
    changes, halts = story(part)
    out = {k: 0 for k in (GROW, SHRINK, RESET)}
    for c in changes:
        if c[1] in vcpus:
            out[c[4]] += 1
    for o in OUTCOMES:
        out[o] = out[f"short_{o}"] = out[f"long_{o}"] = 0
    for h in halts:
        if h[1] not in vcpus:
            continue
        out[h[2]] += 1
        out[("short_" if h[3] <= max_ns else "long_") + h[2]] += 1
    return out


def snippet(part, vcpu, n=12):
    """The first `n` window changes of one vCPU, as the seed printed them from trace-cmd
    (`t_us: kvm_halt_poll_ns: vcpu V: halt_poll_ns NEW (grow|shrink OLD)`)."""
    out = []
    for t, v, new, old, kind in story(part)[0]:
        if v != vcpu:
            continue
        verb = "grow" if kind == GROW else "shrink"
        out.append(f"{t / 1000:10.1f} us: kvm_halt_poll_ns: vcpu {v}: halt_poll_ns {new} "
                   f"({verb} {old})")
        if len(out) == n:
            break
    return out
