"""One boot of selftest=wakeup (or any run that may print late or lost wake-ups) with the
host's waits sampled beside it (vcpuwaits.WaitSampler), so that each late or lost wake-up
comes back attributed (derive/latewake.py); and the retry rule the tests use: a run that failed
only by wake-ups the host's waits cover is made again, at most twice more, and the verdict
is the guest's own or, after every attempt, "host-starved"."""
import time
from dataclasses import dataclass, field

from idlelab.derive import latewake
from idlelab.host import qemu
from idlelab.host.vcpuwaits import WaitSampler, Waits

ATTEMPTS = 3


@dataclass
class Attempt:
    res: object                      # qemu.RunResult
    lines: list                      # [(host monotonic ns, console line)]
    sampler: WaitSampler = field(repr=False, default=None)

    @property
    def events(self):
        """latewake.attribute() of the run, with what the sampler knows now (a stall
        the caller adds after the run counts)."""
        return latewake.attribute_output(self.lines, Waits(self.sampler))

    @property
    def guest_faults(self):
        return [e for e in self.events if e["kind"] in latewake.GUEST_FAULTS]

    @property
    def host_starved(self):
        """Failed, and every late or lost wake-up was covered by the host's waits."""
        return (not self.res.outcome.ok and bool(self.events) and not self.guest_faults)


def run(cfg, timeout=120, on_line=None, on_start=None, sampler=None):
    """qemu.run with the vCPU threads' waits sampled and every line's arrival time kept."""
    sampler = sampler or WaitSampler(duty=None)   # its verdicts want the 5 ms resolution
    lines = []

    def started(proc):
        sampler.start(proc.pid)
        if on_start:
            on_start(proc)

    def line_seen(line):
        lines.append((time.monotonic_ns(), line))
        if on_line:
            on_line(line)

    try:
        res = qemu.run(cfg, timeout=timeout, on_line=line_seen, on_start=started)
    finally:
        sampler.stop()
    return Attempt(res, lines, sampler)


def until_guest_verdict(cfg, timeout=120, attempts=ATTEMPTS):
    """Boots until a run is not host-starved, at most `attempts` times; returns the list of
    attempts (the last one decides)."""
    out = []
    for _ in range(attempts):
        out.append(run(cfg, timeout))
        if not out[-1].host_starved:
            break
    return out


def starved_every_time(tries):
    """The reason a test fails on when every attempt was host-starved, or None."""
    if len(tries) < ATTEMPTS or not all(t.host_starved for t in tries):
        return None
    return (f"host-starved in each of {len(tries)} boots (not the guest's fault, but "
            "nothing was measured): " + "; ".join(latewake.describe(t.events[0])
                                                    for t in tries))
