"""From raw run records (runner.py) to what a person reads: runs.csv, one markdown file per
seed laid out like the seed's own table, and PNG plots.

Everything here is a pure function of the records and the invocation's meta data, so the
tests feed it canned records and `tools/bench --report DIR` rebuilds a folder's reports
without booting anything. Figures come from KVM's counters over the measured window (host)
and the guest's own `cpu`/`result` records; repeats of a run are combined by median.
"""
import csv
import os
import statistics
import sys

from . import results

NA_TCG = "n/a (TCG)"
# The accuracy check: a run is flagged when the host's halt exits and the guest's HLT count
# differ by more than both of these (a few halts always fall between a guest snapshot and
# the host's read at a marker; vCPUs other than 0 keep halting while CPU 0 holds it).
ACCURACY_REL, ACCURACY_ABS = 0.05, 20

COLUMNS = [
    "matrix", "config", "name", "repeat", "status", "reason", "accel", "workload", "smp",
    "halt_poll_ns", "halt_poll_scope", "host_grow", "host_grow_start", "host_shrink",
    "guest_idle", "hostpoll", "msr", "guest_halt_poll_ns", "hz", "period_us", "cpus",
    "workload_vcpus",
    "guest_hlt", "guest_ipi_sent", "guest_ipi_avoided", "guest_poll_hits",
    "host_halt_exits", "host_attempted_poll", "host_successful_poll", "host_poll_invalid",
    "host_halt_wakeup", "poll_success_pct", "host_cpu_pct", "host_cpu_pct_vcpus",
    "host_poll_pct", "halt_exits_per_s", "host_exits", "host_insn_emulation",
    "hlt_diff", "hlt_diff_pct", "accuracy_flag",
    "other_load", "other_load_window", "steal_pct", "loadavg_1m",
    "window_ms", "iters", "rtt_p50_us", "rtt_p90_us", "rtt_p99_us", "rt_per_s",
    "late_p50_us", "late_p99_us", "achieved_period_us", "wakes", "interval_mean_us",
    "lap_p50_us", "hop_p50_us", "read_ms_max", "sample_ms_max", "late_samples", "seconds",
]
# Columns that are measurements (combined over repeats); the rest identify the run.
MEASURED = COLUMNS[COLUMNS.index("guest_hlt"):]
HOST_KVM = ("host_halt_exits", "host_attempted_poll", "host_successful_poll",
            "host_poll_invalid", "host_halt_wakeup", "poll_success_pct", "host_poll_pct",
            "halt_exits_per_s", "host_exits", "host_insn_emulation", "hlt_diff",
            "hlt_diff_pct", "accuracy_flag")


# --- one record -> one row -------------------------------------------------------------------

def _ikeys(d):
    """JSON turns the per-vCPU keys into strings; the figures want ints."""
    return {int(k): v for k, v in (d or {}).items()}


def _us(ns):
    return None if ns is None else round(ns / 1000, 1)


def _mean(values):
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), 2) if values else None


def workload_vcpus(workload, smp, cpus_mask):
    """The vCPUs whose host figures describe the workload: those in cpus= (all for 0). For
    workload=idle on several vCPUs, vCPU 0 is left out: it spins window_hold at each marker
    for the host's read, which an idle vCPU would not do."""
    cpus = [c for c in range(smp) if not cpus_mask or (cpus_mask >> c) & 1]
    if workload == "idle" and smp > 1 and not cpus_mask:
        cpus = [c for c in cpus if c != 0]
    return cpus


def _time_us(text):
    """A guest time knob as µs ("250us" -> 250.0); None if absent."""
    if text is None:
        return None
    units = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    for unit in ("ns", "us", "ms", "s"):
        if text.endswith(unit) and text[:-len(unit)].isdigit():
            return float(text[:-len(unit)]) * units[unit]
    return float(text) / 1000 if text.isdigit() else None


def _identity(rec):
    """The columns known without booting: what the matrix asked for."""
    hp, params = rec["halt_poll"], rec.get("host_params") or {}
    wanted, values = params.get("wanted") or {}, params.get("values") or {}
    knobs = rec.get("guest_knobs") or {}
    row = {k: rec.get(k) for k in ("matrix", "config", "name", "repeat", "status", "reason",
                                   "accel", "workload", "smp")}
    row["halt_poll_scope"] = hp["scope"]
    row["halt_poll_ns"] = hp["ns"] if hp["scope"] != "host" else values.get("halt_poll_ns")
    for col, param in (("host_grow", "halt_poll_ns_grow"),
                       ("host_grow_start", "halt_poll_ns_grow_start"),
                       ("host_shrink", "halt_poll_ns_shrink")):
        row[col] = wanted.get(param, values.get(param))
    row["guest_idle"] = knobs.get("idle")
    row["hostpoll"] = knobs.get("hostpoll")
    row["guest_halt_poll_ns"] = knobs.get("haltpoll.guest_halt_poll_ns")
    row["hz"] = int(knobs["hz"]) if "hz" in knobs else None
    row["period_us"] = _time_us(knobs.get("period"))
    row["cpus"] = knobs.get("cpus", "0")
    row["seconds"] = (rec.get("qemu") or {}).get("seconds")
    return row


def summarize(rec):
    """One flat row (the CSV's) from a raw record: identity, the guest's counters next to
    the host's deltas over the window, derived figures, the accuracy check, other load."""
    row = _identity(rec)
    if rec["status"] != "ok":
        return row
    run = results.parse_run(rec["serial"])
    cfg = run.config
    row.update(guest_idle=run.idle.get("policy"), msr=str(run.idle.get("msr")),
               hostpoll=cfg.get("hostpoll"), hz=int(cfg.get("hz", 250)),
               guest_halt_poll_ns=cfg.get("haltpoll.guest_halt_poll_ns"),
               period_us=_time_us(cfg.get("period")) if rec["workload"] == "periodic"
               else row["period_us"], cpus=cfg.get("cpus", "0"))
    vcpus = workload_vcpus(rec["workload"], rec["smp"], int(row["cpus"], 0))
    row["workload_vcpus"] = " ".join(map(str, vcpus))
    for col, counter in (("guest_hlt", "hlt"), ("guest_ipi_sent", "ipi_sent"),
                         ("guest_ipi_avoided", "ipi_avoided"), ("guest_poll_hits", "poll_hits")):
        row[col] = run.total(counter)
    row.update(_host_figures(rec, vcpus))
    row.update(_accuracy(row))
    row.update(_load_figures(rec))
    row.update(_workload_metrics(run))
    return row


def _host_figures(rec, vcpus):
    """KVM's counters summed over the vCPUs, and per-vCPU figures averaged over the
    workload's vCPUs. Under TCG there are no KVM counters: those columns say so."""
    host = rec["host"]
    delta = host["delta"]
    el = delta["elapsed_ns"]
    stats, cpu_ns = _ikeys(delta["stats"]), _ikeys(delta["thread_cpu_ns"])
    out = {"host_cpu_pct": _mean(100 * cpu_ns[c] / el for c in vcpus if c in cpu_ns),
           "host_cpu_pct_vcpus": "/".join(f"{100 * cpu_ns[c] / el:.1f}"
                                          for c in sorted(cpu_ns)),
           "sample_ms_max": max(host[s]["sample_ms"] for s in ("open", "close")),
           "read_ms_max": max(host[s].get("read_ms", host[s]["sample_ms"])
                              for s in ("open", "close")),
           "late_samples": sum(bool(host[s].get("late")) for s in ("open", "close"))}
    if rec["accel"] != "kvm" or not stats:
        out.update({k: NA_TCG for k in HOST_KVM})
        return out

    def total(name):
        return sum(s.get(name, 0) for s in stats.values())

    att, ok = total("halt_attempted_poll"), total("halt_successful_poll")
    out.update(host_halt_exits=total("halt_exits"), host_attempted_poll=att,
               host_successful_poll=ok, host_poll_invalid=total("halt_poll_invalid"),
               host_halt_wakeup=total("halt_wakeup"), host_exits=total("exits"),
               host_insn_emulation=total("insn_emulation"),
               poll_success_pct=round(100 * ok / att, 1) if att else None)
    out["host_poll_pct"] = _mean(
        100 * (stats[c].get("halt_poll_success_ns", 0) + stats[c].get("halt_poll_fail_ns", 0))
        / el for c in vcpus if c in stats)
    out["halt_exits_per_s"] = _mean(stats[c]["halt_exits"] * 1e9 / el
                                    for c in vcpus if c in stats)
    return out


GUEST_SIDE = ("hlt", "halts_aborted", "ipi_received", "timer_irqs", "poll_hits", "ipi_avoided")
HOST_SIDE = ("halt_exits", "halt_attempted_poll", "halt_successful_poll", "halt_wakeup",
             "halt_poll_invalid", "exits")


def side_by_side(rec):
    """Per vCPU, the guest's own counters next to KVM's deltas over the same window and the
    vCPU thread's host CPU %: the raw record's most readable view."""
    run = results.parse_run(rec["serial"])
    delta = rec["host"]["delta"]
    stats, cpu_ns = _ikeys(delta["stats"]), _ikeys(delta["thread_cpu_ns"])
    out = []
    for c in run.cpus:
        i = c["id"]
        host = {k: stats[i].get(k) for k in HOST_SIDE} if i in stats else NA_TCG
        out.append({"vcpu": i, "guest": {k: c.get(k) for k in GUEST_SIDE}, "host": host,
                    "host_cpu_pct": round(100 * cpu_ns[i] / delta["elapsed_ns"], 2)
                    if i in cpu_ns else None})
    return out


def _accuracy(row):
    """Guest HLT instructions vs host halt exits over the window, and whether to flag it."""
    exits = row.get("host_halt_exits")
    if not isinstance(exits, int):
        return {}
    diff = exits - row["guest_hlt"]
    pct = round(100 * diff / row["guest_hlt"], 1) if row["guest_hlt"] else None
    flag = abs(diff) > ACCURACY_ABS and abs(diff) > ACCURACY_REL * max(row["guest_hlt"], 1)
    return {"hlt_diff": diff, "hlt_diff_pct": pct, "accuracy_flag": flag}


def accuracy_text(row):
    """The accuracy check as one phrase for the progress output."""
    if row.get("host_halt_exits") == NA_TCG:
        return f"HLT guest {row.get('guest_hlt')} / host {NA_TCG}"
    if "hlt_diff" not in row:
        return "HLT check n/a"
    pct = "" if row["hlt_diff_pct"] is None else f", {row['hlt_diff_pct']:+.1f}%"
    text = (f"HLT guest {row['guest_hlt']} / host halt_exits {row['host_halt_exits']} "
            f"({row['hlt_diff']:+d}{pct})")
    if row["accuracy_flag"]:
        text += (f" LARGE DIFFERENCE (> {ACCURACY_REL:.0%} and > {ACCURACY_ABS} exits)")
    return text


def _load_figures(rec):
    load = rec.get("load") or {}
    run, window = load.get("run") or {}, load.get("window") or {}
    avg = load.get("loadavg") or [None]
    return {"other_load": run.get("other_pct"), "other_load_window": window.get("other_pct"),
            "steal_pct": run.get("steal_pct"), "loadavg_1m": avg[0]}


def _workload_metrics(run):
    """The result record's figures, times in µs."""
    r = run.result or {}
    out = {"window_ms": round(r["window_ns"] / 1e6, 1) if "window_ns" in r else None}
    for key in ("iters", "rt_per_s", "wakes"):
        if key in r:
            out[key] = r[key]
    for key in ("rtt_p50", "rtt_p90", "rtt_p99", "late_p50", "late_p99", "achieved_period",
                "interval_mean", "lap_p50", "hop_p50"):
        if f"{key}_ns" in r:
            out[f"{key}_us"] = _us(r[f"{key}_ns"])
    return out


# --- repeats ---------------------------------------------------------------------------------

def aggregate(rows):
    """One row per (matrix, run name), in first-seen order: the median of each measurement
    over the repeats that succeeded; `repeat` becomes how many did."""
    groups = {}
    for r in rows:
        groups.setdefault((r["matrix"], r["name"]), []).append(r)
    out = []
    for members in groups.values():
        ok = [r for r in members if r["status"] == "ok"]
        if not ok:
            out.append(dict(members[0]))
            continue
        merged = dict(ok[0])
        merged["repeat"] = len(ok)
        for key in MEASURED:
            values = [r.get(key) for r in ok]
            if all(isinstance(v, bool) for v in values):
                merged[key] = any(values)
            elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                merged[key] = statistics.median(values)
        out.append(merged)
    return out


# --- CSV -------------------------------------------------------------------------------------

def write_csv(rows, path):
    """runs.csv: one row per boot, COLUMNS in order (a not-run row has its reason)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in COLUMNS})


# --- markdown helpers ------------------------------------------------------------------------

def fmt(value, digits=1):
    """A table cell: numbers rounded, None as an em dash, text as is."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def ns_text(ns):
    """A time in ns the way people say it: 200000 -> "200 µs", 10000000 -> "10 ms"."""
    if not isinstance(ns, int) or isinstance(ns, bool):
        return fmt(ns)
    for unit, scale in (("s", 10 ** 9), ("ms", 10 ** 6), ("µs", 10 ** 3)):
        if ns >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns} ns"


def cell(row, key, digits=1):
    """A cell for one run: its value, or why there is none."""
    if row is None:
        return "—"
    if row["status"] == "not run":
        return f"not run: {row['reason']}"
    if row["status"] != "ok":
        return "failed"
    return fmt(row.get(key), digits)


def md_table(header, lines):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
    return "\n".join(out)


def _ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def _find(rows, **want):
    for r in rows:
        if all(r.get(k) == v for k, v in want.items()):
            return r
    return None


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def header(title, meta, seed_table):
    """Title, where the numbers come from, and the seed's own table for comparison."""
    mode = "quick (reduced) matrix" if meta.get("quick") else "full matrix"
    lines = [f"# {title}", "",
             f"Results folder `{meta.get('results', '?')}` ({mode}, {meta.get('accel', '?')}, "
             f"started {meta.get('started', '?')}; {meta.get('host_cpus', '?')} host CPUs). "
             f"Host: {meta.get('host_params_note', '?')}.", ""]
    if meta.get("accel") == "tcg":
        lines += ["Run under TCG: there are no KVM counters and no host halt polling, so the "
                  f"host columns say {NA_TCG}.", ""]
    if seed_table:
        lines += ["The seed's own table (real hardware):", "", "```", seed_table.strip("\n"),
                  "```", ""]
    return lines


def conditions(rows):
    """The run conditions under every table: other load, accuracy, sample latency."""
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return ["No run of this matrix was made."]
    other = [r["other_load"] for r in ok if _num(r.get("other_load")) is not None]
    flagged = [r["name"] for r in ok if r.get("accuracy_flag") is True]
    diffs = [r for r in ok if _num(r.get("hlt_diff")) is not None]
    sample = [r["sample_ms_max"] for r in ok if _num(r.get("sample_ms_max")) is not None]
    reads = [r["read_ms_max"] for r in ok if _num(r.get("read_ms_max")) is not None]
    late = [r["name"] for r in ok if _num(r.get("late_samples"))]
    lines = []
    if other:
        lines.append(f"- Other load on the host during the runs (% of all host CPUs, not "
                     f"counting QEMU and the harness): median {statistics.median(other):.1f}, "
                     f"max {max(other):.1f}; load average at the end of the runs "
                     f"{min(r['loadavg_1m'] for r in ok):.2f}–"
                     f"{max(r['loadavg_1m'] for r in ok):.2f}.")
    if diffs:
        worst = max(diffs, key=lambda r: abs(r["hlt_diff"]))
        big = [r for r in diffs if abs(r["hlt_diff"]) > ACCURACY_ABS]
        rel = (f"largest relative difference among those above {ACCURACY_ABS} exits "
               f"{max(abs(r['hlt_diff_pct']) for r in big):.1f}%" if big
               else f"no run differs by more than {ACCURACY_ABS} exits")
        lines.append(f"- Accuracy check (guest HLT count vs host halt_exits over the window): "
                     f"largest difference {worst['hlt_diff']:+.0f} exits ({worst['name']}, "
                     f"{worst['guest_hlt']:.0f} HLT); {rel}; "
                     + (f"flagged: {', '.join(flagged)}." if flagged else "none flagged "
                        f"(> {ACCURACY_REL:.0%} and > {ACCURACY_ABS} exits)."))
    if sample:
        lines.append(f"- The host's read of KVM's counters took at most {max(reads):.1f} ms and "
                     f"ended at most {max(sample):.1f} ms after its marker arrived (at the open "
                     "marker it starts 40% into the guest's window_hold on purpose); "
                     + (f"after the hold in: {', '.join(late)}." if late
                        else "always within the hold."))
    not_run = [r for r in rows if r["status"] == "not run"]
    failed = [r for r in rows if r["status"] == "failed"]
    if not_run:
        lines.append("- Not run: " + "; ".join(f"{r['name']} ({r['reason']})" for r in not_run)
                     + ".")
    if failed:
        lines.append("- Failed: " + "; ".join(f"{r['name']} ({r['reason']})" for r in failed)
                     + ".")
    return lines


def detail_table(rows):
    """Every run of a matrix with the host's counters next to the guest's."""
    head = ["run", "guest idle", "MSR", "halt_poll_ns", "shrink", "guest HLT",
            "host halt exits", "attempted polls", "successful %", "host CPU %/vCPU",
            "poll %", "halt exits/s/vCPU", "metric", "other load %"]
    lines = []
    for r in rows:
        if r["status"] != "ok":
            lines.append([r["name"], cell(r, "guest_idle")] + ["—"] * (len(head) - 2))
            continue
        lines.append([r["name"], fmt(r.get("guest_idle")), fmt(r.get("msr")),
                      fmt(r.get("halt_poll_ns")), fmt(r.get("host_shrink")),
                      fmt(r.get("guest_hlt"), 0),
                      f"{fmt(r.get('host_halt_exits'), 0)} ({fmt(r.get('hlt_diff'), 0)})"
                      if _num(r.get("hlt_diff")) is not None else fmt(r.get("host_halt_exits")),
                      fmt(r.get("host_attempted_poll"), 0), fmt(r.get("poll_success_pct")),
                      fmt(r.get("host_cpu_pct")), fmt(r.get("host_poll_pct")),
                      fmt(r.get("halt_exits_per_s"), 0), metric_text(r),
                      fmt(r.get("other_load"))])
    return md_table(head, lines)


def metric_text(r):
    """The workload's headline figure, with its name."""
    w = r.get("workload")
    if w == "pingpong" and r.get("rtt_p50_us") is not None:
        return f"RTT p50 {fmt(r['rtt_p50_us'], 0)} µs"
    if w == "periodic" and r.get("late_p50_us") is not None:
        return (f"period {fmt(r.get('achieved_period_us'), 0)} µs, late p50 "
                f"{fmt(r['late_p50_us'], 0)} µs")
    if w == "random" and r.get("late_p50_us") is not None:
        return f"late p50 {fmt(r['late_p50_us'], 0)} µs"
    if w == "pipeline" and r.get("lap_p50_us") is not None:
        return f"lap p50 {fmt(r['lap_p50_us'], 0)} µs"
    return "—"


# --- the seeds' tables -----------------------------------------------------------------------

SEED000_TABLE = """\
                        no-poll      always-poll    dynamic-poll
-----------------------------------------------------------------------
Idle (nohz) vCPU %c0     0.15%        0.3%            0.2%
Idle (250HZ) vCPU %c0    1.1%         4.6%~14%        1.2%
TCP_RR latency           34us         27us            26.7us"""

SEED002_TABLE = """\
host                                        --> 31.33
halt_poll_ns=300000 / no guest busy spin    --> 33.40   (93.8%)
halt_poll_ns=0 / guest_halt_poll_ns=300000  --> 32.73   (95.7%)"""

SEED003_TABLE = """\
halt_poll_ns=200000: Average: 6  %sys 4.26  %guest 17.83  %idle 77.91
halt_poll_ns=400000: Average: 6  %sys 89.59  %guest 8.45  %idle 1.96
(a vCPU woken by its own timer just inside the poll window burns the host CPU)"""

SEED004_TABLE = """\
Android VM workload (Score)   Base      Shrink Enabled (value 2)    Delta
GeekBench Multi-core(CPU)     5754      5856                        2%
...
(with shrink enabled, most workloads show a higher % of successful polling)"""


def seed000(rows, meta):
    """Columns: the host polling configurations; rows: idle vCPU host CPU % tickless and at
    each tick rate, then the ping-pong round trip (the seed's TCP_RR)."""
    configs = _ordered(r["config"] for r in rows)
    lines = []
    idle_hz = sorted({r["hz"] for r in rows if r["workload"] == "idle" and r["hz"] is not None})
    for hz in idle_hz:
        label = "Idle (nohz) vCPU host CPU %" if hz == 0 else f"Idle ({hz}HZ) vCPU host CPU %"
        lines.append([label] + [cell(_find(rows, config=c, workload="idle", hz=hz),
                                     "host_cpu_pct", 2) for c in configs])
    rr_hz = _ordered(r["hz"] for r in rows if r["workload"] == "pingpong")
    for hz in rr_hz:
        label = "pingpong RTT p50, µs (TCP_RR latency)"
        if len(rr_hz) > 1:
            label += f" at hz={hz}"
        lines.append([label] + [cell(_find(rows, config=c, workload="pingpong", hz=hz),
                                     "rtt_p50_us", 0) for c in configs])
    desc = []
    for c in configs:
        r = _find(rows, config=c)
        scope = "per-VM" if r.get("halt_poll_scope") == "vm" else r.get("halt_poll_scope")
        desc.append(f"`{c}` = {scope} halt_poll_ns={fmt(r.get('halt_poll_ns'))} "
                    f"({ns_text(r.get('halt_poll_ns'))})")
    out = header("Seed 000: KVM dynamic halt-polling, reproduced on idlelab", meta,
                 SEED000_TABLE)
    out += [md_table([""] + configs, lines), "",
            "Configurations: " + "; ".join(desc) + ". Guest idle=halt throughout. "
            "\"vCPU host CPU %\" is the vCPU thread's CPU time over the window as % of one "
            "host CPU (the seed's %c0), for the vCPUs that only idle (vCPU 0 spins at each "
            "window marker for the host's read and is left out). \"always-poll\" polled a fixed "
            "window on every halt, a mode dynamic-polling KVM no longer has: a per-VM window "
            "longer than the guest's tick stands in for it, so the window grows to cover every "
            "tick (always-poll's upper bound).", "",
            "## Every run", "", detail_table(rows), ""]
    out += conditions(rows)
    return "\n".join(out) + "\n"


def _seed002_label(r):
    """The seed's row names: host window / guest window, with the MSR said out loud."""
    host = f"halt_poll_ns={fmt(r.get('halt_poll_ns'))}"
    if r.get("msr") == "0":
        host += " (MSR=0: host polling off)"
    guest = (f"guest_halt_poll_ns={r.get('guest_halt_poll_ns')}"
             if r.get("guest_idle") == "haltpoll" else "no guest busy spin")
    return f"{r['config']}: {host} / {guest}"


def _per_rt(r, key):
    if r.get(key) == NA_TCG:
        return NA_TCG
    n, v = _num(r.get("iters")), _num(r.get(key))
    return round(v / n, 2) if n and v is not None else None


def seed002(rows, meta):
    """Rows: the polling configurations; the round-trip time and its ratio to the reference
    (the seed compares to bare metal, which a VM cannot run: 'neither' stands in)."""
    ref = _find(rows, config="neither", status="ok") or next(
        (r for r in rows if r["status"] == "ok"), None)
    ref_rtt = _num(ref.get("rtt_p50_us")) if ref else None
    lines = []
    for r in rows:
        if r["status"] != "ok":
            lines.append([r["config"], cell(r, "rtt_p50_us")] + ["—"] * 7)
            continue
        rtt = _num(r.get("rtt_p50_us"))
        rel = f" ({100 * ref_rtt / rtt:.1f}%)" if ref_rtt and rtt else ""
        lines.append([_seed002_label(r), f"{fmt(rtt, 0)}{rel}", fmt(r.get("rtt_p99_us"), 0),
                      fmt(r.get("rt_per_s"), 0), fmt(r.get("host_cpu_pct")),
                      fmt(_per_rt(r, "host_halt_exits"), 2),
                      fmt(_per_rt(r, "host_successful_poll"), 2),
                      fmt(_per_rt(r, "guest_ipi_sent"), 2), fmt(r.get("other_load"))])
    head = ["configuration", f"RTT p50 µs (% of {ref['config'] if ref else '?'})", "RTT p99 µs",
            "round trips/s", "host CPU %/vCPU", "halt exits/RT", "host polls OK/RT",
            "IPIs sent/RT", "other load %"]
    out = header("Seed 002: host vs guest halt polling (cpuidle-haltpoll), reproduced on "
                 "idlelab", meta, SEED002_TABLE)
    out += [md_table(head, lines), "",
            "pingpong round trips between two vCPUs. The seed's reference row is the bare "
            "host; a guest cannot measure that, so the percentages are relative to "
            f"`{ref['config'] if ref else '?'}` (reference / value, as in the seed). "
            "`guest-poll` keeps the host window open: MSR_KVM_POLL_CONTROL=0 (hostpoll=auto) "
            "is what stops the host polling, which the attempted-polls column shows.", "",
            "## Every run", "", detail_table(rows), ""]
    out += conditions(rows)
    return "\n".join(out) + "\n"


def _windows(rows):
    return _ordered(r.get("halt_poll_ns") for r in rows)


def seed003(rows, meta):
    """Rows: the timer period; per host window: the vCPU's host CPU % and halt exits/s.
    Then the seed's mpstat view (poll / other / idle) at the period where the largest
    window costs most over no polling."""
    windows = _windows(rows)
    periods = sorted({r["period_us"] for r in rows if r.get("period_us") is not None})
    head = ["period µs", f"achieved µs (halt_poll_ns={fmt(windows[0]) if windows else '?'})"]
    for w in windows:
        head += [f"halt_poll_ns={fmt(w)}: host CPU %", "halt exits/s"]
    lines = []
    for p in periods:
        line = [fmt(p, 0), cell(_find(rows, period_us=p, halt_poll_ns=windows[0]),
                                "achieved_period_us", 0)]
        for w in windows:
            r = _find(rows, period_us=p, halt_poll_ns=w)
            line += [cell(r, "host_cpu_pct"), cell(r, "halt_exits_per_s", 0)]
        lines.append(line)
    out = header("Seed 003: halt polling on a vCPU woken by its own timer, reproduced on "
                 "idlelab", meta, SEED003_TABLE)
    out += [md_table(head, lines), ""]
    worst = _worst_period(rows, windows, periods)
    if worst is not None:
        mp = []
        for w in windows:
            r = _find(rows, period_us=worst, halt_poll_ns=w)
            if r is None or r["status"] != "ok" or _num(r.get("host_cpu_pct")) is None:
                continue
            poll = _num(r.get("host_poll_pct")) or 0.0
            mp.append([fmt(w), fmt(r["host_cpu_pct"], 2), fmt(poll, 2),
                       fmt(r["host_cpu_pct"] - poll, 2), fmt(100 - r["host_cpu_pct"], 2)])
        out += [f"The seed's mpstat view at period {fmt(worst, 0)} µs (one vCPU thread):", "",
                md_table(["halt_poll_ns", "CPU %", "%poll (≈ seed %sys)",
                          "%guest + exits", "%idle"], mp), ""]
    out += ["workload=periodic on vCPU 1 (cpus=0x2, hz=0, idle=halt); vCPU 0 only runs the "
            "window. Host CPU % is vCPU 1's thread over the window, %poll its "
            "halt_poll_success_ns + halt_poll_fail_ns. On this machine a guest wake-up costs "
            "about 0.5–1 ms of emulated ring 0, so the guest cannot sleep less than that: the "
            "pathology (the window covering the whole idle gap, so every halt is a successful "
            "poll that burns the CPU) appears at periods near work + window, about 1 ms here, "
            "not at the few hundred µs of hardware. That is why the sweep reaches 2 ms.", "",
            "## Every run", "", detail_table(rows), ""]
    out += conditions(rows)
    return "\n".join(out) + "\n"


def _worst_period(rows, windows, periods):
    """The period where the largest window's CPU exceeds no-polling's the most."""
    if len(windows) < 2:
        return None
    lo, hi = windows[0], windows[-1]
    best, gap = None, None
    for p in periods:
        a, b = _find(rows, period_us=p, halt_poll_ns=lo), _find(rows, period_us=p, halt_poll_ns=hi)
        if a and b and _num(a.get("host_cpu_pct")) is not None and \
                _num(b.get("host_cpu_pct")) is not None:
            g = b["host_cpu_pct"] - a["host_cpu_pct"]
            if gap is None or g > gap:
                best, gap = p, g
    return best


def seed004(rows, meta):
    """Columns as the seed's: Base (shrink 0), Shrink Enabled (value 2), Delta; rows: per
    workload, the successful-poll ratio, latency and host CPU."""
    shrinks = _ordered(r.get("host_shrink") for r in rows)
    base_v = 0 if 0 in shrinks else (shrinks[0] if shrinks else None)
    enabled_v = next((s for s in shrinks if s != base_v), None)
    lines = []
    for w in _ordered(r["workload"] for r in rows):
        lat_key, lat_name = (("rtt_p50_us", "RTT p50 µs") if w == "pingpong"
                             else ("late_p50_us", "timer lateness p50 µs"))
        base = _find(rows, workload=w, host_shrink=base_v)
        en = _find(rows, workload=w, host_shrink=enabled_v)
        for key, name, digits in (("poll_success_pct", "successful polls, % of attempted", 1),
                                  (lat_key, lat_name, 0), ("host_cpu_pct", "host CPU %/vCPU", 1),
                                  ("halt_exits_per_s", "halt exits/s/vCPU", 0)):
            lines.append([f"{w}: {name}", cell(base, key, digits), cell(en, key, digits),
                          _delta(base, en, key)])
    out = header("Seed 004: KVM halt_poll_ns_shrink 0 vs 2, reproduced on idlelab", meta,
                 SEED004_TABLE)
    out += [md_table(["workload: metric", f"Base (shrink={fmt(base_v)})",
                      f"Shrink Enabled (value {fmt(enabled_v)})", "Delta"], lines), "",
            "halt_poll_ns_shrink is a global kvm parameter with no per-VM override; where it is "
            "read-only the column that needs another value is reported as not run. Host window: "
            "per-VM halt_poll_ns (see the runs); guest idle=halt; random runs on vCPU 1 "
            "(exponential sleeps), pingpong on vCPUs 0 and 1.", "",
            "## Every run", "", detail_table(rows), ""]
    out += conditions(rows)
    return "\n".join(out) + "\n"


def _delta(a, b, key):
    """The seed's Delta column: relative change from Base, when both were measured."""
    if not a or not b or a["status"] != "ok" or b["status"] != "ok":
        return "n/a"
    x, y = _num(a.get(key)), _num(b.get(key))
    if x is None or y is None or x == 0:
        return "n/a"
    return f"{100 * (y - x) / x:+.0f}%"


def generic(mid, rows, meta):
    """A matrix that is not a seed: the per-run table."""
    out = header(f"Matrix {mid}", meta, None)
    out += [detail_table(rows), ""] + conditions(rows)
    return "\n".join(out) + "\n"


SEED_REPORTS = {"seed000": seed000, "seed002": seed002, "seed003": seed003, "seed004": seed004}


def markdown(mid, rows, meta):
    """The markdown for one matrix (rows already aggregated over repeats)."""
    fn = SEED_REPORTS.get(mid)
    return fn(rows, meta) if fn else generic(mid, rows, meta)


# --- plots -----------------------------------------------------------------------------------

def _pyplot():
    """matplotlib with the file-only Agg backend, or None (plots skipped, said once)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def _ok(rows):
    return [r for r in rows if r["status"] == "ok"]


def plot_seed003(rows, path, plt):
    """Host CPU % and halt exits/s of the periodic vCPU against the timer period."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    for w in _windows(rows):
        pts = sorted((r["period_us"], r) for r in _ok(rows) if r.get("halt_poll_ns") == w
                     and _num(r.get("host_cpu_pct")) is not None)
        if not pts:
            continue
        xs = [p for p, _ in pts]
        ax1.plot(xs, [r["host_cpu_pct"] for _, r in pts], marker="o", label=f"halt_poll_ns={w}")
        ax2.plot(xs, [_num(r.get("halt_exits_per_s")) for _, r in pts], marker="o",
                 label=f"halt_poll_ns={w}")
    ax1.set_ylabel("vCPU thread host CPU %")
    ax1.set_ylim(0, 105)
    ax1.set_title("seed 003: periodic timer wake-ups vs host halt polling")
    ax2.set_ylabel("halt exits / s")
    ax2.set_xlabel("guest timer period (µs)")
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _bars(ax, labels, values, errs=None, notes=None):
    xs = range(len(labels))
    ax.bar(xs, [v or 0 for v in values], yerr=errs, capsize=4, color="tab:blue")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=15, ha="right", fontsize=8)
    for x, v, note in zip(xs, values, notes or [None] * len(labels)):
        if note:
            ax.text(x, 0, note, ha="center", va="bottom", fontsize=7, rotation=90)
        elif v is not None:
            ax.text(x, v, f"{v:.0f}", ha="center", va="bottom", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)


def plot_latency(rows, path, plt, title):
    """Median round trip per configuration, whiskers up to p99 (seed 002 and 000)."""
    pp = [r for r in rows if r["workload"] == "pingpong"]
    labels = [r["config"] if len({x["hz"] for x in pp}) <= 1 else f"{r['config']} hz={r['hz']}"
              for r in pp]
    p50 = [_num(r.get("rtt_p50_us")) if r["status"] == "ok" else None for r in pp]
    p99 = [_num(r.get("rtt_p99_us")) if r["status"] == "ok" else None for r in pp]
    errs = [[0] * len(pp), [max(0, (b or 0) - (a or 0)) for a, b in zip(p50, p99)]]
    notes = [None if r["status"] == "ok" else r["status"] for r in pp]
    fig, ax = plt.subplots(figsize=(7, 4))
    _bars(ax, labels, p50, errs, notes)
    ax.set_ylabel("round trip µs (bar: p50, whisker: p99)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_idle_cpu(rows, path, plt):
    """Seed 000's idle rows: host CPU % of an idle vCPU per configuration and tick rate."""
    idle = [r for r in rows if r["workload"] == "idle"]
    labels = [f"{r['config']}\nhz={r['hz']}" for r in idle]
    vals = [_num(r.get("host_cpu_pct")) if r["status"] == "ok" else None for r in idle]
    fig, ax = plt.subplots(figsize=(7, 4))
    _bars(ax, labels, vals, notes=[None if r["status"] == "ok" else r["status"] for r in idle])
    ax.set_ylabel("idle vCPU thread host CPU %")
    ax.set_title("seed 000: idle vCPU cost per host polling configuration")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_seed004(rows, path, plt):
    """Successful host polls per attempted, per workload and shrink value."""
    labels, vals, notes = [], [], []
    for r in rows:
        labels.append(f"{r['workload']}\nshrink={r.get('host_shrink')}")
        ok = r["status"] == "ok" and _num(r.get("poll_success_pct")) is not None
        vals.append(r["poll_success_pct"] if ok else None)
        notes.append(None if ok else ("not run (read-only)" if r["status"] == "not run"
                                      else "n/a"))
    fig, ax = plt.subplots(figsize=(7, 4))
    _bars(ax, labels, vals, notes=notes)
    ax.set_ylabel("successful / attempted host polls, %")
    ax.set_ylim(0, 105)
    ax.set_title("seed 004: poll success ratio, halt_poll_ns_shrink 0 vs 2")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


PLOTS = {
    "seed000": [("seed000_latency.png", lambda r, p, plt: plot_latency(
        r, p, plt, "seed 000: pingpong round trip per host polling configuration")),
        ("seed000_idle_cpu.png", plot_idle_cpu)],
    "seed002": [("seed002_latency.png", lambda r, p, plt: plot_latency(
        r, p, plt, "seed 002: pingpong round trip, host vs guest polling"))],
    "seed003": [("seed003_cpu_vs_period.png", plot_seed003)],
    "seed004": [("seed004_poll_success.png", plot_seed004)],
}


# --- everything ------------------------------------------------------------------------------

def write_all(outdir, recs, meta):
    """runs.csv, one markdown per matrix and the plots; returns the paths written."""
    rows = [summarize(r) for r in recs]
    written = [os.path.join(outdir, "runs.csv")]
    write_csv(rows, written[0])
    by_matrix = {}
    for r in aggregate(rows):
        by_matrix.setdefault(r["matrix"], []).append(r)
    plt = _pyplot() if any(m in PLOTS for m in by_matrix) else None
    for mid, mrows in by_matrix.items():
        path = os.path.join(outdir, f"{mid}.md")
        with open(path, "w") as f:
            f.write(markdown(mid, mrows, meta))
        written.append(path)
        for name, fn in PLOTS.get(mid, []) if plt else []:
            fn(mrows, os.path.join(outdir, name), plt)
            written.append(os.path.join(outdir, name))
    if plt is None and any(m in PLOTS for m in by_matrix):
        written.append(f"(plots skipped: {sys.executable} cannot import matplotlib; "
                       "install python3-matplotlib)")
    return written


def console_summary(recs, meta, written):
    """What the terminal shows at the end: counts, the main table of each seed, the files."""
    rows = [summarize(r) for r in recs]
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "not run", "failed")}
    flagged = sum(r.get("accuracy_flag") is True for r in rows)
    out = [f"\n== idlelab bench: {counts['ok']} ok, {counts['not run']} not run, "
           f"{counts['failed']} failed; {flagged} accuracy flags; "
           f"{meta.get('seconds', '?')} s; {meta.get('results')}"]
    by_matrix = {}
    for r in aggregate(rows):
        by_matrix.setdefault(r["matrix"], []).append(r)
    for mid, mrows in by_matrix.items():
        out += ["", f"-- {mid}"] + _first_table(markdown(mid, mrows, meta))
    out += ["", "files:"] + [f"  {p}" for p in written]
    return "\n".join(out)


def _first_table(text):
    """The first markdown table in a text, as its lines (skipping quoted code blocks)."""
    lines, inside, code = [], False, False
    for ln in text.splitlines():
        if ln.startswith("```"):
            code = not code
            continue
        if code:
            continue
        if ln.startswith("|"):
            inside = True
            lines.append(ln)
        elif inside:
            break
    return lines
