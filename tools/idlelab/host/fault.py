"""Faults injected on purpose (matrix key `stall=VCPU@OFFSET+DURATION`): one vCPU's host
thread is stopped for a while inside the measured window, as host preemption does to real
guests.

SIGSTOP/SIGCONT would stop every thread of QEMU, so the one thread is stopped with ptrace:
PTRACE_SEIZE its thread id, PTRACE_INTERRUPT, waitpid(tid, __WALL) until it is in a stop,
wait out the duration, PTRACE_DETACH. Every ptrace request and wait of one stall comes from
the one Python thread that seized it (ptrace's tracer is a thread, not a process).

Nothing here falls back silently: if ptrace is refused (not root, yama ptrace_scope, a
seccomp'd QEMU) the stall records the error and the run is reported as not run (onerun.
verdict), never as an undisturbed measurement. Nothing can stay stopped: the thread detaches
in `finally` on every path, a QEMU that exits takes its threads with it, and should the
detach itself fail the kernel detaches every tracee when the tracer thread ends, which it
does within the stall's duration (cancel() cuts that short)."""
import ctypes
import errno
import os
import threading
import time

from idlelab.host import vcputhreads

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PTRACE_EVENT_STOP = 128
WALL = 0x40000000            # __WALL: wait for a thread (a "clone" child) as well
_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.restype = ctypes.c_long
_libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class PtraceError(OSError):
    pass


def _ptrace(request, tid, data=0):
    if _libc.ptrace(request, tid, None, ctypes.c_void_p(data)) == -1:
        err = ctypes.get_errno()
        raise PtraceError(err, f"{os.strerror(err)} ({errno.errorcode.get(err, err)})")


def _ms(ns):
    return None if ns is None else round(ns / 1e6, 3)


class Stall:
    """One scheduled stop of one vCPU thread; start() it when the window opens (t0, a
    monotonic ns). result() is the record's `fault` part."""

    def __init__(self, spec, pid, threads):
        self.spec, self.pid = spec, pid
        self.tid = (threads or {}).get(spec.vcpu)
        self.t0 = None
        self.actual = {}
        self.error = None
        self._cancel = threading.Event()
        self._thread = None

    def start(self, t0_ns):
        self.t0 = t0_ns
        self._thread = threading.Thread(target=self._run, name="idlelab-stall", daemon=True)
        self._thread.start()

    def cancel(self, timeout=10):
        """Ends the stall early (QEMU gone or the probe closing) and waits for the thread:
        the vCPU thread is detached before this returns."""
        self._cancel.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive() and self.error is None:
                self.error = f"the stall thread did not end within {timeout} s"

    def _run(self):
        try:
            if self.tid is None:
                raise RuntimeError(f"no thread id for vCPU {self.spec.vcpu} (QMP gave none)")
            wait = self.t0 + self.spec.offset_ns - time.monotonic_ns()
            if wait > 0 and self._cancel.wait(wait / 1e9):
                raise RuntimeError("the run ended before the stall was due")
            self._stall()
        except Exception as e:  # recorded: the run is not reported as an undisturbed one
            self.error = f"{type(e).__name__}: {e}" if not isinstance(e, OSError) else \
                f"ptrace on vCPU {self.spec.vcpu}'s thread {self.tid}: {e.strerror}"

    def _stall(self):
        tid, a = self.tid, self.actual
        cpu_before = _cpu_ns(self.pid, tid)
        a["requested_at_ns"] = time.monotonic_ns() - self.t0
        _ptrace(PTRACE_SEIZE, tid)
        seized, signo = True, 0
        try:
            _ptrace(PTRACE_INTERRUPT, tid)
            signo = self._wait_stopped(tid)
            stopped = time.monotonic_ns()
            a["start_ns"] = stopped - self.t0
            a["stop_latency_ns"] = stopped - self.t0 - a["requested_at_ns"]
            cpu_stopped = _cpu_ns(self.pid, tid)
            self._cancel.wait(max(0, stopped + self.spec.duration_ns
                                  - time.monotonic_ns()) / 1e9)
            cpu_resumed = _cpu_ns(self.pid, tid)
            _ptrace(PTRACE_DETACH, tid, signo)     # a signal caught in the stop goes on
            seized = False
            resumed = time.monotonic_ns()
            a["duration_ns"] = resumed - stopped
            if self._cancel.is_set():
                self.error = "cut short: the run ended while the thread was stopped"
            if None not in (cpu_before, cpu_stopped, cpu_resumed):
                a["thread_cpu_during_ns"] = cpu_resumed - cpu_stopped
                a["thread_cpu_before_ns"] = cpu_stopped - cpu_before
        finally:
            if seized:
                _release(tid, signo)

    def _wait_stopped(self, tid):
        """Waits until the thread is in a ptrace stop; the signal to hand back on detach (0
        for the interrupt's own stop, else a signal that arrived first and stopped it)."""
        _, status = os.waitpid(tid, WALL)
        if os.WIFSTOPPED(status):
            if status >> 16 == PTRACE_EVENT_STOP:
                return 0
            return os.WSTOPSIG(status)
        raise RuntimeError(f"vCPU {self.spec.vcpu}'s thread ended instead of stopping "
                           f"(wait status {status:#x})")

    def result(self):
        """The record's `fault` part: what was asked, what happened (ms, from the moment the
        open marker was acknowledged), or the error."""
        s, a = self.spec, self.actual
        out = {"kind": "stall", "vcpu": s.vcpu, "thread_id": self.tid, "method": "ptrace",
               "requested": {"offset_ms": _ms(s.offset_ns), "duration_ms": _ms(s.duration_ns)},
               "done": self.error is None and "duration_ns" in a, "error": self.error}
        if self.t0 is None and self.error is None:
            out["error"] = "the window never opened: the stall was not started"
        if a:
            out["actual"] = {k.replace("_ns", "_ms"): (_ms(v) if k.endswith("_ns") else v)
                             for k, v in a.items()}
        return out


def _release(tid, signo):
    """Detaches on an error path; if the thread is no longer in a stop (gone, or a zombie
    only its tracer may reap) reaps it instead."""
    try:
        _ptrace(PTRACE_DETACH, tid, signo)
    except OSError:
        try:
            os.waitpid(tid, WALL | os.WNOHANG)
        except OSError:
            pass


def _cpu_ns(pid, tid):
    try:
        return vcputhreads.thread_cpu_ns(pid, tid)
    except (OSError, ValueError):
        return None
