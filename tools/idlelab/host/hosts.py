"""Which host a tool measures on, chosen once: `kvm` (this machine's /dev/kvm), `nested` (the
emulated KVM host below) or `tcg` (QEMU's emulator, no KVM); and that nested host.

Every tool that takes --accel goes through choose(): `auto` is KVM where /dev/kvm is usable,
else the nested host where it can be built and booted, else TCG, and the tool says in one
line which and why. A tool given `nested` (by the user or by auto) runs itself inside the
nested host with `--accel kvm` (delegate()): there the local KVM path is the KVM path, so
one code path measures every KVM host. describe() is what every result records about the
host it came from.

The nested KVM host: Debian's kernel under QEMU's TCG emulation of AMD SVM (`-cpu max`),
with kvm_amd loaded, so a real Linux KVM runs idlelab on a machine without /dev/kvm
(docs/platform-notes.md, "The nested host").

The image (tools/nested/mkimage, `make nested-host`) is a kernel and an initramfs; its /init
mounts this machine's root read-only and the project tree read-write over virtio-9p at the
tree's own path, and runs one job there in a chroot: the same tool with `--accel kvm`, so
the harness, QEMU and its libraries inside are the very files the local KVM path runs, and
KVM's counters, thread CPU times and module parameters are read where KVM is. The host
boots once per tool run.

Faults of the emulated host are never hangs. /init beats once a second on the second serial
port; a host whose beat stops for WEDGE_S while its job runs (or that is not up within
BOOT_S) is wedged: its CPUs' registers are dumped through the QEMU monitor (with the kernel
functions they are in, from the image's kallsyms), it is killed, and the job is run
once more on a fresh host (IDLELAB_NESTED_ATTEMPT says which attempt a result came from)."""
import dataclasses
import hashlib
import json
import os
import platform
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

from idlelab import timings
from idlelab.host import qemu
from idlelab.host.platform import HostParams
from idlelab.host.samplers import OUTER_ENV, OuterWaitWriter


ACCELS = ("auto", "kvm", "nested", "tcg")


def choose(requested, needs_params=None, build=True):
    """(accel, why): accel is kvm, nested or tcg; why is one line for the user, or None when
    the choice is simply what was asked. Inside the nested host, nested is its local KVM.

    needs_params says what of the job must set kvm module parameters this machine's KVM has
    read-only (a line, or None): auto then takes the nested host, whose parameters are its
    own, so that those runs are made rather than reported not run. `kvm` asked for keeps the
    local KVM whatever the job needs. build=False: a nested host whose image is not built
    yet counts as available (for a plan: nothing is built or booted)."""
    if requested not in ACCELS:
        raise ValueError(f"accel must be one of {'|'.join(ACCELS)}, not {requested!r}")
    if inside():
        if requested in ("auto", "nested"):
            return "kvm", None
        return requested, None
    if requested != "auto":
        return requested, None
    if qemu.kvm_usable():
        if not needs_params:
            return "kvm", "/dev/kvm is usable" + ("" if needs_params is None else
                                                  " and the job sets no kvm parameter")
        ok, why = available(build)
        if ok:
            return "nested", (f"{needs_params}; --accel kvm keeps this machine's KVM and "
                              "reports those runs not run")
        return "kvm", f"{needs_params}, and there is no nested host ({why}): those runs are " \
                      "reported not run"
    ok, why = available(build)
    if ok:
        return "nested", "no usable /dev/kvm here: running on the nested KVM host (Debian's " \
                         "kernel with kvm_amd under QEMU's emulated SVM; slow exits, real KVM)"
    return "tcg", f"no usable /dev/kvm and no nested host ({why}): running under TCG " \
                  "(no KVM counters)"


def host_line(accel, why=None):
    """The one line a tool says before anything runs: the host, why it was chosen, its
    kernel, and its kvm parameters with whether they are writable."""
    reason = f" (auto: {why})" if why else ""
    if accel == "tcg":
        return (f"host: tcg, QEMU's emulator on this machine (Linux {platform.release()}): no "
                f"KVM, so no host polling and no KVM counts{reason}")
    if accel == "nested":
        try:
            m = manifest()
            kernel = f"Debian's {m['package']} {m['version']}"
        except (OSError, ValueError, KeyError):
            kernel = "Debian's kernel"
        return (f"host: nested, {kernel} with kvm_amd under QEMU's emulated SVM on this "
                f"machine; its kvm parameters are its own and writable, set per run and "
                f"recorded{reason}")
    kind = "nested" if inside() else "kvm"
    where = "the nested host's own KVM" if kind == "nested" else "this machine's /dev/kvm"
    return (f"host: {kind}, {where}, Linux {platform.release()}; "
            f"{HostParams().describe()}{reason}")


def describe(accel):
    """The host a result came from, for its record: kind, and for KVM hosts the kernel."""
    if accel == "tcg":
        return {"host": "tcg"}
    kind = "nested" if inside() else "kvm"
    desc = {"host": kind, "host_kernel": platform.release()}
    attempt = os.environ.get(ATTEMPT_ENV)
    if kind == "nested" and attempt:
        desc["host_attempt"] = int(attempt)
    return desc


def with_accel(argv, accel):
    """argv with its --accel value (either spelling) replaced by accel, or it appended."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--accel":
            skip = True
            continue
        if a.startswith("--accel="):
            continue
        out.append(a)
    return out + ["--accel", accel]


def delegate(tool, argv, prog, timeout=None):
    """Runs `tool argv` (tool relative to the tree's top) inside a fresh nested host, under
    its KVM, and returns the exit status to exit with. A host that cannot be had, or that
    wedged twice, is one line naming why and its own exit code (tools/nested/exit-codes)."""
    try:
        res = run_job([os.path.join(TOP, tool)] + with_accel(argv, "kvm"), timeout=timeout,
                      cwd=os.getcwd())
    except NestedError as e:
        print(f"{prog}: nested host: {e}", file=sys.stderr, flush=True)
        return e.code
    if res.attempts > 1:
        print(f"{prog}: nested host: the result above came from attempt {res.attempts} (the "
              f"first host wedged; its dump: {', '.join(res.wedges)})", file=sys.stderr)
    if res.error:
        print(f"{prog}: nested host: {res.error}", file=sys.stderr, flush=True)
    return res.status


def place(prog, tool, requested, argv, needs_params=None):
    """The one step every --accel tool takes first: (accel, None) to run here under kvm or
    tcg, or (nested, exit status) once the tool has run inside the nested host. Says the
    host in one line (host_line) before anything runs; inside the nested host the tool
    outside has said it already."""
    accel, why = choose(requested, needs_params)
    if not inside():
        print(f"{prog}: {host_line(accel, why)}", file=sys.stderr, flush=True)
    if accel != "nested":
        return accel, None
    argv = sys.argv[1:] if argv is None else list(argv)
    if tool == "tools/bench":
        return accel, delegate_bench(argv, prog)
    return accel, delegate(tool, argv, prog)


RESULTS_AT = re.compile(r"results in (.+)$")
MAX_WEDGES = 10


def delegate_bench(argv, prog="bench"):
    """tools/bench on the nested host, kept going across wedges run by run: a host that wedges
    is dumped and replaced, and the bench resumes its own results folder on the new one
    (--resume): the run it was in is made again and marked `retried`; a run whose host wedges
    a second time is recorded as failed with that reason, and the rest of the matrix goes on.
    Nothing measured is lost: every finished run's raw record is in the folder already."""
    folder, extra, made_at_wedge, wedges = None, [], None, 0

    def on_line(line):
        nonlocal folder
        m = RESULTS_AT.search(line)
        if m:
            folder = os.path.join(TOP, m.group(1))
    while True:
        try:
            res = run_job([os.path.join(TOP, "tools", "bench")]
                          + with_accel(argv + extra, "kvm"), on_line=on_line, retries=0,
                          cwd=os.getcwd())
        except NestedError as e:
            print(f"{prog}: nested host: {e}", file=sys.stderr, flush=True)
            return e.code
        if not res.wedged:
            if res.error:
                print(f"{prog}: nested host: {res.error}", file=sys.stderr, flush=True)
            return res.status
        wedges += 1
        if folder is None or wedges > MAX_WEDGES:
            when = "before the bench made its folder" if folder is None else f"{wedges} times"
            print(f"{prog}: nested host: failed {when}; stopping (dump: {res.wedges})",
                  file=sys.stderr)
            return CODES["NESTED_WEDGED"]
        raw = os.path.join(folder, "raw")
        made = len([n for n in os.listdir(raw) if n.endswith(".json")]) if os.path.isdir(raw) \
            else 0
        if made == made_at_wedge:
            note = "failed: the nested host wedged twice in this run"
            extra = ["--resume", folder, "--resume-note", note, "--resume-fail"]
        else:
            note = "retried: the nested host wedged during the first try of this run"
            extra = ["--resume", folder, "--resume-note", note]
        made_at_wedge = made
        print(f"{prog}: nested host wedged in run {made + 1}; {note.split(':')[0]} on a new "
              "host", file=sys.stderr, flush=True)


# --- The nested KVM host ------------------------------------------------------------------

TOP = qemu.TOP
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
OUTER_WAIT_FILE = "outer-wait.jsonl"  # this machine's waits of the host's vCPUs (host/samplers.py)
ASK_S = 3          # no heartbeat for this long: ask the monitor whether the host reset
# The host faults a job is retried after, by what _attempt puts in JobResult.error.
FAULTS = {"wedged": f"the emulated host wedged (no heartbeat for {WEDGE_S} s)",
          "reset": "the emulated host reset itself (a triple fault or a reboot of its kernel)",
          "stalled": "the emulated host's kernel reported an RCU stall (a CPU whose timer "
                     "stopped firing: its other CPU still beats, so the job would hang)"}
# Lines of the emulated host's own kernel that mean it is stuck although its heartbeat goes
# on: seen once in a CI-like run, its CPU 0's timer never fired again ("rcu_preempt kthread
# timer wakeup didn't happen ... Possible timer handling issue on cpu=0") and the job hung.
STALL_LINES = ("rcu: INFO: rcu_preempt detected stalls", "rcu: INFO: rcu_sched detected stalls")
MARK = "@nested "
ATTEMPT_ENV = "IDLELAB_NESTED_ATTEMPT"
HOST_ENV = qemu.HOST_ENV


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


def inside():
    """True in a tool that the nested host's /init started (the job)."""
    return os.environ.get(HOST_ENV) == "nested"


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
    # the job (host/samplers.py): {"total_ms": {cpu: ms}, "worst_1s_ms": the most in any second}
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
    return ("# written by tools/idlelab/host/hosts.py: one tool run inside the nested host\n"
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
                    if res.status != CODES["NESTED_BOOT_FAILED"] or res.error:
                        done = True   # job-exit or an error: /init powers off, which pauses
                        break
                    continue
                if job_started is None:
                    continue          # the emulated kernel's own boot messages (in the log)
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
