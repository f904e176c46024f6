"""The experiment runner behind `tools/bench`: boots one QEMU per matrix run, reads KVM's
per-vCPU counters at the guest's window markers, and keeps everything as one raw record.

One run, end to end:
  1. Decide the host polling configuration. A per-VM window (`halt_poll_ns=<time>`) goes
     through the preload library (haltpollcap) and touches no other VM. Global kvm
     parameters are changed only when a run needs a value the host does not already have,
     and only through hostparams.override (journal, restore on every exit). Where they are
     read-only such a run is recorded as "not run: <reason>", never faked.
  2. Boot the guest (qemu.run, the one QEMU command line) with a QMP socket and
     `window_hold=`: at each `@idlelab window` marker CPU 0 spins without halting while we
     read query-stats and the vCPU threads' CPU time, so the host's sample lands at the
     guest's own snapshot.
  3. Around the run and the window, sample the machine's busy time (wall time minus the idle
     and steal of /proc/stat) and subtract what QEMU and this process used: the rest is
     other load, recorded beside every result.

A raw record is plain JSON-ready data; report.summarize() turns it into a CSV row and the
seed tables. Nothing here formats tables.
"""
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from . import haltpollcap, hostparams, kvmstats, matrix, qemu, qmp, records, report

TOP = qemu.TOP
MATRIX_DIR = os.path.join(TOP, "tools", "matrices")
QUICK_DIR = os.path.join(MATRIX_DIR, "quick")
SEEDS = ("000", "002", "003", "004")
RESULTS_DIR = os.path.join(TOP, "results")
JOURNAL = os.path.join(TOP, "build", "host", "kvm-params.journal")
WINDOW_HOLD = "20ms"
# KVM's per-vCPU statistics the issue asks for (plus insn_emulation: on this nested KVM the
# emulated ring-0 instructions are counted there, not in `exits`).
STATS = ("halt_exits", "halt_attempted_poll", "halt_successful_poll", "halt_poll_invalid",
         "halt_wakeup", "halt_poll_success_ns", "halt_poll_fail_ns", "halt_wait_ns", "exits",
         "irq_exits", "insn_emulation", "halt_poll_success_hist", "halt_poll_fail_hist",
         "halt_wait_hist")
RUN_OVERHEAD_S = 1.0     # boot + table printing + exit here, before any run is measured
# Where in the guest's hold the host reads at the *open* marker (fraction of window_hold).
# CPU 0 cannot halt during the hold, but the other vCPUs can, and the guest takes its own
# snapshot only when the hold ends: reading at once would count their halts of the whole
# hold into the host's window. Reading part-way in shrinks that gap and still leaves time
# for the read (2.5-11 ms measured here, against a 20 ms hold). At the close marker the
# guest has already taken its snapshot, so the host reads at once.
OPEN_READ_AT = 0.4
EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, EXIT_NO_KVM = 0, 1, 2, 3


def say(msg):
    """Progress and notes go to stderr so stdout stays the summary."""
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# --- matrices --------------------------------------------------------------------------------

def builtin_matrices(quick=False, seeds=SEEDS):
    """Paths of the built-in seed matrices (the reduced set with quick)."""
    base = QUICK_DIR if quick else MATRIX_DIR
    return [os.path.join(base, f"seed{s}.txt") for s in seeds]


def matrix_id(path):
    """A matrix's id is its file name without .txt: `seed003` picks the seed 003 tables."""
    return os.path.splitext(os.path.basename(path))[0]


def config_of(run):
    """The configuration a run belongs to: its run-line name without the sweep suffix and
    without a `.part` ("no-poll.idle-hz=0" -> "no-poll"). The report lays tables out by it."""
    suffix = "".join(f"-{matrix._short(k)}={v.replace(':', '_')}" for k, v in run.sweep.items())
    base = run.name[:len(run.name) - len(suffix)] if suffix else run.name
    return base.split(".", 1)[0]


def load_matrices(paths):
    """[(matrix id, path, [Run])], every guest knob checked against the kernel's table."""
    knobs = matrix.guest_knob_names()
    return [(matrix_id(p), p, matrix.load(p, guest_knobs=knobs)) for p in paths]


def plan(loaded):
    """The work list: one (matrix id, Run, repeat index) per boot, in matrix order."""
    return [(mid, run, i) for mid, _, runs in loaded for run in runs
            for i in range(1, run.repeat + 1)]


def guest_cmdline(run, window_hold=WINDOW_HOLD):
    """The guest command line: the workload and its duration (matrix keys of their own),
    the run's guest knobs, and window_hold unless the matrix set it (the host's reads at the
    markers depend on it)."""
    parts = [f"workload={run.workload}", f"duration={run.settings['duration']}"]
    if run.cmdline():
        parts.append(run.cmdline())
    if "window_hold" not in run.guest:
        parts.append(f"window_hold={window_hold}")
    return " ".join(parts)


def estimate_s(run):
    """Expected wall time of one boot, for the ETA: fixed cost + warm-up + window."""
    warmup = matrix.parse_time(run.guest.get("warmup", "100ms"))
    return RUN_OVERHEAD_S + (warmup + run.duration_ns) / 1e9


# --- machine load ----------------------------------------------------------------------------

_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def host_cpus():
    """CPUs the host kernel schedules on (the denominator of every load percentage)."""
    return os.cpu_count() or 1


def proc_stat_ns(path="/proc/stat"):
    """(idle ns, steal ns) summed over every CPU since boot. Busy time is derived as wall
    time minus these: the kernel measures idle exactly (nohz idle accounting) but samples
    busy time at the tick, which misses most of a vCPU thread's short timer-driven bursts
    (measured here: a 2 ms periodic guest showed half its CPU time in user+system)."""
    with open(path) as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle, iowait, steal = (fields + [0] * 8)[3], (fields + [0] * 8)[4], (fields + [0] * 8)[7]
    return (idle + iowait) * _TICK_NS, steal * _TICK_NS


def process_cpu_ns(pid):
    """A live process's CPU time (all threads, exited ones too) from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * _TICK_NS


def _rusage_ns(who):
    r = resource.getrusage(who)
    return int((r.ru_utime + r.ru_stime) * 1e9)


def load_sample(pid=None):
    """One moment of the machine: busy/steal totals, our own CPU, QEMU's if `pid`."""
    idle, steal = proc_stat_ns()
    sample = {"t_ns": time.monotonic_ns(), "idle_ns": idle, "steal_ns": steal,
              "self_ns": _rusage_ns(resource.RUSAGE_SELF),
              "children_ns": _rusage_ns(resource.RUSAGE_CHILDREN)}
    if pid is not None:
        try:
            sample["qemu_ns"] = process_cpu_ns(pid)
        except (FileNotFoundError, ProcessLookupError):
            sample["qemu_ns"] = None
    return sample


def other_load(a, b, qemu_ns, ncpus=None):
    """Load between samples a and b as % of all host CPUs: everything busy (wall time
    minus idle and steal), ours (QEMU + this process), and the rest, which is what disturbs
    a measurement. /proc/stat counts in 10 ms ticks, so `other` can dip a little below 0;
    it is clamped and the raw value kept."""
    ncpus = ncpus or host_cpus()
    span = max(b["t_ns"] - a["t_ns"], 1) * ncpus
    steal = b["steal_ns"] - a["steal_ns"]
    busy = span - (b["idle_ns"] - a["idle_ns"]) - steal
    ours = (qemu_ns or 0) + (b["self_ns"] - a["self_ns"])
    return {"elapsed_s": round((b["t_ns"] - a["t_ns"]) / 1e9, 3),
            "busy_pct": round(100 * busy / span, 2),
            "ours_pct": round(100 * ours / span, 2),
            "other_pct": round(max(0.0, 100 * (busy - ours) / span), 2),
            "other_raw_pct": round(100 * (busy - ours) / span, 2),
            "steal_pct": round(100 * steal / span, 2)}


def loadavg():
    """The 1, 5 and 15 minute load averages."""
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class QuietWaiter:
    """--wait-quiet: before the first run, and again after a run that saw other load, waits
    until a short sample of the machine is below `below_pct`, for at most `budget_s` seconds
    over the whole invocation (a busy machine must not stall the bench for ever)."""

    def __init__(self, budget_s, below_pct, sample_s=0.5):
        self.budget_s, self.below_pct, self.sample_s = budget_s, below_pct, sample_s
        self.spent_s = 0.0
        self.gave_up = False

    def wait(self, why):
        """Returns (seconds waited, last other-load %, quiet?). No-op without a budget."""
        if self.budget_s <= 0:
            return 0.0, None, None
        if self.spent_s >= self.budget_s:
            return 0.0, None, False   # budget used up: said once already, go on
        start = time.monotonic()
        while True:
            a = load_sample()
            time.sleep(self.sample_s)
            pct = other_load(a, load_sample(), 0)["other_pct"]
            waited = time.monotonic() - start
            if pct < self.below_pct:
                if waited > self.sample_s * 1.5:
                    say(f"machine quiet after {waited:.1f}s ({pct:.1f}% other load)")
                self.spent_s += waited
                return waited, pct, True
            if self.spent_s + waited >= self.budget_s:
                self.spent_s += waited
                if not self.gave_up:
                    say(f"machine still busy ({pct:.1f}% other load, above {self.below_pct}%) "
                        f"after the --wait-quiet budget of {self.budget_s:.0f}s: running "
                        "anyway; each result records its other load")
                self.gave_up = True
                return waited, pct, False
            if waited < self.sample_s * 1.5:
                say(f"waiting for a quiet machine ({why}: {pct:.1f}% other load)")


# --- host polling configuration -------------------------------------------------------------

class HostParams:
    """The host's global kvm halt-polling parameters: their values, which are writable, and
    whether a run can have what it asks for."""

    def __init__(self, param_dir=hostparams.PARAM_DIR, journal=JOURNAL):
        self.param_dir, self.journal = param_dir, journal
        try:
            self.values = hostparams.read_all(param_dir)
            self.read_only = hostparams.read_only_params(param_dir=param_dir)
        except FileNotFoundError:
            self.values, self.read_only = None, list(hostparams.PARAMS)

    def describe(self):
        """One line for the log and every table header."""
        if self.values is None:
            return f"no kvm module parameters at {self.param_dir}"
        vals = " ".join(f"{k}={v}" for k, v in self.values.items())
        if len(self.read_only) == len(hostparams.PARAMS):
            return f"kvm parameters read-only here: {vals}"
        if self.read_only:
            return f"kvm parameters {vals} (read-only: {', '.join(self.read_only)})"
        return f"kvm parameters {vals} (writable; changed only for runs that need it)"

    def changes_for(self, run):
        """(changes to make, None) or (None, reason the run cannot be made). A run asking
        for the value the host already has needs no change, even on a read-only host."""
        wanted = run.host_params
        if not wanted:
            return {}, None
        if self.values is None:
            return None, f"needs kvm parameters ({', '.join(wanted)}) and {self.describe()}"
        changes = {k: v for k, v in wanted.items() if self.values[k] != v}
        stuck = [k for k in changes if k in self.read_only]
        if stuck:
            return None, "; ".join(f"{k} is read-only (fixed at {self.values[k]})"
                                   for k in stuck)
        return changes, None

    def recover(self):
        """Puts back values a killed earlier run left changed (its journal); a note or None."""
        if not os.path.exists(self.journal) or self.values is None:
            return None
        try:
            note = hostparams.recover(self.journal, self.param_dir)
        except (hostparams.ParamsReadOnly, hostparams.JournalError) as e:
            return f"could not act on {self.journal}: {e}"
        self.values = hostparams.read_all(self.param_dir)
        return note


# --- one boot --------------------------------------------------------------------------------

class _Probe:
    """The host side of one boot: connects QMP when QEMU starts and samples KVM's counters,
    the vCPU threads' CPU time and the machine load at each window marker."""

    def __init__(self, qmp_path, accel, hold_ns):
        self.qmp_path, self.accel, self.hold_ns = qmp_path, accel, hold_ns
        self.session = self.pid = self.threads = None
        self.schemas = {}
        self.samples = {}      # state -> {"snapshot": Snapshot, "load": {...}, "sample_ms"}
        self.errors = []

    def on_start(self, proc):
        """QEMU is up: connect QMP, learn the vCPU threads (QMP names their thread ids)."""
        self.pid = proc.pid
        try:
            self.session = qmp.QMP(self.qmp_path, timeout=15, proc=proc)
            self.threads = {c["cpu-index"]: c["thread-id"]
                            for c in self.session.query_cpus_fast()}
            if self.accel == "kvm":
                self.schemas = self.session.query_stats_schemas().get("vcpu", {})
        except Exception as e:  # recorded; the run is reported as failed
            self.errors.append(f"QMP at start: {e}")

    def on_line(self, line):
        """At a window marker: the host's sample, while CPU 0 holds the marker."""
        if "@idlelab window " not in line:
            return
        arrived = time.monotonic_ns()
        _, fields = records.parse_line(line)
        state = fields.get("state")
        if state not in ("open", "close") or self.session is None:
            return
        if state in self.samples:
            self.errors.append(f"a second '{state}' window marker: only one window per run")
            return
        if state == "open":
            wait_ns = arrived + int(self.hold_ns * OPEN_READ_AT) - time.monotonic_ns()
            if wait_ns > 0:
                time.sleep(wait_ns / 1e9)
        read_at = time.monotonic_ns()
        try:
            names = STATS if self.accel == "kvm" else None
            snap = kvmstats.take_snapshot(self.session, self.pid, names, self.threads)
            load = load_sample(self.pid)
        except Exception as e:
            self.errors.append(f"QMP at the {state} marker: {e}")
            return
        done = time.monotonic_ns()
        self.samples[state] = {"snapshot": snap, "load": load,
                               "sample_ms": round((done - arrived) / 1e6, 2),
                               "read_ms": round((done - read_at) / 1e6, 2),
                               "late": done - arrived > self.hold_ns}

    def close(self):
        if self.session is not None:
            self.session.close()


def _jsonable_snapshot(snap):
    return {"time_ns": snap.time_ns, "stats": snap.per_vcpu_stats,
            "thread_cpu_ns": snap.per_thread_cpu_ns}


def _host_part(probe):
    """What the host saw over the window: both samples and their delta."""
    host = {"vcpu_threads": probe.threads, "errors": list(probe.errors)}
    for state, s in probe.samples.items():
        host[state] = dict(_jsonable_snapshot(s["snapshot"]), sample_ms=s["sample_ms"],
                           read_ms=s["read_ms"], late=s["late"])
    if {"open", "close"} <= set(probe.samples):
        a, b = probe.samples["open"]["snapshot"], probe.samples["close"]["snapshot"]
        try:
            d = kvmstats.delta(a, b, probe.schemas or None)
        except ValueError as e:      # a counter went backwards: not one VM's window
            host["errors"].append(f"KVM stats delta: {e}")
            return host
        host["delta"] = {"elapsed_ns": d.elapsed_ns, "stats": d.per_vcpu_stats,
                         "thread_cpu_ns": d.per_thread_cpu_ns}
    return host


@dataclass
class Context:
    """What every run of one invocation shares."""
    accel: str                       # kvm or tcg, for every run
    params: HostParams
    window_hold: str = WINDOW_HOLD
    timeout_s: float = 120.0
    library: str = None              # the preload library, built once if any run needs it
    ncpus: int = field(default_factory=host_cpus)


def base_record(mid, run, repeat, ctx):
    """The parts of a record known before booting."""
    scope, ns = matrix.PARSERS["halt_poll_ns"](run.settings["halt_poll_ns"])
    return {
        "matrix": mid, "name": run.name, "config": config_of(run), "where": run.where,
        "repeat": repeat, "repeats": run.repeat, "workload": run.workload, "smp": run.smp,
        "machine": run.machine, "accel": run_accel(run, ctx), "duration_ns": run.duration_ns,
        "settings": dict(run.settings), "sweep": dict(run.sweep), "guest_knobs": dict(run.guest),
        "halt_poll": {"scope": scope, "ns": ns},
        "host_params": {"wanted": dict(run.host_params), "values": ctx.params.values,
                        "read_only": ctx.params.read_only, "changed": {}},
        "cmdline": guest_cmdline(run, ctx.window_hold),
        "status": None, "reason": None,
    }


def run_accel(run, ctx):
    """A run asking for TCG in its matrix gets it; otherwise the invocation's choice."""
    return "tcg" if "tcg" in (run.accel, ctx.accel) else "kvm"


def execute(mid, run, repeat, ctx):
    """Makes one boot of a run and returns its raw record (status ok, failed or not run)."""
    rec = base_record(mid, run, repeat, ctx)
    if rec["accel"] == "kvm":
        changes, reason = ctx.params.changes_for(run)
        if reason:
            rec.update(status="not run", reason=reason)
            return rec
    else:
        changes = {}
    if not changes:
        return _boot(run, rec, ctx)
    with hostparams.override(changes, ctx.params.journal, ctx.params.param_dir) as ov:
        if ov.note:
            say(ov.note)
        rec["host_params"]["changed"] = dict(changes)
        rec["host_params"]["values"] = dict(ctx.params.values, **changes)
        return _boot(run, rec, ctx)


def _qemu_config(run, rec, ctx, qmp_path):
    cfg = qemu.Config(smp=run.smp, machine=run.machine, accel=rec["accel"],
                      cmdline=rec["cmdline"], qmp=qmp_path, name="idlelab-bench")
    hp = rec["halt_poll"]
    if rec["accel"] == "kvm" and hp["scope"] == "vm":
        cfg.preload = [ctx.library]
        cfg.env = haltpollcap.run_env(hp["ns"])
    return cfg


def _boot(run, rec, ctx):
    """Boots the guest with the probe attached and fills in the record."""
    sockdir = tempfile.mkdtemp(prefix="idlelab-bench-")
    hold = run.guest.get("window_hold", ctx.window_hold)
    probe = _Probe(os.path.join(sockdir, "qmp"), rec["accel"], matrix.parse_time(hold))
    cfg = _qemu_config(run, rec, ctx, probe.qmp_path)
    rec["argv"], _ = qemu.build_command(cfg)
    before = load_sample()
    try:
        res = qemu.run(cfg, timeout=ctx.timeout_s, on_line=probe.on_line,
                       on_start=probe.on_start)
    finally:
        probe.close()
        shutil.rmtree(sockdir, ignore_errors=True)
    after = load_sample()
    out = res.outcome
    rec["qemu"] = {"status": res.status, "outcome": out.name, "timed_out": res.timed_out,
                   "seconds": round(res.seconds, 3)}
    rec["serial"] = res.output
    rec["host"] = _host_part(probe)
    rec["load"] = _load_part(probe, before, after, ctx.ncpus)
    rec["haltpoll_cap"] = [ns for ns, _ in haltpollcap.enabled_values(res.output)]
    rec["status"], rec["reason"] = _verdict(rec, out)
    if rec["status"] == "ok":
        rec["per_vcpu"] = report.side_by_side(rec)
    return rec


def _load_part(probe, before, after, ncpus):
    """Other load over the whole boot (QEMU's CPU from its rusage once reaped) and over the
    measured window (QEMU's CPU from /proc at the two markers); load average at the end."""
    qemu_ns = after["children_ns"] - before["children_ns"]
    part = {"run": other_load(before, after, qemu_ns, ncpus), "loadavg": loadavg()}
    s = probe.samples
    if {"open", "close"} <= set(s):
        a, b = s["open"]["load"], s["close"]["load"]
        if a.get("qemu_ns") is not None and b.get("qemu_ns") is not None:
            part["window"] = other_load(a, b, b["qemu_ns"] - a["qemu_ns"], ncpus)
    return part


def _verdict(rec, outcome):
    """(status, reason): ok only if the guest succeeded and the host saw the whole window
    with the polling configuration it asked for."""
    if not outcome.ok:
        tail = " | ".join(rec["serial"].strip().splitlines()[-3:])
        return "failed", f"guest exit {outcome.name}: {tail}"
    if rec["host"]["errors"]:
        return "failed", "; ".join(rec["host"]["errors"])
    if "delta" not in rec["host"]:
        return "failed", "the host did not sample both window markers"
    hp = rec["halt_poll"]
    if rec["accel"] == "kvm" and hp["scope"] == "vm" and rec["haltpoll_cap"] != [hp["ns"]]:
        return "failed", (f"per-VM halt_poll_ns={hp['ns']} was not applied "
                          f"(library reported {rec['haltpoll_cap']})")
    return "ok", None


# --- the invocation --------------------------------------------------------------------------

def new_results_dir(parent):
    """results/<timestamp>/ (never reused: a second invocation in the same second gets a
    suffix) and results/latest pointing at it (replaced atomically)."""
    os.makedirs(parent, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in range(100):
        name = stamp if i == 0 else f"{stamp}-{i}"
        path = os.path.join(parent, name)
        try:
            os.mkdir(path)
            break
        except FileExistsError:
            continue
    else:
        raise RuntimeError(f"cannot make a new results folder in {parent}")
    tmp = os.path.join(parent, f".latest-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    os.symlink(name, tmp)
    os.replace(tmp, os.path.join(parent, "latest"))
    return path


def raw_path(outdir, index, rec):
    """raw/NNN-<matrix>-<run>[-rK].json: one file per boot, written as soon as it ends."""
    safe = re.sub(r"[^A-Za-z0-9_.=-]", "_", rec["name"])
    rep = f"-r{rec['repeat']}" if rec.get("repeats", 1) > 1 else ""
    return os.path.join(outdir, "raw", f"{index:03d}-{rec['matrix']}-{safe}{rep}.json")


def write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def read_raw(outdir):
    """The raw records of a results folder, in run order (for --report)."""
    rawdir = os.path.join(outdir, "raw")
    out = []
    for name in sorted(os.listdir(rawdir)):
        if name.endswith(".json"):
            with open(os.path.join(rawdir, name)) as f:
                out.append(json.load(f))
    return out


class Progress:
    """The progress line: which run, how many left, and an ETA that learns the real fixed
    cost per boot from the runs made so far."""

    def __init__(self, work):
        self.work = work
        self.started = time.monotonic()
        self.overheads = []

    def eta_s(self, index):
        overhead = (sum(self.overheads) / len(self.overheads)) if self.overheads \
            else RUN_OVERHEAD_S
        return sum(estimate_s(run) - RUN_OVERHEAD_S + overhead
                   for _, run, _ in self.work[index:])

    def line(self, index):
        mid, run, rep = self.work[index]
        left = len(self.work) - index - 1
        eta = self.eta_s(index)
        rep_txt = f" #{rep}/{run.repeat}" if run.repeat > 1 else ""
        return (f"[{index + 1:>2}/{len(self.work)}] {mid} {run.name}{rep_txt} "
                f"({run.workload}, {run.settings['duration']}) | {left} left, "
                f"ETA {int(eta // 60)}:{int(eta % 60):02d}")

    def done(self, run, rec):
        q = rec.get("qemu")
        if q:
            warm = matrix.parse_time(run.guest.get("warmup", "100ms"))
            self.overheads.append(max(0.0, q["seconds"] - (warm + run.duration_ns) / 1e9))


def result_line(rec, row):
    """One line per finished run: status, the accuracy check, host CPU and other load."""
    if rec["status"] == "not run":
        return f"    not run: {rec['reason']}"
    if rec["status"] == "failed":
        return f"    FAILED: {rec['reason']}"
    acc = report.accuracy_text(row)
    cpu = row.get("host_cpu_pct")
    cpu_txt = f"{cpu:.1f}%" if isinstance(cpu, float) else str(cpu)
    late = [s for s in ("open", "close") if rec["host"].get(s, {}).get("late")]
    late_txt = f" | host read after the hold at {'/'.join(late)}" if late else ""
    return (f"    ok {rec['qemu']['seconds']:.1f}s | {acc} | host CPU/vCPU {cpu_txt} | "
            f"other load {row.get('other_load')}%{late_txt}")


def choose_accel(requested, require_kvm):
    """(accel, message or None, exit code or None). Without KVM a bench cannot read host
    counters: with --require-kvm (or --accel kvm) that is an error with its own exit code;
    otherwise the runs go ahead under TCG with the host columns marked n/a (TCG)."""
    usable = qemu.kvm_usable()
    if (require_kvm or requested == "kvm") and not usable:
        return None, ("/dev/kvm is missing or not usable: KVM was required, so nothing was "
                      f"run (exit {EXIT_NO_KVM})"), EXIT_NO_KVM
    if requested == "tcg":
        return "tcg", "running under TCG as asked: host KVM columns are n/a (TCG)", None
    if not usable:
        return "tcg", ("/dev/kvm is missing or not usable: running under TCG; the host KVM "
                       "columns are n/a (TCG) (--require-kvm makes this an error)"), None
    return "kvm", None, None


def parse_args(argv):
    import argparse
    ap = argparse.ArgumentParser(
        prog="bench",
        description="Run idlelab experiment matrices under QEMU/KVM and write results/<time>/ "
                    "(raw JSON, runs.csv, seedNNN.md tables, PNG plots). With no --matrix: "
                    "the four built-in seed matrices (tools/matrices/seed00[0234].txt).",
        epilog=f"Exit status: {EXIT_OK} all runs made or reported not run; {EXIT_RUN_FAILED} a "
               f"run failed; {EXIT_USAGE} bad arguments or matrix; {EXIT_NO_KVM} KVM required "
               "(--require-kvm or --accel kvm) but /dev/kvm is not usable.")
    ap.add_argument("--quick", action="store_true",
                    help="the reduced built-in matrices (tools/matrices/quick/): under a minute")
    ap.add_argument("--seeds", default=",".join(SEEDS),
                    help="built-in seeds to run, comma-separated (default: %(default)s)")
    ap.add_argument("--matrix", action="append", metavar="FILE",
                    help="run this matrix file instead of the built-ins (repeatable)")
    ap.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto",
                    help="auto (default): KVM if usable, else TCG with host columns n/a")
    ap.add_argument("--require-kvm", action="store_true",
                    help=f"exit {EXIT_NO_KVM} without running anything if KVM is not usable")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                    help="wait for a quiet machine before the first run and after a run that "
                         "saw other load, at most SECONDS in all (default 0: do not wait)")
    ap.add_argument("--quiet-below", type=float, default=10.0, metavar="PCT",
                    help="other load (%% of all host CPUs) that counts as quiet "
                         "(default %(default)s)")
    ap.add_argument("--results-dir", default=RESULTS_DIR, metavar="DIR",
                    help="parent of the new <timestamp>/ folder and the `latest` link "
                         "(default: results/)")
    ap.add_argument("--window-hold", default=WINDOW_HOLD, metavar="TIME",
                    help="guest window_hold= unless the matrix sets it (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=120, metavar="S",
                    help="kill a boot after S seconds (default %(default)s)")
    ap.add_argument("--list", action="store_true",
                    help="print the matrices' runs and the time estimate; run nothing")
    ap.add_argument("--report", metavar="RESULTS_FOLDER",
                    help="rewrite runs.csv, the tables and plots from a folder's raw/ and exit")
    args = ap.parse_args(argv)
    seeds = [s.strip() for s in args.seeds.split(",") if s.strip()]
    bad = [s for s in seeds if s not in SEEDS]
    if bad:
        ap.error(f"unknown seed {', '.join(bad)}; built-in: {', '.join(SEEDS)}")
    args.seed_list = seeds
    return args


def list_matrices(loaded):
    """--list: each matrix, its runs and the expected time."""
    total = 0.0
    for mid, path, runs in loaded:
        boots = sum(r.repeat for r in runs)
        secs = sum(estimate_s(r) * r.repeat for r in runs)
        total += secs
        print(f"{mid}: {os.path.relpath(path, TOP)}: {len(runs)} runs, {boots} boots, "
              f"~{secs:.0f}s")
        for r in runs:
            rep = f" x{r.repeat}" if r.repeat > 1 else ""
            print(f"  {r.name}{rep}: {guest_cmdline(r)} halt_poll_ns={r.settings['halt_poll_ns']}"
                  + "".join(f" {k}={v}" for k, v in r.host_params.items()
                            if k != "halt_poll_ns"))
    print(f"total ~{total:.0f}s (about {RUN_OVERHEAD_S:.0f}s per boot besides warm-up and "
          "window)")


def _install_sigterm():
    """SIGTERM unwinds like Ctrl-C: qemu.run kills its QEMU, override() restores params."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def main(argv=None):
    args = parse_args(argv)
    if args.report:
        recs = read_raw(args.report)
        meta_path = os.path.join(args.report, "meta.json")
        meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
        for path in report.write_all(args.report, recs, meta):
            print(path)
        return EXIT_OK
    paths = args.matrix or builtin_matrices(args.quick, args.seed_list)
    try:
        loaded = load_matrices(paths)
    except (matrix.MatrixError, OSError) as e:
        say(str(e))
        return EXIT_USAGE
    if args.list:
        list_matrices(loaded)
        return EXIT_OK
    accel, msg, code = choose_accel(args.accel, args.require_kvm)
    if msg:
        say(msg)
    if code is not None:
        return code
    _install_sigterm()
    return run_all(args, loaded, accel)


def run_all(args, loaded, accel):
    """Runs the work list, writing each raw record as it comes, then the reports."""
    params = HostParams()
    ctx = Context(accel=accel, params=params, window_hold=args.window_hold,
                  timeout_s=args.timeout)
    work = plan(loaded)
    if accel == "kvm":
        note = params.recover()
        if note:
            say(note)
        # Said once; every record carries the values too.
        say(params.describe() + ("; runs that need other values are reported as not run"
                                 if params.read_only else ""))
        if any(run.vm_halt_poll_ns is not None and run_accel(run, ctx) == "kvm"
               for _, run, _ in work):
            ctx.library = haltpollcap.build()
    outdir = new_results_dir(args.results_dir)
    meta = invocation_meta(args, loaded, ctx, outdir)
    write_json(os.path.join(outdir, "meta.json"), meta)
    say(f"{len(work)} boots from {', '.join(m for m, _, _ in loaded)} under {accel}; "
        f"results in {os.path.relpath(outdir, TOP) if outdir.startswith(TOP) else outdir}")
    waiter = QuietWaiter(args.wait_quiet, args.quiet_below)
    waited = waiter.wait("before the first run")
    progress = Progress(work)
    recs = []
    t0 = time.monotonic()
    try:
        _run_work(work, ctx, outdir, waiter, waited, progress, recs, args.quiet_below)
    except KeyboardInterrupt:
        say(f"interrupted after {len(recs)} of {len(work)} runs: reporting those")
        meta["interrupted"] = True
    meta["seconds"] = round(time.monotonic() - t0, 1)
    meta["quiet_wait_s"] = round(waiter.spent_s, 1)
    write_json(os.path.join(outdir, "meta.json"), meta)
    written = report.write_all(outdir, recs, meta)
    print(report.console_summary(recs, meta, written))
    if meta.get("interrupted"):
        return 130
    return EXIT_RUN_FAILED if any(r["status"] == "failed" for r in recs) else EXIT_OK


def _run_work(work, ctx, outdir, waiter, waited, progress, recs, quiet_below):
    """The matrix loop: progress line, one boot, its raw file and result line, and a wait
    for quiet after a run that saw other load."""
    for i, (mid, run, rep) in enumerate(work):
        say(progress.line(i))
        rec = execute(mid, run, rep, ctx)
        rec["quiet_wait"] = {"waited_s": round(waited[0], 2), "other_pct": waited[1],
                             "quiet": waited[2]}
        progress.done(run, rec)
        write_json(raw_path(outdir, i + 1, rec), rec)
        recs.append(rec)
        row = report.summarize(rec)
        print(result_line(rec, row), file=sys.stderr, flush=True)
        waited = (0.0, None, None)
        if isinstance(row.get("other_load"), (int, float)) and \
                row["other_load"] >= quiet_below and i + 1 < len(work):
            waited = waiter.wait("the last run saw other load")


def invocation_meta(args, loaded, ctx, outdir):
    """What the tables' headers say about this invocation and machine."""
    return {
        "results": os.path.relpath(outdir, TOP) if outdir.startswith(TOP) else outdir,
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "quick": bool(args.quick and not args.matrix),
        "matrices": {mid: os.path.relpath(p, TOP) for mid, p, _ in loaded},
        "accel": ctx.accel, "host_cpus": ctx.ncpus,
        "host_params": ctx.params.values, "host_params_read_only": ctx.params.read_only,
        "host_params_note": ctx.params.describe(),
        "window_hold": ctx.window_hold, "loadavg_start": loadavg(),
        "kernel": os.uname().release,
    }
