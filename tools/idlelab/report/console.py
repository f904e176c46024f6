"""What the bench shows on the terminal: its notes (say(), on stderr, as stdout stays the
summary), one line per finished run (stderr, as it ends) and the summary at the end
(stdout: counts, each matrix's main table, the files written); one run's guest counts beside
KVM's per vCPU (`tools/bench --side-by-side`, `make run`), and the closing comparison of
`make run` (tools/demo): what guest polling and host polling each cost and save against
plain halt on this host.

Every line is made by a pure function of raw records (bench/onerun.py) and their RunRows
(derive/runrow.py), the figures runs.csv holds laid out for a person; say() alone writes."""
import os
import sys

from idlelab import TOP
from idlelab.derive import runrow, windows
from idlelab.derive.records import is_number
from idlelab.derive.runrow import NA_TCG, aggregate, by_matrix, side_by_side
from idlelab.report import tables


def say(msg):
    """A progress note or warning, on stderr."""
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def relpath(path):
    """A path as the tables show it: relative to the tree when inside it."""
    return os.path.relpath(path, TOP) if path.startswith(TOP) else path


def result_line(rec, row):
    """One line per finished run: status, the accuracy check, host CPU and other load."""
    if rec["status"] == "not run":
        return f"    not run: {rec['reason']}"
    if rec["status"] == "failed":
        return f"    FAILED: {rec['reason']}"
    cpu = row.host_cpu_pct
    cpu_txt = f"{cpu:.1f}%" if isinstance(cpu, float) else str(cpu)
    late = [s for s in ("open", "close") if rec["host"].get(s, {}).get("late")]
    late_txt = f" | host read after the hold at {'/'.join(late)}" if late else ""
    fault_txt = f" | DISTURBED: {runrow.disturbance_text(row)}" if row.disturbed else ""
    if row.neighbour is not None and row.neighbour_ops_per_s is not None:
        slow = "" if row.neighbour_slowdown is None else \
            f", slowdown {100 * row.neighbour_slowdown:.1f}%"
        fault_txt += f" | neighbour {row.neighbour} {row.neighbour_ops_per_s:.3g} ops/s{slow}"
    return (f"    ok {rec['qemu']['seconds']:.1f}s | {runrow.accuracy_text(row)} | "
            f"host CPU/vCPU {cpu_txt} | other load {row.other_load}%{late_txt}{fault_txt}")


def summary(recs, meta, written):
    """Counts, the first table of each matrix's markdown, and the files written."""
    rows = [runrow.summarize(w) for r in recs for w in windows.split(r)]
    counts = {s: sum(r.status == s for r in rows) for s in ("ok", "not run", "failed")}
    flagged = sum(r.accuracy_flag is True for r in rows)
    out = [f"\n== idlelab bench: {counts['ok']} ok, {counts['not run']} not run, "
           f"{counts['failed']} failed; {flagged} accuracy flags; "
           f"{meta.get('seconds', '?')} s; {meta.get('results')}"]
    for mid, mrows in by_matrix(aggregate(rows)).items():
        out += ["", f"-- {mid}"] + tables.first_table(tables.markdown(mid, mrows, meta))
    out += ["", "files:"] + [f"  {p}" for p in written]
    return "\n".join(out)


# --- one run's counts beside KVM's, per vCPU ------------------------------------------------

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


def per_wakeup(count, row):
    """A window's count per guest wake-up: what one wake-up costs, whatever the rate (a
    faster round trip makes more of them a second). None where either is missing."""
    if not is_number(count) or not is_number(row.guest_wakeups) or not row.guest_wakeups:
        return None
    return count / row.guest_wakeups


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
    """Lines of the closing table: per workload, each configuration's host CPU (% of a CPU
    and µs per wake-up), halt exits and IPIs sent and avoided per wake-up, and latency, and
    beside them the change against `base` (plain halt) of the same workload. rows: RunRows;
    labels: {config name: label}; a row's configuration is the part of its run name after
    the workload (`pingpong-guestpoll`)."""
    head = (f"{'workload':9} {'configuration':27} {'host CPU':>8} {'us/wake':>7} "
            f"{'exits/wake':>10} {'IPIs/wake':>9} {'avoided':>7} {'latency':>15}   "
            f"{'vs halt: CPU':>12} {'us/wake':>7} {'exits':>6} {'IPIs':>6} {'latency':>7}")
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
                out.append(f"{workload:9} {label:27} {r.status}: {r.reason}")
                continue
            f = _figures(r)
            what, lat = latency_us(r)
            line = (f"{workload:9} {label:27} {_cell(r.host_cpu_pct, '%', 1):>8} "
                    f"{_cell(f['cpu'], '', 1):>7} "
                    f"{'n/a' if r.host_halt_exits == NA_TCG else _cell(f['exits'], '', 2):>10} "
                    f"{_cell(f['ipis'], '', 2):>9} {_cell(f['avoided'], '', 2):>7} "
                    f"{what + ' ' + _cell(lat, 'us', 0):>15}")
            if name != base and ref is not None and ref.ok:
                g = _figures(ref)
                line += (f"   {_change(r.host_cpu_pct, ref.host_cpu_pct, True):>12} "
                         f"{_change(f['cpu'], g['cpu']):>7} {_change(f['exits'], g['exits']):>6} "
                         f"{_change(f['ipis'], g['ipis']):>6} "
                         f"{_change(lat, latency_us(ref)[1]):>7}")
            out.append(line.rstrip())
    return out


def _figures(row):
    """A row's per-wake-up figures (KVM's are None under TCG)."""
    kvm = row.host_halt_exits != NA_TCG
    return {"cpu": row.host_cpu_us_per_wakeup,
            "exits": per_wakeup(row.host_halt_exits, row) if kvm else None,
            "ipis": per_wakeup(row.guest_ipi_sent, row),
            "avoided": per_wakeup(row.guest_ipi_avoided, row)}


def _cell(value, unit, digits):
    return "-" if not is_number(value) else f"{value:.{digits}f}{unit}"
