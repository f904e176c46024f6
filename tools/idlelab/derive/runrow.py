"""RunRow: one boot as one typed row, the unit runs.csv, the tables and the plots share.

runs.csv is an interface (docs/records.md lists its columns, scripts read it): its header is the
RunRow field names in declaration order, so the order of the fields below IS the CSV's
column order. Fields marked measured are combined over repeats (median); the others say
which run a row is. A field is None when it does not apply (not run, or a workload without
that metric) and the text NA_TCG for a KVM figure under TCG.
"""
import statistics
from dataclasses import dataclass, field, fields, replace
from typing import Optional, Union

NA_TCG = "n/a (TCG)"
Num = Optional[Union[int, float]]
KvmNum = Optional[Union[int, float, str]]      # a KVM figure, or NA_TCG


def _measured(kvm=False):
    return field(default=None, metadata={"measured": True, "kvm": kvm})


def _predicted():
    return field(default=None, metadata={"predicted": True})


@dataclass
class RunRow:
    # --- which run: what the matrix asked for ---------------------------------------------
    matrix: str = None
    config: str = None
    name: str = None
    repeat: int = None            # repeat index; after aggregate(), how many succeeded
    status: str = None            # ok, failed, not run
    reason: str = None
    accel: str = None
    workload: str = None
    smp: int = None
    halt_poll_ns: int = None
    halt_poll_scope: str = None   # vm (per-VM capability) or host (global parameter)
    host_grow: int = None
    host_grow_start: int = None
    host_shrink: int = None
    guest_idle: str = None
    governor: str = None          # idle=haltpoll's governor (cpuidle.governor=)
    hostpoll: str = None
    msr: str = None
    guest_halt_poll_ns: str = None
    hz: int = None
    period_us: float = None
    cpus: str = None
    workload_vcpus: str = None    # the vCPUs the per-vCPU host figures average over
    window_sync: int = None       # 1: exact window edges (guest quiesced while the host read)
    stall: str = None             # the fault asked for (stall=VCPU@OFFSET+DURATION), None: none
    neighbour: str = None         # the task beside the guest (neighbour=), None: none
    pin: str = None               # pin=: the host CPU of each vCPU ("0+1"), None: not pinned
    guest: str = None             # guest=: idlelab (its kernel) or linux (tools/linuxguest/)
    linux_kernel: str = None      # linux_kernel=: the Linux guest's kernel; None: guest=idlelab
    # late and lost wake-ups the guest reported (selftest=wakeup), by whose fault the host's
    # measured waits say it was (attribution.py); None: the run reported none to attribute
    late_host: int = None
    late_guest: int = None
    lost_host: int = None
    lost_guest: int = None
    # --- measured: the guest's counters, then KVM's over the same window --------------------
    guest_hlt: Num = _measured()
    guest_ipi_sent: Num = _measured()
    guest_ipi_avoided: Num = _measured()
    guest_poll_hits: Num = _measured()
    guest_poll_entries: Num = _measured()
    guest_wakeups: Num = _measured()
    host_halt_exits: KvmNum = _measured(kvm=True)
    host_attempted_poll: KvmNum = _measured(kvm=True)
    host_successful_poll: KvmNum = _measured(kvm=True)
    host_poll_invalid: KvmNum = _measured(kvm=True)
    host_halt_wakeup: KvmNum = _measured(kvm=True)
    poll_success_pct: KvmNum = _measured(kvm=True)
    host_cpu_pct: Num = _measured()
    host_cpu_pct_vcpus: str = _measured()
    host_cpu_us_per_wakeup: Num = _measured()   # the workload vCPUs' CPU over guest_wakeups
    host_poll_pct: KvmNum = _measured(kvm=True)
    host_poll_miss_us: KvmNum = _measured(kvm=True)   # a poll that caught nothing, mean µs
    halt_exits_per_s: KvmNum = _measured(kvm=True)
    host_exits: KvmNum = _measured(kvm=True)
    host_insn_emulation: KvmNum = _measured(kvm=True)
    hlt_diff: KvmNum = _measured(kvm=True)
    hlt_diff_pct: KvmNum = _measured(kvm=True)
    hlt_diff_vcpus: Optional[str] = _measured(kvm=True)   # host - guest per vCPU, "+0/+0"
    accuracy_flag: Optional[Union[bool, str]] = _measured(kvm=True)
    # --- the machine around the run -------------------------------------------------------
    other_load: Num = _measured()
    other_load_window: Num = _measured()
    steal_pct: Num = _measured()
    loadavg_1m: Num = _measured()
    # --- the workload's result record, times in µs ------------------------------------------
    window_ms: Num = _measured()
    iters: Num = _measured()
    rtt_p50_us: Num = _measured()
    rtt_p90_us: Num = _measured()
    rtt_p99_us: Num = _measured()
    rtt_max_us: Num = _measured()
    rt_per_s: Num = _measured()
    late_p50_us: Num = _measured()
    late_p99_us: Num = _measured()
    achieved_period_us: Num = _measured()
    wakes: Num = _measured()
    interval_mean_us: Num = _measured()
    lap_p50_us: Num = _measured()
    hop_p50_us: Num = _measured()
    # --- the host's sampling --------------------------------------------------------------
    read_ms_max: Num = _measured()
    sample_ms_max: Num = _measured()
    late_samples: Num = _measured()
    seconds: Num = _measured()
    # --- the fault injected on purpose (stall=): what actually happened ---------------------
    stall_ms: Num = _measured()             # how long the vCPU thread was stopped
    stall_at_ms: Num = _measured()          # when it stopped, after the window opened
    stall_thread_cpu_ms: Num = _measured()  # the thread's CPU time while stopped (~0)
    # --- the neighbour (neighbour=) over the same window, and alone -------------------------
    neighbour_ops_per_s: Num = _measured()        # hog: loops/s (all threads); vm: CPU-ms/s
    neighbour_alone_ops_per_s: Num = _measured()  # the same neighbour alone, same bench
    neighbour_alone_other_load: Num = _measured() # other load while it ran alone, % of host
    neighbour_slowdown: Num = _measured()         # 1 - with / alone (0: no cost to it)
    neighbour_cpu_pct: Num = _measured()          # its host CPU over the window, % of one CPU
    # --- steal time as the guest saw it (kvm-steal-time), and what it did about it ----------
    guest_steal_ms: Num = _measured()       # summed over the vCPUs, over the window
    guest_steal_pct: Num = _measured()      # of the workload vCPUs' window, mean
    host_run_delay_pct: Num = _measured()   # the same vCPU threads' run-queue wait (host side)
    guest_polls_suspended: Num = _measured()  # idle entries that halted: steal above threshold
    guest_takeovers: Num = _measured()      # times the governor set haltpoll's rule aside
    # --- KVM's own trace of the window (trace=halt_poll_ns; kvmtrace.py), the workload vCPUs:
    # the window's changes, and the halts by outcome, split at the host's maximum window (a
    # short halt is one a full window would have caught) ------------------------------------
    trace_grow: Num = _measured()
    trace_shrink: Num = _measured()         # to a smaller window above 0
    trace_reset: Num = _measured()          # to 0
    trace_poll_hit: Num = _measured()
    trace_no_wait: Num = _measured()        # window 0, the wake-up already there
    trace_short_poll_miss: Num = _measured()
    trace_short_no_poll: Num = _measured()
    trace_long_poll_miss: Num = _measured()
    trace_long_no_poll: Num = _measured()
    trace_window_mean_ns: Num = _measured()  # the window the halts polled with, mean
    # --- predicted by build/idlelab-sim for this boot's configuration (tools/bench --predict;
    # predict.py), beside the measured figure of the same name, and the error against this
    # boot's measurement: % for counts, points for host CPU. Empty without --predict. ------
    predicted_costs: str = _predicted()     # the cost table: here:RESULTS, hardware or a file
    predicted_guest_hlt: Num = _predicted()
    predicted_host_halt_exits: Num = _predicted()
    predicted_host_attempted_poll: Num = _predicted()
    predicted_host_successful_poll: Num = _predicted()
    predicted_poll_success_pct: Num = _predicted()
    predicted_halt_exits_per_s: Num = _predicted()
    predicted_host_cpu_pct: Num = _predicted()
    predicted_rtt_p50_us: Num = _predicted()
    predicted_late_p50_us: Num = _predicted()
    predicted_achieved_period_us: Num = _predicted()
    predicted_err_guest_hlt_pct: Num = _predicted()
    predicted_err_host_halt_exits_pct: Num = _predicted()
    predicted_err_host_attempted_poll_pct: Num = _predicted()
    predicted_err_host_successful_poll_pct: Num = _predicted()
    predicted_err_host_cpu_points: Num = _predicted()
    predicted_within: Optional[bool] = _predicted()  # the bar: counts 10 % (or 10), CPU 10 points
    # --- not in runs.csv: set by aggregate() for the tables -------------------------------
    spread: dict = field(default=None, metadata={"csv": False})  # column: (min, max) of repeats
    trace: dict = field(default=None, metadata={"csv": False})   # the record's trace lists

    @property
    def ok(self):
        return self.status == "ok"

    @property
    def disturbed(self):
        """True for a run disturbed on purpose (a stall= fault was injected)."""
        return self.stall is not None


COLUMNS = [f.name for f in fields(RunRow) if f.metadata.get("csv", True)]
PREDICTED = [f.name for f in fields(RunRow) if f.metadata.get("predicted")]
MEASURED = [f.name for f in fields(RunRow) if f.metadata.get("measured")]
HOST_KVM = [f.name for f in fields(RunRow) if f.metadata.get("kvm")]


def is_number(v):
    """A measured number (bools and NA_TCG are not)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def csv_cells(row):
    """A row's runs.csv cells, COLUMNS in order, None as an empty cell."""
    return ["" if getattr(row, k) is None else getattr(row, k) for k in COLUMNS]




def aggregate(rows):
    """One row per (matrix, run name), in first-seen order: the median of each measurement
    over the repeats that succeeded; `repeat` becomes how many did, and `spread` holds each
    numeric measurement's (lowest, highest) over them."""
    groups = {}
    for r in rows:
        groups.setdefault((r.matrix, r.name), []).append(r)
    out = []
    for members in groups.values():
        ok = [r for r in members if r.ok]
        if not ok:
            out.append(members[0])
            continue
        merged = {"repeat": len(ok), "spread": {}}
        for key in MEASURED:
            values = [getattr(r, key) for r in ok]
            if all(isinstance(v, bool) for v in values):
                merged[key] = any(values)      # flagged if any repeat was
            elif all(is_number(v) for v in values):
                merged[key] = statistics.median(values)
                merged["spread"][key] = (min(values), max(values))
        out.append(replace(ok[0], **merged))
    return out


def by_matrix(rows):
    """{matrix id: [row]} in first-seen order."""
    out = {}
    for r in rows:
        out.setdefault(r.matrix, []).append(r)
    return out
