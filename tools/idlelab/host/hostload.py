"""The machine's load around a run, from /proc: busy time from /proc/stat, the CPU used by QEMU
and by this process, and what is left (other load, which disturbs a measurement); the
--wait-quiet waiter, which samples the same figures until the machine is quiet, and the
--quiet-below rule of when a run saw enough other load to wait again."""
import os
import resource
import time

from idlelab.derive.records import is_number


TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def host_cpus():
    """CPUs the host kernel schedules on (the denominator of every load percentage)."""
    return os.cpu_count() or 1


def proc_stat_ns(path="/proc/stat"):
    """(idle ns, steal ns) summed over every CPU since boot. Busy time is derived as wall
    time minus these: the kernel measures idle exactly (nohz idle accounting) but samples
    busy time at the tick, which misses most of a vCPU thread's short timer-driven bursts."""
    with open(path) as f:
        fields = [int(x) for x in f.readline().split()[1:]] + [0] * 8
    idle, iowait, steal = fields[3], fields[4], fields[7]
    return (idle + iowait) * TICK_NS, steal * TICK_NS


def process_cpu_ns(pid):
    """A live process's CPU time (all threads, exited ones too) from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_NS


def rusage_ns(who):
    r = resource.getrusage(who)
    return int((r.ru_utime + r.ru_stime) * 1e9)


def load_sample(pid=None):
    """One moment of the machine: busy/steal totals, our own CPU, QEMU's if `pid`."""
    idle, steal = proc_stat_ns()
    sample = {"t_ns": time.monotonic_ns(), "idle_ns": idle, "steal_ns": steal,
              "self_ns": rusage_ns(resource.RUSAGE_SELF),
              "children_ns": rusage_ns(resource.RUSAGE_CHILDREN)}
    if pid is not None:
        try:
            sample["qemu_ns"] = process_cpu_ns(pid)
        except (FileNotFoundError, ProcessLookupError):
            sample["qemu_ns"] = None
    return sample


def other_load(a, b, qemu_ns, ncpus=None):
    """Load between samples a and b as % of all host CPUs: everything busy (wall time
    minus idle and steal), ours (QEMU + this process), and the rest, which is what disturbs
    a measurement. /proc/stat counts in 10 ms ticks, so `other` can dip a little below 0;
    it is clamped and the raw value kept."""
    ncpus = ncpus or host_cpus()
    span = max(b["t_ns"] - a["t_ns"], 1) * ncpus
    steal = b["steal_ns"] - a["steal_ns"]
    busy = span - (b["idle_ns"] - a["idle_ns"]) - steal
    ours = (qemu_ns or 0) + (b["self_ns"] - a["self_ns"])
    return {"elapsed_s": round((b["t_ns"] - a["t_ns"]) / 1e9, 3),
            "busy_pct": round(100 * busy / span, 2),
            "ours_pct": round(100 * ours / span, 2),
            "other_pct": round(max(0.0, 100 * (busy - ours) / span), 2),
            "other_raw_pct": round(100 * (busy - ours) / span, 2),
            "steal_pct": round(100 * steal / span, 2)}


def loadavg():
    """The 1, 5 and 15 minute load averages."""
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class QuietWaiter:
    """--wait-quiet: before the first run, and again after a run that saw other load, waits
    until a short sample of the machine is below `below_pct`, for at most `budget_s` seconds
    over the whole invocation (a busy machine must not stall the bench for ever). `say`
    takes its notes (the bench's progress line; none by default)."""

    def __init__(self, budget_s, below_pct, sample_s=0.5, say=lambda msg: None):
        self.budget_s, self.below_pct, self.sample_s = budget_s, below_pct, sample_s
        self.say = say
        self.spent_s = 0.0
        self.gave_up = False

    def wait(self, why):
        """Returns (seconds waited, last other-load %, quiet?). No-op without a budget."""
        if self.budget_s <= 0:
            return 0.0, None, None
        if self.spent_s >= self.budget_s:
            return 0.0, None, False   # budget used up: said once already, go on
        start = time.monotonic()
        while True:
            a = load_sample()
            time.sleep(self.sample_s)
            pct = other_load(a, load_sample(), 0)["other_pct"]
            waited = time.monotonic() - start
            if pct < self.below_pct:
                if waited > self.sample_s * 1.5:
                    self.say(f"machine quiet after {waited:.1f}s ({pct:.1f}% other load)")
                self.spent_s += waited
                return waited, pct, True
            if self.spent_s + waited >= self.budget_s:
                self.spent_s += waited
                if not self.gave_up:
                    self.say(f"machine still busy ({pct:.1f}% other load, above {self.below_pct}%) "
                        f"after the --wait-quiet budget of {self.budget_s:.0f}s: running "
                        "anyway; each result records its other load")
                self.gave_up = True
                return waited, pct, False
            if waited < self.sample_s * 1.5:
                self.say(f"waiting for a quiet machine ({why}: {pct:.1f}% other load)")


def saw_other_load(row, below_pct):
    """True when a run's other load reached the --quiet-below threshold."""
    return is_number(row.other_load) and row.other_load >= below_pct
