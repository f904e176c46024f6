"""trace=halt_poll_ns: KVM's own halt events over one bench boot's window, for the tables
that explain a window setting by what KVM did halt by halt (seed 004's grow and shrink).
trace=threads: the vCPU threads' halts over the window split by the host's scheduler
(derive/threadtrace.py), as the cost table's boot is (costtable/tracedboot.py), for one run.

A tracefs instance of our own (tracefs.Session: nothing global is touched, and it is removed
on every way out) is opened before QEMU starts, so every window change of the vCPUs is seen
from their first halt; it follows the guest's vCPU threads once QMP names them. Its clock is
mono, CLOCK_MONOTONIC's base, so the probe's marker times (time.monotonic_ns) cut the window
out of it. The parsing and the story are derive/kvmtrace.py's.
"""
import gzip
import os

from idlelab.derive import kvmtrace, threadtrace
from idlelab.host import tracefs

EVENTS = {"halt_poll_ns": ("kvm/kvm_halt_poll_ns", "kvm/kvm_vcpu_wakeup"),
          "threads": threadtrace.EVENTS}
CLOCK = "mono"
BUFFER_KB = {"halt_poll_ns": 16384,     # per host CPU: a 1.5 s pingpong's halts with room
             "threads": 32768}          # every exit and switch of the vCPU threads


class WindowTrace:
    """with WindowTrace(what, accel) as t: ...; t.follow(tids); ...; t.part(open, close).
    `why` says why there is no trace (TCG, tracefs unavailable); then part() says so."""

    def __init__(self, what, accel):
        self.what, self.session, self.why, self.tids = what, None, None, {}
        self.followed = False          # the trace holds the vCPU threads' events alone
        if accel != "kvm":
            self.why = "no KVM host to trace (TCG)"

    def __enter__(self):
        if self.why is None:
            try:
                self.session = tracefs.Session(EVENTS[self.what], CLOCK,
                                               BUFFER_KB[self.what]).__enter__()
            except tracefs.Unavailable as e:
                self.why = f"tracefs: {e}"
        return self

    def __exit__(self, *exc):
        if self.session is not None:
            self.session.__exit__(*exc)

    def follow(self, tids):
        """Only these threads' events from now on ({vcpu: tid}, the guest's vCPUs)."""
        self.tids = dict(tids or {})
        if self.session is not None and self.tids:
            try:
                self.session.set_pids(self.tids.values())
                self.followed = True
            except OSError as e:
                self.why = f"tracefs: following the vCPU threads: {e.strerror or e}"

    def part(self, t_open_ns, t_close_ns, whole=False, keep=None):
        """The record's `trace`: what was asked, and the window's lists or why there are
        none (`whole`: the whole trace, no window: the cost table's boot). `keep`: a path
        (.gz) where the whole text goes as tracefs printed it, for tools/replay (the lists
        stop at MAX_ITEMS); its name is the part's `raw`. Call before leaving the with-block
        (it reads the instance)."""
        out = {"what": self.what}
        if self.why is None and self.session is None:
            self.why = "the trace was not started"
        if self.why is None and not whole and (t_open_ns is None or t_close_ns is None):
            self.why = "the run has no measured window to cut the trace to"
        if self.why is None and self.session.clock != CLOCK:
            self.why = f"trace_clock {CLOCK} not offered (the window cannot be cut out)"
        if self.why is None:
            try:
                self.session.stop()
                text = self.session.read()
            except OSError as e:
                self.why = f"tracefs: reading the trace: {e.strerror or e}"
        if self.why is not None:
            return dict(out, why=self.why)
        out["notes"] = list(self.session.notes)
        if keep is not None:
            out["raw"] = keep_text(text, keep)
        if self.what != "threads":
            out.update(kvmtrace.window_part(text, self.tids, t_open_ns, t_close_ns))
            return out
        if not self.tids:
            return dict(out, why="the vCPU threads were not named")
        # a trace that follows the vCPU threads alone misses the switches between other
        # tasks and idle: no demand from it
        out.update(threadtrace.summary(text, set(self.tids.values()),
                                       None if whole else (t_open_ns, t_close_ns),
                                       demand=not self.followed))
        if not out["vcpus"]:
            out["why"] = "no VM exit of a vCPU thread was traced (this KVM has no kvm_exit event)"
        elif not out["halts"]:
            out["why"] = "no halt of a vCPU thread slept without a host poll"
        return out


def keep_text(text, path):
    """Writes the trace's text to `path` (gzip; a name not yet taken, ".1" and on added
    before ".gz"); returns the name written, or why not (the record says which)."""
    base, n = path[:-3] if path.endswith(".gz") else path, 0
    while True:
        name = f"{base}{f'.{n}' if n else ''}.gz"
        try:
            os.makedirs(os.path.dirname(name) or ".", exist_ok=True)
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            n += 1
            continue
        except OSError as e:
            return {"error": f"{path}: {e.strerror or e}"}
        try:
            with gzip.open(os.fdopen(fd, "wb"), "wt", encoding="utf-8", compresslevel=6) as f:
                f.write(text)
        except OSError as e:
            return {"error": f"{name}: {e.strerror or e}"}
        return {"path": os.path.basename(name)}
