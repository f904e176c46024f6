"""A run's row: summarize() makes one boot's RunRow (derive/columns.py: runs.csv's columns)
from its raw record (bench/onerun.py), together with its per-vCPU side-by-side view, and
aggregate() combines a configuration's repeats; the tables and plots share the rows.

The guest's figures come from its own `cpu` and `result` records (guestrun.parse_run); every
KVM figure comes from kvmdelta.Delta, rebuilt from the record's host.delta, and is only
rounded here. A pure function of the record, so `tools/bench --report` can redo it."""
import statistics
from dataclasses import replace

from idlelab import LINUX_KERNELS
from idlelab.bench import matrixvalues
from idlelab.derive import guestrun, kvmtrace, latewake, tolerance
# runs.csv's columns, as the rows' users have always named them here
from idlelab.derive.columns import (  # noqa: F401
    COLUMNS, HOST_KVM, MEASURED, NA_TCG, PREDICTED, RunRow, csv_cells)
from idlelab.derive.kvmdelta import Delta
from idlelab.derive.records import is_number


def aggregate(rows):
    """One row per (matrix, run name), in first-seen order: the median of each measurement
    over the repeats that succeeded; `repeat` becomes how many did, and `spread` holds each
    numeric measurement's (lowest, highest) over them."""
    groups = {}
    for r in rows:
        groups.setdefault((r.matrix, r.name), []).append(r)
    out = []
    for members in groups.values():
        ok = [r for r in members if r.ok]
        if not ok:
            out.append(members[0])
            continue
        merged = {"repeat": len(ok), "spread": {}, "members": ok}
        for key in MEASURED:
            values = [getattr(r, key) for r in ok]
            if all(isinstance(v, bool) for v in values):
                merged[key] = any(values)      # flagged if any repeat was
            elif all(is_number(v) for v in values):
                merged[key] = statistics.median(values)
                merged["spread"][key] = (min(values), max(values))
        out.append(replace(ok[0], **merged))
    return out


def by_matrix(rows):
    """{matrix id: [row]} in first-seen order."""
    out = {}
    for r in rows:
        out.setdefault(r.matrix, []).append(r)
    return out


# --- From one raw record to its RunRow ----------------------------------------------------

GUEST_SIDE = ("hlt", "halts_aborted", "wakeups", "ipi_sent", "ipi_received", "timer_irqs",
              "poll_hits", "ipi_avoided", "poll_ns", "steal_ns", "polls_suspended",
              "shadow_breaks")
HOST_SIDE = ("halt_exits", "halt_attempted_poll", "halt_successful_poll", "halt_wakeup",
             "halt_poll_invalid", "exits")
TIME_UNITS_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
# The result record's times (ns) that become µs columns: "rtt_p50" -> rtt_p50_us.
RESULT_TIMES = ("rtt_p50", "rtt_p90", "rtt_p99", "rtt_max", "late_p50", "late_p99",
                "achieved_period", "interval_mean", "lap_p50", "hop_p50")
RESULT_COUNTS = ("iters", "rt_per_s", "wakes")
GUEST_TOTALS = (("guest_hlt", "hlt"), ("guest_ipi_sent", "ipi_sent"),
                ("guest_ipi_avoided", "ipi_avoided"), ("guest_poll_hits", "poll_hits"),
                ("guest_poll_entries", "poll_entries"), ("guest_wakeups", "wakeups"))


# Workloads that run nothing of their own (kernel/workloads/workload.c: workload=idle): only
# the tick and the controller's own sleep wake their CPUs, so the wake-ups the guest counts
# are the controller's, nothing to divide the workload's host CPU by.
WORKLOADS_WITHOUT_WAKEUPS = ("idle",)


def has_wakeups(workload):
    """Whether the workload wakes threads of its own: per-wake-up figures mean something."""
    return workload not in WORKLOADS_WITHOUT_WAKEUPS


def workload_vcpus(workload, smp, cpus_mask):
    """The vCPUs whose host figures describe the workload: those in cpus= (all for 0). For
    workload=idle on several vCPUs, vCPU 0 is left out: it spins window_hold at each marker
    for the host's read, which an idle vCPU would not do."""
    cpus = [c for c in range(smp) if not cpus_mask or (cpus_mask >> c) & 1]
    if workload == "idle" and smp > 1 and not cpus_mask:
        cpus = [c for c in cpus if c != 0]
    return cpus


def time_us(text):
    """A guest time knob as µs ("250us" -> 250.0); None if absent."""
    if text is None:
        return None
    for unit in ("ns", "us", "ms", "s"):
        if text.endswith(unit) and text[:-len(unit)].isdigit():
            return float(text[:-len(unit)]) * TIME_UNITS_US[unit]
    return float(text) / 1000 if text.isdigit() else None


def mean(values, digits=2):
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), digits) if values else None


def identity(rec):
    """The fields known without booting: what the matrix asked for."""
    hp, params = rec["halt_poll"], rec.get("host_params") or {}
    wanted, values = params.get("wanted") or {}, params.get("values") or {}
    knobs = rec.get("guest_knobs") or {}
    bw = rec.get("boot_window") or {}
    return dict(
        {k: rec.get(k) for k in ("matrix", "config", "name", "repeat", "status", "reason",
                                 "accel", "workload", "smp")},
        window=bw.get("window"), window_round=bw.get("round"), boot_run=bw.get("run"),
        halt_poll_scope=hp["scope"],
        halt_poll_ns=hp["ns"] if hp["scope"] != "host" else values.get("halt_poll_ns"),
        host_grow=wanted.get("halt_poll_ns_grow", values.get("halt_poll_ns_grow")),
        host_grow_start=wanted.get("halt_poll_ns_grow_start",
                                   values.get("halt_poll_ns_grow_start")),
        host_shrink=wanted.get("halt_poll_ns_shrink", values.get("halt_poll_ns_shrink")),
        guest_idle=knobs.get("idle"), hostpoll=knobs.get("hostpoll"),
        guest_halt_poll_ns=knobs.get("haltpoll.guest_halt_poll_ns"),
        hz=int(knobs["hz"]) if "hz" in knobs else None, period_us=time_us(knobs.get("period")),
        cpus=knobs.get("cpus", "0"), seconds=(rec.get("qemu") or {}).get("seconds"),
        stall=stall_setting(rec), neighbour=neighbour_setting(rec),
        pin="+".join(map(str, rec["pin"])) if rec.get("pin") else None,
        guest=rec.get("guest", "idlelab"), linux_kernel=linux_kernel(rec),
        **late_counts(rec))


def linux_kernel(rec):
    """The Linux guest's kernel the run asked for; a record from before linux_kernel= could
    only have booted Debian's. None for an idlelab guest."""
    if rec.get("guest", "idlelab") != "linux":
        return None
    return rec.get("linux_kernel") or LINUX_KERNELS[0]


def late_counts(rec):
    """The late_host, late_guest, lost_host and lost_guest columns of a record's attributed
    wake-ups (onerun: `late_wakeups`), all None when it has none."""
    events = rec.get("late_wakeups")
    if not events:
        return dict.fromkeys((latewake.LATE_HOST, latewake.LATE_GUEST,
                              latewake.LOST_HOST, latewake.LOST_GUEST))
    return latewake.summary(events)


def neighbour_setting(rec):
    """The neighbour= the matrix asked for, as written; None for none."""
    text = (rec.get("settings") or {}).get("neighbour")
    return None if text in (None, "none") else text


def stall_setting(rec):
    """The stall= the matrix asked for, as written; None for none."""
    text = (rec.get("settings") or {}).get("stall")
    return None if text in (None, "none") else text


def summarize(rec):
    """The RunRow of a raw record: identity, the guest's counters next to the host's deltas
    over the window, derived figures, the accuracy check, other load, workload metrics."""
    row = identity(rec)
    if rec["status"] != "ok":
        return RunRow(**row)
    run = guestrun.parse_run(rec["serial"])
    cfg = dict(run.config)
    # a window of a multi-window boot ran with the settings the host sent before it, over
    # the boot's config record (the guest printed them as `@idlelab settings window=K`)
    cfg.update(t.split("=", 1) for t in ((rec.get("boot_window") or {}).get("guest") or
                                         "").split())
    row.update(guest_idle=run.idle.get("policy"), governor=run.idle.get("governor"),
               msr=str(run.idle.get("msr")),
               hostpoll=cfg.get("hostpoll"), hz=int(cfg["hz"]) if "hz" in cfg else None,
               guest_halt_poll_ns=cfg.get("haltpoll.guest_halt_poll_ns"),
               period_us=time_us(cfg.get("period")) if rec["workload"] == "periodic"
               else row["period_us"], cpus=cfg.get("cpus", "0"),
               window_sync=int(cfg.get("window_sync", 0)))
    vcpus = workload_vcpus(rec["workload"], rec["smp"], int(row["cpus"], 0))
    row["workload_vcpus"] = " ".join(map(str, vcpus))
    row.update({col: run.total(counter) for col, counter in GUEST_TOTALS})
    row.update(host_figures(rec, vcpus))
    row["host_cpu_us_per_wakeup"] = cpu_per_wakeup(rec["workload"], row.get("host_cpu_pct"),
                                                   len(vcpus), run.window_ns,
                                                   row.get("guest_wakeups"))
    row.update(accuracy(rec))
    row.update(load_figures(rec))
    row.update(workload_metrics(run))
    row.update(fault_figures(rec))
    row.update(neighbour_figures(rec))
    row.update(steal_figures(run, vcpus))
    if run.cpus and all("takeovers" in c for c in run.cpus):   # (older kernels lack it)
        row["guest_takeovers"] = run.total("takeovers")
    if run.cpus and all("shadow_breaks" in c for c in run.cpus):   # (older kernels lack it)
        row["guest_shadow_breaks"] = run.total("shadow_breaks")
    row["host_run_delay_pct"] = run_delay_pct(rec, vcpus, run.window_ns)
    row.update(wake_placement(rec, vcpus))
    row.update(trace_figures(rec, vcpus, row.get("halt_poll_ns")))
    return RunRow(**row)


def trace_figures(rec, vcpus, max_ns):
    """The trace= counts over the window (kvmtrace.summary) and the trace itself, for the
    tables' snippets and plots; nothing for a run without a trace."""
    part = rec.get("trace") or {}
    if "events" not in part or not is_number(max_ns):
        return {}
    s = kvmtrace.summary(part, vcpus, max_ns)
    polled = [h[4] for h in kvmtrace.story(part)[1] if h[1] in vcpus]
    return {"trace_grow": s[kvmtrace.GROW], "trace_shrink": s[kvmtrace.SHRINK],
            "trace_reset": s[kvmtrace.RESET], "trace_poll_hit": s[kvmtrace.POLL_HIT],
            "trace_no_wait": s[kvmtrace.NO_WAIT],
            "trace_short_poll_miss": s["short_" + kvmtrace.POLL_MISS],
            "trace_short_no_poll": s["short_" + kvmtrace.NO_POLL],
            "trace_long_poll_miss": s["long_" + kvmtrace.POLL_MISS],
            "trace_long_no_poll": s["long_" + kvmtrace.NO_POLL],
            "trace_window_mean_ns": round(mean(polled)) if polled else None,
            "trace": part}


def steal_figures(run, vcpus):
    """Steal time as the guest read it (kvm-steal-time) over the window, and the idle
    entries haltpoll.steal_threshold= turned into halts. No steal figures where the guest
    had no kvm-steal-time (TCG): its steal_ns=0 there means "not available", not "none"."""
    out = {}
    if run.cpus and all("polls_suspended" in c for c in run.cpus):
        out["guest_polls_suspended"] = run.total("polls_suspended")
    if run.idle.get("steal_time") != "kvm":
        return out
    per = {c["id"]: c.get("steal_ns") for c in run.cpus}
    if not all(is_number(v) for v in per.values()):
        return out
    out["guest_steal_ms"] = round(sum(per.values()) / 1e6, 2)
    if run.window_ns:
        out["guest_steal_pct"] = mean(100 * per[c] / run.window_ns for c in vcpus if c in per)
    return out


def run_delay_pct(rec, vcpus, window_ns):
    """The workload vCPU threads' wait on a host run queue over the window, mean % of it."""
    delay = {str(k): v for k, v in (rec["host"].get("run_delay_ns") or {}).items()}
    if not window_ns:
        return None
    return mean(100 * delay[str(c)] / window_ns for c in vcpus if str(c) in delay) \
        if all(str(c) in delay for c in vcpus) else None


def wake_placement(rec, vcpus):
    """The workload vCPU threads' wake-ups over the window that the host's scheduler put on
    the waker's own CPU (% of their wake-ups), and their migrations; {} where the host has
    no schedstats (the counts are missing) or a vCPU's are."""
    wakes = {str(k): v for k, v in (rec["host"].get("wakes") or {}).items()}
    if not vcpus or not all(str(c) in wakes for c in vcpus):
        return {}
    got = [wakes[str(c)] for c in vcpus]
    total = sum(w["nr_wakeups"] for w in got)
    return {"host_wakes_local_pct": round(100 * sum(w["nr_wakeups_local"] for w in got)
                                          / total, 1) if total else None,
            "host_migrations": sum(w["nr_migrations"] for w in got)}


def neighbour_figures(rec):
    """The neighbour's throughput over the window, alone, and its slowdown (1 - with/alone)."""
    n = rec.get("neighbour") or {}
    w, a = n.get("window") or {}, n.get("alone") or {}
    out = {}
    if is_number(w.get("ops_per_s")):
        out.update(neighbour_ops_per_s=w["ops_per_s"], neighbour_cpu_pct=w.get("cpu_pct"))
    if is_number(a.get("ops_per_s")):
        out["neighbour_alone_ops_per_s"] = a["ops_per_s"]
        out["neighbour_alone_other_load"] = (a.get("load") or {}).get("other_pct")
    out["neighbour_slowdown"] = slowdown(w.get("ops_per_s"), a.get("ops_per_s"))
    return out


def slowdown(with_ops, alone_ops):
    """1 - with / alone, 3 decimals; None unless both are measured and alone > 0."""
    if not is_number(with_ops) or not is_number(alone_ops) or alone_ops <= 0:
        return None
    return round(1 - with_ops / alone_ops, 3)


def fault_figures(rec):
    """What the injected stall actually did (fault.Stall.result), in ms."""
    actual = (rec.get("fault") or {}).get("actual") or {}
    pick = {"stall_ms": "duration_ms", "stall_at_ms": "start_ms",
            "stall_thread_cpu_ms": "thread_cpu_during_ms"}
    return {col: round(actual[key], 1) for col, key in pick.items()
            if is_number(actual.get(key))}


def disturbance_text(row):
    """How a run was disturbed on purpose, as one phrase ("vCPU 1 stopped 301 ms at +200 ms
    (asked: 300 ms at +200 ms)"); None for an undisturbed run."""
    if row.stall is None:
        return None
    asked = matrixvalues.PARSERS["stall"](row.stall)
    want = f"{asked.duration_ns / 1e6:g} ms at +{asked.offset_ns / 1e6:g} ms"
    if not is_number(row.stall_ms):
        return f"vCPU {asked.vcpu} to be stopped {want} (not done)"
    return (f"vCPU {asked.vcpu} stopped {row.stall_ms:.0f} ms at +{row.stall_at_ms:.0f} ms "
            f"(asked: {want})")


def host_figures(rec, vcpus):
    """KVM's counters summed over the vCPUs, and per-vCPU figures averaged over the
    workload's vCPUs, all from kvmdelta.Delta. Under TCG there are no KVM counters: those
    fields say NA_TCG."""
    host = rec["host"]
    d = Delta.from_json(host["delta"])
    out = {"host_cpu_pct": mean(d.cpu_percent(c) for c in vcpus),
           "host_cpu_pct_vcpus": "/".join(f"{d.cpu_percent(c):.1f}"
                                          for c in sorted(d.per_thread_cpu_ns)),
           "sample_ms_max": max(host[s]["sample_ms"] for s in ("open", "close")),
           "read_ms_max": max(host[s].get("read_ms", host[s]["sample_ms"])
                              for s in ("open", "close")),
           "late_samples": sum(bool(host[s].get("late")) for s in ("open", "close")),
           **mpstat_figures(rec, vcpus)}
    if rec["accel"] != "kvm" or not d.per_vcpu_stats:
        out.update({k: NA_TCG for k in HOST_KVM})
        return out
    success = d.poll_success_percent()
    out.update(host_halt_exits=d.total("halt_exits"),
               host_attempted_poll=d.total("halt_attempted_poll"),
               host_successful_poll=d.total("halt_successful_poll"),
               host_poll_invalid=d.total("halt_poll_invalid"),
               host_halt_wakeup=d.total("halt_wakeup"), host_exits=d.total("exits"),
               host_insn_emulation=d.total("insn_emulation"),
               poll_success_pct=None if success is None else round(success, 1),
               host_poll_pct=mean(d.poll_percent(c) for c in vcpus
                                  if c in d.per_vcpu_stats),
               halt_exits_per_s=mean(d.halt_exits_per_s(c) for c in vcpus
                                     if c in d.per_vcpu_stats),
               host_poll_miss_us=poll_miss_us(d, vcpus))
    return out


def mpstat_figures(rec, vcpus):
    """The mpstat_* columns: the split of the host CPU of alone='s vCPU, else of the first
    workload vCPU's pin; {} unpinned or where the window has no split (JSON's keys are text)."""
    pin, alone = rec.get("pin"), (rec.get("alone") or {}).get("vcpu")
    if not pin:
        return {}
    vcpu = alone if alone is not None else min(vcpus, default=0)
    if vcpu >= len(pin):
        return {}
    cpu = pin[vcpu]
    split = (rec["host"].get("mpstat") or {})
    split = split.get(cpu, split.get(str(cpu)))
    if not split:
        return {"mpstat_cpu": cpu}
    return {"mpstat_cpu": cpu, "mpstat_usr_pct": split["usr"] + split["nice"],
            "mpstat_sys_pct": split["sys"], "mpstat_guest_pct": split["guest"] + split["gnice"],
            "mpstat_irq_pct": round(split["irq"] + split["soft"], 2),
            "mpstat_steal_pct": split["steal"],
            "mpstat_idle_pct": round(split["idle"] + split["iowait"], 2)}


def poll_miss_us(d, vcpus):
    """How long a poll that caught nothing lasted, µs, over the workload's vCPUs: the window,
    or less where KVM stopped early (another task wanted the CPU: single_task_running)."""
    stats = [d.per_vcpu_stats[c] for c in vcpus if c in d.per_vcpu_stats]
    missed = sum(s.get("halt_attempted_poll", 0) - s.get("halt_successful_poll", 0)
                 for s in stats)
    return round(sum(s.get("halt_poll_fail_ns", 0) for s in stats) / missed / 1000, 1) \
        if missed > 0 else None


def cpu_per_wakeup(workload, cpu_pct, nvcpus, window_ns, wakeups):
    """Host CPU the workload's vCPU threads burnt per guest wake-up (thread_wake call), µs:
    what one wake-up costs the host, polling and exits included. None without wake-ups, and
    for a workload that has none of its own (has_wakeups: the idle workload's one counted
    wake-up is the controller's, and its CPU over it no figure per wake-up)."""
    if not has_wakeups(workload) or not is_number(cpu_pct) or not wakeups or not window_ns:
        return None
    return round(cpu_pct / 100 * nvcpus * window_ns / 1000 / wakeups, 1)


def accuracy(rec):
    """Guest HLT instructions vs host halt exits over the window, per vCPU (tolerance.py):
    the summed difference, each vCPU's, and whether any vCPU is flagged. Nothing when the
    host has no count (TCG keeps its NA_TCG)."""
    pairs = [(v["guest"]["hlt"], v["host"]["halt_exits"]) for v in side_by_side(rec)
             if isinstance(v["host"], dict) and is_number(v["guest"].get("hlt"))
             and is_number(v["host"].get("halt_exits"))]
    if not pairs:
        return {}
    guest = sum(g for g, _ in pairs)
    diff = sum(h - g for g, h in pairs)
    return {"hlt_diff": diff,
            "hlt_diff_pct": round(100 * diff / guest, 1) if guest else None,
            "hlt_diff_vcpus": "/".join(f"{h - g:+d}" for g, h in pairs),
            "accuracy_flag": any(tolerance.hlt_mismatch(g, h) for g, h in pairs)}


def accuracy_text(row):
    """The accuracy check as one phrase for the progress output."""
    if row.host_halt_exits == NA_TCG:
        return f"HLT guest {row.guest_hlt} / host {NA_TCG}"
    if row.hlt_diff is None:
        return "HLT check n/a"
    pct = "" if row.hlt_diff_pct is None else f", {row.hlt_diff_pct:+.1f}%"
    text = (f"HLT guest {row.guest_hlt} / host halt_exits {row.host_halt_exits} "
            f"({row.hlt_diff:+d}{pct}; per vCPU {row.hlt_diff_vcpus})")
    if row.accuracy_flag:
        text += f" DIFFERENCE ({tolerance.describe()})"
    if row.guest_shadow_breaks:
        text += (f"; {row.guest_shadow_breaks} interrupts on a HLT inside STI's shadow "
                 f"(the host's fault; stepped past)")
    return text


def load_figures(rec):
    load = rec.get("load") or {}
    run, window = load.get("run") or {}, load.get("window") or {}
    avg = load.get("loadavg") or [None]
    return {"other_load": run.get("other_pct"), "other_load_window": window.get("other_pct"),
            "steal_pct": run.get("steal_pct"), "loadavg_1m": avg[0]}


def workload_metrics(run):
    """The result record's figures, times in µs."""
    r = run.result or {}
    out = {"window_ms": round(r["window_ns"] / 1e6, 1) if "window_ns" in r else None}
    out.update({key: r[key] for key in RESULT_COUNTS if key in r})
    out.update({f"{key}_us": round(r[f"{key}_ns"] / 1000, 1)
                for key in RESULT_TIMES if f"{key}_ns" in r})
    return out


def side_by_side(rec):
    """Per vCPU, the guest's own counters next to KVM's deltas over the same window and the
    vCPU thread's host CPU %: the raw record's most readable view."""
    run = guestrun.parse_run(rec["serial"])
    d = Delta.from_json(rec["host"]["delta"])
    out = []
    for c in run.cpus:
        i = c["id"]
        stats = d.per_vcpu_stats.get(i)
        cpu = d.cpu_percent(i)
        out.append({"vcpu": i, "guest": {k: c.get(k) for k in GUEST_SIDE},
                    "host": {k: stats.get(k) for k in HOST_SIDE} if stats is not None
                    else NA_TCG,
                    "host_cpu_pct": None if cpu is None else round(cpu, 2),
                    "host_thread_cpu_ns": d.per_thread_cpu_ns.get(i)})
    return out
