"""The guest-vs-host accuracy check: how far the guest's HLT count and KVM's halt_exits over
the same window may differ on one vCPU before a run is flagged. Defined once here; the
report, the console output and the tests all use it.

The bench's window edges are synchronised (window_sync=1: every vCPU waits at a barrier,
where none can halt, while the host reads KVM's counters), so each HLT the guest counts is
one halt exit KVM counts, on the same vCPU: the two must be equal, and any difference is a
finding, not noise.
"""

HLT_TOLERANCE_EXITS = 0      # halt exits a vCPU may differ by
# A run with window_sync=0 is read during the guest's hold instead: OPEN_READ_AT is where in
# the hold the host reads at the *open* marker (a fraction of window_hold; bench/windowprobe.py).
# CPU 0 cannot halt during the hold, but the other vCPUs can, and the guest takes its own
# snapshot only when the hold ends: reading at once would count their halts of the whole
# hold into the host's window. Reading part-way in shrinks that gap and still leaves time
# for the read (a few ms against a 20 ms hold). At the close marker the guest has already
# taken its snapshot, so the host reads at once.
OPEN_READ_AT = 0.4


def hlt_mismatch(guest_hlt, host_halt_exits):
    """True when one vCPU's guest HLT count and host halt_exits delta differ by more than
    HLT_TOLERANCE_EXITS."""
    return abs(host_halt_exits - guest_hlt) > HLT_TOLERANCE_EXITS


def describe():
    """The rule in words, for reports."""
    if HLT_TOLERANCE_EXITS == 0:
        return "any difference on any vCPU"
    return f"a difference above {HLT_TOLERANCE_EXITS} exits on any vCPU"
