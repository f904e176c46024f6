"""QEMU's vCPU threads on the host, read from /proc: found by name, their CPU time, and how
long the host kept each waiting to run, over time.

vCPU threads are found by name: QEMU run with `-name x,debug-threads=on` (qemu.py does) names
them `CPU n/KVM` (`CPU n/TCG` under multi-threaded TCG). Their CPU time comes from
/proc/PID/task/TID/schedstat (ns, first field) or, without schedstats, stat utime+stime.

WaitSampler follows the run
delay the kernel's schedstat accounts (/proc/PID/task/TID/schedstat, second field: ns spent
runnable on a run queue, not running), sampled by a thread every PERIOD_S, plus the
intervals in which the harness itself stopped a thread or the whole VM (a stall: stopped
threads are not runnable, so schedstat does not count them). attribution.py asks it what a
vCPU waited between two instants."""
import bisect
import os
import re
import threading
import time

from idlelab.derive.kvmdelta import Snapshot

PERIOD_S = 0.005
RESCAN_EVERY = 20       # samples between two looks for vCPU threads that started since
_VCPU_COMM = re.compile(r"CPU (\d+)/(KVM|TCG)")


def find_vcpu_threads(pid, proc_root="/proc"):
    """{cpu_index: tid} for QEMU's vCPU threads, found by their `CPU n/KVM|TCG` names."""
    task_dir = os.path.join(proc_root, str(pid), "task")
    out = {}
    for tid in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, tid, "comm")) as f:
                comm = f.read().strip()
        except FileNotFoundError:
            continue  # the thread ended while we looked
        m = _VCPU_COMM.fullmatch(comm)
        if m:
            out[int(m.group(1))] = int(tid)
    return out


def thread_cpu_ns(pid, tid, proc_root="/proc"):
    """CPU time the thread has used, in ns: schedstat's exact figure when the kernel keeps
    it, else utime+stime from stat (clock-tick resolution)."""
    base = os.path.join(proc_root, str(pid), "task", str(tid))
    try:
        with open(os.path.join(base, "schedstat")) as f:
            return int(f.read().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        pass
    with open(os.path.join(base, "stat")) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After "pid (comm)": fields[0] is state (field 3), so utime (14) and stime (15) are 11, 12.
    ticks = int(fields[11]) + int(fields[12])
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def thread_run_delay_ns(pid, tid, proc_root="/proc"):
    """How long the thread has waited runnable on a run queue (schedstat's second field, ns):
    for a vCPU thread, what KVM reports to the guest as steal time. None without schedstat."""
    try:
        with open(os.path.join(proc_root, str(pid), "task", str(tid), "schedstat")) as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def vcpu_cpu_ns(pid, threads=None, proc_root="/proc"):
    """{cpu_index: CPU ns} for every vCPU thread (`threads` from find_vcpu_threads)."""
    if threads is None:
        threads = find_vcpu_threads(pid, proc_root)
    return {cpu: thread_cpu_ns(pid, tid, proc_root) for cpu, tid in sorted(threads.items())}


def take_snapshot(qmp, pid, names=None, threads=None):
    """A Snapshot of a running QEMU: KVM stats over QMP ({} under TCG) and thread CPU time.
    The clock is read between the two so it sits inside the sampling window."""
    stats = qmp.query_stats_vcpus(names)
    now = time.monotonic_ns()
    return Snapshot(now, stats, vcpu_cpu_ns(pid, threads))


class WaitSampler:
    """Samples the run delay of a QEMU's vCPU threads from start(proc) until stop().

    Invariant: samples[k] holds (t_ns, {cpu: run delay}) with t_ns strictly increasing, and
    a thread's delay never decreases; wait_ns() brackets an interval by the last sample at
    or before its start and the first at or after its end, so it never under-counts."""

    def __init__(self, period_s=PERIOD_S, proc_root="/proc"):
        self.period_s, self.proc_root = period_s, proc_root
        self.pid, self.tids = None, {}
        self.times, self.delays = [], []
        self.stalls = []          # (start_ns, end_ns, cpus or None for every vCPU)
        self._stop = threading.Event()
        self._thread = None
        self.error = None

    def start(self, pid):
        self.pid = pid
        self._thread = threading.Thread(target=self._run, name="idlelab-vcpu-waits",
                                        daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._sample()          # the last instant too

    def add_stall(self, start_ns, end_ns, cpus=None):
        """The harness stopped these vCPUs (None: the whole VM) from start_ns to end_ns
        (time.monotonic_ns)."""
        self.stalls.append((start_ns, end_ns, None if cpus is None else set(cpus)))

    def _run(self):
        try:
            n = 0
            while not self._stop.is_set():
                if n % RESCAN_EVERY == 0:   # QEMU starts its vCPU threads one by one
                    self.tids = {**find_vcpu_threads(self.pid, self.proc_root), **self.tids}
                n += 1
                self._sample()
                self._stop.wait(self.period_s)
        except OSError as e:      # QEMU gone: what was sampled stays
            self.error = f"{type(e).__name__}: {e}"

    def _sample(self):
        if not self.tids:
            return
        now = time.monotonic_ns()
        row = {cpu: thread_run_delay_ns(self.pid, tid, self.proc_root)
               for cpu, tid in self.tids.items()}
        row = {cpu: d for cpu, d in row.items() if d is not None}
        if row and (not self.times or now > self.times[-1]):
            self.times.append(now)
            self.delays.append(row)

    def cpus(self):
        return sorted(self.tids)

    def wait_ns(self, cpu, start_ns, end_ns):
        """What vCPU `cpu` waited for the host between two monotonic instants: its run
        delay over the smallest sampled interval that covers them, plus the stalls that
        overlap them. None if no sample covers the interval."""
        i = bisect.bisect_right(self.times, start_ns) - 1
        while i >= 0 and cpu not in self.delays[i]:
            i -= 1            # its thread was not yet found at that sample: an earlier one
        j = bisect.bisect_left(self.times, end_ns)
        while j < len(self.times) and cpu not in self.delays[j]:
            j += 1            # (and never: a thread gone is missing from later samples)
        if i < 0 or j >= len(self.times):
            return None
        a, b = self.delays[i][cpu], self.delays[j][cpu]
        stalled = sum(max(0, min(e, end_ns) - max(s, start_ns))
                      for s, e, cpus in self.stalls if cpus is None or cpu in cpus)
        return (b - a) + stalled
