"""`tools/bench --ab "A" "B"`: a user's own comparison of two settings on the paired design.
Every boot runs both arms in adjacent pairs of windows, in a balanced order
(bench/windowplan.Design), over --boots boots; each figure is compared on the paired
differences B - A of the windows of one pair (derive/pairs: the effect, its 95 % confidence
interval from a bootstrap that resamples boots, then pairs within them, and a verdict).

The comparison is the run of a one-line matrix (`ab: <--ab-base> ...`) made --boots times,
so its results folder, raw records and runs.csv (a row per window) are the bench's own;
ab.md beside them holds the table printed at the end."""
import dataclasses
import os

from idlelab.bench import matrix, matrixvalues, windowplan, workplan
from idlelab.derive import pairs, windows
from idlelab.derive.records import is_number
from idlelab.derive.runrow import side_by_side, summarize

MATRIX_ID = "ab"
DEFAULT_BASE = "workload=pingpong duration=500ms"
DEFAULT_BOOTS = 3
DEFAULT_PAIRS = 4
FILE_NAME = "ab.md"


def base_line(text):
    """The matrix line of --ab-base: its guest knobs may be written bare (`period=250us`)."""
    out = []
    for tok in text.split():
        key = tok.partition("=")[0]
        out.append(tok if key in matrixvalues.KEYS or key.startswith("guest.")
                   else f"guest.{tok}")
    return " ".join(out)


def build(a_text, b_text, base=DEFAULT_BASE, boots=DEFAULT_BOOTS, npairs=DEFAULT_PAIRS,
          order="abba", seed=None, params=None, guest_knobs=None):
    """The `loaded` the bench runs ([(matrix id, source, [Run])]); MatrixError or PlanError
    (one line each) for what cannot be compared this way."""
    runs = matrix.parse(f"{MATRIX_ID}: {base_line(base)} repeat={boots}", "--ab-base",
                        guest_knobs)
    if len(runs) != 1:
        raise windowplan.PlanError("--ab-base must describe one run (no sweeps)")
    run = runs[0]
    arms = (windowplan.parse_arm("A", a_text), windowplan.parse_arm("B", b_text))
    workplan.check_arms(arms, run.guest_os)
    base_params = dict(params.values or {}) if params is not None else {}
    design = windowplan.Design(arms, npairs, order, seed,
                               workplan.with_defaults(run.guest, arms), base_params)
    design.for_boot(1)         # refuses now what a boot would: the arms' mismatches
    if run.vm_halt_poll_ns is None and any(a.vm_halt_poll_ns is not None for a in arms):
        run = _with_vm_window(run, arms[0].vm_halt_poll_ns)
    wanted = {p for a in arms for p in a.host_params}
    run = _replace(run, windows=design,
                   host_params=dict(run.host_params, **{p: design.for_boot(1).host_params(1)[p]
                                                       for p in wanted}))
    return [(MATRIX_ID, "--ab", [run])]


def _replace(run, **kw):
    return dataclasses.replace(run, **kw)


def _with_vm_window(run, ns):
    """A run whose VM starts with the per-VM window (KVM_CAP_HALT_POLL) of its first arm."""
    settings = dict(run.settings, halt_poll_ns=str(ns))
    return _replace(run, vm_halt_poll_ns=ns, settings=settings)


# --- the figures compared -------------------------------------------------------------------

def _guest_poll_pct(rec, row):
    """The workload CPUs' share of the window spent polling, from the guest's cpu records."""
    if rec.get("status") != "ok" or not row.window_ms:
        return None
    per = side_by_side(rec)
    polled = [v["guest"].get("poll_ns") for v in per]
    if not per or not all(is_number(p) for p in polled):
        return None
    return 100 * sum(polled) / (len(per) * row.window_ms * 1e6)


def _latency(row):
    for key, label in (("rtt_p50_us", "round trip p50"), ("late_p50_us", "lateness p50"),
                       ("lap_p50_us", "lap p50")):
        if is_number(getattr(row, key, None)):
            return label, getattr(row, key)
    return "latency", None


# (label, unit, whose, how to read it from (rec, row))
FIGURES = (
    ("HLT", "", "guest", lambda rec, row: row.guest_hlt),
    ("halt_exits", "", "KVM", lambda rec, row: row.host_halt_exits),
    ("exits (all)", "", "KVM", lambda rec, row: row.host_exits),
    ("IPIs sent", "", "guest", lambda rec, row: row.guest_ipi_sent),
    ("IPIs avoided", "", "guest", lambda rec, row: row.guest_ipi_avoided),
    ("polls tried", "", "KVM", lambda rec, row: row.host_attempted_poll),
    ("polls caught", "", "KVM", lambda rec, row: row.host_successful_poll),
    ("poll share", " %", "guest", _guest_poll_pct),
    ("host polling", " %", "KVM", lambda rec, row: row.host_poll_pct),
    ("host CPU", " %", "host", lambda rec, row: row.host_cpu_pct),
    ("latency", " µs", "guest", lambda rec, row: _latency(row)[1]),
)


def windows_of(recs):
    """[{boot, index, arm, rec, row}] of every window of the comparison's boots."""
    out = []
    for boot_rec in recs:
        if boot_rec.get("matrix") != MATRIX_ID:
            continue
        for w in windows.split(boot_rec):
            bw = w.get("boot_window")
            if bw is None:
                continue
            out.append({"boot": bw["boot"], "round": bw["round"], "arm": bw["arm"],
                        "rec": w, "row": summarize(w)})
    return out


def compare(recs, rel_threshold=pairs.DEFAULT_REL_THRESHOLD, rng_seed=1):
    """[(figure label, unit, whose, A median, B median, pairs.Verdict or None)]."""
    wins = windows_of(recs)
    out = []
    for label, unit, whose, get in FIGURES:
        rows = [dict(boot=w["boot"], round=w["round"], arm=w["arm"],
                     value=get(w["rec"], w["row"]) if w["row"].status == "ok" else None)
                for w in wins]
        if label == "latency" and wins:
            label = _latency(wins[0]["row"])[0]
        values = {arm: sorted(r["value"] for r in rows if r["arm"] == arm
                              and is_number(r["value"])) for arm in ("A", "B")}
        if not values["A"] or not values["B"]:
            out.append((label, unit, whose, None, None, None))
            continue
        med = {arm: pairs.median(v) for arm, v in values.items()}
        diffs = pairs.pairs_from_windows(rows)
        threshold = pairs.threshold_of(rel_threshold, med["A"])
        v = pairs.verdict(diffs, threshold, pairs.UP, rng_seed=rng_seed)
        out.append((label, unit, whose, med["A"], med["B"], v))
    return out


def _num(v, unit=""):
    if v is None:
        return "-"
    return (f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}") + unit


def table(recs, arms, host_line=""):
    """The comparison's markdown lines: one row per figure, the guest's and KVM's side by
    side, each difference with its interval and verdict."""
    rows = compare(recs)
    wins = windows_of(recs)
    boots = sorted({w["boot"] for w in wins})
    ok = sum(w["row"].status == "ok" for w in wins)
    lines = [f"# A/B: {arms['A']!r} against {arms['B']!r}", ""]
    if host_line:
        lines += [host_line, ""]
    lines += [f"{len(boots)} boots, {len(wins)} windows ({ok} ok), paired inside each boot; "
              "B - A per pair, the effect the Hodges-Lehmann estimate of the paired "
              "differences, its interval a bootstrap over boots, then pairs "
              "(docs/verdicts.md). A difference under 5 % of A's median is no effect.", "",
              "| figure | whose | A | B | B - A | 95 % CI | verdict |",
              "|---|---|---|---|---|---|---|"]
    for label, unit, whose, a, b, v in rows:
        if v is None:
            lines.append(f"| {label} | {whose} | {_num(a)} | {_num(b)} | - | - | not measured |")
            continue
        diff_unit = " points" if unit == " %" else unit    # a difference of shares
        lines.append(f"| {label} | {whose} | {_num(a, unit)} | {_num(b, unit)} | "
                     f"{_num(v.effect, diff_unit)} | {pairs.ci_text(v)} | "
                     f"{pairs.verdict_text(v, 'B above A', 'B below A')} |")
    return lines + [""]


def write(outdir, recs, arms, host_line=""):
    lines = table(recs, arms, host_line)
    path = os.path.join(outdir, FILE_NAME)
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return lines, path
