"""The host's side of settings switched between windows (bench/windowplan.py plans them,
bench/workplan.check_arms checks them with the guest's own list): the switch itself, at each
marker, for the window probe."""
from idlelab.host import haltpollcap


class Switcher:
    """The host side of each switch, for WindowProbe: kvm module parameters through the
    boot's override (kvmparams.Override.switch, so its journal restores them on every exit
    path) and the per-VM window through the preload library's control socket."""

    def __init__(self, plan, override=None, ctl_path=None, current=None):
        self.plan, self.override, self.ctl_path = plan, override, ctl_path
        self.current = dict(current or {})     # the kvm parameters as they are now

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
        return self.plan.guest_line(k)

    def state(self, k):
        """The host settings in force after the switch to window k, for its record."""
        return {"kvm_params": dict(self.current), "vm_halt_poll_ns": self.plan.vm_halt_poll_ns(k)}
