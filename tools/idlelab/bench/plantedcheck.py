"""The verdict rule's power on real boots: a comparison (`tools/bench --ab A B`) whose effect
was planted with a sign known before it ran, and whether the rule decides it with that sign.
`make bench-planted` plants two (docs/verdicts.md, "Can it fail?"):

- seed 003's placed period under the kvm parameter halt_poll_ns 0 against 400 us: at 400 us
  the idle gap fits KVM's window, so KVM polls and its polls catch the wake-ups; at 0 it never
  polls. KVM's code fixes the sign (polls caught, polling time and the vCPU thread's host CPU
  rise), whatever the host's speed.
- a CPU hog on the vCPU's host CPU, KVM polling at 400 us: a poll ends as soon as another task
  is runnable on that CPU (kvm_vcpu_can_poll: single_task_running), so KVM's polls catch fewer
  wake-ups and its polling time falls.

The A/A check (bench/aacheck.py) says the rule claims little that is not there; this says it
sees what is. Exit 0 when every named figure is decided with its sign, 1 when one is not
(reversed, no effect or not decided: each said), 2 for a bad call or folder."""
import os
import sys

from idlelab.bench import ab
from idlelab.derive import pairs
from idlelab.report import resultsdir

FILE_NAME = "planted.md"
SIGNS = {"above": pairs.REPRODUCED, "below": pairs.REVERSED}   # ab.compare judges B - A up
USAGE = ("usage: plantedcheck RESULTS_FOLDER FIGURE=above|below ... (FIGURE one of: "
         + ", ".join(f[0] for f in ab.FIGURES) + ")")


class CallError(Exception):
    """A bad call: one line for the user."""


def parse_expectations(args):
    """[(figure label as ab.FIGURES names it, 'above' or 'below')]; CallError otherwise."""
    labels = [f[0] for f in ab.FIGURES]
    out = []
    for arg in args:
        figure, eq, sign = arg.rpartition("=")
        if not eq or figure not in labels or sign not in SIGNS:
            raise CallError(f"plantedcheck: {arg!r} is not FIGURE=above|below with a known "
                            "figure")
        out.append((figure, sign))
    if not out:
        raise CallError(USAGE)
    return out


def judge(rows, expected):
    """(lines, all as planted?) for ab.compare's rows (in ab.FIGURES order) against the
    expected signs."""
    by_label = {f[0]: row for f, row in zip(ab.FIGURES, rows)}
    lines, ok = [], True
    for figure, sign in expected:
        label, unit, whose, a, b, v = by_label[figure]
        if v is None:
            lines.append(f"{figure} ({whose}): not measured: NOT AS PLANTED (B {sign} A)")
            ok = False
            continue
        got = pairs.verdict_text(v, "B above A", "B below A")
        as_planted = v.verdict == SIGNS[sign]
        ok = ok and as_planted
        size = f"{pairs.num(a, unit)} -> {pairs.num(b, unit)}, " \
               f"{pairs.num(v.effect, pairs.diff_unit(unit))}"
        lines.append(f"{label} ({whose}): {got}: {size}, {pairs.ci_text(v)}, "
                     f"{v.n_boots} boots x {v.n_pairs} pairs: "
                     + ("as planted" if as_planted else f"NOT AS PLANTED (B {sign} A)"))
    return lines, ok


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if len(argv) < 2:
            raise CallError(USAGE)
        folder, expected = argv[0], parse_expectations(argv[1:])
        if not os.path.isdir(folder):
            raise CallError(f"plantedcheck: {folder}: no such results folder")
        recs = resultsdir.read_raw(folder)
    except (CallError, resultsdir.FolderError) as e:
        print(e if isinstance(e, CallError) else f"plantedcheck: {e}", file=sys.stderr)
        return 2
    plans = {tuple(sorted((r.get("plan") or {}).get("arms", {}).items())) for r in recs
             if r.get("matrix") == ab.MATRIX_ID}
    names = dict(plans.pop()) if len(plans) == 1 else {}
    if len(names) != 2 or names.get("A") == names.get("B"):
        print(f"plantedcheck: {folder}: not one tools/bench --ab comparison of two different "
              "arms", file=sys.stderr)
        return 2
    lines, ok = judge(ab.compare(recs), expected)
    head = f"Planted: A {names.get('A')!r} against B {names.get('B')!r}"
    print(head + "\n" + "\n".join(lines))
    with open(os.path.join(folder, FILE_NAME), "w") as f:
        f.write(f"# {head}\n\n" + "".join(f"- {ln}\n" for ln in lines))
    return 0 if ok else 1
