"""runs.csv's columns, defined once: the RunRow dataclass, one field a column in the CSV's
order, each with its unit, source and meaning (docs/records.md's table of the columns is
generated from them by tools/recordsdoc; `make docs-check` fails when it is stale).

runs.csv is an interface (scripts read it): its header is the RunRow field names in
declaration order, so the order of the fields below IS the CSV's column order. Fields marked
measured are combined over repeats (median, derive/runrow.py's aggregate); the others say
which run a row is. A field is None when it does not apply (not run, or a workload without
that metric) and the text NA_TCG for a KVM figure under TCG. Pure."""
from dataclasses import dataclass, field, fields
from typing import Optional, Union


NA_TCG = "n/a (TCG)"
Num = Optional[Union[int, float]]
KvmNum = Optional[Union[int, float, str]]      # a KVM figure, or NA_TCG


# Where a column's figure comes from, as docs/records.md's table of the columns says it.
MATRIX = "matrix"           # what the matrix asked for
BENCH = "bench"             # the bench's own account of the run
GUEST = "guest"             # the guest's @idlelab records
KVM = "KVM"                 # KVM's statistics, read over QMP at the window markers, or its trace
SAMPLER = "host sampler"    # what the host read of itself (/proc, schedstat) at the markers
SIMULATOR = "simulator"     # build/idlelab-sim for the same configuration (--predict)
SOURCES = (MATRIX, BENCH, GUEST, KVM, SAMPLER, SIMULATOR)


def _col(unit, source, meaning, **meta):
    """A runs.csv column, with what docs/records.md's table of the columns says of it
    (tools/recordsdoc generates that table from here): its unit ("" for a name, a flag or a
    ratio), where its figure comes from (one of SOURCES, or a tuple of them for a figure
    made of two) and what it is, in one line."""
    return field(default=None, metadata=dict(meta, unit=unit, source=source, meaning=meaning))


def _measured(unit, source, meaning, kvm=False):
    return _col(unit, source, meaning, measured=True, kvm=kvm)


def _predicted(unit, meaning, source=SIMULATOR):
    return _col(unit, source, meaning, predicted=True)


@dataclass
class RunRow:
    # --- which run: what the matrix asked for ---------------------------------------------
    matrix: str = _col("", MATRIX, "the matrix's id: its file's name without .txt (`seed000`)")
    config: str = _col("", MATRIX, "the configuration: the matrix line the run comes from")
    name: str = _col("", MATRIX, "the run: its configuration, workload and any swept value "
                     "(`periodic-period=1ms-halt_poll_ns=0`)")
    repeat: int = _col("", BENCH, "which making of the run, from 1; in the tables, after the "
                       "repeats are combined, how many of them succeeded")
    window: int = _col("", BENCH, "which measured window of its boot (`windows=` > 1: a row per "
                       "window, `repeat` then numbers the boot); empty for a boot of one")
    window_round: int = _col("", BENCH, "which round of its boot: the windows of one round, one "
                             "per compared setting, are paired with each other "
                             "(docs/verdicts.md)")
    boot_run: str = _col("", BENCH, "the boot a window ran in: its boot's run name (a within= "
                         "or boot= row's); windows pair only inside one boot_run and repeat")
    status: str = _col("", BENCH, "`ok`, `failed`, or `not run` (the host could not be set as "
                       "the run asks)")
    reason: str = _col("", BENCH, "why a run failed or was not run, in one line")
    accel: str = _col("", BENCH, "where the guest ran: `kvm` (this machine's /dev/kvm, or the "
                      "nested host's) or `tcg`")
    workload: str = _col("", MATRIX, "`workload=`")
    smp: int = _col("count", MATRIX, "vCPUs")
    halt_poll_ns: int = _col("ns", MATRIX, "KVM's largest host poll window: the per-VM "
                             "KVM_CAP_HALT_POLL value the run set, or the kvm parameter's "
                             "(`halt_poll_scope`)")
    halt_poll_scope: str = _col("", MATRIX, "`vm`: the window set per VM (KVM_CAP_HALT_POLL); "
                                "`host`: the global kvm parameter halt_poll_ns")
    host_grow: int = _col("", MATRIX, "KVM's halt_poll_ns_grow as the run set it, else the "
                          "host's (a multiplier)")
    host_grow_start: int = _col("ns", MATRIX, "KVM's halt_poll_ns_grow_start as the run set "
                                "it, else the host's")
    host_shrink: int = _col("", MATRIX, "KVM's halt_poll_ns_shrink as the run set it, else "
                            "the host's (a divisor; 0: a shrink resets the window to 0)")
    guest_idle: str = _col("", GUEST, "the idle policy the guest ran (the `idle` record's "
                           "policy; the matrix's `idle=` for a run not made)")
    governor: str = _col("", GUEST, "idle=haltpoll's governor (`cpuidle.governor=`), from the "
                         "`idle` record")
    hostpoll: str = _col("", GUEST, "`hostpoll=`, from the `config` record")
    msr: str = _col("", GUEST, "MSR_KVM_POLL_CONTROL as every CPU read it back: 0 (the host "
                    "must not poll), 1, or none (the host offers no such MSR)")
    guest_halt_poll_ns: str = _col("", GUEST, "`haltpoll.guest_halt_poll_ns=` as written in "
                                   "the `config` record (`200us`)")
    hz: int = _col("per s", GUEST, "`hz=`, the tick's rate (0: tickless)")
    period_us: float = _col("µs", GUEST, "periodic's `period=` as the guest got it (a matrix's "
                            "`timer+300us` resolved)")
    cpus: str = _col("", GUEST, "`cpus=`, the mask of the CPUs the workload uses (0: all)")
    workload_vcpus: str = _col("", MATRIX, "the vCPUs the per-vCPU host figures average over: "
                               "those of `cpus=`, less vCPU 0 for workload=idle on several "
                               "(it holds the markers for the host's read)")
    window_sync: int = _col("", GUEST, "1: exact window edges (`window_sync=1`: the guest "
                            "quiesced while the host read its counters)")
    stall: str = _col("", MATRIX, "the fault asked for, `stall=VCPU@OFFSET+DURATION`; empty: "
                      "none")
    neighbour: str = _col("", MATRIX, "the task beside the guest, `neighbour=`; empty: none")
    pin: str = _col("", MATRIX, "`pin=`: the host CPU of each vCPU (`0+1`); empty: not "
                    "pinned")
    guest: str = _col("", MATRIX, "which guest ran: `idlelab`, or `linux` (the Linux guest)")
    linux_kernel: str = _col("", MATRIX, "the Linux guest's kernel, `linux_kernel=` (`debian` "
                             "or `haltpoll-gov`); empty for idlelab")
    # late and lost wake-ups the guest reported (selftest=wakeup), by whose fault the host's
    # measured waits say it was (derive/latewake.py); None: the run reported none to attribute
    late_host: int = _col("count", (GUEST, SAMPLER), "late wake-ups the guest reported that "
                          "the host's measured waits cover: the host's fault; empty when it "
                          "reported none")
    late_guest: int = _col("count", (GUEST, SAMPLER), "late wake-ups they do not cover: the "
                           "guest's fault")
    lost_host: int = _col("count", (GUEST, SAMPLER), "lost wake-ups the host's waits cover")
    lost_guest: int = _col("count", (GUEST, SAMPLER), "lost wake-ups they do not cover")
    # --- measured: the guest's counters, then KVM's over the same window --------------------
    guest_hlt: Num = _measured("count", GUEST, "HLT instructions executed over the window "
                               "(`hlt`), summed over the CPUs")
    guest_ipi_sent: Num = _measured("count", GUEST, "reschedule IPIs sent (`ipi_sent`), "
                                    "summed")
    guest_ipi_avoided: Num = _measured("count", GUEST, "wake-ups that sent no IPI, the "
                                       "target polling (`ipi_avoided`), summed")
    guest_poll_hits: Num = _measured("count", GUEST, "polls ended by work (`poll_hits`), "
                                     "summed")
    guest_poll_entries: Num = _measured("count", GUEST, "polls entered (`poll_entries`), "
                                        "summed")
    guest_wakeups: Num = _measured("count", GUEST, "thread wake-ups issued (`wakeups`), "
                                   "summed")
    host_halt_exits: KvmNum = _measured("count", KVM, "HLT exits (`halt_exits`) over the "
                                        "window, summed over the vCPUs: each vCPU's equals "
                                        "its guest HLTs (`accuracy_flag`)", kvm=True)
    host_attempted_poll: KvmNum = _measured("count", KVM, "halts KVM polled for "
                                            "(`halt_attempted_poll`), summed", kvm=True)
    host_successful_poll: KvmNum = _measured("count", KVM, "of them, those whose wake-up came "
                                             "while KVM polled (`halt_successful_poll`)",
                                             kvm=True)
    host_poll_invalid: KvmNum = _measured("count", KVM, "KVM's `halt_poll_invalid`, summed",
                                          kvm=True)
    host_halt_wakeup: KvmNum = _measured("count", KVM, "halts KVM woke the vCPU from "
                                         "(`halt_wakeup`), summed", kvm=True)
    poll_success_pct: KvmNum = _measured("%", KVM, "`host_successful_poll` as % of "
                                         "`host_attempted_poll`; empty without a poll",
                                         kvm=True)
    host_cpu_pct: Num = _measured("%", SAMPLER, "the workload vCPUs' threads' CPU time over "
                                  "the window, mean, % of one host CPU")
    host_cpu_pct_vcpus: str = _measured("%", SAMPLER, "every vCPU thread's, `90.0/70.0`")
    host_cpu_us_per_wakeup: Num = _measured("µs", (SAMPLER, GUEST), "the workload vCPUs' CPU "
                                            "over the window per guest wake-up "
                                            "(`guest_wakeups`); empty for workload=idle, "
                                            "which wakes nothing of its own")
    host_poll_pct: KvmNum = _measured("%", KVM, "KVM's time polling (`halt_poll_success_ns` + "
                                      "`halt_poll_fail_ns`) over the window, mean over the "
                                      "workload vCPUs, % of one host CPU", kvm=True)
    host_poll_miss_us: KvmNum = _measured("µs", KVM, "how long a host poll that caught "
                                          "nothing lasted, mean over the workload vCPUs: the "
                                          "window, or less where KVM stopped early because "
                                          "another task wanted the CPU", kvm=True)
    mpstat_cpu: Num = _measured("", SAMPLER, "the host CPU the mpstat_* columns split: alone='s "
                           "vCPU's (pin=), else the first workload vCPU's; empty unpinned")
    mpstat_usr_pct: Num = _measured("%", SAMPLER, "that CPU's %usr (+ %nice) over the window as "
                                    "mpstat shows it (/proc/stat, the guest's time out)")
    mpstat_sys_pct: Num = _measured("%", SAMPLER, "its %sys: kernel time, KVM's halt polling "
                                    "and exit handling among it (the seed's figure)")
    mpstat_guest_pct: Num = _measured("%", SAMPLER, "its %guest (+ %gnice): the guest running")
    mpstat_irq_pct: Num = _measured("%", SAMPLER, "its %irq + %soft")
    mpstat_steal_pct: Num = _measured("%", SAMPLER, "its %steal (the machine under the host "
                                      "ran something else)")
    mpstat_idle_pct: Num = _measured("%", SAMPLER, "its %idle (+ %iowait)")
    halt_exits_per_s: KvmNum = _measured("per s", KVM, "HLT exits per second, mean over the "
                                         "workload vCPUs", kvm=True)
    host_exits: KvmNum = _measured("count", KVM, "every VM exit KVM counted (`exits`) over "
                                   "the window, summed over the vCPUs, HLT exits included; on "
                                   "this machine's kvm-pvm the privileged instructions KVM "
                                   "emulates, the guest's IPIs and timer writes among them, "
                                   "count in `host_insn_emulation` instead, so this can be "
                                   "below `host_halt_exits` + `guest_ipi_sent` "
                                   "([platform notes](platform-notes.md#host-side-counters))",
                                   kvm=True)
    host_insn_emulation: KvmNum = _measured("count", KVM, "instructions KVM emulated "
                                            "(`insn_emulation`), summed over the vCPUs",
                                            kvm=True)
    hlt_diff: KvmNum = _measured("count", (GUEST, KVM), "`host_halt_exits` - `guest_hlt`",
                                 kvm=True)
    hlt_diff_pct: KvmNum = _measured("%", (GUEST, KVM), "`hlt_diff` as % of `guest_hlt`",
                                     kvm=True)
    hlt_diff_vcpus: Optional[str] = _measured("count", (GUEST, KVM), "each vCPU's difference, "
                                              "`+0/+0`", kvm=True)
    accuracy_flag: Optional[Union[bool, str]] = _measured(
        "", (GUEST, KVM), "True where a vCPU's HLTs and halt exits differ by more than the "
        "tolerance (derive/tolerance.py)", kvm=True)
    # --- the machine around the run -------------------------------------------------------
    other_load: Num = _measured("%", SAMPLER, "the load of everything but this QEMU and the "
                                "bench over the whole boot, % of all host CPUs (/proc/stat)")
    other_load_window: Num = _measured("%", SAMPLER, "the same over the window alone (a "
                                       "neighbour's CPU counted as the experiment's)")
    steal_pct: Num = _measured("%", SAMPLER, "the host's own steal time over the boot (the "
                               "host is itself a VM here: /proc/stat's steal), % of all its "
                               "CPUs")
    loadavg_1m: Num = _measured("", SAMPLER, "the host's 1-minute load average at the boot's "
                                "end")
    # --- the workload's result record, times in µs ------------------------------------------
    window_ms: Num = _measured("ms", GUEST, "the measured window's length (`window_ns`)")
    iters: Num = _measured("count", GUEST, "pingpong: round trips begun inside the window")
    rtt_p50_us: Num = _measured("µs", GUEST, "pingpong: a round trip, median")
    rtt_p90_us: Num = _measured("µs", GUEST, "pingpong: a round trip, 90th percentile")
    rtt_p99_us: Num = _measured("µs", GUEST, "pingpong: a round trip, 99th percentile")
    rtt_max_us: Num = _measured("µs", GUEST, "pingpong: the longest round trip")
    rt_per_s: Num = _measured("per s", GUEST, "pingpong: round trips per second")
    late_p50_us: Num = _measured("µs", GUEST, "periodic, random: a sleep's lateness past its "
                                 "deadline, median")
    late_p99_us: Num = _measured("µs", GUEST, "periodic, random: lateness, 99th percentile")
    achieved_period_us: Num = _measured("µs", GUEST, "periodic: the period achieved, mean")
    wakes: Num = _measured("count", GUEST, "periodic, random: sleeps ended inside the window")
    interval_mean_us: Num = _measured("µs", GUEST, "random: the interval between wakes, mean")
    lap_p50_us: Num = _measured("µs", GUEST, "pipeline: a token's lap of the ring, median")
    hop_p50_us: Num = _measured("µs", GUEST, "pipeline: one hop, median")
    # --- the host's sampling --------------------------------------------------------------
    read_ms_max: Num = _measured("ms", SAMPLER, "the longer of the two markers' reads of KVM's "
                                 "counters over QMP")
    sample_ms_max: Num = _measured("ms", SAMPLER, "the longer of the two markers' samples, "
                                   "from the marker's arrival to the last read")
    late_samples: Num = _measured("count", SAMPLER, "markers whose sample outlasted the "
                                  "guest's hold (`window_hold=`) without window_sync: 0 to 2")
    seconds: Num = _measured("s", BENCH, "the boot's wall time, QEMU's start to its exit")
    # --- the fault injected on purpose (stall=): what actually happened ---------------------
    stall_ms: Num = _measured("ms", BENCH, "how long the vCPU thread was stopped")
    stall_at_ms: Num = _measured("ms", BENCH, "when it stopped, after the window opened")
    stall_thread_cpu_ms: Num = _measured("ms", BENCH, "the thread's CPU time while stopped "
                                         "(~0)")
    # --- the neighbour (neighbour=) over the same window, and alone -------------------------
    neighbour_ops_per_s: Num = _measured("per s", SAMPLER, "the neighbour's throughput over "
                                         "the window: hog, loops (all its threads); vm, its "
                                         "CPU-ms")
    neighbour_alone_ops_per_s: Num = _measured("per s", SAMPLER, "the same neighbour's alone, "
                                               "measured in the same bench")
    neighbour_alone_other_load: Num = _measured("%", SAMPLER, "other load while it ran alone, "
                                                "% of all host CPUs")
    neighbour_slowdown: Num = _measured("", SAMPLER, "1 - with / alone (0: the guest cost it "
                                        "nothing)")
    neighbour_cpu_pct: Num = _measured("%", SAMPLER, "its host CPU over the window, % of one "
                                       "CPU")
    # --- steal time as the guest saw it (kvm-steal-time), and what it did about it ----------
    guest_steal_ms: Num = _measured("ms", GUEST, "steal time, KVM's kvm-steal-time as the "
                                    "guest read it over the window (`steal_ns`), summed; "
                                    "empty where the guest had none (TCG)")
    guest_steal_pct: Num = _measured("%", GUEST, "the same, mean over the workload vCPUs, % "
                                     "of the window")
    host_run_delay_pct: Num = _measured("%", SAMPLER, "the workload vCPU threads' wait on a "
                                        "host run queue over the window (schedstat), mean, % "
                                        "of it")
    host_wakes_local_pct: Num = _measured("%", SAMPLER, "their wake-ups the host's scheduler "
                                          "put on the waker's own CPU, % of their wake-ups "
                                          "(a thread an IPI kicked queued behind the sending "
                                          "vCPU's thread, where KVM's poll stops at once; a "
                                          "timer's wake, on the thread's own CPU, counts "
                                          "too), from /proc/PID/task/TID/sched; empty where "
                                          "the host keeps no schedstats (the nested host "
                                          "boots with them)")
    host_migrations: Num = _measured("count", SAMPLER, "their moves between host CPUs over "
                                     "the window")
    guest_polls_suspended: Num = _measured("count", GUEST, "governed idle entries that halted "
                                           "because `haltpoll.steal_threshold=` suspended "
                                           "polling (`polls_suspended`), summed")
    guest_takeovers: Num = _measured("count", GUEST, "times the governor set haltpoll's rule "
                                     "aside (`takeovers`), summed")
    guest_shadow_breaks: Num = _measured("count", GUEST, "interrupts the host delivered on "
                                         "the idle HLT inside STI's shadow, which the guest "
                                         "stepped past (`shadow_breaks`), summed: the host's "
                                         "fault, 0 on a correct one")
    # --- KVM's own trace of the window (trace=halt_poll_ns; kvmtrace.py), the workload vCPUs:
    # the window's changes, and the halts by outcome, split at the host's maximum window (a
    # short halt is one a full window would have caught) ------------------------------------
    trace_grow: Num = _measured("count", KVM, "`trace=halt_poll_ns`: KVM's window grown")
    trace_shrink: Num = _measured("count", KVM, "shrunk, to a smaller window above 0")
    trace_reset: Num = _measured("count", KVM, "set to 0")
    trace_poll_hit: Num = _measured("count", KVM, "halts whose wake-up came while KVM "
                                    "polled")
    trace_no_wait: Num = _measured("count", KVM, "halts with window 0 whose wake-up was "
                                   "already there")
    trace_short_poll_miss: Num = _measured("count", KVM, "short halts (no longer than the "
                                           "host's maximum window) whose poll missed")
    trace_short_no_poll: Num = _measured("count", KVM, "short halts KVM did not poll for "
                                         "(window 0)")
    trace_long_poll_miss: Num = _measured("count", KVM, "longer halts whose poll missed")
    trace_long_no_poll: Num = _measured("count", KVM, "longer halts KVM did not poll for")
    trace_window_mean_ns: Num = _measured("ns", KVM, "the window the halts polled with, mean "
                                          "(each followed from the vCPU's first halt)")
    # --- predicted by build/idlelab-sim for this boot's configuration (tools/bench --predict;
    # predict.py), beside the measured figure of the same name, and the error against this
    # boot's measurement: % for counts, points for host CPU. Empty without --predict. ------
    predicted_costs: str = _predicted("", "the cost table the boot was predicted with: "
                                      "`here:RESULTS`, `hardware` or a file")
    predicted_guest_hlt: Num = _predicted("count", "`guest_hlt`, predicted")
    predicted_host_halt_exits: Num = _predicted("count", "`host_halt_exits`, predicted")
    predicted_host_attempted_poll: Num = _predicted("count", "`host_attempted_poll`, "
                                                    "predicted")
    predicted_host_successful_poll: Num = _predicted("count", "`host_successful_poll`, "
                                                     "predicted")
    predicted_poll_success_pct: Num = _predicted("%", "`poll_success_pct`, predicted")
    predicted_halt_exits_per_s: Num = _predicted("per s", "`halt_exits_per_s`, predicted")
    predicted_host_cpu_pct: Num = _predicted("%", "`host_cpu_pct`, predicted")
    predicted_rtt_p50_us: Num = _predicted("µs", "`rtt_p50_us`, predicted")
    predicted_late_p50_us: Num = _predicted("µs", "`late_p50_us`, predicted")
    predicted_achieved_period_us: Num = _predicted("µs", "`achieved_period_us`, predicted")
    predicted_err_guest_hlt_pct: Num = _predicted("%", "predicted - measured `guest_hlt`, % "
                                                  "of measured", (SIMULATOR, GUEST))
    predicted_err_host_halt_exits_pct: Num = _predicted("%", "the same for "
                                                        "`host_halt_exits`", (SIMULATOR, KVM))
    predicted_err_host_attempted_poll_pct: Num = _predicted("%", "the same for "
                                                            "`host_attempted_poll`",
                                                            (SIMULATOR, KVM))
    predicted_err_host_successful_poll_pct: Num = _predicted("%", "the same for "
                                                             "`host_successful_poll`",
                                                             (SIMULATOR, KVM))
    predicted_err_host_cpu_points: Num = _predicted("points", "predicted - measured "
                                                    "`host_cpu_pct`", (SIMULATOR, SAMPLER))
    predicted_within: Optional[bool] = _predicted("", "True where every count is within 10 % "
                                                  "(or 10) of its measurement and host CPU "
                                                  "within 10 points: the bar; empty for a run "
                                                  "not made")
    # --- not in runs.csv: set by aggregate() for the tables -------------------------------
    spread: dict = field(default=None, metadata={"csv": False})  # column: (min, max) of repeats
    trace: dict = field(default=None, metadata={"csv": False})   # the record's trace lists
    # the rows aggregate() combined that succeeded, for verdicts on paired windows
    members: list = field(default=None, metadata={"csv": False})

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


def csv_cells(row):
    """A row's runs.csv cells, COLUMNS in order, None as an empty cell."""
    return ["" if getattr(row, k) is None else getattr(row, k) for k in COLUMNS]
