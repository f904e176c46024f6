"""Seed 002's layout (host vs guest halt polling): rows are the polling configurations; the
round-trip time and its ratio to the floor (the same workload with no exit at all, standing
in for the seed's bare host), then KVM's counters per round trip; the verdicts, and the same
predicted on hardware."""
from idlelab.derive import effects
from idlelab.report.tables import (both, cell, find, fmt, md_table, num, page, per_rt,
                                   round_trip_counts, seed_sections, spread_cell)

MATRIX = "seed002"
TITLE = "Seed 002: host vs guest halt polling (cpuidle-haltpoll), reproduced on idlelab"
SEED_TABLE = """\
host                                        --> 31.33
halt_poll_ns=300000 / no guest busy spin    --> 33.40   (93.8%)
halt_poll_ns=0 / guest_halt_poll_ns=300000  --> 32.73   (95.7%)"""
# The seed compares to bare metal, which a VM cannot run: the floor (idle=poll, no exit at
# all) stands in; without it, `neither`.
REFERENCES = ("floor", "neither")
PREMISE = "not a row of the seed's; its premise (polling saves the wake-up a halt costs)"
# (what, run A, run B, direction, the seed's figures); `.placed` runs have the windows placed
# by the cost table (the matrix's comment says how)
CLAIMS = (
    ("round trip: guest polling (host window 0) against host polling (300 µs)", "host-poll",
     "guest-poll", effects.DOWN, "93.8 % → 95.7 % of the bare host's throughput"),
    ("round trip: host polling against neither", "neither", "host-poll", effects.DOWN, PREMISE),
    ("round trip: guest polling against neither", "neither", "guest-poll", effects.DOWN,
     PREMISE),
    ("round trip, windows placed by the cost table: guest polling against host polling",
     "host-poll.placed", "guest-poll.placed", effects.DOWN,
     "93.8 % → 95.7 % of the bare host's throughput"),
    ("round trip, windows placed: host polling against neither", "neither", "host-poll.placed",
     effects.DOWN, PREMISE),
    ("round trip, windows placed: guest polling against neither", "neither",
     "guest-poll.placed", effects.DOWN, PREMISE),
)


def label(r):
    """The seed's row names: host window / guest window, with the MSR said out loud."""
    host = f"halt_poll_ns={fmt(r.halt_poll_ns)}"
    if r.msr == "0":
        host += " (MSR=0: host polling off)"
    guest = {"haltpoll": f"guest_halt_poll_ns={r.guest_halt_poll_ns}",
             "poll": "guest idle=poll (no halt at all)"}.get(r.guest_idle, "no guest busy spin")
    return f"{r.name}: {host} / {guest}"


def reference(rows):
    return next((r for name in REFERENCES for r in rows if r.config == name and r.ok),
                next((r for r in rows if r.ok), None))


def why(a, b):
    return both(a, b, round_trip_counts)


def seed_effects(rows, label_=""):
    out = []
    names = {r.name for r in rows}
    for what, ca, cb, direction, seed in CLAIMS:
        if ca not in names and cb not in names:
            continue            # (a matrix without the placed rows)
        a, b = find(rows, name=ca), find(rows, name=cb)
        out.append(effects.Effect(label_ + what, seed, a, b, "rtt_p50_us", direction, " µs",
                                  why(a, b)))
    return out


def seed_table(rows, spread=True):
    show = spread_cell if spread else cell
    ref = reference(rows)
    ref_rtt = num(ref.rtt_p50_us) if ref else None
    lines = []
    for r in rows:
        if not r.ok:
            lines.append([r.config, cell(r, "rtt_p50_us")] + ["—"] * 8)
            continue
        rtt = num(r.rtt_p50_us)
        ratio = fmt(rtt / ref_rtt, 2) if rtt and ref_rtt else "—"
        pct = fmt(100 * ref_rtt / rtt, 1) if rtt and ref_rtt else "—"
        lines.append([label(r), show(r, "rtt_p50_us", 0), ratio, pct, fmt(r.rtt_p99_us, 0),
                      fmt(r.host_cpu_pct), fmt(per_rt(r, "host_halt_exits"), 2),
                      fmt(per_rt(r, "host_successful_poll"), 2),
                      fmt(per_rt(r, "guest_ipi_sent"), 2), fmt(r.other_load)])
    ref_name = ref.config if ref else "?"
    head = ["configuration", "RTT p50 µs", f"× {ref_name}", f"% of {ref_name} (as the seed)",
            "RTT p99 µs", "host CPU %/vCPU", "halt exits/RT", "host polls OK/RT",
            "IPIs sent/RT", "other load %"]
    return md_table(head, lines)


def markdown(rows, meta):
    ref = reference(rows)
    ref_name = ref.config if ref else "?"
    body = [seed_table(rows), "",
            "pingpong round trips between two vCPUs; halt_poll_ns is the kvm module parameter "
            "(global), as the seed set it; medians of the repeats, their range in brackets. "
            "The seed's reference row is the bare host; a guest cannot measure that, so the "
            f"ratios are to `{ref_name}`, the same workload with no exit at all (guest "
            "idle=poll: no vCPU halts, the waker skips the IPI), and \"% of\" is reference / "
            "value as in the seed. `guest-poll` sets the host window to 0 as the seed did "
            "(and MSR_KVM_POLL_CONTROL=0, hostpoll=auto); `both` keeps the host window and "
            "the MSR at 1. The `.placed` rows have both windows placed by this host's cost "
            "table (ipi_halt_rtt*8): here a round trip costs more than the seed's 300 µs, so "
            "no poll of that length can catch the token.", ""]
    body += seed_sections(rows, meta, MATRIX, seed_effects, seed_table)
    return page(TITLE, meta, SEED_TABLE, body, rows)
