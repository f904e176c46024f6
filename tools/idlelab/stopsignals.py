"""What a stop signal (SIGINT, SIGTERM, SIGHUP) does to a tool: it raises Interrupted where the
tool was, so every `finally` and `with` on the way out runs (QEMU killed, the kvm parameters
put back, the results folder finished), never a death halfway through one of them.

One mechanism for the whole harness. The bench holds a Signals over its invocation: the first
signal raises Interrupted unless inside deferred(), where it waits for the block's end; any
later one is only noted, so finishing the results folder cannot itself be interrupted. Code
that must put something back whoever runs it (host/kvmparams.override) takes raising(): the
Signals in force (the bench's), or else one for its block that, once the block has unwound,
delivers the signal as the handler before it would have: a Python handler is called, the
default action ends the process by the signal, an ignored signal stays ignored.

Handlers can only be set from the main thread; elsewhere a Signals sets none, and the code's
own try/finally (and the kvm parameters' journal, for a SIGKILL) still cover it."""
import contextlib
import os
import signal
import threading

STOP = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_active = None          # the Signals whose handlers are in force, if any


class Interrupted(KeyboardInterrupt):
    """A stop signal, raised where the tool was. A KeyboardInterrupt, so everything that
    already cleans up after Ctrl-C (qemu.run, kvmparams.override) does so for all three."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Signals:
    """While active (a with block in the main thread): the first of STOP raises Interrupted
    unless inside deferred(), where it waits for the block's end; any later one is only
    noted. redeliver: at the block's end, a signal that interrupted it is delivered as the
    handler before this one would have (raising()'s own Signals)."""

    def __init__(self, redeliver=False):
        self.redeliver = redeliver
        self.pending = None     # the first signal received
        self.fired = False      # Interrupted has been raised
        self.deferring = 0
        self._old = {}
        self._outer = None

    def __enter__(self):
        global _active
        if threading.current_thread() is threading.main_thread():
            for s in STOP:
                if self.redeliver and signal.getsignal(s) in (signal.SIG_IGN, None):
                    continue    # meant to be ignored (or set outside Python): left so
                self._old[s] = signal.signal(s, self._on_signal)
            self._outer, _active = _active, self
        return self

    def __exit__(self, _type, exc, _tb):
        global _active
        old, self._old = self._old, {}
        for s, handler in old.items():
            signal.signal(s, handler)
        if _active is self:
            _active = self._outer
        if self.redeliver and isinstance(exc, Interrupted) and exc.signum in old:
            _deliver(exc.signum, old[exc.signum])
        return False

    def _on_signal(self, signum, _frame):
        if self.pending is None:
            self.pending = signum
        if not self.deferring and not self.fired:
            self.fired = True
            raise Interrupted(signum)

    @contextlib.contextmanager
    def deferred(self):
        """A signal inside the block takes effect at its end (a raw file and its place in
        the records are written together or not at all; the kvm parameters put back whole)."""
        self.deferring += 1
        try:
            yield
        finally:
            self.deferring -= 1
        if not self.deferring and self.pending is not None and not self.fired:
            self.fired = True
            raise Interrupted(self.pending)

    def finishing(self):
        """From here on signals are only noted: the folder is being finished."""
        self.deferring += 1


@contextlib.contextmanager
def raising():
    """The block with stop signals raised as Interrupted: under the Signals in force (the
    bench's, which decides what a signal then does), or under one of its own that delivers
    the signal as before once the block has unwound. Yields the Signals (for deferred())."""
    if _active is not None:
        yield _active
        return
    with Signals(redeliver=True) as signals:
        yield signals


def _deliver(signum, handler):
    """The signal as if no Signals had been there: a Python handler called, the default
    action taken (the handler is back in place: the process dies by it), SIG_IGN nothing."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)
