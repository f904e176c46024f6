"""Every matrix's markdown: the cells (numbers rounded, text markers kept), the parts each
table shares (the header saying where the numbers come from, the table of every run, the
run conditions under it), and the dispatch: a seed matrix laid out like the seed's own table
(report/layouts/, one module per seed), any other matrix as the table of every run.

Pure: computed from the rows and the invocation's meta data; nothing here states a figure
of its own."""
import importlib
import statistics

from idlelab.costtable.render import markdown as cost_table_markdown
from idlelab.derive import effects, kvmdelta, runrow, tolerance
from idlelab.derive.records import is_number
from idlelab.derive.runrow import NA_TCG
from idlelab.derive.tolerance import OPEN_READ_AT

EMPTY = "—"


def fmt(value, digits=1):
    """A table cell: numbers rounded, None as an em dash, text as is."""
    if value is None:
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def ns_text(ns):
    """A time in ns the way people say it: 200000 -> "200 µs", 10000000 -> "10 ms"."""
    if not isinstance(ns, int) or isinstance(ns, bool):
        return fmt(ns)
    for unit, scale in (("s", 10 ** 9), ("ms", 10 ** 6), ("µs", 10 ** 3)):
        if ns >= scale:
            return f"{ns / scale:.4g} {unit}"
    return f"{ns} ns"


SIMULATED = "(simulated)"


def simulated(row, key):
    """The simulator's figure for a run this machine could not run (tools/bench --predict
    filled predicted_KEY), else None."""
    if row is None or row.status != "not run":
        return None
    return num(getattr(row, f"predicted_{key}", None))


def cell(row, key, digits=1):
    """A cell for one run's field: its value, the simulated value of a run that could not
    run here (labelled so), or why there is none."""
    if row is None:
        return EMPTY
    if row.status == "not run":
        if getattr(row, "predicted_costs", None) is not None:   # predicted: the figure or —
            return f"{fmt(simulated(row, key), digits)} {SIMULATED}"
        return f"not run: {row.reason}"
    if not row.ok:
        return "failed"
    return fmt(getattr(row, key), digits)


def spread_cell(row, key, digits=1):
    """cell() with the repeats' range: "12.5 (12.0–13.1)" where more than one run
    succeeded and they differ."""
    text = cell(row, key, digits)
    if row is None or not row.ok or not row.spread or key not in row.spread:
        return text
    lo, hi = row.spread[key]
    if (row.repeat or 1) < 2 or fmt(lo, digits) == fmt(hi, digits):
        return text
    return f"{text} ({fmt(lo, digits)}–{fmt(hi, digits)})"


def hardware_rows(meta, mid):
    """The same matrix's runs predicted by idlelab-sim with hardware costs
    (sim/simrun.py, filled by tools/bench --predict), [] without."""
    return [r for r in meta.get("hardware_rows") or [] if r.matrix == mid]


HARDWARE_NOTE = ("The same matrix predicted by idlelab-sim with the published hardware KVM "
                 "costs (tools/sim/costs/hardware.txt; one run each, the simulator is "
                 "deterministic). A value placed by the cost table (`timer+300us`) is placed "
                 "by hardware's (bench=exits `timer` = timer_arm + timer_running + "
                 "irq_entry there).")


def seed_sections(rows, meta, mid, effects_of, table_of):
    """The end of a seed's table: its verdicts (effects_of(rows, label) -> [Effect]), then the
    same matrix predicted with hardware costs (table_of(rows, spread=False)) and its
    verdicts, where there are hardware rows."""
    out = effects.section(effects_of(rows, ""))
    hw = hardware_rows(meta, mid)
    if hw:
        out += ["## The same on hardware KVM, predicted", "", HARDWARE_NOTE, "",
                table_of(hw, spread=False), ""]
        out += effects.section(effects_of(hw, "hardware, predicted: "),
                               title="Verdicts on the prediction", deterministic=True)
    return out


def both(a, b, one):
    """An effect's reason: one(row) for each side that ran, joined; "" if neither did."""
    parts = [p for p in (one(r) for r in (a, b) if r is not None and r.ok) if p]
    return "; ".join(parts) + "." if parts else ""


def round_trip_counts(r):
    """What KVM did per round trip of a pingpong run, for an effect's reason."""
    return (f"{r.name}: {fmt(per_rt(r, 'host_halt_exits'), 2)} halt exits, "
            f"{fmt(per_rt(r, 'host_successful_poll'), 2)} successful host polls and "
            f"{fmt(per_rt(r, 'guest_ipi_sent'), 2)} IPIs per round trip, host CPU "
            f"{fmt(r.host_cpu_pct)} %")


def md_table(header, lines):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
    return "\n".join(out)


def ordered(values):
    """The distinct values in first-seen order."""
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def find(rows, **want):
    """The first row whose fields have the wanted values, or None."""
    for r in rows:
        if all(getattr(r, k) == v for k, v in want.items()):
            return r
    return None


def num(v):
    """v if it is a measured number, else None (so text markers do not enter arithmetic)."""
    return v if is_number(v) else None

def per_rt(r, key):
    """A counter per round trip (kvmdelta.per_event), rounded to 2 places; NA_TCG kept."""
    value = getattr(r, key)
    if value == NA_TCG:
        return NA_TCG
    v = kvmdelta.per_event(value, r.iters)
    return None if v is None else round(v, 2)


# --- the parts every table shares ----------------------------------------------------------

def header(title, meta, seed_table):
    """Title, where the numbers come from, and the seed's own table for comparison."""
    mode = "quick (reduced) matrix" if meta.get("quick") else "full matrix"
    host = meta.get("host") or {}
    where = meta.get("accel", "?")
    if host.get("host") == "nested":
        where = f"the nested KVM host, Linux {host.get('host_kernel', '?')}"
    elif host.get("host") == "kvm":
        where = f"KVM, Linux {host.get('host_kernel', '?')}"
    lines = [f"# {title}", "",
             f"Results folder `{meta.get('results', '?')}` ({mode}, {where}, "
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
    return lines + cost_table_markdown(meta.get("cost_table"))


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
    """Late and lost wake-ups the guests reported, by whose fault (derive/latewake.py)."""
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
    hit = [f"{r.name}: {runrow.disturbance_text(r)}" for r in ok if r.disturbed]
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
        return f"{r.name} (stall: {runrow.disturbance_text(r)})"
    return f"{r.name} **DISTURBED**: {runrow.disturbance_text(r)}"


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


# --- one markdown per matrix ---------------------------------------------------------------

# The seed matrices' layouts (report/layouts/), by matrix id: a run loads only its own.
LAYOUTS = ("seed000", "seed002", "seed003", "seed004", "governors", "neighbours", "linux")


def layout(mid):
    """The layout module of matrix `mid`, None for a matrix laid out generically."""
    if mid not in LAYOUTS:
        return None
    return importlib.import_module(f"idlelab.report.layouts.{mid}")


def generic(mid, rows, meta):
    """A matrix that is not a seed: the per-run table."""
    out = header(f"Matrix {mid}", meta, None) + [detail_table(rows), ""] + conditions(rows)
    return "\n".join(out) + "\n"


def markdown(mid, rows, meta):
    """The markdown for one matrix (rows already aggregated over repeats). A matrix of a
    folder cut short before its first run gets its header and that line alone."""
    if not rows:
        return "\n".join(header(f"Matrix {mid}", meta, None) + conditions(rows)) + "\n"
    lay = layout(mid)
    return lay.markdown(rows, meta) if lay else generic(mid, rows, meta)


def first_table(text):
    """The first markdown table in a text, as its lines (skipping quoted code blocks)."""
    lines, inside, code = [], False, False
    for ln in text.splitlines():
        if ln.startswith("```"):
            code = not code
            continue
        if code:
            continue
        if ln.startswith("|"):
            inside = True
            lines.append(ln)
        elif inside:
            break
    return lines
