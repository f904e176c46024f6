"""The per-VM halt-polling window: the preload library libhaltpoll_cap.so (tools/haltpoll_cap.c)
built, QEMU's environment for it, and the client of its control socket.

QEMU 7.2 cannot set KVM_CAP_HALT_POLL and this machine's kvm module parameters are
read-only, so the harness preloads build/host/libhaltpoll_cap.so into QEMU. It applies
IDLELAB_HALT_POLL_NS right after the VM is created and serves a control socket at
IDLELAB_HALT_POLL_CTL for changes while the guest runs. Typical use:

    cfg = qemu.Config(..., preload=[haltpollcap.library()],
                      env=haltpollcap.run_env(0, ctl_path))
    ... QEMU running ...
    haltpollcap.set_halt_poll_ns(ctl_path, 200000)   # takes effect at the vCPUs' next halt"""
import os
import re
import socket
import subprocess
import time

from idlelab import TOP


LIBRARY = os.path.join(TOP, "build", "host", "libhaltpoll_cap.so")
MAKEFILE = os.path.join(TOP, "tools", "harness.mk")
ENV_NS = "IDLELAB_HALT_POLL_NS"
ENV_CTL = "IDLELAB_HALT_POLL_CTL"
MAX_NS = 2 ** 32 - 1  # KVM refuses args[0] wider than 32 bits
# The line the library prints each time KVM accepts a value.
ENABLED = re.compile(r"idlelab-haltpoll-cap: KVM_CAP_HALT_POLL=(\d+) on vm fd (\d+)")
ERROR = re.compile(r"idlelab-haltpoll-cap: error: .*")


class HaltPollCapError(Exception):
    """The library or KVM refused a value, or the control socket did not answer."""


def build():
    """Builds the library (make -f tools/harness.mk harness-lib) and returns its path."""
    res = subprocess.run(["make", "--no-print-directory", "-s", "-C", TOP, "-f", MAKEFILE,
                          "harness-lib"], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise HaltPollCapError(f"building {LIBRARY} failed:\n{res.stdout}{res.stderr}")
    return LIBRARY


def library():
    """Path of the built library; says how to build it if it is missing."""
    if not os.path.exists(LIBRARY):
        raise FileNotFoundError(f"{LIBRARY} does not exist: run `make harness-lib`")
    return LIBRARY


def _check_ns(value):
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_NS:
        raise ValueError(f"halt_poll_ns must be an integer in 0..{MAX_NS}, not {value!r}")
    return value


def run_env(halt_poll_ns=None, ctl_path=None):
    """Environment for QEMU (qemu.Config.env): the start-up value (None: leave KVM's
    default until set over the control socket) and the control socket's path (None: none)."""
    env = {}
    if halt_poll_ns is not None:
        env[ENV_NS] = str(_check_ns(halt_poll_ns))
    if ctl_path is not None:
        env[ENV_CTL] = ctl_path
    return env


def enabled_values(output):
    """[(ns, vm_fd)] for every value KVM accepted, in order, from QEMU's stderr."""
    return [(int(m.group(1)), int(m.group(2))) for m in ENABLED.finditer(output)]


def errors(output):
    """The library's error lines in QEMU's stderr."""
    return ERROR.findall(output)


def request(ctl_path, line, timeout):
    """Sends one request line and returns the reply line (without the newline)."""
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC) as s:
        while True:
            try:
                s.connect(ctl_path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as e:
                if time.monotonic() >= deadline:
                    raise HaltPollCapError(f"{ctl_path}: no control socket ({e}); is QEMU "
                                           "running with the library and the VM created?")
                time.sleep(0.02)
        s.settimeout(max(deadline - time.monotonic(), 0.1))
        s.sendall(line.encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(256)
            if not chunk:
                break
            reply += chunk
    return reply.decode().strip()


def _reply_value(ctl_path, reply):
    if not reply.startswith("ok "):
        raise HaltPollCapError(f"{ctl_path}: {reply or 'no reply'}")
    word = reply.split()[1]
    return None if word == "unset" else int(word)


def set_halt_poll_ns(ctl_path, value, timeout=5.0):
    """Applies a new per-VM halt-polling max to the running VM; returns it once KVM took
    it, raises HaltPollCapError with KVM's errno text if it refused."""
    reply = request(ctl_path, str(_check_ns(value)), timeout)
    got = _reply_value(ctl_path, reply)
    if got != value:
        raise HaltPollCapError(f"{ctl_path}: asked for {value}, library answered {reply!r}")
    return got


def get_halt_poll_ns(ctl_path, timeout=5.0):
    """The last value KVM accepted for this VM (KVM cannot be asked), None if never set."""
    return _reply_value(ctl_path, request(ctl_path, "get", timeout))
