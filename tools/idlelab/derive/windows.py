"""A boot of several measured windows (windows= given) split into one record per window, each
shaped as a one-window boot's record, so every figure of a window is derived by the same code
as a boot's (derive/runrow.summarize). Pure.

The guest prints a window's lines in one stretch (kernel/workloads/workload.c): the
`@idlelab settings window=K` and `@idlelab idle` records of the settings it runs with (when the
host sent any), its open and close markers, then its cpu, result and wakepath records. A
window's console is the boot's lines before the first marker (boot, config, idle), with its
own idle record in place of the boot's, then its stretch, then the exit record."""
from idlelab.derive.records import RecordError, parse_line

MARKER = "@idlelab window "


def _kind(line):
    try:
        parsed = parse_line(line)
    except RecordError:
        return None, {}
    return parsed if parsed else (None, {})


def stretches(serial):
    """(preamble lines, {window: its lines}, exit lines) of a boot's console."""
    pre, by_window, tail = [], {}, []
    current = None
    for line in serial.splitlines():
        kind, fields = _kind(line)
        if kind == "exit":
            tail.append(line)
            current = "tail"
            continue
        if current == "tail":
            tail.append(line)
            continue
        if kind == "window" and fields.get("state") == "set":
            continue                       # before window 1's gap: not any window's line
        start = (kind == "settings" or (kind == "window" and fields.get("state") == "open"))
        if start and "window" in fields:
            k = int(fields["window"])
            if k != current:
                current = k
                by_window.setdefault(k, [])
        if current is None:
            pre.append(line)
        else:
            by_window[current].append(line)
    return pre, by_window, tail


def window_serial(pre, lines, tail):
    """One window's console: the preamble with the window's idle record (if it has one)
    in place of the boot's, its own lines but that one, and the exit record."""
    own_idle = [ln for ln in lines if _kind(ln)[0] == "idle"]
    body = [ln for ln in lines if _kind(ln)[0] != "idle"]
    if own_idle:
        pre = [own_idle[-1] if _kind(ln)[0] == "idle" else ln for ln in pre]
    return "\n".join(pre + body + tail) + "\n"


_HOST_KEYS = ("halt_poll_ns", "host_grow", "host_grow_start", "host_shrink", "pin",
              "neighbour")


def window_cmdline(cmdline, guest_line):
    """The command line one window ran with, as a boot of one window would have had it:
    the boot's, windows= dropped, the window's own settings in place of the boot's."""
    mine = dict(t.split("=", 1) for t in guest_line.split())
    out = []
    for tok in cmdline.split():
        key = tok.partition("=")[0]
        if key == "windows" or key in mine:
            continue
        out.append(tok)
    return " ".join(out + [f"{k}={v}" for k, v in mine.items()])


def window_trace(trace, ws, w):
    """A boot's trace part (times from its first window's opening) as one window's: times
    from this window's opening, nothing after its close. What came before stays: a window's
    first halts polled with the window KVM had reached by then (derive/kvmtrace.py)."""
    first, mine = ws[0].get("mono_ns"), w.get("mono_ns")
    if not first or not mine:
        return dict(trace, events=[], why="the window's edges were not both sampled")
    shift, length = mine[0] - first[0], mine[1] - mine[0]
    events = [[e[0] - shift] + list(e[1:]) for e in trace["events"] if e[0] - shift <= length]
    return dict(trace, events=events)


def _not_made(rec, m):
    """The record of a setting a boot did not measure (m: its arm, name, text and why)."""
    sub = {k: v for k, v in rec.items() if k not in ("windows", "per_vcpu", "serial", "host",
                                                     "load", "not_run_arms")}
    sub.update(name=m["name"] or f"{rec['name']}.{m['arm']}", status="not run",
               reason=m["reason"], config=m.get("config") or rec.get("config"),
               boot_window={"boot": rec.get("repeat"), "run": rec.get("name"), "window": None,
                            "round": None, "arm": m["arm"]})
    sub["settings"] = _settings(rec, m.get("text"))
    if m.get("host_params"):
        hp = dict(rec.get("host_params") or {})
        hp["wanted"] = dict(hp.get("wanted") or {}, **m["host_params"])
        sub["host_params"] = hp
        if "halt_poll_ns" in m["host_params"] and rec["halt_poll"]["scope"] == "global":
            sub["halt_poll"] = dict(rec["halt_poll"], ns=m["host_params"]["halt_poll_ns"])
    return sub


def _settings(rec, text):
    """The record's settings with an arm's own matrix values in place."""
    settings = dict(rec.get("settings") or {})
    for k, _, v in (t.partition("=") for t in (text or "").split()):
        settings[k if k in settings or "." in k or k in _HOST_KEYS else f"guest.{k}"] = v
    return settings


def split(rec):
    """[record] per window of a multi-window boot record (onerun.boot's `windows`); [rec]
    for any other. Each is named after its arm (`NAME.A`), its repeat is the boot's, and it
    keeps `boot_window` (which window of which boot, and the arm) for pairing."""
    windows = rec.get("windows")
    plan = rec.get("plan") or {}
    if not windows and not plan.get("cells"):
        return [rec]
    # the settings this boot could not have (a read-only kvm parameter), or all of them
    # when it was not made: a record each, as the run it would have been
    missing = list(rec.get("not_run_arms") or ())
    if not windows:
        told = {m["arm"] for m in missing}
        missing += [{"arm": label, "name": name, "text": plan["arms"][label],
                     "reason": rec.get("reason")} for label, name in plan["cells"].items()
                    if label not in told]
    out = [_not_made(rec, m) for m in missing]
    if not windows:
        return out
    pre, by_window, tail = stretches(rec.get("serial") or "")
    for w in windows:
        k = w["window"]
        sub = {key: v for key, v in rec.items() if key not in ("windows", "per_vcpu")}
        lines = by_window.get(k)
        sub.update(name=w.get("name") or f"{rec['name']}.{w['arm']}",
                   config=w.get("config") or (w["arm"] if not w.get("name")
                                              else rec.get("config")),
                   host=w["host"], load=w["load"],
                   serial=window_serial(pre, lines or [], tail),
                   boot_window={"boot": rec.get("repeat"), "run": rec.get("name"),
                                "window": k,
                                "round": w.get("round"), "arm": w["arm"],
                                "windows": len(windows), "guest": w["guest"],
                                "host_params": w["host_params"],
                                "vm_halt_poll_ns": w["vm_halt_poll_ns"]})
        if rec.get("trace") and "events" in rec["trace"]:
            sub["trace"] = window_trace(rec["trace"], windows, w)
        if w["guest"]:
            sub["guest_knobs"] = dict(rec.get("guest_knobs") or {},
                                      **dict(t.split("=", 1) for t in w["guest"].split()))
        if rec.get("cmdline"):
            sub["cmdline"] = window_cmdline(rec["cmdline"], w["guest"])
        if w.get("text"):       # the arm's own matrix values, as the run's settings say them
            sub["settings"] = _settings(rec, w["text"])
        if w["vm_halt_poll_ns"] is not None:
            sub["halt_poll"] = dict(rec["halt_poll"], ns=w["vm_halt_poll_ns"])
        if "pin" in w:                       # within=pin: the window's own pinning
            sub["pin"] = w["pin"]
        if "neighbour" in w:                 # within=neighbour: the window's own, or none
            sub["neighbour"] = w["neighbour"]
            if w["neighbour"] is None:
                sub["settings"] = {k: v for k, v in (sub.get("settings") or {}).items()
                                   if k != "neighbour"}
        if "halt_poll_ns" in w["host_params"] and rec["halt_poll"]["scope"] == "global":
            sub["halt_poll"] = dict(rec["halt_poll"], ns=w["host_params"]["halt_poll_ns"])
        if w["host_params"]:
            hp = dict(rec.get("host_params") or {})
            hp["values"] = dict(hp.get("values") or {}, **w["host_params"])
            hp["wanted"] = dict(hp.get("wanted") or {}, **w["host_params"])
            sub["host_params"] = hp
        if sub.get("status") == "ok" and lines is None:
            sub.update(status="failed", reason=f"window {k} printed no records")
        elif sub.get("status") == "ok" and "delta" not in w["host"]:
            sub.update(status="failed", reason=f"the host did not sample window {k}")
        out.append(sub)
    return out
