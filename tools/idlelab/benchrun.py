"""One bench invocation: prepares the host (recover a killed run's parameters, build the
preload library if needed), makes a new results folder, runs the work list boot by boot
(raw record written as each ends), then writes the reports and prints the summary."""
import os
import sys
import time

from . import console, costtable, derive, haltpollcap, report, resultsfolder
from .hostconfig import HostParams
from .hostload import QuietWaiter, loadavg
from .onerun import Context, execute
from .progress import Progress, say
from .workplan import TOP, plan, relpath

# The bench's exit status (the CLI's help and the README list them).
EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NO_KVM = 0, 1, 2, 3
EXIT_INTERRUPTED = 130


def run_all(args, loaded, accel):
    """Runs the work list and reports; returns the exit status."""
    params = HostParams()
    ctx = Context(accel=accel, params=params, window_hold=args.window_hold,
                  timeout_s=args.timeout)
    if accel == "kvm":
        prepare_kvm(ctx, plan(loaded))
    costs, loaded = measure_costs(accel, loaded, args.timeout)
    if costs is None:
        return EXIT_RUN_FAILED
    work = plan(loaded)
    outdir = resultsfolder.new_results_dir(args.results_dir)
    meta = invocation_meta(args, loaded, ctx, outdir)
    meta["cost_table"] = costs
    resultsfolder.write_meta(outdir, meta)
    say(f"{len(work)} boots from {', '.join(m for m, _, _ in loaded)} under {accel}; "
        f"results in {relpath(outdir)}")
    waiter = QuietWaiter(args.wait_quiet, args.quiet_below)
    waited = waiter.wait("before the first run")
    recs = []
    t0 = time.monotonic()
    try:
        run_work(work, ctx, outdir, waiter, waited, recs, args.quiet_below)
    except KeyboardInterrupt:
        say(f"interrupted after {len(recs)} of {len(work)} runs: reporting those")
        meta["interrupted"] = True
    meta["seconds"] = round(time.monotonic() - t0, 1)
    meta["quiet_wait_s"] = round(waiter.spent_s, 1)
    resultsfolder.write_meta(outdir, meta)
    written = report.write_all(outdir, recs, meta)
    print(console.summary(recs, meta, written))
    if meta.get("interrupted"):
        return EXIT_INTERRUPTED
    return EXIT_RUN_FAILED if any(r["status"] == "failed" for r in recs) else EXIT_OK


def measure_costs(accel, loaded, timeout):
    """The platform's cost table, first (costtable.py), and the matrices with their scaled
    values resolved from it. (None, loaded) when a matrix needs the table and it could not be
    measured: nothing else runs then. A matrix that does not need it runs anyway, and the
    failure is kept in meta.json."""
    say(f"measuring the platform's cost table (bench=exits iters={costtable.ITERS}, {accel})")
    try:
        costs = costtable.measure(accel, timeout=timeout)
    except costtable.CostTableError as e:
        if any(costtable.needs_table(runs) for _, _, runs in loaded):
            say(f"error: {e}; the matrices place their sweeps by it, so nothing was run")
            return None, loaded
        say(f"cost table not measured: {e}")
        return {"error": str(e)}, loaded
    say("cost table: " + ", ".join(f"{p} {e['ns_p50']:.0f} ns" for p, e in costs["prims"].items()
                                   if not e.get("skipped")))
    resolved = [(mid, path, [costtable.resolve_run(r, costs) for r in runs])
                for mid, path, runs in loaded]
    return costs, resolved


def prepare_kvm(ctx, work):
    """Puts back what a killed run left changed, says the host's parameters once (every
    record carries them too) and builds the preload library if a per-VM window needs it."""
    note = ctx.params.recover()
    if note:
        say(note)
    say(ctx.params.describe() + ("; runs that need other values are reported as not run"
                                 if ctx.params.read_only else ""))
    if any(run.vm_halt_poll_ns is not None and ctx.run_accel(run) == "kvm"
           for _, run, _ in work):
        ctx.library = haltpollcap.build()


def run_work(work, ctx, outdir, waiter, waited, recs, quiet_below):
    """The matrix loop: progress line, one boot, its raw file and result line, and a wait
    for quiet after a run that saw other load."""
    progress = Progress(work)
    for i, (mid, run, rep) in enumerate(work):
        say(progress.line(i))
        rec = execute(mid, run, rep, ctx)
        rec["quiet_wait"] = {"waited_s": round(waited[0], 2), "other_pct": waited[1],
                             "quiet": waited[2]}
        progress.done(run, rec)
        resultsfolder.write_json(resultsfolder.raw_path(outdir, i + 1, rec), rec)
        recs.append(rec)
        row = derive.summarize(rec)
        print(console.result_line(rec, row), file=sys.stderr, flush=True)
        waited = (0.0, None, None)
        if console.saw_other_load(row, quiet_below) and i + 1 < len(work):
            waited = waiter.wait("the last run saw other load")


def invocation_meta(args, loaded, ctx, outdir):
    """What the tables' headers say about this invocation and machine."""
    return {
        "results": relpath(outdir),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "quick": bool(args.quick and not args.matrix),
        "matrices": {mid: os.path.relpath(p, TOP) for mid, p, _ in loaded},
        "accel": ctx.accel, "host_cpus": ctx.ncpus,
        "host_params": ctx.params.values, "host_params_read_only": ctx.params.read_only,
        "host_params_note": ctx.params.describe(),
        "window_hold": ctx.window_hold, "loadavg_start": loadavg(),
        "kernel": os.uname().release,
    }
