"""Settings that change between the measured windows of one boot (windows= given): the arms of
an A/B comparison, each a set of guest knobs and host settings, the order the windows take
them in, and the host side of each switch.

An arm is written as a matrix's run line is, `key=value ...`: the host keys `halt_poll_ns`
(a per-VM time, or `global:<time>` for the kvm module parameter), `host_grow`,
`host_grow_start`, `host_shrink`, `pin` (the vCPU threads' host CPUs) and `neighbour`
(`none` or `hog:N[@CPU,...]`, started and stopped between windows), and guest knobs either bare (`idle=halt`) or as
`guest.<knob>=`. Every window states every setting any arm names: an arm that leaves one
out gets the boot's own value back (the base), so switching back from B to A undoes what B
changed. The guest switches what kernel/knobs/switchable.c allows; anything else is refused
before the boot, in one line naming it (bench/windowswitch.check_arms). Pure: the host side
of a switch is bench/windowswitch.py's."""
from dataclasses import dataclass, field

from idlelab.bench import matrixvalues
from idlelab.derive import pairs

HOST_KEYS = matrixvalues.WITHIN_HOST
# What a host key is in kvm module parameters (halt_poll_ns=global: is halt_poll_ns).
_PARAM_OF = dict(matrixvalues.HOST_PARAM, halt_poll_ns="halt_poll_ns")


class PlanError(ValueError):
    """An arm the design cannot switch inside a boot; the message is one line."""


@dataclass(frozen=True)
class Arm:
    label: str                                   # "A", "B"
    text: str                                    # as the user wrote it
    guest: dict = field(default_factory=dict)    # guest knob -> value text
    host_params: dict = field(default_factory=dict)   # kvm module parameter -> int
    vm_halt_poll_ns: int = None                  # per-VM KVM_CAP_HALT_POLL, None: not set
    pin: object = False                          # host CPU per vCPU; None unpinned; False: not set
    neighbour: object = False                    # matrixvalues.Neighbour, None: none; False: not set
    run_name: str = None     # the name its windows' rows take (a within= cell's); None: BOOT.LABEL
    config: str = None       # the configuration its rows belong to (a boot= cell's); None: the boot's

    def describe(self):
        return self.text or "(the boot's own settings)"


def parse_arm(label, text):
    """An Arm from `key=value ...`; PlanError for what cannot switch inside a boot."""
    guest, host, vm, pin, nbr = {}, {}, None, False, False
    for tok in text.split():
        key, eq, value = tok.partition("=")
        if not eq or not key or not value:
            raise PlanError(f"arm {label} {text!r}: {tok!r} is not key=value")
        if key == "pin":
            try:
                pin = matrixvalues.parse_pin(value)
            except ValueError as e:
                raise PlanError(f"arm {label}: pin={value}: {e}") from None
        elif key == "neighbour":
            try:
                nbr = matrixvalues.parse_neighbour(value)
            except ValueError as e:
                raise PlanError(f"arm {label}: neighbour={value}: {e}") from None
            if nbr is not None and nbr.kind != "hog":
                raise PlanError(f"arm {label}: neighbour={value}: a second VM boots for "
                                "seconds, so only none and hog:N switch between windows")
        elif key in HOST_KEYS:
            try:
                parsed = matrixvalues.PARSERS[key](value)
            except ValueError as e:
                raise PlanError(f"arm {label}: {key}={value}: {e}") from None
            # a value in the cost table's terms stays text until the bench has measured the
            # table (costtable.resolve_run resolves a boot's arms with its run)
            if key == "halt_poll_ns":
                scope, ns = parsed
                if scope == "host":
                    raise PlanError(f"arm {label}: halt_poll_ns={value}: a time or "
                                    "global:<time>, not 'host'")
                if scope == "vm":
                    vm = ns
                else:
                    host["halt_poll_ns"] = ns
            else:
                host[_PARAM_OF[key]] = parsed
        elif key in matrixvalues.KEYS:
            raise PlanError(f"arm {label}: {key}= cannot change between the windows of one "
                            f"boot; it is a setting of the boot (give it with --ab-base)")
        else:
            guest[key[len("guest."):] if key.startswith("guest.") else key] = value
    return Arm(label, text, guest, host, vm, pin, nbr)


@dataclass(frozen=True)
class Plan:
    """The windows of one boot: which arm each runs, in order, and how the order was made."""
    arms: tuple                # Arm per window, window 1 first
    order: str                 # "abba" or "random"
    seed: int = None           # random: the seed the order was drawn with
    base_guest: dict = field(default_factory=dict)    # the boot's own guest knob values
    base_params: dict = field(default_factory=dict)   # the host's kvm parameters at start
    base_pin: tuple = None                            # the boot's pin= (None: unpinned)
    base_neighbour: object = None                     # the boot's neighbour= (None: none)

    @property
    def windows(self):
        return len(self.arms)

    def guest_keys(self):
        return sorted({k for a in self.arms for k in a.guest})

    def guest_line(self, k):
        """Window k's settings line: every knob any arm sets, at this arm's value or the
        base's (base_guest holds the kernel's default of a knob the boot does not set:
        bench/windowswitch.with_defaults)."""
        arm = self.arms[k - 1]
        out = []
        for key in self.guest_keys():
            value = arm.guest.get(key, self.base_guest.get(key))
            if value is None:
                raise PlanError(f"arm {arm.label} leaves {key} to the boot, which does not "
                                "set it: give its value")
            out.append(f"{key}={value}")
        return " ".join(out)

    def host_params(self, k):
        """Window k's kvm module parameters: every one any arm sets."""
        arm = self.arms[k - 1]
        keys = sorted({p for a in self.arms for p in a.host_params})
        return {p: arm.host_params.get(p, self.base_params.get(p)) for p in keys}

    def vm_halt_poll_ns(self, k):
        return self.arms[k - 1].vm_halt_poll_ns

    def pins(self):
        """True when an arm pins: every window then states its vCPUs' host CPUs."""
        return any(a.pin is not False for a in self.arms)

    def pin(self, k):
        """Window k's host CPU per vCPU (None: free to run anywhere); an arm that does not
        say gets the boot's (base_pin)."""
        arm = self.arms[k - 1]
        return self.base_pin if arm.pin is False else arm.pin

    def neighbours(self):
        """True when an arm names a neighbour: every window then has its own, or none."""
        return any(a.neighbour is not False for a in self.arms)

    def neighbour(self, k):
        """Window k's neighbour (matrixvalues.Neighbour, None: none); an arm that does not
        say gets the boot's (base_neighbour)."""
        arm = self.arms[k - 1]
        return self.base_neighbour if arm.neighbour is False else arm.neighbour

    def check(self):
        """PlanError where the arms cannot share a boot."""
        vm = [a.vm_halt_poll_ns is not None for a in self.arms]
        if any(vm) and not all(vm):
            raise PlanError("a per-VM halt_poll_ns (KVM_CAP_HALT_POLL) cannot be taken back "
                            "inside a boot: give every arm one, or use global:<time>")
        missing = [p for p in self.host_params(1) if self.base_params.get(p) is None and
                   any(p not in a.host_params for a in self.arms)]
        if missing:
            raise PlanError(f"{', '.join(missing)}: this host has no such kvm parameter to "
                            "return to")

    def describe(self, k):
        narms = len({a.label for a in self.arms})
        return {"window": k, "round": (k - 1) // narms + 1, "arm": self.arms[k - 1].label,
                "name": self.arms[k - 1].run_name, "config": self.arms[k - 1].config,
                "text": self.arms[k - 1].text,
                "guest": self.guest_line(k),
                "host_params": self.host_params(k), "vm_halt_poll_ns": self.vm_halt_poll_ns(k),
                **({"pin": None if self.pin(k) is None else list(self.pin(k))}
                   if self.pins() else {}),
                **({"neighbour_spec": None if self.neighbour(k) is None else
                    self.neighbour(k).text} if self.neighbours() else {})}


@dataclass(frozen=True)
class Design:
    """Settings compared inside each boot: `rounds` rounds per boot, each running every arm
    once, in a balanced order (derive/pairs.schedule: ABBA, or shuffled by a recorded seed);
    the windows of one round are paired."""
    arms: tuple                 # (Arm A, Arm B), or a within= matrix row's cells
    rounds: int
    order: str = "abba"
    seed: int = None
    base_guest: dict = field(default_factory=dict)
    base_params: dict = field(default_factory=dict)
    cells: tuple = field(default=(), compare=False)   # within=: the matrix's cell Runs
    base_pin: tuple = None
    base_neighbour: object = None

    @property
    def windows(self):
        return len(self.arms) * self.rounds

    def for_boot(self, boot):
        """The Plan of boot number `boot` (from 1)."""
        by_label = {a.label: a for a in self.arms}
        labels, seed = pairs.schedule(self.rounds, tuple(by_label), self.order,
                                      None if self.seed is None else self.seed + boot, boot)
        plan = Plan(tuple(by_label[x] for x in labels), self.order, seed, self.base_guest,
                    self.base_params, self.base_pin, self.base_neighbour)
        plan.check()
        return plan
