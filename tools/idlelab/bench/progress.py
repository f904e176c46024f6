"""What the bench says while it runs, on stderr (stdout stays the summary): notes, and the
progress line with an ETA that learns the real fixed cost per boot from the runs made."""
import sys
import time

from idlelab.bench import matrix
from idlelab.bench.workplan import RUN_OVERHEAD_S, estimate_s


def say(msg):
    """A progress note or warning, on stderr."""
    print(f"bench: {msg}", file=sys.stderr, flush=True)


class Progress:
    """Which run, how many left, and the time the rest should take."""

    def __init__(self, work):
        self.work = work
        self.started = time.monotonic()
        self.overheads = []

    def eta_s(self, index):
        overhead = (sum(self.overheads) / len(self.overheads)) if self.overheads \
            else RUN_OVERHEAD_S
        return sum(estimate_s(run) - RUN_OVERHEAD_S + overhead
                   for _, run, _ in self.work[index:])

    def line(self, index):
        mid, run, rep = self.work[index]
        left = len(self.work) - index - 1
        eta = self.eta_s(index)
        rep_txt = f" #{rep}/{run.repeat}" if run.repeat > 1 else ""
        return (f"[{index + 1:>2}/{len(self.work)}] {mid} {run.name}{rep_txt} "
                f"({run.workload}, {run.settings['duration']}) | {left} left, "
                f"ETA {int(eta // 60)}:{int(eta % 60):02d}")

    def done(self, run, rec):
        """Learns the boot's fixed cost: its wall time minus warm-up and window."""
        q = rec.get("qemu")
        if q:
            warm = matrix.parse_time(run.guest.get("warmup", "100ms"))
            self.overheads.append(max(0.0, q["seconds"] - (warm + run.duration_ns) / 1e9))
