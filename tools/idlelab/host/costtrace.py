"""The cost table's boot traced on the host: its vCPU threads' halts split into what the
thread spends on a host CPU and what it waits (derive/threadtrace.py), so the simulator
charges a halt-and-wake to the vCPU thread as KVM's own scheduler did, in the same boot as
the primitives.

A tracefs instance of our own (tracefs.Session: nothing global is touched, and it is removed
on every way out). It traces the whole host rather than a pid list, which could only be set
once the vCPU threads exist, after QEMU has started (the boot has no QMP to name them). The
boot's own vCPU threads are looked up by name in its QEMU's /proc as soon as QEMU has made
them (follow()), and threadtrace keeps only theirs: another VM names its vCPU threads alike.
"""
import threading
import time

from idlelab.derive import threadtrace
from idlelab.derive.records import SMP
from idlelab.host import samplers, tracefs

CLOCK = "mono"
BUFFER_KB = 32768       # per host CPU: the boot's exits and the host's switches for ~30 s
FIND_S = 10             # QEMU makes its vCPU threads within this of its start


class ThreadTrace:
    """with ThreadTrace(accel) as t: <boot, on_start=t.follow>; part = t.part(). The part is
    threadtrace's summary, or {"why": ...} where there is none (TCG, tracefs unavailable, the
    threads not found, a failed read)."""

    def __init__(self, accel):
        self.session, self.why, self.tids, self._finder = None, None, {}, None
        if accel != "kvm":
            self.why = "no KVM host to trace (TCG)"

    def follow(self, proc):
        """on_start of the boot: its vCPU threads, found in the background."""
        def find():
            deadline = time.monotonic() + FIND_S
            while proc.poll() is None and time.monotonic() < deadline:
                try:
                    self.tids = samplers.find_vcpu_threads(proc.pid)
                except OSError:
                    return
                if len(self.tids) >= SMP:
                    return
                time.sleep(0.01)
        self._finder = threading.Thread(target=find, name="costtrace-find", daemon=True)
        self._finder.start()

    def __enter__(self):
        if self.why is None:
            try:
                self.session = tracefs.Session(threadtrace.EVENTS, CLOCK, BUFFER_KB).__enter__()
            except tracefs.Unavailable as e:
                self.why = f"tracefs: {e}"
        return self

    def __exit__(self, *exc):
        if self.session is not None:
            self.session.__exit__(*exc)

    def part(self):
        """Call before leaving the with-block (it reads the instance)."""
        if self._finder is not None and self._finder.ident is not None:
            self._finder.join()
        if self.why is None and self.session.clock != CLOCK:
            self.why = f"trace_clock {CLOCK} not offered"
        if self.why is None and not self.tids:
            self.why = "the boot's vCPU threads were not found in its QEMU's /proc"
        if self.why is None:
            try:
                self.session.stop()
                out = threadtrace.summary(self.session.read(), set(self.tids.values()))
            except OSError as e:
                self.why = f"tracefs: reading the trace: {e.strerror or e}"
        if self.why is not None:
            return {"why": self.why}
        if self.session.notes:
            out["notes"] = list(self.session.notes)
        if not out["vcpus"]:
            out["why"] = "no VM exit of a vCPU thread was traced (this KVM has no kvm_exit event)"
        elif not out["halts"]:
            out["why"] = "no halt of a vCPU thread slept without a host poll"
        return out
