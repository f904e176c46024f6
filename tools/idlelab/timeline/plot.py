"""A guest timeline drawn as a PNG (matplotlib, Agg): per CPU a horizontal bar coloured by
state, markers for the wakes and IPIs, arrows from each IPI to its arrival and dotted lines
from a wake to its target's noticing it; under each CPU its host row when the overlay is
aligned. matplotlib is imported only when drawing (plots.pyplot)."""
from idlelab.report.plots import pyplot
from idlelab.timeline.spans import instants, links, spans

STATE_COLOURS = {"run": "#2e7d32", "waking": "#9ccc65", "idle loop": "#b0b0b0",
                 "poll": "#ef6c00", "halt": "#1565c0", "unknown": "#f2f2f2",
                 "host: polled": "#c62828", "host: blocked": "#7e57c2"}
MARKS = {  # instant kind -> (marker, colour, where on the bar: +1 top, -1 bottom, label)
    "wake": ("v", "black", 1, "wake issued"),
    "ipi_sent": ("^", "#d50000", 1, "IPI sent"),
    "ipi_avoided": ("D", "#00c853", 1, "IPI avoided (target polling)"),
    "ipi_pending": ("s", "#757575", 1, "no IPI (one in flight)"),
    "ipi_received": ("x", "#d50000", -1, "IPI received"),
    "sleep": ("|", "#6a1b9a", -1, "sleep called"),
}
HEIGHT = 0.7
ZOOM_LINKS = 6      # wakes noticed in the close-up


def _rows(tl, overlay):
    """{("guest"|"host", cpu): y}, CPU 0 at the top."""
    rows, y = {}, 0
    for c in range(len(tl.cpus)):
        rows[("guest", c)] = y
        y -= 1
        if overlay is not None and overlay.aligned:
            rows[("host", c)] = y + 0.15
            y -= 0.7
        y -= 0.3
    return rows


def _bars(ax, tl, span_list, y, height, used):
    by_state = {}
    for s in span_list:
        by_state.setdefault(s.state, []).append((tl.us(s.start), tl.us(s.end) - tl.us(s.start)))
    for state, xs in by_state.items():
        ax.broken_barh(xs, (y - height / 2, height), facecolors=STATE_COLOURS.get(state, "pink"),
                       label=None if state in used else state, linewidth=0)
        used.add(state)


def _not_recorded(ax, tl, c, y, used):
    end = tl.end_of(c)
    if end < tl.t_end:
        ax.broken_barh([(tl.us(end), tl.us(tl.t_end) - tl.us(end))], (y - HEIGHT / 2, HEIGHT),
                       facecolors="white", edgecolor="#bbbbbb", hatch="///", linewidth=0.5,
                       label=None if "nr" in used else "not recorded (log full)")
        used.add("nr")


def _panel(ax, tl, overlay, rows, the_links, xlim, used):
    """One picture of the rows over xlim (µs)."""
    for c in range(len(tl.cpus)):
        y = rows[("guest", c)]
        _bars(ax, tl, spans(tl, c), y, HEIGHT, used)
        _not_recorded(ax, tl, c, y, used)
        for kind, (m, colour, side, label) in MARKS.items():
            xs = [tl.us(i.tsc) for i in instants(tl, c) if i.kind == kind]
            if xs:
                ax.plot(xs, [y + side * (HEIGHT / 2 + 0.08)] * len(xs), m, color=colour,
                        markersize=5, linestyle="none", label=None if kind in used else label)
                used.add(kind)
        if ("host", c) in rows:
            hy = rows[("host", c)]
            _bars(ax, tl, [s for s in overlay.spans if s.cpu == c], hy, HEIGHT * 0.6, used)
            xs = [tl.us(i.tsc) for i in overlay.instants if i.cpu == c]
            if xs:
                ax.plot(xs, [hy] * len(xs), "|", color="black", markersize=9,
                        label=None if "hi" in used else "host: halt_poll_ns change / exit")
                used.add("hi")
    for ln in the_links:
        x0, x1 = tl.us(ln.src_tsc), tl.us(ln.dst_tsc)
        y0, y1 = rows[("guest", ln.src_cpu)], rows[("guest", ln.dst_cpu)]
        if ln.kind == "ipi":
            ax.annotate("", xy=(x1, y1 - HEIGHT / 2), xytext=(x0, y0 + HEIGHT / 2),
                        arrowprops=dict(arrowstyle="->", color="#d50000", lw=0.8))
        else:
            ax.plot([x0, x1], [y0, y1], ":", color="#424242", lw=0.8,
                    label=None if "wl" in used else "wake -> noticed")
            used.add("wl")
    labels = [(y, f"CPU {c}") for (side, c), y in rows.items() if side == "guest"]
    labels += [(y, f"vCPU {c} (host)") for (side, c), y in rows.items() if side == "host"]
    ax.set_yticks([y for y, _ in labels], [t for _, t in labels])
    ax.set_xlim(*xlim)
    ax.set_ylim(min(rows.values()) - 0.9, 1.0)
    ax.grid(axis="x", color="#e0e0e0", lw=0.5)


def zoom_end(tl, the_links):
    """The end (µs) of a close-up on the first ZOOM_LINKS wakes noticed, or None when the
    whole stretch shows few enough for one picture."""
    wakes = sorted(ln.dst_tsc for ln in the_links if ln.kind == "wake")
    if len(wakes) <= 2 * ZOOM_LINKS:
        return None
    return tl.us(wakes[ZOOM_LINKS - 1]) * 1.05


def draw(path, tl, overlay=None, title="", notes=()):
    """Writes the PNG; returns False (writing nothing) if matplotlib is missing. The whole
    recorded stretch, and under it a close-up of its first wakes when it holds many."""
    plt = pyplot()
    if plt is None:
        return False
    rows = _rows(tl, overlay)
    the_links = links(tl)
    right = max(tl.us(tl.end_of(c)) for c in range(len(tl.cpus)))
    left = min([0.0] + [tl.us(log.events[0].tsc) for log in tl.cpus if log.events])
    zoom = zoom_end(tl, the_links)
    panels = [(left, max(right * 1.01, left + 1e-3))] + ([(left, zoom)] if zoom else [])
    height = 1.1 * len(rows) + 0.6
    fig, axes = plt.subplots(len(panels), 1, figsize=(16, height * len(panels) + 2.4),
                             squeeze=False)
    used = set()
    for ax, xlim in zip(axes[:, 0], panels):
        _panel(ax, tl, overlay, rows, the_links, xlim, used)
    axes[0, 0].set_title(title, fontsize=10, loc="left")
    if zoom:
        axes[1, 0].set_title(f"close-up: the first {ZOOM_LINKS} wakes noticed", fontsize=9,
                             loc="left")
    axes[-1, 0].set_xlabel("µs since the measurement window opened (guest TSC)")
    handles, names = axes[0, 0].get_legend_handles_labels()
    for ax in axes[1:, 0]:
        h, n = ax.get_legend_handles_labels()
        handles, names = handles + h, names + n
    inch = 1 / fig.get_figheight()          # the bottom strip is laid out in inches
    notes_top = 0.08 * inch + 0.13 * inch * len(notes)
    fig.legend(handles, names, loc="lower center", bbox_to_anchor=(0.5, notes_top), ncol=7,
               fontsize=8, frameon=False)
    if notes:
        fig.text(0.01, 0.05 * inch, "\n".join(notes), fontsize=7, va="bottom", color="#424242")
    fig.tight_layout(rect=(0, notes_top + 0.45 * inch, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
