"""libhaltpoll_cap.so in a real QEMU: KVM_CAP_HALT_POLL at VM creation, live changes over the
control socket, refusals. QEMU stays paused (-S): whether the guest's halts then follow the
value is an end-to-end check for a guest that halts for a while."""
import os
import subprocess

import pytest

from conftest import TOP, require
from idlelab.derive import kvmdelta
from idlelab.host import haltpollcap, qemu, qmp, vcputhreads
import live
from live import LiveQemu, start_paused

sockdir = live.sockdir  # a fixture: short paths for unix sockets

ENABLED = r"idlelab-haltpoll-cap: KVM_CAP_HALT_POLL="


@pytest.fixture(scope="module")
def lib():
    """Built once for this module, through the rule `make harness-lib` uses."""
    return haltpollcap.build()


def test_build_rule_makes_the_library(lib):
    assert lib == os.path.join(TOP, "build", "host", "libhaltpoll_cap.so")
    res = subprocess.run(["make", "-s", "-C", TOP, "-f", "tools/harness.mk", "-q",
                          "build/host/libhaltpoll_cap.so"], timeout=30)
    assert res.returncode == 0, "library is out of date right after building it"
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                        timeout=30)
    assert " T ioctl" in nm.stdout


def test_env_for_a_run():
    assert haltpollcap.run_env() == {}
    assert haltpollcap.run_env(0, "run/ctl.sock") == {"IDLELAB_HALT_POLL_NS": "0",
                                                      "IDLELAB_HALT_POLL_CTL": "run/ctl.sock"}
    for bad in (-1, 2 ** 32, "100", 1.5, True):
        with pytest.raises(ValueError):
            haltpollcap.run_env(bad)


def test_qemu_config_env_and_preload(monkeypatch):
    assert qemu.process_env(qemu.Config()) is None  # nothing asked: QEMU inherits ours
    monkeypatch.setenv("LD_PRELOAD", "/other.so")
    env = qemu.process_env(qemu.Config(preload=["/a.so"], env={"IDLELAB_HALT_POLL_NS": 5}))
    assert env["LD_PRELOAD"] == "/a.so /other.so"
    assert env["IDLELAB_HALT_POLL_NS"] == "5" and env["PATH"] == os.environ["PATH"]


def test_a_library_whose_path_has_a_space_is_preloaded_by_descriptor(tmp_path):
    """LD_PRELOAD splits at spaces and colons: such a path goes by /proc/self/fd/N, which QEMU
    inherits (a tree in a folder named "user tree" once got no per-VM window in any run)."""
    lib = tmp_path / "my tree" / "lib.so"
    lib.parent.mkdir()
    lib.write_bytes(b"\x7fELF")
    plain = qemu.Config(preload=["/a.so"])
    assert qemu.preload_by_descriptor(plain) == (plain, [])
    cfg, fds = qemu.preload_by_descriptor(qemu.Config(preload=["/a.so", str(lib)]))
    try:
        assert len(fds) == 1 and cfg.preload == ["/a.so", f"/proc/self/fd/{fds[0]}"]
        assert fds[0] in cfg.pass_fds
        assert os.path.samefile(cfg.preload[1], lib)
        assert qemu.process_env(cfg)["LD_PRELOAD"].split()[:2] == cfg.preload
    finally:
        for fd in fds:
            os.close(fd)


def test_enabled_line_parsing():
    out = "x\nidlelab-haltpoll-cap: KVM_CAP_HALT_POLL=0 on vm fd 9\n" \
          "idlelab-haltpoll-cap: KVM_CAP_HALT_POLL=200000 on vm fd 9\n" \
          "idlelab-haltpoll-cap: error: KVM refused KVM_CAP_HALT_POLL=5 on vm fd 9: oops\n"
    assert haltpollcap.enabled_values(out) == [(0, 9), (200000, 9)]
    assert len(haltpollcap.errors(out)) == 1


def _start(sockdir, lib, ns, ctl=True, smp=2):
    ctl_path = os.path.join(sockdir, "ctl") if ctl else None
    vm, qmp_path = start_paused(sockdir, "kvm", smp=smp, preload=[lib],
                                env=haltpollcap.run_env(ns, ctl_path))
    return vm, qmp_path, ctl_path


@pytest.mark.kvm
def test_cap_is_enabled_at_vm_creation_and_changes_live(sockdir, lib):
    require("kvm")
    vm, qmp_path, ctl = _start(sockdir, lib, 0)
    try:
        line = vm.wait_line(ENABLED)
        assert haltpollcap.enabled_values(line)[0][0] == 0
        assert haltpollcap.get_halt_poll_ns(ctl) == 0
        assert haltpollcap.set_halt_poll_ns(ctl, 50000) == 50000
        assert haltpollcap.get_halt_poll_ns(ctl) == 50000
        assert haltpollcap.set_halt_poll_ns(ctl, 0) == 0
        vm.wait_line(ENABLED + "50000 on vm fd")
        # QEMU is unaffected by the library: QMP works and the VM is still paused.
        with qmp.QMP(qmp_path, timeout=10, proc=vm.proc) as session:
            assert session.execute("query-status")["status"] == "prelaunch"
    finally:
        vm.stop()
    values = [ns for ns, _ in haltpollcap.enabled_values(vm.output())]
    assert values == [0, 50000, 0]


@pytest.mark.kvm
def test_control_socket_refuses_bad_values(sockdir, lib):
    require("kvm")
    vm, _, ctl = _start(sockdir, lib, None)
    try:
        assert haltpollcap.get_halt_poll_ns(ctl) is None  # never set: KVM's global default
        for bad in ("abc", "-1", "4294967296", "", "1 2"):
            reply = haltpollcap.request(ctl, bad, 5)
            assert reply.startswith("error 22 "), (bad, reply)
        assert haltpollcap.get_halt_poll_ns(ctl) is None
        with pytest.raises(ValueError):
            haltpollcap.set_halt_poll_ns(ctl, 2 ** 32)
        assert haltpollcap.set_halt_poll_ns(ctl, 4294967295) == 4294967295  # 32-bit max
    finally:
        vm.stop()
    assert [ns for ns, _ in haltpollcap.enabled_values(vm.output())] == [4294967295]


@pytest.mark.kvm
def test_without_env_the_library_does_nothing(sockdir, lib):
    require("kvm")
    vm, qmp_path, _ = _start(sockdir, lib, None, ctl=False)
    try:
        with qmp.QMP(qmp_path, timeout=10, proc=vm.proc) as session:
            assert session.execute("query-status")["status"] == "prelaunch"
    finally:
        vm.stop()
    assert "idlelab-haltpoll-cap" not in vm.output()
    assert "ctl" not in os.listdir(sockdir)


@pytest.mark.kvm
def test_a_malformed_start_value_stops_qemu(sockdir, lib):
    require("kvm")
    cfg = qemu.Config(accel="kvm", extra=["-S"], preload=[lib],
                      env={"IDLELAB_HALT_POLL_NS": "lots"})
    res = LiveQemu(cfg).wait(20)
    assert res.status not in (0, 33) and not res.timed_out
    assert "IDLELAB_HALT_POLL_NS='lots' is not a decimal value" in res.output
    assert "KVM_CREATE_VM" in res.output, "QEMU should report the failed VM creation"


@pytest.mark.kvm
def test_halt_poll_zero_paused_vm_does_not_poll(sockdir, lib):
    """What can be checked without a guest that halts: with the cap at 0 the stats are
    readable per vCPU and halt_attempted_poll does not move."""
    require("kvm")
    vm, qmp_path, _ = _start(sockdir, lib, 0, ctl=False)
    try:
        vm.wait_line(ENABLED + "0 on")
        with qmp.QMP(qmp_path, timeout=10, proc=vm.proc) as session:
            a = vcputhreads.take_snapshot(session, vm.pid)
            b = vcputhreads.take_snapshot(session, vm.pid)
    finally:
        vm.stop()
    d = kvmdelta.delta(a, b)
    assert sorted(d.per_vcpu_stats) == [0, 1]
    assert all(s["halt_attempted_poll"] == 0 for s in d.per_vcpu_stats.values())
    assert all(s["halt_attempted_poll"] == 0 for s in b.per_vcpu_stats.values())
