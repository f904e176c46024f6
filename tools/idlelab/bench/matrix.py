"""Experiment matrices: which runs to make, in a small line-oriented text format.

Format
------
One run per line::

    # the IPI ping-pong at three periods, with and without host polling
    defaults: smp=2 duration=5s repeat=3 guest.verbose=0
    pingpong: workload=pingpong guest.period=50us,100us,200us halt_poll_ns=0,200us
    idle:     workload=idle duration=20s halt_poll_ns=global:400us host_shrink=0

* `name: key=value key=value ...` defines a run. Names use letters, digits, `_`, `.`, `-`
  and must be unique (after sweep expansion). `defaults` is not a run name.
* `defaults: key=value ...` sets values for every run *below* it; a later `defaults:` line
  adds to or overrides the ones in force. A key on a run line beats the defaults.
* `#` starts a comment (anywhere on a line); blank lines are ignored. Tokens are separated
  by whitespace, so values hold no spaces, `#` or `,`.
* A time is an integer with an optional unit `ns|us|ms|s`; without one it is in ns, as the
  kernel reads its time knobs (`duration=300` is 300 ns).
* Sweeps: `key=a,b,c` makes one run per value. Several swept keys (on the line or in the
  defaults) give their cartesian product: keys in the order they first appear (defaults
  lines, then the run line), the last varying fastest. Each expanded run is named
  `name-key=value-key=value` with the swept keys in that order
  (`guest.` dropped, `:` written as `_`), e.g. `pingpong-period=50us-halt_poll_ns=0`.

Keys
----
==================  =======================================================================
workload            required. The workload's name (`[a-z][a-z0-9_-]*`); guest_cmdline() below maps it onto the guest command line.
duration            required. How long to measure: a time (no unit = ns), in the range of the
                    kernel's duration= knob (kernel/knobs/knob_table.h: 1ms..3600s).
repeat              how many times to make the run (default 1).
smp                 vCPUs, 1..64 (default 2).
machine             QEMU machine: microvm, pc, q35 (default microvm).
accel               kvm or tcg (default kvm: a measurement never falls back silently).
halt_poll_ns        host halt-polling max. `<time>`: per VM, through KVM_CAP_HALT_POLL;
                    `global:<time>`: the kvm module parameter; `host` (default): leave the
                    host as it is. A time without unit is in ns; one in the cost table's
                    terms (`global:timer+200us`) is placed by the table the bench measures.
host_grow           kvm module parameter halt_poll_ns_grow (unset: leave the host's).
host_grow_start     kvm module parameter halt_poll_ns_grow_start (time; no unit = ns; may be
                    in the cost table's terms, as halt_poll_ns).
host_shrink         kvm module parameter halt_poll_ns_shrink.
stall               a fault injected on purpose: `VCPU@OFFSET+DURATION` stops vCPU VCPU's
                    host thread (ptrace, that thread only) OFFSET after the window opens (the
                    probe's acknowledgement of the open marker) for DURATION, e.g.
                    `stall=1@100ms+300ms` (times; no unit = ns). `none` (default): no fault.
                    VCPU must be below smp and OFFSET+DURATION within duration. The record's
                    `fault` says what actually happened; the report marks the run disturbed.
neighbour           another task on the host while the run is measured (neighbour.py):
                    `none` (default); `hog:N` (N host threads that spin and count loops),
                    `hog:N@CPU,CPU,...` (pinned: one CPU for all or one per thread; digits
                    after a comma continue the list, they do not start a sweep value);
                    `vm:KNOB=VALUE+...` (a second idlelab guest with those knobs, `smp=N`
                    among them sets its vCPUs). Started before the guest, stopped after it;
                    its throughput is read over exactly the measured window.
pin                 the measured guest's vCPU threads on host CPUs: `none` (default) or
                    `CPU+CPU+...`, one per vCPU (vCPU i on the i-th), e.g. `pin=0+1`.
alone               one vCPU's thread alone on the host CPU pin= gives it: `none` (default)
                    or the vCPU, e.g. `pin=0+1 alone=1`. QEMU's other threads and the
                    bench's are kept off that CPU, and on the nested host every other task
                    that can move (host/alone.py); each window records that CPU's mpstat
                    split (%usr, %sys, %guest, %idle...: host/cpustat.py).
boot_costs          the cost table measured in this boot, before its windows: `none`
                    (default) or the samples per primitive, e.g. `boot_costs=100` (the guest
                    runs bench=exits iters=100 first). The record keeps it (`cost_table`), and
                    --predict prices the boot's windows with it (docs/simulator.md).
trace               KVM's own trace of the window (host/windowtrace.py): `none` (default),
                    `halt_poll_ns` (the kvm_halt_poll_ns grow/shrink events and every
                    halt's kvm_vcpu_wakeup, from a tracefs instance; KVM hosts with tracefs)
                    or `threads` (the vCPU threads' halts split by the host's scheduler,
                    derive/threadtrace.py, over the window; KVM hosts with kvm_exit).
guest               which guest runs: `idlelab` (default, the project's kernel) or `linux`
                    (Debian's kernel with tools/linuxguest/'s program: the same workloads
                    and records, measured the same way; `make linux-guest` builds it).
linux_kernel        the Linux guest's kernel (guest=linux only): `debian` (default, Debian's
                    as it ships: its haltpoll driver runs under menu) or `haltpoll-gov`
                    (Debian's source with the haltpoll governor; `make linux-guest-kernel`).
within              the swept keys whose values vary inside one boot rather than across
                    boots: `within=halt_poll_ns` or `within=guest.idle,guest.hostpoll`
                    (halt_poll_ns, host_grow, host_grow_start, host_shrink, pin,
                    neighbour (none or hog:N) and the guest knobs
                    kernel/knobs/switchable.c lists; docs/windows.md). The cells those
                    keys' values make run as windows of each boot, `rounds` rounds of each in a
                    balanced order, and keep their names; `repeat` counts the boots.
rounds              within=: how many windows of each cell a boot measures (default 4).
boot                the rows that share a boot: `boot=NAME` on several rows makes one boot of
                    windows, each row a cell (rounds= windows of each, balanced order), where
                    within= would make every combination of its keys: seed 000's
                    configurations set four kvm parameters together. The rows may differ
                    only in what within= can switch, each stated on every row; a swept key
                    (guest.hz=0,250) makes a boot per value. `repeat` counts the boots; the
                    cells keep their names.
guest.<knob>        passed to the guest kernel command line as `<knob>=<value>`, unchanged.
                    For guest=linux that is Linux's command line: its program reads the
                    idlelab knobs it honours (workload=, duration=, warmup=, period=, cpus=,
                    think=, window_sync=...) and Linux the rest (`cpuidle_haltpoll.force=1`,
                    `idle=halt`, `cpuidle.off=1`, ...), so its knob names are not checked
                    against idlelab's table.
==================  =======================================================================

A matrix expands to at most MAX_RUNS runs (as `repeat` is at most MAX_REPEAT): the count is the
product of the sweeps, computed before any run is made, so a sweep of millions is refused
at once instead of hanging `--list`.

Every mistake is an error naming the file and line, e.g.
`matrix.txt:7: unknown key 'peroid' (did you mean 'guest.period'?)`; nothing falls back to a
default silently. A value wrong in itself is reported at the line that sets it, a defaults
line included; one wrong only beside another key's value (`stall=` past the `duration=`), at
the later of the lines that set them. Pass `guest_knobs` (e.g. guest_knob_names()) to check
`guest.` names too. Each key's value is parsed and checked by bench/matrixvalues.py.
"""
import dataclasses
import difflib
import itertools
import math
import re
from dataclasses import dataclass, field

from idlelab import LINUX_KERNELS
from idlelab.bench import matrixvalues, windowplan

_KNOB = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_LINE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(.*)")
_HOST_PARAM = matrixvalues.HOST_PARAM
DEFAULTS = {"repeat": "1", "smp": "2", "machine": "microvm", "accel": "kvm",
            "halt_poll_ns": "host", "guest": "idlelab"}
REQUIRED = ("workload", "duration")
MAX_RUNS = 1000          # runs one matrix may expand to (each is at least one boot)

# The bench's window edges are synchronised (the guest quiesces and waits for the probe's
# acknowledgement), so no hold is needed; --window-hold adds one for a matrix that turns
# window_sync off.
WINDOW_HOLD = "0s"


class MatrixError(ValueError):
    """A mistake in a matrix file; the message starts with `file:line:`."""


@dataclass(frozen=True)
class Run:
    """One run to make, with every value parsed and checked."""
    name: str
    where: str                   # "file:line" of the run's line, for messages
    workload: str
    duration_ns: int
    repeat: int
    smp: int
    machine: str
    accel: str
    vm_halt_poll_ns: int = None  # per-VM KVM_CAP_HALT_POLL value, None: not set
    host_params: dict = field(default_factory=dict)  # kvm module parameters to override
    guest: dict = field(default_factory=dict)        # guest knobs, in file order
    sweep: dict = field(default_factory=dict)        # the swept keys' values for this run
    settings: dict = field(default_factory=dict)     # every key's text, for the record
    stall: "matrixvalues.Stall" = None       # the fault to inject (stall=), None: none
    neighbour: "matrixvalues.Neighbour" = None  # the task beside the guest, None: none
    pin: tuple = None            # host CPU of each vCPU (pin=), None: not pinned
    alone: int = None            # the vCPU alone on its pinned host CPU (alone=), or None
    boot_costs: int = None       # the cost table's samples, measured in the boot (boot_costs=)
    trace: str = None            # KVM's trace of the window (trace=), None: none
    guest_os: str = "idlelab"    # guest=: idlelab's kernel or linux (idlelab.GUESTS)
    linux_kernel: str = None     # linux_kernel= (idlelab.LINUX_KERNELS); None: guest=idlelab
    # {key: the line of the file that set it}, for a mistake found later (the kernel's check)
    lines: dict = field(default_factory=dict, compare=False)
    # windows= given: bench/windowplan.Plan, the settings of each window of the boot
    windows: object = field(default=None, compare=False)

    def cmdline(self):
        """The guest kernel command line: the guest.<knob> values, in file order."""
        return " ".join(f"{k}={v}" for k, v in self.guest.items())


# --- lines -----------------------------------------------------------------------------------

class _Parser:
    def __init__(self, filename, guest_knobs):
        self.filename = filename
        self.guest_knobs = None if guest_knobs is None else set(guest_knobs)
        self.lineno = 0
        # guest.<knob> names idlelab's kernel lacks: {key: (line, message)}. Refused when a
        # run of guest=idlelab uses one; a Linux guest's parameters are Linux's.
        self.unknown_guest = {}

    def error(self, msg, lineno=None):
        return MatrixError(f"{self.filename}:{lineno or self.lineno}: {msg}")

    def settings(self, body):
        """{key: [value, ...]} from `key=v1,v2 ...`, each value checked."""
        out = {}
        for token in body.split():
            key, eq, value = token.partition("=")
            if not eq or not key:
                raise self.error(f"expected key=value, got {token!r}")
            self.check_key(key)
            if key in out:
                raise self.error(f"key {key!r} given twice on one line")
            out[key] = self.values(key, value)
        return out

    def check_key(self, key):
        if key.startswith("guest."):
            knob = key[len("guest."):]
            if not _KNOB.fullmatch(knob):
                raise self.error(f"bad guest knob name {knob!r}")
            if self.guest_knobs is not None and knob not in self.guest_knobs:
                self.unknown_guest.setdefault(key, (self.lineno, f"unknown guest knob {knob!r}"
                                                    + _did_you_mean(knob, self.guest_knobs)))
        elif key not in matrixvalues.PARSERS:
            # A misspelt top-level key may well be a guest knob missing its prefix.
            known = {k: k for k in matrixvalues.KEYS}
            known.update({k: f"guest.{k}" for k in self.guest_knobs or ()})
            raise self.error(f"unknown key {key!r}" + _did_you_mean(key, known)
                             + "; keys: " + ", ".join(matrixvalues.KEYS) + ", guest.<knob>")

    def values(self, key, text):
        """The comma-separated values of one key, each checked (a sweep if more than one)."""
        # within's list is one value, as is boot='s name
        items = text.split(",") if key not in ("within", "boot") else [text]
        if key == "neighbour":
            items = matrixvalues.join_cpu_lists(items)
        if any(not v for v in items):
            raise self.error(f"{key}: empty value in {text!r}")
        if len(set(items)) != len(items):
            raise self.error(f"{key}: a value repeats in the sweep {text!r}")
        for v in items:
            self.check_value(key, v)
        return items

    def check_value(self, key, value):
        if key.startswith("guest."):
            return
        try:
            parsed = matrixvalues.PARSERS[key](value)
        except ValueError as e:
            raise self.error(f"{key}={value}: expected {e}") from None
        if key == "neighbour" and parsed is not None and self.guest_knobs is not None:
            for k in parsed.knobs:
                name = k.partition("=")[0]
                if name not in self.guest_knobs:
                    raise self.error(f"{key}={value}: unknown guest knob {name!r}"
                                     + _did_you_mean(name, self.guest_knobs))


def _did_you_mean(word, candidates):
    """A hint naming the closest candidate; `candidates` may map a name to what to suggest."""
    if not isinstance(candidates, dict):
        candidates = {c: c for c in candidates}
    close = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return f" (did you mean {candidates[close[0]]!r}?)" if close else ""


def parse(text, filename="<matrix>", guest_knobs=None):
    """The runs a matrix text describes, in file order, sweeps expanded. Raises
    MatrixError naming file:line on any mistake."""
    p = _Parser(filename, guest_knobs)
    defaults, runs, seen = {}, [], {}
    groups = {}         # boot=: (its name, the rows' swept values) -> [cell run]
    set_at = {}         # {key: the defaults line its value in force comes from}
    count = 0
    lines = text.splitlines()
    for p.lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.fullmatch(line)
        if not m:
            raise p.error(f"expected 'name: key=value ...' or 'defaults: key=value ...', "
                          f"got {line!r}")
        name, body = m.group(1), m.group(2)
        if name == "defaults":
            given = p.settings(body)
            defaults.update(given)
            set_at.update(dict.fromkeys(given, p.lineno))
            continue
        given = p.settings(body)
        merged = {**defaults, **given}
        lines = {**set_at, **dict.fromkeys(given, p.lineno)}
        for key, value in DEFAULTS.items():
            merged.setdefault(key, [value])
        count += math.prod(len(v) for v in merged.values())
        if count > MAX_RUNS:
            raise p.error(f"the sweeps expand to {count} runs by this line; a matrix may "
                          f"have at most {MAX_RUNS}")
        for run in _expand(p, name, merged, lines):
            cells = run.windows.cells if run.windows is not None else ()
            for used in [run.name] + [c.name for c in cells if c.name != run.name]:
                if used in seen:
                    raise p.error(f"run name {used!r} already used at {seen[used]}")
                seen[used] = run.where
            if "boot" in run.settings:
                key = _group_key(run)
                if key not in groups:
                    runs.append(key)        # the boot stands where its first row does
                groups.setdefault(key, []).append(run)
            else:
                runs.append(run)
    if not runs:
        raise p.error("no runs in the matrix (expected 'name: key=value ...' lines)",
                      max(len(lines), 1))
    return [_joined_boot(p, r, groups[r], seen) if isinstance(r, tuple) else r for r in runs]


def _expand(p, name, merged, lines):
    """One Run per combination of the swept keys' values; `lines`, {key: the line that set
    it}, places a mistake found in a run's combination of values."""
    missing = [k for k in REQUIRED if k not in merged]
    if missing:
        raise p.error(f"run {name!r} has no {', '.join(missing)} (set it on the line or in "
                      "a 'defaults:' line above)")
    if "idlelab" in merged["guest"]:
        for key in merged:
            if key in p.unknown_guest:
                raise p.error(p.unknown_guest[key][1], p.unknown_guest[key][0])
    if "within" in merged:
        if "boot" in merged:
            raise p.error("boot= joins rows into one boot's windows and within= makes a "
                          "boot's windows of its own sweep: give one of them",
                          _last_line(lines, "boot", "within"))
        yield from _expand_within(p, name, merged, lines)
        return
    swept = [k for k, v in merged.items() if len(v) > 1]
    for combo in itertools.product(*(merged[k] for k in swept)):
        chosen = dict(zip(swept, combo))
        values = {k: chosen.get(k, v[0]) for k, v in merged.items()}
        suffix = "".join(f"-{short_key(k)}={v.replace(':', '_')}" for k, v in chosen.items())
        run = _make_run(f"{p.filename}:{p.lineno}", name + suffix, values, chosen, lines)
        _check_stall(p, run, lines)
        _check_pin(p, run, lines)
        _check_linux_kernel(p, run, lines)
        yield run


def _expand_within(p, name, merged, lines):
    """within=: one Run per combination of the keys that vary across boots, each a boot
    whose windows run the cells the within keys make (bench/windowplan.Design), named as the
    runs they would have been."""
    axes = matrixvalues.PARSERS["within"](merged.pop("within")[0])
    rounds = matrixvalues.PARSERS["rounds"](merged.pop("rounds", ["4"])[0])
    flat = [a for a in axes if len(merged.get(a, ())) < 2]
    if flat:
        raise p.error(f"within={','.join(axes)}: {', '.join(flat)} must be swept (two values "
                      "or more) to vary inside a boot")
    cells = list(_expand(p, name, {k: v for k, v in merged.items()}, lines))
    outer = [k for k, v in merged.items() if len(v) > 1 and k not in axes]
    groups = {}
    for cell in cells:
        groups.setdefault(tuple(cell.sweep.get(k) for k in outer), []).append(cell)
    for key, members in groups.items():
        first = members[0]
        arms = []
        for cell in members:
            text = " ".join(f"{a}={cell.settings[a]}" for a in axes)
            try:
                arms.append(dataclasses.replace(windowplan.parse_arm(cell.name, text),
                                                run_name=cell.name))
            except windowplan.PlanError as e:
                raise p.error(f"within={','.join(axes)}: {e}") from None
        suffix = "".join(f"-{short_key(k)}={v.replace(':', '_')}" for k, v in zip(outer, key))
        if "pin" in axes and first.alone is not None:
            raise p.error(f"within={','.join(axes)}: alone={first.alone} keeps one pin= for "
                          "the boot; pin cannot switch beside it", _last_line(lines, "alone",
                                                                             "within"))
        design = windowplan.Design(tuple(arms), rounds, "abba", None, dict(first.guest), {},
                                   cells=tuple(members),
                                   base_pin=None if "pin" in axes else first.pin,
                                   base_neighbour=None if "neighbour" in axes else
                                   first.neighbour)
        # a neighbour that switches is the switcher's to start, window by window
        yield dataclasses.replace(first, name=name + suffix, windows=design,
                                  sweep=dict(zip(outer, key)),
                                  **({"neighbour": None} if "neighbour" in axes else {}))


def _group_key(run):
    """Which boot a boot= row's run joins: its boot= name and its swept values (guest.hz=0,250
    on the rows makes a boot per tick rate, each of every row's cell at that rate)."""
    return (run.settings["boot"], tuple(run.sweep.items()))


def _switchable(key):
    return key in matrixvalues.WITHIN_HOST or key.startswith("guest.")


def _joined_boot(p, key, members, seen):
    """The Run of a boot= group: one boot whose windows are its rows' cells, switching the
    keys in which they differ. Each such key must be one within= can switch and be stated on
    every row (a window returns to nothing unstated); everything else must be the same."""
    label, fixed = key
    first = members[0]
    if len(members) < 2:
        raise p.error(f"boot={label}: only row {first.name!r} joins this boot; a boot of "
                      "windows needs two rows or more", _line_of(first, "boot"))
    keys = sorted({k for m in members for k in m.settings} - {"boot"})
    differ = [k for k in keys if len({m.settings.get(k) for m in members}) > 1]
    for k in differ:
        odd = next(m for m in members if m.settings.get(k) != first.settings.get(k))
        if not _switchable(k):
            raise p.error(f"boot={label}: rows {first.name!r} and {odd.name!r} differ in "
                          f"{k}=, which cannot change inside a boot", _line_of(odd, k))
        unset = next((m for m in members if k not in m.settings), None)
        if unset is not None:
            raise p.error(f"boot={label}: row {unset.name!r} does not state {k}=, which "
                          "other rows of its boot switch: give its value there",
                          _line_of(unset, "boot"))
    arms = []
    for cell in members:
        text = " ".join(f"{k}={cell.settings[k]}" for k in differ)
        try:
            arm = windowplan.parse_arm(cell.name, text)
        except windowplan.PlanError as e:
            raise p.error(f"boot={label}: {e}", _line_of(cell, "boot")) from None
        arms.append(dataclasses.replace(arm, run_name=cell.name, config=config_of(cell)))
    rounds = matrixvalues.PARSERS["rounds"](first.settings.get("rounds", "4"))
    name = label + "".join(f"-{short_key(k)}={v.replace(':', '_')}" for k, v in fixed)
    if name in seen:
        raise p.error(f"boot={label}: the boot's name {name!r} is a run's already "
                      f"({seen[name]})", _line_of(first, "boot"))
    design = windowplan.Design(tuple(arms), rounds, "abba", None, dict(first.guest), {},
                               cells=tuple(members), base_pin=first.pin,
                               base_neighbour=first.neighbour)
    try:
        design.for_boot(1)          # what a boot would refuse (a per-VM window in some rows)
    except windowplan.PlanError as e:
        raise p.error(f"boot={label}: {e}", _line_of(first, "boot")) from None
    return dataclasses.replace(first, name=name, windows=design, sweep=dict(fixed),
                               **({"neighbour": None} if "neighbour" in differ else {}))


def _line_of(run, key):
    """The line that set `key` for this run (a defaults line, or the run's own)."""
    return run.lines.get(key) or int(run.where.rsplit(":", 1)[1])


def cells(run, from_arms=False):
    """The runs a boot of several settings measures, one per setting as the matrix would have
    made it across boots (a within= row's cells, named as they were); [run] for any other.
    from_arms: made from the boot's own run and each arm (so values the cost table resolved
    in the boot's run are resolved in its cells too), not the matrix's cells as written."""
    design = run.windows
    if design is None or not hasattr(design, "arms"):
        return [run]
    if design.cells and not from_arms:
        return list(design.cells)
    out = []
    for arm in design.arms:
        host = dict(run.host_params, **arm.host_params)
        vm = arm.vm_halt_poll_ns if arm.vm_halt_poll_ns is not None else run.vm_halt_poll_ns
        out.append(dataclasses.replace(run, name=arm.run_name or f"{run.name}.{arm.label}",
                                       host_params=host, vm_halt_poll_ns=vm,
                                       guest=dict(run.guest, **arm.guest), windows=None))
    return out


def _last_line(lines, *keys):
    """Where a mistake of these keys' values together is reported: the last of the lines
    that set them (a key left to the built-in defaults has none), so a defaults line whose
    values clash among themselves is named, not the run line below that inherits them."""
    return max(lines[k] for k in keys if k in lines)


def _check_stall(p, run, lines):
    """stall= against the run's other keys: an existing vCPU, inside the measured window."""
    s, text = run.stall, run.settings.get("stall")
    if s is None:
        return
    if s.vcpu >= run.smp:
        raise p.error(f"stall={text}: run {run.name!r} has no vCPU {s.vcpu} (smp={run.smp}: "
                      f"vCPUs 0..{run.smp - 1})", _last_line(lines, "stall", "smp"))
    end = s.offset_ns + s.duration_ns
    if end > run.duration_ns:
        raise p.error(f"stall={text}: run {run.name!r} would stall until "
                      f"{end / 1e6:g} ms into its window, past duration="
                      f"{run.settings['duration']} ({run.duration_ns / 1e6:g} ms); the stall "
                      "must end inside the window", _last_line(lines, "stall", "duration"))


def _check_pin(p, run, lines):
    """pin= names one host CPU per vCPU; alone= one of those vCPUs, on a CPU of its own."""
    if run.pin is not None and len(run.pin) != run.smp:
        raise p.error(f"pin={run.settings['pin']}: run {run.name!r} has {run.smp} vCPUs; pin= "
                      f"needs one host CPU per vCPU, joined by '+', not {len(run.pin)}",
                      _last_line(lines, "pin", "smp"))
    if run.alone is None:
        return
    if run.pin is None:
        raise p.error(f"alone={run.alone}: run {run.name!r} pins no vCPU; alone= needs pin= "
                      "to say which host CPU the vCPU has to itself",
                      _last_line(lines, "alone", "pin"))
    if run.alone >= run.smp or run.pin.count(run.pin[run.alone]) > 1:
        raise p.error(f"alone={run.alone}: run {run.name!r} needs vCPU {run.alone} below "
                      f"smp={run.smp} and pinned to a host CPU no other vCPU shares",
                      _last_line(lines, "alone", "pin"))


def _check_linux_kernel(p, run, lines):
    """linux_kernel= chooses the Linux guest's kernel: an idlelab run has its own."""
    if "linux_kernel" in run.settings and run.guest_os != "linux":
        raise p.error(f"linux_kernel={run.settings['linux_kernel']}: run {run.name!r} boots "
                      f"guest={run.guest_os}; linux_kernel= is for guest=linux runs",
                      _last_line(lines, "linux_kernel", "guest"))


def short_key(key):
    """A matrix key as it appears in run names and Run.guest: "guest.hz" -> "hz"."""
    return key[len("guest."):] if key.startswith("guest.") else key


def _make_run(where, name, values, chosen, lines=None):
    scope, ns = matrixvalues.PARSERS["halt_poll_ns"](values["halt_poll_ns"])
    host = {param: matrixvalues.PARSERS[key](values[key]) for key, param in _HOST_PARAM.items()
            if key in values}
    if scope == "global":
        host["halt_poll_ns"] = ns
    return Run(
        name=name, where=where,
        workload=values["workload"],
        duration_ns=matrixvalues.PARSERS["duration"](values["duration"]),
        repeat=matrixvalues.PARSERS["repeat"](values["repeat"]),
        smp=matrixvalues.PARSERS["smp"](values["smp"]),
        machine=values["machine"],
        accel=values["accel"],
        vm_halt_poll_ns=ns if scope == "vm" else None,
        host_params=host,
        guest={short_key(k): v for k, v in values.items() if k.startswith("guest.")},
        sweep=chosen,
        settings=dict(values),
        stall=matrixvalues.PARSERS["stall"](values["stall"]) if "stall" in values else None,
        neighbour=(matrixvalues.parse_neighbour(values["neighbour"]) if "neighbour" in values
                   else None),
        pin=matrixvalues.parse_pin(values["pin"]) if "pin" in values else None,
        alone=matrixvalues.parse_alone(values["alone"]) if "alone" in values else None,
        boot_costs=(matrixvalues.parse_boot_costs(values["boot_costs"])
                    if "boot_costs" in values else None),
        trace=None if values.get("trace", "none") == "none" else values["trace"],
        guest_os=values["guest"],
        linux_kernel=values.get("linux_kernel", LINUX_KERNELS[0])
        if values["guest"] == "linux" else None,
        lines=dict(lines or {}),
    )


def load(path, guest_knobs=None):
    """parse() of a file, errors named after the file as given: one that cannot be read or
    is not text is a MatrixError too."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise MatrixError(f"{path}: not a text matrix (byte {e.object[e.start]:#04x} at "
                          f"offset {e.start} is not UTF-8)") from None
    except OSError as e:
        raise MatrixError(f"{path}: cannot read it: {e.strerror}") from None
    if "\0" in text:
        raise MatrixError(f"{path}: not a text matrix (it holds NUL bytes)")
    return parse(text, path, guest_knobs)


def where_set(run, key):
    """file:line of the line that set `key` for this run (a defaults line, or the run's own),
    or the run's line when the key came from no line (a built-in default, the bench's own)."""
    line = run.lines.get(key)
    return f"{run.where.rsplit(':', 1)[0]}:{line}" if line else run.where


def guest_knob_names(table=matrixvalues.KNOB_TABLE):
    """The knob names the guest kernel accepts, read from kernel/knobs/knob_table.h."""
    with open(table) as f:
        text = f.read()
    start = text.find("#define KNOB_TABLE(K)")
    if start < 0:
        raise ValueError(f"{table}: no KNOB_TABLE definition")
    return set(re.findall(r'\bK\(\s*\w+\s*,\s*"([^"]+)"', text[start:]))


def config_of(run):
    """The configuration a run belongs to: its run-line name without the sweep suffix and
    without a `.part` ("no-poll.idle-hz=0" -> "no-poll"). The report lays tables out by it."""
    suffix = "".join(f"-{short_key(k)}={v.replace(':', '_')}"
                     for k, v in run.sweep.items())
    base = run.name[:len(run.name) - len(suffix)] if suffix else run.name
    return base.split(".", 1)[0]


def guest_cmdline(run, window_hold=WINDOW_HOLD):
    """The guest command line: the workload and its duration (matrix keys of their own),
    the run's guest knobs, then window_sync=1 (exact window edges: the window probe of
    bench/windowprobe.py) and a non-zero window_hold, each unless the matrix set it."""
    parts = [f"workload={run.workload}", f"duration={run.settings['duration']}"]
    if run.boot_costs is not None:      # measured first, then the workload, in one boot
        parts.append(f"bench=exits iters={run.boot_costs}")
    if run.cmdline():
        parts.append(run.cmdline())
    if run.windows is not None and "windows" not in run.guest:
        parts.append(f"windows={run.windows.windows}")
    if "window_sync" not in run.guest:
        parts.append("window_sync=1")
    if "window_hold" not in run.guest and matrixvalues.parse_time(window_hold):
        parts.append(f"window_hold={window_hold}")
    return " ".join(parts)
