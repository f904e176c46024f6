"""The platform's cost table: `bench=exits` booted once at the start of a bench, its records
kept in meta.json and shown in every seed table, and the one place a matrix's time values
may be written in this machine's own time scale.

Why a matrix needs that: these machines' speed differs by several times from one to the
next and from day to day, and some effects (seed 003's pathology) sit where a period just
exceeds what a wake-up costs. A value written `PRIM+TIME` or `PRIM*K` (PRIM one of the cost
table's primitives, its median) is resolved here from the table measured minutes before,
so the sweep lands around the effect on any machine. `timer+200us` is "the timer's arm-to-
handler cost plus 200 us"; on hardware KVM it is little more than 200 us.

Pure: the table is measured by host/costtable.py; here it is parsed, its values resolved
and laid out for the seed tables' headers.
"""
import dataclasses
import re

from idlelab.derive import records

PRIMS = ("alu", "pause", "rdtsc", "locked_rmw", "cli_sti", "cpuid", "wrmsr_pollctl",
         "ipi_send", "ipi_halt_rtt", "poll_wake_rtt", "timer", "ipi_run_rtt", "load", "call",
         "pushf")
ITERS = 500              # samples per primitive: a few seconds under this nested KVM
SMP = 2                  # the round trips need a second CPU
_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_EXPR = re.compile(r"(?P<prim>[a-z_]+)(?:\*(?P<k>\d+(?:\.\d+)?))?"
                   r"(?:\+(?P<add>\d+)(?P<unit>ns|us|ms|s)?)?")


class CostTableError(RuntimeError):
    """The cost table could not be measured (the message says why, in one line)."""


def parse(output):
    """{prim: {"ns_p50": float, "ns_p90": float, "n": int, ...}} from bench=exits output; a
    skipped primitive keeps {"skipped": 1, "why": ...}."""
    table = {}
    for kind, f in records.parse_records(output):
        if kind != "bench" or f.get("name") != "exits" or f.get("prim") not in PRIMS:
            continue
        entry = {k: v for k, v in f.items() if k not in ("name", "prim")}
        for k in ("ns_p50", "ns_p90", "empty_sample_ns"):
            if k in entry:
                entry[k] = float(entry[k])
        if "n" in entry:
            entry["n"] = int(entry["n"])
        table[f["prim"]] = entry
    return table



def placeholder():
    """A table with every primitive at 1 us: for checking a matrix before anything ran."""
    return {"prims": {p: {"ns_p50": 1000.0} for p in PRIMS}}


def median_ns(table, prim):
    """A primitive's median, ns; CostTableError if the table has none, or is not a table (a
    hand-written file: `{"prims": {"alu": {"ns_p50": 313}}}`)."""
    prims = table.get("prims") if isinstance(table, dict) else None
    entry = prims.get(prim) if isinstance(prims, dict) else None
    if entry is not None and not isinstance(entry, dict):
        raise CostTableError(f"the cost table's {prim!r} is not an object with ns_p50")
    if entry is None or entry.get("skipped") or "ns_p50" not in entry:
        raise CostTableError(f"the cost table has no figure for {prim!r}"
                             + (f" ({entry['why']})" if entry and entry.get("why") else ""))
    v = entry["ns_p50"]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
        raise CostTableError(f"the cost table's {prim!r} ns_p50 is {v!r}, not a number of ns")
    return v


def is_scaled(value):
    """True for a value written in the cost table's terms (`timer+200us`, `ipi_halt_rtt*3`)."""
    m = _EXPR.fullmatch(value)
    return bool(m) and m.group("prim") in PRIMS


def resolve(value, table):
    """A scaled value as a plain time the guest takes ("754us"); other values unchanged."""
    m = _EXPR.fullmatch(value)
    if not m or m.group("prim") not in PRIMS:
        return value
    ns = median_ns(table, m.group("prim")) * float(m.group("k") or 1)
    if m.group("add"):
        ns += int(m.group("add")) * _UNITS[m.group("unit") or "ns"]
    return f"{max(1, round(ns / 1000))}us"


def resolve_ns(value, table):
    """A scaled value as ns (host windows are set in ns); other values unchanged."""
    if not isinstance(value, str) or not is_scaled(value):
        return value
    m = _EXPR.fullmatch(value)
    ns = median_ns(table, m.group("prim")) * float(m.group("k") or 1)
    if m.group("add"):
        ns += int(m.group("add")) * _UNITS[m.group("unit") or "ns"]
    return min(round(ns), 2 ** 32 - 1)


def resolve_run(run, table):
    """The run with every scaled guest value and host window resolved (its name and its
    settings, which other machines share, keep the expression)."""
    guest = {k: resolve(v, table) for k, v in run.guest.items()}
    host = {k: resolve_ns(v, table) for k, v in run.host_params.items()}
    vm = resolve_ns(run.vm_halt_poll_ns, table)
    if guest == run.guest and host == run.host_params and vm == run.vm_halt_poll_ns:
        return run
    return dataclasses.replace(run, guest=guest, host_params=host, vm_halt_poll_ns=vm)


def _scaled_window(v):
    return isinstance(v, str) and is_scaled(v)


def needs_table(runs):
    return any(is_scaled(v) for run in runs for v in run.guest.values()) or \
        any(_scaled_window(v) for run in runs
            for v in list(run.host_params.values()) + [run.vm_halt_poll_ns])


def markdown(table):
    """The cost table as markdown lines, for every seed file's header."""
    if not table:
        return []
    if table.get("skipped"):
        return ["The platform's cost table (`bench=exits`) was not measured "
                "(`tools/bench --no-cost-table`).", ""]
    if table.get("error"):
        return [f"The platform's cost table (`bench=exits`) could not be measured: "
                f"{table['error']}", ""]
    lines = [f"The platform's cost table, measured by `bench=exits iters={table['iters']}` at "
             f"the start of this bench ({table['accel']}, {SMP} vCPUs; ns per operation):", "",
             "| primitive | p50 ns | p90 ns | n | how |", "|---|---|---|---|---|"]
    for prim in PRIMS:
        e = table["prims"].get(prim, {})
        if e.get("skipped"):
            lines.append(f"| {prim} | skipped | | 0 | {e.get('why', '')} |")
            continue
        how = ", ".join(f"{k}={v}" for k, v in e.items()
                        if k in ("target", "answer", "timer", "wait", "ops_per_sample", "chain",
                                 "with"))
        lines.append(f"| {prim} | {e.get('ns_p50', 0):.1f} | {e.get('ns_p90', 0):.1f} | "
                     f"{e.get('n', 0)} | {how} |")
    return lines + [""] + path_markdown(table.get("path_insns"))


def path_markdown(path):
    """The kernel's wake path by phase (wakepath/insncount.py's path_insns), which the
    simulator's here table scales its fitted guest paths by, as one line; nothing for a
    folder without it. Its phases are the record's figures besides the round trips."""
    if not path:
        return []
    if "error" in path:
        return [f"The kernel's wake path could not be counted: {path['error']}", ""]
    phases = [k for k, v in path.items() if k != "round_trips"
              and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return [f"The kernel's wake path, guest instructions per pingpong round trip under TCG "
            f"({path['knobs']}): " + ", ".join(f"{p} {path[p]:.0f}" for p in phases)
            + f" ({sum(path[p] for p in phases):.0f} in all).", ""]
