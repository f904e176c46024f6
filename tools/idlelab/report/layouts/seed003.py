"""Seed 003's layout (halt polling on a vCPU woken by its own timer): rows are the timer
periods; per host window, the vCPU's host CPU % and halt exits/s. Then the seed's mpstat
view (poll / other / idle) at the period where the largest window costs most over none."""
from idlelab.derive import kvmdelta
from idlelab.report.tables import cell, find, fmt, md_table, num, ordered, page

MATRIX = "seed003"
TITLE = "Seed 003: halt polling on a vCPU woken by its own timer, reproduced on idlelab"
SEED_TABLE = """\
halt_poll_ns=200000: Average: 6  %sys 4.26  %guest 17.83  %idle 77.91
halt_poll_ns=400000: Average: 6  %sys 89.59  %guest 8.45  %idle 1.96
(a vCPU woken by its own timer just inside the poll window burns the host CPU)"""


def windows(rows):
    """The host windows (halt_poll_ns) in matrix order."""
    return ordered(r.halt_poll_ns for r in rows)


def periods(rows):
    return sorted({r.period_us for r in rows if r.period_us is not None})


def worst_period(rows):
    """(period, extra host CPU %) where the largest window's CPU exceeds the smallest's the
    most; (None, None) with fewer than two windows or nothing measured."""
    ws = windows(rows)
    if len(ws) < 2:
        return None, None
    best, gap = None, None
    for p in periods(rows):
        a, b = find(rows, period_us=p, halt_poll_ns=ws[0]), find(rows, period_us=p,
                                                                   halt_poll_ns=ws[-1])
        if a and b and num(a.host_cpu_pct) is not None and num(b.host_cpu_pct) is not None:
            g = b.host_cpu_pct - a.host_cpu_pct
            if gap is None or g > gap:
                best, gap = p, g
    return best, gap


def mpstat_lines(rows, period):
    """The seed's mpstat columns for each window at one period."""
    out = []
    for w in windows(rows):
        r = find(rows, period_us=period, halt_poll_ns=w)
        if r is None or not r.ok or num(r.host_cpu_pct) is None:
            continue
        poll, other, idle = kvmdelta.mpstat_split(r.host_cpu_pct, num(r.host_poll_pct))
        out.append([fmt(w), fmt(r.host_cpu_pct, 2), fmt(poll, 2), fmt(other, 2),
                    fmt(idle, 2)])
    return out


def findings(rows, worst, gap):
    """What this run shows, computed from its rows (no figure of any one machine)."""
    ws, ps = windows(rows), periods(rows)
    out = []
    short = find(rows, period_us=ps[0], halt_poll_ns=ws[0]) if ps and ws else None
    if short is not None and short.ok and num(short.achieved_period_us) is not None:
        out.append(f"The shortest period asked for, {fmt(ps[0], 0)} µs, came out at "
                   f"{fmt(short.achieved_period_us, 0)} µs (halt_poll_ns={fmt(ws[0])}); a "
                   "period shorter than the guest's wake-up cost comes out at that cost.")
    if worst is not None:
        out.append(f"The largest window cost most over the smallest at {fmt(worst, 0)} µs "
                   f"({gap:+.1f} points of host CPU).")
    return " ".join(out)


def markdown(rows, meta):
    ws, ps = windows(rows), periods(rows)
    head = ["period µs", f"achieved µs (halt_poll_ns={fmt(ws[0]) if ws else '?'})"]
    for w in ws:
        head += [f"halt_poll_ns={fmt(w)}: host CPU %", "halt exits/s"]
    lines = []
    for p in ps:
        line = [fmt(p, 0), cell(find(rows, period_us=p, halt_poll_ns=ws[0]),
                                "achieved_period_us", 0)]
        for w in ws:
            r = find(rows, period_us=p, halt_poll_ns=w)
            line += [cell(r, "host_cpu_pct"), cell(r, "halt_exits_per_s", 0)]
        lines.append(line)
    body = [md_table(head, lines), ""]
    worst, gap = worst_period(rows)
    if worst is not None:
        body += [f"The seed's mpstat view at period {fmt(worst, 0)} µs (one vCPU thread):", "",
                 md_table(["halt_poll_ns", "CPU %", "%poll (≈ seed %sys)", "%guest + exits",
                           "%idle"], mpstat_lines(rows, worst)), ""]
    body += ["workload=periodic on vCPU 1 (cpus=0x2, hz=0, idle=halt); vCPU 0 only runs the "
             "window. Host CPU % is vCPU 1's thread over the window, %poll its "
             "halt_poll_success_ns + halt_poll_fail_ns. The pathology (the window covering "
             "the whole idle gap, so every halt is a successful poll that burns the CPU) "
             "appears at periods near the guest's wake-up cost + window, so where it shows "
             "depends on how expensive a guest wake-up is on the host. "
             + findings(rows, worst, gap), ""]
    return page(TITLE, meta, SEED_TABLE, body, rows)
