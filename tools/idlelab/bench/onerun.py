"""One boot of a matrix run, from its host configuration to its raw record (status ok, failed
or not run).

  1. Decide the host polling configuration. A per-VM window (`halt_poll_ns=<time>`) goes
     through the preload library (haltpollcap.run_env) and touches no other VM. Global kvm
     parameters are changed only when a run needs a value the host does not already have,
     and only through kvmparams.override (journal, restore on every exit). Where they are
     read-only such a run is recorded as "not run: <reason>", never faked.
  2. Boot the guest (qemu.run, the one QEMU command line) with a QMP socket in a private
     temporary directory (inside the results folder's tmp/ for a bench) and the
     WindowProbe attached.
  3. Around the boot, sample the machine load (host/hostload.py); assemble the record.

The window probe (bench/windowprobe.py) is the host side of the boot: at each window marker
it samples KVM's counters and the vCPU threads.

The raw record is plain JSON-ready data, assembled from what the matrix asked for, what
QEMU and the guest did, and what the probe saw. derive/runrow.py turns it into a RunRow;
nothing here formats or derives figures beyond kvmdelta.delta's subtraction."""
import contextlib
import dataclasses
import os
import re
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field

from idlelab import costtable
from idlelab.bench import matrixvalues, windowplan, windowswitch
from idlelab.bench.matrix import WINDOW_HOLD, config_of, guest_cmdline
from idlelab.bench.windowprobe import WindowProbe
from idlelab.derive import kvmdelta, latewake
from idlelab.derive.runrow import side_by_side
from idlelab.host import cpustat, haltpollcap, hosts, kvmparams, neighbour, qemu, vcputhreads
from idlelab.host.hostload import host_cpus, load_sample, loadavg, other_load
from idlelab.host.kvmparams import HostParams
from idlelab.host.vcpuwaits import WaitSampler, Waits
from idlelab.host.windowtrace import WindowTrace
from idlelab.processes import pid_alive
from idlelab.report.console import say


# A boot's private temporary folder (its QMP socket) is named after the bench's pid, so a
# later bench can tell the folder of a killed one (pid gone) from a running one's. A bench
# keeps them in its results folder's tmp/ (removed with it); other callers in TMPDIR.
TEMP_PREFIX = "idlelab-bench-"
_TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)-")
# A UNIX socket's path holds at most 107 bytes (sun_path). A folder deeper than that is
# reached through an open descriptor of it, /proc/self/fd/N/: QEMU inherits the descriptor
# under the same number, so the one short path names the same socket in both processes.
SOCKET_PATH_MAX = 107


@dataclass
class Context:
    """What every run of one invocation shares."""
    accel: str                       # kvm or tcg, for every run
    params: HostParams
    window_hold: str = WINDOW_HOLD
    timeout_s: float = 120.0
    library: str = None              # the preload library, built once if any run needs it
    tmpdir: str = None               # where boots keep temporary files (None: TMPDIR)
    trace_dir: str = None            # where trace= boots keep their whole trace (None: not)
    ncpus: int = field(default_factory=host_cpus)
    # neighbour= specs measured alone in this invocation: (spec text, duration) -> throughput
    alone: dict = field(default_factory=dict)
    side_by_side: bool = False       # each run's per-vCPU table on the terminal as it ends

    def run_accel(self, run):
        return run_accel(run, self.accel)

    def base_record(self, mid, run, repeat):
        return base_record(mid, run, repeat, self.accel, self.params,
                                     self.window_hold)


def execute(mid, run, repeat, ctx):
    """One boot of `run` (the `repeat`th) and its raw record."""
    if isinstance(run.windows, windowplan.Design):     # this boot's order of the windows
        run = dataclasses.replace(run, windows=run.windows.for_boot(repeat))
    dropped = []
    if run.windows is not None and ctx.run_accel(run) == "kvm":
        kept, dropped = settable_windows(run, ctx.params)
        if kept.windows is None:            # not one of its settings can be had here
            rec = ctx.base_record(mid, run, repeat)
            rec.update(status="not run", reason=dropped[0]["reason"], not_run_arms=dropped)
            return rec
        run = kept
    rec = ctx.base_record(mid, run, repeat)
    if dropped:
        rec["not_run_arms"] = dropped
    changes = {}
    if rec["accel"] == "kvm":
        changes, reason = ctx.params.changes_for(run)
        if reason:
            rec.update(status="not run", reason=reason)
            return rec
    if run.windows is not None:
        # every parameter some window changes is held (journaled) for the whole boot from
        # the first window's value, so the windows can switch among them and every exit
        # path puts them back (a read-only one no window changes: settable_windows)
        now = ctx.params.values or {}
        plan = run.windows
        switched = {p for k in range(1, plan.windows + 1)
                    for p, v in plan.host_params(k).items() if now.get(p) != v}
        changes.update({p: v for p, v in plan.host_params(1).items() if p in switched})
    if not changes:
        return boot_keeping(run, rec, ctx)
    with kvmparams.override(changes, ctx.params.journal, ctx.params.param_dir) as ov:
        if ov.note:
            say(ov.note)
        rec["host_params"]["changed"] = dict(changes)
        rec["host_params"]["values"] = dict(ctx.params.values, **changes)
        return boot_keeping(run, rec, ctx, ov)


def boot_keeping(run, rec, ctx, override=None):
    """boot(), and where the harness itself fails on the way (a fault of ours, not the
    guest's or the host's), the record as far as it got, marked failed with where it broke:
    the boot's console and samples stay in raw/ instead of going down with the bench."""
    try:
        return boot(run, rec, ctx, override)
    except Exception as e:  # noqa: BLE001 (any fault of the harness: recorded, not raised)
        tb = e.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        where = f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        rec.update(status="failed",
                   reason=f"harness fault after the boot started: {type(e).__name__}: {e} "
                          f"({where})")
        say(f"run {rec.get('name')}: {rec['reason']}")
        return rec


def settable_windows(run, params):
    """(run, [{arm, name, reason}]): the boot with only the settings this host can be put
    in (a read-only kvm parameter keeps the value it has), and those it cannot, each with
    why; run.windows is None when none is left."""
    plan, dropped = run.windows, {}
    for arm in plan.arms:
        if arm.label in dropped:
            continue
        own = plan.host_params(plan.arms.index(arm) + 1)
        wanted = dict(run.host_params, **own)
        _, reason = params.changes_for(dataclasses.replace(run, host_params=wanted))
        if reason:
            dropped[arm.label] = {"arm": arm.label, "name": arm.run_name,
                                  "config": arm.config, "text": arm.text,
                                  "host_params": own, "reason": reason}
    if not dropped:
        return run, []
    kept = tuple(a for a in plan.arms if a.label not in dropped)
    if not kept:
        return dataclasses.replace(run, windows=None), list(dropped.values())
    windows = dataclasses.replace(plan, arms=kept)
    # the boot's own parameters are its first window's now, no longer a dropped arm's
    return dataclasses.replace(run, windows=windows,
                               host_params=dict(run.host_params, **windows.host_params(1))), \
        list(dropped.values())


def qemu_config(run, rec, ctx, qmp_path, ctl_path=None):
    """The QEMU configuration, with the preload library for a per-VM window under KVM (and
    its control socket at ctl_path, for windows that switch it)."""
    cfg = qemu.Config(smp=run.smp, machine=run.machine, accel=rec["accel"],
                      cmdline=rec["cmdline"], qmp=qmp_path, name="idlelab-bench",
                      guest=rec.get("guest", "idlelab"),
                      linux_kernel=rec.get("linux_kernel") or qemu.LINUX_KERNELS[0])
    # idlelab's records through guest memory, not an exit a character (host/spool.py)
    cfg.spool = cfg.guest == "idlelab"
    hp = rec["halt_poll"]
    if rec["accel"] == "kvm" and hp["scope"] == "vm":
        cfg.preload = [ctx.library]
        cfg.env = haltpollcap.run_env(hp["ns"], ctl_path)
    return cfg


def socket_path(folder, name):
    """(path, fd): a path to folder/name short enough for a UNIX socket, and the descriptor
    that path goes through (None when the plain path fits; the caller closes it and hands
    it to QEMU)."""
    path = os.path.join(folder, name)
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        return path, None
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/{name}", fd


def sockets_work(folder):
    """True if a UNIX socket can be bound in `folder`: not on every filesystem, and a boot's
    QMP socket lives there. 9p (the nested host's shares) refuses it, and QEMU's 9p server
    then prints "broken or compromised client detected" on the host's console: a folder on
    9p is known without trying."""
    if mount_type(folder) == "9p":
        return False
    path, fd = socket_path(folder, f"probe-{os.getpid()}")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        return True
    except OSError:
        return False
    finally:
        sock.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
        if fd is not None:
            os.close(fd)


def mount_type(path):
    """The filesystem type of the mount that holds `path` (/proc/self/mounts), or None."""
    real, best = os.path.realpath(path), (-1, None)
    with contextlib.suppress(OSError):
        with open("/proc/self/mounts") as f:
            for line in f:
                _, point, kind = line.split()[:3]
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), point)
                if (real == point or real.startswith(point.rstrip("/") + "/")) and \
                        len(point) > best[0]:
                    best = (len(point), kind)
    return best[1]


def reclaim_temp_dirs(tmpdir=None, own=False):
    """Removes the temporary folders of benches that are gone (SIGKILL leaves them behind);
    returns how many. A folder named after a live pid is left alone, but with own=True this
    process's own are removed: a bench finishing after a signal calls it, since the signal
    may land between a folder's creation and the try block that would remove it."""
    tmpdir = tmpdir or tempfile.gettempdir()
    gone = 0
    with contextlib.suppress(OSError):
        for name in os.listdir(tmpdir):
            m = _TEMP_NAME.match(name)
            if m and (int(m.group(1)) == os.getpid() if own
                      else not pid_alive(int(m.group(1)))):
                shutil.rmtree(os.path.join(tmpdir, name), ignore_errors=True)
                gone += 1
    return gone


def alone(run, rec, ctx, tmpdir):
    """The run's neighbour measured alone for the run's duration (alone_of)."""
    return alone_of(run.neighbour, run.duration_ns, rec, ctx, tmpdir)


def alone_of(spec, duration_ns, rec, ctx, tmpdir):
    """A neighbour measured alone for a window's duration, once per distinct spec (and
    duration) in this invocation; None if it could not be measured (said in the record)."""
    key = (spec.text, duration_ns)
    if key not in ctx.alone:
        say(f"measuring neighbour={spec.text} alone for "
            f"{duration_ns / 1e9:g} s (its slowdown's reference)")
        try:
            ctx.alone[key] = neighbour.measure_alone(spec, duration_ns, tmpdir, rec["accel"])
        except (OSError, RuntimeError) as e:
            ctx.alone[key] = {"error": str(e)}
    return ctx.alone[key]


def window_neighbours(plan):
    """The distinct neighbours a plan's windows switch to (hog:N specs), in order."""
    if not getattr(plan, "neighbours", lambda: False)():
        return []
    out = {}
    for arm in plan.arms:
        spec = arm.neighbour if arm.neighbour is not False else plan.base_neighbour
        if spec is not None:
            out.setdefault(spec.text, spec)
    return list(out.values())


def window_neighbour(plan, k, probe, ctx, duration_ns):
    """A window's `neighbour` where its plan switches them: the one beside it (None: none),
    its throughput over the window and alone, as a boot's record has them."""
    if not getattr(plan, "neighbours", lambda: False)():
        return {}
    spec = plan.neighbour(k)
    if spec is None:
        return {"neighbour": None}
    samples = probe.by_window.get(k, {})
    a, b = (samples.get(s, {}).get("neighbour") for s in ("open", "close"))
    switched = probe.switched.get(k) or {}
    return {"neighbour": {"spec": spec.text, "kind": spec.kind, "what": spec.describe(),
                          "window": neighbour.throughput(a, b) if a and b else None,
                          "alone": ctx.alone.get((spec.text, duration_ns)),
                          "tids": switched.get("neighbour_tids"),
                          "error": switched.get("error")}}


def boot(run, rec, ctx, override=None):
    """Boots the guest with the probe (and the neighbour, if any) attached and fills in the
    record. The neighbour starts before QEMU and is stopped after it on every path."""
    hold = run.guest.get("window_hold", ctx.window_hold)
    # Everything that can refuse a value comes before the temporary folder exists.
    hold_ns = matrixvalues.parse_time(hold)
    sockdir = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=ctx.tmpdir)
    probe = nbr = dirfd = switch = None
    stack = contextlib.ExitStack()      # the trace session, when trace= asks for one
    if run.neighbour is not None:
        rec["neighbour"] = {"spec": run.neighbour.text, "kind": run.neighbour.kind,
                            "what": run.neighbour.describe(), "window": None, "error": None}
    try:
        if run.neighbour is not None:
            rec["neighbour"]["alone"] = alone(run, rec, ctx, sockdir)
        before = load_sample()
        if run.neighbour is not None:
            try:
                nbr = neighbour.start(run.neighbour, sockdir, rec["accel"], run.duration_ns)
            except (OSError, RuntimeError) as e:
                rec["neighbour"]["error"] = f"could not start: {e}"
                rec.update(status="failed", reason=f"neighbour={run.neighbour.text} could "
                                                   f"not start: {e}")
                return rec
            rec["neighbour"]["tids"] = getattr(nbr, "tids", None)
        qmp_path, dirfd = socket_path(sockdir, "qmp")
        ctl_path = None
        if run.windows is not None:
            ctl_path = socket_path(sockdir, "haltpoll-ctl")[0] if dirfd is None else \
                f"/proc/self/fd/{dirfd}/haltpoll-ctl"
            switch = windowswitch.Switcher(run.windows, override, ctl_path,
                                           rec["host_params"]["values"], tmpdir=sockdir)
            for spec in window_neighbours(run.windows):     # each alone first, for its slowdown
                alone_of(spec, run.duration_ns, rec, ctx, sockdir)
        probe = WindowProbe(qmp_path, rec["accel"], hold_ns, run.stall, nbr, run.pin, switch,
                            run.alone)
        cfg = qemu_config(run, rec, ctx, probe.qmp_path, ctl_path)
        if dirfd is not None:
            cfg.pass_fds = (dirfd,)
        rec["argv"], _ = qemu.build_command(cfg)
        waits, lines = WaitSampler(), []
        trace = stack.enter_context(WindowTrace(run.trace, rec["accel"])) if run.trace \
            else None

        def started(proc):
            waits.start(proc.pid, expect=run.smp)
            probe.on_start(proc)
            if trace is not None:
                trace.follow(probe.threads)

        def line_seen(line):
            lines.append((time.monotonic_ns(), line))
            probe.on_line(line)

        try:
            res = qemu.run(cfg, timeout=ctx.timeout_s, on_line=line_seen, on_start=started,
                           on_partial=probe.on_partial)
        finally:
            waits.stop()
        if trace is not None:
            name = re.sub(r"[^\w.+-]", "_", f"{rec['matrix']}.{rec['name']}.{rec['repeat']}")
            keep = None if ctx.trace_dir is None else \
                os.path.join(ctx.trace_dir, name + ".trace.gz")
            rec["trace"] = trace.part(*probe.window_ns(), keep=keep)
    finally:
        stack.close()
        if probe is not None:
            probe.close()
        if switch is not None:
            switch.close()          # a neighbour it started between windows
        if nbr is not None:
            nbr.stop()
        if dirfd is not None:
            os.close(dirfd)
        shutil.rmtree(sockdir, ignore_errors=True)
    if nbr is not None:
        rec["neighbour"]["window"] = probe.neighbour_part()
    after = load_sample()
    out = res.outcome
    rec["qemu"] = {"status": res.status, "outcome": out.name, "timed_out": res.timed_out,
                   "seconds": round(res.seconds, 3)}
    rec["serial"] = res.output
    rec["host"] = host_part(probe)
    if probe.alone is not None:
        rec["alone"] = probe.alone.part()
    rec["load"] = load_part(probe, before, after, ctx.ncpus)
    if run.windows is not None:
        rec["windows"] = [dict(run.windows.describe(k),
                               host=host_part(probe, probe.by_window.get(k, {})),
                               load=load_part(probe, before, after, ctx.ncpus,
                                              probe.by_window.get(k, {})),
                               switched=probe.switched.get(k),
                               mono_ns=window_mono_ns(probe.by_window.get(k, {})),
                               **window_neighbour(run.windows, k, probe, ctx,
                                                  run.duration_ns))
                          for k in range(1, run.windows.windows + 1)]

    rec["haltpoll_cap"] = enabled_caps(res.output)
    if run.boot_costs is not None:
        rec["cost_table"] = boot_cost_table(res.output, run.boot_costs, rec)
    if run.stall is not None:
        rec["fault"] = probe.fault_part()
        st = probe.stall
        if st is not None and "duration_ns" in st.actual:
            begin = st.t0 + st.actual["start_ns"]
            waits.add_stall(begin, begin + st.actual["duration_ns"], [run.stall.vcpu])
    rec["load"]["wait_sampler"] = waits.footprint()
    late = latewake.attribute_output(lines, Waits(waits))
    if late:
        rec["late_wakeups"] = late
    rec["status"], rec["reason"] = verdict(rec, out)
    if rec["status"] == "ok" and "windows" not in rec:
        rec["per_vcpu"] = side_by_side(rec)
    return rec


def boot_cost_table(output, iters, rec):
    """boot_costs=: the cost table this boot measured before its windows, shaped as
    meta.json's (`prims`), with the kvm parameters it ran under (the boot's own, not the
    cost table boots' always-poll ones: ipi_poll_rtt and timer_poll are polled only as far as
    they poll; the simulator takes both from the bench's table),
    or the primitives it lacks."""
    prims = costtable.parse(output)
    missing = [p for p in costtable.PRIMS if p not in prims]
    return {"iters": iters, "prims": prims, "in_boot": True,
            "host_params": {"values": dict((rec.get("host_params") or {}).get("values") or {}),
                            "set": False, "why": "the boot's own parameters"},
            "missing": missing or None}


# --- The raw record -----------------------------------------------------------------------

def run_accel(run, accel):
    """A run asking for TCG in its matrix gets it; otherwise the invocation's choice."""
    return "tcg" if "tcg" in (run.accel, accel) else "kvm"


def base_record(mid, run, repeat, accel, params, window_hold):
    """The parts of a record known before booting."""
    scope, _ = matrixvalues.PARSERS["halt_poll_ns"](run.settings["halt_poll_ns"])
    # the window as resolved (a cost-table expression is a time by now)
    ns = {"vm": run.vm_halt_poll_ns, "global": run.host_params.get("halt_poll_ns")}.get(scope)
    return {
        "matrix": mid, "name": run.name, "config": config_of(run), "where": run.where,
        "repeat": repeat, "repeats": run.repeat, "workload": run.workload, "smp": run.smp,
        "machine": run.machine, "guest": run.guest_os, "linux_kernel": run.linux_kernel,
        "accel": run_accel(run, accel),
        "duration_ns": run.duration_ns,
        "settings": dict(run.settings), "sweep": dict(run.sweep), "guest_knobs": dict(run.guest),
        "halt_poll": {"scope": scope, "ns": ns},
        "host_params": {"wanted": dict(run.host_params), "values": params.values,
                        "read_only": params.read_only, "changed": {}},
        "cmdline": guest_cmdline(run, window_hold),
        "plan": None if run.windows is None else {
            "order": run.windows.order, "seed": run.windows.seed,
            "arms": {a.label: a.text for a in run.windows.arms},
            "cells": {a.label: a.run_name for a in run.windows.arms}},
        "pin": list(run.pin) if run.pin is not None else None,
        "host": hosts.describe(run_accel(run, accel)),
        "status": None, "reason": None,
    }


def snapshot_json(snap):
    return {"time_ns": snap.time_ns, "stats": snap.per_vcpu_stats,
            "thread_cpu_ns": snap.per_thread_cpu_ns}


def window_mono_ns(samples):
    """[open, close] of one window on CLOCK_MONOTONIC (when the guest was let go at its open
    marker, when its close marker was seen), the clock of the trace and of the switches;
    None without both."""
    if not {"open", "close"} <= set(samples):
        return None
    return [samples["open"]["done_ns"], samples["close"]["seen_ns"]]


def host_part(probe, samples=None):
    """What the host saw over a window (the probe's one, or `samples`, one of several): both
    samples and their delta."""
    samples = probe.samples if samples is None else samples
    host = {"vcpu_threads": probe.threads, "errors": list(probe.errors),
            "pinned": probe.pinned}
    for state, s in samples.items():
        host[state] = dict(snapshot_json(s["snapshot"]), run_delay_ns=s.get("run_delay_ns"),
                           wakes=s.get("wakes"), sample_ms=s["sample_ms"],
                           read_ms=s["read_ms"], late=s["late"], cpu_stat=s.get("cpu_stat"))
    if {"open", "close"} <= set(samples):
        # Each vCPU thread's wait on a host run queue over the window (what KVM reports to
        # the guest as steal time), to hold the guest's steal_ns against.
        da, db = (samples[s].get("run_delay_ns") or {} for s in ("open", "close"))
        host["run_delay_ns"] = {i: db[i] - da[i] for i in da
                                if da[i] is not None and db.get(i) is not None}
        # Each vCPU thread's wake-ups over the window, and those the host's scheduler put on
        # the waker's own CPU (queued behind it: KVM's poll there stops at once)
        wa, wb = (samples[s].get("wakes") or {} for s in ("open", "close"))
        host["wakes"] = {i: {k: wb[i][k] - wa[i][k] for k in vcputhreads.WAKE_COUNTS}
                         for i in wa if wa[i] and wb.get(i)}
        # The pinned host CPUs' mpstat split over the window (the seed's view of its CPU)
        sa, sb = (samples[s].get("cpu_stat") or {} for s in ("open", "close"))
        host["mpstat"] = {c: cpustat.split(sa[c], sb[c]) for c in sa if c in sb} or None
        a, b = samples["open"]["snapshot"], samples["close"]["snapshot"]
        try:
            host["delta"] = kvmdelta.delta(a, b, probe.schemas or None).to_json()
        except ValueError as e:      # a counter went backwards: not one VM's window
            host["errors"].append(f"KVM stats delta: {e}")
    return host


def load_part(probe, before, after, ncpus, samples=None):
    """Other load over the whole boot (QEMU's CPU from its rusage once reaped) and over the
    measured window (QEMU's CPU from /proc at the two markers); load average at the end."""
    samples = probe.samples if samples is None else samples
    qemu_ns = after["children_ns"] - before["children_ns"]
    part = {"run": other_load(before, after, qemu_ns, ncpus), "loadavg": loadavg()}
    if {"open", "close"} <= set(samples):
        a, b = samples["open"]["load"], samples["close"]["load"]
        if a.get("qemu_ns") is not None and b.get("qemu_ns") is not None:
            # A neighbour's CPU is the experiment's, not other load.
            ours = b["qemu_ns"] - a["qemu_ns"] + (b.get("neighbour_ns", 0)
                                                   - a.get("neighbour_ns", 0))
            part["window"] = other_load(a, b, ours, ncpus)
    return part


def verdict(rec, outcome):
    """(status, reason): ok only if the guest succeeded and the host saw the whole window
    with the polling configuration and the fault (stall=) it asked for. A stall that could
    not be injected (ptrace refused, ...) makes the run "not run": the boot happened, but
    not the experiment asked for, and its figures are not those of a disturbed run."""
    if not outcome.ok:
        late = rec.get("late_wakeups") or []
        if late and not any(e["kind"] in latewake.GUEST_FAULTS for e in late):
            return "failed", (f"guest exit {outcome.name}, host-starved: "
                              + latewake.describe(max(late, key=lambda e: e["late_ns"])))
        tail = " | ".join(rec["serial"].strip().splitlines()[-3:])
        return "failed", f"guest exit {outcome.name}: {tail}"
    f = rec.get("fault")
    if f is not None and not f.get("done"):
        return "not run", (f"stall={rec['settings'].get('stall')} was not injected, so this "
                           f"is not the run asked for: {f.get('error')}")
    n = rec.get("neighbour")
    if n is not None and n.get("error"):
        return "failed", f"neighbour={n['spec']}: {n['error']}"
    if n is not None and n.get("window") is None:
        return "failed", f"neighbour={n['spec']}: its throughput was not read at both markers"
    if n is not None and not n["window"].get("alive", True):
        return "failed", (f"neighbour={n['spec']}: it exited before the window closed (a "
                          "vm: guest whose workload failed or ended?)")
    if n is not None and not (n.get("alone") or {}).get("alive", True):
        return "failed", f"neighbour={n['spec']}: it exited while measured alone"
    if rec["host"]["errors"]:
        return "failed", "; ".join(rec["host"]["errors"])
    unread = [w["window"] for w in rec.get("windows") or ()
              if w.get("neighbour") and w["neighbour"]["window"] is None]
    if unread:
        return "failed", (f"the neighbour's throughput was not read at both markers of window "
                          f"{', '.join(map(str, unread))}")
    unsampled = [w["window"] for w in rec.get("windows") or () if "delta" not in w["host"]]
    if unsampled:
        return "failed", (f"the host did not sample both markers of window "
                          f"{', '.join(map(str, unsampled))}")
    if "windows" not in rec and "delta" not in rec["host"]:
        return "failed", "the host did not sample both window markers"
    hp = rec["halt_poll"]
    if rec.get("windows") and hp["scope"] == "vm" and rec["accel"] == "kvm":
        wanted = sorted({hp["ns"] if w["vm_halt_poll_ns"] is None else w["vm_halt_poll_ns"]
                         for w in rec["windows"]})
        if sorted(set(rec["haltpoll_cap"])) != wanted:
            return "failed", (f"per-VM halt_poll_ns {wanted} were not all applied (library "
                              f"reported {rec['haltpoll_cap']})")
    elif rec["accel"] == "kvm" and hp["scope"] == "vm" and rec["haltpoll_cap"] != [hp["ns"]]:
        return "failed", (f"per-VM halt_poll_ns={hp['ns']} was not applied "
                          f"(library reported {rec['haltpoll_cap']})")
    return "ok", None


def enabled_caps(serial):
    """The per-VM halt_poll_ns values the preload library reports it enabled."""
    return [ns for ns, _ in haltpollcap.enabled_values(serial)]
