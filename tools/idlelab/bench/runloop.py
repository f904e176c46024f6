"""The bench's run loop: per boot of the work list, its progress line with an ETA that learns
the real fixed cost per boot from the runs made, the boot, its raw file, its runs.csv row and
its place in meta.json, the result line, and a wait for quiet after a run that saw other load."""
import os
import sys
import time

from idlelab import timings
from idlelab.bench import matrixvalues
from idlelab.bench.onerun import execute
from idlelab.bench.workplan import RUN_OVERHEAD_S, estimate_s
from idlelab.derive import runrow, windows
from idlelab.host import hosts
from idlelab.host.hostload import saw_other_load
from idlelab.report import console, resultsdir
from idlelab.report.console import say


def run_work(work, ctx, outdir, waiter, waited, recs, quiet_below, signals, place, meta,
             cooldown=0, resume=None):
    """The matrix loop: progress line, one boot, its raw file, its runs.csv row, the runs
    made in meta.json and the result line, and a wait for quiet after a run that saw other
    load. Resuming (recs holds the runs made), the loop starts after them; the first run it
    makes carries the resume note (`retried`), or with resume_fail is recorded as failed
    with that note instead of being run."""
    progress = Progress(work, hosts.describe(ctx.accel)["host"])
    start = len(recs)
    csv_path = os.path.join(outdir, resultsdir.CSV_NAME)
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
        parts = windows.split(rec)                 # a row per measured window
        rows = [runrow.summarize(w) for w in parts]
        # A run is in raw/, runs.csv and meta.json's count together, or in none of them.
        with signals.deferred():
            resultsdir.write_json(resultsdir.raw_path(outdir, i + 1, rec), rec)
            for row in rows:
                resultsdir.append_csv(row, csv_path)
            recs.append(rec)
            meta["runs_made"] = len(recs)
            resultsdir.write_meta(outdir, meta)
            place.run, place.after = None, i + 1
        for w, row in zip(parts, rows):
            prefix = f"  window {w['boot_window']['window']} ({w['boot_window']['arm']}):" \
                if "boot_window" in w else ""
            print(prefix + console.result_line(w, row), file=sys.stderr, flush=True)
        row = rows[0]
        if ctx.side_by_side:
            for w in parts:
                print("\n".join(console.vcpu_table(w)), file=sys.stderr, flush=True)
        waited = (0.0, None, None)
        if saw_other_load(row, quiet_below) and i + 1 < len(work):
            waited = waiter.wait("the last run saw other load")


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
            warm = matrixvalues.parse_time(run.guest.get("warmup", "100ms"))
            self.overheads.append(max(0.0, q["seconds"] - (warm + run.duration_ns) / 1e9))
            if self.host and rec.get("status") == "ok":
                timings.learn(self.host, "boot_s", self.overheads[-1])

