"""One mechanism for stop signals (stopsignals.py): the bench's Signals raises the first where
the bench is, holds one inside deferred() until the block's end and only notes the later
ones; kvmparams.override takes the Signals in force instead of a handler of its own, so its
restore runs in its `finally`, whole, whatever arrives meanwhile. Against a fake parameter
directory, in this process (the handlers are put back at the end of each test)."""
import os
import signal
import time

import pytest

from idlelab import stopsignals
from idlelab.host import kvmparams
from idlelab.stopsignals import Interrupted, Signals

# the fake parameter folder and journal of the kvm parameters' own tests
from test_hostparams import HOST, journal, pdir  # noqa: E402,F401

NEW = {"halt_poll_ns": 0}


@pytest.fixture(autouse=True)
def default_dispositions():
    """The tests start from the stop signals' defaults: a test run started in the background
    (`make test &`) inherits SIGINT ignored, which raising() rightly leaves so."""
    old = {s: signal.getsignal(s) for s in stopsignals.STOP}
    for s in stopsignals.STOP:
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    yield
    for s, handler in old.items():
        signal.signal(s, handler)


def handlers():
    return {s: signal.getsignal(s) for s in stopsignals.STOP}


def land(signum):
    """Sends signum to this process and gives Python the moment to run its handler."""
    os.kill(os.getpid(), signum)
    time.sleep(0.2)


def test_the_first_signal_raises_where_the_bench_is_and_later_ones_are_noted():
    before = handlers()
    with Signals() as signals:
        assert set(handlers().values()) == {signals._on_signal}
        with pytest.raises(Interrupted) as e:
            land(signal.SIGTERM)
        assert e.value.signum == signal.SIGTERM and isinstance(e.value, KeyboardInterrupt)
        land(signal.SIGINT)               # noted only: nothing raised
        assert signals.pending == signal.SIGTERM
    assert handlers() == before


def test_a_signal_inside_deferred_takes_effect_at_its_end():
    done = []
    with Signals() as signals:
        with pytest.raises(Interrupted) as e:
            with signals.deferred():
                land(signal.SIGHUP)
                done.append("the block went on")
        assert done == ["the block went on"] and e.value.signum == signal.SIGHUP


def test_override_under_the_benchs_signals_installs_nothing_and_restores(pdir, journal):
    with Signals() as signals:
        with pytest.raises(Interrupted):
            with kvmparams.override(NEW, journal, pdir):
                assert set(handlers().values()) == {signals._on_signal}
                assert kvmparams.read_all(pdir) == {**HOST, **NEW}
                land(signal.SIGTERM)
                pytest.fail("the signal did not stop the block")
        assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)


def test_a_signal_during_the_restore_waits_for_it_to_finish(pdir, journal, monkeypatch):
    """The signal lands while the restore is halfway (values written, journal not yet
    removed): the restore still ends whole, and the signal is raised after it."""
    remove = kvmparams._remove_journal

    def interrupted_remove(path):
        land(signal.SIGTERM)
        remove(path)
    monkeypatch.setattr(kvmparams, "_remove_journal", interrupted_remove)
    with Signals():
        with pytest.raises(Interrupted):
            with kvmparams.override(NEW, journal, pdir):
                pass
        assert kvmparams.read_all(pdir) == HOST and not os.path.exists(journal)


def test_raising_outside_a_bench_sets_handlers_for_its_block_only():
    before = handlers()
    with stopsignals.raising() as signals:
        assert signals.redeliver and set(handlers().values()) == {signals._on_signal}
        with stopsignals.raising() as inner:
            assert inner is signals          # the Signals in force, not a second one
    assert handlers() == before
