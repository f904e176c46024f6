"""What the terminal shows: the bench's notes (say(), on stderr, as stdout stays the
summary), one line per finished run (stderr, as it ends) and the summary at the end
(stdout): counts, each matrix's main table, the files written."""
import sys

from idlelab.derive import runrow
from idlelab.report import tables
from idlelab.derive.records import is_number
from idlelab.derive.runrow import aggregate, by_matrix


def say(msg):
    """A progress note or warning, on stderr."""
    print(f"bench: {msg}", file=sys.stderr, flush=True)


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


def saw_other_load(row, below_pct):
    """True when a run's other load reached the --quiet-below threshold."""
    return is_number(row.other_load) and row.other_load >= below_pct


def summary(recs, meta, written):
    """Counts, the first table of each matrix's markdown, and the files written."""
    rows = [runrow.summarize(r) for r in recs]
    counts = {s: sum(r.status == s for r in rows) for s in ("ok", "not run", "failed")}
    flagged = sum(r.accuracy_flag is True for r in rows)
    out = [f"\n== idlelab bench: {counts['ok']} ok, {counts['not run']} not run, "
           f"{counts['failed']} failed; {flagged} accuracy flags; "
           f"{meta.get('seconds', '?')} s; {meta.get('results')}"]
    for mid, mrows in by_matrix(aggregate(rows)).items():
        out += ["", f"-- {mid}"] + tables.first_table(tables.markdown(mid, mrows, meta))
    out += ["", "files:"] + [f"  {p}" for p in written]
    return "\n".join(out)
