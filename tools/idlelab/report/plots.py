"""The PNG plots of the seed matrices, drawn with matplotlib (optional: without it the
report says the plots were skipped). matplotlib is imported here only, and only when a
plot is drawn, so the rest of the harness runs on the standard library alone."""
from idlelab.derive import kvmtrace
from idlelab.derive.records import is_number
from idlelab.report.layouts import governors as governors_layout
from idlelab.report.tables import ordered

SKIPPED = "(plots skipped: {python} cannot import matplotlib; install python3-matplotlib)"


def pyplot():
    """matplotlib with the file-only Agg backend, or None when it is not installed."""
    try:
        import matplotlib      # optional dependency: see the module docstring
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def value(r, key):
    """A run's figure for a plot: None unless it ran and the figure is a number."""
    v = getattr(r, key)
    return v if r.ok and is_number(v) else None


def note_of(meta):
    """The line every plot carries: where and how it was measured, and what a dot is."""
    host = (meta.get("host") or {}).get("host") or meta.get("accel") or "?"
    kernel = (meta.get("host") or {}).get("host_kernel")
    return (f"{host}{' ' + kernel if kernel else ''} host, "
            f"{'quick' if meta.get('quick') else 'full'} bench, {meta.get('started', '')}; "
            "line or bar: median, dots: its windows or boots")


def members(r, key):
    """The values of a row's windows (or boots) behind its median."""
    return [v for v in (getattr(m, key, None) for m in (r.members or [r]) if m.ok)
            if is_number(v)]


def dots(ax, x, values, colour="k"):
    """A cell's windows or boots, beside the line or bar of their median."""
    if values:
        ax.scatter([x] * len(values), values, s=8, color=colour, alpha=0.35, zorder=3)


def save(fig, path, plt, note=""):
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, color="0.35", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03 if note else 0, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def seed003(rows, path, plt, note=""):
    """Host CPU % and halt exits/s of the periodic vCPU against the timer period."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    for w in ordered(r.halt_poll_ns for r in rows):
        pts = sorted(((r.period_us, r) for r in rows if r.halt_poll_ns == w
                      and value(r, "host_cpu_pct") is not None), key=lambda p: p[0])
        if not pts:
            continue
        xs = [p for p, _ in pts]
        line1, = ax1.plot(xs, [r.host_cpu_pct for _, r in pts], marker="o",
                          label=f"halt_poll_ns={w}")
        line2, = ax2.plot(xs, [value(r, "halt_exits_per_s") for _, r in pts], marker="o",
                          label=f"halt_poll_ns={w}")
        for x, r in pts:
            dots(ax1, x, members(r, "host_cpu_pct"), line1.get_color())
            dots(ax2, x, members(r, "halt_exits_per_s"), line2.get_color())
    ax1.set_ylabel("vCPU thread host CPU %")
    ax1.set_ylim(0, 105)
    ax1.set_title("seed 003: periodic timer wake-ups vs host halt polling")
    ax2.set_ylabel("halt exits / s")
    ax2.set_xlabel("guest timer period (µs)")
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, path, plt, note)


def bars(ax, labels, values, errs=None, notes=None, digits=0, spread=None):
    """Bars of the medians (`spread`: each bar's windows or boots, as dots)."""
    xs = range(len(labels))
    for x, vs in zip(xs, spread or []):
        dots(ax, x, vs)
    ax.bar(xs, [v or 0 for v in values], yerr=errs, capsize=4, color="tab:blue")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=15, ha="right", fontsize=8)
    for x, v, note in zip(xs, values, notes or [None] * len(labels)):
        if note:
            ax.text(x, 0, note, ha="center", va="bottom", fontsize=7, rotation=90)
        elif v is not None:
            ax.text(x, v, f"{v:.{digits}f}", ha="center", va="bottom", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)


def latency(rows, path, plt, title, note=""):
    """Median round trip per configuration, whiskers up to p99 (seed 002 and 000)."""
    pp = [r for r in rows if r.workload == "pingpong"]
    one_hz = len({x.hz for x in pp}) <= 1
    labels = [r.config if one_hz else f"{r.config} hz={r.hz}" for r in pp]
    p50 = [value(r, "rtt_p50_us") for r in pp]
    p99 = [value(r, "rtt_p99_us") for r in pp]
    errs = [[0] * len(pp), [max(0, (b or 0) - (a or 0)) for a, b in zip(p50, p99)]]
    fig, ax = plt.subplots(figsize=(7, 4))
    bars(ax, labels, p50, errs, [None if r.ok else r.status for r in pp],
         spread=[members(r, "rtt_p50_us") for r in pp])
    ax.set_ylabel("round trip µs (bar: p50, whisker: p99)")
    ax.set_title(title)
    save(fig, path, plt, note)


def idle_cpu(rows, path, plt, note=""):
    """Seed 000's idle rows: host CPU % of an idle vCPU per configuration and tick rate."""
    idle = [r for r in rows if r.workload == "idle"]
    fig, ax = plt.subplots(figsize=(7, 4))
    bars(ax, [f"{r.config}\nhz={r.hz}" for r in idle], [value(r, "host_cpu_pct") for r in idle],
         notes=[None if r.ok else r.status for r in idle],
         spread=[members(r, "host_cpu_pct") for r in idle])
    ax.set_ylabel("idle vCPU thread host CPU %")
    ax.set_title("seed 000: idle vCPU cost per host polling configuration")
    save(fig, path, plt, note)


def seed004(rows, path, plt, note=""):
    """Successful host polls per attempted, per workload and shrink value."""
    labels, vals, notes = [], [], []
    for r in rows:
        labels.append(f"{r.config or r.workload}\nshrink={r.host_shrink}")
        v = value(r, "poll_success_pct")
        vals.append(v)
        notes.append(None if v is not None else ("not run (read-only)"
                                                 if r.status == "not run" else "n/a"))
    fig, ax = plt.subplots(figsize=(7, 4))
    bars(ax, labels, vals, notes=notes, spread=[members(r, "poll_success_pct") for r in rows])
    ax.set_ylabel("successful / attempted host polls, %")
    ax.set_ylim(0, 105)
    ax.set_title("seed 004: poll success ratio, halt_poll_ns_shrink 0 vs 2")
    save(fig, path, plt, note)


OUTCOME_COLOURS = (("poll_hit", "tab:green", "caught by a poll"),
                   ("poll_miss", "tab:red", "polled, then slept"),
                   ("no_poll", "tab:gray", "slept at once (window 0)"),
                   ("no_wait", "tab:orange", "wake-up already there (window 0)"))
TRACE_SPAN_MS = 200      # the plot shows the window's first 200 ms: single halts stay visible
FLOOR_US = 1.0           # a window of 0 (and a poll shorter than 1 µs) is drawn at the bottom


def seed004_trace(rows, path, plt, note=""):
    """KVM's window over time (step line) and every halt of the workload's vCPU at its
    length, coloured by what the poll did, per configuration and shrink value: the seed's
    claim is about how the window follows the halts."""
    traced = [r for r in rows if r.ok and r.trace and "events" in r.trace]
    configs = ordered(r.config for r in traced)
    shrinks = ordered(r.host_shrink for r in traced)
    if not traced:
        return
    fig, axes = plt.subplots(len(configs), len(shrinks), figsize=(5 * len(shrinks),
                                                                  3 * len(configs)),
                             squeeze=False, sharey=True)
    for i, c in enumerate(configs):
        for j, s in enumerate(shrinks):
            ax = axes[i][j]
            r = next((x for x in traced if x.config == c and x.host_shrink == s), None)
            ax.set_title(f"{c}, shrink={s}", fontsize=9)
            if r is None:
                continue
            vcpu = int(r.workload_vcpus.split()[-1]) if r.workload_vcpus else 0
            span = TRACE_SPAN_MS * 1e6
            halts = [h for h in kvmtrace.story(r.trace)[1] if h[1] == vcpu and h[0] <= span]
            for outcome, colour, label in OUTCOME_COLOURS:
                pts = [h for h in halts if h[2] == outcome]
                ax.scatter([h[0] / 1e6 for h in pts], [max(h[3] / 1e3, FLOOR_US) for h in pts], s=6,
                           color=colour, label=label)
            steps = [(h[0], h[4]) for h in halts]      # the window each halt polled with
            if steps:
                ax.step([t / 1e6 for t, _ in steps], [max(w / 1e3, FLOOR_US) for _, w in steps],
                        where="post", color="tab:blue", linewidth=1, label="window")
            if is_number(r.halt_poll_ns):
                ax.axhline(r.halt_poll_ns / 1e3, color="black", linestyle=":", linewidth=1,
                           label="halt_poll_ns (max)")
            ax.set_yscale("log")
            ax.set_ylim(bottom=FLOOR_US * 0.8)
            ax.grid(True, alpha=0.3)
            if i == len(configs) - 1:
                ax.set_xlabel("ms into the window")
            if j == 0:
                ax.set_ylabel("µs (halt length, window; 0 at the bottom)")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle("seed 004: KVM's window and each halt (kvm_vcpu_wakeup), first "
                 f"{TRACE_SPAN_MS} ms", fontsize=10)
    save(fig, path, plt, note)


def relative_latency(rows, path, plt, note=""):
    """Seed 002: each configuration's median round trip over the floor's (idle=poll, no
    exit), with the repeats' range: what each kind of polling recovers of the exit's cost."""
    pp = [r for r in rows if r.workload == "pingpong"]
    floor = next((r for r in pp if r.config == "floor" and value(r, "rtt_p50_us")), None)
    if floor is None:
        return latency(rows, path, plt, "seed 002: pingpong round trip, host vs guest polling",
                       note)
    ref = floor.rtt_p50_us
    vals = [value(r, "rtt_p50_us") and value(r, "rtt_p50_us") / ref for r in pp]
    lo = [(r.spread or {}).get("rtt_p50_us", (None, None))[0] for r in pp]
    hi = [(r.spread or {}).get("rtt_p50_us", (None, None))[1] for r in pp]
    errs = [[max(0, v - l / ref) if v and l else 0 for v, l in zip(vals, lo)],
            [max(0, h / ref - v) if v and h else 0 for v, h in zip(vals, hi)]]
    fig, ax = plt.subplots(figsize=(7, 4))
    bars(ax, [r.config for r in pp], vals, errs, [None if r.ok else r.status for r in pp],
         digits=2, spread=[[v / ref for v in members(r, "rtt_p50_us")] for r in pp])
    ax.set_ylabel(f"round trip p50 / floor's ({ref:.0f} µs)")
    ax.set_title("seed 002: round trip relative to the floor (idle=poll, no exit)")
    save(fig, path, plt, note)


def seed000_latency(rows, path, plt, note=""):
    latency(rows, path, plt, "seed 000: pingpong round trip per host polling configuration",
            note)


def governors(rows, path, plt, title_note="", note=""):
    """Host CPU per wake-up and poll hit ratio against the period, a line per governor;
    `title_note` is added to the title (the simulator's plot says it is simulated)."""
    periodic = [r for r in rows if r.workload == "periodic" and r.ok and r.governor
                and not governors_layout.is_control(r)]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for g in sorted({r.governor for r in periodic}):
        pts = sorted((r.period_us, r) for r in periodic if r.governor == g)
        xs = [p for p, _ in pts]
        top.plot(xs, [value(r, "host_cpu_us_per_wakeup") for _, r in pts], marker="o", label=g)
        hits = [100 * r.guest_poll_hits / r.guest_poll_entries if r.guest_poll_entries else None
                for _, r in pts]
        bottom.plot(xs, hits, marker="o", label=g)
    top.set_ylabel("host CPU µs per wake-up")
    top.set_title("governors across the plateau (workload=periodic, vCPU 1)" + title_note)
    top.legend()
    top.grid(True, alpha=0.3)
    bottom.set_ylabel("guest poll hits, % of polls")
    bottom.set_xlabel("period µs")
    bottom.set_ylim(-5, 105)
    bottom.grid(True, alpha=0.3)
    save(fig, path, plt, note)


def neighbours(rows, path, plt, note=""):
    """The neighbour's throughput against the guest's round trip: a point per polling
    configuration, a marker per neighbour case (run name after the '.')."""
    fig, ax = plt.subplots(figsize=(7, 5))
    cases = {}
    for r in rows:
        if r.ok and value(r, "neighbour_ops_per_s") is not None and value(r, "rtt_p50_us"):
            cases.setdefault(r.name.split(".", 1)[-1], []).append(r)
    for (case, rs), marker in zip(sorted(cases.items()), "osD^v<>"):
        ax.scatter([r.rtt_p50_us for r in rs], [r.neighbour_ops_per_s / 1e6 for r in rs],
                   marker=marker, label=case)
        for r in rs:
            ax.annotate(r.config, (r.rtt_p50_us, r.neighbour_ops_per_s / 1e6), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("guest pingpong round trip p50 (µs)")
    ax.set_ylabel("neighbour throughput (M loops/s over the window)")
    ax.set_title("what polling costs the neighbour vs what it gives the guest")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path, plt, note)


# matrix id -> [(file name, draw(rows, path, plt, note=plots.note_of(meta)))]
PLOTS = {
    "seed000": [("seed000_latency.png", seed000_latency), ("seed000_idle_cpu.png", idle_cpu)],
    "seed002": [("seed002_latency.png", relative_latency)],
    "seed003": [("seed003_cpu_vs_period.png", seed003)],
    "seed004": [("seed004_poll_success.png", seed004),
                ("seed004_window_over_time.png", seed004_trace)],
    "governors": [("governors_cpu_vs_period.png", governors)],
    "neighbours": [("neighbours_throughput_vs_rtt.png", neighbours)],
}
