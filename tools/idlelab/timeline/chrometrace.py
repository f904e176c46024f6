"""A guest timeline (and the host's overlay, when aligned) as Chrome trace event JSON, which
Perfetto (ui.perfetto.dev) and chrome://tracing open: one track per CPU with its states as
complete ("X") events, wakes and IPIs as instant ("i") events, and flow arrows from a wake to
the target's noticing it and from an IPI sent to its arrival; one track "vCPU N (host)" per
CPU under it for KVM's events. Times are µs since the window opened, from the guest TSC."""
import json

from idlelab.timeline.spans import instants, links, spans

PID = 1


def guest_tid(cpu):
    return 2 * cpu + 1


def host_tid(cpu):
    return 2 * cpu + 2


def _us(tl, tsc):
    return round(tl.us(tsc), 3)


def _meta(name, tid, args):
    return {"name": name, "ph": "M", "pid": PID, "tid": tid, "args": args}


def _tracks(tl, overlay):
    out = [{"name": "process_name", "ph": "M", "pid": PID, "args": {"name": "idlelab guest"}}]
    for c in range(len(tl.cpus)):
        out.append(_meta("thread_name", guest_tid(c), {"name": f"CPU {c}"}))
        out.append(_meta("thread_sort_index", guest_tid(c), {"sort_index": guest_tid(c)}))
        if overlay is not None and overlay.aligned:
            out.append(_meta("thread_name", host_tid(c), {"name": f"vCPU {c} (host)"}))
            out.append(_meta("thread_sort_index", host_tid(c), {"sort_index": host_tid(c)}))
    return out


def _span(tl, s, tid, cat):
    args = {"cycles": s.cycles}
    if s.detail:
        args["detail"] = s.detail
    name = s.state if s.state != "run" or not s.detail else f"run {s.detail}"
    return {"name": name, "cat": cat, "ph": "X", "pid": PID, "tid": tid,
            "ts": _us(tl, s.start), "dur": round(s.cycles * 1e6 / tl.tsc_hz, 3), "args": args}


def _instant(tl, i):
    args = {"target_cpu": i.target} if i.target >= 0 else {}
    if i.kind == "sleep":
        args["sleep_ns"] = i.sleep_ns
    cat = i.kind if i.kind in ("wake", "sleep") else "ipi"
    return {"name": i.kind, "cat": cat, "ph": "i", "s": "t",
            "pid": PID, "tid": guest_tid(i.cpu), "ts": _us(tl, i.tsc), "args": args}


def _flows(tl):
    out = []
    for n, ln in enumerate(links(tl), 1):
        name = "wake -> notice" if ln.kind == "wake" else "IPI"
        out.append({"name": name, "cat": ln.kind, "ph": "s", "id": n, "pid": PID,
                    "tid": guest_tid(ln.src_cpu), "ts": _us(tl, ln.src_tsc)})
        out.append({"name": name, "cat": ln.kind, "ph": "f", "bp": "e", "id": n, "pid": PID,
                    "tid": guest_tid(ln.dst_cpu), "ts": _us(tl, ln.dst_tsc),
                    "args": {"reached": ln.dst_what}})
    return out


def build(tl, overlay=None, about=None):
    """The trace as a JSON-ready dict. `about`: extra facts for otherData (the run's knobs)."""
    events = _tracks(tl, overlay)
    for c in range(len(tl.cpus)):
        events += [_span(tl, s, guest_tid(c), "state") for s in spans(tl, c)]
        events += [_instant(tl, i) for i in instants(tl, c)]
    events += _flows(tl)
    if overlay is not None and overlay.aligned:
        events += [_span(tl, s, host_tid(s.cpu), "host") for s in overlay.spans]
        events += [{"name": i.name, "cat": "host", "ph": "i", "s": "t", "pid": PID,
                    "tid": host_tid(i.cpu), "ts": _us(tl, i.tsc), "args": {"detail": i.detail}}
                   for i in overlay.instants]
    other = {"tsc_hz": tl.tsc_hz, "t0_tsc": tl.t0, "t_end_tsc": tl.t_end,
             "events_per_cpu": tl.per_cpu, "asked": tl.asked,
             "full": [log.full for log in tl.cpus],
             "host_overlay": overlay.status if overlay is not None else "host overlay: none"}
    other.update(about or {})
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def write(path, tl, overlay=None, about=None):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(build(tl, overlay, about), f, indent=None, separators=(",", ":"))
        f.write("\n")
