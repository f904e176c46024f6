"""Makes one boot of a matrix run and returns its raw record (status ok, failed or not run).

  1. Decide the host polling configuration. A per-VM window (`halt_poll_ns=<time>`) goes
     through the preload library (haltpollcap) and touches no other VM. Global kvm
     parameters are changed only when a run needs a value the host does not already have,
     and only through hostparams.override (journal, restore on every exit). Where they are
     read-only such a run is recorded as "not run: <reason>", never faked.
  2. Boot the guest (qemu.run, the one QEMU command line) with a QMP socket in a private
     temporary directory (inside the results folder's tmp/ for a bench) and the WindowProbe
     attached (probe.py).
  3. Around the boot, sample the machine load (hostload.py); assemble the record
     (rawrecord.py).
"""
import contextlib
import os
import re
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field

from idlelab import resultsfolder
from idlelab.bench import matrix, rawrecord
from idlelab.derive import attribution
from idlelab.host import haltpollcap, hostparams, neighbour, qemu
from idlelab.derive.figures import side_by_side
from idlelab.host.hostparams import HostParams
from idlelab.host.hostload import host_cpus, load_sample
from idlelab.host.vcputhreads import WaitSampler, Waits
from idlelab.host.windowtrace import WindowTrace
from idlelab.bench.probe import WindowProbe
from idlelab.bench.progress import say
from idlelab.bench.workplan import WINDOW_HOLD

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
    ncpus: int = field(default_factory=host_cpus)
    # neighbour= specs measured alone in this invocation: (spec text, duration) -> throughput
    alone: dict = field(default_factory=dict)

    def run_accel(self, run):
        return rawrecord.run_accel(run, self.accel)

    def base_record(self, mid, run, repeat):
        return rawrecord.base_record(mid, run, repeat, self.accel, self.params,
                                     self.window_hold)


def execute(mid, run, repeat, ctx):
    """One boot of `run` (the `repeat`th) and its raw record."""
    rec = ctx.base_record(mid, run, repeat)
    changes = {}
    if rec["accel"] == "kvm":
        changes, reason = ctx.params.changes_for(run)
        if reason:
            rec.update(status="not run", reason=reason)
            return rec
    if not changes:
        return boot(run, rec, ctx)
    with hostparams.override(changes, ctx.params.journal, ctx.params.param_dir) as ov:
        if ov.note:
            say(ov.note)
        rec["host_params"]["changed"] = dict(changes)
        rec["host_params"]["values"] = dict(ctx.params.values, **changes)
        return boot(run, rec, ctx)


def qemu_config(run, rec, ctx, qmp_path):
    """The QEMU configuration, with the preload library for a per-VM window under KVM."""
    cfg = qemu.Config(smp=run.smp, machine=run.machine, accel=rec["accel"],
                      cmdline=rec["cmdline"], qmp=qmp_path, name="idlelab-bench",
                      guest=rec.get("guest", "idlelab"),
                      linux_kernel=rec.get("linux_kernel") or qemu.LINUX_KERNELS[0])
    hp = rec["halt_poll"]
    if rec["accel"] == "kvm" and hp["scope"] == "vm":
        cfg.preload = [ctx.library]
        cfg.env = haltpollcap.run_env(hp["ns"])
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
    """True if a UNIX socket can be bound in `folder`: not on every filesystem (the nested
    host's 9p share of the tree refuses it, ENXIO), and a boot's QMP socket lives there."""
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
                      else not resultsfolder.pid_alive(int(m.group(1)))):
                shutil.rmtree(os.path.join(tmpdir, name), ignore_errors=True)
                gone += 1
    return gone


def alone(run, rec, ctx, tmpdir):
    """The run's neighbour measured alone for the run's duration, once per distinct spec
    (and duration) in this invocation; None if it could not be measured (said in the record)."""
    key = (run.neighbour.text, run.duration_ns)
    if key not in ctx.alone:
        say(f"measuring neighbour={run.neighbour.text} alone for "
            f"{run.duration_ns / 1e9:g} s (its slowdown's reference)")
        try:
            ctx.alone[key] = neighbour.measure_alone(run.neighbour, run.duration_ns, tmpdir,
                                                     rec["accel"])
        except (OSError, RuntimeError) as e:
            ctx.alone[key] = {"error": str(e)}
    return ctx.alone[key]


def boot(run, rec, ctx):
    """Boots the guest with the probe (and the neighbour, if any) attached and fills in the
    record. The neighbour starts before QEMU and is stopped after it on every path."""
    hold = run.guest.get("window_hold", ctx.window_hold)
    # Everything that can refuse a value comes before the temporary folder exists.
    hold_ns = matrix.parse_time(hold)
    sockdir = tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", dir=ctx.tmpdir)
    probe = nbr = dirfd = None
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
        probe = WindowProbe(qmp_path, rec["accel"], hold_ns, run.stall, nbr, run.pin)
        cfg = qemu_config(run, rec, ctx, probe.qmp_path)
        if dirfd is not None:
            cfg.pass_fds = (dirfd,)
        rec["argv"], _ = qemu.build_command(cfg)
        waits, lines = WaitSampler(), []
        trace = stack.enter_context(WindowTrace(run.trace, rec["accel"])) if run.trace \
            else None

        def started(proc):
            waits.start(proc.pid)
            probe.on_start(proc)
            if trace is not None:
                trace.follow(probe.threads)

        def line_seen(line):
            lines.append((time.monotonic_ns(), line))
            probe.on_line(line)

        try:
            res = qemu.run(cfg, timeout=ctx.timeout_s, on_line=line_seen, on_start=started)
        finally:
            waits.stop()
        if trace is not None:
            rec["trace"] = trace.part(*probe.window_ns())
    finally:
        stack.close()
        if probe is not None:
            probe.close()
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
    rec["host"] = rawrecord.host_part(probe)
    rec["load"] = rawrecord.load_part(probe, before, after, ctx.ncpus)
    rec["haltpoll_cap"] = rawrecord.enabled_caps(res.output)
    if run.stall is not None:
        rec["fault"] = probe.fault_part()
        st = probe.stall
        if st is not None and "duration_ns" in st.actual:
            begin = st.t0 + st.actual["start_ns"]
            waits.add_stall(begin, begin + st.actual["duration_ns"], [run.stall.vcpu])
    late = attribution.attribute_output(lines, Waits(waits))
    if late:
        rec["late_wakeups"] = late
    rec["status"], rec["reason"] = rawrecord.verdict(rec, out)
    if rec["status"] == "ok":
        rec["per_vcpu"] = side_by_side(rec)
    return rec
