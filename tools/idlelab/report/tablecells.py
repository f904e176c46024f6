"""Markdown building blocks shared by every table: cell formatting, a table, and picking
rows out of a matrix's RunRows by their fields."""
from idlelab.derive.runrow import is_number

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
            return f"{ns / scale:g} {unit}"
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
