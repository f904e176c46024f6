"""A boot's raw record: plain JSON-ready data, assembled from what the matrix asked for,
what QEMU and the guest did, and what the probe saw. derive/figures.py turns it into a RunRow;
nothing here formats or derives figures beyond kvmdelta.delta's subtraction."""
from idlelab.bench import matrix
from idlelab.derive import attribution, kvmdelta
from idlelab.host import haltpollcap, hosts
from idlelab.host.hostload import loadavg, other_load
from idlelab.bench.workplan import config_of, guest_cmdline


def run_accel(run, accel):
    """A run asking for TCG in its matrix gets it; otherwise the invocation's choice."""
    return "tcg" if "tcg" in (run.accel, accel) else "kvm"


def base_record(mid, run, repeat, accel, params, window_hold):
    """The parts of a record known before booting."""
    scope, _ = matrix.PARSERS["halt_poll_ns"](run.settings["halt_poll_ns"])
    # the window as resolved (a cost-table expression is a time by now)
    ns = {"vm": run.vm_halt_poll_ns, "global": run.host_params.get("halt_poll_ns")}.get(scope)
    return {
        "matrix": mid, "name": run.name, "config": config_of(run), "where": run.where,
        "repeat": repeat, "repeats": run.repeat, "workload": run.workload, "smp": run.smp,
        "machine": run.machine, "guest": run.guest_os, "linux_kernel": run.linux_kernel,
        "accel": run_accel(run, accel),
        "duration_ns": run.duration_ns,
        "settings": dict(run.settings), "sweep": dict(run.sweep), "guest_knobs": dict(run.guest),
        "halt_poll": {"scope": scope, "ns": ns},
        "host_params": {"wanted": dict(run.host_params), "values": params.values,
                        "read_only": params.read_only, "changed": {}},
        "cmdline": guest_cmdline(run, window_hold),
        "pin": list(run.pin) if run.pin is not None else None,
        "host": hosts.describe(run_accel(run, accel)),
        "status": None, "reason": None,
    }


def snapshot_json(snap):
    return {"time_ns": snap.time_ns, "stats": snap.per_vcpu_stats,
            "thread_cpu_ns": snap.per_thread_cpu_ns}


def host_part(probe):
    """What the host saw over the window: both samples and their delta."""
    host = {"vcpu_threads": probe.threads, "errors": list(probe.errors),
            "pinned": probe.pinned}
    for state, s in probe.samples.items():
        host[state] = dict(snapshot_json(s["snapshot"]), run_delay_ns=s.get("run_delay_ns"),
                           sample_ms=s["sample_ms"],
                           read_ms=s["read_ms"], late=s["late"])
    if probe.has_window():
        # Each vCPU thread's wait on a host run queue over the window (what KVM reports to
        # the guest as steal time), to hold the guest's steal_ns against.
        da, db = (probe.samples[s].get("run_delay_ns") or {} for s in ("open", "close"))
        host["run_delay_ns"] = {i: db[i] - da[i] for i in da
                                if da[i] is not None and db.get(i) is not None}
        a, b = probe.samples["open"]["snapshot"], probe.samples["close"]["snapshot"]
        try:
            host["delta"] = kvmdelta.delta(a, b, probe.schemas or None).to_json()
        except ValueError as e:      # a counter went backwards: not one VM's window
            host["errors"].append(f"KVM stats delta: {e}")
    return host


def load_part(probe, before, after, ncpus):
    """Other load over the whole boot (QEMU's CPU from its rusage once reaped) and over the
    measured window (QEMU's CPU from /proc at the two markers); load average at the end."""
    qemu_ns = after["children_ns"] - before["children_ns"]
    part = {"run": other_load(before, after, qemu_ns, ncpus), "loadavg": loadavg()}
    if probe.has_window():
        a, b = probe.samples["open"]["load"], probe.samples["close"]["load"]
        if a.get("qemu_ns") is not None and b.get("qemu_ns") is not None:
            # A neighbour's CPU is the experiment's, not other load.
            ours = b["qemu_ns"] - a["qemu_ns"] + (b.get("neighbour_ns", 0)
                                                   - a.get("neighbour_ns", 0))
            part["window"] = other_load(a, b, ours, ncpus)
    return part


def verdict(rec, outcome):
    """(status, reason): ok only if the guest succeeded and the host saw the whole window
    with the polling configuration and the fault (stall=) it asked for. A stall that could
    not be injected (ptrace refused, ...) makes the run "not run": the boot happened, but
    not the experiment asked for, and its figures are not those of a disturbed run."""
    if not outcome.ok:
        late = rec.get("late_wakeups") or []
        if late and not any(e["kind"] in attribution.GUEST_FAULTS for e in late):
            return "failed", (f"guest exit {outcome.name}, host-starved: "
                              + attribution.describe(max(late, key=lambda e: e["late_ns"])))
        tail = " | ".join(rec["serial"].strip().splitlines()[-3:])
        return "failed", f"guest exit {outcome.name}: {tail}"
    f = rec.get("fault")
    if f is not None and not f.get("done"):
        return "not run", (f"stall={rec['settings'].get('stall')} was not injected, so this "
                           f"is not the run asked for: {f.get('error')}")
    n = rec.get("neighbour")
    if n is not None and n.get("error"):
        return "failed", f"neighbour={n['spec']}: {n['error']}"
    if n is not None and n.get("window") is None:
        return "failed", f"neighbour={n['spec']}: its throughput was not read at both markers"
    if n is not None and not n["window"].get("alive", True):
        return "failed", (f"neighbour={n['spec']}: it exited before the window closed (a "
                          "vm: guest whose workload failed or ended?)")
    if n is not None and not (n.get("alone") or {}).get("alive", True):
        return "failed", f"neighbour={n['spec']}: it exited while measured alone"
    if rec["host"]["errors"]:
        return "failed", "; ".join(rec["host"]["errors"])
    if "delta" not in rec["host"]:
        return "failed", "the host did not sample both window markers"
    hp = rec["halt_poll"]
    if rec["accel"] == "kvm" and hp["scope"] == "vm" and rec["haltpoll_cap"] != [hp["ns"]]:
        return "failed", (f"per-VM halt_poll_ns={hp['ns']} was not applied "
                          f"(library reported {rec['haltpoll_cap']})")
    return "ok", None


def enabled_caps(output):
    """The per-VM halt_poll_ns values the preload library reports it enabled."""
    return [ns for ns, _ in haltpollcap.enabled_values(output)]
