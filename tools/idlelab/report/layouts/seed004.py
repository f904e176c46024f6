"""Seed 004's layout (KVM halt_poll_ns_shrink 0 vs 2): columns as the seed's, Base (shrink
0), Shrink Enabled (value 2) and Delta; rows per workload: the successful-poll ratio, the
latency and the host CPU. Then KVM's own trace of the window: the window's grow and shrink
as the seed showed them, and every halt by outcome, which says which halts a shrink value
turned from successful polls into misses; the verdicts; the same predicted on hardware."""
from idlelab.derive import effects, kvmtrace
from idlelab.report.tables import (SIMULATED, cell, find, fmt, md_table, ns_text, num, ordered,
                                   page, seed_sections, spread_cell)

MATRIX = "seed004"
TITLE = "Seed 004: KVM halt_poll_ns_shrink 0 vs 2, reproduced on idlelab"
SEED_TABLE = """\
Android VM workload (Score)   Base      Shrink Enabled (value 2)    Delta
GeekBench Multi-core(CPU)     5754      5856                        2%
...
(with shrink enabled, most workloads show a higher % of successful polling)

kvm_halt_poll_ns: vcpu 0: halt_poll_ns 10000 (grow 0)
kvm_halt_poll_ns: vcpu 0: halt_poll_ns 20000 (grow 10000)
kvm_halt_poll_ns: vcpu 0: halt_poll_ns 40000 (grow 20000)
kvm_halt_poll_ns: vcpu 0: halt_poll_ns 20000 (shrink 40000)
..."""
SEED_EFFECT = "with shrink 2 most workloads showed a higher share of successful polls"
METRICS = (("poll_success_pct", "successful polls, % of attempted", 1),
           ("host_cpu_pct", "host CPU %/vCPU", 1), ("halt_exits_per_s", "halt exits/s/vCPU", 0))


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


def latency(w):
    return (("rtt_p50_us", "RTT p50 µs") if w == "pingpong"
            else ("late_p50_us", "timer lateness p50 µs"))


def shrink_values(rows):
    shrinks = ordered(r.host_shrink for r in rows)
    base_v = 0 if 0 in shrinks else (shrinks[0] if shrinks else None)
    return base_v, next((s for s in shrinks if s != base_v), None)


def seed_table(rows, spread=True):
    show = spread_cell if spread else cell
    base_v, enabled_v = shrink_values(rows)
    lines = []
    for c in ordered(r.config for r in rows):
        base = find(rows, config=c, host_shrink=base_v)
        en = find(rows, config=c, host_shrink=enabled_v)
        lat_key, lat_name = latency((base or en).workload)
        for key, name, digits in (METRICS[0], (lat_key, lat_name, 0)) + METRICS[1:]:
            lines.append([f"{c}: {name}", show(base, key, digits), show(en, key, digits),
                          delta(base, en, key)])
    return md_table(["workload: metric", f"Base (shrink={fmt(base_v)})",
                     f"Shrink Enabled (value {fmt(enabled_v)})", "Delta"], lines)


def halts_line(r):
    """One cell of what KVM did with the halts of one run, from the trace."""
    if r is None or not r.ok or num(r.trace_poll_hit) is None:
        return None
    mean_us = (r.trace_window_mean_ns / 1000 if num(r.trace_window_mean_ns) is not None
               else None)
    short = r.trace_poll_hit + r.trace_short_poll_miss + r.trace_short_no_poll
    long_ = r.trace_long_poll_miss + r.trace_long_no_poll
    return (f"shrink={fmt(r.host_shrink)}: {fmt(short, 0)} short halts (≤ "
            f"{ns_text(r.halt_poll_ns)}): {fmt(r.trace_poll_hit, 0)} caught by a poll, "
            f"{fmt(r.trace_short_poll_miss, 0)} polled too briefly, "
            f"{fmt(r.trace_short_no_poll, 0)} not polled (window 0); "
            f"{fmt(r.trace_no_wait, 0)} found their wake-up already there; {fmt(long_, 0)} long "
            f"halts, {fmt(r.trace_long_poll_miss, 0)} of them polled in vain; the window "
            f"grew {fmt(r.trace_grow, 0)}, shrank {fmt(r.trace_shrink, 0)} and was reset "
            f"{fmt(r.trace_reset, 0)} times, {fmt(mean_us, 1)} µs at a halt on average")


def why(a, b):
    """The measured reason for the poll-success effect of one workload: which halts the
    other shrink value turned from hits into misses, or polled in vain."""
    la, lb = halts_line(a), halts_line(b)
    if not la or not lb:
        return ""
    text = f"{la}; {lb}."
    d_hit = b.trace_poll_hit - a.trace_poll_hit
    d_vain = b.trace_long_poll_miss - a.trace_long_poll_miss
    d_brief = b.trace_short_poll_miss - a.trace_short_poll_miss
    text += (f" Shrink {fmt(b.host_shrink)} against {fmt(a.host_shrink)}: {d_hit:+.0f} halts "
             f"caught, {d_brief:+.0f} short halts polled too briefly, {d_vain:+.0f} long "
             "halts polled in vain (medians of the repeats).")
    cuts = b.trace_shrink + b.trace_reset
    if b.host_shrink and cuts:
        text += (f" Of shrink {fmt(b.host_shrink)}'s {fmt(cuts, 0)} cuts of the window, "
                 f"{fmt(b.trace_shrink, 0)} kept one above 0; the others fell below "
                 f"grow_start ({ns_text(b.host_grow_start)}) and reset it to 0, as shrink 0 "
                 "does: the two settings differ only where the window had grown to twice "
                 "grow_start or more.")
    return text


def seed_effects(rows, label=""):
    base_v, enabled_v = shrink_values(rows)
    out = []
    for c in ordered(r.config for r in rows):
        a, b = (find(rows, config=c, host_shrink=v) for v in (base_v, enabled_v))
        window = f" (window {ns_text(a.halt_poll_ns)})" if a is not None else ""
        out.append(effects.Effect(
            f"{label}{c}{window}: shrink {fmt(enabled_v)} against {fmt(base_v)}, successful "
            "polls of attempted", SEED_EFFECT, a, b, "poll_success_pct", effects.UP, " %",
            why(a, b)))
    return out


def trace_part(rows):
    """The seed's trace view: the first window changes of the workload's vCPU per run."""
    out = []
    traced = [r for r in rows if r.ok and r.trace and "events" in r.trace]
    for r in traced:
        vcpu = int(r.workload_vcpus.split()[-1]) if r.workload_vcpus else 0
        snip = kvmtrace.snippet(r.trace, vcpu)
        out += [f"`{r.name}` (first repeat), vCPU {vcpu}, times from the window's opening:", "",
                "```"] + (snip or ["(no window change in the window)"]) + ["```", ""]
    skipped = [r for r in rows if r.ok and r.trace and "why" in r.trace]
    if skipped:
        out.append("No trace for " + ", ".join(f"{r.name} ({r.trace['why']})"
                                                for r in skipped) + ".")
        out.append("")
    lines = [halts_line(r) for r in traced]
    if any(lines):
        out += ["What KVM did with each halt (kvm_vcpu_wakeup against the window in force, "
                "median of the repeats):", ""] + [f"- {r.config}, {x}" for r, x in
                                                   zip(traced, lines) if x] + [""]
    return out


def markdown(rows, meta):
    body = [seed_table(rows), "",
            "halt_poll_ns_shrink is a global kvm parameter; here halt_poll_ns=200 µs, grow 2 "
            "from grow_start 10 µs, as the seed's hosts had them, all set globally and "
            "recorded in every run. Medians of the repeats, their range in brackets. Where the "
            "parameters are read-only the column that needs another value cannot run: with "
            "`tools/bench --predict` (`make bench` passes it) its cells are idlelab-sim's "
            f"figures for the same configuration, labelled {SIMULATED}. random runs on vCPU 1 "
            "(exponential sleeps, mean 200 µs), pingpong on vCPUs 0 and 1. `placed-random` "
            "is random with the window widened by this host's timer cost (halt_poll_ns="
            "global:timer+200us): a wake-up costs far more here than on hardware, so halts "
            "that are short there are long here and the seed's window would never grow.", ""]
    if any(r.trace for r in rows if r.ok):
        body += ["## KVM's trace of the window (trace=halt_poll_ns)", ""] + trace_part(rows)
    body += seed_sections(rows, meta, MATRIX, seed_effects, seed_table)
    return page(TITLE, meta, SEED_TABLE, body, rows)
