"""The parts every matrix's markdown shares: the header (where the numbers come from), the
table of every run, and the run conditions (other load, accuracy check, sampling) under it.
The conditions are computed from the rows; nothing here states a figure of its own."""
import statistics

from idlelab.derive import primcosts
from idlelab.derive import figures as derive, tolerance

from idlelab.bench.probe import OPEN_READ_AT
from idlelab.derive.runrow import NA_TCG
from idlelab.report.tablecells import cell, fmt, md_table, num


def header(title, meta, seed_table):
    """Title, where the numbers come from, and the seed's own table for comparison."""
    mode = "quick (reduced) matrix" if meta.get("quick") else "full matrix"
    lines = [f"# {title}", "",
             f"Results folder `{meta.get('results', '?')}` ({mode}, {meta.get('accel', '?')}, "
             f"started {meta.get('started', '?')}; {meta.get('host_cpus', '?')} host CPUs). "
             f"Host: {meta.get('host_params_note', '?')}.", ""]
    if meta.get("completeness"):
        lines += [meta["completeness"], ""]
    if meta.get("accel") == "tcg":
        lines += ["Run under TCG: there are no KVM counters and no host halt polling, so the "
                  f"host columns say {NA_TCG}.", ""]
    if seed_table:
        lines += ["The seed's own table (real hardware):", "", "```", seed_table.strip("\n"),
                  "```", ""]
    return lines + primcosts.markdown(meta.get("cost_table"))


def conditions(rows):
    """The run conditions under every table: other load, accuracy, sample latency."""
    ok = [r for r in rows if r.ok]
    if not rows:
        return ["No run of this matrix was made."]
    lines = [line for line in (load_line(ok), accuracy_line(ok), sampling_line(ok),
                               disturbed_line(ok)) if ok and line]
    lines += [line for line in (late_line(rows),) if line]
    not_run = [r for r in rows if r.status == "not run"]
    failed = [r for r in rows if r.status == "failed"]
    if not_run:
        lines.append("- Not run: " + "; ".join(f"{r.name} ({r.reason})" for r in not_run) + ".")
    if failed:
        lines.append("- Failed: " + "; ".join(f"{r.name} ({r.reason})" for r in failed) + ".")
    return lines


def late_line(rows):
    """Late and lost wake-ups the guests reported, by whose fault (attribution.py)."""
    kinds = ("late_host", "late_guest", "lost_host", "lost_guest")
    seen = [r for r in rows if any(getattr(r, k) for k in kinds)]
    if not seen:
        return None
    total = {k: sum(getattr(r, k) or 0 for r in seen) for k in kinds}
    return ("- Late or lost wake-ups (the host's measured waits of the vCPUs covered the "
            "lateness: `_host`; did not: `_guest`): "
            + ", ".join(f"{n} {k}" for k, n in total.items() if n)
            + " in " + ", ".join(r.name for r in seen) + ".")


def load_line(ok):
    other = [r.other_load for r in ok if num(r.other_load) is not None]
    if not other:
        return None
    return (f"- Other load on the host during the runs (% of all host CPUs, not counting QEMU "
            f"and the harness): median {statistics.median(other):.1f}, max {max(other):.1f}; "
            f"load average at the end of the runs {min(r.loadavg_1m for r in ok):.2f}–"
            f"{max(r.loadavg_1m for r in ok):.2f}.")


def accuracy_line(ok):
    diffs = [r for r in ok if num(r.hlt_diff) is not None]
    if not diffs:
        return None
    flagged = [f"{r.name} ({r.hlt_diff_vcpus})" for r in ok if r.accuracy_flag is True]
    total = sum(r.guest_hlt for r in diffs if num(r.guest_hlt) is not None)
    return (f"- Accuracy check (per vCPU, guest HLT count vs host halt_exits over the "
            f"synchronised window, {len(diffs)} runs, {total:.0f} HLT in all): "
            + (f"flagged ({tolerance.describe()}): {', '.join(flagged)}." if flagged
               else f"every vCPU of every run equal ({tolerance.describe()} is flagged)."))


def sampling_line(ok):
    sample = [r.sample_ms_max for r in ok if num(r.sample_ms_max) is not None]
    reads = [r.read_ms_max for r in ok if num(r.read_ms_max) is not None]
    if not sample:
        return None
    unsynced = [r.name for r in ok if not r.window_sync]
    late = [r.name for r in ok if num(r.late_samples)]
    text = (f"- The host's read of KVM's counters took at most {max(reads):.1f} ms and ended at "
            f"most {max(sample):.1f} ms after its marker arrived; ")
    if not unsynced:
        return text + ("every window edge was synchronised (window_sync=1): the guest waited "
                       "at its barrier until the read was done.")
    return text + (f"not synchronised (window_sync=0, read during window_hold, at the open "
                   f"marker {OPEN_READ_AT:.0%} into it): {', '.join(unsynced)}; "
                   + (f"read after the hold in: {', '.join(late)}." if late
                      else "always within the hold."))


def disturbed_line(ok):
    """The runs disturbed on purpose (stall=): their figures are not the undisturbed ones."""
    hit = [f"{r.name}: {derive.disturbance_text(r)}" for r in ok if r.disturbed]
    if not hit:
        return None
    return ("- Disturbed on purpose (stall=: a vCPU thread stopped by the host with ptrace "
            "inside the window): " + "; ".join(hit) + ".")


DETAIL_HEAD = ["run", "guest idle", "MSR", "halt_poll_ns", "shrink", "guest HLT",
               "host halt exits", "attempted polls", "successful %", "host CPU %/vCPU",
               "poll %", "halt exits/s/vCPU", "metric", "other load %"]


def detail_table(rows):
    """Every run of a matrix with the host's counters next to the guest's."""
    lines = []
    for r in rows:
        if not r.ok:
            lines.append([run_cell(r), cell(r, "guest_idle")] + ["—"] * (len(DETAIL_HEAD) - 2))
            continue
        exits = (f"{fmt(r.host_halt_exits, 0)} ({fmt(r.hlt_diff, 0)})"
                 if num(r.hlt_diff) is not None else fmt(r.host_halt_exits))
        lines.append([run_cell(r), fmt(r.guest_idle), fmt(r.msr), fmt(r.halt_poll_ns),
                      fmt(r.host_shrink), fmt(r.guest_hlt, 0), exits,
                      fmt(r.host_attempted_poll, 0), fmt(r.poll_success_pct),
                      fmt(r.host_cpu_pct), fmt(r.host_poll_pct), fmt(r.halt_exits_per_s, 0),
                      metric_text(r), fmt(r.other_load)])
    return md_table(DETAIL_HEAD, lines)


def run_cell(r):
    """The run's name; a run disturbed on purpose says so, and how."""
    if not r.disturbed:
        return r.name
    if not r.ok:
        return f"{r.name} (stall: {derive.disturbance_text(r)})"
    return f"{r.name} **DISTURBED**: {derive.disturbance_text(r)}"


def metric_text(r):
    """The workload's headline figure, with its name."""
    if r.workload == "pingpong" and r.rtt_p50_us is not None:
        if r.disturbed and r.rtt_max_us is not None:
            return f"RTT p50 {fmt(r.rtt_p50_us, 0)} µs, max {fmt(r.rtt_max_us, 0)} µs"
        return f"RTT p50 {fmt(r.rtt_p50_us, 0)} µs"
    if r.workload == "periodic" and r.late_p50_us is not None:
        return (f"period {fmt(r.achieved_period_us, 0)} µs, late p50 "
                f"{fmt(r.late_p50_us, 0)} µs")
    if r.workload == "random" and r.late_p50_us is not None:
        return f"late p50 {fmt(r.late_p50_us, 0)} µs"
    if r.workload == "pipeline" and r.lap_p50_us is not None:
        return f"lap p50 {fmt(r.lap_p50_us, 0)} µs"
    return "—"


def page(title, meta, seed_table, lines, rows):
    """A whole markdown file: header, the layout's own lines, every run, the conditions."""
    out = header(title, meta, seed_table) + lines
    out += ["## Every run", "", detail_table(rows), ""] + conditions(rows)
    return "\n".join(out) + "\n"
