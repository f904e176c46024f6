"""KVM's halt events traced on the host for the length of one boot, in a tracefs instance of
our own (instances/idlelab-timeline-<pid>).

The host's tracing state is global, so nothing global is touched: an instance has its own
buffer, clock, enabled events, pid filter and on/off switch, and removing it (rmdir) takes all
of them away. The session removes it, and unmounts tracefs if it mounted it, on every way out
of its with-block (exceptions, and SIGINT/SIGTERM/SIGHUP, which the caller turns into
exceptions); signals are held back meanwhile so the removal itself cannot be cut short. An
instance a SIGKILLed run left behind is named by its pid: the next session removes it.
"""
import contextlib
import os
import re
import signal

from idlelab.host import kernelfs
from idlelab.processes import pid_alive

PREFIX = "idlelab-timeline-"
# What the overlay draws: each vCPU's halts as KVM saw them (poll, wait, how long), the host
# window's changes, and (where the platform reports them) the exits.
EVENTS = ("kvm/kvm_vcpu_wakeup", "kvm/kvm_halt_poll_ns", "kvm/kvm_exit")
CLOCK = "x86-tsc"        # the guest's TSC plus the vCPU's offset: what the guest stamps with
BUFFER_KB = 8192         # per host CPU
_HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

Unavailable = kernelfs.Unavailable


def _write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class Session:
    """with Session() as s: ...; s.set_pids(tids); ...; s.stop(); text = s.read().
    Raises Unavailable (having changed nothing) where tracefs cannot be used. `notes` lists
    what differs from the plan (an event this kernel lacks, no x86-tsc clock, a stale
    instance removed)."""

    def __init__(self, events=EVENTS, clock=CLOCK, buffer_kb=BUFFER_KB):
        self.wanted, self.want_clock, self.buffer_kb = events, clock, buffer_kb
        self.notes, self.enabled, self.clock, self.dir = [], [], None, None
        self._mount = None

    def __enter__(self):
        self._mount = kernelfs.reach("tracefs")
        root = self._mount.__enter__()
        try:
            self._open(root)
        except BaseException as e:
            self._close()
            if isinstance(e, OSError):
                raise Unavailable(f"tracefs at {root}: {e.strerror or e}") from None
            raise
        return self

    def __exit__(self, *exc):
        self._close()

    def _open(self, root):
        instances = os.path.join(root, "instances")
        if not os.path.isdir(instances) or not os.access(instances, os.W_OK):
            raise Unavailable(f"tracefs at {root} has no writable instances/ folder")
        self._remove_stale(instances)
        path = os.path.join(instances, f"{PREFIX}{os.getpid()}")
        os.mkdir(path)
        self.dir = path
        _write(self._f("tracing_on"), "0")
        clocks = _read(self._f("trace_clock")).replace("[", "").replace("]", "").split()
        if self.want_clock in clocks:
            _write(self._f("trace_clock"), self.want_clock)
            self.clock = self.want_clock
        else:
            self.clock = re.search(r"\[(\S+)\]", _read(self._f("trace_clock"))).group(1)
            self.notes.append(f"trace_clock {self.want_clock} not offered (using {self.clock})")
        _write(self._f("buffer_size_kb"), str(self.buffer_kb))
        for ev in self.wanted:
            enable = self._f("events", ev, "enable")
            if os.path.exists(enable):
                _write(enable, "1")
                self.enabled.append(ev)
            else:
                self.notes.append(f"no {ev} event on this kernel")
        if not self.enabled:
            raise Unavailable("none of " + ", ".join(self.wanted) + " exists here")
        _write(self._f("tracing_on"), "1")

    def _remove_stale(self, instances):
        for name in os.listdir(instances):
            if name.startswith(PREFIX) and name[len(PREFIX):].isdigit() \
                    and not pid_alive(int(name[len(PREFIX):])):
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(instances, name))
                    self.notes.append(f"removed {name}, left by a run that was killed")

    def _f(self, *parts):
        return os.path.join(self.dir, *parts)

    def set_pids(self, pids):
        """Only these threads' events from now on (the measured guest's vCPUs)."""
        _write(self._f("set_event_pid"), " ".join(str(p) for p in pids))

    def stop(self):
        _write(self._f("tracing_on"), "0")

    def read(self):
        return _read(self._f("trace"))

    def _close(self):
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            if self.dir:
                with contextlib.suppress(OSError):
                    _write(self._f("tracing_on"), "0")
                for ev in self.enabled:
                    with contextlib.suppress(OSError):
                        _write(self._f("events", ev, "enable"), "0")
                try:
                    os.rmdir(self.dir)
                except OSError as e:
                    self.notes.append(f"could not remove {self.dir}: {e.strerror}")
                self.dir = None
            if self._mount is not None:
                mount, self._mount = self._mount, None
                mount.__exit__(None, None, None)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
