"""One bench invocation: from matrix files to the work list (the built-in seed matrices, each
run's command line checked by the kernel's own knob parser before anything runs), then the
work: prepares the host (recover a killed run's parameters, reclaim what a killed bench
left, build the preload library if needed), makes a new results folder (marked running,
`latest` pointed at it), measures the cost table, runs the work list boot by boot (raw
record and runs.csv row written as each ends, a progress line with an ETA that learns the
real fixed cost per boot from the runs made), then writes the reports and prints the
summary.

Nothing measured is lost on the way out. SIGINT, SIGTERM and SIGHUP stop the run in
progress (qemu.run kills its QEMU, platform.override restores the host) and the folder is
finished from the runs completed: runs.csv, tables, meta.json "status": "interrupted" with
the signal and where it landed, exit 128 + the signal. A second signal while the folder is
finished is noted, not obeyed (only SIGKILL ends it then). After SIGKILL the folder stays
"running" with its owner gone, every finished run in raw/ and runs.csv; the next bench says
so and marks it (report/output.py)."""
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

from idlelab import timings
from idlelab.bench import matrix, onerun, plateau
from idlelab.bench.onerun import Context, execute
from idlelab.derive import records, runrow, threadtrace
from idlelab.host import hosts, platform, qemu
from idlelab.host.platform import HostParams
from idlelab.host.samplers import QuietWaiter, loadavg
from idlelab.report import console, output
from idlelab.report.output import append_csv, say, write_csv
from idlelab.sim import simrun
from idlelab.usage import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE
from idlelab.wakepath import insncount


# The bench's exit status: usage.py's; interrupted: 128 + signal.
EXIT_INTERRUPTED = 128 + signal.SIGINT
CAUGHT = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal, raised where the bench was. A KeyboardInterrupt, so everything that
    already cleans up after Ctrl-C (qemu.run, platform.override) does so for all three."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Signals:
    """While active (a with block in the main thread): the first of SIGINT, SIGTERM, SIGHUP
    raises Interrupted unless inside deferred(), where it waits for the block's end; any
    later one is only noted, so finishing the folder cannot itself be interrupted."""

    def __init__(self):
        self.pending = None     # the first signal received
        self.fired = False      # Interrupted has been raised
        self.deferring = 0
        self._old = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self._on_signal) for s in CAUGHT}
        return self

    def __exit__(self, *exc):
        for s, handler in self._old.items():
            signal.signal(s, handler)
        self._old = {}

    def _on_signal(self, signum, _frame):
        if self.pending is None:
            self.pending = signum
        if not self.deferring and not self.fired:
            self.fired = True
            raise Interrupted(signum)

    @contextlib.contextmanager
    def deferred(self):
        """A signal inside the block takes effect at its end (a raw file and its place in
        the records are written together or not at all)."""
        self.deferring += 1
        try:
            yield
        finally:
            self.deferring -= 1
        if not self.deferring and self.pending is not None and not self.fired:
            self.fired = True
            raise Interrupted(self.pending)

    def finishing(self):
        """From here on signals are only noted: the folder is being finished."""
        self.deferring += 1


def reclaim(results_dir):
    """What killed benches left: their temporary folders (removed) and their results
    folders (said, and marked incomplete so it is said once)."""
    n = onerun.reclaim_temp_dirs()
    if n:
        say(f"removed {n} temporary folder{'s' if n > 1 else ''} of benches that were killed")
    output.reclaim_latest_tmp(results_dir)
    for path, meta in output.find_incomplete(results_dir):
        say(output.incomplete_note(relpath(path), meta)
            + f"; `tools/bench --report {relpath(path)}` writes its tables")
        output.mark_incomplete(path, meta, f"the bench started at pid {os.getpid()}")


class Place:
    """Where the bench is, for meta.json when a signal or an error stops it."""

    def __init__(self, planned):
        self.planned = planned
        self.run = None          # (index from 1, name) of the run under way
        self.after = 0           # runs finished

    def describe(self):
        if self.run is not None:
            return f"in run {self.run[0]} of {self.planned} ({self.run[1]})"
        if self.after == 0:
            return "before the first run"
        if self.after >= self.planned:
            return "after the last run"
        return f"between runs {self.after} and {self.after + 1} of {self.planned}"


def run_all(args, loaded, accel, signals=None, summary=True):
    """Runs the work list and reports; returns the exit status. summary=False leaves the
    closing summary (counts, tables, files) to the caller (tools/demo prints its own)."""
    signals = signals or Signals()
    reclaim(args.results_dir)
    params = HostParams()
    ctx = Context(accel=accel, params=params, window_hold=args.window_hold,
                  timeout_s=args.timeout, side_by_side=args.side_by_side)
    try:
        resumed = resume_state(args.resume) if args.resume else None
    except output.FolderError as e:
        say(f"--resume {e}")
        return EXIT_USAGE
    work = plan(loaded)        # its length and order; the cost table only resolves values
    if resumed:
        made = [output.run_key(r) for r in resumed["recs"]]
        if made != [(mid, run.name, rep) for mid, run, rep in work[:len(made)]]:
            say(f"--resume {args.resume}: its runs are not the first of these matrices' "
                "work list (other matrices, seeds or --repeat than the bench that made it)")
            return EXIT_USAGE
    place = Place(len(work))
    waiter = QuietWaiter(args.wait_quiet, args.quiet_below, say=say)
    outdir, meta, recs, error, code = None, {}, [], None, None
    t0 = time.monotonic()
    try:
        # The folder, its "running" meta.json, its runs.csv header and `latest` exist
        # together or not at all.
        with signals.deferred():
            if resumed:
                outdir, recs = args.resume, resumed["recs"]
                meta = dict({k: v for k, v in resumed["meta"].items() if k != "state"},
                            status=output.RUNNING, owner=output.owner())
                meta.setdefault("resumed", []).append(
                    {"at_run": len(recs) + 1, "note": args.resume_note,
                     "host": hosts.describe(accel)})
            else:
                outdir = output.new_results_dir(args.results_dir)
                meta = invocation_meta(args, loaded, ctx, outdir)
            meta.update(runs_made=len(recs), runs_planned=len(work),
                        runs_planned_by_matrix=planned_by_matrix(work))
            output.write_meta(outdir, meta)
            write_csv([runrow.summarize(r) for r in recs],
                      os.path.join(outdir, output.CSV_NAME))
            output.point_latest(outdir)
        place.after = len(recs)
        ctx.tmpdir = output.tmp_dir(outdir)
        if not onerun.sockets_work(ctx.tmpdir):
            # inside the nested host every shared folder is 9p: nothing to tell the user
            if not hosts.inside():
                say(f"{ctx.tmpdir}: its filesystem takes no UNIX sockets: the boots' "
                    f"temporary folders (their QMP sockets) go to {tempfile.gettempdir()}")
            ctx.tmpdir = None
        # First the platform's cost table: the matrices' scaled values are resolved from it
        # (a resumed folder keeps its own, so its runs go on with the values they started
        # with).
        if resumed:
            costs = resumed["meta"].get("cost_table") or {}
            try:
                if "prims" in costs:
                    loaded = [(mid, path, [records.resolve_run(r, costs) for r in runs])
                              for mid, path, runs in loaded]
            except records.CostTableError as e:   # stopped before its values were located
                say(f"--resume: {e}: the folder was stopped before its runs were placed; "
                    "start a new bench")
                meta["error"] = f"resumed, but its runs cannot be placed: {e}"
                costs = None
        elif args.no_cost_table:
            costs = {"error": "not measured (--no-cost-table)", "skipped": True}
        else:
            started = time.monotonic()
            costs, loaded = measure_costs(accel, loaded, args.timeout)
            if costs is not None and "prims" in costs:
                timings.learn(hosts.describe(accel)["host"], "cost_table_s",
                              time.monotonic() - started)
        if costs is None:
            meta.setdefault("error", "the cost table could not be measured, and the "
                            "matrices place their values by it")
            meta.update(interrupted=True, where=place.describe())
            code = EXIT_RUN_FAILED
        else:
            meta["cost_table"] = costs
            output.write_meta(outdir, meta)
            work = plan(loaded)
            if accel == "kvm":
                prepare_kvm(ctx, work)
            if not resumed:
                costs, loaded = locate(ctx, loaded, costs, outdir, signals, meta)
                work = plan(loaded)
        if costs is None:
            meta.update(interrupted=True, where=place.describe())
            code = EXIT_RUN_FAILED
        else:
            say(f"{len(work)} boot{'s' if len(work) != 1 else ''} from "
                f"{', '.join(m for m, _, _ in loaded)} under {hosts.describe(accel)['host']}; "
                f"results in {relpath(outdir)}")
            waited = waiter.wait("before the first run")
            run_work(work, ctx, outdir, waiter, waited, recs, args.quiet_below, signals,
                     place, meta, args.cooldown,
                     resume=(args.resume_note, args.resume_fail) if resumed else None)
    except output.FolderError as e:
        if outdir is not None:
            raise
        say(f"--results-dir {e}")
        return EXIT_USAGE
    except KeyboardInterrupt as e:
        if outdir is None:
            raise
        signals.finishing()
        name = signal.Signals(getattr(e, "signum", signal.SIGINT)).name
        say(f"{name}: interrupted {place.describe()}, after {len(recs)} of {len(work)} "
            "runs: reporting those")
        meta.update(interrupted=True, signal=name, where=place.describe())
    except Exception as e:  # a bug or a host failure: the folder is finished, then it shows
        if outdir is None:
            raise
        signals.finishing()
        say(f"stopped by an error {place.describe()}, after {len(recs)} of {len(work)} runs: "
            "reporting those")
        meta.update(interrupted=True, error=f"{type(e).__name__}: {e}", where=place.describe())
        error = e
    signals.finishing()
    output.remove_tmp(outdir)
    onerun.reclaim_temp_dirs(own=True)     # a neighbour's or an older bench's, outside it
    meta[output.STATUS] = output.INTERRUPTED if meta.get("interrupted") \
        else output.COMPLETE
    meta.update(runs_made=len(recs), runs_planned=len(work),
                seconds=round(time.monotonic() - t0, 1), quiet_wait_s=round(waiter.spent_s, 1))
    try:
        written = output.write_all(outdir, recs, meta, hardware=simrun.rows_if_built(recs))
    except Exception as e:  # a defect of the report's: the raw records stay, said in one line
        meta["report_error"] = f"{type(e).__name__}: {e}"
        output.write_meta(outdir, meta)
        say(f"the tables could not be written ({meta['report_error']}); every run is kept in "
            f"{relpath(outdir)}/raw and runs.csv: `tools/bench --report {relpath(outdir)}` "
            "writes them again")
        return EXIT_RUN_FAILED
    output.write_meta(outdir, meta)
    if summary:
        print(output.summary(recs, meta, written), flush=True)
    if error is not None:
        raise error
    if meta.get("signal"):
        return 128 + signal.Signals[meta["signal"]]
    if code is not None:
        return code
    return EXIT_RUN_FAILED if any(r["status"] == "failed" for r in recs) else EXIT_OK


def planned_by_matrix(work):
    """{matrix id: boots planned}, for the tables of a folder cut short."""
    out = {}
    for mid, _, _ in work:
        out[mid] = out.get(mid, 0) + 1
    return out


def measure_traced(accel, timeout):
    """platform.measure(); on KVM also a second boot traced on the host, its vCPU threads'
    halts split by the host's scheduler in "threads" (host/costtrace.py: the parts or why not),
    scaled to the untraced boot's speed (threadtrace.unprobed()), and that boot's own table
    kept in "traced_boot". The primitives are the untraced boot's: the runs are not traced,
    and the trace slows every exit (by a third on the nested host). Both boots run with the
    kvm parameters of platform.cost_boot_params(), kept in "host_params"."""
    with platform.cost_boot_params(accel) as params:
        costs = _measure_traced(accel, timeout)
    if params is not None:
        costs["host_params"] = params
    return costs


def _measure_traced(accel, timeout):
    costs = platform.measure(accel, timeout=timeout)
    if qemu.resolve_accel(accel) != "kvm":
        return costs
    from idlelab.host.costtrace import ThreadTrace    # KVM only: a TCG bench never loads it

    try:
        with ThreadTrace("kvm") as trace:
            if trace.why is not None:           # no tracefs: a second boot would split nothing
                costs["threads"] = trace.part()
                return costs
            traced = platform.measure(accel, timeout=timeout, on_start=trace.find_threads)
            parts = trace.part()
    except records.CostTableError as e:
        costs["threads"] = {"what": "threads", "why": f"the traced boot: {e}"}
        return costs
    costs["threads"] = threadtrace.unprobed(parts, costs["prims"], traced["prims"])
    costs["traced_boot"] = dict(traced, threads=parts)
    return costs


def measure_costs(accel, loaded, timeout):
    """The platform's cost table, first (derive/records.py), and the matrices with their scaled
    values resolved from it. (None, loaded) when a matrix needs the table and it could not be
    measured: nothing else runs then. A matrix that does not need it runs anyway, and the
    failure is kept in meta.json."""
    say(f"measuring the platform's cost table (bench=exits iters={records.ITERS}, {accel})")
    try:
        costs = measure_traced(accel, timeout)
    except records.CostTableError as e:
        if any(records.needs_table(runs) for _, _, runs in loaded):
            say(f"error: {e}; the matrices place their sweeps by it, so nothing was run")
            return None, loaded
        say(f"cost table not measured: {e}")
        return {"error": str(e)}, loaded
    say("cost table: " + ", ".join(f"{p} {e['ns_p50']:.0f} ns" for p, e in costs["prims"].items()
                                   if not e.get("skipped")))
    costs["path_insns"] = insncount.path_insns()
    if "traced_boot" in costs:
        # after the table's own parts and path_insns: the simulator's scan (tools/sim/costs.c)
        # ends where it begins
        costs["traced_boot"] = costs.pop("traced_boot")
    path = costs["path_insns"]
    say("wake path of this kernel, instructions per round trip under TCG "
        f"({insncount.PATH_KNOBS}): " + (f"not counted: {path['error']}" if "error" in path else
                                         ", ".join(f"{p} {path[p]:.0f}"
                                                   for p, _, _ in insncount.PHASES)))
    if any(records.needs_located(runs) for _, _, runs in loaded):
        # resolved once the located values are (locate()); a primitive the table lacks is
        # said now, not after the locating boots
        ahead = dict(costs, located=records.placeholder()["located"])
        try:
            for _, _, runs in loaded:
                for r in runs:
                    records.resolve_run(r, ahead)
        except records.CostTableError as e:
            say(f"error: {e}; the matrices place their sweeps by it, so nothing was run")
            return None, loaded
        return costs, loaded
    resolved = [(mid, path, [records.resolve_run(r, costs) for r in runs])
                for mid, path, runs in loaded]
    return costs, resolved


def locate(ctx, loaded, costs, outdir, signals, meta):
    """The values the matrices place their runs by that the bench locates on the host
    (bench/plateau.py), kept in the cost table's "located" part (meta.json), and the
    matrices resolved by them; (None, loaded) with meta's error where one could not be."""
    if not any(records.needs_located(runs) for _, _, runs in loaded):
        return costs, loaded    # (measure_costs resolved them)
    try:
        costs, loaded = plateau.locate_all(ctx, loaded, costs, outdir, signals)
    except records.CostTableError as e:
        say(f"error: {e}; the matrices place their runs by it, so nothing else was run")
        meta["error"] = str(e)
        costs = None
    else:
        meta["cost_table"] = costs
    output.write_meta(outdir, meta)
    return costs, loaded


def prepare_kvm(ctx, work):
    """Puts back what a killed run left changed, says the host's parameters once (every
    record carries them too) and builds the preload library if a per-VM window needs it."""
    note = ctx.params.recover()
    if note:
        say(note)
    # outside the nested host the host line (hosts.host_line) has said the parameters
    said = [ctx.params.describe()] if hosts.inside() else []
    if ctx.params.read_only:
        said.append("runs that need other kvm parameters than these are reported as not run")
    if said:
        say("; ".join(said))
    if any(run.vm_halt_poll_ns is not None and ctx.run_accel(run) == "kvm"
           for _, run, _ in work):
        ctx.library = platform.build()


def run_work(work, ctx, outdir, waiter, waited, recs, quiet_below, signals, place, meta,
             cooldown=0, resume=None):
    """The matrix loop: progress line, one boot, its raw file, its runs.csv row, the runs
    made in meta.json and the result line, and a wait for quiet after a run that saw other
    load. Resuming (recs holds the runs made), the loop starts after them; the first run it
    makes carries the resume note (`retried`), or with resume_fail is recorded as failed
    with that note instead of being run."""
    progress = Progress(work, hosts.describe(ctx.accel)["host"])
    start = len(recs)
    csv_path = os.path.join(outdir, output.CSV_NAME)
    for i, (mid, run, rep) in enumerate(work):
        if i < start:
            continue
        if cooldown and i > start:
            say(f"cooling down {cooldown:g} s before run {i + 1}")
            time.sleep(cooldown)
        say(progress.line(i))
        place.run = (i + 1, run.name + (f" #{rep}" if run.repeat > 1 else ""))
        first_resumed = resume is not None and i == start
        if first_resumed and resume[1]:
            rec = ctx.base_record(mid, run, rep)
            rec.update(status="failed", reason=resume[0])
        else:
            rec = execute(mid, run, rep, ctx)
        if first_resumed and resume[0]:
            rec["retried"] = resume[0]
        rec["quiet_wait"] = {"waited_s": round(waited[0], 2), "other_pct": waited[1],
                             "quiet": waited[2]}
        progress.done(run, rec)
        row = runrow.summarize(rec)
        # A run is in raw/, runs.csv and meta.json's count together, or in none of them.
        with signals.deferred():
            output.write_json(output.raw_path(outdir, i + 1, rec), rec)
            append_csv(row, csv_path)
            recs.append(rec)
            meta["runs_made"] = len(recs)
            output.write_meta(outdir, meta)
            place.run, place.after = None, i + 1
        print(output.result_line(rec, row), file=sys.stderr, flush=True)
        if ctx.side_by_side:
            print("\n".join(console.vcpu_table(rec)), file=sys.stderr, flush=True)
        waited = (0.0, None, None)
        if output.saw_other_load(row, quiet_below) and i + 1 < len(work):
            waited = waiter.wait("the last run saw other load")


def resume_state(outdir):
    """The folder an interrupted bench left, to go on with: its meta.json and the records of
    its runs, which must be the first runs of the work list in order (raw/NNN-...)."""
    output.check_folder(outdir)
    meta = output.read_meta(outdir)
    recs = output.read_raw(outdir)
    names = sorted(n for n in os.listdir(os.path.join(outdir, output.RAW))
                   if n.endswith(".json"))
    if [n[:3] for n in names] != [f"{i + 1:03d}" for i in range(len(names))]:
        raise output.FolderError(f"{outdir}: raw/ is not runs 1..{len(names)} in "
                                        "order: it cannot be resumed")
    return {"meta": meta, "recs": recs}


def invocation_meta(args, loaded, ctx, outdir):
    """What the tables' headers say about this invocation and machine, and that the folder
    is being written (status running, by this process) until the end rewrites it."""
    return {
        output.STATUS: output.RUNNING, "owner": output.owner(),
        "results": relpath(outdir),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "quick": bool(args.quick and not args.matrix),
        "matrices": {mid: os.path.relpath(p, TOP) for mid, p, _ in loaded},
        "accel": ctx.accel, "host": hosts.describe(ctx.accel), "host_cpus": ctx.ncpus,
        "host_params": ctx.params.values, "host_params_read_only": ctx.params.read_only,
        "host_params_note": ctx.params.describe(),
        "window_hold": ctx.window_hold, "loadavg_start": loadavg(),
        "kernel": os.uname().release,
    }


# --- The work plan: from matrix files to the work list ------------------------------------

TOP = qemu.TOP
MATRIX_DIR = os.path.join(TOP, "tools", "matrices")
QUICK_DIR = os.path.join(MATRIX_DIR, "quick")
SEEDS = ("000", "002", "003", "004")
RUN_OVERHEAD_S = 1.0     # boot + table printing + exit here, before any run is measured
# The kernel's knobs_parse() on the host (tools/knobdoc.c), built by tests/knobdoc.mk.
KNOBDOC = os.path.join(TOP, "build", "host", "knobdoc")
KNOBDOC_MK = os.path.join(TOP, "tests", "knobdoc.mk")


class KnobCheckUnavailable(RuntimeError):
    """build/host/knobdoc could not be built or run, so values were not checked."""


def builtin_matrices(quick=False, seeds=SEEDS):
    """Paths of the built-in seed matrices (the reduced set with quick)."""
    base = QUICK_DIR if quick else MATRIX_DIR
    return [os.path.join(base, f"seed{s}.txt") for s in seeds]


def matrix_id(path):
    """A matrix's id is its file name without .txt: `seed003` picks the seed 003 tables."""
    return os.path.splitext(os.path.basename(path))[0]


def load_matrices(paths):
    """[(matrix id, path, [Run])], every guest knob checked against the kernel's table."""
    knobs = matrix.guest_knob_names()
    return [(matrix_id(p), p, matrix.load(p, guest_knobs=knobs)) for p in paths]


def check_cmdlines(loaded, window_hold=matrix.WINDOW_HOLD):
    """Raises matrix.MatrixError naming the file, line and run of the first command line the
    guest kernel would refuse at boot (EXIT_BAD_KNOB): the full line each run boots with,
    values and the knobs the bench adds included. The kernel's parser decides (knobdoc
    --check-cmdline), so the harness holds no second definition of a valid value."""
    if any(records.misplaced_located(rs) for _, _, rs in loaded):
        plateau.check(loaded)
    # A Linux guest's line is Linux's: its program refuses a bad value of an idlelab knob it
    # reads at boot (BAD_KNOB, with the same parser's message), Linux ignores what it lacks.
    runs = [run for _, _, rs in loaded for run in rs if run.guest_os == "idlelab"]
    # A value in the cost table's terms (timer+300us) becomes a time only once the table is
    # measured; any table gives a time of the same syntax, so a placeholder checks it.
    placeholder = records.placeholder()
    refused = kernel_refuses([matrix.guest_cmdline(records.resolve_run(r, placeholder),
                                                   window_hold) for r in runs])
    if refused:
        (i, msg), more = refused[0], len(refused) - 1
        also = f" (and {more} more run{'s' if more > 1 else ''} refused)" if more else ""
        # the kernel names the knob it refused: the line that set it (a defaults line too)
        knob = re.match(r"knob '([^=']+)", msg)
        where = matrix.where_set(runs[i], f"guest.{knob.group(1)}") if knob else runs[i].where
        raise matrix.MatrixError(f"{where}: run {runs[i].name!r}: the guest would "
                                 f"refuse its command line: {msg}{also}")


def kernel_refuses(cmdlines):
    """[(index, the kernel's one-line error)] for each command line it would refuse."""
    built = subprocess.run(["make", "--no-print-directory", "-s", "-C", TOP, "-f", KNOBDOC_MK,
                            os.path.relpath(KNOBDOC, TOP)],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        last = (built.stderr or built.stdout).strip().splitlines()[-1:] or ["?"]
        raise KnobCheckUnavailable(f"building {relpath(KNOBDOC)} failed: {last[0]}")
    res = subprocess.run([KNOBDOC, "--check-cmdline", "-"], input="".join(
        c + "\n" for c in cmdlines), capture_output=True, text=True, timeout=60)
    if res.returncode not in (0, 1):
        raise KnobCheckUnavailable(f"{relpath(KNOBDOC)} --check-cmdline failed: "
                                   f"{res.stderr.strip()}")
    out = []
    for line in res.stdout.splitlines():
        num, _, msg = line.partition(": ")
        out.append((int(num) - 1, msg))
    return out


def plan(loaded):
    """The work list: one (matrix id, Run, repeat index) per boot. One pass over the
    matrices, in matrix order, per repeat: this machine's speed drifts over minutes, and
    repeats made back to back would put one configuration's medians in a slower stretch
    than the next one's; spread over the whole bench, the drift falls on all alike."""
    most = max((run.repeat for _, _, runs in loaded for run in runs), default=0)
    return [(mid, run, i) for i in range(1, most + 1) for mid, _, runs in loaded
            for run in runs if i <= run.repeat]


def estimate_s(run, boot_s=RUN_OVERHEAD_S):
    """Expected wall time of one boot, for the ETA: fixed cost + warm-up + window."""
    return timings.run_s(run, boot_s, matrix.parse_time)


def relpath(path):
    """A path as the tables show it: relative to the tree when inside it."""
    return os.path.relpath(path, TOP) if path.startswith(TOP) else path


# --- The progress line --------------------------------------------------------------------

class Progress:
    """Which run, how many left, and the time the rest should take."""

    def __init__(self, work, host=None):
        self.work, self.host = work, host
        self.started = time.monotonic()
        self.overheads = []
        # before this bench's first boot, what the benches before it measured on this host
        self.prior_s = timings.costs(host)[0]["boot_s"] if host else RUN_OVERHEAD_S

    def eta_s(self, index):
        overhead = (sum(self.overheads) / len(self.overheads)) if self.overheads \
            else self.prior_s
        return sum(estimate_s(run) - RUN_OVERHEAD_S + overhead
                   for _, run, _ in self.work[index:])

    def line(self, index):
        mid, run, rep = self.work[index]
        left = len(self.work) - index - 1
        eta = self.eta_s(index)
        rep_txt = f" #{rep}/{run.repeat}" if run.repeat > 1 else ""
        return (f"[{index + 1:>2}/{len(self.work)}] {mid} {run.name}{rep_txt} "
                f"({run.workload}, {run.settings['duration']}) | {left} left, "
                f"ETA {int(eta // 60)}:{int(eta % 60):02d}")

    def done(self, run, rec):
        """Learns the boot's fixed cost: its wall time minus warm-up and window."""
        q = rec.get("qemu")
        if q:
            warm = matrix.parse_time(run.guest.get("warmup", "100ms"))
            self.overheads.append(max(0.0, q["seconds"] - (warm + run.duration_ns) / 1e9))
            if self.host and rec.get("status") == "ok":
                timings.learn(self.host, "boot_s", self.overheads[-1])
