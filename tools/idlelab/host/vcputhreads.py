"""QEMU's vCPU threads on the host, from /proc: found by name, their CPU time, their run delay
and wake-ups, and a Snapshot of KVM's counters beside their CPU time.

vCPU threads are found by name: QEMU run with `-name x,debug-threads=on` (qemu.py does) names
them `CPU n/KVM` (`CPU n/TCG` under multi-threaded TCG). Their CPU time comes from
/proc/PID/task/TID/schedstat (ns, first field) or, without schedstats, stat utime+stime."""
import os
import re
import time

from idlelab.derive.kvmdelta import Snapshot


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


WAKE_COUNTS = ("nr_wakeups", "nr_wakeups_local", "nr_migrations")


def thread_wake_counts(pid, tid, proc_root="/proc"):
    """{name: n} of WAKE_COUNTS from the thread's sched file: its wake-ups, those that put it
    on the waker's own CPU (for a vCPU thread an IPI kicked: behind the sending vCPU's thread;
    a timer's: its own CPU), its migrations. The wake-ups need schedstats (the nested host
    boots with them); None where the file or the wake-ups are missing."""
    try:
        with open(os.path.join(proc_root, str(pid), "task", str(tid), "sched")) as f:
            text = f.read()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        name = key.strip().rsplit(".", 1)[-1]
        if sep and name in WAKE_COUNTS:
            try:
                out[name] = int(value.strip())
            except ValueError:
                return None
    return out if set(WAKE_COUNTS) <= set(out) else None


def vcpu_cpu_ns(pid, threads=None, proc_root="/proc"):
    """{cpu_index: CPU ns} for every vCPU thread (`threads` from find_vcpu_threads)."""
    if threads is None:
        threads = find_vcpu_threads(pid, proc_root)
    return {cpu: thread_cpu_ns(pid, tid, proc_root) for cpu, tid in sorted(threads.items())}


def take_snapshot(qmp, pid, names=None, threads=None, cpu_first=False):
    """A Snapshot of a running QEMU: KVM stats over QMP ({} under TCG) and thread CPU time.
    The clock is read between the two so it sits inside the sampling window. cpu_first: the
    threads' CPU time before the stats (a QMP round trip), where the CPU time the threads
    use meanwhile belongs after the window, not in it."""
    if cpu_first:
        cpu = vcpu_cpu_ns(pid, threads)
        now = time.monotonic_ns()
        return Snapshot(now, qmp.query_stats_vcpus(names), cpu)
    stats = qmp.query_stats_vcpus(names)
    now = time.monotonic_ns()
    return Snapshot(now, stats, vcpu_cpu_ns(pid, threads))
