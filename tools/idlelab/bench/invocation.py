"""One bench invocation, end to end, step by step (run_all): prepare the host (recover a killed
run's parameters, reclaim what a killed bench left, build the preload library if needed), make
a new results folder (marked running, `latest` pointed at it) or take up the one to resume,
measure the cost table and place the runs by it, run the work list (bench/runloop.py), then
write the reports and print the summary.

Nothing measured is lost on the way out. SIGINT, SIGTERM and SIGHUP stop the run in
progress (stopsignals.py: qemu.run kills its QEMU, kvmparams.override restores the host) and
the folder is finished from the runs completed: runs.csv, tables, meta.json "status":
"interrupted" with the signal and where it landed, exit 128 + the signal. A second signal
while the folder is finished is noted, not obeyed (only SIGKILL ends it then). After SIGKILL
the folder stays "running" with its owner gone, every finished run in raw/ and runs.csv; the
next bench says so and marks it (report/resultsdir.py)."""
import os
import signal
import tempfile
import time

from idlelab import TOP, costtable, timings
from idlelab.bench import onerun, plateau
from idlelab.bench.onerun import Context
from idlelab.bench.runloop import run_work
from idlelab.bench.workplan import plan, planned_by_matrix
from idlelab.costtable.measuring import measure_costs
from idlelab.derive import runrow, windows
from idlelab.host import haltpollcap, hosts
from idlelab.host.hostload import QuietWaiter, loadavg
from idlelab.host.kvmparams import HostParams
from idlelab.report import console, resultsdir
from idlelab.report.console import relpath, say
from idlelab.sim import simrun
from idlelab.stopsignals import Signals
from idlelab.usage import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE


def run_all(args, loaded, accel, signals=None, summary=True):
    """Runs the work list and reports; returns the exit status. summary=False leaves the
    closing summary (counts, tables, files) to the caller (tools/demo prints its own)."""
    signals = signals or Signals()
    reclaim(args.results_dir)
    ctx = Context(accel=accel, params=HostParams(), window_hold=args.window_hold,
                  timeout_s=args.timeout, side_by_side=args.side_by_side)
    try:
        resumed = resume_state(args.resume) if args.resume else None
    except resultsdir.FolderError as e:
        say(f"--resume {e}")
        return EXIT_USAGE
    work = plan(loaded)        # its length and order; the cost table only resolves values
    if resumed:
        made = [resultsdir.run_key(r) for r in resumed["recs"]]
        if made != [(mid, run.name, rep) for mid, run, rep in work[:len(made)]]:
            say(f"--resume {args.resume}: its runs are not the first of these matrices' "
                "work list (other matrices, seeds or --repeat than the bench that made it)")
            return EXIT_USAGE
    inv = Invocation(args, accel, ctx, signals, loaded, work, resumed)
    try:
        inv.open_folder()
        inv.run()
    except resultsdir.FolderError as e:
        if inv.outdir is not None:
            raise
        say(f"--results-dir {e}")
        return EXIT_USAGE
    except KeyboardInterrupt as e:
        if inv.outdir is None:
            raise
        inv.interrupted(e)
    except Exception as e:  # a bug or a host failure: the folder is finished, then it shows
        if inv.outdir is None:
            raise
        inv.stopped_by(e)
    return inv.finish(summary)


class Invocation:
    """What run_all's steps hand on: the work list, the results folder and its meta.json, the
    runs made, where the bench is (Place) and how it ends (an error to raise, an exit code)."""

    def __init__(self, args, accel, ctx, signals, loaded, work, resumed):
        self.args, self.accel, self.ctx, self.signals = args, accel, ctx, signals
        self.loaded, self.work, self.resumed = loaded, work, resumed
        self.place = Place(len(work))
        self.waiter = QuietWaiter(args.wait_quiet, args.quiet_below, say=say)
        self.outdir, self.meta, self.recs = None, {}, []
        self.error = self.code = None
        self.t0 = time.monotonic()

    def open_folder(self):
        """The results folder, new or resumed: it, its "running" meta.json, its runs.csv
        header and `latest` exist together or not at all. Then its tmp/ for the boots'
        temporary folders, where its filesystem takes their QMP sockets."""
        args, resumed = self.args, self.resumed
        with self.signals.deferred():
            if resumed:
                self.outdir, self.recs = args.resume, resumed["recs"]
                self.meta = dict({k: v for k, v in resumed["meta"].items() if k != "state"},
                                 status=resultsdir.RUNNING, owner=resultsdir.owner())
                self.meta.setdefault("resumed", []).append(
                    {"at_run": len(self.recs) + 1, "note": args.resume_note,
                     "host": hosts.describe(self.accel)})
            else:
                self.outdir = resultsdir.new_results_dir(args.results_dir)
                self.meta = invocation_meta(args, self.loaded, self.ctx, self.outdir)
            self.meta.update(runs_made=len(self.recs), runs_planned=len(self.work),
                             runs_planned_by_matrix=planned_by_matrix(self.work))
            resultsdir.write_meta(self.outdir, self.meta)
            # a row per measured window, as the run loop writes them
            resultsdir.write_csv([runrow.summarize(w) for r in self.recs
                                  for w in windows.split(r)],
                                 os.path.join(self.outdir, resultsdir.CSV_NAME))
            resultsdir.point_latest(self.outdir)
        self.place.after = len(self.recs)
        self.ctx.tmpdir = resultsdir.tmp_dir(self.outdir)
        self.ctx.trace_dir = os.path.join(self.outdir, "traces")
        if not onerun.sockets_work(self.ctx.tmpdir):
            # inside the nested host every shared folder is 9p: nothing to tell the user
            if not hosts.inside():
                say(f"{self.ctx.tmpdir}: its filesystem takes no UNIX sockets: the boots' "
                    f"temporary folders (their QMP sockets) go to {tempfile.gettempdir()}")
            self.ctx.tmpdir = None

    def run(self):
        """The cost table, the runs placed by it, then the work list; where the matrices
        cannot be placed, nothing runs and the folder says why."""
        costs = self.cost_table()
        if costs is None:
            self.meta.setdefault("error", "the cost table could not be measured, and the "
                                 "matrices place their values by it")
        else:
            costs = self.place_runs(costs)
        if costs is None:
            self.meta.update(interrupted=True, where=self.place.describe())
            self.code = EXIT_RUN_FAILED
            return
        say(f"{len(self.work)} boot{'s' if len(self.work) != 1 else ''} from "
            f"{', '.join(m for m, _, _ in self.loaded)} under "
            f"{hosts.describe(self.accel)['host']}; results in {relpath(self.outdir)}")
        waited = self.waiter.wait("before the first run")
        args = self.args
        run_work(self.work, self.ctx, self.outdir, self.waiter, waited, self.recs,
                 args.quiet_below, self.signals, self.place, self.meta, args.cooldown,
                 resume=(args.resume_note, args.resume_fail) if self.resumed else None)

    def cost_table(self):
        """The platform's cost table, first: the matrices' scaled values are resolved from it
        (a resumed folder keeps its own, so its runs go on with the values they started
        with). None where it could not be had and the matrices need it."""
        if self.resumed:
            costs = self.resumed["meta"].get("cost_table") or {}
            try:
                if "prims" in costs:
                    self.loaded = [(mid, path, [costtable.resolve_run(r, costs) for r in runs])
                                   for mid, path, runs in self.loaded]
            except costtable.CostTableError as e:   # stopped before its values were located
                say(f"--resume: {e}: the folder was stopped before its runs were placed; "
                    "start a new bench")
                self.meta["error"] = f"resumed, but its runs cannot be placed: {e}"
                costs = None
        elif self.args.no_cost_table:
            costs = {"error": "not measured (--no-cost-table)", "skipped": True}
        else:
            started = time.monotonic()
            costs, self.loaded = measure_costs(self.accel, self.loaded, self.args.timeout)
            if costs is not None and "prims" in costs:
                timings.learn(hosts.describe(self.accel)["host"], "cost_table_s",
                              time.monotonic() - started)
        return costs

    def place_runs(self, costs):
        """The table kept, the host prepared for the runs, and (a new bench) the values the
        bench locates on the host: the work list as it will run; None where a located value
        could not be had."""
        self.meta["cost_table"] = costs
        resultsdir.write_meta(self.outdir, self.meta)
        self.work = plan(self.loaded)
        if self.accel == "kvm":
            prepare_kvm(self.ctx, self.work)
        if not self.resumed:
            costs, self.loaded = locate(self.ctx, self.loaded, costs, self.outdir,
                                        self.signals, self.meta)
            self.work = plan(self.loaded)
        return costs

    def interrupted(self, e):
        """A stop signal: the runs made are reported, and meta.json says which and where."""
        self.signals.finishing()
        name = signal.Signals(getattr(e, "signum", signal.SIGINT)).name
        say(f"{name}: interrupted {self.place.describe()}, after {len(self.recs)} of "
            f"{len(self.work)} runs: reporting those")
        self.meta.update(interrupted=True, signal=name, where=self.place.describe())

    def stopped_by(self, e):
        """An error: the runs made are reported, then it is raised again (finish())."""
        self.signals.finishing()
        say(f"stopped by an error {self.place.describe()}, after {len(self.recs)} of "
            f"{len(self.work)} runs: reporting those")
        self.meta.update(interrupted=True, error=f"{type(e).__name__}: {e}",
                         where=self.place.describe())
        self.error = e

    def finish(self, summary):
        """The folder finished (its status, the reports from the runs made, the summary) and
        the exit status: 128 + a signal that stopped it, the error that did raised again."""
        meta, recs, outdir = self.meta, self.recs, self.outdir
        self.signals.finishing()
        resultsdir.remove_tmp(outdir)
        onerun.reclaim_temp_dirs(own=True)     # a neighbour's or an older bench's, outside it
        meta[resultsdir.STATUS] = resultsdir.INTERRUPTED if meta.get("interrupted") \
            else resultsdir.COMPLETE
        meta.update(runs_made=len(recs), runs_planned=len(self.work),
                    seconds=round(time.monotonic() - self.t0, 1),
                    quiet_wait_s=round(self.waiter.spent_s, 1))
        try:
            no_report = getattr(self.args, "no_report", False)
            written = resultsdir.write_all(outdir, recs, meta, csv_only=no_report,
                                           hardware=None if no_report else
                                           simrun.rows_if_built(recs))
        except Exception as e:  # a defect of the report's: the raw records stay, said in one line
            meta["report_error"] = f"{type(e).__name__}: {e}"
            resultsdir.write_meta(outdir, meta)
            say(f"the tables could not be written ({meta['report_error']}); every run is kept "
                f"in {relpath(outdir)}/raw and runs.csv: `tools/bench --report "
                f"{relpath(outdir)}` writes them again")
            return EXIT_RUN_FAILED
        resultsdir.write_meta(outdir, meta)
        if summary and not no_report:
            print(console.summary(recs, meta, written), flush=True)
        if self.error is not None:
            raise self.error
        if meta.get("signal"):
            return 128 + signal.Signals[meta["signal"]]
        if self.code is not None:
            return self.code
        return EXIT_RUN_FAILED if any(r["status"] == "failed" for r in recs) else EXIT_OK


def reclaim(results_dir):
    """What killed benches left: their temporary folders (removed) and their results
    folders (said, and marked incomplete so it is said once)."""
    n = onerun.reclaim_temp_dirs()
    if n:
        say(f"removed {n} temporary folder{'s' if n > 1 else ''} of benches that were killed")
    resultsdir.reclaim_latest_tmp(results_dir)
    for path, meta in resultsdir.find_incomplete(results_dir):
        say(resultsdir.incomplete_note(relpath(path), meta)
            + f"; `tools/bench --report {relpath(path)}` writes its tables")
        resultsdir.mark_incomplete(path, meta, f"the bench started at pid {os.getpid()}")


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


def locate(ctx, loaded, costs, outdir, signals, meta):
    """The values the matrices place their runs by that the bench locates on the host
    (bench/plateau.py), kept in the cost table's "located" part (meta.json), and the
    matrices resolved by them; (None, loaded) with meta's error where one could not be."""
    if not any(costtable.needs_located(runs) for _, _, runs in loaded):
        return costs, loaded    # (measure_costs resolved them)
    try:
        costs, loaded = plateau.locate_all(ctx, loaded, costs, outdir, signals)
    except costtable.CostTableError as e:
        say(f"error: {e}; the matrices place their runs by it, so nothing else was run")
        meta["error"] = str(e)
        costs = None
    else:
        meta["cost_table"] = costs
    resultsdir.write_meta(outdir, meta)
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
        ctx.library = haltpollcap.build()


def resume_state(outdir):
    """The folder an interrupted bench left, to go on with: its meta.json and the records of
    its runs, which must be the first runs of the work list in order (raw/NNN-...)."""
    resultsdir.check_folder(outdir)
    meta = resultsdir.read_meta(outdir)
    recs = resultsdir.read_raw(outdir)
    names = sorted(n for n in os.listdir(os.path.join(outdir, resultsdir.RAW))
                   if n.endswith(".json"))
    if [n[:3] for n in names] != [f"{i + 1:03d}" for i in range(len(names))]:
        raise resultsdir.FolderError(f"{outdir}: raw/ is not runs 1..{len(names)} in "
                                     "order: it cannot be resumed")
    return {"meta": meta, "recs": recs}


def invocation_meta(args, loaded, ctx, outdir):
    """What the tables' headers say about this invocation and machine, and that the folder
    is being written (status running, by this process) until the end rewrites it."""
    return {
        resultsdir.STATUS: resultsdir.RUNNING, "owner": resultsdir.owner(),
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
