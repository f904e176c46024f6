"""tools/timeline's host side on made-up input: the record format both ways, the states and
links read from the events, the Chrome trace's structure, and the host overlay's alignment
check (which must refuse offsets that do not fit)."""
import json

import pytest

from idlelab.timeline import chrometrace, hostoverlay, records as R, spans as S
from idlelab.timeline.cli import overlay_of

HZ = 2_000_000_000          # 2 cycles a ns: µs = cycles / 2000
T0 = 10_000_000
KINDS = {"r": "run", "p": "poll", "h": "halt", "e": "idle_end", "w": "wake", "i": "ipi_sent",
         "a": "ipi_avoided", "q": "ipi_pending", "x": "ipi_received"}
IDLE, HALT, WORK = R.IDLE_THREAD, R.END_HALT, R.END_WORK


def ev(us, kind, arg=0):
    return R.Event(T0 + us * 2000, kind, arg)


def made_up(full=(False, False), per_line=4):
    """One round trip of pingpong: CPU 0's ping wakes CPU 1's pong, which was halted (IPI);
    pong wakes ping back, which was polling (IPI avoided); CPU 1 begins halted."""
    cpu0 = [ev(-1, "poll"), ev(2, "idle_end", WORK), ev(3, "run", 2), ev(10, "wake", 1),
            ev(11, "ipi_sent", 1), ev(12, "run", IDLE), ev(14, "poll"),
            ev(40, "idle_end", WORK), ev(41, "run", 2)]
    cpu1 = [ev(13, "ipi_received"), ev(15, "idle_end", HALT | WORK), ev(17, "run", 1),
            ev(30, "wake", 0), ev(30, "ipi_avoided", 0), ev(32, "run", IDLE),
            ev(33, "halt")]
    return R.Timeline(tsc_hz=HZ, t0=T0, t_end=T0 + 100 * 2000, asked=16, per_cpu=16,
                      per_line=per_line, kinds=dict(KINDS),
                      cpus=[R.CpuLog(0, cpu0, full[0]), R.CpuLog(1, cpu1, full[1])])


def text_of(tl, mangle=None):
    lines = R.encode(tl)
    if mangle:
        lines = mangle(lines)
    return "noise before\n" + "\n".join(lines) + "\n@idlelab exit code=0x10 name=SUCCESS cpu=0\n"


# --- the records -----------------------------------------------------------------------------

@pytest.mark.parametrize("per_line", [1, 4, 20])
def test_encode_then_parse_gives_the_same_timeline(per_line):
    tl = made_up(full=(True, False), per_line=per_line)
    got = R.parse_text(text_of(tl))
    assert got == tl
    assert got.cpus[0].events[0].tsc < T0          # a first event stamped before the flag


def test_the_encoding_is_the_guests():
    """Lines as kernel/timeline.c prints them (letter, hex delta, .hex arg only if not 0)."""
    lines = R.encode(made_up())
    assert lines[0] == ("@idlelab timeline cpus=2 tsc_hz=2000000000 t0=10000000 t_end=10200000 "
                        "asked=16 events_per_cpu=16 per_line=4 kinds=r:run,p:poll,h:halt,"
                        "e:idle_end,w:wake,i:ipi_sent,a:ipi_avoided,q:ipi_pending,"
                        "x:ipi_received")
    assert lines[1] == "@idlelab timeline_cpu cpu=0 events=9 full=0"
    assert lines[2] == "@idlelab timeline_ev cpu=0 seq=0 ev=p-7d0,e1770.1,r7d0.2,w36b0.1"
    assert lines[4] == "@idlelab timeline_ev cpu=0 seq=2 ev=r7d0.2"


def test_no_timeline_record_is_none():
    assert R.parse_text("@idlelab exit code=0x10 name=SUCCESS cpu=0\n") is None


def _drop(prefix):
    return lambda lines: [ln for ln in lines if not ln.startswith(prefix)]


def _edit(old, new):
    return lambda lines: [ln.replace(old, new) for ln in lines]


@pytest.mark.parametrize("mangle, says", [
    (_drop("@idlelab timeline_cpu cpu=1"), "no timeline_cpu record for CPU 1"),
    (_drop("@idlelab timeline_ev cpu=0 seq=1"), "missing or repeated"),
    (_edit("events=9", "events=10"), "timeline_cpu says 10"),
    (_edit("ev=p-7d0", "ev=z-7d0"), "bad event 'z-7d0'"),
    (_edit("ev=p-7d0", "ev=p-7g0"), "bad event 'p-7g0'"),
    (_edit(" tsc_hz=2000000000", ""), "no tsc_hz="),
    (_edit("i:ipi_sent,", ""), "lacks ipi_sent"),
    (_edit("cpus=2", "cpus=1"), "but cpus=1"),
    (lambda lines: lines + lines[:1], "2 timeline records"),
])
def test_broken_records_are_refused_with_the_reason(mangle, says):
    with pytest.raises(R.TimelineError) as e:
        R.parse_text(text_of(made_up(), mangle))
    assert says in str(e.value)


def test_arg_values_come_from_the_kernel_header():
    assert (IDLE, WORK, HALT) == (0xFFFF, 1, 2)


# --- states and links ------------------------------------------------------------------------

def test_spans_cover_each_cpu_in_order():
    tl = made_up()
    for c in range(2):
        sp = S.spans(tl, c)
        assert all(a.end == b.start for a, b in zip(sp, sp[1:]))
        assert sp[-1].end == tl.t_end
    states0 = [s.state for s in S.spans(tl, 0)]
    assert states0 == ["poll", "waking", "run", "idle loop", "poll", "waking", "run"]
    first1 = S.spans(tl, 1)[0]
    # CPU 1's first state event ends a halt: it was halted since the window opened
    assert (first1.state, first1.start, first1.end) == ("halt", T0, T0 + 15 * 2000)
    assert [s.state for s in S.spans(tl, 1)][1:] == ["waking", "run", "idle loop", "halt"]


def test_a_full_log_ends_at_its_last_event():
    tl = made_up(full=(False, True))
    assert tl.end_of(1) == T0 + 33 * 2000 and tl.end_of(0) == tl.t_end
    # nothing is known after CPU 1's last event (its halt began): no span reaches past it
    last = S.spans(tl, 1)[-1]
    assert (last.state, last.start, last.end) == ("idle loop", T0 + 32 * 2000, T0 + 33 * 2000)


def test_wakes_and_ipis_are_linked_to_what_answered_them():
    got = {(ln.kind, ln.src_cpu, ln.dst_cpu, ln.dst_what, (ln.dst_tsc - T0) // 2000)
           for ln in S.links(made_up())}
    assert got == {("wake", 0, 1, "idle_end", 15), ("ipi", 0, 1, "ipi_received", 13),
                   ("wake", 1, 0, "idle_end", 40)}


def test_a_wake_of_a_busy_cpu_has_no_link():
    tl = made_up()
    # CPU 0 wakes CPU 1 again at 20 µs, while pong runs there: nothing to notice
    tl.cpus[0].events.insert(4, ev(20, "wake", 1))
    tl.cpus[0].events.sort(key=lambda e: e.tsc)
    assert not [ln for ln in S.links(tl) if ln.src_tsc == T0 + 20 * 2000]


# --- the Chrome trace ------------------------------------------------------------------------

def test_trace_json_structure():
    tl = made_up()
    doc = json.loads(json.dumps(chrometrace.build(tl)))
    evs = doc["traceEvents"]
    assert doc["displayTimeUnit"] == "ns" and doc["otherData"]["tsc_hz"] == HZ
    names = {e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"CPU 0", "CPU 1"}                   # no host tracks without an overlay
    for e in evs:
        assert {"ph", "pid"} <= set(e)
        if e["ph"] != "M":
            assert {"ts", "tid", "name"} <= set(e)
    xs = [e for e in evs if e["ph"] == "X"]
    assert all(e["dur"] > 0 for e in xs)
    run = [e for e in xs if e["name"] == "run thread 2"][0]
    assert run["ts"] == 3.0 and run["dur"] == 9.0 and run["tid"] == chrometrace.guest_tid(0)
    inst = [e for e in evs if e["ph"] == "i"]
    assert sorted(e["name"] for e in inst) == ["ipi_avoided", "ipi_received", "ipi_sent",
                                               "wake", "wake"]
    assert all(e["s"] == "t" for e in inst)
    starts = {e["id"]: e for e in evs if e["ph"] == "s"}
    ends = {e["id"]: e for e in evs if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) == 3
    for i, f in ends.items():
        assert f["bp"] == "e" and f["ts"] >= starts[i]["ts"]


# --- the host overlay ------------------------------------------------------------------------

TIDS = {0: 501, 1: 502}


def trace_line(tid, cpu, host_tsc, event, body):
    return f"       CPU {cpu}/KVM-{tid}    [001] d..1. {host_tsc}: {event}: {body}"


def host_trace(offset, lost=0):
    """vCPU 1 blocked from 13.5 to 14.5 µs (inside the guest's halt, which ends at 15 µs) and
    twice more inside its last halt; one event of another process."""
    rows = [trace_line(502, 1, T0 + 14_5 * 200 - offset, "kvm_vcpu_wakeup",
                       "wait time 1000 ns, polling valid"),
            trace_line(502, 1, T0 + 50 * 2000 - offset, "kvm_vcpu_wakeup",
                       "poll time 500 ns, polling valid"),
            trace_line(502, 1, T0 + 60 * 2000 - offset, "kvm_halt_poll_ns",
                       "vcpu 1: halt_poll_ns 20000 (grow 10000)"),
            trace_line(999, 1, T0 + 70 * 2000 - offset, "kvm_vcpu_wakeup",
                       "wait time 9 ns, polling valid")]
    head = [f"# entries-in-buffer/entries-written: {len(rows)}/{len(rows) + lost}   #P:2"]
    return "\n".join(head + rows) + "\n"


def test_host_events_are_placed_on_the_guest_clock():
    tl = made_up()
    ov = hostoverlay.build(tl, host_trace(-1234), TIDS, {0: -1234, 1: -1234})
    assert ov.aligned, ov.status
    assert "unchecked: 2 host wake-ups" in ov.status
    blocked = [s for s in ov.spans if s.state == "host: blocked"][0]
    assert (blocked.cpu, blocked.start, blocked.end) == (1, T0 + 13_5 * 200, T0 + 14_5 * 200)
    assert [s.state for s in ov.spans] == ["host: blocked", "host: polled"]
    assert [(i.name, i.detail) for i in ov.instants] == [("halt_poll_ns", "grow 10000 -> 20000 ns")]
    assert ov.counts == {"kvm_vcpu_wakeup": 2, "kvm_halt_poll_ns": 1}   # not tid 999's


def _many_wakeups(tl, offset, inside):
    """Five host wake-ups on vCPU 1, inside its last guest halt (33 µs on) or not."""
    at = [35, 40, 45, 50, 55] if inside else [18, 20, 22, 24, 26]
    return "\n".join(trace_line(502, 1, T0 + u * 2000 - offset, "kvm_vcpu_wakeup",
                                "wait time 100 ns, polling valid") for u in at)


def test_the_check_accepts_offsets_that_fit():
    tl = made_up()
    ov = hostoverlay.build(tl, _many_wakeups(tl, 77, True), TIDS, {0: 77, 1: 77})
    assert ov.aligned and "5 of 5 host wake-ups inside a guest halt" in ov.status


def test_the_check_refuses_offsets_that_do_not_fit():
    tl = made_up()
    # placed by these offsets, every host wake-up falls while the guest's thread ran
    ov = hostoverlay.build(tl, _many_wakeups(tl, 0, False), TIDS, {0: 0, 1: 0})
    assert not ov.aligned and not ov.spans
    assert ov.status.startswith("host overlay: not drawn:") and "only 0 of 5" in ov.status
    doc = chrometrace.build(tl, ov)
    assert "vCPU 1 (host)" not in json.dumps(doc)


def test_without_tsc_clock_or_offsets_nothing_is_drawn():
    tl = made_up()
    ov = hostoverlay.build(tl, host_trace(0), TIDS, {0: 0, 1: 0}, clock="local")
    assert not ov.aligned and "trace clock local" in ov.status
    ov = hostoverlay.build(tl, host_trace(0), TIDS, None, why_no_offsets="debugfs: not mounted")
    assert not ov.aligned and "no TSC offsets (debugfs: not mounted)" in ov.status


def test_a_vcpu_without_its_offset_stops_the_drawing():
    ov = hostoverlay.build(made_up(), host_trace(0), TIDS, {0: 0})
    assert not ov.aligned and "none read for vCPU 1" in ov.status


def test_lost_host_events_are_said():
    ov = hostoverlay.build(made_up(), host_trace(0, lost=7), TIDS, {0: 0, 1: 0})
    assert "7 events lost" in ov.status


def test_offsets_that_changed_during_the_window_are_not_used():
    host = {"tids": {"0": 501, "1": 502}, "clock": "x86-tsc",
            "offsets_open": {"0": 0, "1": 0}, "offsets_close": {"0": 0, "1": 5}}
    ov = overlay_of(made_up(), host, host_trace(0))
    assert not ov.aligned and "offsets changed during the window" in ov.status
    ov = overlay_of(made_up(), {"why": "tracefs: no instances"}, "")
    assert ov.status == "host overlay: not available (tracefs: no instances)"
