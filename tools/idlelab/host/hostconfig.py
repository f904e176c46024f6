"""The host's halt-polling configuration as the bench sees it: the global kvm parameters'
values, which of them are writable, what a run would need changed, and recovery of values
an earlier, killed run left changed. Changing them is hostparams.override's job."""
import os

from idlelab.host import hostparams
from idlelab.bench.workplan import TOP

JOURNAL = os.path.join(TOP, "build", "host", "kvm-params.journal")


class HostParams:
    """The host's global kvm halt-polling parameters: their values, which are writable, and
    whether a run can have what it asks for."""

    def __init__(self, param_dir=hostparams.PARAM_DIR, journal=JOURNAL):
        self.param_dir, self.journal = param_dir, journal
        try:
            self.values = hostparams.read_all(param_dir)
            self.read_only = hostparams.read_only_params(param_dir=param_dir)
        except FileNotFoundError:
            self.values, self.read_only = None, list(hostparams.PARAMS)

    def describe(self):
        """One line for the log and every table header."""
        if self.values is None:
            return f"no kvm module parameters at {self.param_dir}"
        vals = " ".join(f"{k}={v}" for k, v in self.values.items())
        if len(self.read_only) == len(hostparams.PARAMS):
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
            note = hostparams.recover(self.journal, self.param_dir)
        except (hostparams.ParamsReadOnly, hostparams.JournalError) as e:
            return f"could not act on {self.journal}: {e}"
        self.values = hostparams.read_all(self.param_dir)
        return note

