"""KVM's global halt-polling parameters (/sys/module/kvm/parameters): read, and overridden for
a run without ever leaving the machine changed (override(), its journal, recover()).

They are global to every VM on the host, so a run that changes them must put them back on
every way out: normal exit, exception, SIGINT, SIGTERM, SIGHUP (stopsignals.py raises those
where the run was, so the restore in override's `finally` runs). A SIGKILL cannot be caught,
so the old values are first written to a journal (fsync'd and renamed into place) and the
next override() finds it, restores those values and says so. On many hosts (this
development machine included) the parameters are read-only even for root; override() then
raises ParamsReadOnly naming the parameters and their fixed values, so the caller can say so
once and record the values the run actually had. HostParams is what a bench knows of them."""
import contextlib
import json
import os
import stat
import time

from idlelab import TOP, stopsignals
from idlelab.processes import pid_alive


PARAM_DIR = "/sys/module/kvm/parameters"
# Where a run that changed them notes the values to put back (recovered if it was killed).
JOURNAL = os.path.join(TOP, "build", "host", "kvm-params.journal")
PARAMS = ("halt_poll_ns", "halt_poll_ns_grow", "halt_poll_ns_grow_start", "halt_poll_ns_shrink")


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

    def switch(self, values):
        """Between two windows of one boot: sets some of the parameters this override holds
        (its journal has their old values, so every exit path still puts them back)."""
        values = dict(values)
        _check_values(values)
        foreign = sorted(set(values) - set(self.old))
        if foreign:
            raise ValueError(f"{', '.join(foreign)} not held by this override")
        _apply(values, self.param_dir)
        self.new = dict(self.new, **values)

    def restore(self):
        """Puts the old values back and drops the journal; safe to call more than once."""
        if self.restored:
            return
        _apply(self.old, self.param_dir)
        self.restored = True
        _remove_journal(self.journal_path)


@contextlib.contextmanager
def override(values, journal_path, param_dir=PARAM_DIR):
    """Sets the given parameters for the duration of the with-block and restores them on
    every exit (a stop signal is raised in the block: stopsignals.raising). Yields an
    Override; its `note` reports a journal from a killed run that was restored first. Raises
    ParamsReadOnly (nothing changed) where they cannot be written."""
    values = dict(values)
    _check_values(values)
    ro = read_only_params(values, param_dir)
    if ro:
        raise ParamsReadOnly(ro, read_all(param_dir), param_dir)
    with stopsignals.raising() as signals:
        note = recover(journal_path, param_dir)
        old = {name: read(name, param_dir) for name in values}
        _write_journal(journal_path, old, param_dir)
        ov = Override(old, values, note, param_dir, journal_path)
        try:
            _apply(values, param_dir)
            yield ov
        finally:
            with signals.deferred():      # put back whole, whatever signal comes meanwhile
                ov.restore()


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
