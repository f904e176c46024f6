"""One run's guest output, parsed into what the tests and the harness use.

`parse_run(text)` gathers the @idlelab records of a run: the boot, idle and config
records, the measurement window, the per-CPU counters and the workload's result, with
numbers converted and the identities the guest promises checked by `check_invariants`.
"""
from dataclasses import dataclass, field

from .records import parse_records


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
    """The identities every run's counters must satisfy; returns a list of violations."""
    bad = []
    for c in run.cpus:
        i = c["id"]
        if c["hlt"] != c["halts"] - c["halts_aborted"]:
            bad.append(f"cpu {i}: hlt {c['hlt']} != halts {c['halts']} - aborted "
                       f"{c['halts_aborted']}")
        if c["poll_entries"] != c["poll_hits"] + c["poll_immediate"] + c["poll_expired"]:
            bad.append(f"cpu {i}: poll entries do not split into hits/immediate/expired")
        if c["idle_entries"] != c["poll_entries"] + c["halts"]:
            bad.append(f"cpu {i}: idle entries != poll entries + halts")
        if c["wakeups"] != c["wakeups_local"] + c["wakeups_remote"]:
            bad.append(f"cpu {i}: wakeups != local + remote")
        # the guest converts three cycle counts to ns separately: allow their rounding
        if abs(c["idle_ns"] - c["poll_ns"] - c["halt_ns"]) > 2:
            bad.append(f"cpu {i}: idle_ns != poll_ns + halt_ns")
    return bad
