"""One markdown file per matrix: a seed matrix laid out like the seed's own table (one
module per seed layout), any other matrix as the table of every run."""
from idlelab.report.layouts import governors, neighbours, seed000, seed002, seed003, seed004
from idlelab.report.tableparts import conditions, detail_table, header

LAYOUTS = {m.MATRIX: m.markdown
           for m in (seed000, seed002, seed003, seed004,
                     governors, neighbours)}


def generic(mid, rows, meta):
    """A matrix that is not a seed: the per-run table."""
    out = header(f"Matrix {mid}", meta, None) + [detail_table(rows), ""] + conditions(rows)
    return "\n".join(out) + "\n"


def markdown(mid, rows, meta):
    """The markdown for one matrix (rows already aggregated over repeats). A matrix of a
    folder cut short before its first run gets its header and that line alone."""
    if not rows:
        return "\n".join(header(f"Matrix {mid}", meta, None) + conditions(rows)) + "\n"
    layout = LAYOUTS.get(mid)
    return layout(rows, meta) if layout else generic(mid, rows, meta)


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
