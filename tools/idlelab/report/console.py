"""Tables for the terminal: one run's guest counts beside KVM's per vCPU (`tools/bench
--side-by-side`, `make run`), and the closing comparison of `make run` (tools/demo): what
guest polling and host polling each cost and save against plain halt on this host.

Pure functions of raw records (bench/onerun.py) and their RunRows (derive/runrow.py): the
figures are the ones runs.csv holds, laid out for a person."""
from idlelab.derive.records import is_number
from idlelab.derive.runrow import NA_TCG, side_by_side

# (heading, width) of the side-by-side table; the groups say whose count it is.
_VCPU_COLUMNS = (("vCPU", 4), ("wakeups", 8), ("HLT", 7), ("halt_exits", 10),
                 ("tried", 6), ("caught", 6), ("sent", 6), ("avoided", 7), ("poll%", 6),
                 ("thread CPU%", 11))
_GROUPS = ((2, ""), (1, "guest"), (1, "KVM"), (2, "KVM polls"), (2, "guest IPIs"),
           (1, "guest"), (1, "host"))


def vcpu_table(rec, indent="    "):
    """Lines: per vCPU, the guest's HLT count beside KVM's halt_exits for the same window,
    KVM's polls attempted and successful, the guest's IPIs sent and avoided (the POLL flag),
    its share of the window spent polling and the vCPU thread's host CPU. Under TCG the KVM
    columns say n/a. Empty for a run that was not ok."""
    if rec.get("status") != "ok":
        return []
    per_vcpu = rec.get("per_vcpu") or side_by_side(rec)
    window_ns = (rec["host"].get("delta") or {}).get("elapsed_ns")
    widths = [w for _, w in _VCPU_COLUMNS]
    group, col = [], 0
    for span, name in _GROUPS:
        width = sum(widths[col:col + span]) + span - 1
        group.append(name.center(width) if name else " " * width)
        col += span
    lines = [indent + " ".join(group).rstrip(),
             indent + " ".join(h.rjust(w) for h, w in _VCPU_COLUMNS)]
    for v in per_vcpu:
        g, h = v["guest"], v["host"]
        kvm = (h.get("halt_exits"), h.get("halt_attempted_poll"),
               h.get("halt_successful_poll")) if isinstance(h, dict) else ("n/a",) * 3
        poll = (100 * g["poll_ns"] / window_ns if is_number(g.get("poll_ns")) and window_ns
                else None)
        cells = (v["vcpu"], g.get("wakeups"), g.get("hlt"), *kvm, g.get("ipi_sent"),
                 g.get("ipi_avoided"), _fmt(poll, 1), _fmt(v.get("host_cpu_pct"), 1))
        lines.append(indent + " ".join(("-" if c is None else str(c)).rjust(w)
                                       for c, w in zip(cells, widths)))
    return lines


def _fmt(value, digits):
    return None if value is None else f"{value:.{digits}f}"


# --- make run's closing table ---------------------------------------------------------------

def latency_us(row):
    """(label, µs) of the run's wake-up latency: pingpong's round trip, periodic's lateness."""
    if row.workload == "pingpong":
        return "RTT p50", row.rtt_p50_us
    return "late p50", row.late_p50_us


def per_s(count, row):
    """A window's count per second of the window (None where either is missing)."""
    if not is_number(count) or not is_number(row.window_ms) or not row.window_ms:
        return None
    return count / (row.window_ms / 1000)


def _change(value, base, points=False):
    """The change against plain halt: points for a percentage, % otherwise."""
    if not is_number(value) or not is_number(base):
        return "n/a"
    if points:
        return f"{value - base:+.1f} pt"
    if base == 0:
        return "=" if value == 0 else "new"
    return f"{100 * (value - base) / base:+.0f}%"


def comparison(rows, labels, base):
    """Lines of the closing table: per workload, each configuration's host CPU, halt exits,
    IPIs and latency, and beside each its change against `base` (plain halt) of the same
    workload. rows: RunRows; labels: {config name: label}; a row's configuration is the
    part of its run name after the workload (`pingpong-guestpoll`)."""
    head = (f"{'workload':9} {'configuration':30} {'host CPU':>9} {'halt exits/s':>12} "
            f"{'IPIs/s':>7} {'avoided/s':>9} {'latency':>15}   "
            f"{'vs halt: CPU':>12} {'exits':>6} {'IPIs':>6} {'latency':>7}")
    out = [head]
    by_workload = {}
    for r in rows:
        by_workload.setdefault(r.workload, {})[r.name.split("-", 1)[-1]] = r
    for workload, configs in by_workload.items():
        ref = configs.get(base)
        for name, label in labels.items():
            r = configs.get(name)
            if r is None:
                continue
            if not r.ok:
                out.append(f"{workload:9} {label:30} {r.status}: {r.reason}")
                continue
            what, lat = latency_us(r)
            exits = None if r.host_halt_exits == NA_TCG else per_s(r.host_halt_exits, r)
            ipis, avoided = per_s(r.guest_ipi_sent, r), per_s(r.guest_ipi_avoided, r)
            line = (f"{workload:9} {label:30} {_cell(r.host_cpu_pct, '%', 1):>9} "
                    f"{_cell(exits, '', 0) if r.host_halt_exits != NA_TCG else 'n/a':>12} "
                    f"{_cell(ipis, '', 0):>7} {_cell(avoided, '', 0):>9} "
                    f"{what + ' ' + _cell(lat, 'us', 0):>15}")
            if name != base and ref is not None and ref.ok:
                ref_exits = None if ref.host_halt_exits == NA_TCG else per_s(
                    ref.host_halt_exits, ref)
                line += (f"   {_change(r.host_cpu_pct, ref.host_cpu_pct, True):>12} "
                         f"{_change(exits, ref_exits):>6} "
                         f"{_change(ipis, per_s(ref.guest_ipi_sent, ref)):>6} "
                         f"{_change(lat, latency_us(ref)[1]):>7}")
            out.append(line.rstrip())
    return out


def _cell(value, unit, digits):
    return "-" if not is_number(value) else f"{value:.{digits}f}{unit}"
