"""Locates haltpoll's plateau on the host in use, before the runs placed by it (a matrix
value written `plateau±TIME` or `plateau_think±TIME`: costtable.LOCATED).

For each located name a matrix uses: the first run written in it is the template (its
workload, haltpoll's parameters, host polling: the matrix says them once), booted with the
haltpoll governor, once per value, over a coarse sweep of the knob placed from the cost
table (the period from `timer` up, in steps of haltpoll's largest window), then a fine sweep
between the last value where haltpoll's polls hit and the first where they did not
(derive/plateau.py). The located value is the middle of the values found on the plateau.
Where none is, the nearest value stands in and one more boot, with the guest's timeline on,
shows haltpoll's window over time there: why it formed no plateau on this host.

Every boot's raw record is kept under the results folder (locate/), and what was found, boot
by boot, in the cost table's "located" part (meta.json, and the tables)."""
import dataclasses
import os
import re

from idlelab import TOP, costtable
from idlelab.bench import matrix, matrixvalues, onerun
from idlelab.derive import plateau, runrow
from idlelab.report import resultsdir
from idlelab.report.console import say
from idlelab.timeline import records as tlrecords

FOLDER = "locate"                # under the results folder: one raw record per boot
TIMELINE_EVENTS = 2000           # the why boot's events per CPU (the knob's limit is 4096)
HALTPOLL_H = os.path.join(TOP, "kernel", "policy", "haltpoll.h")
MAX_WINDOW_KNOB = "haltpoll.guest_halt_poll_ns"
# What each located name's coarse sweep starts from (a cost table primitive, or None: 0).
LOCATED_BASE = {"plateau": "timer", "plateau_think": None}


class LocateError(RuntimeError):
    """A located value could not be measured (the message says why, in one line)."""


def check(loaded):
    """Raises matrix.MatrixError at the first run that writes a located name in a knob or
    workload it does not place (`plateau` places periodic's period alone)."""
    bad = costtable.misplaced_located([r for _, _, runs in loaded for r in runs])
    if bad:
        run, knob, value, name = bad
        workload, want = costtable.LOCATED[name]
        raise matrix.MatrixError(f"{run.where}: run {run.name!r}: {knob}={value}: {name!r} "
                                 f"places workload={workload}'s {want}= alone")


def default_max_window_ns(header=HALTPOLL_H):
    """haltpoll's guest_halt_poll_ns default, from the kernel's own definition."""
    with open(header, encoding="utf-8") as f:
        m = re.search(r"#define\s+HALTPOLL_DEFAULT_POLL_NS\s+(\d+)u?\b", f.read())
    if not m:
        raise LocateError(f"{header}: no HALTPOLL_DEFAULT_POLL_NS")
    return int(m.group(1))


def template(loaded, name):
    """The first run whose guest values are written in `name`, and the knob that is."""
    for _, _, runs in loaded:
        for run in runs:
            for knob, value in run.guest.items():
                if costtable.uses_located(value) == name:
                    return run, knob
    return None, None


def probe_run(run, knob, value_ns, extra=None):
    """The template run with haltpoll as governor, one repeat, and `knob` at value_ns."""
    us = f"{max(1, round(value_ns / 1000))}us"
    guest = dict(run.guest, **{knob: us, "cpuidle.governor": "haltpoll"}, **(extra or {}))
    settings = dict(run.settings, repeat="1",
                    **{f"guest.{k}": v for k, v in guest.items()})
    label = "-".join(f"{k}={v}" for k, v in (extra or {}).items())
    return dataclasses.replace(run, name=f"{knob}={us}" + (f"-{label}" if label else ""),
                               repeat=1, guest=guest, sweep={}, settings=settings)


def base_ns(name, costs):
    """Where the coarse sweep starts from: a period from the timer's own cost, a think time
    from nothing (it is the gap less the round trip already)."""
    return costtable.median_ns(costs, "timer") if LOCATED_BASE[name] == "timer" else 0.0


def point(run, knob, row, status="ok", reason=None):
    """One value's point of the sweep from what haltpoll's run there measured."""
    entry = {"ns": matrixvalues.parse_time(run.guest[knob]), "status": status}
    if row is None:
        entry["reason"] = reason
        return entry
    entry.update(polls=row.guest_poll_entries, hits=row.guest_poll_hits,
                 wakeups=row.guest_wakeups,
                 hit_pct=plateau.hit_pct(row.guest_poll_entries, row.guest_poll_hits),
                 state=plateau.state(runrow.has_wakeups(row.workload), row.guest_poll_entries,
                                     row.guest_wakeups, row.guest_poll_hits),
                 host_cpu_us_per_wakeup=row.host_cpu_us_per_wakeup)
    return entry


def locate(name, loaded, costs, measure, timeline=None):
    """Where `name` lies, by the runs measure(name, run) -> point() makes: {"found", "ns",
    "on", "why"?, "knob", "template", "max_window_ns", "base", "sweep": [points],
    "windows"?}. timeline(name, run) -> (Timeline or None, error) shows the window over
    time where no plateau formed (None: not shown): at the last value below the stand-in
    where haltpoll's polls hit, and at the stand-in, the two sides of the collapse."""
    run, knob = template(loaded, name)
    run = costtable.resolve_run(dataclasses.replace(
        run, guest={k: v for k, v in run.guest.items() if k != knob}), costs)
    max_window = matrixvalues.parse_time(run.guest[MAX_WINDOW_KNOB]) \
        if MAX_WINDOW_KNOB in run.guest else default_max_window_ns()
    out = {"knob": knob, "template": run.where, "max_window_ns": max_window,
           "base": LOCATED_BASE[name] or "0", "sweep": []}
    if max_window <= 0:
        out.update(found=False, error=f"haltpoll's largest window ({MAX_WINDOW_KNOB}) is 0 "
                   f"in {run.where}: it never polls, so it has no plateau to locate")
        return out
    for ns in plateau.coarse_ns(base_ns(name, costs), max_window):
        out["sweep"].append(dict(measure(name, probe_run(run, knob, ns)), **{"pass": "coarse"}))
    for ns in plateau.fine_ns([(p["ns"], p.get("state")) for p in out["sweep"]]):
        out["sweep"].append(dict(measure(name, probe_run(run, knob, ns)), **{"pass": "fine"}))
    found = plateau.locate([(p["ns"], p.get("state"), p.get("hit_pct"))
                            for p in out["sweep"]])
    if found is None:
        failed = [p for p in out["sweep"] if p["status"] != "ok"]
        out.update(found=False, error=(
            f"{len(failed)} of {len(out['sweep'])} locating boots did not run to the end "
            f"(the first: {failed[0]['status']}, {failed[0].get('reason')})" if failed else
            "haltpoll's polls hit at no point of the sweep: nothing to place by"))
        return out
    out.update(found)
    if not found["found"] and timeline is not None:
        below = [p["ns"] for p in out["sweep"]
                 if p.get("state") == plateau.HITS and p["ns"] < found["ns"]]
        out["windows"] = [window(run, knob, ns, timeline(name, probe_run(
            run, knob, ns, {"timeline": str(TIMELINE_EVENTS)})))
            for ns in ([max(below)] if below else []) + [found["ns"]]]
    return out


def window(run, knob, ns, got):
    """The window part: haltpoll's window over time on the workload's CPUs at `ns`."""
    tl, error = got
    if tl is None:
        return {"ns": ns, "error": error}
    return {"ns": ns, "per_cpu": {str(c): plateau.window_over_time(
        tl, c, tlrecords.END_WORK, tlrecords.END_HALT) for c in _workload_cpus(run) if c < len(tl.cpus)}}


class Boots:
    """The bench's measure and timeline for locate(): one boot each, its raw record kept
    under the results folder's locate/ (numbered in boot order)."""

    def __init__(self, ctx, outdir, signals):
        self.ctx, self.outdir, self.signals = ctx, outdir, signals
        self.count = 0

    def boot(self, name, run):
        self.count += 1
        say(f"locating {name}: {run.name} (haltpoll)")
        rec = onerun.execute(f"locate-{name}", run, 1, self.ctx)
        with self.signals.deferred():
            resultsdir.write_json(os.path.join(self.outdir, FOLDER, os.path.basename(
                resultsdir.raw_path(self.outdir, self.count, rec))), rec)
        return rec

    def measure(self, name, run):
        rec = self.boot(name, run)
        knob = costtable.LOCATED[name][1]
        if rec["status"] != "ok":
            return point(run, knob, None, rec["status"], rec.get("reason"))
        return point(run, knob, runrow.summarize(rec))

    def timeline(self, name, run):
        rec = self.boot(name, run)
        if rec["status"] != "ok":
            return None, f"the timeline boot {rec['status']}: {rec.get('reason')}"
        try:
            tl = tlrecords.parse_text(rec["serial"])
        except tlrecords.TimelineError as e:
            return None, f"its timeline: {e}"
        return (tl, None) if tl is not None else (None, "the guest printed no timeline")


def _workload_cpus(run):
    mask = int(run.guest.get("cpus", "0"), 0)
    return runrow.workload_vcpus(run.workload, run.smp, mask)


def locate_all(ctx, loaded, costs, outdir, signals):
    """costs with its "located" part for every located name the matrices use, measured by
    boots (Boots), and the matrices resolved by it. A name that could not be located is
    kept with its error; the runs placed by it then cannot be resolved
    (costtable.CostTableError)."""
    boots = Boots(ctx, outdir, signals)
    return locate_names(loaded, costs, boots.measure, boots.timeline)


def locate_names(loaded, costs, measure, timeline=None, tell=say):
    """locate() for every located name the matrices use, each told as found; then the
    matrices resolved by the table."""
    names = costtable.needs_located([r for _, _, runs in loaded for r in runs])
    if names:
        costs.setdefault("located", {})
    for name in names:
        costs["located"][name] = locate(name, loaded, costs, measure, timeline)
        tell(describe(name, costs["located"][name]))
    resolved = [(mid, path, [costtable.resolve_run(r, costs) for r in runs])
                for mid, path, runs in loaded]
    return costs, resolved


def describe(name, entry):
    """One line on what was found."""
    if "ns" not in entry:
        return f"{name}: not located: {entry.get('error')}"
    where = f"{entry['knob']}={entry['ns'] / 1000:.0f} µs"
    if entry.get("found"):
        return (f"{name}: haltpoll's plateau at {where} ({len(entry['on'])} of "
                f"{len(entry['sweep'])} points on it)")
    return f"{name}: no plateau on this host; the nearest point, {where}, stands in: " \
        f"{entry.get('why')}"
