"""The kvm parameters a traced boot ran under, as build/idlelab-replay's --schedule: the boot's
own from its start, then each switch between windows with the time span its writes fell in
(the probe's t0_ns..t_ns, CLOCK_MONOTONIC, the trace's clock). Pure."""

KEYS = {"halt_poll_ns": "halt_poll_ns", "halt_poll_ns_grow": "grow",
        "halt_poll_ns_grow_start": "grow_start", "halt_poll_ns_shrink": "shrink"}


class NoSchedule(ValueError):
    """The record cannot say which parameters its halts saw (the message says why)."""


def params_text(kvm_params, vm_ns):
    parts = [f"{KEYS[k]}={int(v)}" for k, v in sorted(kvm_params.items())
             if k in KEYS and v is not None]
    if vm_ns is not None:
        parts.append(f"vm={int(vm_ns)}")
    return ",".join(parts)


def of_record(rec):
    """(the parameters from the start as --params text, [schedule lines]) of one raw record."""
    values = (rec.get("host_params") or {}).get("values") or {}
    if not all(values.get(k) is not None for k in KEYS):
        raise NoSchedule("its kvm parameters were not read")
    hp = rec.get("halt_poll") or {}
    vm = hp.get("ns") if hp.get("scope") == "vm" else None
    lines = []
    for w in rec.get("windows") or []:
        sw = w.get("switched")
        if not sw:
            continue
        if "error" in sw:
            raise NoSchedule(f"a switch failed: {sw['error']}")
        if "kvm_params" not in sw or "t0_ns" not in sw:
            raise NoSchedule("its switches were recorded without their parameters (a record "
                             "made before tools/replay)")
        lines.append(f"{sw['t0_ns']} {sw['t_ns']} "
                     f"{params_text(sw['kvm_params'], sw.get('vm_halt_poll_ns') or vm)}")
    return params_text(values, vm), lines
