"""tools/replay --results FOLDER --predict: each traced boot's windows of one setting replayed
under another setting of the same boot, against the windows measured at that setting (KVM's
own counters, in the same boot): the what-if checked against reality. Pure but for nothing:
the caller runs the engine (`whatif(window, params)` -> the engine's 'all' row)."""
from idlelab.replay.schedule import KEYS, params_text


def measured(w):
    """(polling % of a CPU summed over the vCPUs, successful polls) of one window, from KVM's
    counters at its markers; None without them."""
    d = (w.get("host") or {}).get("delta") or {}
    stats, ns = d.get("stats") or {}, d.get("elapsed_ns")
    if not stats or not ns:
        return None
    poll = sum(s.get("halt_poll_success_ns", 0) + s.get("halt_poll_fail_ns", 0)
               for s in stats.values())
    return 100 * poll / ns, sum(s.get("halt_successful_poll", 0) for s in stats.values())


def settings(rec, w):
    """The kvm parameters window w ran under (the boot's, with the window's own)."""
    values = dict((rec.get("host_params") or {}).get("values") or {})
    values.update((w.get("switched") or {}).get("kvm_params") or w.get("host_params") or {})
    return values


def pairs_of(rec):
    """[(from window, to arm's windows, the to-arm's parameters)] for each ordered pair of
    this boot's arms that differ in their kvm parameters."""
    arms = {}
    for w in rec.get("windows") or []:
        if w.get("mono_ns") and measured(w) is not None:
            arms.setdefault(w["arm"], []).append(w)
    out = []
    for a, wa in arms.items():
        for b, wb in arms.items():
            pa, pb = settings(rec, wa[0]), settings(rec, wb[0])
            if a != b and {k: pa.get(k) for k in KEYS} != {k: pb.get(k) for k in KEYS}:
                out.append((a, b, wa, wb, params_text(pb, None)))
    return out


def spread(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2, xs[0], xs[-1]


def summarize(cells):
    """cells: {(matrix/name, from arm, to arm): {"pred": [(cpu, succ)], "meas": [(cpu, succ)]}}
    -> lines: the predictions' median against the measured windows' median and range."""
    lines = []
    for (name, a, b), c in sorted(cells.items()):
        if not c["pred"] or not c["meas"]:
            continue
        out = [f"{name}: {a} -> {b}: {len(c['pred'])} windows replayed, "
               f"{len(c['meas'])} measured"]
        for i, what, unit in ((0, "polling CPU", "%"), (1, "successful polls", "")):
            p, _, _ = spread([x[i] for x in c["pred"]])
            m, lo, hi = spread([x[i] for x in c["meas"]])
            inside = lo <= p <= hi
            ratio = f", {p / m:.2f}x" if m else ""
            out.append(f"  {what}: predicted {p:.1f}{unit} against measured {m:.1f}{unit} "
                       f"[{lo:.1f}, {hi:.1f}]{ratio}: "
                       f"{'within' if inside else 'outside'} the measured spread")
        lines += out
    return lines
