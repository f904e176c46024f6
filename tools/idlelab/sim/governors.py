"""The governors matrix in the simulator: every run of tools/matrices/governors.txt, the one
`make bench-governors` boots under KVM, made by idlelab-sim instead, with a cost table (the
published hardware costs by default), and judged by the bench's own table and verdict code
(report/layouts/governors.py) and drawn by its plot (report/plots.py). What cannot be run on a machine
(hardware KVM, another machine's costs) is seen here, every figure labelled simulated.

The simulator is deterministic, so each run is made once (the matrix's repeats would give
the same figures) and a verdict has no run-to-run spread to hide in: "within the spread"
cannot occur. A value written in the cost table's terms (`timer+200us`) is resolved from
the simulator's own cost table (`timer`: its `timer_running`, the arm-to-handler time of a
timer on a running vCPU, which is what bench=exits' `timer` measures).

    tools/sim/governors-matrix [hardware|here|FILE] [--out DIR]
"""
import os
import sys

from idlelab import TOP, costtable, usage
from idlelab.bench import matrix, plateau

from idlelab.report import plots
from idlelab.report.layouts import governors as governors_table
from idlelab.sim import simrun
from idlelab.usage import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE
from idlelab.derive.runrow import GUEST_TOTALS, RunRow, cpu_per_wakeup, time_us, workload_vcpus
from idlelab.bench.matrix import config_of, guest_cmdline


MATRIX = os.path.join(TOP, "tools", "matrices", "governors.txt")
# The cost table's primitives the simulator has a figure for, by its cost name.
SIM_PRIMS = {"timer": "timer_running"}


class SimMatrixError(RuntimeError):
    """A run the simulator refused or a primitive it has no figure for (one line)."""


def sim_costs(costs):
    """{cost name: ns} of the simulator's resolved cost table (its `sim` record)."""
    recs = simrun.run_sim(["workload=idle", "smp=1", "duration=1ms", f"costs={costs}"])
    sim = next((f for k, f in recs if k == "sim"), None)
    if sim is None:
        raise SimMatrixError("idlelab-sim printed no `sim` record")
    return {k[len("cost."):]: float(v) for k, v in sim.items() if k.startswith("cost.")}


def cost_table(costs_ns):
    """The table costtable.resolve_run() takes, from the simulator's costs: only the
    primitives it has a figure for; any other is refused when a run names it."""
    return {"prims": {p: {"ns_p50": costs_ns[c]} for p, c in SIM_PRIMS.items()
                      if c in costs_ns}}


def sim_args(run, costs):
    """idlelab-sim's arguments for a matrix run: its guest command line, vCPUs, and the
    host's halt polling (the per-VM value, else the module parameters it sets)."""
    args = guest_cmdline(run).split() + [f"smp={run.smp}"]
    if run.vm_halt_poll_ns is not None:
        args.append(f"kvm_cap_halt_poll={run.vm_halt_poll_ns}")
    args += [f"{k}={v}" for k, v in run.host_params.items()]
    return args + [f"costs={costs}"]


def row_of(run, recs):
    """A RunRow from the simulator's records, with the columns the governors tables read."""
    cpu = {int(f["id"]): f for k, f in recs if k == "cpu"}
    host = {int(f["vcpu"]): f for k, f in recs if k == "host"}
    result = next((f for k, f in recs if k == "result"), {})
    vcpus = workload_vcpus(run.workload, run.smp, int(run.guest.get("cpus", "0"), 0))
    used = [c for c in vcpus if c in host]
    window_ns = int(result.get("window_ns", 0))
    pct = sum(float(host[c]["cpu_pct"]) for c in used) / len(used) if used else None
    totals = {col: sum(int(f.get(counter, 0)) for f in cpu.values())
              for col, counter in GUEST_TOTALS}
    exits = [int(host[c]["halt_exits"]) * 1e9 / window_ns for c in used] if window_ns else []

    def us(key):
        return round(int(result[key]) / 1000, 1) if key in result else None

    return RunRow(
        matrix="governors", config=config_of(run), name=run.name, repeat=1, status="ok",
        accel="simulated", workload=run.workload, smp=run.smp,
        governor=run.guest.get("cpuidle.governor", "haltpoll"),
        period_us=time_us(run.guest.get("period")) if run.workload == "periodic" else None,
        **totals,
        guest_takeovers=sum(int(f.get("takeovers", 0)) for f in cpu.values()),
        host_cpu_pct=round(pct, 2) if pct is not None else None,
        host_cpu_us_per_wakeup=cpu_per_wakeup(run.workload, pct, len(used), window_ns,
                                              totals["guest_wakeups"]),
        halt_exits_per_s=round(sum(exits) / len(exits), 1) if exits else None,
        rtt_p50_us=us("rtt_p50_ns"), late_p50_us=us("late_p50_ns"))


def simulate(costs="hardware", path=MATRIX, costs_ns=None):
    """([RunRow] of every run of the matrix, simulated with `costs` (costs_ns: its figures,
    if already read), the cost table they were placed by: where the matrix writes a value
    in haltpoll's plateau (`plateau`), the simulator locates it first, as the bench does
    (bench/plateau.py), with simulated runs of haltpoll)."""
    runs = matrix.load(path, guest_knobs=matrix.guest_knob_names())
    table = cost_table(costs_ns if costs_ns is not None else sim_costs(costs))

    def measure(name, run):
        knob = costtable.LOCATED[name][1]
        return plateau.point(run, knob, row_of(run, run_sim(run, costs)))

    try:
        table, loaded = plateau.locate_names([("governors", path, runs)], table, measure,
                                             tell=lambda msg: None)
    except costtable.CostTableError as e:
        raise SimMatrixError(f"{path}: {e} in the simulator's costs "
                             f"({', '.join(SIM_PRIMS)} only)") from None
    # a within= boot's cells are simulated as the runs they are (the model has no windows)
    rows = [row_of(cell, run_sim(cell, costs)) for run in loaded[0][2]
            for cell in matrix.cells(run, from_arms=True)]
    return rows, table


def run_sim(run, costs):
    """The simulator's records of a resolved run; SimMatrixError naming the run."""
    try:
        return simrun.run_sim(sim_args(run, costs))
    except simrun.PredictError as e:
        raise SimMatrixError(f"{run.where}: run {run.name!r}: "
                             f"{str(e).splitlines()[-1]}") from None


def markdown(rows, costs, table=None):
    govs = governors_table.governors(rows)
    return "\n".join([
        f"# {governors_table.TITLE}: simulated", "",
        f"Every run of `tools/matrices/governors.txt`, made by idlelab-sim with costs={costs} "
        "(simulated, once each: the simulator is deterministic). Host CPU per wake-up is "
        "the workload's vCPU threads' CPU over the window divided by the guest's wake-ups.",
        "", "## Where haltpoll's plateau lies in the simulator", ""]
        + governors_table.located_section({"cost_table": table or {}})
        + ["## Periodic wake-ups across haltpoll's plateau", "",
        governors_table.sweep_table(rows, govs), "", "## Other workloads", "",
        governors_table.other_table(rows, govs), "", "## Against the goals", ""]
        + governors_table.located_verdict({"cost_table": table or {}})
        + governors_table.verdict(rows)) + "\n"


def main(argv=None):
    ap = usage.Parser(prog="governors-matrix", description=__doc__.split("\n\n")[0])
    ap.add_argument("costs", nargs="?", default="hardware",
                    help="the simulator's cost table: hardware (default), here or a FILE")
    ap.add_argument("--out", help="also write governors.md and governors_cpu_vs_period.png "
                                  "into this folder")
    args = ap.parse_args(argv)   # (bad arguments: one line, exit EXIT_USAGE)
    if not os.access(simrun.SIM, os.X_OK):
        print(f"governors-matrix: {simrun.SIM} does not exist: run `make` first",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        costs_ns = sim_costs(args.costs)
    except (SimMatrixError, simrun.PredictError) as e:
        print(f"governors-matrix: costs {args.costs!r}: {str(e).strip().splitlines()[-1]}",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        rows, table = simulate(args.costs, costs_ns=costs_ns)
    except (SimMatrixError, simrun.PredictError, matrix.MatrixError) as e:
        print(f"governors-matrix: {str(e).strip().splitlines()[-1]}", file=sys.stderr)
        return EXIT_RUN_FAILED
    text = markdown(rows, args.costs, table)
    print(text, end="")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "governors.md"), "w", encoding="utf-8") as f:
            f.write(text)
        plt = plots.pyplot()
        if plt is None:
            print(plots.SKIPPED.format(python=sys.executable), file=sys.stderr)
        else:
            plots.governors(rows, os.path.join(args.out, "governors_cpu_vs_period.png"), plt,
                            note=f"\nsimulated: idlelab-sim costs={args.costs}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
