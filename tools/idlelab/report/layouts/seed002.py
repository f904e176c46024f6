"""Seed 002's layout (host vs guest halt polling): rows are the polling configurations; the
round-trip time and its ratio to the reference, then KVM's counters per round trip."""
from idlelab.report.tables import cell, find, fmt, md_table, num, page, per_rt

MATRIX = "seed002"
TITLE = "Seed 002: host vs guest halt polling (cpuidle-haltpoll), reproduced on idlelab"
SEED_TABLE = """\
host                                        --> 31.33
halt_poll_ns=300000 / no guest busy spin    --> 33.40   (93.8%)
halt_poll_ns=0 / guest_halt_poll_ns=300000  --> 32.73   (95.7%)"""
# The seed compares to bare metal, which a VM cannot run: this configuration stands in.
REFERENCE = "neither"


def label(r):
    """The seed's row names: host window / guest window, with the MSR said out loud."""
    host = f"halt_poll_ns={fmt(r.halt_poll_ns)}"
    if r.msr == "0":
        host += " (MSR=0: host polling off)"
    guest = (f"guest_halt_poll_ns={r.guest_halt_poll_ns}" if r.guest_idle == "haltpoll"
             else "no guest busy spin")
    return f"{r.config}: {host} / {guest}"


def markdown(rows, meta):
    ref = find(rows, config=REFERENCE, status="ok") or next((r for r in rows if r.ok), None)
    ref_rtt = num(ref.rtt_p50_us) if ref else None
    lines = []
    for r in rows:
        if not r.ok:
            lines.append([r.config, cell(r, "rtt_p50_us")] + ["—"] * 7)
            continue
        rtt = num(r.rtt_p50_us)
        rel = f" ({100 * ref_rtt / rtt:.1f}%)" if ref_rtt and rtt else ""
        lines.append([label(r), f"{fmt(rtt, 0)}{rel}", fmt(r.rtt_p99_us, 0),
                      fmt(r.rt_per_s, 0), fmt(r.host_cpu_pct),
                      fmt(per_rt(r, "host_halt_exits"), 2),
                      fmt(per_rt(r, "host_successful_poll"), 2),
                      fmt(per_rt(r, "guest_ipi_sent"), 2), fmt(r.other_load)])
    ref_name = ref.config if ref else "?"
    head = ["configuration", f"RTT p50 µs (% of {ref_name})", "RTT p99 µs", "round trips/s",
            "host CPU %/vCPU", "halt exits/RT", "host polls OK/RT", "IPIs sent/RT",
            "other load %"]
    body = [md_table(head, lines), "",
            "pingpong round trips between two vCPUs. The seed's reference row is the bare "
            "host; a guest cannot measure that, so the percentages are relative to "
            f"`{ref_name}` (reference / value, as in the seed). "
            "`guest-poll` keeps the host window open: MSR_KVM_POLL_CONTROL=0 (hostpoll=auto) "
            "is what stops the host polling, which the attempted-polls column shows.", ""]
    return page(TITLE, meta, SEED_TABLE, body, rows)
