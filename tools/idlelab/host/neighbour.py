"""neighbour= and pin= at run time (parsed by bench/matrixvalues.py): another task on the host
while a guest is measured, and its throughput over exactly the measured window.

  neighbour=none          nothing else runs (the default)
  neighbour=hog:N         N host threads that spin and count their loops (build/host/hog,
                          tools/hog.c); `hog:N@CPU,CPU,...` pins thread i to the i-th CPU
                          (one CPU for all, or one per thread). In a matrix a value that is
                          only digits continues the CPU list before it, so `hog:2@0,1` is one
                          neighbour and `none,hog:1@1` a sweep of two.
  neighbour=vm:KNOBS      a second idlelab guest (KVM or the run's accel, 1 vCPU unless
                          `smp=N` is among the knobs) booted with KNOBS, knobs joined by `+`
                          (`vm:workload=pingpong+pingpong.mode=spin+smp=2`); its duration is
                          made long enough to outlive the measured guest, which stops it.
  pin=CPU+CPU+...         pin the measured guest's vCPU i to host CPU i of the list
                          (sched_setaffinity on its thread, id from QMP); `none` (default).

The neighbour starts before the measured guest boots and is stopped after it exits, on every
path (a `finally` in onerun.boot; the hog and the second QEMU also die with the bench through
PR_SET_PDEATHSIG, even on SIGKILL).

Throughput. A hog's is its loops per second summed over its threads, read from the counters
it keeps in a shared file at the probe's open and close markers (the guest waits at its
barrier meanwhile). A vm neighbour's is the CPU time its QEMU process got, in CPU-ms per
second of the window (a CPU-bound guest's progress is its CPU time; its own `result` record
would cover its own window, not ours, and it is stopped before it prints one).

Slowdown: neighbour_slowdown = 1 - ops_with / ops_alone, where ops_alone is the same
neighbour (same spec, same pinning) measured alone for the run's duration, once per distinct
spec per bench invocation. 0: the guest cost the neighbour nothing; 0.5: it lost half its
throughput; negative: noise (it did better than alone)."""
import contextlib
import mmap
import os
import shlex
import signal
import struct
import subprocess
import time

from idlelab.host import hostload, qemu

TOP = qemu.TOP
HOG = os.path.join(TOP, "build", "host", "hog")
SLOT_BYTES = 64
READY_TIMEOUT_S = 10.0
VM_SETTLE_S = 1.0        # a vm neighbour's boot, before the measured guest starts
# --- running one ---------------------------------------------------------------------------

class Hog:
    """build/host/hog, started, pinned, read through its shared counters, stopped."""

    def __init__(self, spec, tmpdir):
        self.spec = spec
        self.path = os.path.join(tmpdir, f"hog-{os.getpid()}-{id(self)}.counters")
        self.proc = self.map = None
        self.tids = []

    def start(self):
        if not os.access(HOG, os.X_OK):
            raise RuntimeError(f"{HOG} is missing: run `make harness-lib`")
        self.proc = subprocess.Popen([HOG, self.path, str(self.spec.threads)],
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        line = _read_line(self.proc, READY_TIMEOUT_S)
        if not line.startswith("ready "):
            raise RuntimeError(f"hog did not start: {line!r}")
        self.tids = [int(t) for t in line.split()[1:]]
        for i, tid in enumerate(self.tids):
            if self.spec.cpus:
                os.sched_setaffinity(tid, {self.spec.cpus[i % len(self.spec.cpus)]})
        with open(self.path, "rb") as f:
            self.map = mmap.mmap(f.fileno(), SLOT_BYTES * self.spec.threads,
                                 prot=mmap.PROT_READ)
        return self

    def read(self):
        """(monotonic ns, loops per thread, process CPU ns)."""
        t = time.monotonic_ns()
        loops = [struct.unpack_from("<Q", self.map, i * SLOT_BYTES)[0]
                 for i in range(self.spec.threads)]
        return {"t_ns": t, "ops": loops, "cpu_ns": process_cpu_ns(self.proc.pid),
                "alive": self.proc.poll() is None}

    def stop(self):
        _stop(self.proc)
        if self.map is not None:
            self.map.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


class Vm:
    """A second idlelab guest, its QEMU's CPU time read at the markers."""

    def __init__(self, spec, tmpdir, accel, duration_ns):
        self.spec, self.accel = spec, accel
        # Long enough for the measured guest's boot, warm-up, window and exit.
        secs = int(duration_ns / 1e9) + 60
        self.cfg = qemu.Config(smp=spec.smp, accel=accel, name="idlelab-neighbour",
                               cmdline=" ".join(list(spec.knobs) + [f"duration={secs}s"]))
        self.proc = None

    def start(self):
        argv, _ = qemu.build_command(self.cfg)
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=qemu.die_with_parent)
        time.sleep(VM_SETTLE_S)
        if self.proc.poll() is not None:
            raise RuntimeError(f"the neighbour guest exited at once (status "
                               f"{self.proc.returncode}): {shlex.join(argv)}")
        return self

    def read(self):
        t = time.monotonic_ns()
        cpu = process_cpu_ns(self.proc.pid)
        return {"t_ns": t, "ops": [cpu / 1e6], "cpu_ns": cpu,   # ops in CPU-ms
                "alive": self.proc.poll() is None}

    def stop(self):
        _stop(self.proc)


def process_cpu_ns(pid):
    """A process's CPU time, all threads (schedstat-exact per thread where available)."""
    total = 0
    with contextlib.suppress(FileNotFoundError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
    return total


def _read_line(proc, timeout_s):
    deadline = time.monotonic() + timeout_s
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    buf = b""
    while b"\n" not in buf and time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            chunk = None
        if chunk == b"":
            break
        if chunk:
            buf += chunk
        else:
            time.sleep(0.005)
    return buf.decode("utf-8", "replace").strip()


def _stop(proc):
    """SIGTERM, then SIGKILL to the group; always reaped."""
    if proc is None:
        return
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc.stdout is not None:
        with contextlib.suppress(OSError):
            proc.stdout.close()


def start(spec, tmpdir, accel="kvm", duration_ns=0):
    """The running neighbour for a spec (Hog or Vm); the caller stops it."""
    runner = Hog(spec, tmpdir) if spec.kind == "hog" else Vm(spec, tmpdir, accel, duration_ns)
    try:
        return runner.start()
    except BaseException:
        runner.stop()
        raise


def throughput(a, b):
    """What the neighbour did between two reads: ops/s (hog: loops/s summed over threads;
    vm: CPU-ms/s), its CPU %, and the per-thread loops."""
    dt = max(b["t_ns"] - a["t_ns"], 1)
    ops = [y - x for x, y in zip(a["ops"], b["ops"])]
    return {"seconds": round(dt / 1e9, 4), "ops_per_s": round(sum(ops) * 1e9 / dt, 1),
            "per_thread_ops": ops,
            "cpu_pct": round(100 * (b["cpu_ns"] - a["cpu_ns"]) / dt, 2),
            "alive": bool(a.get("alive", True) and b.get("alive", True))}


def measure_alone(spec, duration_ns, tmpdir, accel="kvm"):
    """The neighbour alone for `duration_ns` (the machine otherwise as it is): throughput(),
    with the machine's other load meanwhile (`load`: the neighbour's own CPU is not other)."""
    n = start(spec, tmpdir, accel, duration_ns)
    try:
        time.sleep(0.05)
        a, la = n.read(), hostload.load_sample()
        time.sleep(duration_ns / 1e9)
        b, lb = n.read(), hostload.load_sample()
        return dict(throughput(a, b),
                    load=hostload.other_load(la, lb, b["cpu_ns"] - a["cpu_ns"]))
    finally:
        n.stop()


def pin_threads(threads, cpus):
    """Pins vCPU i's thread to cpus[i]; returns {vcpu: cpu} as done."""
    done = {}
    for vcpu, tid in sorted(threads.items()):
        if vcpu < len(cpus):
            os.sched_setaffinity(tid, {cpus[vcpu]})
            done[vcpu] = cpus[vcpu]
    return done
