"""The guest-vs-host accuracy check's tolerance: how far the guest's HLT count and KVM's
halt_exits over the same window may differ before a run is flagged. Defined once here; the
report, the console output and the tests all use it.

A few halts always fall between the guest's snapshot and the host's read at a window marker
(the vCPUs other than CPU 0 keep halting while CPU 0 holds the marker), so a small difference
is expected: a run is flagged only when the difference is larger than both bounds.
"""

HLT_TOLERANCE_REL = 0.05     # share of the guest's HLT count
HLT_TOLERANCE_EXITS = 20     # absolute number of halt exits


def hlt_mismatch(guest_hlt, host_halt_exits):
    """True when the host's halt exits and the guest's HLT count differ by more than both
    HLT_TOLERANCE_EXITS and HLT_TOLERANCE_REL of the guest's count."""
    diff = abs(host_halt_exits - guest_hlt)
    return diff > HLT_TOLERANCE_EXITS and diff > HLT_TOLERANCE_REL * max(guest_hlt, 1)


def describe():
    """The rule in words, for reports: "> 5% and > 20 exits"."""
    return f"> {HLT_TOLERANCE_REL:.0%} and > {HLT_TOLERANCE_EXITS} exits"
