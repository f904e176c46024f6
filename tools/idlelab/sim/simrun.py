"""idlelab-sim run for bench runs: one invocation for one run (the arguments a raw record's
configuration gives, the simulator's run, and the same figures runs.csv has: guest_hlt,
host_halt_exits, host_attempted_poll, host_successful_poll, host_cpu_pct, RTT and
lateness, so measured and predicted rows are read alike), and every run of a results
folder predicted on hardware KVM. predict.py compares the predictions with the
measurements.

The hardware rows: every run of a results folder given to idlelab-sim with the published
hardware costs (tools/sim/costs/hardware.txt), beside the seed tables measured on a slower
host. A run placed by the cost table (`period=timer+300us`) is placed again by hardware's
own costs, so the hardware column asks the same question of a faster machine (on hardware a
timer wake-up costs a few µs, so `timer+300us` is about 303 us there). The `timer` primitive
of bench=exits (arm an already-due TSC deadline, take the interrupt on a running vCPU, run
the callback) is, in the cost file's terms, timer_arm + timer_running + irq_entry, and
`ipi_halt_rtt` ipi_send + ipi_latency + wake_latency + vm_entry + irq_entry; a placement by
another primitive is reported as not predicted."""
import os
import re
import shlex
import subprocess

from idlelab import TOP, costtable
from idlelab.derive import records, windows
from idlelab.derive.runrow import RunRow, summarize, workload_vcpus


SIM = os.path.join(TOP, "build", "idlelab-sim")


class PredictError(RuntimeError):
    """The simulator refused the configuration or failed (the message is its stderr)."""


def sim_args(rec, costs="here", guest_args=None):
    """The idlelab-sim arguments for one raw record (its guest command line, or
    `guest_args` in its place, vCPU count and KVM's halt-polling settings: the per-VM
    capability, else the module parameter; a run under TCG had none)."""
    args = shlex.split(rec["cmdline"]) if guest_args is None else list(guest_args)
    hp = rec.get("halt_poll") or {}
    params = rec.get("host_params") or {}
    wanted, values = params.get("wanted") or {}, params.get("values") or {}
    args.append(f"smp={rec['smp']}")
    if rec.get("accel") == "tcg":   # no KVM, so no host halt polling, whatever was asked
        return args + ["halt_poll_ns=0", f"costs={costs}"]
    for key in ("halt_poll_ns", "halt_poll_ns_grow", "halt_poll_ns_grow_start",
                "halt_poll_ns_shrink"):
        v = wanted.get(key, values.get(key))
        if v is not None:       # asked for (global:), else the host's own value
            args.append(f"{key}={v}")
    if hp.get("scope") == "vm" and hp.get("ns") is not None:
        args.append(f"kvm_cap_halt_poll={hp['ns']}")
    args.append(f"costs={costs}")
    return args


def run_sim(args, sim=SIM):
    """Runs the simulator; returns its records [(kind, fields)]."""
    proc = subprocess.run([sim] + list(args), capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise PredictError(proc.stderr.strip() or f"idlelab-sim exited {proc.returncode}")
    return records.parse_records(proc.stdout)


def cycle(recs, workload, smp, cpus_mask):
    """Where a workload vCPU's time goes, from a run's `cpu` and `result` records (the
    guest's, or the simulator's: one reading for both), summed over the workload's vCPUs
    that woke: its guest time outside idle per thread wake-up ((window - idle_ns) /
    wakeups: the threads' work and their way into idle), its time in idle per halt (idle_ns
    / halts: the HLT to its return after the waking handler) and its wake-ups per halt.
    A halt count is the window over this cycle, so the two lengths say which half of it a
    model misses. {} where the records have no window or no wake-up."""
    cpu = {int(f["id"]): f for k, f in recs if k == "cpu" and "idle_ns" in f}
    result = next((f for k, f in recs if k == "result"), {})
    window = int(result.get("window_ns", 0) or 0)
    mine = [cpu[i] for i in workload_vcpus(workload, smp, cpus_mask)
            if i in cpu and int(cpu[i].get("wakeups", 0))]
    if not window or not mine:
        return {}
    idle, wakes, halts = (sum(int(f[k]) for f in mine) for k in ("idle_ns", "wakeups", "halts"))
    return {"busy_us_per_wakeup": round((window * len(mine) - idle) / wakes / 1000, 1),
            "idle_us_per_halt": round(idle / halts / 1000, 1) if halts else None,
            "wakeups_per_halt": round(wakes / halts, 2) if halts else None}


def figures(recs, workload, smp, cpus_mask):
    """runs.csv's figures from the simulator's records."""
    cpu = [f for k, f in recs if k == "cpu"]
    host = [f for k, f in recs if k == "host"]
    result = next((f for k, f in recs if k == "result"), {})
    used = workload_vcpus(workload, smp, cpus_mask)
    pct = [float(host[i]["cpu_pct"]) for i in used if i < len(host)]
    out = {
        "guest_hlt": sum(int(f["hlt"]) for f in cpu),
        "host_halt_exits": sum(int(f["halt_exits"]) for f in host),
        "host_attempted_poll": sum(int(f["attempted_poll"]) for f in host),
        "host_successful_poll": sum(int(f["successful_poll"]) for f in host),
        "host_cpu_pct": round(sum(pct) / len(pct), 2) if pct else None,
    }
    attempted = out["host_attempted_poll"]
    out["poll_success_pct"] = (round(100.0 * out["host_successful_poll"] / attempted, 1)
                               if attempted else None)
    window_s = int(result.get("window_ns", 0)) / 1e9
    exits = [int(host[i]["halt_exits"]) / window_s for i in used if i < len(host)] \
        if window_s else []
    out["halt_exits_per_s"] = round(sum(exits) / len(exits), 1) if exits else None
    for key in ("rtt_p50", "rtt_p99", "late_p50", "achieved_period"):
        if f"{key}_ns" in result:
            out[f"{key}_us"] = round(int(result[f"{key}_ns"]) / 1000, 1)
    for key in ("iters", "rt_per_s"):
        if key in result:
            out[key] = int(result[key])
    # the same per-vCPU figures the measured rows have, for the tables' explanations
    mine = [host[i] for i in used if i < len(host)]
    if mine:
        out["host_poll_pct"] = round(sum(float(h["poll_pct"]) for h in mine) / len(mine), 2)
        missed = sum(int(h["attempted_poll"]) - int(h["successful_poll"]) for h in mine)
        out["host_poll_miss_us"] = (round(sum(int(h["poll_fail_ns"]) for h in mine) / missed
                                          / 1000, 1) if missed > 0 else None)
    return out


def cpus_mask(rec):
    """The cpus= a raw record's guest ran its workload on (0: the default)."""
    return int(str((rec.get("guest_knobs") or {}).get("cpus", "0")), 0)


def predict_record(rec, costs="here", sim=SIM):
    """The run's figures (figures()) and its cycle (cycle()), simulated."""
    recs = run_sim(sim_args(rec, costs), sim)
    args = (rec["workload"], int(rec["smp"]), cpus_mask(rec))
    return figures(recs, *args), cycle(recs, *args)


def measured_cycle(rec):
    """cycle() of a raw record's own guest records (one window's, as windows.split gives);
    {} for a record that names no workload."""
    if not rec.get("workload") or not rec.get("smp"):
        return {}
    return cycle(records.parse_records(rec.get("serial") or ""), rec["workload"],
                 int(rec["smp"]), cpus_mask(rec))


# --- The same experiment on hardware KVM, predicted ---------------------------------------

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
    """A cost table in costtable's shape with the primitives PRIM_TERMS derives."""
    costs = cost_file_ns(path)
    return {"prims": {p: {"ns_p50": float(sum(costs[t] for t in terms))}
                      for p, terms in PRIM_TERMS.items()}}


def hardware_args(rec, table):
    """The simulator's arguments for one raw record on hardware: its own configuration,
    whatever host it ran on (a TCG or not-run record included), with values placed by
    the cost table placed again by hardware's."""
    settings = rec.get("settings") or {}
    args = []
    for word in shlex.split(rec["cmdline"]):
        name, _, value = word.partition("=")
        asked = settings.get(f"guest.{name}")
        if asked is not None and costtable.is_scaled(asked):
            value = costtable.resolve(asked, table)
        args.append(f"{name}={value}" if _ else word)
    return sim_args(replace_window(dict(rec, accel="kvm"), table), COSTS,
                           guest_args=args)


def replace_window(rec, table):
    """The record with a host window (and grow_start) asked in the cost table's terms placed
    by `table`."""
    settings = rec.get("settings") or {}
    start = settings.get("host_grow_start", "")
    if costtable.is_scaled(start):
        params = dict(rec.get("host_params") or {})
        params["wanted"] = dict(params.get("wanted") or {},
                                halt_poll_ns_grow_start=costtable.resolve_ns(start, table))
        rec = dict(rec, host_params=params)
    asked = settings.get("halt_poll_ns", "")
    scope, _, expr = asked.rpartition(":") if ":" in asked else ("vm", "", asked)
    if not costtable.is_scaled(expr):
        return rec
    ns = costtable.resolve_ns(expr, table)
    out = dict(rec, halt_poll=dict(rec.get("halt_poll") or {}, ns=ns))
    if scope == "global":
        params = dict(rec.get("host_params") or {})
        params["wanted"] = dict(params.get("wanted") or {}, halt_poll_ns=ns)
        out["host_params"] = params
    return out


def rows(recs, sim=SIM):
    """[RunRow] of the first repeat of each run, its measured figures replaced by hardware
    predictions (the simulator is deterministic: one per run); status `predicted`, or
    `failed` with the simulator's error."""
    table = prim_table()
    out, seen = [], set()
    for rec in (w for r in recs for w in windows.split(r)):    # a window is a run here
        key = (rec["matrix"], rec["name"])
        if key in seen or "cmdline" not in rec:      # (a hand-made record may lack it)
            continue
        seen.add(key)
        try:
            args = hardware_args(rec, table)
            # the row says the windows hardware would have (placed by its own costs)
            base = summarize(dict(replace_window(dict(rec, accel="kvm"), table),
                                  status="not run", reason=None))
        except costtable.CostTableError as e:
            base = summarize(dict(rec, status="not run", reason=None))
            out.append(_replace(base, status="failed", reason=f"hardware placement: {e}"))
            continue
        try:
            got = figures(run_sim(args, sim), rec["workload"], int(rec["smp"]), cpus_mask(rec))
        except PredictError as e:
            out.append(_replace(base, status="failed", reason=f"idlelab-sim: {e}"))
            continue
        period = next((a.split("=", 1)[1] for a in args if a.startswith("period=")), None)
        out.append(_replace(base, status="ok", reason="idlelab-sim, hardware costs",
                            repeat=1, **got, **({"period_us": _us(period)} if period else {})))
    return out


def rows_if_built(recs, sim=SIM):
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
