"""A matrix's values, each key's parsed and checked: times (no unit is ns, as the kernel reads
them), durations in the kernel's own range (kernel/knobs/knob_table.h), halt_poll_ns and the
host windows (in the cost table's terms too), stall=, neighbour= and pin=. Pure. The format
they are written in, lines and sweeps, is bench/matrix.py's."""
import functools
import os
import re
from dataclasses import dataclass

from idlelab import GUESTS, LINUX_KERNELS, TOP, costtable

KNOB_TABLE = os.path.join(TOP, "kernel", "knobs", "knob_table.h")
MACHINES = ("microvm", "pc", "q35")
TRACES = ("none", "halt_poll_ns", "threads")
ACCELS = ("kvm", "tcg")
_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
MAX_REPEAT = 1000        # times one run may be made (the matrix's repeat, tools/bench --repeat)


@dataclass(frozen=True)
class Stall:
    """stall=VCPU@OFFSET+DURATION: stop one vCPU's host thread for a while."""
    vcpu: int
    offset_ns: int               # after the window opened (the open marker acknowledged)
    duration_ns: int



# --- neighbour= and pin= (host/neighbour.py runs one) --------------------------------------

MAX_HOG_THREADS = 256


@dataclass(frozen=True)
class Neighbour:
    kind: str                      # hog or vm
    text: str                      # as written (the record's neighbour=)
    threads: int = 0               # hog: how many
    cpus: tuple = ()               # hog: pinning, () = unpinned
    knobs: tuple = ()              # vm: guest knobs, "name=value"
    smp: int = 1                   # vm: vCPUs

    def describe(self):
        if self.kind == "hog":
            where = f" pinned to CPU {'/'.join(map(str, self.cpus))}" if self.cpus else ""
            return f"{self.threads} spinning host thread{'s' if self.threads > 1 else ''}{where}"
        return f"a second guest ({self.smp} vCPU, {' '.join(self.knobs)})"


def _cpu_list(text, sep):
    items = text.split(sep)
    if not all(re.fullmatch(r"\d+", c) for c in items):
        raise ValueError("host CPU numbers (decimal)")
    cpus = tuple(int(c) for c in items)
    ncpu = os.cpu_count() or 1
    bad = [c for c in cpus if c >= ncpu]
    if bad:
        raise ValueError(f"host CPUs below {ncpu} (this host has CPUs 0..{ncpu - 1}), "
                         f"not {bad[0]}")
    return cpus


def parse_neighbour(text):
    """None for `none`, else a Neighbour. ValueError says what is accepted."""
    if text == "none":
        return None
    if text.startswith("hog:"):
        m = re.fullmatch(r"hog:(\d+)(?:@(.+))?", text)
        if not m or not 1 <= int(m.group(1)) <= MAX_HOG_THREADS:
            raise ValueError(f"'none', 'hog:N[@CPU,...]' (N in 1..{MAX_HOG_THREADS}) or "
                             "'vm:KNOB=VALUE+...'")
        n = int(m.group(1))
        cpus = ()
        if m.group(2) is not None:
            try:
                cpus = _cpu_list(m.group(2), ",")
            except ValueError as e:
                raise ValueError(f"hog:N@CPU,... with {e}") from None
            if len(cpus) not in (1, n):
                raise ValueError(f"hog:{n}@... with one CPU for all threads or one per "
                                 f"thread ({n}), not {len(cpus)}")
        return Neighbour("hog", text, threads=n, cpus=cpus)
    if text.startswith("vm:"):
        knobs, smp = [], 1
        for k in text[3:].split("+"):
            name, eq, value = k.partition("=")
            if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name) or not value:
                raise ValueError(f"vm:KNOB=VALUE+KNOB=VALUE... (guest knobs joined by '+'), "
                                 f"not {k!r}")
            if name == "smp":
                if not re.fullmatch(r"\d+", value) or not 1 <= int(value) <= 64:
                    raise ValueError("vm:...+smp=N with N in 1..64")
                smp = int(value)
            elif name in ("window_sync", "duration"):
                raise ValueError(f"vm: knobs without {name}= (the harness sets it)")
            else:
                knobs.append(k)
        if not any(k.startswith("workload=") for k in knobs):
            raise ValueError("vm:KNOBS naming a workload= (e.g. vm:workload=pingpong+"
                             "pingpong.mode=spin)")
        return Neighbour("vm", text, knobs=tuple(knobs), smp=smp)
    raise ValueError("'none', 'hog:N[@CPU,...]' or 'vm:KNOB=VALUE+...'")


def parse_pin(text):
    """None for `none`, else the host CPU of each vCPU in order."""
    if text == "none":
        return None
    try:
        return _cpu_list(text, "+")
    except ValueError as e:
        raise ValueError(f"'none' or CPU+CPU+... (vCPU i on the i-th) with {e}") from None


def parse_alone(text):
    """None for `none`, else the vCPU whose host CPU (pin=) nothing else may use."""
    if text == "none":
        return None
    if not re.fullmatch(r"\d+", text) or int(text) > 63:
        raise ValueError("'none' or a vCPU number (0-63) whose pinned host CPU it has alone")
    return int(text)


BOOT_COSTS_ITERS = (10, 5000)


def parse_boot_costs(text):
    """None for `none`, else the cost table's samples per primitive (bench=exits iters=)."""
    if text == "none":
        return None
    lo, hi = BOOT_COSTS_ITERS
    if not re.fullmatch(r"\d+", text) or not lo <= int(text) <= hi:
        raise ValueError(f"'none' or the cost table's samples per primitive, {lo}..{hi}")
    return int(text)


def join_cpu_lists(items):
    """A matrix value split at commas, with digits-only items put back onto the CPU list
    (after '@') of the item before: ['hog:2@0', '1', 'none'] -> ['hog:2@0,1', 'none']."""
    out = []
    for it in items:
        if out and re.fullmatch(r"\d+", it) and "@" in out[-1]:
            out[-1] += "," + it
        else:
            out.append(it)
    return out


def parse_time(text):
    """ns from `<int>[ns|us|ms|s]`: no unit is ns, the kernel's rule for its time knobs
    (kernel/knobs/parse.c), so a matrix value means on the guest's command line what it
    means here."""
    m = re.fullmatch(r"(\d+)(ns|us|ms|s)?", text)
    if not m:
        raise ValueError(f"a time: an integer, optionally with a unit {'|'.join(_UNITS)}")
    return int(m.group(1)) * _UNITS[m.group(2) or "ns"]


def format_time(ns):
    """A time in its largest exact unit, as the kernel prints a range (1000000 -> 1ms)."""
    unit = max((u for u, n in _UNITS.items() if ns % n == 0), key=_UNITS.get)
    return f"{ns // _UNITS[unit]}{unit}"


def _int_in(lo, hi):
    def parse(text):
        if not re.fullmatch(r"\d+", text) or not lo <= int(text) <= hi:
            raise ValueError(f"an integer in {lo}..{hi}")
        return int(text)
    return parse


def _choice(choices):
    def parse(text):
        if text not in choices:
            raise ValueError("one of " + ", ".join(choices))
        return text
    return parse


def _workload(text):
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", text):
        raise ValueError("a name: lower-case letters, digits, '_' or '-'")
    return text


@functools.lru_cache(maxsize=None)
def knob_range(name, table=KNOB_TABLE):
    """(min, max) of a kernel knob, read from kernel/knobs/knob_table.h (its one definition):
    `K(ident, "name", TYPE, default, min, max, ...`, a bound an integer or KNOB_NS/US/MS/S(n)."""
    with open(table) as f:
        text = f.read()
    m = re.search(rf'\bK\(\s*\w+\s*,\s*"{re.escape(name)}"(?:\s*,[^,]+){{2}},([^,]+),([^,]+),',
                  text)
    bounds = [re.fullmatch(r"KNOB_(NS|US|MS|S)\((\d+)\)|(0x[0-9a-f]+|\d+)", b.strip())
              for b in (m.groups() if m else ())]
    if not bounds or not all(bounds):
        raise ValueError(f"{table}: no range of knob {name!r} found")
    return tuple(int(b[3], 0) if b[3] else int(b[2]) * _UNITS[b[1].lower()] for b in bounds)


@functools.lru_cache(maxsize=None)
def knob_define(name, table=KNOB_TABLE):
    """An integer `#define NAME value` of kernel/knobs/knob_table.h (a knob's default in a
    unit its name says, WINDOW_GAP_DEFAULT_MS)."""
    with open(table) as f:
        m = re.search(rf"^#define {re.escape(name)} (\d+)\b", f.read(), re.M)
    if not m:
        raise ValueError(f"{table}: no #define {name}")
    return int(m.group(1))


def _duration(text):
    ns = parse_time(text)
    lo, hi = knob_range("duration")
    if not lo <= ns <= hi:
        bare = (f" (read as {ns} ns: a time without a unit is in ns, as the kernel reads it)"
                if text.isdigit() else "")
        raise ValueError(f"a duration in {format_time(lo)}..{format_time(hi)}{bare}")
    return ns


def _u32_time(text):
    ns = parse_time(text)
    if ns >= 2 ** 32:
        raise ValueError(f"at most {2 ** 32 - 1} ns (KVM takes 32 bits)")
    return ns


def _window(text):
    """A host window: ns, or a value in the cost table's terms (`timer+200us`), kept as
    text until the bench has measured the table (costtable.resolve_run)."""
    if costtable.is_scaled(text):
        return text
    return _u32_time(text)


def _halt_poll(text):
    """('host', None) | ('vm', ns) | ('global', ns); ns may be a cost-table expression."""
    if text == "host":
        return ("host", None)
    if text.startswith("global:"):
        return ("global", _window(text[len("global:"):]))
    try:
        return ("vm", _window(text))
    except ValueError:
        raise ValueError("'host', a time (per VM) or 'global:<time>' (kvm module "
                         "parameter); a time may be in the cost table's terms, "
                         "e.g. timer+200us") from None


def _stall(text):
    """None for `none`, else a Stall (vCPU and run duration are checked with the run)."""
    if text == "none":
        return None
    m = re.fullmatch(r"(\d+)@([^+]+)\+(.+)", text)
    if not m:
        raise ValueError("'none' or VCPU@OFFSET+DURATION, e.g. 1@100ms+300ms")
    try:
        offset, length = (parse_time(t) for t in m.group(2, 3))
    except ValueError as e:
        raise ValueError(f"VCPU@OFFSET+DURATION with OFFSET and DURATION {e}") from None
    if length == 0:
        raise ValueError("a stall DURATION above 0")
    return Stall(int(m.group(1)), offset, length)


# The matrix's host keys and the kvm module parameters they set.
HOST_PARAM = {"host_grow": "halt_poll_ns_grow", "host_grow_start": "halt_poll_ns_grow_start",
              "host_shrink": "halt_poll_ns_shrink"}

# The keys a boot can switch between its windows (within=): the host's halt polling, and
# guest knobs (which the guest's own list, kernel/knobs/switchable.c, then checks).
WITHIN_HOST = ("halt_poll_ns", "host_grow", "host_grow_start", "host_shrink", "pin",
               "neighbour")
MAX_ROUNDS = 1000


def _within(text):
    """within=AXIS,...: the matrix keys whose values vary inside one boot, window by window."""
    axes = text.split(",")
    bad = [a for a in axes if a not in WITHIN_HOST and not a.startswith("guest.")]
    if bad or len(set(axes)) != len(axes):
        raise ValueError(f"keys that switch between windows: {', '.join(WITHIN_HOST)} or "
                         f"guest.<knob>, each once (not {', '.join(bad) or text})")
    return tuple(axes)


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _boot(text):
    """boot=NAME: the rows with this name take turns as the windows of the same boots."""
    if not _NAME.fullmatch(text):
        raise ValueError(f"a name (letters, digits, '_', '.', '-'), not {text!r}")
    return text


_U32 = _int_in(0, 2 ** 32 - 1)
PARSERS = {
    "workload": _workload,
    "duration": _duration,
    "repeat": _int_in(1, MAX_REPEAT),
    "smp": _int_in(1, 64),
    "machine": _choice(MACHINES),
    "accel": _choice(ACCELS),
    "halt_poll_ns": _halt_poll,
    "host_grow": _U32,
    "host_grow_start": _window,
    "host_shrink": _U32,
    "stall": _stall,
    "neighbour": parse_neighbour,
    "pin": parse_pin,
    "alone": parse_alone,
    "boot_costs": parse_boot_costs,
    "trace": _choice(TRACES),
    "within": _within,
    "rounds": _int_in(1, MAX_ROUNDS),
    "boot": _boot,
    "guest": _choice(GUESTS),
    "linux_kernel": _choice(LINUX_KERNELS),
}
KEYS = tuple(PARSERS)
