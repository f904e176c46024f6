"""The governors matrix (tools/matrices/governors.txt): Linux's haltpoll against the other
governors of kernel/policy/, on the same workloads, with KVM's counters as the judge. A
periodic sweep across haltpoll's plateau (the periods placed by the cost table), then the
other workloads; per governor the guest's poll hit ratio, the host CPU one wake-up costs
(where the workload has wake-ups of its own: the idle workload has its host CPU % alone),
halt exits per second and the latency. The verdict on the issue's goals is computed here
from the rows."""
import re

from idlelab.derive import effects, plateau
from idlelab.derive.plateau import PLATEAU_HIT_PCT
from idlelab.derive.runrow import has_wakeups
from idlelab.report.tables import EMPTY, find, fmt, md_table, num, ordered, page

MATRIX = "governors"
TITLE = "Idle governors side by side: haltpoll (Linux) and predict"
GOAL_HIT_PCT, OFF_PLATEAU_SLACK = 90.0, 1.05


def hit_pct(r):
    """Guest poll hits per poll entry, %; None without polls."""
    return plateau.hit_pct(num(r.guest_poll_entries), num(r.guest_poll_hits))


def latency_key(r):
    """The workload's latency column: round trip for pingpong, timer lateness otherwise."""
    return "rtt_p50_us" if r.workload == "pingpong" else "late_p50_us"


def latency_us(r):
    return num(getattr(r, latency_key(r)))


def cpu_key(r):
    """The workload's host CPU column: per wake-up, or CPU % where it has no wake-ups of its
    own to divide by (the idle workload: runs.csv leaves its per-wake-up figure empty)."""
    return "host_cpu_us_per_wakeup" if has_wakeups(r.workload) else "host_cpu_pct"


def governors(rows):
    return ordered(r.governor for r in rows if r.governor)


def case(r):
    """A row's case: its run name without the governor it ran with (the matrix sweeps the
    governor last), so that the rows of one case differ in the governor alone: a
    configuration swept over other values too (plateau-ipi's think=) has a case per value."""
    return re.sub(r"-cpuidle\.governor=[^-]*", "", r.name or "")


def find_case(rows, c, governor):
    return next((r for r in rows if r.ok and case(r) == c and r.governor == governor), None)


def metric_cells(r):
    if r is None:
        return [EMPTY] * 4
    return [fmt(hit_pct(r)), fmt(num(r.host_cpu_us_per_wakeup), 0),
            fmt(num(r.halt_exits_per_s), 0), fmt(latency_us(r), 0)]


def periodic_cases(rows):
    """[(label, case)] of the periodic sweep's rows, by period: the label is the period,
    with the matrix's value beside it where two cases came out at the same period (a located
    `plateau` on a `timer+X` row)."""
    periodic = [r for r in rows if r.workload == "periodic" and r.config.startswith("plateau")
                and r.period_us is not None]
    first = {}
    for r in sorted(periodic, key=lambda r: r.period_us):
        first.setdefault(case(r), r)
    seen = [r.period_us for r in first.values()]
    return [(fmt(r.period_us, 0) + (f" ({c.rpartition('period=')[2] or c})"
                                    if seen.count(r.period_us) > 1 else ""), c)
            for c, r in first.items()]


def sweep_table(rows, govs):
    head = ["period µs"]
    for g in govs:
        head += [f"{g}: poll hits %", "host CPU µs/wake-up", "halt exits/s", "late p50 µs"]
    lines = [[label] + [x for g in govs for x in metric_cells(find_case(rows, c, g))]
             for label, c in periodic_cases(rows)]
    return md_table(head, lines)


def other_cells(r):
    """metric_cells and, after the CPU per wake-up, the host CPU %: the one CPU figure of a
    workload without wake-ups."""
    cells = metric_cells(r)
    return cells[:2] + [EMPTY if r is None else fmt(num(r.host_cpu_pct))] + cells[2:]


def other_table(rows, govs):
    others = [r for r in rows if not is_control(r)
              and not (r.workload == "periodic" and r.config.startswith("plateau"))]
    head = ["workload"]
    for g in govs:
        head += [f"{g}: poll hits %", "host CPU µs/wake-up", "host CPU %", "halt exits/s",
                 "latency µs"]
    lines = [[c] + [x for g in govs for x in other_cells(find_case(others, c, g))]
             for c in ordered(case(r) for r in others)]
    return md_table(head, lines)


def on_plateau(r):
    """haltpoll's plateau, as measured: it polls on at least every other wake-up and under
    PLATEAU_HIT_PCT of those polls catch one (it burns its window and halts anyway). Only a
    workload with wake-ups of its own has one."""
    return plateau.state(has_wakeups(r.workload), num(r.guest_poll_entries),
                         num(r.guest_wakeups), num(r.guest_poll_hits)) == plateau.PLATEAU


def pairs(rows, base, g):
    """(label, base's row, g's row) per configuration both ran: a periodic row by period,
    any other by its configuration name."""
    cases = periodic_cases(rows)
    out = []
    for label, c in cases:
        a, b = find_case(rows, c, base), find_case(rows, c, g)
        if a and b:
            out.append((label, a, b))
    done = {c for _, c in cases}
    for c in ordered(case(r) for r in rows if r.ok and case(r) not in done
                     and not is_control(r)):
        a, b = find_case(rows, c, base), find_case(rows, c, g)
        if a and b:
            out.append((c, a, b))
    return out


def verdict(rows, base="haltpoll"):
    """The issue's goals, checked on these rows: on the plateau (rows where haltpoll polls
    and misses, on_plateau) another governor hits >= 90 % at no more host CPU per wake-up;
    off it, no more than 5 % worse latency or host CPU per wake-up. Where the medians miss
    a goal but the repeats overlap, that is said apart (costlier)."""
    out = []
    for g in [g for g in governors(rows) if g != base]:
        both = pairs(rows, base, g)
        shared = [effects.paired_rows(a, b) for _, a, b in both]
        how = ("by the paired windows' 95 % CI: the governors took turns in each boot"
               if shared and all(shared) else
               "the repeats do not overlap" if not any(shared) else
               "by the paired windows' 95 % CI where the governors shared boots, else the "
               "repeats not overlapping")
        on, off = [], []
        for k, a, b in both:
            (on if on_plateau(a) else off).append((k, a, b))
        hit = [(k, a, b) for k, a, b in on if (hit_pct(b) or 0) >= GOAL_HIT_PCT
               and num(a.host_cpu_us_per_wakeup) and num(b.host_cpu_us_per_wakeup)]
        cpu = [(k, costlier(b, a, "host_cpu_us_per_wakeup")) for k, a, b in hit]
        met = [k for k, c in cpu if c is None]
        met_spread = [k for k, c in cpu if c == WITHIN_SPREAD]
        missed = [(k, worse_than(b, a)) for k, a, b in on if k not in met + met_spread]
        judged = [(k, worse_than(b, a)) for k, a, b in off]
        worse = [str(k) for k, w in judged if w == WORSE]
        noise = [str(k) for k, w in judged if w == WITHIN_SPREAD]
        took = [f"{k} ({fmt(num(b.guest_takeovers), 0)})" for k, a, b in off
                if num(b.guest_takeovers)]
        out.append(f"- {g} against {base}: the plateau (haltpoll polls on at least every other "
                   f"wake-up and under {PLATEAU_HIT_PCT:.0f} % of its polls hit) covers "
                   f"{len(on)} rows" + (f" ({', '.join(k for k, _, _ in on)})" if on else "")
                   + f"; {g} reaches >= {GOAL_HIT_PCT:.0f} % "
                   f"hits at no more host CPU per wake-up on {len(met)} of them"
                   + (f" ({', '.join(k for k in met)})" if met else "")
                   + (f", and at more by the medians but not decided ({how}) on "
                      f"{len(met_spread)} ({', '.join(met_spread)})" if met_spread else "")
                   + (f"; where it misses the goal it is, by the off-plateau measure, more "
                      f"than 5 % worse on: "
                      + (", ".join(str(k) for k, w in missed if w) or "none")
                      if missed else "")
                   + f". Off the plateau ({len(off)} rows) it is more than 5 % worse in "
                   "latency or host CPU per wake-up (host CPU % for a workload without "
                   f"wake-ups), decided ({how}), on: "
                   + (", ".join(worse) if worse else "none") + "; more than 5 % worse by "
                   "the medians but not decided (not told apart from the run-to-run "
                   "noise) on: " + (", ".join(noise) if noise else "none") + "; it set "
                   "haltpoll's rule "
                   "aside there (the `takeovers` count) on: " + (", ".join(took) if took
                                                               else "none") + ".")
    return out


WORSE, WITHIN_SPREAD = "worse", "within the spread"
# The control: haltpoll against itself, a line of the matrix per configuration named
# `control-<line>` with the same values and a warm-up of 101 ms instead of 100 (nothing the
# governor sees changes): how far apart two runs of one configuration come out by the
# medians on this host, the floor under any difference the verdict reports.
CONTROL = "control-"


def is_control(r):
    return (r.config or "").startswith(CONTROL)


def control_pairs(rows, base="haltpoll"):
    """(case, base's row, the control's row) per configuration with a control."""
    out = []
    for c in ordered(case(r) for r in rows if r.ok and is_control(r)):
        main = re.sub(r"-warmup=[^-]*", "", c[len(CONTROL):])
        a = find_case(rows, main, base)
        b = next((r for r in rows if r.ok and case(r) == c), None)
        if a and b:
            out.append((main, a, b))
    return out


def control_verdict(rows, base="haltpoll"):
    """The control's line: on how many rows haltpoll's second run is more than 5 % worse
    than its first by the medians, and beyond the spread, by worse_than()'s measure."""
    got = [(k, worse_than(b, a)) for k, a, b in control_pairs(rows, base)]
    if not got:
        return []
    apart = [k for k, w in got if w is not None]
    beyond = [k for k, w in got if w == WORSE]
    return [f"- The noise floor: {base} against itself (the `{CONTROL}` rows: the same "
            f"configuration with a warm-up of 101 ms) is more than 5 % worse in latency or "
            f"host CPU by the medians on {len(apart)} of {len(got)} rows"
            + (f" ({', '.join(apart)})" if apart else "")
            + f", beyond the spread of the repeats on {len(beyond)}"
            + (f" ({', '.join(beyond)})" if beyond else "")
            + ". A difference by the medians alone is within what this host gives one "
            "governor twice."]


def costlier(b, a, key, slack=1.0):
    """WORSE if b costs more than a in column key by more than (slack - 1) of a's median,
    decided: where the two governors ran as windows of the same boots (within=), by the
    paired differences' 95 % CI (derive/effects.py, docs/verdicts.md), else by the repeats
    not overlapping (b's best above a's worst; across boots one configuration's repeats
    vary by 10 % and more); WITHIN_SPREAD if the medians differ that much but that does not
    decide it; None otherwise (or where either is missing)."""
    x, y = num(getattr(a, key)), num(getattr(b, key))
    if not (x and y and y > x * slack):
        return None
    if effects.paired_rows(a, b):
        v = effects.judge(effects.Effect(key, "", a, b, key, effects.UP,
                                         threshold=abs(x) * (slack - 1)))
        return WORSE if v.verdict == effects.REPRODUCED else WITHIN_SPREAD
    a_hi = (a.spread or {}).get(key, (x, x))[1]
    b_lo = (b.spread or {}).get(key, (y, y))[0]
    return WORSE if b_lo > a_hi else WITHIN_SPREAD


def worse_than(b, a):
    """The off-plateau judgement: costlier by more than OFF_PLATEAU_SLACK in latency or in
    host CPU (per wake-up, or % without wake-ups: cpu_key); WORSE if either is beyond the
    spread."""
    found = [costlier(b, a, key, OFF_PLATEAU_SLACK) for key in (latency_key(a), cpu_key(a))]
    return WORSE if WORSE in found else WITHIN_SPREAD if WITHIN_SPREAD in found else None


LOCATED_TITLES = {"plateau": "the period of workload=periodic",
                  "plateau_think": "the think time of workload=pingpong"}


def located_section(meta):
    """Where the bench located haltpoll's plateau before the runs (bench/plateau.py): per
    located value the sweep, boot by boot, what was found, and where it formed nowhere,
    haltpoll's window over time at the nearest point."""
    located = ((meta or {}).get("cost_table") or {}).get("located") or {}
    out = []
    for name, e in located.items():
        out += [f"### `{name}`: {LOCATED_TITLES.get(name, name)}", "", located_line(name, e),
                ""]
        head = [f"{e.get('knob', 'value')} µs", "pass", "status", "polls per wake-up",
                "poll hits %", "state", "host CPU µs/wake-up"]
        lines = [[fmt(p["ns"] / 1000, 0), p.get("pass", ""), p.get("status", ""),
                  fmt(num(p.get("polls")) / p["wakeups"]
                      if num(p.get("wakeups")) and num(p.get("polls")) is not None else None, 2),
                  fmt(p.get("hit_pct")), p.get("state") or EMPTY,
                  fmt(p.get("host_cpu_us_per_wakeup"), 0)]
                 for p in sorted(e.get("sweep", []), key=lambda p: p["ns"])]
        out += [md_table(head, lines), ""] if lines else []
        for w in e.get("windows", []):
            out += window_table(w, e.get("knob", "value"))
    return out


def located_line(name, e):
    """What the sweep found, in one paragraph."""
    if "ns" not in e:
        return f"Not located: {e.get('error')}. The runs placed by `{name}` were not made."
    at = f"{e['knob']}={e['ns'] / 1000:.0f} µs"
    sweep = (f"haltpoll alone, one run per value: a coarse sweep from "
             f"{'the `timer` cost' if e.get('base') == 'timer' else '0'} in steps of its "
             f"largest window ({e.get('max_window_ns', 0) / 1000:.0f} µs), then a fine one "
             "where its poll hits collapse")
    if e.get("found"):
        return (f"Located at {at}, the middle of the {len(e['on'])} points on the plateau "
                f"(polls on at least every other wake-up, under {PLATEAU_HIT_PCT:.0f} % hit); "
                f"{sweep}. The runs written `{name}±TIME` are placed from there.")
    return (f"**No plateau on this host**: no point of the sweep had haltpoll polling on every "
            f"other wake-up with under {PLATEAU_HIT_PCT:.0f} % hits ({e.get('why')}). The "
            f"nearest point, {at}, stands in for it; {sweep}.")


def located_verdict(meta):
    """Where the rows' plateau was placed, a line per located value."""
    located = ((meta or {}).get("cost_table") or {}).get("located") or {}
    out = []
    for name, e in located.items():
        if "ns" not in e:
            out.append(f"- `{name}`: not located ({e.get('error')}).")
        elif e.get("found"):
            out.append(f"- `{name}`: haltpoll's plateau located on this host at "
                       f"{e['knob']}={e['ns'] / 1000:.0f} µs ({len(e['on'])} of "
                       f"{len(e['sweep'])} points of the locating sweep on it).")
        else:
            out.append(f"- `{name}`: no plateau formed on this host in the locating sweep "
                       f"({e.get('why')}); its rows stand at the nearest point, "
                       f"{e['knob']}={e['ns'] / 1000:.0f} µs, and are judged by what haltpoll "
                       "did there.")
    return out


def window_table(w, knob):
    """haltpoll's window over time at one point of the sweep, from the guest's timeline."""
    at = f"{knob}={w['ns'] / 1000:.0f} µs"
    if "error" in w:
        return [f"haltpoll's window over time at {at} could not be shown: {w['error']}.", ""]
    out = [f"haltpoll's window at {at}, from the guest's timeline (its `reflect` events) over "
           "the stretch it recorded from the window's opening, in equal parts:", ""]
    for cpu, parts in w.get("per_cpu", {}).items():
        seen = [p for p in parts if p["window_us"] is not None]
        if not seen:
            out += [f"CPU {cpu}: no reflect recorded.", ""]
            continue
        lines = [[f"{p['from_us']:.0f}-{p['to_us']:.0f}",
                  EMPTY if p["window_us"] is None else
                  "/".join(fmt(x, 0) for x in p["window_us"]),
                  str(p["polls"]), str(p["hits"]), str(p["halts"])] for p in parts]
        out += [f"CPU {cpu}:", "", md_table(["µs from the window's opening",
                                             "window µs min/median/max", "polls",
                                             "polls that hit", "halts"], lines), ""]
    return out


def markdown(rows, meta):
    govs = governors(rows)
    located = located_section(meta) or ["Not located by this bench (no run was written in a "
                                        "located value)."]
    body = (["## Where haltpoll's plateau lies on this host", ""] + located + [
        "", "## Periodic wake-ups across haltpoll's plateau", "",
        "workload=periodic on vCPU 1 (cpus=0x2, hz=0), idle=haltpoll with "
        "haltpoll.guest_halt_poll_ns=2ms and grow_start=100us, host polling off (MSR=0). "
        "Host CPU per wake-up is vCPU 1's thread CPU over the window divided by its "
        "wake-ups.", "", sweep_table(rows, govs), "",
        "## Other workloads", "",
        "Host CPU per wake-up as above, over the workload's vCPUs; host CPU % is their "
        "threads' CPU over the window. The idle workload wakes nothing of its own (only "
        "the tick wakes its vCPUs): it has no figure per wake-up, and is judged by its "
        "host CPU %.", "", other_table(rows, govs), "",
        "## Against the goals", ""] + located_verdict(meta) + verdict(rows)
        + control_verdict(rows) + [""])
    return page(TITLE, meta, None, body, rows)
