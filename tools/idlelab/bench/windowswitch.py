"""The host's side of settings switched between windows (bench/windowplan.py plans them,
bench/workplan.check_arms checks them with the guest's own list): the switch itself, at each
marker, for the window probe."""
import os

from idlelab.host import haltpollcap, neighbour


class Switcher:
    """The host side of each switch, for WindowProbe: kvm module parameters through the
    boot's override (kvmparams.Override.switch, so its journal restores them on every exit
    path), the per-VM window through the preload library's control socket, the vCPU
    threads' host CPUs (pin=) and the neighbour running beside the guest (neighbour=)."""

    def __init__(self, plan, override=None, ctl_path=None, current=None, tmpdir=None):
        self.plan, self.override, self.ctl_path = plan, override, ctl_path
        self.current = dict(current or {})     # the kvm parameters as they are now
        self.threads = None     # {vcpu: thread id}, the probe's once QMP named them (pin=)
        self.pinned = None
        # neighbour=: the one running now (neighbour.Hog) and its spec's text; started and
        # stopped between windows, stopped by close() on every path
        self.tmpdir, self.nbr, self.nbr_text = tmpdir, None, None

    def __call__(self, k):
        params = {p: v for p, v in self.plan.host_params(k).items()
                  if self.current.get(p) != v}
        if params:
            if self.override is None:
                raise RuntimeError("kvm parameters to switch but none held for this boot")
            self.override.switch(params)
            self.current.update(params)
        ns = self.plan.vm_halt_poll_ns(k)
        if ns is not None and k > 1:     # window 1's was applied as the VM was created
            haltpollcap.set_halt_poll_ns(self.ctl_path, ns)
        if self.plan.pins():
            self.pinned = pin_threads(self.threads, self.plan.pin(k))
        if self.plan.neighbours():
            self.switch_neighbour(self.plan.neighbour(k))
        return self.plan.guest_line(k)

    def switch_neighbour(self, want):
        """The neighbour the window wants running, started after the last one stopped (the
        guest is parked at its barrier meanwhile)."""
        text = None if want is None else want.text
        if text == self.nbr_text and (want is None or self.nbr is not None):
            return
        self.close()
        if want is not None:
            self.nbr = neighbour.start(want, self.tmpdir)
            self.nbr_text = text

    def neighbour_now(self):
        """The neighbour running beside the window now (None: none), False when this boot's
        windows do not switch neighbours (the probe's own then stands)."""
        return self.nbr if self.plan.neighbours() else False

    def close(self):
        """Stops the neighbour this switcher started, if one runs."""
        nbr, self.nbr, self.nbr_text = self.nbr, None, None
        if nbr is not None:
            nbr.stop()

    def state(self, k):
        """The host settings in force after the switch to window k, for its record."""
        out = {"kvm_params": dict(self.current), "vm_halt_poll_ns": self.plan.vm_halt_poll_ns(k)}
        if self.plan.pins():
            out["pinned"] = self.pinned
        if self.plan.neighbours():
            out["neighbour"] = self.nbr_text
            out["neighbour_tids"] = getattr(self.nbr, "tids", None)
        return out


def pin_threads(threads, cpus):
    """vCPU i's thread on host CPU cpus[i], or on every CPU with cpus None (unpinned);
    {vcpu: cpu or None} as done."""
    if threads is None:
        raise RuntimeError("pin= to switch but QMP named no vCPU threads")
    if cpus is not None:
        return neighbour.pin_threads(threads, cpus)
    everyone = set(range(os.cpu_count() or 1))
    for tid in threads.values():
        os.sched_setaffinity(tid, everyone)
    return {vcpu: None for vcpu in threads}
