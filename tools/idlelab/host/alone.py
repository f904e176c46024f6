"""alone=: one vCPU's thread alone on the host CPU pin= gave it, as the seed (003) measured a
pinned vCPU whose CPU nothing else used. Every other thread of QEMU and of the bench is moved
off that CPU; on a host the project owns (the nested host) every other task that can move is
too, and put back when the run ends, on every path (restore()). Per-CPU kernel threads cannot
move: they are named in the record, and what they ran shows in that CPU's mpstat split
(host/cpustat.py) as time the vCPU thread did not use.

Why it matters: KVM stops a poll when another task is runnable on the CPU
(single_task_running), so beside a neighbour a poll that caught nothing lasted 68-89 µs of a
400 µs window on the nested host; alone it lasts its whole window."""
import os


def _tids(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _all_tids():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            yield from ((int(pid), t) for t in _tids(pid))


def _comm(tid):
    try:
        with open(f"/proc/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


class Alone:
    """Keeps host CPU `cpu` for thread `tid` alone; restore() puts every moved task back."""

    def __init__(self, vcpu, cpu, tid, qemu_pid, own_host):
        self.vcpu, self.cpu, self.tid, self.own_host = vcpu, cpu, tid, own_host
        self.qemu_pid = qemu_pid
        self.moved = {}       # tid -> the CPUs it was allowed before
        self.kept = {}        # comm -> count: tasks on that CPU that could not move
        self.error = None

    def apply(self):
        """Moves the tasks; returns self. A task that exits meanwhile is skipped."""
        everyone = set(range(os.cpu_count() or 1))
        if self.cpu not in everyone or len(everyone) < 2:
            self.error = f"host CPU {self.cpu}: this host has CPUs 0-{len(everyone) - 1}; " \
                         "alone= needs another for the rest"
            return self
        own = set(_tids(self.qemu_pid)) | set(_tids(os.getpid()))
        targets = [(None, t) for t in own] if not self.own_host else list(_all_tids())
        for _, tid in targets:
            if tid == self.tid:
                continue
            try:
                mask = os.sched_getaffinity(tid)
                if self.cpu not in mask:
                    continue
                rest = mask - {self.cpu}
                os.sched_setaffinity(tid, rest or everyone - {self.cpu})
                self.moved[tid] = mask
            except ProcessLookupError:
                continue
            except OSError:       # EINVAL: a per-CPU kernel thread, bound where it is
                name = _comm(tid)
                self.kept[name] = self.kept.get(name, 0) + 1
        return self

    def restore(self):
        """Every moved task back to the CPUs it had (those that still exist)."""
        for tid, mask in self.moved.items():
            try:
                os.sched_setaffinity(tid, mask)
            except OSError:
                pass
        self.moved_count, self.moved = len(self.moved), {}

    def part(self):
        """The record's `alone`."""
        return {"vcpu": self.vcpu, "cpu": self.cpu, "thread": self.tid,
                "moved": getattr(self, "moved_count", len(self.moved)),
                "others_moved": self.own_host,
                "kept": dict(sorted(self.kept.items())), "error": self.error}
