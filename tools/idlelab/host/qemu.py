"""QEMU for idlelab: the one command line (`make run`, the tests and the harness all use it), and
the process and its exit status decoded into the guest's exit code. Its QMP client is qmp.py.

Choices here come from measurements recorded in docs/platform-notes.md:
microvm boots fastest; `-cpu host` needs `-arch-capabilities` on the nested KVM; the
poll-control MSR is offered only with `kvm-poll-control=on`; `debug-threads=on` names vCPU
threads `CPU n/KVM` so the harness can read their CPU time.

Exit codes are read from kernel/exit_codes.h (its EXIT_CODE_LIST), so the guest and the
host cannot disagree; isa-debug-exit makes QEMU exit with (code << 1) | 1. decode() is the
one place that turns an exit status into the guest's code."""
import contextlib
import ctypes
import os
import re
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field, replace

from idlelab import GUESTS, LINUX_KERNELS, TOP
from idlelab.derive.records import parse_records
from idlelab.host import spool


KERNEL32 = os.path.join(TOP, "build", "idlelab32.elf")
ELF64 = os.path.join(TOP, "build", "idlelab.elf")   # the symbols (the 32-bit copy boots)
MACHINES = ("microvm", "pc", "q35")
ACCELS = ("auto", "kvm", "tcg")
DEBUG_EXIT = "isa-debug-exit,iobase=0xf4,iosize=0x04"
# What a recorded command line (build_command without run) says for the guest RAM's file.
SPOOL_RAM_PLACEHOLDER = "/proc/self/fd/GUEST_RAM"
# The guest's COM1 receive side is QEMU's stdin (-serial stdio): the channel a guest booted
# with window_sync=1 waits on at each window marker. One byte acknowledges one marker.
ACK_BYTE = b"\x06"
# Linux (idlelab.GUESTS): Debian's kernel, the nested host's copy, with the initramfs of
# tools/linuxguest/ (`make linux-guest`).
LINUX_KERNEL = os.path.join(TOP, "build", "nested", "image", "vmlinuz")
LINUX_INITRD = os.path.join(TOP, "build", "linuxguest", "initrd.img")
# Each of idlelab.LINUX_KERNELS: (the kernel, the make target that builds it and the initramfs).
LINUX_KERNEL_FILES = {
    "debian": (LINUX_KERNEL, "make linux-guest"),
    "haltpoll-gov": (os.path.join(TOP, "build", "linuxguest", "bzImage-haltpoll-gov"),
                     "make linux-guest-kernel"),
}
assert tuple(LINUX_KERNEL_FILES) == LINUX_KERNELS
# Linux's own parameters ahead of the knobs: the console on COM1 (where the harness reads
# and acknowledges), a panic ends the run at once (QEMU's -no-reboot makes it a crash), and
# only warnings on the console among the records.
LINUX_CMDLINE = "console=ttyS0 panic=-1 quiet"
# Linux's haltpoll governor parameters share idlelab's knob names but take plain ns: a
# duration written idlelab's way (2ms, or 300us as the cost table places it) is handed to
# Linux in ns, which would otherwise refuse it and keep its default without a word.
LINUX_NS_PARAMS = ("haltpoll.guest_halt_poll_ns", "haltpoll.guest_halt_poll_grow_start")
_UNIT_NS = {"ns": 1, "us": 1000, "ms": 10 ** 6, "s": 10 ** 9}


def linux_cmdline(cmdline):
    """The Linux guest's command line: LINUX_CMDLINE and the run's, with LINUX_NS_PARAMS'
    durations in ns."""
    words = []
    for w in cmdline.split():
        key, _, value = w.partition("=")
        m = re.fullmatch(r"(\d+)(ns|us|ms|s)", value)
        if key in LINUX_NS_PARAMS and m:
            w = f"{key}={int(m.group(1)) * _UNIT_NS[m.group(2)]}"
        words.append(w)
    return " ".join([LINUX_CMDLINE] + words)


def build_files(build=None):
    """(the ELF with the symbols, the 32-bit copy that boots) of a build folder: this tree's
    by default, or another commit's `build/` (a worktree's), to run or count that kernel."""
    if build is None:
        return ELF64, KERNEL32
    return os.path.join(build, "idlelab.elf"), os.path.join(build, "idlelab32.elf")


def build_missing(build):
    """Why `build` is not a kernel's build folder, in one line; None if it is one."""
    for f in build_files(build):
        if not os.path.isfile(f):
            return f"no {os.path.basename(f)} in {build} (a kernel's build folder)"
    return None

# IDLELAB_KVM=off: act as if /dev/kvm were not usable (auto then picks the nested host or
# TCG), to run a machine's tests as one without KVM would.
KVM_ENV = "IDLELAB_KVM"
# Set by the nested host's /init for its job: there `nested` is the local KVM.
HOST_ENV = "IDLELAB_HOST"


def kvm_usable():
    """True if /dev/kvm can be opened read-write (KVM present and permitted), unless
    IDLELAB_KVM=off says to do without it."""
    if os.environ.get(KVM_ENV) == "off":
        return False
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def resolve_accel(accel):
    """The accelerator QEMU on this machine runs with. `nested` is not one: a tool given it
    runs itself inside the nested host (hosts.delegate), where it is the local KVM."""
    if accel == "nested" and os.environ.get(HOST_ENV) == "nested":
        return "kvm"
    if accel not in ACCELS:
        raise ValueError(f"accel must be one of {'|'.join(ACCELS)}, not {accel!r}")
    if accel == "auto":
        return "kvm" if kvm_usable() else "tcg"
    return accel


@dataclass
class Config:
    smp: int = 1
    machine: str = "microvm"
    accel: str = "auto"
    cmdline: str = ""
    mem: str = "256M"
    iso: str = None            # boot this GRUB ISO instead of the -kernel fast path
    kernel: str = KERNEL32
    qmp: str = None            # path of a QMP unix socket to create
    pass_fds: tuple = ()       # descriptors QEMU inherits under the same numbers
    gdb: bool = False          # start halted with a gdb stub on :1234
    name: str = "idlelab"
    # Under KVM: offer MSR_KVM_POLL_CONTROL and the REALTIME (dedicated pCPU) hint.
    poll_control: bool = True
    hint_dedicated: bool = True
    extra: list = field(default_factory=list)
    # Extra environment for QEMU (merged over ours) and shared libraries to LD_PRELOAD into it
    # (the harness's KVM_CAP_HALT_POLL shim: QEMU 7.2 has no option for that capability).
    env: dict = field(default_factory=dict)
    preload: list = field(default_factory=list)
    # A TCG plugin ("path.so,arg=value"); with one, TCG runs its vCPUs round-robin on one
    # host thread, so what the plugin counts does not depend on how the host schedules.
    plugin: str = None
    guest: str = "idlelab"     # one of GUESTS
    linux_kernel: str = "debian"   # the Linux guest's kernel: one of LINUX_KERNELS
    # record_spool=1: the guest's RAM shared with run(), which reads the records the guest
    # leaves there back into the console's lines (host/spool.py).
    spool: bool = False


def boot_files(cfg):
    """The files a -kernel boot of cfg's guest needs, in the order to check them."""
    if cfg.guest == "linux":
        return [LINUX_KERNEL_FILES[cfg.linux_kernel][0], LINUX_INITRD]
    return [cfg.kernel]


def missing_boot_file(cfg):
    """One line naming the first file cfg's boot lacks and how to make it; None if none."""
    if cfg.iso:
        return None
    make = LINUX_KERNEL_FILES[cfg.linux_kernel][1] if cfg.guest == "linux" else "make"
    for f in boot_files(cfg):
        if not os.path.exists(f):
            return f"{f} does not exist: run `{make}` first"
    return None


def linux_tcg_note(cfg, accel):
    """One line of warning for a Linux guest QEMU runs where it may not boot; None if fine.
    microvm has no HPET or ACPI PM timer: under TCG on a busy host Linux's PIT calibration of
    the TSC fails, and its boot then hangs (under KVM, kvmclock gives the frequency)."""
    if cfg.guest == "linux" and accel == "tcg" and cfg.machine == "microvm":
        return ("the Linux guest under TCG on microvm often hangs at boot (no HPET or ACPI PM "
                "timer to calibrate its TSC against): --machine pc boots it")
    return None


def cpu_flag(cfg, accel):
    if accel == "tcg":
        return "max"
    # invtsc: the host promises a constant TSC, which also exposes leaf 0x40000010 (TSC kHz).
    flags = ["host", "-arch-capabilities", "+invtsc"]
    flags.append("kvm-poll-control=" + ("on" if cfg.poll_control else "off"))
    if cfg.hint_dedicated:
        flags.append("kvm-hint-dedicated=on")
    return ",".join(flags)


def build_command(cfg, ram_path=SPOOL_RAM_PLACEHOLDER):
    """Returns (argv, accel actually used). ram_path: with cfg.spool, the file of the guest's
    RAM (run() makes it; the placeholder stands for it in a command line only recorded)."""
    if cfg.machine not in MACHINES:
        raise ValueError(f"machine must be one of {'|'.join(MACHINES)}, not {cfg.machine!r}")
    if not 1 <= cfg.smp <= 64:
        raise ValueError(f"smp must be 1..64, not {cfg.smp}")
    if cfg.guest not in GUESTS:
        raise ValueError(f"guest must be one of {'|'.join(GUESTS)}, not {cfg.guest!r}")
    if cfg.linux_kernel not in LINUX_KERNELS:
        raise ValueError(f"linux kernel must be one of {'|'.join(LINUX_KERNELS)}, not "
                         f"{cfg.linux_kernel!r}")
    if cfg.linux_kernel != LINUX_KERNELS[0] and cfg.guest != "linux":
        raise ValueError(f"the Linux kernel {cfg.linux_kernel} is for the Linux guest: not "
                         f"with guest {cfg.guest}")
    if cfg.spool and cfg.guest != "idlelab":
        raise ValueError("the record spool is idlelab's (record_spool=): not with the Linux guest")
    if cfg.iso and cfg.guest != "idlelab":
        raise ValueError("an ISO holds idlelab's kernel: not with the Linux guest")
    if cfg.iso and cfg.machine == "microvm":
        raise ValueError("an ISO needs a machine with firmware and a CD-ROM: pc or q35")
    accel = resolve_accel(cfg.accel)
    machine = cfg.machine
    if machine == "microvm":
        # The RTC and PCIe are not used; keep the PIT (TSC calibration fallback under TCG).
        machine = "microvm,rtc=off,pcie=off"
    argv = [
        "qemu-system-x86_64",
        "-M", machine,
        "-accel", "kvm" if accel == "kvm" else
        f"tcg,thread={'single' if cfg.plugin else 'multi'}",
        "-cpu", cpu_flag(cfg, accel),
        "-smp", str(cfg.smp),
        "-m", cfg.mem,
        "-name", f"{cfg.name},debug-threads=on",
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-serial", "stdio",
        "-device", DEBUG_EXIT,
    ]
    cmdline = cfg.cmdline
    if cfg.spool:
        argv += spool.qemu_args(cfg.mem, ram_path)
        cmdline = f"{cmdline} record_spool=1".lstrip()
    if cfg.iso:
        argv += ["-cdrom", cfg.iso, "-boot", "d"]
    elif cfg.guest == "linux":
        argv += ["-kernel", LINUX_KERNEL_FILES[cfg.linux_kernel][0], "-initrd", LINUX_INITRD,
                 "-append", linux_cmdline(cfg.cmdline)]
    else:
        # QEMU hands the guest "<kernel path> <-append>"; "--" marks where the path ends,
        # whatever it holds (boot/bootinfo.c).
        argv += ["-kernel", cfg.kernel, "-append", f"-- {cmdline}".rstrip()]
    if cfg.qmp:
        argv += ["-qmp", f"unix:{cfg.qmp},server=on,wait=off"]
    if cfg.plugin:
        if accel != "tcg":
            raise ValueError("a TCG plugin needs accel=tcg")
        argv += ["-plugin", cfg.plugin]
    if cfg.gdb:
        argv += ["-s", "-S"]
    argv += list(cfg.extra)
    return argv, accel


def process_env(cfg):
    """QEMU's environment: ours plus cfg.env, with cfg.preload put first in LD_PRELOAD.
    None (inherit unchanged) when the config asks for nothing."""
    if not cfg.env and not cfg.preload:
        return None
    env = dict(os.environ)
    env.update({k: str(v) for k, v in cfg.env.items()})
    if cfg.preload:
        env["LD_PRELOAD"] = " ".join(list(cfg.preload) + env.get("LD_PRELOAD", "").split())
    return env


def preload_by_descriptor(cfg):
    """(cfg, descriptors to close once QEMU started): LD_PRELOAD splits its list at spaces and
    colons, so a library whose path holds one (a tree in a folder named "my tree") would not load.
    Such a library is opened here and named by /proc/self/fd/N, which QEMU inherits under the
    same number (pass_fds)."""
    fds, preload = [], []
    for path in cfg.preload:
        if re.search(r"[\s:]", path):
            fd = os.open(path, os.O_RDONLY)
            fds.append(fd)
            path = f"/proc/self/fd/{fd}"
        preload.append(path)
    if not fds:
        return cfg, fds
    return replace(cfg, preload=preload, pass_fds=tuple(cfg.pass_fds) + tuple(fds)), fds


@dataclass
class Result:
    argv: list
    accel: str
    status: int
    timed_out: bool
    output: str
    seconds: float

    @property
    def outcome(self):
        return decode(self.status, self.timed_out)

    def records(self, kind=None):
        """The @idlelab records as (type, {key: value}) pairs."""
        return [r for r in parse_records(self.output) if kind is None or r[0] == kind]


def die_with_parent():
    """QEMU runs in its own session (so a timeout can kill its whole group); this makes the
    kernel kill it too if the Python process dies first, e.g. to SIGKILL or `timeout`."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def run(cfg, timeout=120, echo=False, on_line=None, on_start=None, on_partial=None):
    """Boots the guest and waits for it to exit. `echo` copies the serial console to stdout
    as it arrives; on_line(line) sees every line; on_partial(text) sees a line still arriving,
    so far, after every read that leaves one incomplete (where every character is a VM exit,
    a line takes long enough to act at its first bytes); on_start(popen) runs once QEMU
    started."""
    build_command(cfg)      # a bad configuration is refused before anything is made
    missing = missing_boot_file(cfg)
    if missing:
        raise FileNotFoundError(missing)
    start = time.monotonic()
    ram = spool.SharedRAM(cfg.mem) if cfg.spool else None
    if ram:
        cfg = replace(cfg, pass_fds=tuple(cfg.pass_fds) + (ram.fd,))
    argv, accel = build_command(cfg, ram.path if ram else SPOOL_RAM_PLACEHOLDER)
    cfg, fds = preload_by_descriptor(cfg)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=die_with_parent, pass_fds=cfg.pass_fds,
                                env=process_env(cfg))
    except BaseException:
        if ram:
            ram.close()
        raise
    finally:
        for fd in fds:
            os.close(fd)
    if on_start:
        on_start(proc)
    lines = []
    timed_out = False
    deadline = start + timeout
    try:
        os.set_blocking(proc.stdout.fileno(), False)
        buf = b""
        while True:
            chunk = _read_some(proc, deadline)
            if chunk is None:
                timed_out = True
                break
            if chunk == b"":
                break
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for raw in complete:
                line = raw.decode("utf-8", "replace").rstrip("\r")
                for line in ram.expand(line) if ram else (line,):
                    lines.append(line)
                    if echo:
                        print(line, flush=True)
                    if on_line:
                        on_line(line)
            if buf and on_partial:
                on_partial(buf.decode("utf-8", "replace"))
        if buf:
            lines.append(buf.decode("utf-8", "replace").rstrip("\r"))
            if echo:
                print(lines[-1], flush=True)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        status = proc.wait()
        with contextlib.suppress(OSError):
            proc.stdin.close()
        if ram:
            ram.close()
    return Result(argv, accel, status, timed_out, "\n".join(lines) + "\n",
                  time.monotonic() - start)


def acknowledge(proc, settings=""):
    """Lets a guest waiting at a window marker (window_sync=1) go on; `settings` (name=value
    ...) are the next window's, which the guest applies before it does (kernel/window.c)."""
    proc.stdin.write(settings.encode() + b"\n" if settings else ACK_BYTE)
    proc.stdin.flush()


def _read_some(proc, deadline):
    """Next bytes of output; b"" at EOF; None if the deadline passed first."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([proc.stdout], [], [], min(left, 0.5))
        if ready:
            data = proc.stdout.read(65536)
            if data is None:
                continue
            return data


# --- The guest's exit codes: a QEMU exit status decoded -----------------------------------

HEADER = os.path.join(TOP, "kernel", "exit_codes.h")
_ENTRY = re.compile(r'X\((\w+),\s*(0x[0-9a-fA-F]+|\d+),\s*"([^"]*)"\)')


@dataclass(frozen=True)
class Outcome:
    name: str          # SUCCESS, BAD_KNOB, ... or CRASH / QEMU_ERROR / TIMEOUT / UNKNOWN
    guest_code: int    # -1 when the guest did not choose the exit
    description: str

    @property
    def ok(self):
        return self.name == "SUCCESS"


def load_codes(header=HEADER):
    """Returns {guest_code: (name, description)} from the header."""
    with open(header) as f:
        text = f.read()
    codes = {}
    for name, value, desc in _ENTRY.findall(text):
        code = int(value, 0)
        if code in codes:
            raise ValueError(f"{header}: exit code {code:#x} used twice")
        codes[code] = (name, desc)
    if not codes:
        raise ValueError(f"{header}: no X(NAME, value, \"help\") entries found")
    return codes


def code_by_name(name, header=HEADER):
    for code, (n, _) in load_codes(header).items():
        if n == name:
            return code
    raise KeyError(name)


def decode(status, timed_out=False, header=HEADER):
    """Maps QEMU's exit status (as from subprocess; negative = killed by signal)."""
    if timed_out:
        return Outcome("TIMEOUT", -1, "QEMU was killed after the time limit")
    if status == 0:
        return Outcome("CRASH", -1, "QEMU exited with 0: a triple fault (reset with -no-reboot)")
    if status < 0:
        return Outcome("KILLED", -1, f"QEMU died from signal {-status}")
    if status & 1:
        code = status >> 1
        known = load_codes(header).get(code)
        if known:
            return Outcome(known[0], code, known[1])
        if status == 1:
            return Outcome("QEMU_ERROR", -1, "QEMU failed to start or stopped on an error")
        return Outcome("UNKNOWN", code, f"guest exit code {code:#x} is not in exit_codes.h")
    return Outcome("QEMU_ERROR", -1, f"QEMU exited with status {status}")
