"""Seed 000's layout (KVM dynamic halt polling): columns are the host polling
configurations; rows the idle vCPU's host CPU % tickless and at each tick rate, then the
ping-pong round trip (the seed's TCP_RR)."""
from idlelab.report.tables import cell, find, fmt, md_table, ns_text, ordered, page

MATRIX = "seed000"
TITLE = "Seed 000: KVM dynamic halt-polling, reproduced on idlelab"
SEED_TABLE = """\
                        no-poll      always-poll    dynamic-poll
-----------------------------------------------------------------------
Idle (nohz) vCPU %c0     0.15%        0.3%            0.2%
Idle (250HZ) vCPU %c0    1.1%         4.6%~14%        1.2%
TCP_RR latency           34us         27us            26.7us"""


def markdown(rows, meta):
    configs = ordered(r.config for r in rows)
    lines = []
    idle_hz = sorted({r.hz for r in rows if r.workload == "idle" and r.hz is not None})
    for hz in idle_hz:
        label = "Idle (nohz) vCPU host CPU %" if hz == 0 else f"Idle ({hz}HZ) vCPU host CPU %"
        lines.append([label] + [cell(find(rows, config=c, workload="idle", hz=hz),
                                     "host_cpu_pct", 2) for c in configs])
    rr_hz = ordered(r.hz for r in rows if r.workload == "pingpong")
    for hz in rr_hz:
        label = "pingpong RTT p50, µs (TCP_RR latency)"
        if len(rr_hz) > 1:
            label += f" at hz={hz}"
        lines.append([label] + [cell(find(rows, config=c, workload="pingpong", hz=hz),
                                     "rtt_p50_us", 0) for c in configs])
    desc = []
    for c in configs:
        r = find(rows, config=c)
        scope = "per-VM" if r.halt_poll_scope == "vm" else r.halt_poll_scope
        desc.append(f"`{c}` = {scope} halt_poll_ns={fmt(r.halt_poll_ns)} "
                    f"({ns_text(r.halt_poll_ns)})")
    body = [md_table([""] + configs, lines), "",
            "Configurations: " + "; ".join(desc) + ". Guest idle=halt throughout. "
            "\"vCPU host CPU %\" is the vCPU thread's CPU time over the window as % of one "
            "host CPU (the seed's %c0), for the vCPUs that only idle (vCPU 0 spins at each "
            "window marker for the host's read and is left out). \"always-poll\" polled a fixed "
            "window on every halt, a mode dynamic-polling KVM no longer has: a per-VM window "
            "longer than the guest's tick stands in for it, so the window grows to cover every "
            "tick (always-poll's upper bound).", ""]
    return page(TITLE, meta, SEED_TABLE, body, rows)
