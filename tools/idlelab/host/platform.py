"""What this host's platform is for a run: KVM's global halt-polling parameters, the per-VM
halt-polling window (libhaltpoll_cap.so) and the platform's cost table.

KVM's parameters (/sys/module/kvm/parameters) are read and temporarily overridden without
ever leaving the machine changed. They are global to every VM on the host, so a run that
changes them must put them back on every way out: normal exit, exception, SIGINT, SIGTERM.
A SIGKILL cannot be caught, so the old values are first written to a journal (fsync'd and
renamed into place) and the next override() finds it, restores those values and says so.
On many hosts (this development machine included) the parameters are read-only even for
root; override() then raises ParamsReadOnly naming the parameters and their fixed values,
so the caller can say so once and record the values the run actually had.

The per-VM window: QEMU 7.2 cannot set KVM_CAP_HALT_POLL and this machine's kvm module
parameters are read-only, so the harness preloads build/host/libhaltpoll_cap.so
(tools/haltpoll_cap.c) into QEMU. It applies IDLELAB_HALT_POLL_NS right after the VM is
created and serves a control socket at IDLELAB_HALT_POLL_CTL for changes while the guest
runs. Typical use:

    cfg = qemu.Config(..., preload=[platform.library()],
                      env=platform.run_env(0, ctl_path))
    ... QEMU running ...
    platform.set_halt_poll_ns(ctl_path, 200000)   # takes effect at the vCPUs' next halt

The cost table: `bench=exits` booted once (measure(); derive/records.py parses it, resolves
a matrix's values from it and lays it out for the tables)."""
import contextlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import threading
import time

from idlelab import TOP
from idlelab.derive.records import CostTableError, ITERS, PRIMS, SMP, parse
from idlelab.host import qemu


PARAM_DIR = "/sys/module/kvm/parameters"
# Where a run that changed them notes the values to put back (recovered if it was killed).
JOURNAL = os.path.join(TOP, "build", "host", "kvm-params.journal")
PARAMS = ("halt_poll_ns", "halt_poll_ns_grow", "halt_poll_ns_grow_start", "halt_poll_ns_shrink")
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ParamsReadOnly(Exception):
    """The parameters cannot be changed here; `fixed` holds the values they are stuck at."""

    def __init__(self, names, fixed, param_dir):
        self.names, self.fixed, self.param_dir = list(names), dict(fixed), param_dir
        values = " ".join(f"{k}={v}" for k, v in self.fixed.items())
        super().__init__(f"kvm parameters {', '.join(self.names)} are read-only in {param_dir}; "
                         f"fixed values: {values}")


class JournalError(Exception):
    """A journal exists that this run must not act on (another live run, another dir)."""


def read(name, param_dir=PARAM_DIR):
    with open(os.path.join(param_dir, name)) as f:
        return int(f.read().strip())


def read_all(param_dir=PARAM_DIR):
    """{name: int} for the four halt-polling parameters."""
    return {name: read(name, param_dir) for name in PARAMS}


def read_only_params(names=PARAMS, param_dir=PARAM_DIR):
    """The names among `names` we cannot write. Needs both access() and a write bit in the
    mode: root passes access() on a 0444 sysfs file, yet the kernel refuses the write."""
    out = []
    for name in names:
        path = os.path.join(param_dir, name)
        mode = os.stat(path).st_mode
        if not (os.access(path, os.W_OK) and mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)):
            out.append(name)
    return out


def writable(names=PARAMS, param_dir=PARAM_DIR):
    """True if every parameter in `names` can be changed (checked without writing)."""
    return not read_only_params(names, param_dir)


def _write(name, value, param_dir):
    with open(os.path.join(param_dir, name), "w") as f:
        f.write(f"{value}\n")


def _apply(values, param_dir):
    """Writes values and checks each one took (sysfs may clamp or ignore silently)."""
    for name, value in values.items():
        _write(name, value, param_dir)
        got = read(name, param_dir)
        if got != value:
            raise OSError(f"{param_dir}/{name}: wrote {value}, reads back {got}")


def _check_values(values):
    for name, value in values.items():
        if name not in PARAMS:
            raise ValueError(f"unknown kvm parameter {name!r}; known: {', '.join(PARAMS)}")
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2 ** 32:
            raise ValueError(f"{name} must be an integer in 0..{2 ** 32 - 1}, not {value!r}")


# --- the journal -----------------------------------------------------------------------------

def _fsync_dir(path):
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_journal(journal_path, old, param_dir):
    """Durably records the values to put back: a crash leaves either no journal or a
    complete one, never a torn one (write a temporary file, fsync, rename, fsync the dir)."""
    tmp = f"{journal_path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump({"pid": os.getpid(), "time": time.time(), "param_dir": param_dir,
                   "old": old}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, journal_path)
    _fsync_dir(journal_path)


def _remove_journal(journal_path):
    with contextlib.suppress(FileNotFoundError):
        os.unlink(journal_path)
        _fsync_dir(journal_path)


def pid_alive(pid):
    """True if a process with this pid exists (ours to signal or not)."""
    if not isinstance(pid, int) or pid <= 0:
        return False  # os.kill(0, ...) would address our own process group
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(journal_path, param_dir=PARAM_DIR):
    """Restores the values a killed run left in its journal. Returns a note saying what was
    restored, or None if there was no journal."""
    try:
        with open(journal_path) as f:
            journal = json.load(f)
        pid, old_dir = journal["pid"], journal["param_dir"]
        old = {k: int(v) for k, v in journal["old"].items()}
        _check_values(old)
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise JournalError(f"{journal_path}: unreadable journal ({e!r}); check the kvm "
                           "parameters by hand, then delete it") from None
    if pid != os.getpid() and pid_alive(pid):
        raise JournalError(f"{journal_path}: run {pid} is still overriding the kvm parameters")
    if os.path.abspath(old_dir) != os.path.abspath(param_dir):
        raise JournalError(f"{journal_path} belongs to {old_dir}, not {param_dir}")
    ro = read_only_params(old, param_dir)
    if ro:
        raise ParamsReadOnly(ro, read_all(param_dir), param_dir)
    changed = {k: v for k, v in old.items() if read(k, param_dir) != v}
    _apply(old, param_dir)
    _remove_journal(journal_path)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(journal.get("time", 0)))
    put_back = " ".join(f"{k}={v}" for k, v in changed.items()) or "nothing (values matched)"
    return (f"restored kvm parameters left changed by run {pid} (started {when}, killed "
            f"before it could restore them): {put_back}")


# --- override --------------------------------------------------------------------------------

class Override:
    """What override() did: `old` and `new` values, and `note` from a recovered journal."""

    def __init__(self, old, new, note, param_dir, journal_path):
        self.old, self.new, self.note = old, new, note
        self.param_dir, self.journal_path = param_dir, journal_path
        self.restored = False

    def restore(self):
        """Puts the old values back and drops the journal; safe to call more than once (a
        signal may arrive while the normal exit path is already restoring)."""
        if self.restored:
            return
        _apply(self.old, self.param_dir)
        self.restored = True
        _remove_journal(self.journal_path)


@contextlib.contextmanager
def override(values, journal_path, param_dir=PARAM_DIR):
    """Sets the given parameters for the duration of the with-block and restores them on
    every exit. Yields an Override; its `note` reports a journal from a killed run that was
    restored first. Raises ParamsReadOnly (nothing changed) where they cannot be written."""
    values = dict(values)
    _check_values(values)
    ro = read_only_params(values, param_dir)
    if ro:
        raise ParamsReadOnly(ro, read_all(param_dir), param_dir)
    note = recover(journal_path, param_dir)
    old = {name: read(name, param_dir) for name in values}
    _write_journal(journal_path, old, param_dir)
    ov = Override(old, values, note, param_dir, journal_path)
    previous = _install_handlers(ov)
    try:
        _apply(values, param_dir)
        yield ov
    finally:
        try:
            ov.restore()
        finally:
            _restore_handlers(previous)


def _install_handlers(ov):
    """SIGINT/SIGTERM handlers that restore first, then act as the previous handler would.
    Signal handlers can only be set from the main thread; elsewhere the try/finally and the
    journal still cover us."""
    if not _in_main_thread():
        return {}
    previous = {sig: signal.getsignal(sig) for sig in _SIGNALS}

    def handler(signum, frame):
        ov.restore()
        _restore_handlers(previous)
        _reraise(signum, frame, previous[signum])

    for sig in _SIGNALS:
        signal.signal(sig, handler)
    return previous


def _reraise(signum, frame, prev):
    """Delivers the signal as if we had never been there: call a Python handler, die by the
    default action, or ignore it."""
    if callable(prev):
        prev(signum, frame)
    elif prev == signal.SIG_DFL:
        os.kill(os.getpid(), signum)
    # SIG_IGN (or None: set outside Python): the signal was meant to be ignored.


def _restore_handlers(previous):
    for sig, prev in previous.items():
        if prev is not None:
            signal.signal(sig, prev)


def _in_main_thread():
    return threading.current_thread() is threading.main_thread()


class HostParams:
    """The host's global kvm halt-polling parameters: their values, which are writable, and
    whether a run can have what it asks for."""

    def __init__(self, param_dir=PARAM_DIR, journal=JOURNAL):
        self.param_dir, self.journal = param_dir, journal
        try:
            self.values = read_all(param_dir)
            self.read_only = read_only_params(param_dir=param_dir)
        except FileNotFoundError:
            self.values, self.read_only = None, list(PARAMS)

    def describe(self):
        """One line for the log and every table header."""
        if self.values is None:
            return f"no kvm module parameters at {self.param_dir}"
        vals = " ".join(f"{k}={v}" for k, v in self.values.items())
        if len(self.read_only) == len(PARAMS):
            return f"kvm parameters read-only here: {vals}"
        if self.read_only:
            return f"kvm parameters {vals} (read-only: {', '.join(self.read_only)})"
        return f"kvm parameters {vals} (writable; changed only for runs that need it)"

    def changes_for(self, run):
        """(changes to make, None) or (None, reason the run cannot be made). A run asking
        for the value the host already has needs no change, even on a read-only host."""
        wanted = run.host_params
        if not wanted:
            return {}, None
        if self.values is None:
            return None, f"needs kvm parameters ({', '.join(wanted)}) and {self.describe()}"
        changes = {k: v for k, v in wanted.items() if self.values[k] != v}
        stuck = [k for k in changes if k in self.read_only]
        if stuck:
            return None, "; ".join(f"{k} is read-only (fixed at {self.values[k]})"
                                   for k in stuck)
        return changes, None

    def recover(self):
        """Puts back values a killed earlier run left changed (its journal); a note or None."""
        if not os.path.exists(self.journal) or self.values is None:
            return None
        try:
            note = recover(self.journal, self.param_dir)
        except (ParamsReadOnly, JournalError) as e:
            return f"could not act on {self.journal}: {e}"
        self.values = read_all(self.param_dir)
        return note


# --- The per-VM halt-polling window (libhaltpoll_cap.so) ----------------------------------

LIBRARY = os.path.join(TOP, "build", "host", "libhaltpoll_cap.so")
MAKEFILE = os.path.join(TOP, "tools", "harness.mk")
ENV_NS = "IDLELAB_HALT_POLL_NS"
ENV_CTL = "IDLELAB_HALT_POLL_CTL"
MAX_NS = 2 ** 32 - 1  # KVM refuses args[0] wider than 32 bits
# The line the library prints each time KVM accepts a value.
ENABLED = re.compile(r"idlelab-haltpoll-cap: KVM_CAP_HALT_POLL=(\d+) on vm fd (\d+)")
ERROR = re.compile(r"idlelab-haltpoll-cap: error: .*")


class HaltPollCapError(Exception):
    """The library or KVM refused a value, or the control socket did not answer."""


def build():
    """Builds the library (make -f tools/harness.mk harness-lib) and returns its path."""
    res = subprocess.run(["make", "--no-print-directory", "-s", "-C", TOP, "-f", MAKEFILE,
                          "harness-lib"], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise HaltPollCapError(f"building {LIBRARY} failed:\n{res.stdout}{res.stderr}")
    return LIBRARY


def library():
    """Path of the built library; says how to build it if it is missing."""
    if not os.path.exists(LIBRARY):
        raise FileNotFoundError(f"{LIBRARY} does not exist: run `make harness-lib`")
    return LIBRARY


def _check_ns(value):
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_NS:
        raise ValueError(f"halt_poll_ns must be an integer in 0..{MAX_NS}, not {value!r}")
    return value


def run_env(halt_poll_ns=None, ctl_path=None):
    """Environment for QEMU (qemu.Config.env): the start-up value (None: leave KVM's
    default until set over the control socket) and the control socket's path (None: none)."""
    env = {}
    if halt_poll_ns is not None:
        env[ENV_NS] = str(_check_ns(halt_poll_ns))
    if ctl_path is not None:
        env[ENV_CTL] = ctl_path
    return env


def enabled_values(output):
    """[(ns, vm_fd)] for every value KVM accepted, in order, from QEMU's stderr."""
    return [(int(m.group(1)), int(m.group(2))) for m in ENABLED.finditer(output)]


def errors(output):
    """The library's error lines in QEMU's stderr."""
    return ERROR.findall(output)


def request(ctl_path, line, timeout):
    """Sends one request line and returns the reply line (without the newline)."""
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC) as s:
        while True:
            try:
                s.connect(ctl_path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as e:
                if time.monotonic() >= deadline:
                    raise HaltPollCapError(f"{ctl_path}: no control socket ({e}); is QEMU "
                                           "running with the library and the VM created?")
                time.sleep(0.02)
        s.settimeout(max(deadline - time.monotonic(), 0.1))
        s.sendall(line.encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(256)
            if not chunk:
                break
            reply += chunk
    return reply.decode().strip()


def _reply_value(ctl_path, reply):
    if not reply.startswith("ok "):
        raise HaltPollCapError(f"{ctl_path}: {reply or 'no reply'}")
    word = reply.split()[1]
    return None if word == "unset" else int(word)


def set_halt_poll_ns(ctl_path, value, timeout=5.0):
    """Applies a new per-VM halt-polling max to the running VM; returns it once KVM took
    it, raises HaltPollCapError with KVM's errno text if it refused."""
    reply = request(ctl_path, str(_check_ns(value)), timeout)
    got = _reply_value(ctl_path, reply)
    if got != value:
        raise HaltPollCapError(f"{ctl_path}: asked for {value}, library answered {reply!r}")
    return got


def get_halt_poll_ns(ctl_path, timeout=5.0):
    """The last value KVM accepted for this VM (KVM cannot be asked), None if never set."""
    return _reply_value(ctl_path, request(ctl_path, "get", timeout))


# --- The cost table, measured -------------------------------------------------------------

# The cost table's boots: bench=exits keeps every vCPU's poll-control MSR at 0 (the host
# does not poll its halts) but for ipi_poll_rtt's responder, whose every halt the host should
# then poll long enough to catch the IPI: the seeds' always-poll values (a 500 us window from
# the first halt on, never grown or shrunk), where the host lets them be set.
COST_BOOT_PARAMS = {"halt_poll_ns": 1_000_000_000, "halt_poll_ns_grow": 1,
                    "halt_poll_ns_grow_start": 500_000, "halt_poll_ns_shrink": 1}


@contextlib.contextmanager
def cost_boot_params(accel, param_dir=PARAM_DIR, journal=JOURNAL):
    """The kvm parameters for the cost table's boots (with-block): COST_BOOT_PARAMS where
    they are writable, restored on every exit, else the host's own. Yields what the boots
    ran with, {"values": {...}, "set": bool} ("why" where not set), or None off KVM."""
    if qemu.resolve_accel(accel) != "kvm":
        yield None
        return
    try:
        values = read_all(param_dir)
    except FileNotFoundError:
        yield {"values": None, "set": False, "why": f"no kvm module parameters at {param_dir}"}
        return
    ro = read_only_params(COST_BOOT_PARAMS, param_dir)
    if ro:
        yield {"values": values, "set": False,
               "why": f"read-only here: {', '.join(ro)}: ipi_poll_rtt is polled only as "
                      "far as the host's own values poll"}
        return
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(override(COST_BOOT_PARAMS, journal, param_dir))
        except (ParamsReadOnly, JournalError) as e:
            yield {"values": values, "set": False, "why": str(e)}
            return
        yield {"values": read_all(param_dir), "set": True}


def measure(accel, iters=ITERS, timeout=120, on_start=None):
    """Boots bench=exits once; returns {"accel", "iters", "seconds", "prims": parse()}.
    on_start(popen): qemu.run's. Raises CostTableError if the guest did not finish or a
    primitive is missing."""
    cfg = qemu.Config(smp=SMP, accel=accel, cmdline=f"bench=exits iters={iters}",
                      name="idlelab-costs")
    res = qemu.run(cfg, timeout=timeout, on_start=on_start)
    if not res.outcome.ok:
        tail = " | ".join(res.output.strip().splitlines()[-2:])
        raise CostTableError(f"bench=exits ended {res.outcome.name}: {tail}")
    prims = parse(res.output)
    missing = [p for p in PRIMS if p not in prims]
    if missing:
        raise CostTableError(f"bench=exits printed no record for {', '.join(missing)}")
    return {"accel": res.accel, "iters": iters, "seconds": round(res.seconds, 2),
            "prims": prims}
