"""What a window costs beyond its own length, and how long KVM's per-vCPU window takes to
settle after a switch, from the raw records of multi-window boots (`tools/bench --ab`; with
`trace=halt_poll_ns` in --ab-base for the settling). `make bench-windows` runs it.

- Overhead: from one window's opening (the host's acknowledgement of its open marker) to the
  next's, less duration= and window_gap=: the close marker and its sample, the window's records,
  the switch and the open marker. Measured by the host's clock, per window.
- Settling: after the switch to window k (when the host sent its settings), the time until
  every vCPU's KVM window (kvm_halt_poll_ns) first takes a value it holds during window k
  itself: the window's own range, so a window that keeps growing and shrinking (seed 004's
  shrink at a placed period) counts as settled once inside it. window_gap= must be longer.

Pure but for main(): records in, figures out."""
import json
import os
import statistics
import sys

from idlelab.bench import matrixvalues
from idlelab.report import resultsdir


def _open_close(w):
    """(open, close) of a window on CLOCK_MONOTONIC, the trace's and the switches' clock."""
    return tuple(w["mono_ns"]) if w.get("mono_ns") else None


def overheads_s(rec):
    """[seconds] beyond duration + window_gap from each window's opening to the next's."""
    ws = rec.get("windows") or []
    duration = rec["duration_ns"]
    gap = matrixvalues.parse_time(rec.get("guest_knobs", {}).get(
        "window_gap", f"{matrixvalues.knob_define('WINDOW_GAP_DEFAULT_MS')}ms"))
    opens = [_open_close(w) for w in ws]
    out = []
    for a, b in zip(opens, opens[1:]):
        if a and b:
            out.append((b[0] - a[0] - duration - gap) / 1e9)
    return out


def settle_ms(rec):
    """[(window, ms or None)] per switch: the time until every vCPU's KVM window is inside
    the range it takes in that window; None where the trace says nothing (no change)."""
    trace = rec.get("trace") or {}
    events = trace.get("events") or []
    ws = rec.get("windows") or []
    if not events or not ws or not ws[0].get("mono_ns"):
        return []
    origin = ws[0]["mono_ns"][0]
    out = []
    for w in ws[1:]:
        sw = (w.get("switched") or {}).get("t_ns")
        oc = _open_close(w)
        if sw is None or oc is None:
            continue
        t_sw, t_open, t_close = sw - origin, oc[0] - origin, oc[1] - origin
        worst = 0
        for v in {e[1] for e in events}:
            changes = [(e[0], e[3]) for e in events if e[1] == v and e[2] == "change"]
            before = [c for c in changes if c[0] < t_sw]
            inside = [val for t, val in changes if t_open <= t <= t_close]
            at_open = [val for t, val in changes if t < t_open]
            held = inside + [at_open[-1] if at_open else 0]
            current = before[-1][1] if before else 0
            lo, hi = min(held), max(held)
            if lo <= current <= hi:
                continue
            reach = next((t for t, val in changes if t >= t_sw and lo <= val <= hi), None)
            if reach is not None:
                worst = max(worst, reach - t_sw)
        out.append((w["window"], round(worst / 1e6, 3)))
    return out


def summary(recs):
    """Lines: per-window overhead (median, max) and the settling after each switch."""
    over = [o for r in recs for o in overheads_s(r)]
    settle = [ms for r in recs for _, ms in settle_ms(r) if ms is not None]
    lines = []
    if over:
        lines.append(f"per-window overhead beyond duration + window_gap: median "
                     f"{statistics.median(over):.3f} s, max {max(over):.3f} s over "
                     f"{len(over)} windows of {len(recs)} boots")
    else:
        lines.append("per-window overhead: no boot with two measured windows")
    if settle:
        lines.append(f"KVM's window settled after a switch within: median "
                     f"{statistics.median(settle):.1f} ms, max {max(settle):.1f} ms over "
                     f"{len(settle)} switches (kvm_halt_poll_ns trace)")
    else:
        lines.append("settling: no traced switch (trace=halt_poll_ns in --ab-base)")
    return lines


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("usage: windowcost RESULTS_FOLDER (of a tools/bench --ab run)", file=sys.stderr)
        return 2
    try:
        recs = [r for r in resultsdir.read_raw(argv[0]) if r.get("windows")]
    except resultsdir.FolderError as e:
        print(f"windowcost: {e}", file=sys.stderr)
        return 2
    print("\n".join(summary(recs)))
    json.dump({"overheads_s": [overheads_s(r) for r in recs],
               "settle_ms": [settle_ms(r) for r in recs]},
              open(os.path.join(argv[0], "windowcost.json"), "w"), indent=1)
    return 0
