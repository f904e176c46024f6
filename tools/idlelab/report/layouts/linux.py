"""The peer table (tools/matrices/linux.txt): a real Linux guest beside idlelab on the same
host, the same workloads, the same KVM counters. Seed 002's configurations (pingpong round
trips) and a periodic sweep across haltpoll's plateau, one line per guest; then every
difference above PEER_DIFF between a Linux guest and idlelab, each with the measured parts
that explain it (the floor rows measure each guest's own wake path: no vCPU exits there).

Rows pair by configuration: a Linux row is named as idlelab's with a `linux` prefix
(`linux-neither` beside `neither`; a Linux kernel of our own build adds its tag to the
prefix: `linux-hpgov-guest-poll`), and a swept row pairs by its period.

Inside each guest, what a setting does (host polling against neither, ...) is judged too:
where the two rows ran as windows of the same boots (a within= row of the matrix), on the
paired windows with a 95 % CI (derive/pairs.py, docs/verdicts.md); where they ran in boots of
their own, by their medians and whether the repeats overlap, and the line says so. Two guests
never share a boot, so Linux against idlelab is always the latter."""

from idlelab.derive import effects, kvmdelta, pairs as verdicts
from idlelab.derive.records import is_number
from idlelab.report.tables import (EMPTY, fmt, md_table, num, page, per_rt, spread_cell)

MATRIX = "linux"
TITLE = "Linux beside idlelab: the same host, workloads and KVM counters"
# A difference between the two guests' medians above this is explained in the report.
PEER_DIFF = 0.10
# Seed 002's configurations, in its order (seed002.txt says what each is).
PINGPONG = ("floor", "neither", "host-poll", "guest-poll", "guest-msr", "both")
SWEEP = "sweep"
KNOWN = PINGPONG + tuple(f"{c}.placed" for c in PINGPONG) + (SWEEP,)


def with_part(r):
    """The row's configuration with its `.part` kept (runs.csv's config drops it:
    `host-poll.placed` is config `host-poll`). A window row of a within= row whose cells are
    named (names=) has its boot row's config: its own name is its configuration."""
    if r.name and r.name.startswith(r.config + "."):
        return f"{r.config}.{r.name[len(r.config) + 1:].split('-', 1)[0]}"
    if r.name and r.name != r.config and not r.name.startswith(r.config + "-"):
        return r.name
    return r.config


def base(r):
    """The configuration a row is an instance of: a Linux row's name less its prefix
    (`linux-`, and a kernel's tag after it: `linux-hpgov-guest-poll` is `guest-poll`)."""
    name = with_part(r)
    if r.guest != "linux":
        return name
    for i, ch in enumerate(name):
        if ch == "-" and name[i + 1:] in KNOWN:
            return name[i + 1:]
    return name


def guest(r):
    """Who ran: `idlelab`, or Linux with the governor that ran and, where it is not
    Debian's kernel, which of ours (runs.csv's linux_kernel)."""
    if r.guest != "linux":
        return "idlelab"
    kernel = r.linux_kernel
    gov = r.governor if r.governor not in (None, "", "none") else None
    parts = [p for p in (gov and f"{gov}", kernel if kernel not in (None, "", "debian")
                         else None) if p]
    return "Linux" + (f" ({', '.join(parts)})" if parts else "")


def poll_hit_pct(r):
    """(percent of guest polls that a wake-up ended, exact?) or (None, True). idlelab counts
    its hits. Linux's cpuidle counts entries only; under its haltpoll governor every expired
    poll is followed by a halt and a halt by nothing else, so polls minus halts is the hits
    (an estimate: a halt that found work pending counts too). Under menu it is not known."""
    entries = num(r.guest_poll_entries)
    if not entries:
        return None, True
    hits = num(r.guest_poll_hits)
    if hits is not None:
        return 100.0 * hits / entries, True
    if r.guest == "linux" and r.governor == "haltpoll" and num(r.guest_hlt) is not None:
        return 100.0 * max(0.0, entries - r.guest_hlt) / entries, False
    return None, True


def poll_cell(r):
    pct, exact = poll_hit_pct(r)
    return EMPTY if pct is None else ("" if exact else "≈") + fmt(pct, 1)


def per_wakeup(r, key):
    """A counter per wake-up: per round trip for pingpong, per period for periodic."""
    if r.workload == "pingpong":
        return per_rt(r, key)
    return kvmdelta.per_event(getattr(r, key), num(r.guest_wakeups)) if is_number(
        getattr(r, key)) else None


def kernel(r):
    """Which kernel ran: idlelab's, or Linux's (stock, or one of our builds)."""
    return (r.guest or "idlelab", r.linux_kernel or "")


def floor_of(rows, r):
    """The floor row (no vCPU exits) of the same kernel as r (its idle=poll has no
    governor, so the kernel and not the governor says whose it is)."""
    return next((f for f in rows if base(f) == "floor" and kernel(f) == kernel(r) and f.ok),
                None)


def pingpong_table(rows):
    lines = []
    for cfg in PINGPONG + tuple(f"{c}.placed" for c in PINGPONG):
        for r in (r for r in rows if base(r) == cfg):
            fl = floor_of(rows, r)
            x = (fmt(r.rtt_p50_us / fl.rtt_p50_us, 2) if r.ok and fl and num(r.rtt_p50_us)
                 and num(fl.rtt_p50_us) else EMPTY)
            lines.append([cfg, guest(r), spread_cell(r, "rtt_p50_us", 1), x,
                          poll_cell(r) if r.ok else EMPTY,
                          fmt(per_rt(r, "host_successful_poll"), 2) if r.ok else EMPTY,
                          fmt(per_rt(r, "host_halt_exits"), 2) if r.ok else EMPTY,
                          spread_cell(r, "halt_exits_per_s", 0),
                          spread_cell(r, "host_cpu_us_per_wakeup", 1),
                          fmt(r.host_cpu_pct) if r.ok else EMPTY])
    head = ["configuration", "guest", "RTT p50 µs", "× its floor", "guest polls hit %",
            "host polls OK/RT", "halt exits/RT", "halt exits/s", "host CPU µs/wake-up",
            "host CPU %/vCPU"]
    return md_table(head, lines)


def sweep_rows(rows):
    return [r for r in rows if base(r) == SWEEP]


def sweep_table(rows):
    lines = []
    for p in sorted({r.period_us for r in sweep_rows(rows) if num(r.period_us)}):
        for r in (r for r in sweep_rows(rows) if r.period_us == p):
            lines.append([fmt(p, 0), guest(r), poll_cell(r) if r.ok else EMPTY,
                          spread_cell(r, "late_p50_us", 1),
                          spread_cell(r, "halt_exits_per_s", 0),
                          fmt(per_wakeup(r, "host_halt_exits"), 2) if r.ok else EMPTY,
                          spread_cell(r, "host_cpu_us_per_wakeup", 1),
                          fmt(r.host_cpu_pct) if r.ok else EMPTY])
    head = ["period µs", "guest", "guest polls hit %", "late p50 µs", "halt exits/s",
            "halt exits/wake-up", "host CPU µs/wake-up", "host CPU %/vCPU"]
    return md_table(head, lines)


def _rel(a, b):
    """(b - a) / a, None where either is missing or a is 0."""
    a, b = num(a), num(b)
    return None if a in (None, 0) or b is None else (b - a) / a


def _n(v, digits=1):
    return fmt(num(v), digits)


def why_rtt(rows, lin, ida):
    """The round trip's difference taken apart by what each guest measured."""
    fl, fi = floor_of(rows, lin), floor_of(rows, ida)
    out = []
    if fl and fi and num(fl.rtt_p50_us) and num(fi.rtt_p50_us):
        out.append(f"the floors (no vCPU exit: each guest's own wake path, Linux's futex "
                   f"wake, scheduler and return to user space against idlelab's flag and "
                   f"thread switch) are {_n(fl.rtt_p50_us)} against {_n(fi.rtt_p50_us)} µs, "
                   f"{fl.rtt_p50_us - fi.rtt_p50_us:+.1f} µs a round trip")
        if base(lin) != "floor" and num(lin.rtt_p50_us) and num(ida.rtt_p50_us):
            out.append(f"above its floor Linux spends {lin.rtt_p50_us - fl.rtt_p50_us:.1f} µs "
                       f"and idlelab {ida.rtt_p50_us - fi.rtt_p50_us:.1f} µs")
    out.append(f"per round trip {_n(per_rt(lin, 'host_halt_exits'), 2)} against "
               f"{_n(per_rt(ida, 'host_halt_exits'), 2)} halt exits and "
               f"{_n(per_rt(lin, 'host_successful_poll'), 2)} against "
               f"{_n(per_rt(ida, 'host_successful_poll'), 2)} successful host polls")
    pl, pi = poll_hit_pct(lin)[0], poll_hit_pct(ida)[0]
    if pl is not None or pi is not None:
        out.append(f"guest polls hit {fmt(pl, 1)} against {fmt(pi, 1)} %")
    return "; ".join(out)


def why_exits(rows, lin, ida):
    """Halt exits a second = exits a wake-up × wake-ups a second: which of the two moved."""
    if lin.workload == "pingpong":
        return (f"{_n(per_rt(lin, 'host_halt_exits'), 2)} against "
                f"{_n(per_rt(ida, 'host_halt_exits'), 2)} halt exits a round trip, at "
                f"{_n(lin.rt_per_s, 0)} against {_n(ida.rt_per_s, 0)} round trips a second")
    return (f"{_n(per_wakeup(lin, 'host_halt_exits'), 2)} against "
            f"{_n(per_wakeup(ida, 'host_halt_exits'), 2)} halt exits a wake-up; guest polls "
            f"hit {fmt(poll_hit_pct(lin)[0], 1)} against {fmt(poll_hit_pct(ida)[0], 1)} %"
            + gap_text(lin, ida))


def gap(r):
    """A periodic run's idle gap: the period less the timer's lateness (the time the vCPU
    has to poll or halt in before the next expiry), µs; None where not measured."""
    p, late = num(r.period_us), num(r.late_p50_us)
    return None if p is None or late is None else p - late


def gap_text(lin, ida):
    gl, gi = gap(lin), gap(ida)
    if gl is None or gi is None:
        return ""
    return (f"; the idle gap (period less lateness) {gl:.0f} against {gi:.0f} µs, "
            f"against the guest window of {lin.guest_halt_poll_ns or ida.guest_halt_poll_ns}")


def why_cpu(rows, lin, ida):
    """Host CPU a wake-up: the host's polling and the exits that make it."""
    return (f"the host polled {_n(lin.host_poll_pct)} against {_n(ida.host_poll_pct)} % of "
            f"the vCPUs' time ({_n(per_wakeup(lin, 'host_successful_poll'), 2)} against "
            f"{_n(per_wakeup(ida, 'host_successful_poll'), 2)} successful polls a wake-up); "
            f"{_n(per_wakeup(lin, 'host_halt_exits'), 2)} against "
            f"{_n(per_wakeup(ida, 'host_halt_exits'), 2)} halt exits a wake-up; the vCPUs "
            f"ran {_n(lin.host_cpu_pct)} against {_n(ida.host_cpu_pct)} % of the time")


METRICS = (("round trip p50", "rtt_p50_us", " µs", why_rtt),
           ("timer lateness p50", "late_p50_us", " µs", why_exits),
           ("halt exits a second", "halt_exits_per_s", "/s", why_exits),
           ("host CPU a wake-up", "host_cpu_us_per_wakeup", " µs", why_cpu))


def pairs(rows):
    """(label, Linux row, idlelab row) for every configuration both guests ran."""
    out = []
    for lin in (r for r in rows if r.guest == "linux" and r.ok):
        ida = next((r for r in rows if r.guest != "linux" and r.ok and base(r) == base(lin)
                    and (base(lin) != SWEEP or r.period_us == lin.period_us)), None)
        if ida:
            at = f" at {fmt(lin.period_us, 0)} µs" if base(lin) == SWEEP else ""
            out.append((f"{base(lin)}{at}, {guest(lin)}", lin, ida))
    return out


def differences(rows):
    """Every difference above PEER_DIFF, with its measured parts; [] where none."""
    out = []
    for label, lin, ida in pairs(rows):
        for what, key, unit, why in METRICS:
            rel = _rel(getattr(ida, key), getattr(lin, key))
            if rel is None or abs(rel) <= PEER_DIFF:
                continue
            (lo_l, hi_l) = (lin.spread or {}).get(key, (getattr(lin, key),) * 2)
            (lo_i, hi_i) = (ida.spread or {}).get(key, (getattr(ida, key),) * 2)
            apart = lo_l > hi_i or hi_l < lo_i
            text = (f"- **{label}**: {what} {fmt(getattr(lin, key), 1)}{unit} against "
                    f"idlelab's {fmt(getattr(ida, key), 1)}{unit} ({rel:+.0%}"
                    f"{'' if apart else ', the repeats overlap'})")
            if why:
                text += f". Measured: {why(rows, lin, ida)}."
            out.append(text)
    return out


# What a setting does inside one guest: (what, configuration A, configuration B), B against A.
EFFECTS = (("host polling (300 µs) against neither", "neither", "host-poll"),
           ("guest polling against neither", "neither", "guest-poll"),
           ("guest window placed against 300 µs", "guest-poll", "guest-poll.placed"),
           ("host window placed against 300 µs", "host-poll", "host-poll.placed"))
EFFECT_FIGURES = (("round trip p50", "rtt_p50_us", " µs"),
                  ("halt exits a second", "halt_exits_per_s", "/s"),
                  ("host CPU a wake-up", "host_cpu_us_per_wakeup", " µs"))


def _signed(v, unit):
    """A difference as the verdict lines print one: three significant digits, whole from 100."""
    return (f"{v:+.3g}" if abs(v) < 100 else f"{v:+.0f}") + verdicts.diff_unit(unit)


def judged(a, b, key, unit):
    """[B - A, its 95 % CI, how it is judged] of one figure: on the paired windows (pairs'
    verdict) where a and b shared boots, else by the medians and the repeats' ranges."""
    x, y = num(getattr(a, key)), num(getattr(b, key))
    if x is None or y is None:
        return [EMPTY, EMPTY, "not measured"]
    if effects.paired_rows(a, b):
        v = effects.judge(effects.Effect(key, "", a, b, key, effects.UP, unit))
        st = v.stats
        if st is None:
            return [EMPTY, EMPTY, v.note or v.verdict]
        size = _signed(v.change, unit) + (f", {v.rel:+.0%}" if v.rel is not None else "")
        return [size, verdicts.ci_text(st),
                f"{verdicts.verdict_text(st, 'B above A', 'B below A')}: paired windows, "
                f"{st.n_boots} boot{'s' if st.n_boots != 1 else ''} x {st.n_pairs} "
                f"pair{'s' if st.n_pairs != 1 else ''}"]
    lo_a, hi_a = (a.spread or {}).get(key, (x, x))
    lo_b, hi_b = (b.spread or {}).get(key, (y, y))
    apart = lo_b > hi_a or hi_b < lo_a
    size = _signed(y - x, unit) + (f", {(y - x) / x:+.0%}" if x else "")
    return [size, EMPTY, "boots of their own, medians: the repeats "
            + ("do not overlap" if apart else "overlap")]


def effect_rows(rows):
    """(what, guest, A's row, B's row) for every EFFECTS comparison a kernel ran both rows
    of."""
    out = []
    for what, ca, cb in EFFECTS:
        for k in dict.fromkeys(kernel(r) for r in rows):
            a = next((r for r in rows if r.ok and kernel(r) == k and base(r) == ca), None)
            b = next((r for r in rows if r.ok and kernel(r) == k and base(r) == cb), None)
            if a and b:
                out.append((what, guest(b), a, b))
    return out


def effects_table(rows):
    lines = []
    for what, who, a, b in effect_rows(rows):
        for figure, key, unit in EFFECT_FIGURES:
            if num(getattr(a, key)) is None and num(getattr(b, key)) is None:
                continue
            lines.append([what, who, figure, fmt(num(getattr(a, key)), 1),
                          fmt(num(getattr(b, key)), 1)] + judged(a, b, key, unit))
    head = ["B against A", "guest", "figure", "A", "B", "B − A", "95 % CI", "judged"]
    return md_table(head, lines) if lines else ""


def markdown(rows, meta):
    body = ["## Seed 002's configurations, both guests", "", pingpong_table(rows), "",
            "Pingpong round trips between two vCPUs (Linux: two threads pinned to vCPUs 0 and 1 "
            "handing a token through futex wait/wake; idlelab: its pingpong), medians of the "
            "repeats with their range. `× its floor` is to the same guest's floor (idle=poll: "
            "no vCPU ever halts), so it compares what halting costs each guest apart from its "
            "own wake path. Guest poll hits: idlelab counts them; for Linux under the haltpoll "
            "governor they are estimated (≈) as poll entries minus halts; under menu they are "
            "not known (—). Linux's guest polling is its cpuidle-haltpoll driver, which sets "
            "MSR_KVM_POLL_CONTROL=0: host polling stops for it in every row.", ""]
    if sweep_rows(rows):
        body += ["## A periodic timer across haltpoll's plateau", "", sweep_table(rows), "",
                 "A vCPU woken by its own timer at each period (the periods placed by the "
                 "cost table), guest polling with guest_halt_poll_ns=2ms and "
                 "guest_halt_poll_grow_start=100us in both guests, host polling off.", ""]
    table = effects_table(rows)
    if table:
        body += ["## What each setting does, guest by guest", "", table, "",
                 "Each guest against itself: B's configuration against A's (medians of the "
                 "windows or repeats). Where the two ran as windows of the same boots "
                 "(`boot=` in tools/matrices/linux.txt), B − A is the Hodges-Lehmann "
                 "estimate of the paired differences with its 95 % CI from the hierarchical "
                 "bootstrap, and the verdict is against 5 % of A (docs/verdicts.md); where "
                 "they ran in boots of their own, the difference of the medians, and whether "
                 "the repeats' ranges overlap.", ""]
    diffs = differences(rows)
    body += [f"## Where Linux and idlelab differ by more than {PEER_DIFF:.0%}", "",
             "Two guests never share a boot: these compare the medians of boots of their own, "
             "and say where the repeats overlap.", ""]
    body += diffs or ["None: every figure both guests measured is within "
                      f"{PEER_DIFF:.0%} of the other's."]
    body += [""]
    return page(TITLE, meta, None, body, rows)
