"""Decodes a QEMU exit status into the guest's exit code: the one place that does.

The codes are read from kernel/exit_codes.h (its EXIT_CODE_LIST), so the guest and the
host cannot disagree. isa-debug-exit makes QEMU exit with (code << 1) | 1.
"""
import os
import re
from dataclasses import dataclass

from idlelab import TOP

HEADER = os.path.join(TOP, "kernel", "exit_codes.h")
_ENTRY = re.compile(r'X\((\w+),\s*(0x[0-9a-fA-F]+|\d+),\s*"([^"]*)"\)')


@dataclass(frozen=True)
class Outcome:
    name: str          # SUCCESS, BAD_KNOB, ... or CRASH / QEMU_ERROR / TIMEOUT / UNKNOWN
    guest_code: int    # -1 when the guest did not choose the exit
    description: str

    @property
    def ok(self):
        return self.name == "SUCCESS"


def load_codes(header=HEADER):
    """Returns {guest_code: (name, description)} from the header."""
    with open(header) as f:
        text = f.read()
    codes = {}
    for name, value, desc in _ENTRY.findall(text):
        code = int(value, 0)
        if code in codes:
            raise ValueError(f"{header}: exit code {code:#x} used twice")
        codes[code] = (name, desc)
    if not codes:
        raise ValueError(f"{header}: no X(NAME, value, \"help\") entries found")
    return codes


def code_by_name(name, header=HEADER):
    for code, (n, _) in load_codes(header).items():
        if n == name:
            return code
    raise KeyError(name)


def decode(status, timed_out=False, header=HEADER):
    """Maps QEMU's exit status (as from subprocess; negative = killed by signal)."""
    if timed_out:
        return Outcome("TIMEOUT", -1, "QEMU was killed after the time limit")
    if status == 0:
        return Outcome("CRASH", -1, "QEMU exited with 0: a triple fault (reset with -no-reboot)")
    if status < 0:
        return Outcome("KILLED", -1, f"QEMU died from signal {-status}")
    if status & 1:
        code = status >> 1
        known = load_codes(header).get(code)
        if known:
            return Outcome(known[0], code, known[1])
        if status == 1:
            return Outcome("QEMU_ERROR", -1, "QEMU failed to start or stopped on an error")
        return Outcome("UNKNOWN", code, f"guest exit code {code:#x} is not in exit_codes.h")
    return Outcome("QEMU_ERROR", -1, f"QEMU exited with status {status}")
