"""What the guest printed, read: its machine-readable records, one run's results, the cost
table's values and whose fault a late wake-up was. Pure: text and samples in, values out.

Records: `@idlelab <type> key=value ...` lines. Values are bare tokens or double-quoted
strings (which may hold spaces; \" and \\ escape). Anything else on the console is for
people and is ignored.

A run's results: `parse_run(text)` gathers the records of one run's serial console: the
boot, idle and config records, the measurement window, the per-CPU counters and the
workload's result, with numbers converted and the identities the guest promises checked by
`check_invariants`.

The platform's cost table: `bench=exits` booted once at the start of a bench (measured by
host/platform.py), its records kept in meta.json and shown in every seed table, and the one
place a matrix's time values may be written in this machine's own time scale. Why a matrix
needs that: these machines' speed differs by several times from one to the next and from
day to day, and some effects (seed 003's pathology) sit where a period just exceeds what a
wake-up costs. A value written `PRIM+TIME`, `PRIM-TIME` or `PRIM*K` (PRIM one of the cost
table's primitives, its median) is resolved here from the table measured minutes before, so
the sweep lands around the effect on any machine. `timer+200us` is "the timer's arm-to-handler
cost plus 200 us"; on hardware KVM it is little more than 200 us. A LOCATED name in place of
PRIM (`plateau-100us`) is a value the bench measured on the host after the table (haltpoll's
plateau: bench/plateau.py), kept in the table's "located" part.

Whose fault a late or lost wake-up was (selftest=wakeup's late_wakeup_seen and lost_wakeup
records): attribute() reads those records and asks a wait source (samplers.WaitSampler, or
a fake in the tests) how long the host kept each vCPU from running. A wake-up is late by its
lateness, the time beyond the bound (lost: its whole wait). The host's share is what the
target and the waker vCPU waited over the wake-up, each taken as the larger of the host's
own measure (schedstat run delay and the harness's stalls) and the guest's steal time from
KVM, and the two added (the waker's wait delays its seeing the answer as the target's
delays the answer); or, if larger, what any other vCPU waited over it: a vCPU the host did
not run may be halfway through a step the wake-up waits for (another waker's wake of the
same thread, begun and not finished: seen when only a third vCPU was stopped, the
lock-holder preemption of a lock-free protocol). When that covers the lateness the verdict
is late_host (lost_host), else late_guest (lost_guest): the guest would have been late even
had the host run every vCPU at once."""
import dataclasses
import re
from dataclasses import dataclass, field

from idlelab.derive import threadtrace

PREFIX = "@idlelab "
_FIELD = re.compile(r'\s*([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\S*)')


class RecordError(ValueError):
    pass


def is_number(v):
    """A measured number (bools and NA_TCG are not)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def parse_line(line):
    """(type, {key: value}) for an @idlelab line, None for any other line."""
    line = line.rstrip("\r\n")
    at = line.find(PREFIX)
    if at < 0:
        return None
    rest = line[at + len(PREFIX):]
    kind, _, body = rest.partition(" ")
    if not re.fullmatch(r"[a-z_]+", kind):
        raise RecordError(f"bad record type {kind!r} in {line!r}")
    fields = {}
    pos = 0
    body = body.rstrip()
    while pos < len(body):
        m = _FIELD.match(body, pos)
        if not m:
            raise RecordError(f"cannot parse field at {body[pos:]!r} in {line!r}")
        key, value = m.group(1), m.group(2)
        if value.startswith('"'):
            value = re.sub(r'\\(.)', r'\1', value[1:-1])
        fields[key] = value
        pos = m.end()
    return kind, fields


def parse_records(text):
    out = []
    for line in text.splitlines():
        rec = parse_line(line)
        if rec:
            out.append(rec)
    return out


# --- One run's results --------------------------------------------------------------------

# The idle time and the window's ends are converted from cycles to ns separately.
IDLE_SLACK_NS = 1000
# The Linux guest reads each idle state's time from sysfs in whole µs (truncated), per state
# and CPU at each marker, and cpuidle stamps idle periods with its own clock reads.
LINUX_IDLE_SLACK_NS = 20_000


class RunError(ValueError):
    pass


def _num(v):
    try:
        return int(v, 0)
    except ValueError:
        return v


def _numbers(fields):
    return {k: _num(v) for k, v in fields.items()}


@dataclass
class Run:
    boot: dict = field(default_factory=dict)
    idle: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    windows: list = field(default_factory=list)   # [{"state": "open", "what":..., "t_ns":...}]
    cpus: list = field(default_factory=list)      # one dict per CPU, in id order
    result: dict = None
    exit: dict = None

    @property
    def window_ns(self):
        opened = [w for w in self.windows if w["state"] == "open"]
        closed = [w for w in self.windows if w["state"] == "close"]
        if not opened or not closed:
            raise RunError("the run has no complete measurement window")
        return closed[-1]["t_ns"] - opened[-1]["t_ns"]

    def total(self, counter):
        """The counter summed over the CPUs; None if a CPU's record lacks it (the Linux guest
        prints only what Linux counts: docs/records.md)."""
        if not all(counter in c for c in self.cpus):
            return None
        return sum(c[counter] for c in self.cpus)


def parse_run(text):
    run = Run()
    for kind, fields in parse_records(text):
        f = _numbers(fields)
        if kind in ("boot", "idle", "exit"):
            setattr(run, kind, f)
        elif kind == "config":
            run.config.update(fields)  # knob values stay text: "250us", "haltpoll"
        elif kind == "window":
            run.windows.append(f)
        elif kind == "cpu":
            run.cpus.append(f)
        elif kind == "result":
            if run.result is not None:
                raise RunError("two result records in one run")
            run.result = f
    if run.cpus and [c["id"] for c in run.cpus] != list(range(len(run.cpus))):
        raise RunError("cpu records are not one per CPU in order")
    return run


def check_invariants(run):
    """The identities a run's counters must satisfy; returns a list of violations.

    Only checks that can fail: the kernel prints `wakeups` as local + remote and `idle_ns`
    from the sum of the poll and halt cycles, so re-adding those would check the printf.
    The counters below are incremented separately (kernel/idle.c), so these identities
    test that a snapshot saw them consistent; the idle time is measured by the TSC
    independently of the window markers that bound it."""
    bad = []
    try:
        window_ns = run.window_ns
    except RunError:
        window_ns = None    # no window: nothing bounds the idle time
    for c in run.cpus:
        i = c["id"]

        def has(*keys):
            return all(k in c for k in keys)   # an identity holds only where its fields exist
        if has("hlt", "halts", "halts_aborted") and c["hlt"] != c["halts"] - c["halts_aborted"]:
            bad.append(f"cpu {i}: hlt {c['hlt']} != halts {c['halts']} - aborted "
                       f"{c['halts_aborted']}")
        if has("poll_entries", "poll_hits", "poll_immediate", "poll_expired") and \
                c["poll_entries"] != c["poll_hits"] + c["poll_immediate"] + c["poll_expired"]:
            bad.append(f"cpu {i}: poll entries do not split into hits/immediate/expired")
        # The Linux guest adds other_entries where a state neither polls nor halts.
        if has("idle_entries", "poll_entries", "halts") and \
                c["idle_entries"] != c["poll_entries"] + c["halts"] + c.get("other_entries", 0):
            bad.append(f"cpu {i}: idle entries != poll entries + halts")
        # The guest's snapshots are taken inside the markers' timestamps (kernel/window.c),
        # so a CPU cannot have idled longer than the window; IDLE_SLACK_NS covers the
        # separate cycle-to-ns roundings (the Linux guest's sysfs times are whole µs: it
        # adds LINUX_IDLE_SLACK_NS).
        slack = IDLE_SLACK_NS + (LINUX_IDLE_SLACK_NS if run.boot.get("guest") == "linux" else 0)
        if window_ns is not None and has("idle_ns") and c["idle_ns"] > window_ns + slack:
            bad.append(f"cpu {i}: idle_ns {c['idle_ns']} > window {window_ns} ns")
    return bad


# --- The platform's cost table ------------------------------------------------------------

PRIMS = ("alu", "pause", "rdtsc", "locked_rmw", "cli_sti", "cpuid", "wrmsr_pollctl",
         "ipi_send", "ipi_halt_rtt", "poll_wake_rtt", "timer", "ipi_run_rtt", "load", "call",
         "pushf", "timer_halt", "eoi", "tsc_deadline", "timer_sleep", "ipi_poll_rtt")
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
                        if k in ("target", "host_poll", "answer", "timer", "wait",
                                 "ops_per_sample", "chain", "with"))
        lines.append(f"| {prim} | {e.get('ns_p50', 0):.1f} | {e.get('ns_p90', 0):.1f} | "
                     f"{e.get('n', 0)} | {how} |")
    return lines + [""] + params_markdown(table.get("host_params")) + \
        path_markdown(table.get("path_insns")) + threads_markdown(table.get("threads"))


def params_markdown(params):
    """The kvm parameters the cost table's boots ran with (platform.cost_boot_params), one
    line; nothing off KVM or for a folder measured before they were kept."""
    if not params:
        return []
    vals = " ".join(f"{k}={v}" for k, v in (params.get("values") or {}).items()) or "none"
    if params.get("set"):
        return [f"Its boots ran with the kvm parameters {vals}, set for them: every halt of "
                "`ipi_poll_rtt`'s responder polled 500 µs (every other halt sleeps: "
                "bench=exits has the poll-control MSR at 0).", ""]
    return [f"Its boots ran with the host's kvm parameters ({vals}): {params.get('why')}.", ""]


def threads_markdown(threads):
    """The cost table's boot's vCPU threads' halts as the host's scheduler saw them
    (derive/threadtrace.py; its parts in its order), as one line; nothing for a folder
    without them."""
    if not threads:
        return []
    if "why" in threads and not threads.get("halts"):
        return [f"Its vCPU threads' halts were not split by the host's scheduler: "
                f"{threads['why']}", ""]
    parts = [f"{p} {threads[p]['ns_p50'] / 1000:.1f} us (p90 {threads[p]['ns_p90'] / 1000:.1f})"
             for p, v in threads.items()
             if isinstance(v, dict) and "ns_p50" in v and p != "shadow_break_slept"]
    return [f"Its vCPU threads' halts as the host's scheduler saw them ({threads['halts']} that "
            f"slept without a host poll; thread_halt: the exit to asleep, on a CPU; thread_kick: "
            f"the waker's exit to KVM's kick of it; thread_wake: the kick to running, off CPU; "
            f"thread_entry: running to the guest, on a CPU; these after an IPI's wake, "
            f"*_timer after a timer's, thread_wake_timer from sched_wakeup, thread_timer_late "
            f"the LAPIC timer's expiry to the wake, thread_timer_slept the exit to the expiry, "
            f"*_long those after a sleep of {threadtrace.LONG_SLEEP_NS / 1e6:g} ms or more; "
            f"thread_preempt: switched out runnable to "
            f"running again): "
            + ", ".join(parts)
            + (f"; {threads['rewakes']} woken and asleep again without entering, on a CPU "
               f"{threads['rewake_ppm'] / 1e4:.2f} % of the time asleep"
               if threads.get("rewakes") else "")
            + (f"; preempted {threads['preempt_per_s']:g} times a second on a CPU "
               f"({threads.get('preempted_ms', 0):g} ms over {threads['on_cpu_ms']:g} ms on one"
               + (", most by " + ", ".join(f"{c} {ms:g} ms" for c, ms in
                                          threads["preempted_by"].items())
                  if threads.get("preempted_by") else "") + ")"
               if "preempt_per_s" in threads else "")
            + (f"; {threads['vcpu_wakes']} kicked awake by another vCPU, "
               f"{threads['vcpu_wake_beside_ppm'] / 1e4:.1f} % of them onto the waker's CPU"
               if threads.get("vcpu_wakes") else "")
            + (f"; {threads['shadow_breaks']} interrupts injected on a HLT inside STI's "
               f"shadow, which the host dropped (lost wake-ups"
               + (f": those HLTs slept {threads['shadow_break_slept']['ns_p50'] / 1e6:.1f} ms "
                  f"p50" if "shadow_break_slept" in threads else "") + ")"
               if threads.get("shadow_breaks") else "")
            + (f"; {threads['lost']} trace events lost" if threads.get("lost") else "")
            + (f"; traced in a second boot and scaled to this table's untraced one (the trace "
               f"slows what it times): the IPI's parts x{threads['probe']['ipi']:.3f} "
               f"({threads['probe']['basis']['ipi']} untraced over traced), the timer's "
               f"x{threads['probe']['timer']:.3f} ({threads['probe']['basis']['timer']})"
               if "probe" in threads else "") + ".", ""]


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


# --- Whose fault a late or lost wake-up was -----------------------------------------------

LATE_HOST, LATE_GUEST = "late_host", "late_guest"
LOST_HOST, LOST_GUEST = "lost_host", "lost_guest"
GUEST_FAULTS = (LATE_GUEST, LOST_GUEST)


def guest_to_host(records, arrivals):
    """The offset that turns the guest's t_ns clock into the host's monotonic ns: from the
    last open window marker, the host instant its line arrived minus the guest's t_ns
    (the line's travel through the serial port makes it late by at most a few ms, which
    widens every interval by as much). None without an open marker."""
    opens = [(i, f) for i, (k, f) in enumerate(records)
             if k == "window" and f.get("state") == "open"]
    if not opens or opens[-1][0] >= len(arrivals):
        return None
    i, f = opens[-1]
    return arrivals[i] - int(f["t_ns"])


def attribute(records, arrivals, waits):
    """[{kind, target_cpu, waker_cpu, after_ns, bound_ns, late_ns, host_wait_ns}] for every
    late_wakeup_seen and lost_wakeup record. records: parse_records() of the serial output,
    arrivals: the host monotonic ns at which each record's line arrived (same order), waits:
    an object with wait_ns(cpu, start_ns, end_ns) -> ns or None and cpus() -> the vCPUs."""
    offset = guest_to_host(records, arrivals)
    out = []
    for kind, f in records:
        what = f.get("what") if kind == "error" else None
        if what not in ("late_wakeup_seen", "lost_wakeup"):
            continue
        lost = what == "lost_wakeup"
        target, waker = int(f["target_cpu"]), int(f["waker_cpu"])
        after = int(f["waited_ns"] if lost else f["after_ns"])
        bound = int(f.get("bound_ns", 0))
        late = after if lost else after - bound
        host = [int(f.get("steal_ns", 0)), int(f.get("waker_steal_ns", 0))]
        measured, others = None, 0
        if offset is not None and "t0_ns" in f:
            start = int(f["t0_ns"]) + offset
            m = [waits.wait_ns(cpu, start, start + after) for cpu in (target, waker)]
            if None not in m:
                measured = m
                host = [max(h, w) for h, w in zip(host, m)]
                others = max([waits.wait_ns(cpu, start, start + after) or 0
                              for cpu in waits.cpus() if cpu not in (target, waker)],
                             default=0)
        wait = max(sum(host), others)
        if lost:
            verdict = LOST_HOST if wait >= late else LOST_GUEST
        else:
            verdict = LATE_HOST if wait >= late else LATE_GUEST
        out.append({"kind": verdict, "target_cpu": target, "waker_cpu": waker,
                    "after_ns": after, "bound_ns": bound, "late_ns": late,
                    "host_wait_ns": wait, "measured": measured is not None})
    return out


def guest_failure(outcome, output):
    """One line: why a guest that exited `outcome` (its exit code's name) did not succeed,
    with its first error record's message where it printed one."""
    for kind, fields in parse_records(output):
        if kind == "error":
            return f"guest exit {outcome}: {fields.get('msg', fields.get('what', ''))}"
    return f"guest exit {outcome}"


def attribute_output(lines_with_times, waits):
    """attribute() from [(host monotonic ns, line)] of a run's console."""
    records, arrivals = [], []
    for t, line in lines_with_times:
        for rec in parse_records(line):
            records.append(rec)
            arrivals.append(t)
    return attribute(records, arrivals, waits)


def summary(events):
    """{kind: count} over the four kinds."""
    return {k: sum(e["kind"] == k for e in events)
            for k in (LATE_HOST, LATE_GUEST, LOST_HOST, LOST_GUEST)}


def describe(e):
    """One event in one line, for a test's failure or a table's note."""
    return (f"{e['kind']}: wake-up of CPU {e['target_cpu']} by CPU {e['waker_cpu']} took "
            f"{e['after_ns'] / 1e6:.1f} ms ({e['late_ns'] / 1e6:.1f} ms late); the host kept "
            f"the two vCPUs waiting {e['host_wait_ns'] / 1e6:.1f} ms"
            + ("" if e["measured"] else " (steal time only: no host measure)"))
