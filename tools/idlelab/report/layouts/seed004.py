"""Seed 004's layout (KVM halt_poll_ns_shrink 0 vs 2): columns as the seed's, Base (shrink
0), Shrink Enabled (value 2) and Delta; rows per workload: the successful-poll ratio, the
latency and the host CPU."""
from idlelab.report.tables import SIMULATED, cell, find, fmt, md_table, num, ordered, page

MATRIX = "seed004"
TITLE = "Seed 004: KVM halt_poll_ns_shrink 0 vs 2, reproduced on idlelab"
SEED_TABLE = """\
Android VM workload (Score)   Base      Shrink Enabled (value 2)    Delta
GeekBench Multi-core(CPU)     5754      5856                        2%
...
(with shrink enabled, most workloads show a higher % of successful polling)"""


def delta(a, b, key):
    """The seed's Delta column: relative change from Base, when both were measured; when a
    column could not run here, between the two simulated figures (never one of each),
    labelled so."""
    if not a or not b:
        return "n/a"
    if a.ok and b.ok:
        x, y, label = num(getattr(a, key)), num(getattr(b, key)), ""
    else:
        pk = f"predicted_{key}"
        x, y, label = num(getattr(a, pk, None)), num(getattr(b, pk, None)), f" {SIMULATED}"
        if a.status not in ("ok", "not run") or b.status not in ("ok", "not run"):
            return "n/a"
    if x is None or y is None or x == 0:
        return "n/a"
    return f"{100 * (y - x) / x:+.0f}%{label}"


def markdown(rows, meta):
    shrinks = ordered(r.host_shrink for r in rows)
    base_v = 0 if 0 in shrinks else (shrinks[0] if shrinks else None)
    enabled_v = next((s for s in shrinks if s != base_v), None)
    lines = []
    for w in ordered(r.workload for r in rows):
        lat_key, lat_name = (("rtt_p50_us", "RTT p50 µs") if w == "pingpong"
                             else ("late_p50_us", "timer lateness p50 µs"))
        base = find(rows, workload=w, host_shrink=base_v)
        en = find(rows, workload=w, host_shrink=enabled_v)
        for key, name, digits in (("poll_success_pct", "successful polls, % of attempted", 1),
                                  (lat_key, lat_name, 0), ("host_cpu_pct", "host CPU %/vCPU", 1),
                                  ("halt_exits_per_s", "halt exits/s/vCPU", 0)):
            lines.append([f"{w}: {name}", cell(base, key, digits), cell(en, key, digits),
                          delta(base, en, key)])
    body = [md_table(["workload: metric", f"Base (shrink={fmt(base_v)})",
                      f"Shrink Enabled (value {fmt(enabled_v)})", "Delta"], lines), "",
            "halt_poll_ns_shrink is a global kvm parameter with no per-VM override; where it is "
            "read-only the column that needs another value cannot run: with `tools/bench "
            "--predict` (`make bench` passes it) its cells are idlelab-sim's figures for the same "
            f"configuration, labelled {SIMULATED}, and their Delta is between two simulated "
            "figures; without, they say not run. Host window: "
            "per-VM halt_poll_ns (see the runs); guest idle=halt; random runs on vCPU 1 "
            "(exponential sleeps), pingpong on vCPUs 0 and 1.", ""]
    return page(TITLE, meta, SEED_TABLE, body, rows)
