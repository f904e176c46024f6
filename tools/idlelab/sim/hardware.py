"""The same experiment on hardware KVM, predicted: every run of a results folder given to
idlelab-sim with the published hardware costs (tools/sim/costs/hardware.txt), beside the
seed tables measured on a slower host.

A run placed by the cost table (`period=timer+300us`) is placed again by hardware's own
costs, so the hardware column asks the same question of a faster machine (on hardware a timer
wake-up costs a few µs, so `timer+300us` is about 303 us there). The `timer` primitive of
bench=exits (arm an already-due TSC deadline, take the interrupt on a running vCPU, run the
callback) is, in the cost file's terms, timer_arm + timer_running + irq_entry, and
`ipi_halt_rtt` ipi_send + ipi_latency + wake_latency + vm_entry + irq_entry; a placement by
another primitive is reported as not predicted.
"""
import os
import re
import shlex

from idlelab import TOP
from idlelab.derive import records
from idlelab.derive.runrow import RunRow, summarize
from idlelab.sim import run as simrun

COSTS = "hardware"
COST_FILE = os.path.join(TOP, "tools", "sim", "costs", "hardware.txt")
PRIM_TERMS = {"timer": ("timer_arm", "timer_running", "irq_entry"),
              # an IPI to a halted vCPU until its answer: the send, the delivery, the host
              # waking the vCPU's thread, the entry, the guest's interrupt
              "ipi_halt_rtt": ("ipi_send", "ipi_latency", "wake_latency", "vm_entry",
                               "irq_entry")}
_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_ENTRY = re.compile(r"^\s*([a-z_0-9]+)\s*=\s*(\d+)(ns|us|ms|s)?\s*(?:#.*)?$")


def cost_file_ns(path=COST_FILE):
    """{name: ns} of a cost file's time entries (`name = 1500ns`; no unit: ns)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _ENTRY.match(line)
            if m:
                out[m.group(1)] = int(m.group(2)) * _UNITS[m.group(3) or "ns"]
    return out


def prim_table(path=COST_FILE):
    """A cost table in primcosts' shape with the primitives PRIM_TERMS derives."""
    costs = cost_file_ns(path)
    return {"prims": {p: {"ns_p50": float(sum(costs[t] for t in terms))}
                      for p, terms in PRIM_TERMS.items()}}


def sim_args(rec, table):
    """The simulator's arguments for one raw record on hardware: its own configuration,
    whatever host it ran on (a TCG or not-run record included), with values placed by
    the cost table placed again by hardware's."""
    settings = rec.get("settings") or {}
    args = []
    for word in shlex.split(rec["cmdline"]):
        name, _, value = word.partition("=")
        asked = settings.get(f"guest.{name}")
        if asked is not None and records.is_scaled(asked):
            value = records.resolve(asked, table)
        args.append(f"{name}={value}" if _ else word)
    return simrun.sim_args(replace_window(dict(rec, accel="kvm"), table), COSTS,
                           guest_args=args)


def replace_window(rec, table):
    """The record with a host window (and grow_start) asked in the cost table's terms placed
    by `table`."""
    settings = rec.get("settings") or {}
    start = settings.get("host_grow_start", "")
    if records.is_scaled(start):
        params = dict(rec.get("host_params") or {})
        params["wanted"] = dict(params.get("wanted") or {},
                                halt_poll_ns_grow_start=records.resolve_ns(start, table))
        rec = dict(rec, host_params=params)
    asked = settings.get("halt_poll_ns", "")
    scope, _, expr = asked.rpartition(":") if ":" in asked else ("vm", "", asked)
    if not records.is_scaled(expr):
        return rec
    ns = records.resolve_ns(expr, table)
    out = dict(rec, halt_poll=dict(rec.get("halt_poll") or {}, ns=ns))
    if scope == "global":
        params = dict(rec.get("host_params") or {})
        params["wanted"] = dict(params.get("wanted") or {}, halt_poll_ns=ns)
        out["host_params"] = params
    return out


def rows(recs, sim=simrun.SIM):
    """[RunRow] of the first repeat of each run, its measured figures replaced by hardware
    predictions (the simulator is deterministic: one per run); status `predicted`, or
    `failed` with the simulator's error."""
    table = prim_table()
    out, seen = [], set()
    for rec in recs:
        key = (rec["matrix"], rec["name"])
        if key in seen or "cmdline" not in rec:      # (a hand-made record may lack it)
            continue
        seen.add(key)
        try:
            args = sim_args(rec, table)
            # the row says the windows hardware would have (placed by its own costs)
            base = summarize(dict(replace_window(dict(rec, accel="kvm"), table),
                                  status="not run", reason=None))
        except records.CostTableError as e:
            base = summarize(dict(rec, status="not run", reason=None))
            out.append(_replace(base, status="failed", reason=f"hardware placement: {e}"))
            continue
        try:
            got = simrun.figures(simrun.run_sim(args, sim), rec["workload"], int(rec["smp"]),
                                  int(str((rec.get("guest_knobs") or {}).get("cpus", "0")), 0))
        except simrun.PredictError as e:
            out.append(_replace(base, status="failed", reason=f"idlelab-sim: {e}"))
            continue
        period = next((a.split("=", 1)[1] for a in args if a.startswith("period=")), None)
        out.append(_replace(base, status="ok", reason="idlelab-sim, hardware costs",
                            repeat=1, **got, **({"period_us": _us(period)} if period else {})))
    return out


def rows_if_built(recs, sim=simrun.SIM):
    """rows(), or [] where the simulator is not built (the tables then say nothing of
    hardware)."""
    return rows(recs, sim) if os.path.exists(sim) else []


def _us(text):
    m = re.fullmatch(r"(\d+)(ns|us|ms|s)?", text)
    return int(m.group(1)) * _UNITS[m.group(2) or "ns"] / 1000 if m else None


def _replace(row, **changes):
    fields = {k: v for k, v in vars(row).items()}
    fields.update({k: v for k, v in changes.items() if k in fields})
    return RunRow(**fields)
