"""One run's records gathered into a Run (the boot, idle and config records, the measurement
window, the per-CPU counters and the workload's result, numbers converted) and the identities
the guest promises its counters satisfy, checked. Pure: a run's serial console in, values out."""
from dataclasses import dataclass, field

from idlelab.derive.records import parse_records

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
