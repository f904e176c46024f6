"""The guest's `timeline` records (kernel/timeline.c, knob timeline=N): the one place on the
host that knows their layout.

  @idlelab timeline cpus= tsc_hz= t0= t_end= asked= events_per_cpu= per_line= kinds=r:run,...
  @idlelab timeline_cpu cpu= events= full=
  @idlelab timeline_ev cpu= seq= ev=<k><dt>[.<arg>],...      (per_line events a line)

t0 and t_end are the guest TSC at the opening of the window and where recording stopped; a
CPU whose log is `full` stopped at its last event instead. An event is its kind's letter (the
`kinds` legend maps letters to names, so the guest's table is the only one), the TSC cycles
since the CPU's previous event (t0 for the first) in hex, a leading `-` if earlier, and `.arg`
in hex when arg is not 0. The meaning of arg's values comes from kernel/timeline.h too.
"""
import os
import re
from dataclasses import dataclass, field

from idlelab import TOP
from idlelab.derive.records import parse_records

HEADER, CPU, EVENTS = "timeline", "timeline_cpu", "timeline_ev"
HEADER_FIELDS = ("cpus", "tsc_hz", "t0", "t_end", "asked", "events_per_cpu", "per_line", "kinds")
CPU_FIELDS = ("cpu", "events", "full")
EVENT_FIELDS = ("cpu", "seq", "ev")
# The kinds whose names the drawing relies on: a legend without one of them is not ours.
NAMES = ("run", "poll", "halt", "idle_end", "wake", "ipi_sent", "ipi_avoided", "ipi_pending",
         "ipi_received")

TIMELINE_H = os.path.join(TOP, "kernel", "timeline.h")
_DEFINE = re.compile(r"#define\s+(TL_IDLE_THREAD|TL_END_WORK|TL_END_HALT)\s+(0x[0-9a-fA-F]+|\d+)u?\b")
_EVENT = re.compile(r"([a-z?])(-?)([0-9a-f]+)(?:\.([0-9a-f]+))?")


class TimelineError(ValueError):
    """The console's timeline records are missing, malformed or incomplete."""


def arg_values(header=TIMELINE_H):
    """{TL_IDLE_THREAD, TL_END_WORK, TL_END_HALT: value} from kernel/timeline.h."""
    with open(header, encoding="utf-8") as f:
        found = {name: int(value, 0) for name, value in _DEFINE.findall(f.read())}
    if len(found) != 3:
        raise ValueError(f"{header}: expected #defines of TL_IDLE_THREAD, TL_END_WORK, "
                         f"TL_END_HALT, found {sorted(found)}")
    return found


ARGS = arg_values()
IDLE_THREAD, END_WORK, END_HALT = (ARGS[k] for k in ("TL_IDLE_THREAD", "TL_END_WORK",
                                                      "TL_END_HALT"))


@dataclass(frozen=True)
class Event:
    tsc: int        # guest TSC
    kind: str       # a name from NAMES
    arg: int


@dataclass
class CpuLog:
    cpu: int
    events: list = field(default_factory=list)
    full: bool = False      # stopped at its last event: nothing known after it


@dataclass
class Timeline:
    tsc_hz: int
    t0: int
    t_end: int
    asked: int
    per_cpu: int
    per_line: int
    kinds: dict             # letter -> name, as the guest printed it
    cpus: list              # CpuLog per CPU, index = CPU

    def end_of(self, cpu):
        """Guest TSC up to which CPU `cpu`'s log says what happened."""
        log = self.cpus[cpu]
        if log.full and log.events:
            return log.events[-1].tsc
        return self.t_end

    def us(self, tsc):
        """Microseconds since the window opened."""
        return (tsc - self.t0) * 1e6 / self.tsc_hz

    def cycles(self, ns):
        return ns * self.tsc_hz / 1e9


def _require(rec, keys, where):
    missing = [k for k in keys if k not in rec]
    if missing:
        raise TimelineError(f"{where}: no {', '.join(k + '=' for k in missing)}")


def _int(rec, key, where):
    try:
        return int(rec[key], 0)
    except KeyError:
        raise TimelineError(f"{where}: no {key}=") from None
    except ValueError:
        raise TimelineError(f"{where}: {key}={rec[key]!r} is not a number") from None


def _legend(text):
    kinds = {}
    for item in text.split(","):
        letter, sep, name = item.partition(":")
        if not sep or len(letter) != 1 or not name or letter in kinds:
            raise TimelineError(f"timeline record: kinds={text!r} is not a letter:name list")
        kinds[letter] = name
    missing = [n for n in NAMES if n not in kinds.values()]
    if missing:
        raise TimelineError(f"timeline record: kinds= lacks {', '.join(missing)}")
    return kinds


def decode_events(text, kinds, start, where):
    """[Event] from one `ev=` value; `start` is the TSC the first delta counts from."""
    out, tsc = [], start
    for token in text.split(","):
        m = _EVENT.fullmatch(token)
        if not m or m.group(1) not in kinds:
            raise TimelineError(f"{where}: bad event {token!r}")
        dt = int(m.group(3), 16)
        tsc += -dt if m.group(2) else dt
        out.append(Event(tsc, kinds[m.group(1)], int(m.group(4) or "0", 16)))
    return out


def parse(records):
    """The Timeline in (type, fields) records, or None if they hold no `timeline` record.
    Raises TimelineError if it is there but malformed or incomplete."""
    found = [f for k, f in records if k == HEADER]
    if not found:
        return None
    if len(found) > 1:
        raise TimelineError(f"{len(found)} timeline records: one run's console expected")
    h = found[0]
    where = "timeline record"
    _require(h, HEADER_FIELDS, where)
    tl = Timeline(tsc_hz=_int(h, "tsc_hz", where), t0=_int(h, "t0", where),
                  t_end=_int(h, "t_end", where), asked=_int(h, "asked", where),
                  per_cpu=_int(h, "events_per_cpu", where), per_line=_int(h, "per_line", where),
                  kinds=_legend(h.get("kinds", "")), cpus=[])
    ncpus = _int(h, "cpus", where)
    if tl.tsc_hz <= 0 or ncpus <= 0 or tl.per_line <= 0:
        raise TimelineError(f"{where}: tsc_hz, cpus and per_line must be above 0")
    heads, lines = {}, {}
    for k, f in records:
        if k == CPU:
            _require(f, CPU_FIELDS, "timeline_cpu record")
            heads[_int(f, "cpu", "timeline_cpu record")] = f
        elif k == EVENTS:
            w = "timeline_ev record"
            _require(f, EVENT_FIELDS, w)
            lines.setdefault(_int(f, "cpu", w), []).append((_int(f, "seq", w), f["ev"]))
    extra = sorted((set(heads) | set(lines)) - set(range(ncpus)))
    if extra:
        raise TimelineError(f"timeline lines for CPU {extra[0]}, but cpus={ncpus}")
    for cpu in range(ncpus):
        if cpu not in heads:
            raise TimelineError(f"no timeline_cpu record for CPU {cpu} (the console is cut short?)")
        f = heads[cpu]
        where = f"timeline_cpu cpu={cpu}"
        n = _int(f, "events", where)
        got = sorted(lines.get(cpu, []))
        if [s for s, _ in got] != list(range(len(got))):
            raise TimelineError(f"CPU {cpu}: timeline_ev lines missing or repeated "
                                f"(seq {[s for s, _ in got]})")
        events, prev = [], tl.t0
        for seq, text in got:
            evs = decode_events(text, tl.kinds, prev, f"timeline_ev cpu={cpu} seq={seq}")
            events += evs
            prev = events[-1].tsc
        if len(events) != n:
            raise TimelineError(f"CPU {cpu}: {len(events)} events in its lines, "
                                f"timeline_cpu says {n}")
        tl.cpus.append(CpuLog(cpu, events, _int(f, "full", where) == 1))
    return tl


def parse_text(text):
    return parse(parse_records(text))


def encode(tl):
    """The console lines the guest would print for `tl` (the inverse of parse), for tests and
    for made-up timelines."""
    letter = {name: ch for ch, name in tl.kinds.items()}
    legend = ",".join(f"{ch}:{name}" for ch, name in tl.kinds.items())
    out = [f"@idlelab {HEADER} cpus={len(tl.cpus)} tsc_hz={tl.tsc_hz} t0={tl.t0} "
           f"t_end={tl.t_end} asked={tl.asked} events_per_cpu={tl.per_cpu} "
           f"per_line={tl.per_line} kinds={legend}"]
    for log in tl.cpus:
        out.append(f"@idlelab {CPU} cpu={log.cpu} events={len(log.events)} "
                   f"full={int(log.full)}")
        prev, tokens = tl.t0, []
        for e in log.events:
            dt = e.tsc - prev
            tokens.append(f"{letter[e.kind]}{'-' if dt < 0 else ''}{abs(dt):x}"
                          + (f".{e.arg:x}" if e.arg else ""))
            prev = e.tsc
        for seq, i in enumerate(range(0, len(tokens), tl.per_line)):
            out.append(f"@idlelab {EVENTS} cpu={log.cpu} seq={seq} "
                       f"ev={','.join(tokens[i:i + tl.per_line])}")
    return out
