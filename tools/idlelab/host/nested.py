"""The nested KVM host: Debian's kernel under QEMU's TCG emulation of AMD SVM (`-cpu max`), with
kvm_amd loaded, so a real Linux KVM runs idlelab on a machine without /dev/kvm
(docs/platform-notes.md, "The nested host"): its image checked and built, one boot per job,
its heartbeat watched, a wedged host dumped and the job retried.

The image (tools/nested/mkimage, `make nested-host`) is a kernel and an initramfs; its /init
mounts this machine's root read-only and the project tree read-write over virtio-9p at the
tree's own path, and runs one job there in a chroot: the same tool with `--accel kvm`, so
the harness, QEMU and its libraries inside are the very files the local KVM path runs, and
KVM's counters, thread CPU times and module parameters are read where KVM is. The host
boots once per tool run (host/hosts.py's delegate()).

Faults of the emulated host are never hangs. /init beats once a second on the second serial
port; a host whose beat stops for WEDGE_S while its job runs (or that is not up within
BOOT_S) is wedged: its CPUs' registers are dumped through the QEMU monitor (with the kernel
functions they are in, from the image's kallsyms), it is killed, and the job is run
once more on a fresh host (IDLELAB_NESTED_ATTEMPT says which attempt a result came from)."""
import dataclasses
import hashlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

from idlelab import TOP, timings
from idlelab.host import qemu
from idlelab.host.vcpuwaits import OUTER_ENV, OuterWaitWriter


TOOLS = os.path.join(TOP, "tools", "nested")
IMAGE = os.path.join(TOP, "build", "nested", "image")
RUNS = os.path.join(TOP, "build", "nested", "run")
MANIFEST = os.path.join(IMAGE, "manifest.json")
BUSYBOX = "/bin/busybox"
# What the image is made of: mkimage hashes the same files in the same order.
INPUTS = [os.path.join(TOOLS, f) for f in ("mkimage", "init", "kernel-package", "modules")] \
    + [BUSYBOX]

# What of this machine the host's jobs see read-write besides the tree (tools/nested/init
# mounts them; the rest of the root is read-only there): a file a command names under them is
# the same file inside, and what the job writes there stays.
WRITABLE_SHARES = (("tmp", "/tmp"), ("run", "/run"))
SMP, MEM = 2, "2G"
CPU = "max"        # under TCG: SVM with nested paging and vGIF (no nrip-save)
BOOT_S = 90        # emulated host start to its job (about 5 s here); beyond, it is wedged
WEDGE_S = 30       # no heartbeat for this long while a job runs: wedged
SECOND_NS = 1_000_000_000
OUTER_WAIT_FILE = "outer-wait.jsonl"  # this machine's waits of the host's vCPUs (host/vcpuwaits.py)
ASK_S = 3          # no heartbeat for this long: ask the monitor whether the host reset
# A job silent this long while its host's vCPUs burn less than HUNG_CPU_SHARE of it is hung:
# the host beats, but everything in it waits for something that will not come (2026-12-07:
# a bench whose host went idle at a boot's start and printed nothing for 11 minutes). Every
# job here prints at least once a boot (~90 s the longest, 40 windows). The share is of one
# CPU, the host's vCPU threads summed: a healthy host whose idlelab guest only idles at
# 250 Hz keeps them at 47 % (28.3 s in 60 s, 2026-12-07), a hung one with its guest gone
# quiet was under 23 % (this machine's whole load average, 0.23, that time), and 5 % let a
# bench wait out a 6-minute hang: docs/notebook/2026-12-07-the-way-into-idle.md.
HUNG_S = 120
HUNG_CPU_SHARE = 0.25
# The host faults a job is retried after, by what _attempt puts in JobResult.error.
FAULTS = {"wedged": f"the emulated host wedged (no heartbeat for {WEDGE_S} s)",
          "reset": "the emulated host reset itself (a triple fault or a reboot of its kernel)",
          "stalled": "the emulated host's kernel reported an RCU stall (a CPU whose timer "
                     "stopped firing: its other CPU still beats, so the job would hang)",
          "hung": f"the job printed nothing for {HUNG_S} s while its host's CPUs stayed near "
                  "idle (a wait inside the emulated host that does not end)"}
# Lines of the emulated host's own kernel that mean it is stuck although its heartbeat goes
# on: seen once in a CI-like run, its CPU 0's timer never fired again ("rcu_preempt kthread
# timer wakeup didn't happen ... Possible timer handling issue on cpu=0") and the job hung.
STALL_LINES = ("rcu: INFO: rcu_preempt detected stalls", "rcu: INFO: rcu_sched detected stalls")
MARK = "@nested "
ATTEMPT_ENV = "IDLELAB_NESTED_ATTEMPT"


def _exit_codes():
    codes = {}
    with open(os.path.join(TOOLS, "exit-codes")) as f:
        for line in f:
            m = re.fullmatch(r"(NESTED_[A-Z_]+)=(\d+)", line.strip())
            if m:
                codes[m.group(1)] = int(m.group(2))
    return codes


CODES = _exit_codes()


class NestedError(Exception):
    """One line for the user and the distinct exit code (tools/nested/exit-codes)."""

    def __init__(self, name, why):
        super().__init__(why)
        self.name, self.code = name, CODES[name]


def writable_inside(path):
    """True if a job in the nested host can write `path` (the tree or a writable share)."""
    real = os.path.realpath(path)
    return any(real == top or real.startswith(top.rstrip(os.sep) + os.sep)
               for top in [TOP] + [p for _, p in WRITABLE_SHARES])



def inputs_digest():
    h = hashlib.sha256()
    for path in INPUTS:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def image_state():
    """(usable, why not): an image is usable when its manifest exists and was built from
    the inputs as they are now; a half-built image has no manifest (mkimage writes it last)."""
    try:
        with open(MANIFEST) as f:
            manifest = json.load(f)
    except FileNotFoundError:
        return False, f"no image in {os.path.relpath(IMAGE, TOP)} (make nested-host)"
    except (OSError, ValueError) as e:
        return False, f"{os.path.relpath(MANIFEST, TOP)} is unreadable: {e}"
    if manifest.get("inputs") != inputs_digest():
        return False, "the image is stale: tools/nested/ or busybox changed since it was built"
    for f in ("vmlinuz", "initrd.img"):
        if not os.path.isfile(os.path.join(IMAGE, f)):
            return False, f"the image lacks {f}: rebuild it (make nested-host)"
    return True, None


def manifest():
    with open(MANIFEST) as f:
        return json.load(f)


def ensure_image():
    """Builds the image if it is missing or stale; raises NestedError with mkimage's line."""
    ok, why = image_state()
    if ok:
        return manifest()
    print(f"nested-host: {why}; building it", file=sys.stderr, flush=True)
    try:
        proc = subprocess.run([os.path.join(TOOLS, "mkimage"), IMAGE], cwd=TOP,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise NestedError("NESTED_BUILD_FAILED", f"cannot run tools/nested/mkimage: {e}")
    if proc.returncode != 0:
        line = (proc.stderr.strip().splitlines() or ["mkimage failed"])[-1]
        name = next((n for n, c in CODES.items() if c == proc.returncode),
                    "NESTED_BUILD_FAILED")
        raise NestedError(name, line.removeprefix("nested-host: "))
    ok, why = image_state()
    if not ok:
        raise NestedError("NESTED_STALE_IMAGE", f"mkimage ran but {why}")
    return manifest()


def available(build=True):
    """(True, None) if the nested host can be used here, else (False, why): QEMU is
    installed and the image exists or could be built now (build=False: is not built now)."""
    if not _which("qemu-system-x86_64"):
        return False, "qemu-system-x86_64 is not installed"
    if not build:
        return True, None
    try:
        ensure_image()
    except NestedError as e:
        return False, str(e)
    return True, None


def _which(name):
    return any(os.access(os.path.join(d, name), os.X_OK)
               for d in os.environ.get("PATH", "/usr/bin").split(os.pathsep))


@dataclasses.dataclass
class JobResult:
    status: int                # the job's exit status, or a NESTED_* code
    attempts: int              # 1, or 2 when the first host wedged
    wedges: list               # per wedge: the folder holding its dump
    error: str = None          # one line when the host (not the job) failed
    kvm_ready_s: float = None  # emulated host start to /dev/kvm, as its uptime said
    boot_s: float = None       # QEMU start to the job's start, by our clock
    wedged: bool = False       # the last attempt's host wedged (the job did not finish)
    # how long this machine kept the emulated host's own vCPU threads waiting to run over
    # the job (host/vcpuwaits.py): {"total_ms": {cpu: ms}, "worst_1s_ms": the most in any second}
    outer_wait: dict = None


def host_command(run_dir, job_path, image=IMAGE, cpu=CPU):
    """The emulated host's QEMU command line: TCG (multi-threaded, one host thread per
    emulated CPU) emulating an SVM CPU, the console on stdio, the heartbeat into a file,
    the monitor on a socket for dumps, this machine's root and the tree over virtio-9p."""
    append = " ".join([
        "console=ttyS0", "quiet", "panic=-1",
        # Fixed addresses: a wedge's dump names kernel functions from the image's kallsyms.
        "nokaslr",
        # Shadow paging in the host's KVM instead of nested paging: with the emulated SVM's
        # nested paging, idlelab triple-faulted in 6 of 20 4-vCPU wake-up selftests (a #PF
        # delivered at a plain `ret` right after a VM entry); with this, 0 of 20
        # (docs/platform-notes.md). The guest's page tables never change after boot.
        "kvm_amd.npt=0",
        # The vCPU threads' wake-ups by placement (/proc/PID/task/TID/sched, read at the
        # window's edges): the host's scheduler queues a kicked vCPU thread behind its waker
        # on this 2-CPU host for hundreds of round trips at a time (docs/notebook).
        "schedstats=enable",
        f"idlelab.tree={encode(TOP)}", f"idlelab.job={encode(job_path)}",
        f"idlelab.image={encode(image)}",
    ] + os.environ.get("IDLELAB_NESTED_APPEND", "").split())
    shares = [("root", "/", "readonly=on,"), ("tree", TOP, "")] + \
        [(name, path, "") for name, path in WRITABLE_SHARES]
    return [
        "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", cpu,
        "-smp", str(SMP), "-m", MEM, "-name", "idlelab-nested-host,debug-threads=on",
        "-nodefaults", "-no-user-config", "-display", "none",
        # A reset or power-off pauses instead of ending QEMU, so a host that reset itself
        # mid-job can still be dumped; the harness ends QEMU once /init said the job ended.
        "-action", "reboot=shutdown,shutdown=pause",
        "-serial", "stdio", "-serial", f"file:{os.path.join(run_dir, 'heartbeat')}",
        "-monitor", f"unix:{opt(os.path.join(run_dir, 'monitor.sock'))},server=on,wait=off",
        "-kernel", os.path.join(image, "vmlinuz"),
        "-initrd", os.path.join(image, "initrd.img"),
        "-append", append,
    ] + [a for tag, path, ro in shares for a in (
        "-fsdev", f"local,id={tag},path={opt(path)},security_model=none,{ro}multidevs=remap",
        "-device", f"virtio-9p-pci,fsdev={tag},mount_tag={tag}")]


def encode(path):
    """A path as a value on the host's kernel command line, which a space would end: every
    byte but letters, digits and `/._-` as %XX (tools/nested/init decodes it)."""
    return "".join(chr(b) if chr(b).isascii() and (chr(b).isalnum() or chr(b) in "/._-")
                   else f"%{b:02X}" for b in os.fsencode(path))


def opt(value):
    """A value inside one of QEMU's comma-separated options: a comma is written twice."""
    return value.replace(",", ",,")


def job_script(argv, attempt, run_dir, cwd=TOP):
    """The job /init runs in the chroot: argv from `cwd` (the tree's top, or the folder the
    user ran a delegated tool from, so that the paths it was given mean the same inside)."""
    return ("# written by tools/idlelab/host/nested.py: one tool run inside the nested host\n"
            f"export {ATTEMPT_ENV}={attempt}\n"
            f"export {OUTER_ENV}={shlex.quote(os.path.join(run_dir, OUTER_WAIT_FILE))}\n"
            f"cd {shlex.quote(cwd)} || exit {CODES['NESTED_BOOT_FAILED']}\n"
            f"exec {' '.join(shlex.quote(a) for a in argv)}\n")


def run_job(argv, echo=True, on_line=None, timeout=None, retries=1, cpu=CPU, cwd=TOP):
    """Runs argv (a command from the tree's top folder, e.g. ["tools/bench", "--accel",
    "kvm"]) inside a fresh nested host and returns a JobResult. The job's output goes to
    stdout as it arrives (echo) and to on_line. A wedged host is dumped and the job retried
    on a new one, `retries` times at most."""
    ensure_image()
    os.makedirs(RUNS, exist_ok=True)
    wedges = []
    for attempt in range(1, retries + 2):
        run_dir = os.path.join(RUNS, f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{attempt}")
        os.makedirs(run_dir)
        res = _attempt(argv, run_dir, attempt, echo, on_line, timeout, cpu, cwd)
        if res.boot_s is not None:
            timings.learn("nested", "host_start_s", res.boot_s)
        if res.error not in FAULTS:
            res.attempts, res.wedges = attempt, wedges
            return res
        wedges.append(run_dir)
        print(f"nested-host: {FAULTS[res.error]}; its registers are in "
              f"{os.path.relpath(run_dir, TOP)}/registers.txt"
              + ("; retrying on a new host" if attempt <= retries else ""),
              file=sys.stderr, flush=True)
    return JobResult(CODES["NESTED_WEDGED"], retries + 1, wedges, wedged=True,
                     error=f"the emulated host failed {len(wedges)} "
                           f"time{'s' if len(wedges) > 1 else ''} in a row (wedged or reset)")


def _attempt(argv, run_dir, attempt, echo, on_line, timeout, cpu, cwd):
    job_path = os.path.join(run_dir, "job.sh")
    with open(job_path, "w") as f:
        f.write(job_script(argv, attempt, run_dir, cwd))
    beat = os.path.join(run_dir, "heartbeat")
    open(beat, "w").close()
    cmd = host_command(run_dir, job_path, cpu=cpu)
    start = time.monotonic()
    log = open(os.path.join(run_dir, "console.txt"), "w")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=qemu.die_with_parent)
    res = JobResult(CODES["NESTED_BOOT_FAILED"], attempt, [])
    waits = OuterWaitWriter(beat, os.path.join(run_dir, OUTER_WAIT_FILE))
    waits.start(proc.pid)
    watch = _Heartbeat(beat)
    quiet = _Quiet(lambda: vcpu_cpu_s(proc.pid))
    job_started = None
    try:
        os.set_blocking(proc.stdout.fileno(), False)
        buf = b""
        while True:
            now = time.monotonic()
            if timeout is not None and now - start > timeout:
                res.status, res.error = 124, f"the job did not end within {timeout:.0f} s"
                break
            if job_started is None and now - start > BOOT_S:
                _dump(run_dir, proc)
                res.error = "wedged"
                break
            # before its job the host beats no heart yet: its silence is the time since start
            silent = watch.silent_s() if job_started is not None else now - start
            if silent > ASK_S and _host_reset(run_dir):
                _dump(run_dir, proc)
                res.error = "reset"
                break
            if job_started is not None and silent > WEDGE_S:
                _dump(run_dir, proc)
                res.error = "wedged"
                break
            if job_started is not None and quiet.hung(now):
                _dump(run_dir, proc)
                res.error = "hung"
                break
            chunk = qemu._read_some(proc, now + 1.0)
            if chunk is None:
                continue
            if chunk == b"":
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            done = False
            for raw in lines:
                line = raw.decode("utf-8", "replace").rstrip("\r")
                log.write(line + "\n")
                if any(mark in line for mark in STALL_LINES):
                    _dump(run_dir, proc)
                    res.error = "stalled"
                    done = True
                    break
                if line.startswith(MARK):
                    job_started = _control(line, res, start, job_started)
                    if job_started is not None:
                        watch.restart()
                        quiet.output(time.monotonic())
                    if res.status != CODES["NESTED_BOOT_FAILED"] or res.error:
                        done = True   # job-exit or an error: /init powers off, which pauses
                        break
                    continue
                if job_started is None:
                    continue          # the emulated kernel's own boot messages (in the log)
                quiet.output(time.monotonic())
                if echo:
                    print(line, flush=True)
                if on_line:
                    on_line(line)
            if done:
                break
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        qemu_status = proc.wait()
        log.close()
        waits.stop()
        res.outer_wait = outer_wait(waits)
    if res.error is None and res.status == CODES["NESTED_BOOT_FAILED"]:
        when = "before it was up" if job_started is None else "during its job"
        res.error = (f"the emulated host stopped (QEMU status {qemu_status}) {when}; its "
                     f"console is in {os.path.relpath(run_dir, TOP)}/console.txt")
    return res


def outer_wait(waits):
    """JobResult.outer_wait from the sampler of the emulated host's QEMU: each vCPU's wait
    over the job, and the most in any second (windows started every half second)."""
    if len(waits.times) < 2:
        return None
    t0, t1 = waits.times[0], waits.times[-1]
    total = {cpu: round((waits.wait_ns(cpu, t0, t1) or 0) / 1e6, 1) for cpu in waits.cpus()}
    worst = 0
    for start in range(t0, max(t0, t1 - SECOND_NS) + 1, SECOND_NS // 2):
        worst = max([worst] + [waits.wait_ns(c, start, start + SECOND_NS) or 0
                               for c in waits.cpus()])
    return {"total_ms": total, "worst_1s_ms": round(worst / 1e6, 1)}


def _control(line, res, start, job_started):
    """Reads one of /init's lines; returns when the job started (monotonic) or None."""
    kind, _, rest = line[len(MARK):].partition(" ")
    fields = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', rest))
    if kind == "kvm-ready":
        res.kvm_ready_s = float(fields.get("uptime", "nan"))
    elif kind == "job-start":
        res.boot_s = time.monotonic() - start
        return time.monotonic()
    elif kind == "job-exit":
        res.status = int(fields["status"])
    elif kind == "error":
        name = fields.get("code", "NESTED_BOOT_FAILED")
        res.status = CODES.get(name, CODES["NESTED_BOOT_FAILED"])
        res.error = fields.get("why", "").strip('"')
    return job_started


def vcpu_cpu_s(pid):
    """CPU seconds the emulated host's vCPU threads (`CPU n/TCG`) have run so far; None if
    QEMU is gone."""
    total, tick = 0, os.sysconf("SC_CLK_TCK")
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue          # a thread that just ended
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if re.fullmatch(r"CPU \d+/TCG", comm):
            fields = stat[stat.rindex(")") + 2:].split()
            total += int(fields[11]) + int(fields[12])     # utime, stime
    return total / tick


class _Quiet:
    """Whether the job is hung: silent for HUNG_S while the host's vCPUs ran less than
    HUNG_CPU_SHARE of that time. cpu_s() reads their CPU seconds so far."""

    def __init__(self, cpu_s, now=None):
        self.cpu_s = cpu_s
        self.output(time.monotonic() if now is None else now)

    def output(self, now):
        self.since, self.cpu_since = now, self.cpu_s()

    def hung(self, now):
        if now - self.since < HUNG_S:
            return False
        cpu = self.cpu_s()
        if cpu is None or self.cpu_since is None:
            return False
        if cpu - self.cpu_since >= HUNG_CPU_SHARE * (now - self.since):
            self.output(now)  # busy, say with a long test of its own: judged again later
            return False
        return True


class _Heartbeat:
    """How long since the host's heartbeat file last grew."""

    def __init__(self, path):
        self.path, self.size, self.at = path, 0, time.monotonic()

    def restart(self):
        self.at = time.monotonic()

    def silent_s(self):
        size = os.path.getsize(self.path)
        if size != self.size:
            self.size, self.at = size, time.monotonic()
        return time.monotonic() - self.at


def _dump(run_dir, proc):
    """The wedged host's state, before it is killed: `info registers -a` and where each
    CPU's RIP lies in the kernel (the image's kallsyms), into registers.txt."""
    path = os.path.join(run_dir, "registers.txt")
    try:
        text = _monitor(os.path.join(run_dir, "monitor.sock"), "info registers -a")
    except OSError as e:
        text = f"the monitor did not answer: {e}\n"
    rips = re.findall(r"RIP=([0-9a-f]{16})", text)
    names = [f"CPU {i}: RIP {r} in {symbol(int(r, 16))}" for i, r in enumerate(rips)]
    with open(path, "w") as f:
        f.write("\n".join(names) + "\n\n" + text)
    return path


def _host_reset(run_dir):
    """True if the host is paused by a reset or power-off (-action ... shutdown=pause)."""
    try:
        return "shutdown" in _monitor(os.path.join(run_dir, "monitor.sock"), "info status")
    except OSError:
        return False


def _monitor(sock_path, command, timeout=10):
    """One HMP command over the monitor socket; its answer (the prompt's echo stripped)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock_path)
        out = _read_until(s, b"(qemu) ")
        s.sendall(command.encode() + b"\n")
        out = _read_until(s, b"(qemu) ")
    finally:
        s.close()
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out.decode("utf-8", "replace"))


def _read_until(s, token):
    data = b""
    while not data.endswith(token):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


_SYMBOLS = None


def symbol(addr, table=os.path.join(IMAGE, "kallsyms")):
    """`function+0xoff` for a kernel address, from the image's kallsyms (its /init keeps a
    copy of /proc/kallsyms there: Debian ships a stub System.map; nokaslr fixes addresses)."""
    global _SYMBOLS
    if _SYMBOLS is None:
        _SYMBOLS = []
        try:
            with open(table) as f:
                for line in f:
                    a, t, name, *mod = line.split()
                    if t in "tTwW":     # a module's (kvm_amd...) loads at the same place too
                        _SYMBOLS.append((int(a, 16), name + (f" {mod[0]}" if mod else "")))
        except OSError:
            pass
        _SYMBOLS.sort()
    best = None
    for a, name in _SYMBOLS:
        if a > addr:
            break
        best = (a, name)
    if best is None or addr - best[0] > 1 << 20:
        return "(not in the kernel's text)"
    return f"{best[1]}+{addr - best[0]:#x}"
