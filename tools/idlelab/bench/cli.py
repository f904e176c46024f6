"""`tools/bench`: argument parsing, --list, --report, the accelerator choice, and handing
the work to bench/invocation. Exit status: EXIT_OK all runs made or reported not run,
EXIT_RUN_FAILED a run failed, EXIT_USAGE bad arguments, matrix or folder (one line naming
it, checked before anything runs), EXIT_NO_KVM KVM required but /dev/kvm is not usable,
128 + signal when SIGINT, SIGTERM or SIGHUP stopped the runs (the folder is still finished)."""
import argparse
import dataclasses
import os
import signal
import sys

from idlelab import TOP, costtable, timings, usage
from idlelab.bench import ab, matrix, matrixvalues, windowplan
from idlelab.bench.invocation import run_all
from idlelab.bench.workplan import (KnobCheckUnavailable, SEEDS, builtin_matrices, check_cmdlines,
                                    estimate_s, load_matrices)
from idlelab.host import hosts, nested, qemu
from idlelab.host.kvmparams import HostParams
from idlelab.report import console, resultsdir
from idlelab.report.console import say
from idlelab.sim import predict, simrun
from idlelab.stopsignals import Signals
from idlelab.usage import EXIT_NO_KVM, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE

RESULTS_DIR = os.path.join(TOP, "results")


def choose_accel(requested, require_kvm, needs_params=None):
    """(accel, message or None, exit code or None); accel kvm, nested or tcg (hosts.choose,
    with what the runs need of the kvm parameters); the message is the host line
    (hosts.host_line). Without a KVM host a bench cannot read host counters: with
    --require-kvm that is an error with its own exit code (the nested host is a KVM host),
    and so is --accel kvm on a machine without /dev/kvm; otherwise the runs go ahead under
    TCG with the host columns marked n/a (TCG)."""
    if requested == "kvm" and not qemu.kvm_usable():
        return None, ("/dev/kvm is missing or not usable: KVM was required, so nothing was "
                      f"run (exit {EXIT_NO_KVM}; --accel nested runs on the emulated KVM host)"), \
            EXIT_NO_KVM
    accel, why = hosts.choose(requested, needs_params)
    if accel == "tcg" and require_kvm:
        return None, (f"{why or 'TCG asked for'}: KVM was required, so nothing was run "
                      f"(exit {EXIT_NO_KVM})"), EXIT_NO_KVM
    line = None if hosts.inside() else hosts.host_line(accel, why)
    if accel == "tcg":
        line += "; the host KVM columns are n/a (TCG)" + (
            "" if requested == "tcg" else " (--require-kvm makes this an error)")
    return accel, line, None


def params_needed(loaded, params=None):
    """One line naming the runs that must set kvm parameters which this machine's KVM has
    read-only (hosts.choose then takes the nested host), or None when every run can be made
    here. A value in the cost table's terms is not known yet, so it counts as a change."""
    params = params or HostParams()
    runs = [r for _, _, rs in loaded for r in rs if r.accel != "tcg"]
    stuck = [r for r in runs if params.changes_for(r)[1]]
    if not stuck:
        return None
    names = sorted({k for r in stuck for k in r.host_params})
    return (f"{len(stuck)} of {len(runs)} runs set {', '.join(names)}, read-only in this "
            "machine's KVM")


REPEAT = usage.int_in(1, matrixvalues.MAX_REPEAT)     # --repeat N


def window_hold(text):
    """--window-hold: a time as the guest's window_hold= takes it."""
    try:
        matrixvalues.parse_time(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {e}") from None
    return text


def parse_args(argv):
    ap = usage.Parser(
        prog="bench",
        description="Run idlelab experiment matrices under QEMU/KVM and write results/<time>/ "
                    "(raw JSON, runs.csv, seedNNN.md tables, PNG plots). With no --matrix: "
                    "the four built-in seed matrices (tools/matrices/seed00[0234].txt).",
        epilog=f"Exit status: {EXIT_OK} all runs made or reported not run; {EXIT_RUN_FAILED} a "
               f"run failed; {EXIT_USAGE} bad arguments, matrix or folder; {EXIT_NO_KVM} KVM "
               "required (--require-kvm or --accel kvm) but /dev/kvm is not usable; 128 + "
               "the signal when SIGINT, SIGTERM or SIGHUP stopped the runs (runs.csv and "
               "tables are still written from the runs made).")
    ap.add_argument("--quick", action="store_true",
                    help="the reduced built-in matrices (tools/matrices/quick/): under a minute")
    ap.add_argument("--seeds", default=",".join(SEEDS),
                    help="built-in seeds to run, comma-separated (default: %(default)s)")
    ap.add_argument("--matrix", action="append", metavar="FILE",
                    help="run this matrix file instead of the built-ins (repeatable)")
    ap.add_argument("--repeat", type=REPEAT, metavar="N",
                    help="make every run N times, whatever the matrices say (each pass over "
                         "the matrices in turn); with --predict, predicted.md holds each run "
                         "made again against its first making: the bar's noise floor")
    ap.add_argument("--accel", choices=hosts.ACCELS, default="auto",
                    help="auto (default): KVM if usable, else the nested KVM host, else TCG "
                         "with host columns n/a")
    ap.add_argument("--require-kvm", action="store_true",
                    help=f"exit {EXIT_NO_KVM} without running anything if KVM is not usable")
    ap.add_argument("--wait-quiet", type=usage.seconds_or_zero, default=0, metavar="SECONDS",
                    help="wait for a quiet machine before the first run and after a run that "
                         "saw other load, at most SECONDS in all (default 0: do not wait)")
    ap.add_argument("--quiet-below", type=usage.finite_number, default=10.0, metavar="PCT",
                    help="other load (%% of all host CPUs) that counts as quiet "
                         "(default %(default)s)")
    ap.add_argument("--cooldown", type=usage.seconds_or_zero, default=0, metavar="SECONDS",
                    help="sleep SECONDS before each run after the first, so that the last "
                         "QEMU's teardown (freeing its memory, its threads' exit) is over "
                         "before the next window (default 0)")
    ap.add_argument("--results-dir", default=RESULTS_DIR, metavar="DIR",
                    help="parent of the new <timestamp>/ folder and the `latest` link "
                         "(default: results/)")
    ap.add_argument("--window-hold", type=window_hold, default=matrix.WINDOW_HOLD, metavar="TIME",
                    help="guest window_hold= unless the matrix sets it (default %(default)s: the "
                         "window edges are synchronised, window_sync=1)")
    ap.add_argument("--timeout", type=usage.positive_seconds, default=120, metavar="S",
                    help="kill a boot after S seconds (default %(default)s)")
    ap.add_argument("--no-cost-table", action="store_true",
                    help="do not measure the platform's cost table first (a few seconds); "
                         "refused for a matrix whose values are scaled by it")
    ap.add_argument("--resume", metavar="RESULTS_FOLDER",
                    help="go on with the folder an interrupted bench of the same matrices "
                         "left: its runs are kept, the rest are made (the nested host's retry "
                         "after a wedge uses it)")
    ap.add_argument("--resume-note", metavar="TEXT",
                    help="with --resume: recorded as `retried` on the first run made")
    ap.add_argument("--resume-fail", action="store_true",
                    help="with --resume: record the first run not made as failed, with "
                         "--resume-note as its reason, instead of making it")
    ap.add_argument("--side-by-side", action="store_true",
                    help="after each run, its per-vCPU table: the guest's HLT count beside "
                         "KVM's halt_exits, KVM's polls, IPIs sent and avoided, poll share and "
                         "the vCPU thread's host CPU")
    ap.add_argument("--ab", nargs=2, metavar=("A", "B"),
                    help="compare two settings inside each boot (docs/verdicts.md): each is "
                         "`key=value ...`, guest knobs (idle=halt) and host settings "
                         "(halt_poll_ns=200us, halt_poll_ns=global:400us, host_shrink=2, "
                         "host_grow, host_grow_start); one table of the guest's and KVM's "
                         "counts, each difference with its 95 %% CI")
    ap.add_argument("--ab-base", default=ab.DEFAULT_BASE, metavar="SETTINGS",
                    help="--ab: the run both arms share, as a matrix line (default: "
                         "%(default)s)")
    ap.add_argument("--boots", type=usage.int_in(1, matrixvalues.MAX_REPEAT),
                    default=ab.DEFAULT_BOOTS, metavar="N",
                    help="--ab: boots (default %(default)s)")
    ap.add_argument("--pairs", type=usage.int_in(1, 5000), default=ab.DEFAULT_PAIRS,
                    metavar="N", help="--ab: A/B pairs of windows per boot (default "
                                      "%(default)s)")
    ap.add_argument("--order", choices=("abba", "random"), default="abba",
                    help="--ab: the windows' order in each boot: abba (default: AB BA AB ..., "
                         "the next boot starting the other way) or random (a coin per pair, "
                         "its seed recorded)")
    ap.add_argument("--list", action="store_true",
                    help="print the matrices' runs and the time estimate; run nothing")
    ap.add_argument("--report", metavar="RESULTS_FOLDER",
                    help="rewrite runs.csv, the tables and plots from a folder's raw/ and exit")
    ap.add_argument("--no-report", action="store_true",
                    help="write raw/, runs.csv and meta.json only, leaving the tables, plots, "
                         "--predict and --ab reports to `tools/bench --report` (the nested "
                         "host's bench: there the report runs on this machine, not emulated)")
    ap.add_argument("--predict", action="store_true",
                    help="also predict every run with build/idlelab-sim (the folder's own cost "
                         "table) and write predicted.md beside the measurements, with the error")
    args = ap.parse_args(argv)
    if (args.resume_note or args.resume_fail) and not args.resume:
        ap.error("--resume-note and --resume-fail go with --resume")
    if args.resume_fail and not args.resume_note:
        ap.error("--resume-fail needs --resume-note (the failed run's reason)")
    seeds = [s.strip() for s in args.seeds.split(",") if s.strip()]
    bad = [s for s in seeds if s not in SEEDS]
    if bad:
        ap.error(f"--seeds: unknown seed {', '.join(bad)}; built-in: {', '.join(SEEDS)}")
    args.seed_list = seeds
    return args


def missing_linux_files(loaded):
    """One line naming the first file a guest=linux run's boot lacks and the make target that
    builds it; None if every such run can boot. Checked before anything runs: a kernel built
    on demand (linux_kernel=haltpoll-gov) takes minutes, never a bench's doing."""
    for mid, _, runs in loaded:
        for r in runs:
            if r.guest_os != "linux":
                continue
            missing = qemu.missing_boot_file(qemu.Config(guest="linux",
                                                         linux_kernel=r.linux_kernel))
            if missing:
                return f"{r.where}: run {r.name!r} (matrix {mid}): {missing}"
    return None


def list_matrices(loaded, host, cost_table):
    """--list: each matrix, its runs and the expected time on `host` (the one the bench
    would take), from what benches measured there (timings.py)."""
    learned, guessed = timings.costs(host)
    total = 0.0
    for mid, path, runs in loaded:
        boots = sum(r.repeat for r in runs)
        secs = sum(estimate_s(r, learned["boot_s"]) * r.repeat for r in runs)
        total += secs
        print(f"{mid}: {os.path.relpath(path, TOP)}: {len(runs)} runs, {boots} boots, "
              f"~{secs:.0f}s")
        for r in runs:
            rep = f" x{r.repeat}" if r.repeat > 1 else ""
            print(f"  {r.name}{rep}: {matrix.guest_cmdline(r)} "
                  f"halt_poll_ns={r.settings['halt_poll_ns']}"
                  + "".join(f" {k}={v}" for k, v in r.host_params.items()
                            if k != "halt_poll_ns")
                  + (f" stall={r.settings['stall']}" if r.stall else "")
                  + (f" neighbour={r.neighbour.text}" if r.neighbour else "")
                  + (f" pin={r.settings['pin']}" if r.pin else "")
                  + (f" guest={r.guest_os}" if r.guest_os != "idlelab" else "")
                  + (f" linux_kernel={r.linux_kernel}" if r.linux_kernel not in
                     (None, qemu.LINUX_KERNELS[0]) else ""))
    extra = [("the cost table", learned["cost_table_s"] if cost_table else 0),
             ("the nested host's start", learned.get("host_start_s", 0))]
    total += sum(s for _, s in extra)
    print(f"total ~{total:.0f}s on the {host} host: {learned['boot_s']:.1f}s per boot besides "
          "warm-up and window"
          + "".join(f", {s:.0f}s {what}" for what, s in extra if s)
          + f" ({timings.describe(host, guessed)})")


def rebuild_report(outdir):
    """--report: the reports of an existing folder, from its raw records. A folder a killed
    bench left is said to be incomplete, marked so, and reported from what it holds; one
    whose raw/ lacks runs its bench made is said to, and its tables say how many. A folder
    it cannot write (read-only, a folder where runs.csv goes) is one line and EXIT_USAGE,
    as one it cannot read."""
    try:
        resultsdir.check_folder(outdir)
        meta = resultsdir.read_meta(outdir)
        recs = resultsdir.read_raw(outdir)
    except resultsdir.FolderError as e:
        say(f"--report {e}")
        return EXIT_USAGE
    status = resultsdir.status(meta)
    if status == resultsdir.RUNNING:
        say(f"--report {outdir}: still being written by the bench with pid "
            f"{meta['owner']['pid']}: wait for it to end")
        return EXIT_USAGE
    # Said once the reports are written: a folder that cannot be written ends in that line.
    notes = [resultsdir.missing_note(outdir, meta, len(recs))]
    try:
        if status == resultsdir.INCOMPLETE:
            notes.insert(0, resultsdir.incomplete_note(outdir, meta) + "; reporting those")
            with resultsdir.writing(os.path.join(outdir, resultsdir.META)):
                meta = resultsdir.mark_incomplete(outdir, meta, "--report")
        written = resultsdir.write_all(outdir, recs, meta, hardware=simrun.rows_if_built(recs))
    except resultsdir.FolderError as e:
        say(f"--report {e}")
        return EXIT_USAGE
    for note in filter(None, notes):
        say(note)
    for path in written:
        print(path)
    return EXIT_OK


def main(argv=None):
    args = parse_args(argv)
    if args.report:
        code = rebuild_report(args.report)
        return predict.write_report(args.report) if args.predict else code
    paths = args.matrix or builtin_matrices(args.quick, args.seed_list)
    try:
        if args.ab:
            loaded = ab.build(*args.ab, base=args.ab_base, boots=args.boots,
                              npairs=args.pairs, order=args.order,
                              seed=int.from_bytes(os.urandom(4), "little")
                              if args.order == "random" else None, params=HostParams())
        else:
            loaded = load_matrices(paths)
        if args.repeat:
            loaded = [(mid, path, [dataclasses.replace(r, repeat=args.repeat,
                                                       settings=dict(r.settings,
                                                                     repeat=str(args.repeat)))
                                   for r in runs])
                      for mid, path, runs in loaded]
        check_cmdlines(loaded, args.window_hold)
    except (matrix.MatrixError, windowplan.PlanError) as e:
        say(str(e))
        return EXIT_USAGE
    except KnobCheckUnavailable as e:
        say(f"guest values not checked before the runs ({e}); a bad one fails at boot")
    if args.no_cost_table:
        scaled = [mid for mid, _, runs in loaded if costtable.needs_table(runs)]
        if scaled:
            say(f"--no-cost-table: matrix {', '.join(scaled)} places values by the cost table "
                "(e.g. `timer*2`), so it must be measured")
            return EXIT_USAGE
    if args.list:
        accel, _ = hosts.choose(args.accel, params_needed(loaded), build=False)
        host = hosts.describe(accel)["host"] if accel != "nested" else "nested"
        list_matrices(loaded, host, not args.no_cost_table)
        return EXIT_OK
    missing = missing_linux_files(loaded)
    if missing:
        say(missing)
        return EXIT_USAGE
    try:
        resultsdir.check_parent(args.results_dir)
        if args.resume:
            resultsdir.check_folder(args.resume)
    except resultsdir.FolderError as e:
        say(f"{'--resume' if args.resume else '--results-dir'} {e}")
        return EXIT_USAGE
    accel, msg, code = choose_accel(args.accel, args.require_kvm, params_needed(loaded))
    if msg:
        say(msg)
    if code is not None:
        return code
    if accel == "nested":
        outside = [d for d in (args.results_dir, args.resume) if d and not
                   nested.writable_inside(d)]
        if outside:
            say(f"{outside[0]}: the nested host writes results only into the project tree, "
                f"/tmp and /run (it shares those read-write, the rest of this machine "
                "read-only)")
            return EXIT_USAGE
        return nested_bench(sys.argv[1:] if argv is None else list(argv), args, msg)
    with Signals() as signals:
        try:
            code = run_all(args, loaded, accel, signals)
        except KeyboardInterrupt as e:   # before the results folder existed
            signum = getattr(e, "signum", signal.SIGINT)
            say(f"{signal.Signals(signum).name}: stopped before any run; nothing was measured")
            return 128 + signum
    latest = os.path.join(args.results_dir, "latest")
    if not args.no_report and os.path.isdir(latest):
        extra_reports(os.path.realpath(latest), args, msg)
    return code


def extra_reports(folder, args, msg):
    """--predict's and --ab's reports of a finished folder."""
    if args.predict:
        predict.write_report(folder)
    if args.ab:
        recs = resultsdir.read_raw(folder)
        lines, path = ab.write(folder, recs, {"A": args.ab[0], "B": args.ab[1]},
                               msg or "")
        print("\n".join(lines + [f"written: {path}"]), flush=True)


def nested_bench(argv, args, msg):
    """The bench made on the nested host, its report here: everything the host emulates runs
    ~40x slower (the seeds' report took 7 min there, 30 s here), and the folder is shared.
    The report is written whatever the runs' status, from what the folder holds."""
    folders = []
    inner = [a for a in argv if a != "--predict"] + ([] if args.no_report else ["--no-report"])
    code = hosts.delegate_bench(inner, folders=folders)
    if args.no_report or not folders or not os.path.isdir(folders[-1]):
        return code
    folder = folders[-1]
    try:
        meta, recs = resultsdir.read_meta(folder), resultsdir.read_raw(folder)
        written = resultsdir.write_all(folder, recs, meta, hardware=simrun.rows_if_built(recs))
    except Exception as e:  # a folder it cannot write, or a defect of the report's
        say(f"the tables could not be written ({type(e).__name__}: {e}); every run is kept "
            f"in {os.path.relpath(folder)}/raw and runs.csv: `tools/bench --report "
            f"{os.path.relpath(folder)}` writes them again")
        return code or EXIT_RUN_FAILED
    print(console.summary(recs, meta, written), flush=True)
    extra_reports(folder, args, msg)
    return code
