"""Live-QEMU helpers for the harness tests. QEMU is started through qemu.run() on a thread
and kept paused (-S) so QMP, the vCPU threads and the preload library can be examined while
it is up; qemu.run's own timeout bounds every instance even if a test hangs.

A plain module, not a conftest.py: the test files import `conftest` (tests/conftest.py) by
name, which a second conftest module would shadow."""
import os
import re
import shutil
import signal
import tempfile
import threading
import time

import pytest

from idlelab.host import qemu

QEMU_TIMEOUT = 30  # seconds any one QEMU may live


class LiveQemu:
    """A running (paused) QEMU. `lines` collects its console and stderr as they arrive."""

    def __init__(self, cfg, timeout=QEMU_TIMEOUT):
        if not os.path.exists(cfg.kernel):
            pytest.fail(f"{cfg.kernel} is missing: run `make` first")
        self.cfg, self.lines, self.proc = cfg, [], None
        self.result = self.error = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(timeout,), daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("QEMU did not start within 10 s")
        if self.error:
            raise self.error

    def _run(self, timeout):
        try:
            self.result = qemu.run(self.cfg, timeout=timeout, on_line=self.lines.append,
                                   on_start=self._on_start)
        except Exception as e:  # reported by the constructor or stop()
            self.error = e
        finally:
            self._started.set()

    def _on_start(self, proc):
        self.proc = proc
        self._started.set()

    @property
    def pid(self):
        return self.proc.pid

    def output(self):
        return "\n".join(self.lines)

    def wait_line(self, pattern, timeout=10):
        """The first output line matching `pattern` (a regex), waiting up to `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if re.search(pattern, line):
                    return line
            if not self._thread.is_alive():
                break
            time.sleep(0.02)
        raise AssertionError(f"no line matching {pattern!r} from QEMU:\n{self.output()}")

    def wait(self, timeout=QEMU_TIMEOUT):
        """Waits for QEMU to end on its own; returns qemu.run's Result."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"QEMU still running after {timeout} s:\n{self.output()}")
        return self.result

    def stop(self):
        """Kills QEMU (its whole process group) and waits for run() to return."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._thread.join(15)
        return self.result


def short_tmpdir():
    """A new directory for unix sockets under $TMPDIR when that is short, else /tmp. Not
    always /tmp: the nested host's /tmp is the machine's, shared over 9p, whose server
    refuses sockets (QEMU 7.2+dfsg-7+deb12u18: "attempt to open special file"); its TMPDIR
    is a tmpfs of its own."""
    top = tempfile.gettempdir()
    return tempfile.mkdtemp(prefix="idl-", dir=top if len(top) <= 48 else "/tmp")


@pytest.fixture
def sockdir():
    """A short directory for unix sockets (their paths are limited to 107 bytes)."""
    path = short_tmpdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def start_paused(sockdir, accel, smp=2, **kw):
    """A paused QEMU with a QMP socket at sockdir/qmp; returns (LiveQemu, qmp path)."""
    path = os.path.join(sockdir, f"qmp-{accel}-{smp}")
    cfg = qemu.Config(smp=smp, accel=accel, qmp=path, extra=["-S"], **kw)
    return LiveQemu(cfg), path
