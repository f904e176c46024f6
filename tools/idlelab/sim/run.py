"""One idlelab-sim invocation for one bench run: the arguments a raw record's configuration
gives, the simulator's run, and the same figures runs.csv has (guest_hlt, host_halt_exits,
host_attempted_poll, host_successful_poll, host_cpu_pct, RTT and lateness), so measured and
predicted rows are read alike. predict.py compares them with the measurements,
hardware.py asks the same of hardware's costs."""
import os
import shlex
import subprocess

from idlelab import TOP
from idlelab.derive import records
from idlelab.derive.runrow import workload_vcpus

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


def predict_record(rec, costs="here", sim=SIM):
    knobs = rec.get("guest_knobs") or {}
    cpus = int(str(knobs.get("cpus", "0")), 0)
    recs = run_sim(sim_args(rec, costs), sim)
    return figures(recs, rec["workload"], int(rec["smp"]), cpus)
