"""The cost table as markdown lines, for every seed table's header: its primitives, the kvm
parameters its boots ran with, the kernel's wake path and its vCPU threads' halts as the
host's scheduler saw them. Pure."""
from idlelab.costtable import PRIMS, SMP
from idlelab.derive import threadtrace


def markdown(table):
    """The cost table as markdown lines, for every seed file's header."""
    if not table:
        return []
    if table.get("skipped"):
        return ["The platform's cost table (`bench=exits`) was not measured "
                "(`tools/bench --no-cost-table`).", ""]
    if table.get("error"):
        return [f"The platform's cost table (`bench=exits`) could not be measured: "
                f"{table['error']}", ""]
    lines = [f"The platform's cost table, measured by `bench=exits iters={table['iters']}` at "
             f"the start of this bench ({table['accel']}, {SMP} vCPUs; ns per operation):", "",
             "| primitive | p50 ns | p90 ns | n | how |", "|---|---|---|---|---|"]
    for prim in PRIMS:
        e = table["prims"].get(prim, {})
        if e.get("skipped"):
            lines.append(f"| {prim} | skipped | | 0 | {e.get('why', '')} |")
            continue
        how = ", ".join(f"{k}={v}" for k, v in e.items()
                        if k in ("target", "host_poll", "answer", "timer", "wait",
                                 "ops_per_sample", "chain", "with"))
        lines.append(f"| {prim} | {e.get('ns_p50', 0):.1f} | {e.get('ns_p90', 0):.1f} | "
                     f"{e.get('n', 0)} | {how} |")
    return lines + [""] + params_markdown(table.get("host_params")) + \
        path_markdown(table.get("path_insns")) + threads_markdown(table.get("threads"))


def params_markdown(params):
    """The kvm parameters the cost table's boots ran with (measuring.cost_boot_params), one
    line; nothing off KVM or for a folder measured before they were kept."""
    if not params:
        return []
    vals = " ".join(f"{k}={v}" for k, v in (params.get("values") or {}).items()) or "none"
    if params.get("set"):
        return [f"Its boots ran with the kvm parameters {vals}, set for them: every halt of "
                "`ipi_poll_rtt`'s responder and of `timer_poll` polled 500 µs (every other "
                "halt sleeps: bench=exits has the poll-control MSR at 0).", ""]
    return [f"Its boots ran with the host's kvm parameters ({vals}): {params.get('why')}.", ""]


def threads_markdown(threads):
    """The cost table's boot's vCPU threads' halts as the host's scheduler saw them
    (derive/threadtrace.py; its parts in its order), as one line; nothing for a folder
    without them."""
    if not threads:
        return []
    if "why" in threads and not threads.get("halts"):
        return [f"Its vCPU threads' halts were not split by the host's scheduler: "
                f"{threads['why']}", ""]
    parts = [f"{p} {threads[p]['ns_p50'] / 1000:.1f} us (p90 {threads[p]['ns_p90'] / 1000:.1f})"
             for p, v in threads.items()
             if isinstance(v, dict) and "ns_p50" in v and p != "shadow_break_slept"]
    return [f"Its vCPU threads' halts as the host's scheduler saw them ({threads['halts']} that "
            f"slept without a host poll; thread_halt: the exit to asleep, on a CPU; thread_kick: "
            f"the waker's exit to KVM's kick of it; thread_wake: the kick to running, off CPU; "
            f"thread_entry: running to the guest, on a CPU; these after an IPI's wake, "
            f"*_timer after a timer's, thread_wake_timer from sched_wakeup, thread_timer_late "
            f"the LAPIC timer's expiry to the wake, thread_timer_slept the exit to the expiry, "
            f"*_long those after a sleep of {threadtrace.LONG_SLEEP_NS / 1e6:g} ms or more; "
            f"thread_preempt: switched out runnable to "
            f"running again): "
            + ", ".join(parts)
            + (f"; {threads['rewakes']} woken and asleep again without entering, on a CPU "
               f"{threads['rewake_ppm'] / 1e4:.2f} % of the time asleep"
               if threads.get("rewakes") else "")
            + (f"; preempted {threads['preempt_per_s']:g} times a second on a CPU "
               f"({threads.get('preempted_ms', 0):g} ms over {threads['on_cpu_ms']:g} ms on one"
               + (", most by " + ", ".join(f"{c} {ms:g} ms" for c, ms in
                                          threads["preempted_by"].items())
                  if threads.get("preempted_by") else "") + ")"
               if "preempt_per_s" in threads else "")
            + (f"; other tasks took a host CPU {threads['other_per_s']:g} times a second on "
               f"{threads['host_cpus']} CPUs (thread_other_run: for how long)"
               if "other_per_s" in threads else "")
            + (f"; {threads['vcpu_wakes']} kicked awake by another vCPU, "
               f"{threads['vcpu_wake_beside_ppm'] / 1e4:.1f} % of them onto the waker's CPU"
               if threads.get("vcpu_wakes") else "")
            + (f"; {threads['shadow_breaks']} interrupts injected on a HLT inside STI's "
               f"shadow, which the host dropped (lost wake-ups"
               + (f": those HLTs slept {threads['shadow_break_slept']['ns_p50'] / 1e6:.1f} ms "
                  f"p50" if "shadow_break_slept" in threads else "") + ")"
               if threads.get("shadow_breaks") else "")
            + (f"; {threads['lost']} trace events lost" if threads.get("lost") else "")
            + ((f"; traced in a second boot and scaled to this table's untraced one (the "
                f"trace slows what it times): the IPI's parts x{threads['probe']['ipi']:.3f} "
                f"({threads['probe']['basis']['ipi']} untraced over traced), the timer's "
                f"x{threads['probe']['timer']:.3f} ({threads['probe']['basis']['timer']})"
                if threads.get("pairs", 1) == 1 else
                f"; traced in {threads['pairs']} pairs of boots, each pair's parts scaled to "
                f"its untraced boot (the trace slows what it times; the IPI's parts by "
                f"{threads['probe']['basis']['ipi']} untraced over traced, median "
                f"x{threads['probe']['ipi']:.3f}, the timer's by "
                f"{threads['probe']['basis']['timer']}, x{threads['probe']['timer']:.3f}), "
                f"each figure the median of the pairs' and the halts theirs together (this "
                f"table's primitives are the first sound pair's)")
               if "probe" in threads else "")
            + (f"; not to be trusted: {threads['disturbed']}" if threads.get("disturbed")
               else "") + ".", ""]


def path_markdown(path):
    """The kernel's wake path by phase (wakepath/insncount.py's path_insns), which the
    simulator's here table scales its fitted guest paths by, as one line; nothing for a
    folder without it. Its phases are the record's figures besides the round trips."""
    if not path:
        return []
    if "error" in path:
        return [f"The kernel's wake path could not be counted: {path['error']}", ""]
    phases = [k for k, v in path.items() if k != "round_trips"
              and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return [f"The kernel's wake path, guest instructions per pingpong round trip under TCG "
            f"({path['knobs']}): " + ", ".join(f"{p} {path[p]:.0f}" for p in phases)
            + f" ({sum(path[p] for p in phases):.0f} in all).", ""]
