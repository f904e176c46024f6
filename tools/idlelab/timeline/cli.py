"""tools/timeline: a short stretch of a guest's measured window to look at, per CPU: its
states (run, poll, halt), wakes and IPIs, as trace.json (Chrome trace events: Perfetto,
chrome://tracing) and timeline.png, with KVM's own halt events beneath where the host lets
us trace them (hostoverlay.py says how the clocks are put together).

  tools/timeline --run [--knobs "..."] [--out DIR]   boot a guest and draw its timeline
  tools/timeline FILE|DIR [--out DIR]                draw one from a console already saved:
      a console text (tools/qemu-run's output), a bench raw record (raw/*.json), or a
      folder --run wrote (console.txt, and host.json + host_trace.txt for the overlay)

Exit status: 0 drawn; 1 the guest run failed (its console is kept); 2 bad input (one line).
"""
import json
import os
import signal
import sys
import time

from idlelab import usage
from idlelab.bench import workplan
from idlelab.host import hosts, qemu
from idlelab.timeline import chrometrace, hostoverlay, plot, sleeps, run as timeline_run
from idlelab.derive.records import RecordError, parse_records
from idlelab.timeline.records import TimelineError, parse

PROG = "timeline"
DEFAULT_KNOBS = "workload=pingpong duration=300ms warmup=50ms idle=haltpoll timeline=512 hz=0"
DEFAULT_EVENTS = 512
RESULTS = os.path.join(qemu.TOP, "results")
CONSOLE, HOST, HOST_TRACE = "console.txt", "host.json", "host_trace.txt"
TRACE, PNG = "trace.json", "timeline.png"


def _parser():
    ap = usage.Parser(prog=PROG, description="Draw a guest's timeline: states, wakes and IPIs "
                      "per CPU over the opening of its measured window.")
    ap.add_argument("input", nargs="?", help="a console text, a bench raw/*.json, or a folder "
                    "written by --run")
    ap.add_argument("--run", action="store_true", help="boot a guest and draw its timeline")
    ap.add_argument("--knobs", default=DEFAULT_KNOBS,
                    help=f"--run: the guest's knobs (default: {DEFAULT_KNOBS}); timeline="
                    f"{DEFAULT_EVENTS} is added if absent")
    ap.add_argument("--smp", type=usage.int_in(1, 64), default=2, help="--run: vCPUs")
    ap.add_argument("--accel", choices=hosts.ACCELS, default="auto",
                    help="--run: accelerator (auto: KVM, else the nested KVM host, else TCG)")
    ap.add_argument("--no-host", action="store_true", help="--run: no host overlay")
    ap.add_argument("--timeout", type=usage.positive_seconds, default=120,
                    help="--run: seconds before the guest is stopped")
    ap.add_argument("--out", help="folder to write into (--run: results/timeline-<time>; a "
                    "file: timeline-<name> beside it; a folder: itself)")
    return ap


def _read_console(path):
    """(console text, host dict or None, host trace text) from a file or a --run folder."""
    if os.path.isdir(path):
        console = os.path.join(path, CONSOLE)
        if not os.path.isfile(console):
            raise usage.UsageError(f"{path}: no {CONSOLE} in this folder")
        host, trace = None, ""
        if os.path.isfile(os.path.join(path, HOST)):
            with open(os.path.join(path, HOST), encoding="utf-8") as f:
                host = json.load(f)
            if os.path.isfile(os.path.join(path, HOST_TRACE)):
                with open(os.path.join(path, HOST_TRACE), encoding="utf-8") as f:
                    trace = f.read()
        with open(console, encoding="utf-8") as f:
            return f.read(), host, trace
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json") or text.lstrip().startswith("{"):
        rec = json.loads(text)
        if not isinstance(rec, dict) or not isinstance(rec.get("serial"), str):
            raise usage.UsageError(f"{path}: JSON without a \"serial\" console (not a bench "
                                   "raw record)")
        text = rec["serial"]
    return text, None, ""


def overlay_of(tl, host, trace_text):
    """The host overlay from what a --run boot kept (host.json, host_trace.txt)."""
    if host is None:
        return hostoverlay.unavailable("no host trace was taken with this console")
    if host.get("why"):
        return hostoverlay.unavailable(host["why"])
    tids = {int(k): int(v) for k, v in (host.get("tids") or {}).items()}
    if not tids:
        return hostoverlay.unavailable("the vCPU threads are not known")
    opened, closed = host.get("offsets_open"), host.get("offsets_close")
    offsets, why = None, host.get("why_offsets")
    if opened and closed and opened != closed:
        why = f"the TSC offsets changed during the window ({opened} -> {closed})"
    elif opened:
        offsets = {int(k): int(v) for k, v in opened.items()}
    elif not why:
        why = "not read at the window's opening"
    return hostoverlay.build(tl, trace_text, tids, offsets, host.get("clock"), why)


def _facts(recs):
    """A title and otherData from the console's own records."""
    last = {}
    for kind, f in recs:
        last.setdefault(kind, {}).update(f)
    cfg, idle, boot = last.get("config", {}), last.get("idle", {}), last.get("boot", {})
    res = last.get("result", {})
    accel = {"1": "KVM", "0": "TCG"}.get(boot.get("kvm"), "?")
    title = (f"workload={cfg.get('workload', '?')} idle={idle.get('policy', '?')} "
             f"governor={idle.get('governor', '?')} hz={cfg.get('hz', '?')} "
             f"pollflag={idle.get('pollflag', '?')} cpus={boot.get('cpus', '?')} {accel}")
    if "rtt_p50_ns" in res:
        title += f"; whole window: RTT p50 {int(res['rtt_p50_ns']) / 1000:.0f} µs"
    about = {"accel": accel, "knobs": cfg, "idle": idle, "result": res}
    return title, about


def _notes(tl, overlay):
    notes = [overlay.status]
    for log in tl.cpus:
        if log.full:
            notes.append(f"CPU {log.cpu}: log full ({tl.per_cpu} events) at "
                         f"{tl.us(tl.end_of(log.cpu)):.0f} µs; the window ran to "
                         f"{tl.us(tl.t_end):.0f} µs")
    if tl.per_cpu < tl.asked:
        notes.append(f"timeline={tl.asked} asked, {tl.per_cpu} events per CPU given (the "
                     "guest's pool is shared among its CPUs)")
    return notes


def render(out, tl, overlay, recs):
    """Writes trace.json and timeline.png into `out`; prints what it wrote."""
    title, about = _facts(recs)
    notes = _notes(tl, overlay)
    chrometrace.write(os.path.join(out, TRACE), tl, overlay, about)
    print(f"{PROG}: trace    {os.path.join(out, TRACE)} (open it in https://ui.perfetto.dev)")
    png = os.path.join(out, PNG)
    if plot.draw(png, tl, overlay, title, notes):
        print(f"{PROG}: picture  {png}")
    else:
        print(f"{PROG}: picture  not drawn: {sys.executable} cannot import matplotlib "
              "(install python3-matplotlib)")
    for n in notes:
        print(f"{PROG}: {n}")
    for line in sleeps.lines(tl):
        print(f"{PROG}: {line}")


def _timeline_of(text, where):
    try:
        recs = parse_records(text)
        tl = parse(recs)
    except (RecordError, TimelineError) as e:
        raise usage.UsageError(f"{where}: {e}") from None
    if tl is None:
        raise usage.UsageError(f"{where}: no `@idlelab timeline` record (boot the guest with "
                               "a workload= and timeline=N)")
    return tl, recs


def _mkdir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise usage.UsageError(f"--out {path}: {e.strerror}") from None


def draw_saved(args):
    path = args.input
    try:
        text, host, trace_text = _read_console(path)
    except FileNotFoundError:
        raise usage.UsageError(f"{path}: no such file or folder") from None
    except UnicodeDecodeError:
        raise usage.UsageError(f"{path}: not a text file") from None
    except json.JSONDecodeError as e:
        raise usage.UsageError(f"{path}: invalid JSON ({e.msg}, line {e.lineno})") from None
    except OSError as e:
        raise usage.UsageError(f"{path}: {e.strerror}") from None
    tl, recs = _timeline_of(text, path)
    out = args.out or (path if os.path.isdir(path) else os.path.join(
        os.path.dirname(path) or ".", "timeline-" + os.path.splitext(os.path.basename(path))[0]))
    _mkdir(out)
    render(out, tl, overlay_of(tl, host, trace_text), recs)
    return 0


def _knobs(text):
    knobs = text.split()
    if not any(k.startswith("workload=") for k in knobs):
        raise usage.UsageError(f"--knobs {text!r}: no workload= (the timeline records a "
                               "workload's window)")
    if not any(k.startswith("timeline=") for k in knobs):
        knobs.append(f"timeline={DEFAULT_EVENTS}")
    line = " ".join(knobs)
    try:
        refused = workplan.kernel_refuses([line])
    except workplan.KnobCheckUnavailable:
        refused = []        # the guest checks them itself at boot (BAD_KNOB)
    if refused:
        raise usage.UsageError(f"--knobs: {refused[0][1]}")
    return line


def run_and_draw(args):
    knobs = _knobs(args.knobs)
    out = args.out or os.path.join(RESULTS, "timeline-" + time.strftime("%Y%m%d-%H%M%S"))
    _mkdir(out)
    accel = qemu.resolve_accel(args.accel)
    if accel == "tcg":
        print(f"{PROG}: running under TCG: guest timing is TCG's, no host overlay")
    print(f"{PROG}: booting {args.smp} vCPUs under {accel}: {knobs}")
    if not os.path.exists(qemu.KERNEL32):
        raise usage.UsageError(f"{qemu.KERNEL32} does not exist: run `make` first")
    b = timeline_run.boot(knobs, smp=args.smp, accel=accel, timeout=args.timeout,
                          host_overlay=not args.no_host)
    with open(os.path.join(out, CONSOLE), "w", encoding="utf-8") as f:
        f.write(b.result.output)
    with open(os.path.join(out, HOST), "w", encoding="utf-8") as f:
        json.dump(b.host, f, indent=1, sort_keys=True)
        f.write("\n")
    if b.trace_text:
        with open(os.path.join(out, HOST_TRACE), "w", encoding="utf-8") as f:
            f.write(b.trace_text)
    print(f"{PROG}: console  {os.path.join(out, CONSOLE)}")
    o = b.result.outcome
    if not o.ok:
        print(f"{PROG}: the guest exited {o.name} ({o.description}); nothing drawn",
              file=sys.stderr)
        return 1
    try:
        tl, recs = _timeline_of(b.result.output, os.path.join(out, CONSOLE))
    except usage.UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    render(out, tl, overlay_of(tl, b.host, b.trace_text), recs)
    return 0


def _exit_on(signum, _frame):
    sys.exit(128 + signum)      # unwinds: the trace instance and mounts are taken away


def main(argv=None):
    ap = _parser()
    args = ap.parse_args(argv)
    if args.run == bool(args.input):
        ap.error("give a console file or folder, or --run (one of the two)")
    if args.run:
        try:
            _knobs(args.knobs)    # refused here, in one line, before a host is chosen
        except usage.UsageError as e:
            usage.fail(PROG, str(e))
        args.accel, code = hosts.place(PROG, "tools/timeline", args.accel, argv)
        if code is not None:
            return code
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on)
    try:
        return run_and_draw(args) if args.run else draw_saved(args)
    except usage.UsageError as e:
        usage.fail(PROG, str(e))
    except (KeyboardInterrupt, SystemExit) as e:
        # the with-blocks on the way here stopped QEMU and put the host's tracing back
        code = e.code if isinstance(e, SystemExit) else 128 + signal.SIGINT
        print(f"{PROG}: interrupted: nothing drawn; QEMU stopped, host tracing put back",
              file=sys.stderr)
        return code
