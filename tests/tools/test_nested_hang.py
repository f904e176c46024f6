"""A nested-host job that hangs while its host still beats (host/nested.py's _Quiet): silent
for HUNG_S with the host's vCPUs idle is hung; silent but busy (a long step that prints
nothing) is not, and is judged again a full HUNG_S later; any output starts over."""
import os
import subprocess
import sys

from idlelab.host import nested


class Clock:
    def __init__(self):
        self.cpu = 0.0

    def __call__(self):
        return self.cpu


def test_silent_and_idle_for_hung_s_is_hung():
    cpu = Clock()
    q = nested._Quiet(cpu, now=0.0)
    cpu.cpu = 0.5                            # a heartbeat's worth of CPU
    assert not q.hung(nested.HUNG_S - 1)
    assert q.hung(nested.HUNG_S + 1)


def test_an_idle_guests_ticking_is_busy_and_a_hosts_quiet_is_not():
    """Measured 2026-12-07: a healthy host whose guest only idles keeps its vCPU threads at
    47 % of a CPU; a hung one was under 23 % (nested.py HUNG_CPU_SHARE)."""
    for share, hung in ((0.47, False), (0.2, True)):
        cpu = Clock()
        q = nested._Quiet(cpu, now=0.0)
        cpu.cpu = share * (nested.HUNG_S + 1)
        assert q.hung(nested.HUNG_S + 1) is hung, share


def test_output_starts_the_silence_over():
    cpu = Clock()
    q = nested._Quiet(cpu, now=0.0)
    q.output(100.0)
    assert not q.hung(100.0 + nested.HUNG_S - 1)
    assert q.hung(100.0 + nested.HUNG_S)


def test_a_busy_host_is_not_hung_and_is_judged_again_later():
    cpu = Clock()
    q = nested._Quiet(cpu, now=0.0)
    cpu.cpu = nested.HUNG_S * 0.5            # its guests ran half the time
    assert not q.hung(nested.HUNG_S)
    assert not q.hung(nested.HUNG_S + 10)    # the window restarted at the busy check
    assert q.hung(2 * nested.HUNG_S + 1)     # then idle for a whole HUNG_S


def test_a_gone_qemu_is_not_called_hung():
    q = nested._Quiet(lambda: None, now=0.0)
    assert not q.hung(10 * nested.HUNG_S)


def test_vcpu_cpu_s_counts_only_tcg_vcpu_threads():
    assert nested.vcpu_cpu_s(os.getpid()) == 0.0        # python has no "CPU n/TCG" thread
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert nested.vcpu_cpu_s(p.pid) is None             # gone


def test_vcpu_cpu_s_reads_a_running_tcg_qemus_vcpus():
    """The nested host's QEMU names its vCPU threads `CPU n/TCG` (debug-threads=on): a TCG
    QEMU running idlelab for a second has spent CPU there, and vcpu_cpu_s sees it. idle=poll
    keeps the vCPUs running: the kernel charges a thread's CPU by the tick, and one that halts
    between short bursts can be charged nothing (make test saw 0.0 once with idle=halt)."""
    from idlelab.host import qemu
    cfg = qemu.Config(smp=2, accel="tcg",
                      cmdline="workload=periodic duration=1s period=100us idle=poll")
    seen = []

    def sample(line):
        if "window state=close" in line and not seen:
            seen.append(nested.vcpu_cpu_s(procs[0].pid))

    procs = []
    res = qemu.run(cfg, timeout=60, on_start=procs.append, on_line=sample)
    assert res.outcome.name == "SUCCESS" and seen and seen[0] > 0.1, (seen, res.output[-500:])


def test_the_fault_is_retried_and_named():
    assert "hung" in nested.FAULTS and f"{nested.HUNG_S} s" in nested.FAULTS["hung"]
