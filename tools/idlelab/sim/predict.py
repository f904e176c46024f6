"""Predictions beside measurements: one bench run -> one idlelab-sim invocation -> the same
figures runs.csv has (guest_hlt, host_halt_exits, host_attempted_poll, host_successful_poll,
host_cpu_pct, RTT and lateness), so measured and predicted rows are read alike.

    tools/sim/compare RESULTS [--costs here|hardware|FILE] [--markdown OUT] [--control OTHER]

compares every run of a results folder with its prediction (costs=here reads the folder's
own cost table) and prints, per run, measured / predicted / error. `tools/bench --predict`
does the same at the end of a bench. A run the bench could not run (e.g. seed 004's
shrink=0 here) is predicted all the same and labelled `simulated`. The control holds the
host against itself by the same bar: a run made again (a repeat, or OTHER's namesake)
against its first making. The ceiling (sim/ceiling.py) is the most runs of the folder one
prediction per configuration could be within the bar of: the misses beyond it are the
host's spread, the rest the model's.
"""
import argparse
import json
import os
import shlex
import statistics
import sys

from idlelab.report import resultsdir
from idlelab.sim import ceiling, simrun, tracecost
from idlelab.sim.simrun import PredictError, SIM, predict_record, sim_args
from idlelab.derive import windows
from idlelab.derive.threadtrace import PROBE_BASIS
from idlelab.derive.runrow import PREDICTED, summarize

# Counts within 10 % of KVM's, host CPU within 10 points (the bar).
COUNT_TOLERANCE_PCT = 10.0
CPU_TOLERANCE_POINTS = 10.0
COUNTS = ("guest_hlt", "host_halt_exits", "host_attempted_poll", "host_successful_poll")
FIGURES = COUNTS + ("host_cpu_pct", "rtt_p50_us", "late_p50_us", "achieved_period_us")


def error(measured, predicted, key):
    """Relative error in % for counts, difference in points for host CPU; None if n/a."""
    try:
        m, p = float(measured), float(predicted)
    except (TypeError, ValueError):
        return None
    if key == "host_cpu_pct":
        return round(p - m, 1)
    if m == 0:
        return 0.0 if p == 0 else None
    return round(100.0 * (p - m) / m, 1)


def tolerance(measured, key):
    """The issue's bar around a measured figure: counts within 10 % (or 10 events when KVM
    counts fewer than 100), host CPU within 10 points; None for a figure reported, not
    judged."""
    if key == "host_cpu_pct":
        return CPU_TOLERANCE_POINTS
    if key in COUNTS:
        return max(COUNT_TOLERANCE_PCT / 100.0 * measured, 10)
    return None


def within(measured, predicted, key):
    """Whether `predicted` is within the bar of `measured` (None where it cannot be judged)."""
    try:
        m, p = float(measured), float(predicted)
    except (TypeError, ValueError):
        return None
    t = tolerance(m, key)
    return None if t is None else m - t <= p <= m + t     # box()'s test, to the last bit


def box(measured, predicted=None):
    """The predictions within the bar of one run: {figure: (low, high)} over the figures
    bar() judges, those the run has and, given a prediction, the prediction has too (a figure
    left out bounds nothing)."""
    out = {}
    for k in COUNTS + ("host_cpu_pct",):
        try:
            m = float(measured.get(k))
            if predicted is not None:
                float(predicted.get(k))
        except (TypeError, ValueError):
            continue
        t = tolerance(m, k)
        out[k] = (m - t, m + t)
    return out


def bar(measured, other):
    """The bar over a run's judged figures: True if `other` (a prediction, or the same run
    measured again) is within it on every one, None if no figure can be judged."""
    verdicts = [within(measured.get(k), other.get(k), k) for k in COUNTS + ("host_cpu_pct",)]
    verdicts = [v for v in verdicts if v is not None]
    return all(verdicts) if verdicts else None


def measured(row):
    """The figures of one run's summary (derive.runrow) as runs.csv has them ({} for a
    failed run)."""
    return {k: getattr(row, k) for k in FIGURES} if row.ok else {}


BOOT_COSTS = "boot-costs"      # the folder's per-boot cost files (boot_costs=)
# ipi_poll_rtt and timer_poll need the host's always-poll parameters (the cost table boots'
# own): a run's boot has its own, so these come from the bench's table
NOT_FROM_BOOT = ("ipi_poll_rtt", "timer_poll")


def boot_cost_spec(results, boot, meta, index, trace_cost=None):
    """The costs= of a boot that measured its own cost table (boot_costs=): a file in the
    folder (its raw records are read beside it, as meta.json's are) with the bench's table,
    its primitives replaced by the boot's but NOT_FROM_BOOT, and for a traced boot its thread
    parts priced with `trace_cost` (sim/tracecost.py); None for any other boot."""
    own = boot.get("cost_table")
    if not own or not own.get("in_boot") or not own.get("prims"):
        return None
    bench = dict((meta or {}).get("cost_table") or {})
    bench.pop("traced_boot", None)
    bench.pop("pooled", None)
    bench.pop("discarded", None)
    prims = dict(bench.get("prims") or {})
    prims.update({k: v for k, v in own["prims"].items()
                  if k not in NOT_FROM_BOOT or k not in prims})
    table = dict(bench, prims=prims, in_boot={"iters": own.get("iters"),
                                              "from_bench": [k for k in NOT_FROM_BOOT
                                                             if k in (bench.get("prims") or {})]})
    if trace_cost and tracecost.traced(boot) and tracecost.priceable(table.get("threads")):
        table["threads"] = tracecost.priced(table["threads"], trace_cost)
        table["in_boot"]["trace_cost"] = trace_cost
    path = os.path.join(results, f"{BOOT_COSTS}-{index:03d}.json")
    with open(path, "w") as f:
        json.dump({"cost_table": table}, f, indent=1)
    return f"here:{os.path.abspath(path)}"


def compare(results, costs=None, sim=SIM, recs=None, boot_costs=True):
    """[{matrix, name, repeat, status, simulated, costs, command, measured, predicted, error,
    ok}] for every raw record of a results folder (each boot against its own measurement).
    A boot that measured its own cost table (boot_costs=) is priced with it unless `costs`
    is given or boot_costs is False: then every boot with the folder's."""
    folder_costs = costs or f"here:{os.path.abspath(results)}"
    if recs is None:
        resultsdir.check_folder(results)
        recs = resultsdir.read_raw(results)
    meta = resultsdir.read_meta(results) if boot_costs and costs is None else None
    bench = (meta or {}).get("cost_table") or {}
    trace_cost = (tracecost.measure(recs, bench.get("prims"))
                  if meta is not None and tracecost.priceable(bench.get("threads")) else None)
    out = []
    for index, boot in enumerate(recs, 1):
        own = (boot_cost_spec(results, boot, meta, index, trace_cost) if meta is not None
               else None)
        entries = _compare_boot(boot, own or folder_costs, sim)
        if own and trace_cost and tracecost.traced(boot):
            for e in entries:
                e["trace_cost"] = trace_cost
        out += entries
    return out


def _compare_boot(boot, costs, sim):
    out = []
    for rec in windows.split(boot):    # each window predicted alone
        row = summarize(rec)
        entry = {"matrix": rec["matrix"], "name": rec["name"], "repeat": rec.get("repeat"),
                 "repeats": rec.get("repeats"),
                 "status": rec.get("status"), "costs": costs, "accel": rec.get("accel"),
                 "simulated": rec.get("status") != "ok",
                 "command": "build/idlelab-sim " + " ".join(map(shlex.quote,
                                                                 sim_args(rec, costs)))}
        if rec.get("guest", "idlelab") != "idlelab":
            # the simulator models idlelab's kernel: a Linux guest's row has no prediction
            entry.update(predicted={}, measured={}, error={}, ok=None, simulated=False,
                         why=f"guest={rec['guest']}: the simulator models idlelab's guest only")
            out.append(entry)
            continue
        try:
            pred, pred_cycle = predict_record(rec, costs, sim)
        except PredictError as e:   # measured all the same: the control holds it too
            entry.update(predicted={}, measured=measured(row), error={}, ok=None, why=str(e))
            out.append(entry)
            continue
        meas = measured(row)
        entry["cycle"] = {"measured": simrun.measured_cycle(rec),
                          "predicted": pred_cycle}
        # what the model does not have, measured in the same run: the host's scheduler
        # putting a woken vCPU thread on its waker's CPU (the model: a CPU for each)
        entry["host_wakes_local_pct"] = row.host_wakes_local_pct if row.ok else None
        entry["predicted"] = pred
        entry["measured"] = meas
        entry["error"] = {k: error(meas.get(k), pred.get(k), k) for k in FIGURES}
        # the bar is KVM's: a run under TCG has no KVM counts, and the here table's host
        # constants (timer_slack, block_charge_ppm, wake_cold_*) were fitted under KVM
        entry["ok"] = bar(meas, pred) if entry["accel"] != "tcg" else None
        out.append(entry)
    return out


def control(entries, other=None, against=None):
    """The bar's noise floor, the host against itself: runs held by the same bar against the
    same configuration measured again. Without `other`, in this folder: every repeat after
    the first against the run's first making (the same boot, later: tools/bench --repeat).
    With `other` ({(matrix, name, repeat): measured} of another folder, e.g. another boot),
    each run against its namesake there, named by `against`. Sets entry["control"] =
    {against, reference, again, error, ok} on every entry with a pair measured under KVM and
    returns those entries."""
    against = against or "repeat 1"
    kvm = [e for e in entries if e.get("measured") and e.get("accel") != "tcg"]
    if other is None:
        firsts = {(e["matrix"], e["name"]): e["measured"] for e in kvm
                  if (e.get("repeat") or 1) == 1}
        pairs = [(e, firsts.get((e["matrix"], e["name"])), e["measured"]) for e in kvm
                 if (e.get("repeat") or 1) > 1]
    else:
        pairs = [(e, e["measured"], other.get(resultsdir.run_key(e))) for e in kvm]
    out = []
    for e, ref, again in pairs:
        if ref and again:
            e["control"] = {"against": against, "reference": ref, "again": again,
                            "error": {k: error(ref.get(k), again.get(k), k) for k in FIGURES},
                            "ok": bar(ref, again)}
            out.append(e)
    return out


def measured_elsewhere(results):
    """{(matrix, name, repeat): measured} of another results folder's idlelab runs under KVM
    (compare --control)."""
    resultsdir.check_folder(results)
    out = {}
    for rec in resultsdir.read_raw(results):
        if rec.get("guest", "idlelab") == "idlelab" and rec.get("accel") != "tcg":
            out[resultsdir.run_key(rec)] = measured(summarize(rec))
    return out


def _label(e):
    """A row's run: matrix, name, and which making where it was made more than once."""
    rep = f" #{e['repeat']}" if (e.get("repeats") or e.get("repeat") or 1) > 1 else ""
    return f"{e['matrix']} {e['name']}{rep}"


def _cell(m, p, e):
    if m in (None, ""):
        return f"{p} (simulated)" if p is not None else ""
    return f"{m} / {p} ({e:+}{'' if e is None else ''})" if e is not None else f"{m} / {p}"


def markdown(entries, title="Measured / predicted (error: % for counts, points for CPU)"):
    lines = [f"## {title}", "",
             "| run | halt exits | attempted polls | successful polls | host CPU % | RTT/late p50 µs "
             "| within bar | wakes on the waker's CPU % |", "|---|---|---|---|---|---|---|---|"]
    for e in entries:
        if e.get("why"):
            lines.append(f"| {_label(e)} | sim refused: {e['why']} | | | | | | |")
            continue
        m, p, err = e["measured"], e["predicted"], e["error"]
        lat = "rtt_p50_us" if "rtt_p50_us" in p else "late_p50_us"
        cells = [_cell(m.get(k), p.get(k), err.get(k)) for k in
                 ("host_halt_exits", "host_attempted_poll", "host_successful_poll",
                  "host_cpu_pct", lat)]
        ok = "simulated" if e["simulated"] else {True: "yes", False: "NO", None: ""}[e["ok"]]
        local = e.get("host_wakes_local_pct")
        lines.append(f"| {_label(e)} | " + " | ".join(cells) + f" | {ok} | "
                     + ("" if local in (None, "") else f"{local}") + " |")
    lines += ["", within_line(entries), ""] + trace_cost_lines(entries) + [
              "The last column is measured, not predicted: of the workload vCPU threads' "
              "wake-ups, the share the host's scheduler put on the waker's own CPU (schedstats, "
              "where the host has them). A vCPU thread an IPI kicked is then queued behind the "
              "sending vCPU's thread, whose KVM poll stops at once; a timer wakes a thread on "
              "its own CPU and counts too. The model gives every vCPU thread a CPU of its own.",
              ""]
    return (lines + cycle_markdown(entries) + control_markdown(entries)
            + ceiling_markdown(entries))


def trace_cost_lines(entries):
    """What the traced boots' windows were priced with beyond their tables (sim/tracecost.py),
    as one paragraph; nothing where none was."""
    cost = next((e["trace_cost"] for e in entries if e.get("trace_cost")), None)
    if not cost:
        return []
    n = sum(1 for e in entries if e.get("trace_cost"))
    return [f"The {n} windows of boots traced with trace={tracecost.TRACED} are priced with the "
            f"trace's cost per halt, their own cost tables against the untraced ones "
            f"({cost['traced_tables']} and {cost['untraced_tables']}"
            + (", the bench's among them" if cost.get("with_bench") else "")
            + f"; medians): +{cost['ipi_ns'] / 1000:.1f} µs in an IPI's wake "
            f"({PROBE_BASIS['ipi']}), +{cost['timer_ns'] / 1000:.1f} µs in a timer's "
            f"({PROBE_BASIS['timer']}). The line \"with the bench's cost table instead\" prices "
            "them without it.", ""]


CYCLE = (("busy_us_per_wakeup", "outside idle per wake-up, µs"),
         ("idle_us_per_halt", "in idle per halt, µs"), ("wakeups_per_halt", "wake-ups per halt"))


def cycle_markdown(entries):
    """Per configuration, medians over its windows: where a workload vCPU's cycle goes,
    measured / predicted (simrun.cycle). Where the halts miss, this says whether the model's
    way back to HLT or its halts themselves are too short or too long."""
    by = {}
    for e in entries:
        c = e.get("cycle") or {}
        if c.get("measured") and c.get("predicted") and e.get("ok") is not None:
            by.setdefault((e["matrix"], e["name"]), []).append(c)
    if not by:
        return []

    def med(cs, side, k):
        vs = [c[side][k] for c in cs if c[side].get(k) is not None]
        return round(statistics.median(vs), 2 if k == "wakeups_per_halt" else 1) if vs else None

    lines = ["## Where the cycle goes", "",
             "A workload vCPU's time outside idle per thread wake-up (its work and its way into "
             "idle), in idle per halt (the HLT to its return after the waking handler) and its "
             "wake-ups per halt, from the guest's cpu records and the simulator's alike "
             "(tools/idlelab/sim/simrun.py cycle): measured / predicted, medians over the "
             "configuration's windows. A window's halts are its length over this cycle.", "",
             "| configuration | windows | " + " | ".join(t for _, t in CYCLE) + " |",
             "|---|---|" + "---|" * len(CYCLE)]
    for (matrix, name), cs in by.items():
        cells = [f"{med(cs, 'measured', k)} / {med(cs, 'predicted', k)}" for k, _ in CYCLE]
        lines.append(f"| {matrix} {name} | {len(cs)} | " + " | ".join(cells) + " |")
    return lines + [""]


def within_line(entries):
    """How many measured runs the predictions are within the bar of."""
    n = [e for e in entries if e.get("ok") is not None]
    tcg = sum(1 for e in entries if e.get("accel") == "tcg" and e.get("measured"))
    return (f"{sum(1 for e in n if e['ok'])} of {len(n)} measured runs within the bar "
            f"(counts ±{COUNT_TOLERANCE_PCT:.0f} % or ±10 events, host CPU "
            f"±{CPU_TOLERANCE_POINTS:.0f} points)"
            + (f"; {tcg} not judged (no KVM counts: TCG)." if tcg else "."))


def control_line(entries):
    """How many runs measured again are within the bar of their first measurement (None
    where no run was)."""
    pairs = [e for e in entries if e.get("control")]
    if not pairs:
        return None
    ok = sum(1 for e in pairs if e["control"]["ok"])
    return (f"{ok} of {len(pairs)} runs within the bar of the same run measured again "
            f"({pairs[0]['control']['against']}): the host against itself, a rough bound on "
            "predictions of single runs (an exact model of each configuration's average would "
            "be within it somewhat more often).")


def control_markdown(entries):
    """The control's table and its count (none where no run was measured twice)."""
    pairs = [e for e in entries if e.get("control")]
    if not pairs:
        return []
    against = pairs[0]["control"]["against"]
    lines = ["## Control: the same runs measured again (the bar's noise floor)", "",
             f"Each run's first figure against the same configuration measured again "
             f"({against}), judged by the same bar.", "",
             "| run | halt exits | attempted polls | successful polls | host CPU % | within bar |",
             "|---|---|---|---|---|---|"]
    for e in pairs:
        c = e["control"]
        cells = [f"{c['reference'].get(k, '')} / {c['again'].get(k, '')}"
                 + ("" if c["error"].get(k) is None else f" ({c['error'][k]:+})")
                 for k in ("host_halt_exits", "host_attempted_poll", "host_successful_poll",
                           "host_cpu_pct")]
        lines.append(f"| {_label(e)} | " + " | ".join(cells) + " | "
                     + {True: "yes", False: "NO", None: ""}[c["ok"]] + " |")
    return lines + ["", control_line(entries), ""]


def ceiling_line(entries):
    """How many measured runs one set of figures per configuration could be within the bar
    of at best, and whose the misses are (None where no configuration was made twice)."""
    return _ceiling_line(ceiling.configurations(entries, box))


def _ceiling_line(confs):
    if not any(c["made"] > 1 for c in confs):
        return None
    made, best, model = (sum(c[k] for c in confs) for k in ("made", "at_best", "model"))
    unsearched = sum(c["made"] for c in confs if not c["searched"])
    return (f"At best {best} of {made} measured runs within the bar "
            f"({100.0 * best / made:.0f} %): no prediction that gives each configuration one "
            f"set of figures, as the simulator does, is within it of more of these runs. "
            f"{made - best} missed by any such prediction (the host's spread), {best - model} "
            f"by the model's ({model} of {made})."
            + (f" ({unsearched} runs of configurations made more than "
               f"{ceiling.MAX_SEARCHED} times counted whole, not searched.)" if unsearched else ""))


def ceiling_markdown(entries):
    """The ceiling's table, a row for each configuration where the host's spread or the
    model costs a run, and its line (none where no configuration was made twice)."""
    confs = ceiling.configurations(entries, box)
    line = _ceiling_line(confs)
    if line is None:
        return []
    lines = ["## The bar's ceiling: the host's spread and the model's misses", "",
             "Each configuration's makings against the one set of figures within the bar of "
             "the most of them (its deepest point, chosen knowing the runs: "
             "tools/idlelab/sim/ceiling.py).", "",
             "| configuration | made | the model within | at best | missed: the host's spread "
             "| missed: the model |", "|---|---|---|---|---|---|"]
    for c in confs:
        if c["made"] > c["model"]:
            lines.append(f"| {' '.join(c['key'])} | {c['made']} | {c['model']} | "
                         f"{c['at_best']} | {c['made'] - c['at_best']} | "
                         f"{c['at_best'] - c['model']} |")
    return lines + ["", line, ""]


ERROR_COLUMNS = {"guest_hlt": "predicted_err_guest_hlt_pct",
                 "host_halt_exits": "predicted_err_host_halt_exits_pct",
                 "host_attempted_poll": "predicted_err_host_attempted_poll_pct",
                 "host_successful_poll": "predicted_err_host_successful_poll_pct",
                 "host_cpu_pct": "predicted_err_host_cpu_points"}


def columns(entry):
    """runs.csv's predicted_* columns for one compare() entry ({} if the simulator refused)."""
    if entry.get("why"):
        return {}
    out = {"predicted_costs": entry["costs"],
           "predicted_within": None if entry["simulated"] else entry["ok"]}
    out.update({f"predicted_{k}": v for k, v in entry["predicted"].items()
                if f"predicted_{k}" in PREDICTED})     # runs.csv's predicted columns only
    out.update({col: entry["error"].get(k) for k, col in ERROR_COLUMNS.items()})
    return out


def write_report(results, costs=None, sim=SIM):
    """predicted.md and predicted.json in a results folder (tools/bench --predict), and its
    runs.csv and tables again with the predicted columns; returns 0, or 2 if the simulator
    is missing or the folder cannot be read."""
    if not os.path.exists(sim):
        print(f"predict: {sim} is missing: run make first", file=sys.stderr)
        return 2
    try:
        resultsdir.check_folder(results)
        meta = resultsdir.read_meta(results)
        recs = resultsdir.read_raw(results)
    except resultsdir.FolderError as e:
        print(f"predict: {e}", file=sys.stderr)
        return 2
    entries = compare(results, costs, sim, recs)
    in_boot = [e for e in entries if BOOT_COSTS in e["costs"]]
    if in_boot and costs is None:
        # the same runs priced with the bench's one table, for the difference
        print("with the bench's cost table instead of each boot's own: "
              + within_line([e for e in compare(results, None, sim, recs, boot_costs=False)
                             if (e["matrix"], e["name"], e["repeat"]) in
                             {(x["matrix"], x["name"], x["repeat"]) for x in in_boot}]))
    control(entries)
    resultsdir.write_all(results, recs, meta,
                     {resultsdir.run_key(e): columns(e) for e in entries},
                     hardware=simrun.rows(recs, sim))
    lines = markdown(entries)
    with open(os.path.join(results, "predicted.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(results, "predicted.json"), "w") as f:
        json.dump(entries, f, indent=1)
    print(within_line(entries))
    refused = [e for e in entries if e.get("why")]
    if refused:
        # said here too: a bar over no run would read as a verdict otherwise
        print(f"predict: the simulator refused {len(refused)} of {len(entries)} runs, "
              f"{_label(refused[0])} first: {refused[0]['why']}", file=sys.stderr)
    for extra in (control_line(entries), ceiling_line(entries)):
        if extra:
            print(extra)
    print(os.path.join(results, "predicted.md"))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="predict", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="a results folder (results/latest)")
    ap.add_argument("--costs", help="here (default: the folder's own cost table), hardware "
                    "or a cost file")
    ap.add_argument("--markdown", help="also write the comparison to this file")
    ap.add_argument("--json", help="also write the comparison as JSON")
    ap.add_argument("--control", metavar="RESULTS",
                    help="also hold every run against the same run in another results folder "
                         "(another boot of the same matrices): the bar's noise floor there")
    ap.add_argument("--sim", default=SIM)
    a = ap.parse_args(argv)
    if not os.path.exists(a.sim):
        print(f"predict: {a.sim} is missing: run make first", file=sys.stderr)
        return 2
    try:
        other = measured_elsewhere(a.control) if a.control else None
    except resultsdir.FolderError as e:
        print(f"predict: --control {e}", file=sys.stderr)
        return 2
    try:
        entries = compare(a.results, a.costs, a.sim)
    except resultsdir.FolderError as e:
        print(f"predict: {e}", file=sys.stderr)
        return 2
    control(entries, other, a.control)
    lines = markdown(entries)
    print("\n".join(lines))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(entries, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
