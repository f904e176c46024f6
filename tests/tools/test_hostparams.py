"""KVM's global parameters (host/kvmparams.py) against a fake parameter directory: never the real /sys/module/kvm."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import TOP
from idlelab.costtable import measuring
from idlelab.host import kvmparams
from idlelab.host.kvmparams import PARAMS, ParamsReadOnly

HOST = {"halt_poll_ns": 200000, "halt_poll_ns_grow": 2, "halt_poll_ns_grow_start": 10000,
        "halt_poll_ns_shrink": 2}
NEW = {"halt_poll_ns": 0, "halt_poll_ns_shrink": 0}


@pytest.fixture
def pdir(tmp_path):
    """A fake /sys/module/kvm/parameters holding this machine's values, mode 0644."""
    d = tmp_path / "parameters"
    d.mkdir()
    for name, value in HOST.items():
        (d / name).write_text(f"{value}\n")
        (d / name).chmod(0o644)
    return str(d)


@pytest.fixture
def journal(tmp_path):
    return str(tmp_path / "kvm-params.journal")


def test_read_all(pdir):
    assert kvmparams.read_all(pdir) == HOST
    assert kvmparams.writable(param_dir=pdir)


def test_override_applies_then_restores_on_normal_exit(pdir, journal):
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with kvmparams.override(NEW, journal, pdir) as ov:
        assert kvmparams.read_all(pdir) == {**HOST, **NEW}
        with open(journal) as f:
            assert json.load(f)["old"] == {"halt_poll_ns": 200000, "halt_poll_ns_shrink": 2}
        assert ov.note is None and ov.old == {"halt_poll_ns": 200000, "halt_poll_ns_shrink": 2}
        assert signal.getsignal(signal.SIGTERM) not in (handlers[signal.SIGTERM],)
    assert kvmparams.read_all(pdir) == HOST
    assert not os.path.exists(journal)
    assert os.listdir(os.path.dirname(journal)) == ["parameters"]  # no temporary left
    assert {s: signal.getsignal(s) for s in handlers} == handlers


def test_override_restores_on_exception(pdir, journal):
    with pytest.raises(RuntimeError, match="boom"):
        with kvmparams.override(NEW, journal, pdir):
            raise RuntimeError("boom")
    assert kvmparams.read_all(pdir) == HOST
    assert not os.path.exists(journal)


def test_bad_values_are_refused_before_anything_changes(pdir, journal):
    for bad in ({"halt_poll_nss": 1}, {"halt_poll_ns": -1}, {"halt_poll_ns": 2 ** 32},
                {"halt_poll_ns": "100"}):
        with pytest.raises(ValueError):
            with kvmparams.override(bad, journal, pdir):
                pass
    assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)


def test_read_only_parameters_raise_with_the_fixed_values(pdir, journal):
    for name in ("halt_poll_ns", "halt_poll_ns_shrink"):
        os.chmod(os.path.join(pdir, name), 0o444)  # root passes access(), the mode decides
    assert kvmparams.read_only_params(param_dir=pdir) == ["halt_poll_ns", "halt_poll_ns_shrink"]
    assert not kvmparams.writable(param_dir=pdir)
    assert kvmparams.writable(["halt_poll_ns_grow"], pdir)
    with pytest.raises(ParamsReadOnly) as e:
        with kvmparams.override(NEW, journal, pdir):
            pytest.fail("must not get here")
    assert e.value.names == ["halt_poll_ns", "halt_poll_ns_shrink"]
    assert e.value.fixed == HOST
    assert "halt_poll_ns=200000" in str(e.value) and "read-only" in str(e.value)
    assert not os.path.exists(journal)
    # the writable ones can still be overridden
    with kvmparams.override({"halt_poll_ns_grow": 4}, journal, pdir):
        assert kvmparams.read("halt_poll_ns_grow", pdir) == 4
    assert kvmparams.read_all(pdir) == HOST


CHILD = textwrap.dedent("""
    import signal, sys, time
    sys.path.insert(0, {tools!r})
    from idlelab.host import kvmparams
    if {prev_handler!r}:
        def prev(signum, frame):
            print("previous handler ran", flush=True)
            sys.exit(7)
        signal.signal(signal.SIGTERM, prev)
    if {ignore_hup!r}:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with kvmparams.override({new!r}, {journal!r}, {pdir!r}) as ov:
        print("applied", ov.note, flush=True)
        time.sleep(30)
    print("not reached", flush=True)
""")


def child(pdir, journal, prev_handler=False, ignore_hup=False):
    """A process that overrides NEW and sleeps; returns once the values are applied."""
    code = CHILD.format(tools=os.path.join(TOP, "tools"), new=NEW, journal=journal,
                        pdir=pdir, prev_handler=prev_handler, ignore_hup=ignore_hup)
    # from SIGINT's default, as a terminal gives it: a test run in the background inherits it
    # ignored, and Python then never installs its KeyboardInterrupt
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    line = proc.stdout.readline()
    assert line.startswith("applied"), line + proc.stderr.read()
    assert kvmparams.read_all(pdir) == {**HOST, **NEW}
    return proc


def test_sigterm_restores_then_dies_by_the_signal(pdir, journal):
    proc = child(pdir, journal)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == -signal.SIGTERM
    assert kvmparams.read_all(pdir) == HOST
    assert not os.path.exists(journal)


def test_sighup_restores_then_dies_by_the_signal(pdir, journal):
    """SIGHUP (the terminal closed) is a stop signal as SIGINT and SIGTERM are."""
    proc = child(pdir, journal)
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(10) == -signal.SIGHUP
    assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)


def test_an_ignored_signal_stays_ignored(pdir, journal):
    """A process that ignores SIGHUP (nohup) keeps its override through one; SIGTERM then
    still restores."""
    proc = child(pdir, journal, ignore_hup=True)
    proc.send_signal(signal.SIGHUP)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(1)
    assert kvmparams.read_all(pdir) == {**HOST, **NEW}
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == -signal.SIGTERM
    assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)


def test_sigterm_restores_then_runs_the_previous_handler(pdir, journal):
    proc = child(pdir, journal, prev_handler=True)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 7
    assert "previous handler ran" in proc.stdout.read()
    assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)


def test_sigint_restores_then_raises_keyboard_interrupt(pdir, journal):
    proc = child(pdir, journal)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) != 0
    assert "KeyboardInterrupt" in proc.stderr.read()
    assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)


def test_journal_of_a_killed_run_is_restored_by_the_next_run(pdir, journal):
    proc = child(pdir, journal)
    proc.kill()
    proc.wait(10)
    assert kvmparams.read_all(pdir) == {**HOST, **NEW}, "SIGKILL cannot be caught"
    assert os.path.exists(journal)
    with kvmparams.override({"halt_poll_ns_grow": 3}, journal, pdir) as ov:
        assert ov.note and f"run {proc.pid}" in ov.note
        assert "halt_poll_ns=200000" in ov.note and "halt_poll_ns_shrink=2" in ov.note
        assert ov.old == {"halt_poll_ns_grow": 2}
        assert kvmparams.read_all(pdir) == {**HOST, "halt_poll_ns_grow": 3}
    assert kvmparams.read_all(pdir) == HOST
    assert not os.path.exists(journal)


def test_recover_alone(pdir, journal):
    assert kvmparams.recover(journal, pdir) is None
    proc = child(pdir, journal)
    proc.kill()
    proc.wait(10)
    assert "restored kvm parameters" in kvmparams.recover(journal, pdir)
    assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)


def test_journal_of_a_live_run_is_left_alone(pdir, journal):
    other = subprocess.Popen(["sleep", "30"])
    try:
        with open(journal, "w") as f:
            json.dump({"pid": other.pid, "time": 0, "param_dir": pdir, "old": HOST}, f)
        with pytest.raises(kvmparams.JournalError, match=f"run {other.pid} is still"):
            with kvmparams.override(NEW, journal, pdir):
                pass
    finally:
        other.kill()
        other.wait()
    assert os.path.exists(journal) and kvmparams.read_all(pdir) == HOST


def test_journal_for_another_directory_is_refused(pdir, journal, tmp_path):
    with open(journal, "w") as f:
        json.dump({"pid": 0, "time": 0, "param_dir": str(tmp_path / "elsewhere"),
                   "old": HOST}, f)
    with pytest.raises(kvmparams.JournalError, match="belongs to"):
        kvmparams.recover(journal, pdir)


def test_a_torn_or_foreign_journal_is_refused(pdir, journal):
    for text in ("{", "[]", '{"pid": 1}', '{"pid": 0, "param_dir": "x", "old": {"a": 1}}'):
        with open(journal, "w") as f:
            f.write(text)
        with pytest.raises(kvmparams.JournalError, match="unreadable journal"):
            kvmparams.recover(journal, pdir)
    assert kvmparams.read_all(pdir) == HOST


def test_params_are_the_four_halt_polling_ones():
    assert PARAMS == ("halt_poll_ns", "halt_poll_ns_grow", "halt_poll_ns_grow_start",
                      "halt_poll_ns_shrink")
    assert kvmparams.PARAM_DIR == "/sys/module/kvm/parameters"


def test_cost_boot_params_set_for_the_boots_and_restored(pdir, journal, monkeypatch):
    """The cost table's boots run with the seeds' always-poll values where the parameters are
    writable (ipi_poll_rtt's responder and timer_poll's CPU polled from their first halt on), the host's put back
    after, even when a boot fails; where they are read-only, the host's own, and why; and
    nothing off KVM."""
    monkeypatch.setattr(measuring.qemu, "resolve_accel", lambda accel: accel)
    with measuring.cost_boot_params("kvm", pdir, journal) as got:
        assert got == {"values": measuring.COST_BOOT_PARAMS, "set": True}
        assert kvmparams.read_all(pdir) == measuring.COST_BOOT_PARAMS
    assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)
    with pytest.raises(RuntimeError, match="boot"):
        with measuring.cost_boot_params("kvm", pdir, journal):
            raise RuntimeError("boot failed")
    assert kvmparams.read_all(pdir) == HOST
    os.chmod(os.path.join(pdir, "halt_poll_ns_grow"), 0o444)
    with measuring.cost_boot_params("kvm", pdir, journal) as got:
        assert not got["set"] and got["values"] == HOST
        assert "halt_poll_ns_grow" in got["why"] and "ipi_poll_rtt" in got["why"]
    with measuring.cost_boot_params("tcg", pdir, journal) as got:
        assert got is None
    with measuring.cost_boot_params("kvm", pdir + "-none", journal) as got:
        assert got["set"] is False and "no kvm module parameters" in got["why"]
