"""The cost table's second boot, traced on the host: its vCPU threads' halts split into what
the thread spends on a host CPU and what it waits (derive/threadtrace.py), so the simulator
charges a halt-and-wake to the vCPU thread as KVM's own scheduler did. The primitives come
from the first boot, untraced, and the parts are scaled to it (threadtrace.unprobed(): the
trace slows what it times).

The tracing is trace=threads' (host/windowtrace.py: a tracefs instance of our own, nothing
global touched, removed on every way out), of the whole boot and the whole host rather than a
pid list, which could only be set once the vCPU threads exist (the boot has no QMP to name
them). The boot's own vCPU threads are looked up by name in its QEMU's /proc as soon as QEMU
has made them (find_threads()), and threadtrace keeps only theirs: another VM names its vCPU
threads alike.
"""
import threading
import time

from idlelab.costtable import SMP
from idlelab.host import vcputhreads
from idlelab.host.windowtrace import WindowTrace

FIND_S = 10             # QEMU makes its vCPU threads within this of its start


class ThreadTrace(WindowTrace):
    """with ThreadTrace(accel) as t: <boot, on_start=t.find_threads>; part = t.part():
    trace=threads' tracing (windowtrace.py) of the whole boot rather than a window."""

    def __init__(self, accel):
        super().__init__("threads", accel)
        self._finder = None

    def find_threads(self, proc):
        """on_start of the boot: its vCPU threads, found in the background."""
        def find():
            deadline = time.monotonic() + FIND_S
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    self.tids = vcputhreads.find_vcpu_threads(proc.pid)
                except OSError:
                    return
                if len(self.tids) >= SMP:
                    return
                time.sleep(0.01)
        self._finder = threading.Thread(target=find, name="tracedboot-find", daemon=True)
        self._finder.start()

    def part(self):
        """threadtrace's summary of the boot, or {"why": ...} (TCG, tracefs unavailable,
        the threads not found, a failed read, nothing to split). Call before leaving the
        with-block (it reads the instance)."""
        if self._finder is not None and self._finder.ident is not None:
            self._finder.join()
        return super().part(None, None, whole=True)
