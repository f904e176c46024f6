"""A small QMP client (QEMU's JSON control protocol, over a unix socket): the harness reads KVM's
per-vCPU halt counters through `query-stats` while the guest runs.

So the client only needs: connect (QEMU creates the socket a moment after it starts, hence the
retry), capability negotiation, synchronous commands, and keeping the asynchronous events
that arrive in between so a caller can look at them later (a STOP or SHUTDOWN explains a
missing sample)."""
import json
import socket
import time


DEFAULT_TIMEOUT = 10.0


class QMPError(Exception):
    """QEMU answered a command with an error: `cls` and `desc` are QMP's own fields."""

    def __init__(self, command, cls, desc):
        super().__init__(f"QMP {command} failed: {cls}: {desc}")
        self.command, self.cls, self.desc = command, cls, desc


class QMPConnectError(Exception):
    """No QMP server answered at the path before the deadline (or the QEMU process ended)."""


class QMPTimeout(Exception):
    """The server stopped answering: QEMU is stuck or the socket died."""


class QMP:
    """One QMP session. Use as a context manager, or call close()."""

    def __init__(self, path, timeout=DEFAULT_TIMEOUT, proc=None):
        """Connects to `path`, retrying until `timeout` seconds have passed; if `proc` (a Popen)
        exits meanwhile, gives up at once. Negotiates capabilities before returning."""
        self.path = path
        self.timeout = timeout
        self._events = []
        self._buf = b""
        self._next_id = 0
        self._sock = _connect(path, time.monotonic() + timeout, proc)
        try:
            self.greeting = self._read_greeting(time.monotonic() + timeout)
            self.execute("qmp_capabilities")
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def execute(self, command, args=None, timeout=None):
        """Runs one command and returns its `return` value; raises QMPError on an `error`
        reply. Events arriving before the reply are buffered (see events())."""
        if self._sock is None:
            raise QMPConnectError(f"{self.path}: QMP session is closed")
        self._next_id += 1
        msg_id = f"idlelab-{self._next_id}"
        msg = {"execute": command, "id": msg_id}
        if args:
            msg["arguments"] = args
        self._sock.sendall(json.dumps(msg).encode() + b"\n")
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            reply = self._read_message(deadline)
            if "event" in reply:
                self._events.append(reply)
            elif reply.get("id") == msg_id:
                if "error" in reply:
                    err = reply["error"]
                    raise QMPError(command, err.get("class", "?"), err.get("desc", "?"))
                return reply.get("return")

    def events(self, name=None, clear=True):
        """Events received so far (only those called `name`, if given), oldest first; by
        default they are removed from the buffer."""
        def wanted(e):
            return name is None or e["event"] == name
        picked = [e for e in self._events if wanted(e)]
        if clear:
            self._events = [e for e in self._events if not wanted(e)]
        return picked

    def wait_event(self, name, timeout=None):
        """Removes and returns the first buffered or next arriving event called `name`."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            for i, e in enumerate(self._events):
                if e["event"] == name:
                    return self._events.pop(i)
            msg = self._read_message(deadline)
            if "event" in msg:
                self._events.append(msg)

    def _read_greeting(self, deadline):
        """The server's greeting. QEMU may send an event first: a client that connects while
        QEMU starts can be sent the start's RESUME before the greeting (seen once in a bench
        under load); such events are kept like any other."""
        while True:
            msg = self._read_message(deadline)
            if "QMP" in msg:
                return msg
            if "event" not in msg:
                raise QMPConnectError(f"{self.path}: not a QMP greeting: {msg!r}")
            self._events.append(msg)

    def _read_message(self, deadline):
        """The next JSON object from the server (QMP sends one per line)."""
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise QMPTimeout(f"{self.path}: no answer from QMP in time")
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(65536)
            except socket.timeout:
                raise QMPTimeout(f"{self.path}: no answer from QMP in time") from None
            if not chunk:
                raise QMPConnectError(f"{self.path}: QEMU closed the QMP socket")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    # --- helpers for the harness -------------------------------------------------------

    def query_cpus_fast(self):
        """[{cpu-index, qom-path, thread-id}] for every vCPU, in cpu-index order."""
        cpus = self.execute("query-cpus-fast")
        out = [{k: c[k] for k in ("cpu-index", "qom-path", "thread-id")} for c in cpus]
        return sorted(out, key=lambda c: c["cpu-index"])

    def query_stats_vcpus(self, names=None):
        """{cpu_index: {stat: value}} from KVM's per-vCPU statistics; histograms stay lists.
        {} when there are none (TCG): callers report "no KVM stats". vCPUs are matched by
        qom path, because vCPU 1 is not necessarily device[1]."""
        provider = {"provider": "kvm"}
        if names is not None:
            provider["names"] = list(names)
        results = self.execute("query-stats", {"target": "vcpu", "providers": [provider]})
        if not results:
            return {}
        index = {c["qom-path"]: c["cpu-index"] for c in self.query_cpus_fast()}
        out = {}
        for r in results:
            if r["qom-path"] not in index:
                raise QMPError("query-stats", "Unmatched",
                               f"stats for {r['qom-path']}, which query-cpus-fast does not list")
            stats = out.setdefault(index[r["qom-path"]], {})
            stats.update({s["name"]: s["value"] for s in r["stats"]})
        return out

    def query_stats_schemas(self, provider="kvm"):
        """{target: {stat: {type, unit, base, exponent, ...}}} for `provider`; {} under TCG.
        The type says how to take a delta (cumulative, instant, peak, histograms)."""
        out = {}
        for entry in self.execute("query-stats-schemas", {"provider": provider}) or []:
            table = out.setdefault(entry["target"], {})
            for s in entry["stats"]:
                table[s["name"]] = {k: v for k, v in s.items() if k != "name"}
        return out


def _connect(path, deadline, proc):
    """A connected socket; retries while the socket is absent or not yet listening."""
    last = None
    while True:
        if proc is not None and proc.poll() is not None:
            raise QMPConnectError(f"{path}: QEMU exited (status {proc.returncode}) before "
                                  "QMP answered")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError) as e:
            sock.close()
            last = e
        if time.monotonic() >= deadline:
            raise QMPConnectError(f"{path}: no QMP server before the deadline ({last})")
        time.sleep(0.02)
