"""The false-positive check on real boots: an A/A comparison (`tools/bench --ab X X`, both
arms the same settings) cut into many small comparisons, each judged by the verdict rule
(derive/pairs.py), and how many of them claimed an effect that is not there. `make bench-aa`.

The boots are taken in disjoint groups of pairs.MIN_BOOTS, and each group's rounds in
disjoint runs of ROUNDS_PER: every comparison has its own windows, none shares one with
another (comparisons of one group share its boots, so the boot-level noise they see is
correlated; the line says how many groups there were)."""
import os
import sys

from idlelab.bench import ab
from idlelab.derive import pairs
from idlelab.report import resultsdir

ROUNDS_PER = 2


def comparisons(recs, figure, rounds_per=ROUNDS_PER):
    """[pairs.Verdict] of the A/A comparisons the boots give for one figure (ab.FIGURES)."""
    label, _, _, get = next(f for f in ab.FIGURES if f[0] == figure)
    wins = [w for w in ab.windows_of(recs) if w["row"].status == "ok"]
    boots = sorted({w["boot"] for w in wins})
    rounds = sorted({w["round"] for w in wins})
    out = []
    for g in range(len(boots) // pairs.MIN_BOOTS):
        group = set(boots[g * pairs.MIN_BOOTS:(g + 1) * pairs.MIN_BOOTS])
        for c in range(len(rounds) // rounds_per):
            chosen = set(rounds[c * rounds_per:(c + 1) * rounds_per])
            rows = [dict(boot=w["boot"], round=w["round"], arm=w["arm"],
                         value=get(w["rec"], w["row"]))
                    for w in wins if w["boot"] in group and w["round"] in chosen]
            values = [r["value"] for r in rows if r["arm"] == "A" and r["value"] is not None]
            if not values:
                continue
            threshold = pairs.threshold_of(pairs.DEFAULT_REL_THRESHOLD, pairs.median(values))
            out.append(pairs.verdict(pairs.pairs_from_windows(rows), threshold,
                                     rng_seed=len(out) + 1))
    return out


def report(recs, figures=("host CPU", "halt_exits", "latency")):
    lines, worst = [], 0.0
    for figure in figures:
        vs = comparisons(recs, figure)
        if not vs:
            lines.append(f"{figure}: no comparison (too few boots or rounds)")
            continue
        counts = pairs.tally(vs)
        false = counts[pairs.REPRODUCED] + counts[pairs.REVERSED]
        share = false / len(vs)
        worst = max(worst, share)
        lines.append(f"{figure}: {len(vs)} A/A comparisons, {false} claimed an effect "
                     f"({share:.1%}; bar {pairs.MAX_FALSE_SHARE:.0%}): " +
                     ", ".join(f"{n} {k}" for k, n in counts.items()))
    return lines, worst


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("usage: aacheck RESULTS_FOLDER (of a tools/bench --ab X X run)", file=sys.stderr)
        return 2
    try:
        recs = resultsdir.read_raw(argv[0])
    except resultsdir.FolderError as e:
        print(f"aacheck: {e}", file=sys.stderr)
        return 2
    plans = {tuple(sorted(set((r.get("plan") or {}).get("arms", {}).values()))) for r in recs}
    if any(len(p) != 1 for p in plans):
        print("aacheck: not an A/A comparison (its two arms differ)", file=sys.stderr)
        return 2
    lines, worst = report(recs)
    print("\n".join(lines))
    with open(os.path.join(argv[0], "aacheck.md"), "w") as f:
        f.write("# A/A check\n\n" + "\n".join(f"- {ln}" for ln in lines) + "\n")
    return 0 if worst <= pairs.MAX_FALSE_SHARE else 1
