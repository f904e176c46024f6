"""The platform's cost table: what `bench=exits` measured each primitive to cost (parse()), and
a matrix's values written in its terms resolved from it (`timer+300us`). Pure.

The table is booted once at the start of a bench (costtable/measuring.py), kept in meta.json
and shown in every seed table (costtable/render.py), and it is the one place a matrix's
time values may be written in this machine's own time scale. Why a matrix needs that: these
machines' speed differs by several times from one to the next and from day to day, and some
effects (seed 003's pathology) sit where a period just exceeds what a wake-up costs. A value
written `PRIM+TIME`, `PRIM-TIME` or `PRIM*K` (PRIM one of the cost table's primitives, its
median) is resolved here from the table measured minutes before, so the sweep lands around
the effect on any machine. `timer+200us` is "the timer's arm-to-handler cost plus 200 us";
on hardware KVM it is little more than 200 us. A LOCATED name in place of PRIM
(`plateau-100us`) is a value the bench measured on the host after the table (haltpoll's
plateau: bench/plateau.py), kept in the table's "located" part.

The package: this module (the table's figures and the values in its terms), measuring.py
(the boots that measure it, with the kvm parameters they run with), tracedboot.py (its boot
traced on the host, for derive/threadtrace.py) and render.py (the table as markdown)."""
import dataclasses
import re

from idlelab.derive.records import parse_records

PRIMS = ("alu", "pause", "rdtsc", "locked_rmw", "cli_sti", "cpuid", "wrmsr_pollctl",
         "ipi_send", "ipi_halt_rtt", "poll_wake_rtt", "timer", "ipi_run_rtt", "load", "call",
         "pushf", "timer_halt", "eoi", "tsc_deadline", "timer_sleep", "ipi_poll_rtt", "sleep_arm",
         "sleep_entry", "sleep_run", "sleep_cut", "timer_poll")
ITERS = 500              # samples per primitive: a few seconds under this nested KVM
SMP = 2                  # the round trips need a second CPU
_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
# Values the bench locates on the host before the runs that use them (bench/plateau.py),
# each with the workload and guest knob it places: haltpoll's plateau as a periodic period
# and as pingpong's think time.
LOCATED = {"plateau": ("periodic", "period"), "plateau_think": ("pingpong", "think")}
_EXPR = re.compile(r"(?P<prim>[a-z_]+)(?:\*(?P<k>\d+(?:\.\d+)?))?"
                   r"(?:(?P<sign>[+-])(?P<add>\d+)(?P<unit>ns|us|ms|s)?)?")


class CostTableError(RuntimeError):
    """The cost table could not be measured (the message says why, in one line)."""


def parse(output):
    """{prim: {"ns_p50": float, "ns_p90": float, "n": int, ...}} from bench=exits output; a
    skipped primitive keeps {"skipped": 1, "why": ...}."""
    table = {}
    for kind, f in parse_records(output):
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
    """A table with every primitive at 1 us and every located value at 1 ms: for checking a
    matrix before anything ran."""
    return {"prims": {p: {"ns_p50": 1000.0} for p in PRIMS},
            "located": {name: {"ns": 1_000_000} for name in LOCATED}}


def median_ns(table, prim):
    """A primitive's median, ns, or a located value's (LOCATED: table["located"][name]["ns"]);
    CostTableError if the table has none, or is not a table (a hand-written file:
    `{"prims": {"alu": {"ns_p50": 313}}}`)."""
    if prim in LOCATED:
        return located_ns(table, prim)
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


def located_ns(table, name):
    """A located value, ns; CostTableError where it was not located."""
    located = table.get("located") if isinstance(table, dict) else None
    entry = located.get(name) if isinstance(located, dict) else None
    v = entry.get("ns") if isinstance(entry, dict) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
        why = entry.get("error") if isinstance(entry, dict) else None
        raise CostTableError(f"{name!r} was not located on this host"
                             + (f" ({why})" if why else ""))
    return v


def uses_located(value):
    """The located name a value is written in (`plateau+100us` -> "plateau"), or None."""
    m = _EXPR.fullmatch(value) if isinstance(value, str) else None
    return m.group("prim") if m and m.group("prim") in LOCATED else None


def _expr_ns(m, table):
    ns = median_ns(table, m.group("prim")) * float(m.group("k") or 1)
    if m.group("add"):
        add = int(m.group("add")) * _UNITS[m.group("unit") or "ns"]
        ns += -add if m.group("sign") == "-" else add
    return ns


def is_scaled(value):
    """True for a value written in the cost table's terms (`timer+200us`, `ipi_halt_rtt*3`,
    `plateau-100us`)."""
    m = _EXPR.fullmatch(value)
    return bool(m) and (m.group("prim") in PRIMS or m.group("prim") in LOCATED)


def resolve(value, table):
    """A scaled value as a plain time the guest takes ("754us"); other values unchanged."""
    if not isinstance(value, str) or not is_scaled(value):
        return value
    return f"{max(1, round(_expr_ns(_EXPR.fullmatch(value), table) / 1000))}us"


def resolve_ns(value, table):
    """A scaled value as ns (host windows are set in ns); other values unchanged."""
    if not isinstance(value, str) or not is_scaled(value):
        return value
    return min(max(0, round(_expr_ns(_EXPR.fullmatch(value), table))), 2 ** 32 - 1)


def resolve_run(run, table):
    """The run with every scaled guest value and host window resolved, its windows' arms
    too (its name and its settings, which other machines share, keep the expression)."""
    guest = {k: resolve(v, table) for k, v in run.guest.items()}
    host = {k: resolve_ns(v, table) for k, v in run.host_params.items()}
    vm = resolve_ns(run.vm_halt_poll_ns, table)
    design = getattr(run, "windows", None)        # a windowplan.Arm has none
    arms = getattr(design, "arms", None)
    if arms is not None:
        resolved = tuple(resolve_run(a, table) for a in arms)
        if resolved != arms:
            design = dataclasses.replace(design, arms=resolved)
    if guest == run.guest and host == run.host_params and vm == run.vm_halt_poll_ns and \
            design is getattr(run, "windows", None):
        return run
    kw = {"windows": design} if design is not None else {}
    return dataclasses.replace(run, guest=guest, host_params=host, vm_halt_poll_ns=vm, **kw)


def _scaled_window(v):
    return isinstance(v, str) and is_scaled(v)


def needs_table(runs):
    """True when some run, or an arm of its windows, is written in the cost table's terms."""
    runs = [x for run in runs for x in [run] + list(getattr(run.windows, "arms", None) or ())]
    return any(is_scaled(v) for run in runs for v in run.guest.values()) or \
        any(_scaled_window(v) for run in runs
            for v in list(run.host_params.values()) + [run.vm_halt_poll_ns])


def misplaced_located(runs):
    """(run, key, value, name) of the first run that writes a located name in a knob or
    workload it does not place (`plateau` places periodic's period alone; a host window
    none), or None."""
    for run in runs:
        host = dict(run.host_params)
        if run.vm_halt_poll_ns is not None:
            host["halt_poll_ns"] = run.vm_halt_poll_ns
        for key, value in list(run.guest.items()) + list(host.items()):
            name = uses_located(value)
            if name and (key not in run.guest or (run.workload, key) != LOCATED[name]):
                return run, key, value, name
    return None


def needs_located(runs):
    """The located names (LOCATED) the runs' guest values are written in, in LOCATED's order."""
    used = {uses_located(v) for run in runs for v in run.guest.values()}
    return [name for name in LOCATED if name in used]

