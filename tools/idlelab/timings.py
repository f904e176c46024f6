"""What the tools take on each host (kvm, nested, tcg), learned from the benches made on this
machine: a boot's fixed cost beyond its warm-up and window, the cost table's boots, and the
nested host's start. The progress line's ETA and `tools/bench --list` estimate from them,
and say when a figure is still a guess (no bench has measured it on this host yet).

The figures live in build/host/bench-costs.json, the last KEEP of each kind per host; the
medians are used. The file is advice: one that cannot be read or written is as if empty."""
import json
import os
import statistics

from idlelab import TOP

FILE = os.path.join(TOP, "build", "host", "bench-costs.json")
KEEP = 20
# Until a bench has measured them here: a boot's fixed cost under this machine's kvm-pvm and
# TCG (about 1 s), on the nested host (2.6 s, docs/platform-notes.md), the nested host's start
# (7-8 s), the cost table's boots (bench=exits, and on KVM three pairs, each with a traced
# boot: 369 s on the nested host, 2026-12-07).
GUESS = {"kvm": {"boot_s": 1.0, "cost_table_s": 10.0},
         "tcg": {"boot_s": 1.0, "cost_table_s": 5.0},
         "nested": {"boot_s": 2.6, "cost_table_s": 300.0, "host_start_s": 8.0}}
KINDS = ("boot_s", "cost_table_s", "host_start_s")


def _load(path):
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def learn(host, kind, seconds, path=FILE):
    """Keeps one more measured figure of `kind` for `host` (written whole, renamed into
    place, so a reader never sees half of it); a file that cannot be written is skipped."""
    if kind not in KINDS or seconds is None or seconds < 0:
        return
    data = _load(path)
    values = data.setdefault(host, {}).setdefault(kind, [])
    values.append(round(float(seconds), 3))
    del values[:-KEEP]
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


def costs(host, path=FILE):
    """{kind: seconds} for the host, and the kinds that are guesses."""
    measured = _load(path).get(host, {})
    out, guessed = {}, []
    for kind, guess in GUESS.get(host, GUESS["kvm"]).items():
        values = [v for v in measured.get(kind, []) if isinstance(v, (int, float))]
        if values:
            out[kind] = statistics.median(values)
        else:
            out[kind], _ = guess, guessed.append(kind)
    return out, guessed


# What one window of several costs beyond its length and gap, until a bench has measured it
# (make bench-windows: ~0.2-0.3 s on the nested host, 2026-12-05).
WINDOW_OVERHEAD_S = 0.3


def run_s(run, boot_s, parse_time, gap_default="0"):
    """One boot of `run`: its fixed cost, its warm-up and its windows (each with its gap,
    window_gap= or `gap_default`, and what it costs beyond them, when there are several)."""
    warmup = parse_time(run.guest.get("warmup", "100ms"))
    n = run.windows.windows if getattr(run, "windows", None) is not None else 1
    if n == 1:
        return boot_s + (warmup + run.duration_ns) / 1e9
    gap = parse_time(run.guest.get("window_gap", gap_default))
    return boot_s + warmup / 1e9 + n * ((run.duration_ns + gap) / 1e9 + WINDOW_OVERHEAD_S)


def describe(host, guessed):
    """How sure an estimate is, in a few words."""
    if not guessed:
        return f"from the benches measured on this host ({host})"
    return (f"{', '.join(k.removesuffix('_s').replace('_', ' ') for k in guessed)} not yet "
            f"measured on this host ({host}): guessed")
