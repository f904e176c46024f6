"""How long the host kept each vCPU from running: WaitSampler follows the run delay of a QEMU's
vCPU threads over a run; inside the nested KVM host, the waits this machine gave the nested
host's own vCPUs are added (OuterWaitWriter outside, OuterWait inside); Waits is what
derive/latewake.py asks.

WaitSampler follows the run delay the kernel's schedstat accounts
(/proc/PID/task/TID/schedstat, second field: ns spent runnable on a run queue, not running),
sampled by a thread every PERIOD_S (or more seldom, to keep its own CPU under DUTY), plus the
intervals in which the harness itself stopped a thread or the whole VM (a stall: stopped threads
are not runnable, so schedstat does not count them)."""
import bisect
import json
import os
import threading
import time

from idlelab.host.vcputhreads import find_vcpu_threads


PERIOD_S = 0.005
# The sampler's own CPU, as a share of one host CPU, that its period is stretched to keep
# under. Its thread shares the host CPUs with the vCPU threads it watches: in the nested host
# (2 CPUs, Python emulated) one turn took ~1.5 ms, so at PERIOD_S it ran ~20 % of a CPU, all
# of it taken from the measured vCPUs inside their window (L1 trace, 2026-12-02).
DUTY = 0.01
RESCAN_EVERY = 20       # samples between two looks for vCPU threads that started since
EDGE_NS = 50_000_000    # how far outside the sampled span an interval's edge may be read


class WaitSampler:
    """Samples the run delay of a QEMU's vCPU threads from start(proc) until stop().

    Invariant: samples[k] holds (t_ns, {cpu: run delay}) with t_ns strictly increasing, and
    a thread's delay never decreases; wait_ns() brackets an interval by the last sample at
    or before its start and the first at or after its end, so it never under-counts, except
    at the edges of the sampled span (EDGE_NS).

    Its period is period_s, or longer where a turn costs more than `duty` of it: the recent
    CPU time of a turn over `duty`, so that it takes at most that share of one host CPU
    (footprint() says what it took and the period it kept: the verdicts' resolution, for
    wait_ns() brackets an interval by samples up to a period away on each side). duty=None:
    period_s whatever a turn costs (the wake-up verdicts' runs, whose resolution matters
    more than the CPU their sampler takes)."""

    def __init__(self, period_s=PERIOD_S, proc_root="/proc", duty=DUTY):
        self.period_s, self.proc_root, self.duty = period_s, proc_root, duty
        self.pid, self.tids = None, {}
        self.times, self.delays = [], []
        self.turns, self.cpu_ns, self.turn_ns = 0, 0, 0.0   # turn_ns: recent, smoothed
        self.t_start = self.t_stop = None
        self._abandoned = False
        self.expect, self._fds = None, {}   # vCPUs QEMU will start; cpu -> schedstat fd
        self.stalls = []          # (start_ns, end_ns, cpus or None for every vCPU)
        self._stop = threading.Event()
        self._thread = None
        self.error = None

    def start(self, pid, expect=None):
        """expect: how many vCPU threads QEMU starts (none: looked for every RESCAN_EVERY
        turns until stop; else until that many are found)."""
        self.pid, self.expect = pid, expect
        self.t_start = time.monotonic_ns()
        self._thread = threading.Thread(target=self._run, name="idlelab-vcpu-waits",
                                        daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        self.t_stop = time.monotonic_ns()
        # (a signal can cut start() short while the thread is being started: then it has not)
        if self._thread is not None and self._thread.ident is not None:
            self._thread.join(5)
            if self._thread.is_alive():     # stuck in a read: it closes its files when done
                self._abandoned = True
                return
        self._sample()          # the last instant too
        self._close()

    def _close(self):
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def add_stall(self, start_ns, end_ns, cpus=None):
        """The harness stopped these vCPUs (None: the whole VM) from start_ns to end_ns
        (time.monotonic_ns)."""
        self.stalls.append((start_ns, end_ns, None if cpus is None else set(cpus)))

    def _run(self):
        try:
            while not self._stop.is_set():
                began = time.thread_time_ns()
                if self._looking() and (not self.tids or self.turns % RESCAN_EVERY == 0):
                    self.tids = {**find_vcpu_threads(self.pid, self.proc_root), **self.tids}
                self._sample()
                turn = time.thread_time_ns() - began
                self.turns += 1
                self.cpu_ns += turn
                # recent turns weigh most: the first ones' rescans do not set the period
                self.turn_ns = turn if self.turns == 1 else 0.75 * self.turn_ns + 0.25 * turn
                self._stop.wait(self.wait_s())
        except OSError as e:      # QEMU gone: what was sampled stays
            self.error = f"{type(e).__name__}: {e}"
        finally:
            if self._abandoned:
                self._close()

    def wait_s(self):
        """The pause after a turn: period_s, or a recent turn's CPU over `duty` if longer."""
        if self.duty is None:
            return self.period_s
        return max(self.period_s, self.turn_ns / 1e9 / self.duty)

    def footprint(self):
        """What the sampler cost and the resolution it kept: {turns, cpu_ms, cpu_pct (of one
        CPU from start to stop), period_ms (median gap between samples)}."""
        gaps = sorted(b - a for a, b in zip(self.times, self.times[1:]))
        span = self.t_stop - self.t_start if self.t_start and self.t_stop else 0
        return {"turns": self.turns, "cpu_ms": round(self.cpu_ns / 1e6, 1),
                "cpu_pct": round(100 * self.cpu_ns / span, 2) if span else None,
                "period_ms": round(gaps[len(gaps) // 2] / 1e6, 2) if gaps else None}

    def _looking(self):
        """QEMU starts its vCPU threads one by one: look again until all are found."""
        return self.expect is None or len(self.tids) < self.expect

    def _delay_ns(self, cpu, tid):
        """thread_run_delay_ns through a file kept open (a turn is a pread per vCPU)."""
        try:
            fd = self._fds.get(cpu)
            if fd is None:
                fd = self._fds[cpu] = os.open(os.path.join(
                    self.proc_root, str(self.pid), "task", str(tid), "schedstat"), os.O_RDONLY)
            return int(os.pread(fd, 128, 0).split()[1])
        except (OSError, IndexError, ValueError):
            return None

    def _sample(self):
        if not self.tids:
            return
        now = time.monotonic_ns()
        row = {cpu: self._delay_ns(cpu, tid) for cpu, tid in self.tids.items()}
        row = {cpu: d for cpu, d in row.items() if d is not None}
        if row and (not self.times or now > self.times[-1]):
            self.times.append(now)
            self.delays.append(row)

    def cpus(self):
        return sorted(self.tids)

    def wait_ns(self, cpu, start_ns, end_ns):
        """What vCPU `cpu` waited for the host between two monotonic instants: its run
        delay over the smallest sampled interval that covers them, plus the stalls that
        overlap them. None if no sample covers the interval."""
        i = bisect.bisect_right(self.times, start_ns) - 1
        while i >= 0 and cpu not in self.delays[i]:
            i -= 1            # its thread was not yet found at that sample: an earlier one
        j = bisect.bisect_left(self.times, end_ns)
        while j < len(self.times) and cpu not in self.delays[j]:
            j += 1
        # An interval that starts before the thread was first sampled, or ends after it was
        # last (QEMU exits right after a guest's last line), is read from the nearest sample
        # if that is within EDGE_NS: at most that much of the wait is missed.
        if i < 0:
            first = next((k for k, d in enumerate(self.delays) if cpu in d), None)
            if first is not None and self.times[first] - start_ns <= EDGE_NS:
                i = first
        if j >= len(self.times):
            last = next((k for k in range(len(self.delays) - 1, -1, -1)
                         if cpu in self.delays[k]), None)
            if last is not None and end_ns - self.times[last] <= EDGE_NS:
                j = last
        if i < 0 or j >= len(self.times) or j < i:
            return None
        a, b = self.delays[i][cpu], self.delays[j][cpu]
        stalled = sum(max(0, min(e, end_ns) - max(s, start_ns))
                      for s, e, cpus in self.stalls if cpus is None or cpu in cpus)
        return (b - a) + stalled


# --- the nested host's own vCPUs -------------------------------------------------------------
# Inside the nested KVM host, a guest's lateness may come from this machine not running the
# nested host's vCPU threads, which nothing inside can see (no steal time under TCG). The
# harness outside (host/nested.py) samples those threads' run delay and writes it, with the
# heartbeats that map the nested host's clock to its own, into the job's folder, which the
# tree's share (no cache) shows inside at the same path; OUTER_ENV names the file.
OUTER_ENV = "IDLELAB_OUTER_WAIT"
OUTER_PERIOD_S = 0.01


class OuterWaitWriter(WaitSampler):
    """Outside: the nested host's QEMU vCPU threads' run delay, sampled every
    OUTER_PERIOD_S, and the heartbeat lines (the nested host's uptime) with the instant each
    was seen, appended to `out_path` as JSON lines: {"beat": [our ns, its uptime ns]} and
    {"t": our ns, "d": {cpu: run delay ns}}."""

    FLUSH_EVERY = 10

    def __init__(self, beat_path, out_path, period_s=OUTER_PERIOD_S):
        super().__init__(period_s)
        self.beat_path, self.out_path = beat_path, out_path
        self._beat_pos, self._partial, self._pending, self._written = 0, b"", [], 0

    def _run(self):
        try:
            n = 0
            with open(self.out_path, "a") as out:
                while not self._stop.is_set():
                    if not self.tids or n % RESCAN_EVERY == 0:
                        self.tids = {**find_vcpu_threads(self.pid, self.proc_root), **self.tids}
                    self._sample()
                    self._read_beats()
                    n += 1
                    if n % self.FLUSH_EVERY == 0:
                        self._flush(out)
                    self._stop.wait(self.period_s)
                self._flush(out)
        except OSError as e:
            self.error = f"{type(e).__name__}: {e}"

    def _read_beats(self):
        now = time.monotonic_ns()
        with open(self.beat_path, "rb") as f:
            f.seek(self._beat_pos)
            data = f.read()
        self._beat_pos += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for ln in lines:
            try:
                self._pending.append({"beat": [now, int(float(ln) * 1e9)]})
            except ValueError:
                continue      # a line of another kind

    def _flush(self, out):
        rows = [{"t": t, "d": d} for t, d in zip(self.times[self._written:],
                                                  self.delays[self._written:])]
        self._written = len(self.times)
        for rec in self._pending + rows:
            out.write(json.dumps(rec) + "\n")
        self._pending = []
        out.flush()


class OuterWait:
    """Inside: what the outer harness wrote (OuterWaitWriter), read afresh on each question,
    on this host's CLOCK_MONOTONIC: the most any of the nested host's vCPUs waited over an
    interval (a guest's vCPU thread may have been on any of them)."""

    def __init__(self, path):
        self.path = path
        self._cache = (None, None)     # (file size, what _read made of it)

    def _load(self, upto_ns=None):
        """What the file held when last read, read anew only if that did not reach
        `upto_ns` (our clock) and the file has grown since: a run's many questions about
        its past cost one read, not one each."""
        cached = self._cache[1]
        if cached is not None and upto_ns is not None and cached[1] and \
                upto_ns + cached[0] + EDGE_NS <= cached[1][-1]:
            return cached
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return None
        if self._cache[0] != size:
            self._cache = (size, self._read())
        return self._cache[1]

    def _read(self):
        beats, times, delays = [], [], []
        try:
            with open(self.path) as f:
                for ln in f:
                    try:
                        rec = json.loads(ln)
                        if "beat" in rec:
                            seen, up = rec["beat"]
                            beats.append((int(seen), int(up)))
                        else:
                            row = {int(k): int(v) for k, v in rec["d"].items()}
                            times.append(int(rec["t"]))
                            delays.append(row)
                    except (ValueError, KeyError, TypeError, AttributeError):
                        continue      # the line being written, or not one of ours
        except OSError:
            return None
        if not beats or len(times) < 2:
            return None
        # ours = theirs + offset; a beat is seen after it was written, never before, and
        # its uptime is truncated to 10 ms: the smallest difference is the best estimate
        offset = min(seen - up for seen, up in beats)
        boot_minus_mono = (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns())
        return offset + boot_minus_mono, times, delays

    def max_wait_ns(self, start_ns, end_ns):
        """The most any nested-host vCPU waited between two of our monotonic instants,
        None if the file does not cover them."""
        loaded = self._load(end_ns)
        if loaded is None:
            return None
        offset, times, delays = loaded
        sampler = WaitSampler()
        sampler.times, sampler.delays = times, delays
        cpus = sorted(set(delays[0]) | set(delays[-1]))
        waits = [sampler.wait_ns(c, start_ns + offset, end_ns + offset) for c in cpus]
        waits = [w for w in waits if w is not None]
        return max(waits) if waits else None


class Waits:
    """What latewake.attribute() asks: this host's measure of a vCPU's wait, plus, inside
    the nested host, the most the outer machine kept any of the nested host's vCPUs waiting
    over the same interval."""

    def __init__(self, sampler, outer=None):
        self.sampler = sampler
        self.outer = outer if outer is not None else outer_from_env()

    def cpus(self):
        return self.sampler.cpus()

    def wait_ns(self, cpu, start_ns, end_ns):
        w = self.sampler.wait_ns(cpu, start_ns, end_ns)
        if w is None or self.outer is None:
            return w
        return w + (self.outer.max_wait_ns(start_ns, end_ns) or 0)


def outer_from_env():
    path = os.environ.get(OUTER_ENV)
    return OuterWait(path) if path else None
