"""Seed 000's layout (KVM dynamic halt polling): columns are the host polling
configurations; rows the idle vCPU's host CPU % tickless and at each tick rate, then the
ping-pong round trip (the seed's TCP_RR); the verdicts, and the same predicted on
hardware."""
from idlelab.derive import effects
from idlelab.report.tables import (both, cell, find, fmt, md_table, ns_text, ordered, page,
                                   round_trip_counts, seed_sections, spread_cell)

MATRIX = "seed000"
TITLE = "Seed 000: KVM dynamic halt-polling, reproduced on idlelab"
SEED_TABLE = """\
                        no-poll      always-poll    dynamic-poll
-----------------------------------------------------------------------
Idle (nohz) vCPU %c0     0.15%        0.3%            0.2%
Idle (250HZ) vCPU %c0    1.1%         4.6%~14%        1.2%
TCP_RR latency           34us         27us            26.7us"""
NO, ALWAYS, DYNAMIC = "no-poll", "always-poll", "dynamic-poll"
PLACED = ".placed"     # a run with its windows placed by the cost table (the matrix says how)
# (what, config A, config B, workload, hz, column, direction, the seed's figures)
CLAIMS = (
    ("idle vCPU at 250 Hz, host CPU: always-poll against no-poll", NO, ALWAYS, "idle", 250,
     "host_cpu_pct", effects.UP, "1.1 % → 4.6-14 %"),
    ("idle vCPU at 250 Hz, host CPU: dynamic-poll against always-poll", ALWAYS, DYNAMIC, "idle",
     250, "host_cpu_pct", effects.DOWN, "4.6-14 % → 1.2 % (dynamic saves 3.4-12.8 % of a CPU)"),
    ("idle vCPU tickless, host CPU: always-poll against no-poll", NO, ALWAYS, "idle", 0,
     "host_cpu_pct", effects.UP, "0.15 % → 0.3 %"),
    ("round trip: always-poll against no-poll", NO, ALWAYS, "pingpong", None, "rtt_p50_us",
     effects.DOWN, "TCP_RR 34 µs → 27 µs"),
    ("round trip: dynamic-poll against no-poll", NO, DYNAMIC, "pingpong", None, "rtt_p50_us",
     effects.DOWN, "TCP_RR 34 µs → 26.7 µs"),
    ("round trip, windows placed by the cost table: always-poll against no-poll", NO,
     ALWAYS + PLACED, "pingpong", None, "rtt_p50_us", effects.DOWN, "TCP_RR 34 µs → 27 µs"),
    ("round trip, windows placed: dynamic-poll against no-poll", NO, DYNAMIC + PLACED,
     "pingpong", None, "rtt_p50_us", effects.DOWN, "TCP_RR 34 µs → 26.7 µs"),
)


def pick(rows, config, workload, hz):
    """The run of `config` (`NAME.placed`: that placed run) for a workload (and tick rate)."""
    if config.endswith(PLACED):
        return find(rows, name=config)
    want = {"config": config, "workload": workload}
    if hz is not None:
        want["hz"] = hz
    return next((r for r in rows if all(getattr(r, k) == v for k, v in want.items())
                 and not r.name.endswith(PLACED)), None)


def why(a, b, workload):
    def one(r):
        if workload == "idle":
            return (f"{r.config}: {fmt(r.halt_exits_per_s, 0)} halts/s, "
                    f"{fmt(r.poll_success_pct)} % of attempted polls succeeded, a poll that "
                    f"caught nothing lasted {fmt(r.host_poll_miss_us, 0)} µs, polling "
                    f"{fmt(r.host_poll_pct)} % of the CPU")
        return round_trip_counts(r)
    return both(a, b, one)


def seed_effects(rows, label=""):
    out = []
    for what, ca, cb, workload, hz, key, direction, seed in CLAIMS:
        a, b = pick(rows, ca, workload, hz), pick(rows, cb, workload, hz)
        if a is None and b is None or (cb.endswith(PLACED) and b is None):
            continue            # (a matrix without those rows)
        unit = " µs" if key == "rtt_p50_us" else " %"
        out.append(effects.Effect(label + what, seed, a, b, key, direction, unit,
                                  why(a, b, workload)))
    return out


def seed_table(rows, spread=True):
    show = spread_cell if spread else cell
    configs = ordered(r.config for r in rows)
    lines = []
    idle_hz = sorted({r.hz for r in rows if r.workload == "idle" and r.hz is not None})
    for hz in idle_hz:
        label = "Idle (nohz) vCPU host CPU %" if hz == 0 else f"Idle ({hz}HZ) vCPU host CPU %"
        lines.append([label] + [show(find(rows, config=c, workload="idle", hz=hz),
                                     "host_cpu_pct", 2) for c in configs])
    rr_hz = ordered(r.hz for r in rows if r.workload == "pingpong")
    for hz in rr_hz:
        label = "pingpong RTT p50, µs (TCP_RR latency)"
        if len(rr_hz) > 1:
            label += f" at hz={hz}"
        lines.append([label] + [show(pick(rows, c, "pingpong", hz), "rtt_p50_us", 0)
                                for c in configs])
    if any(r.name.endswith(PLACED) for r in rows):
        lines.append(["the same, windows placed by the cost table"] +
                     [show(find(rows, name=c + PLACED), "rtt_p50_us", 0)
                      if find(rows, name=c + PLACED) else "—" for c in configs])
    return md_table([""] + configs, lines)


def config_text(rows):
    desc = []
    for c in ordered(r.config for r in rows):
        r = find(rows, config=c)
        scope = "per-VM" if r.halt_poll_scope == "vm" else r.halt_poll_scope
        r = pick(rows, c, r.workload, None)
        desc.append(f"`{c}` = {scope} halt_poll_ns={fmt(r.halt_poll_ns)} "
                    f"({ns_text(r.halt_poll_ns)}), grow {fmt(r.host_grow)} from "
                    f"{ns_text(r.host_grow_start)}, shrink {fmt(r.host_shrink)}")
    return "; ".join(desc)


def markdown(rows, meta):
    body = [seed_table(rows), "",
            "Configurations: " + config_text(rows) + ". Guest idle=halt throughout; medians "
            "of the repeats, their range in brackets. \"vCPU host CPU %\" is the vCPU "
            "thread's CPU time over the window as % of one host CPU (the seed's %c0), for the "
            "vCPUs that only idle (vCPU 0 spins at each window marker for the host's read "
            "and is left out). \"always-poll\" polled 500 µs on every halt, a mode "
            "dynamic-polling KVM no longer has: grow_start 500 µs with grow 1 and shrink 1 "
            "hold the vCPU's window at 500 µs once open, and halt_poll_ns=1 s opens it on "
            "the first halt shorter than a second. \"dynamic-poll\" has the v6 patch's "
            "values. The placed row has the windows placed by this host's cost table "
            "(ipi_halt_rtt*8): here a round trip takes longer than the seed's 500 µs window, "
            "so no poll of that length can catch the token.", ""]
    body += seed_sections(rows, meta, MATRIX, seed_effects, seed_table)
    return page(TITLE, meta, SEED_TABLE, body, rows)
