"""The QMP client (host/qmp.py) against a real, paused QEMU started through qemu.py (KVM and TCG)."""
import os
import shutil
import threading
import time

import pytest

from conftest import require
from idlelab.host import qemu, qmp
import live
from live import LiveQemu, start_paused

sockdir = live.sockdir  # a fixture: short paths for unix sockets

SMP = 3
HALT_STATS = ("halt_exits", "halt_attempted_poll", "halt_successful_poll", "halt_wakeup",
              "halt_poll_success_ns", "halt_poll_fail_ns", "halt_wait_ns")
HISTOGRAMS = ("halt_poll_success_hist", "halt_poll_fail_hist", "halt_wait_hist")


def _paused(accel):
    """(accel, LiveQemu, open QMP session) for a paused QEMU, torn down after the module."""
    require(accel)
    d = live.short_tmpdir()
    vm, path = start_paused(d, accel, smp=SMP)
    session = qmp.QMP(path, timeout=10, proc=vm.proc)
    yield accel, vm, session
    session.close()
    vm.stop()
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def kvm_vm():
    yield from _paused("kvm")


@pytest.fixture(scope="module")
def tcg_vm():
    yield from _paused("tcg")


@pytest.fixture(params=["kvm", "tcg"])
def paused(request):
    """Either accelerator's QEMU, for checks that hold under both."""
    return request.getfixturevalue(f"{request.param}_vm")


def test_query_cpus_fast_lists_every_vcpu_with_its_thread(paused):
    _, vm, session = paused
    cpus = session.query_cpus_fast()
    assert [c["cpu-index"] for c in cpus] == list(range(SMP))
    tids = set(map(int, os.listdir(f"/proc/{vm.pid}/task")))
    for c in cpus:
        assert c["thread-id"] in tids, "thread-id is not a thread of the QEMU process"
        assert c["qom-path"].startswith("/machine/")
    assert len({c["thread-id"] for c in cpus}) == SMP


@pytest.mark.kvm
def test_query_stats_gives_halt_counters_per_vcpu_under_kvm(kvm_vm):
    _, _, session = kvm_vm
    stats = session.query_stats_vcpus()
    assert sorted(stats) == list(range(SMP))
    for cpu, s in stats.items():
        for name in HALT_STATS:
            assert isinstance(s[name], int), f"vCPU {cpu}: {name} missing or not a counter"
        for name in HISTOGRAMS:
            assert isinstance(s[name], list) and len(s[name]) == 32, f"vCPU {cpu}: {name}"
        assert s["blocking"] in (0, 1)


@pytest.mark.kvm
def test_query_stats_names_filter(kvm_vm):
    _, _, session = kvm_vm
    stats = session.query_stats_vcpus(["halt_exits", "halt_wait_hist"])
    assert all(set(s) == {"halt_exits", "halt_wait_hist"} for s in stats.values())
    assert len(stats) == SMP


def test_query_stats_is_empty_under_tcg(tcg_vm):
    _, _, session = tcg_vm
    assert session.query_stats_vcpus() == {}
    assert session.query_stats_schemas() == {}


@pytest.mark.kvm
def test_schemas_say_how_to_take_deltas(kvm_vm):
    _, _, session = kvm_vm
    vcpu = session.query_stats_schemas()["vcpu"]
    assert vcpu["halt_exits"]["type"] == "cumulative"
    assert vcpu["blocking"]["type"] == "instant"
    assert vcpu["halt_wait_hist"]["type"] == "log2-histogram"
    assert vcpu["halt_wait_ns"]["exponent"] == -9


def test_errors_carry_the_qmp_class_and_description(paused):
    _, _, session = paused
    with pytest.raises(qmp.QMPError) as e:
        session.execute("no-such-command")
    assert e.value.cls == "CommandNotFound"
    assert "no-such-command" in str(e.value)
    assert session.execute("query-status")["status"] == "prelaunch"  # still usable


def test_events_are_buffered_and_retrievable(paused):
    _, _, session = paused
    session.execute("system_powerdown")        # only queues a request: QEMU emits POWERDOWN
    event = session.wait_event("POWERDOWN", timeout=5)
    assert event["event"] == "POWERDOWN" and "timestamp" in event
    session.execute("query-status")
    assert session.events("POWERDOWN") == []    # wait_event took it out of the buffer


def test_connect_retries_until_qemu_creates_the_socket(sockdir):
    require("tcg")
    started = {}

    def late_start():
        time.sleep(0.3)
        started["vm"], _ = start_paused(sockdir, "tcg", smp=1)

    t = threading.Thread(target=late_start)
    t.start()
    try:
        t0 = time.monotonic()
        with qmp.QMP(os.path.join(sockdir, "qmp-tcg-1"), timeout=10) as session:
            assert time.monotonic() - t0 >= 0.3
            assert session.query_cpus_fast()[0]["cpu-index"] == 0
    finally:
        t.join(15)
        if "vm" in started:
            started["vm"].stop()


def test_connect_gives_up_at_the_deadline(sockdir):
    t0 = time.monotonic()
    with pytest.raises(qmp.QMPConnectError, match="no QMP server"):
        qmp.QMP(os.path.join(sockdir, "nothing"), timeout=0.3)
    assert time.monotonic() - t0 < 2


def test_connect_stops_waiting_when_qemu_exits(sockdir):
    cfg = qemu.Config(accel="tcg", qmp=os.path.join(sockdir, "q"), extra=["-no-such-option"])
    vm = LiveQemu(cfg)
    with pytest.raises(qmp.QMPConnectError, match="QEMU exited"):
        qmp.QMP(cfg.qmp, timeout=10, proc=vm.proc)
    vm.stop()


def _scripted_server(path, first_lines):
    """A one-connection server that sends `first_lines`, then answers qmp_capabilities."""
    import json
    import socket
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        with conn:
            for line in first_lines:
                conn.sendall(json.dumps(line).encode() + b"\n")
            line = conn.makefile().readline()
            if line:                                 # a client that refused us sends nothing
                request = json.loads(line)
                conn.sendall(json.dumps({"return": {}, "id": request["id"]}).encode() + b"\n")
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


GREETING = {"QMP": {"version": {}, "capabilities": []}}
RESUME = {"timestamp": {"seconds": 1, "microseconds": 0}, "event": "RESUME"}


def test_an_event_before_the_greeting_is_kept(sockdir):
    """QEMU can send the start's RESUME to a client that connected as it started, before the
    greeting (a bench failed on it once)."""
    path = os.path.join(sockdir, "early-event")
    t = _scripted_server(path, [RESUME, GREETING])
    with qmp.QMP(path, timeout=5) as session:
        assert session.greeting == GREETING
        assert session.events("RESUME") == [RESUME]
    t.join(5)


def test_something_else_before_the_greeting_is_refused(sockdir):
    path = os.path.join(sockdir, "no-greeting")
    t = _scripted_server(path, [{"return": {}}])
    with pytest.raises(qmp.QMPConnectError, match="not a QMP greeting"):
        qmp.QMP(path, timeout=5)
    t.join(5)
