"""The neighbours matrix (tools/matrices/neighbours.txt): what each polling configuration of
seed 002 costs a CPU-hungry task on the same host, next to what it gives the guest. Rows are
configurations (neither, host-poll, guest-poll, both, and guest polling with a steal
threshold), column groups the neighbour cases (the run name's part after the `.`: alone,
shared1, shared2, apart1). The verdict (does host polling yield where guest polling does
not?) is computed here from the rows."""
from idlelab.report.tables import EMPTY, fmt, md_table, num, ordered, page, per_rt

MATRIX = "neighbours"
TITLE = "Neighbours: what guest polling costs the rest of the host"
CASES = {"alone": "no neighbour",
         "shared1": "1 hog on CPU 1, vCPUs on CPUs 0 and 1 (vCPU 1 shares)",
         "shared2": "2 hogs on CPUs 0 and 1, vCPUs likewise (both share)",
         "apart1": "1 hog on CPU 1, both vCPUs on CPU 0 (nothing shared with the hog)"}
POLLING = ("neither", "host-poll", "guest-poll", "both")
# A difference in slowdown smaller than this (points of the alone throughput) is not called
# a difference; and a comparison made while the machine's other load (window or the alone
# reference) was above QUIET_PCT is said to be disturbed.
MARGIN_POINTS, QUIET_PCT = 5.0, 10.0


def case_of(r):
    return r.name.split(".", 1)[1].split("-", 1)[0] if "." in r.name else "alone"


def find_case(rows, config, case):
    for r in rows:
        if r.config == config and case_of(r) == case:
            return r
    return None


def mops(v):
    return None if num(v) is None else num(v) / 1e6


def pct(v):
    return None if num(v) is None else 100 * num(v)


def cells(r):
    if r is None:
        return [EMPTY] * 8
    if not r.ok:
        return [r.status] + [EMPTY] * 7
    return [fmt(mops(r.neighbour_ops_per_s), 0), fmt(pct(r.neighbour_slowdown)),
            fmt(r.rtt_p50_us, 0), fmt(per_rt(r, "host_halt_exits"), 2),
            fmt(r.host_cpu_pct),
            f"{fmt(r.guest_steal_pct)} / {fmt(r.host_run_delay_pct)}",
            fmt(r.guest_polls_suspended, 0),
            f"{fmt(r.other_load_window, 0)} / {fmt(r.neighbour_alone_other_load, 0)}"]


HEAD = ["configuration", "neighbour", "neighbour M loops/s", "neighbour slowdown %",
        "RTT p50 µs", "halt exits/RT", "host CPU %/vCPU", "steal %: guest / host run-queue wait", "polls suspended",
        "other load % (window / neighbour alone)"]


def table(rows):
    lines = []
    for case in ordered(case_of(r) for r in rows):
        for c in ordered(r.config for r in rows):
            r = find_case(rows, c, case)
            if r is not None:
                lines.append([c, case] + cells(r))
    return md_table(HEAD, lines)


def verdict(rows):
    """Per shared case: the neighbour's slowdown under host polling vs guest polling, each
    against `neither`, in points of its alone throughput."""
    out = []
    for case in ordered(case_of(r) for r in rows):
        base = find_case(rows, "neither", case)
        if case == "alone" or base is None or not base.ok or num(base.neighbour_slowdown) \
                is None:
            continue
        parts = []
        for c in ordered(r.config for r in rows):
            r = find_case(rows, c, case)
            if c == "neither" or r is None or not r.ok or num(r.neighbour_slowdown) is None:
                continue
            d = 100 * (r.neighbour_slowdown - base.neighbour_slowdown)
            rtt = "" if not num(r.rtt_p50_us) or not num(base.rtt_p50_us) else \
                f", guest RTT {r.rtt_p50_us / base.rtt_p50_us:.2f}× neither's"
            parts.append(f"{c} {d:+.1f} points{rtt}")
        out.append(f"- {case} ({CASES.get(case, case)}): the neighbour lost "
                   f"{pct(base.neighbour_slowdown):.1f} % of its alone throughput under "
                   f"`neither`; relative to that: " + ("; ".join(parts) or "nothing else ran")
                   + ".")
    for case in ("shared1", "shared2"):
        line = yield_line(find_case(rows, "host-poll", case), find_case(rows, "guest-poll", case), case)
        if line:
            out.append(line)
    return out


def yield_line(host, guest, case):
    """host-poll against guest-poll in one shared case: the seed's claim, with its noise."""
    if not (host and guest and host.ok and guest.ok and num(host.neighbour_slowdown)
            is not None and num(guest.neighbour_slowdown) is not None):
        return None
    d = pct(guest.neighbour_slowdown) - pct(host.neighbour_slowdown)
    if d > MARGIN_POINTS:
        claim = (f"host polling yields where guest polling does not: the hog kept {d:.1f} "
                 "points more of its alone throughput under host-poll")
    elif d < -MARGIN_POINTS:
        claim = (f"not reproduced: the hog did {-d:.1f} points better under guest-poll than "
                 "under host-poll")
    else:
        claim = f"no difference beyond {MARGIN_POINTS:.0f} points ({d:+.1f})"
    loads = [num(v) for r in (host, guest) for v in (r.other_load_window,
                                                     r.neighbour_alone_other_load)]
    loads = [v for v in loads if v is not None]
    noisy = (f" DISTURBED: the machine's other load reached {max(loads):.0f} % of the host "
             f"CPUs in these runs or their alone reference (above {QUIET_PCT:.0f} %), so "
             "this comparison is not reliable.") if loads and max(loads) > QUIET_PCT else ""
    return (f"- {case}: {claim} (slowdown {pct(host.neighbour_slowdown):.1f} % under "
            f"host-poll, {pct(guest.neighbour_slowdown):.1f} % under guest-poll; attempted "
            f"host polls {fmt(host.host_attempted_poll, 0)}, guest poll entries "
            f"{fmt(guest.guest_poll_entries, 0)}).{noisy}")


def markdown(rows, meta):
    body = ["pingpong on 2 vCPUs (hz=250, 1 s) under seed 002's polling configurations, "
            "alone and beside hog threads (spin and count loops). Neighbour throughput is "
            "over exactly the measured window (its counters read at the open and close "
            "markers while the guest waits at its barrier); slowdown = 1 - with / alone, "
            "alone being the same hog spec measured by itself in this bench. Guest steal "
            "is what kvm-steal-time told the guest over the window.", "",
            "Cases: " + "; ".join(f"`{k}`: {v}" for k, v in CASES.items()) + ".", "",
            table(rows), "", "## Does host polling yield where guest polling does not?", ""]
    body += verdict(rows) + [""]
    return page(TITLE, meta, None, body, rows)
