"""One boot for tools/timeline: the guest with timeline= on, and where the host allows it
(KVM, root, tracefs) KVM's trace events for the guest's vCPU threads and the vCPUs' TSC
offsets, read while the VM exists (at the window's two markers). What the host side could not
do is said in `host["why"]`; the boot goes ahead without it."""
import contextlib
import os
import tempfile
from dataclasses import dataclass

from idlelab.host import kernelfs, qemu, qmp, tracefs
from idlelab.timeline import tscoffset
from idlelab.derive.records import RecordError, parse_line


@dataclass
class Boot:
    result: qemu.Result
    host: dict          # what host.json keeps (see boot())
    trace_text: str     # the tracefs instance's trace, "" if none


class _Watch:
    """Follows the console as it arrives: acknowledges window_sync=1 markers, notes each CPU's
    APIC ID, reads the TSC offsets at the open and close markers, stops tracing at close."""

    def __init__(self, session, debugfs, host):
        self.session, self.debugfs, self.host = session, debugfs, host
        self.proc, self.apic = None, {}

    def on_start(self, proc):
        self.proc = proc
        self.host["qemu_pid"] = proc.pid
        if self.session is None:
            return
        try:
            with qmp.QMP(self.host["qmp"], proc=proc) as q:
                tids = {c["cpu-index"]: c["thread-id"] for c in q.query_cpus_fast()}
            self.session.set_pids(tids.values())
            self.host["tids"] = tids
        except (qmp.QMPError, qmp.QMPConnectError, qmp.QMPTimeout, OSError) as e:
            self.host["why"] = f"no vCPU thread ids over QMP: {e}"

    def on_line(self, line):
        try:
            rec = parse_line(line)
        except RecordError:
            return
        if rec is None:
            return
        kind, f = rec
        if kind == "online" and f.get("cpu", "").isdigit() and f.get("apic_id", "").isdigit():
            self.apic[int(f["cpu"])] = int(f["apic_id"])
        if kind != "window":
            return
        if f.get("sync") == "1":
            qemu.acknowledge(self.proc)
        if self.session is not None:
            self._offsets(f.get("state"))
            if f.get("state") == "close":
                self.session.stop()

    def _offsets(self, state):
        if self.debugfs is None or self.host.get("why_offsets"):
            return
        if sorted(self.apic.values()) != list(range(len(self.apic))) or \
                any(self.apic[c] != c for c in self.apic):
            self.host["why_offsets"] = f"guest CPUs and KVM's vCPU ids differ: {self.apic}"
            return
        try:
            got = tscoffset.read(self.debugfs, self.proc.pid, sorted(self.apic))
        except tscoffset.NoOffset as e:
            self.host["why_offsets"] = str(e)
            return
        self.host[f"offsets_{state}"] = got


def boot(knobs, smp=2, accel="auto", timeout=120, host_overlay=True, echo=False):
    """Boots the guest with `knobs`; returns a Boot. host: accel, clock, tids {cpu: tid},
    offsets_open/offsets_close {cpu: offset}, notes, and why / why_offsets when the host side
    (or its offsets) was not to be had."""
    accel = qemu.resolve_accel(accel)
    host = {"accel": accel, "notes": []}
    with contextlib.ExitStack() as stack:
        session = debugfs = None
        if accel != "kvm":
            host["why"] = "the guest runs under TCG: no KVM on the host to trace"
        elif not host_overlay:
            host["why"] = "turned off (--no-host)"
        else:
            try:
                session = stack.enter_context(tracefs.Session())
                host["clock"] = session.clock
                host["events"] = list(session.enabled)
            except tracefs.Unavailable as e:
                host["why"] = f"tracefs: {e}"
        if session is not None:
            try:
                debugfs = stack.enter_context(kernelfs.reach("debugfs"))
            except kernelfs.Unavailable as e:
                host["why_offsets"] = f"debugfs: {e}"
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="idlelab-timeline-"))
        host["qmp"] = os.path.join(tmp, "qemu.sock")
        watch = _Watch(session, debugfs, host)
        cfg = qemu.Config(smp=smp, accel=accel, cmdline=knobs,
                          qmp=host["qmp"] if session is not None else None)
        res = qemu.run(cfg, timeout=timeout, echo=echo, on_line=watch.on_line,
                       on_start=watch.on_start)
        text = ""
        if session is not None:
            try:
                text = session.read()
            except OSError as e:
                host["why"] = f"reading the trace: {e}"
    if session is not None:
        host["notes"] = list(session.notes)     # and what closing it found
    del host["qmp"]
    return Boot(res, host, text)
