"""The bar's ceiling: the most makings of one configuration that a single set of figures can
be within the bar of.

idlelab-sim predicts every making of a run alike (the same configuration, the same cost
table, the same seed), so a configuration made k times is judged k times against one
prediction. Each making's bar is a box in the judged figures (predict.box); the best any one
prediction can do is to lie in as many of the k boxes as possible: the deepest point of
them. On these runs it bounds every prediction that gives the configuration one set of
figures, whatever it knew; a randomised model that cannot tell the makings apart (the same
distribution for each) does no better in expectation, its expected count being an average of
depths. The makings the deepest point leaves out are the host's spread; a model's count below
the depth is the model's own miss. For other runs of the same configurations it is an
estimate from a sample, biased upward (the point is fitted to the makings it counts).
"""


def deepest(boxes, dims=None):
    """How many of `boxes` ({dimension: (low, high)}; a dimension a box lacks does not
    bound it) one point lies in, at most.

    Why the low edges suffice: a deepest point can be moved down in each dimension to the
    highest low edge of the boxes it lies in without leaving any of them, so some deepest
    point has every coordinate on a box's low edge. The search fixes one dimension at a
    time and drops a branch that cannot beat the best found."""
    if dims is None:
        dims = sorted({d for b in boxes for d in b})
    if not dims or not boxes:
        return len(boxes)
    d, rest = dims[0], dims[1:]
    free = [b for b in boxes if d not in b]
    lows = sorted({b[d][0] for b in boxes if d in b})
    if not lows:
        return deepest(boxes, rest)
    best = 0
    for x in lows:
        inside = free + [b for b in boxes if d in b and b[d][0] <= x <= b[d][1]]
        if len(inside) > best:
            best = max(best, deepest(inside, rest))
    return best


# The search grows as the makings to the power of the figures (five): about a second at 50
# makings; a configuration made more often is counted whole (a bound still, a loose one).
MAX_SEARCHED = 40


def configurations(entries, box):
    """Per configuration ((matrix, name), in first-seen order) of the judged entries (those
    with a verdict, `ok` not None): {"key", "made", "model", "at_best", "searched"}: how many
    makings, how many the model is within the bar of, and the deepest point of their boxes
    (`box(measured, predicted)`: the figures the bar judges for that making)."""
    groups = {}
    for e in entries:
        if e.get("ok") is None:
            continue
        groups.setdefault((e["matrix"], e["name"]), []).append(e)
    out = []
    for key, g in groups.items():
        searched = len(g) <= MAX_SEARCHED
        out.append({"key": key, "made": len(g), "model": sum(1 for e in g if e["ok"]),
                    "searched": searched,
                    "at_best": deepest([box(e["measured"], e.get("predicted"))
                                        for e in g]) if searched else len(g)})
    return out
