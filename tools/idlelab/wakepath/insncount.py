"""Guest instructions per round trip of the wake-up path, counted under TCG by the insncount
plugin (tools/insncount/insncount.c) between the probe marks of arch/x86/probe.h.

Time here is instructions: guest ring 0 is emulated instruction by instruction on this
machine's KVM, so what the path executes is what it costs, and a count is the same on every
run. What is counted is the path, not the waiting: instructions a vCPU executes while its
idle state waits (IDLE_WAIT to NOTICE: the poll loop, or HLT) and, in pingpong.mode=spin,
while a thread spins for its turn (WAKE_END to RUNNING) are left out. The rest of the
window, on every vCPU, divided by the round trips, is the path's cost per round trip; the
phases split it:

  user   RUNNING -> WAKE_BEGIN      the workload's own loop between hand-overs
  wake   WAKE_BEGIN -> WAKE_END     thread_wake(): queue, flag word, IPI or not
  block  WAKE_END -> IDLE_ENTER     thread_block(), schedule(), switch to the idle thread
  enter  IDLE_ENTER -> IDLE_WAIT    the idle loop into its state (governor select)
  run    NOTICE -> RUNNING          out of the idle state back into the woken thread
"""
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field

from idlelab.derive import records
from idlelab.host import qemu
from idlelab.usage import EXIT_RUN_FAILED

TOP = qemu.TOP
PROBE_HEADER = os.path.join(TOP, "arch", "x86", "probe.h")
PLUGIN = os.path.join(TOP, "build", "host", "libinsncount.so")
PHASES = (("user", "RUNNING", "WAKE_BEGIN"), ("wake", "WAKE_BEGIN", "WAKE_END"),
          ("block", "WAKE_END", "IDLE_ENTER"), ("enter", "IDLE_ENTER", "IDLE_WAIT"),
          ("run", "NOTICE", "RUNNING"))
# The configurations `make wakepath-insns` counts, as (name, guest knobs).
CONFIGS = (("floor", "pingpong.mode=spin"), ("idle=poll", "idle=poll"),
           ("idle=haltpoll", "idle=haltpoll"), ("idle=halt", "idle=halt"),
           ("predict", "idle=haltpoll cpuidle.governor=predict"))
ITERS = 200
# The configuration whose phases price the simulator's guest paths (tools/sim/costs/here.txt:
# its fit was made on idle=halt pingpong, seed 000's no-poll).
PATH_KNOBS = "idle=halt"
# Marks only a workload thread makes: a vCPU's first one is its thread's first run.
WORKLOAD_MARKS = ("RUNNING", "WAKE_BEGIN", "WAKE_END")
# The warmup a count boots with, and how many boots it makes (each with ten times the last
# one's warmup) before it gives up on a window that opens before every thread has run.
WARMUP_MS = 10
COUNT_BOOTS = 3


def probe_ids(path=PROBE_HEADER):
    """{name: id} from the PROBE_LIST in arch/x86/probe.h (the one definition)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    ids = dict((n, int(i)) for n, i in re.findall(r"X\((\w+),\s*(\d+)\)", text))
    if not ids:
        raise ValueError(f"{path}: no PROBE_LIST entries")
    return ids


@dataclass
class Count:
    """One counted run: instructions per round trip, in all and per phase."""
    round_trips: int
    path: int                       # path instructions in the window, all vCPUs
    waiting: int                    # left out: spinning or halted
    phases: dict = field(default_factory=dict)    # phase -> instructions in the window
    # vCPUs that ran before the window opened but whose workload thread first ran inside it:
    # the warmup was too short there and the window holds the thread's start
    started_inside: list = field(default_factory=list)

    def per_rt(self, n=None):
        return (self.path if n is None else self.phases.get(n, 0)) / max(self.round_trips, 1)


def parse_log(text, ids):
    """([(vcpu, id, count)] in log order, {vcpu: total})."""
    marks, totals = [], {}
    for line in text.splitlines():
        parts = line.split()
        if parts[0] == "total":
            totals[int(parts[1])] = int(parts[2])
        elif parts[0] == "dropped":
            raise ValueError(f"the plugin dropped {parts[1]} marks: count a shorter run")
        else:
            marks.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return marks, totals


def analyse(marks, ids, round_trips, spin):
    """The Count of one run's marks: the window is from WINDOW_OPEN to the first WINDOW_CLOSE
    after it on the vCPU that runs the window (its counts bound the other vCPUs' by log
    order). A workload marks the close before it tells its threads to stop, and the window's
    edge marks it again: what lies between is teardown, not path."""
    name = {v: k for k, v in ids.items()}
    opened = [i for i, m in enumerate(marks) if m[1] == ids["WINDOW_OPEN"]]
    closed = [i for i, m in enumerate(marks)
              if m[1] == ids["WINDOW_CLOSE"] and opened and i > opened[0]]
    if not opened or not closed:
        raise ValueError("no window marks in the log: was the workload run?")
    # What each vCPU was doing when the window opened: its last mark before it.
    before, worked = {}, set()
    for vcpu, mid, _ in marks[:opened[0]]:
        before[vcpu] = name.get(mid)
        if name.get(mid) in WORKLOAD_MARKS:
            worked.add(vcpu)
    spinning = {v for v, m in before.items() if spin and m == "WAKE_END"}
    started_inside = set()
    last, path, waiting = {}, 0, 0
    phases = {p: 0 for p, _, _ in PHASES}
    ends = {(a, b): p for p, a, b in PHASES}
    for vcpu, mid, count in marks[opened[0]:closed[0] + 1]:
        mark = name.get(mid)
        if mark in WORKLOAD_MARKS and vcpu in before and vcpu not in worked:
            started_inside.add(vcpu)
        prev = last.get(vcpu)
        last[vcpu] = (mark, count)
        was_spinning = vcpu in spinning
        if spin and mark == "WAKE_END":
            spinning.add(vcpu)
        elif mark != "WINDOW_OPEN":
            spinning.discard(vcpu)
        if prev is None:
            continue
        step = count - prev[1]
        # In spin mode a thread spins from its hand-over to its next turn; the window's
        # controller, woken on the same vCPU, may preempt that spin to open or close the
        # window: the spin either side of its edge is waiting too (under TCG's round-robin
        # it can last a whole time slice, millions of instructions).
        if (prev[0], mark) == ("IDLE_WAIT", "NOTICE") or \
                (was_spinning and mark in ("RUNNING", "WINDOW_CLOSE")):
            waiting += step
            continue
        path += step
        phase = ends.get((prev[0], mark))
        if phase:
            phases[phase] += step
    return Count(round_trips=round_trips, path=path, waiting=waiting, phases=phases,
                 started_inside=sorted(started_inside))


def boot_counted(knobs, iters, plugin_args, smp=2, timeout=300, kernel=qemu.KERNEL32,
                 warmup_ms=WARMUP_MS):
    """Boots pingpong under TCG with the plugin (`plugin_args`: what follows its path) and
    returns the round trips its result record counts; RuntimeError (one line) otherwise.
    `kernel`: the 32-bit boot copy to run (another build's, to count another commit)."""
    if not os.path.exists(PLUGIN):
        raise RuntimeError(f"{PLUGIN} is missing: run `make {os.path.relpath(PLUGIN, TOP)}`")
    if not os.path.exists(kernel):
        raise RuntimeError(f"{kernel} does not exist: build that kernel first")
    cfg = qemu.Config(smp=smp, accel="tcg", plugin=f"{PLUGIN},{plugin_args}", kernel=kernel,
                      cmdline=f"workload=pingpong iters={iters} warmup={warmup_ms}ms hz=0 {knobs}")
    res = qemu.run(cfg, timeout=timeout)
    if not res.outcome.ok:
        raise RuntimeError(records.guest_failure(res.outcome.name, res.output))
    result = [f for kind, f in records.parse_records(res.output) if kind == "result"]
    if not result:
        raise RuntimeError("the guest printed no result record")
    return int(result[0]["iters"])


def count(knobs, iters=ITERS, smp=2, timeout=300):
    """Boots pingpong under TCG with the plugin and returns its Count (count_with())."""
    return count_with(knobs, iters, smp=smp, timeout=timeout)[0]


def count_with(knobs, iters, args=lambda marks, tmp: f"out={marks}", read=lambda tmp: None,
               smp=2, timeout=300, kernel=qemu.KERNEL32):
    """(Count, read(tmp)) of a pingpong boot under TCG with the plugin, whose arguments are
    args(marks file, temporary folder) (the marks go to the first; another output, e.g. a
    profile, to the folder, read by `read` before it is removed). A window that opened
    before a thread first ran (a slow first boot: a vCPU thread that had not yet run its
    guest after the warmup) holds that thread's start: the boot is made again with a
    longer warmup; RuntimeError if it never is long enough."""
    ids = probe_ids()
    warmup_ms = WARMUP_MS
    for _ in range(COUNT_BOOTS):
        with tempfile.TemporaryDirectory(prefix="idlelab-insncount-") as tmp:
            out = os.path.join(tmp, "marks.txt")
            round_trips = boot_counted(knobs, iters, args(out, tmp), smp, timeout,
                                       kernel=kernel, warmup_ms=warmup_ms)
            with open(out, encoding="utf-8") as f:
                marks, _ = parse_log(f.read(), ids)
            extra = read(tmp)
        c = analyse(marks, ids, round_trips, "pingpong.mode=spin" in knobs)
        if not c.started_inside:
            return c, extra
        warmup_ms *= 10
    raise RuntimeError(f"{knobs}: vCPUs {c.started_inside} first ran their thread inside the "
                       f"window in {COUNT_BOOTS} boots (last warmup {warmup_ms // 10} ms)")


def path_insns(knobs=PATH_KNOBS, iters=ITERS):
    """The kernel's wake path by phase, instructions per round trip, for a results folder's
    cost table (cost_table.path_insns, read by idlelab-sim as insns_<phase>): a bench
    records the path of the kernel it ran, so the fitted path costs follow that kernel.
    {"error": why} where it could not be counted (no plugin, the guest failed)."""
    try:
        c = count(knobs, iters)
    except Exception as e:  # optional metadata: whatever went wrong, the bench goes on
        return {"error": f"{type(e).__name__}: {e}"}
    return {"knobs": knobs, "accel": "tcg", "round_trips": c.round_trips, "per": "round trip",
            **{p: round(c.per_rt(p), 1) for p, _, _ in PHASES}}


def table(counts):
    """Lines of a plain-text table: configuration, instructions per round trip, phases."""
    head = f"{'configuration':16} {'insns/RT':>9} " + " ".join(f"{p:>7}" for p, _, _ in PHASES)
    lines = [head]
    for name, c in counts:
        lines.append(f"{name:16} {c.per_rt():9.0f} "
                     + " ".join(f"{c.per_rt(p):7.0f}" for p, _, _ in PHASES))
    return lines


def main():
    try:
        counts = [(name, count(knobs)) for name, knobs in CONFIGS]
    except (RuntimeError, ValueError, OSError) as e:
        print(f"wakepath-insns: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED
    print(f"guest instructions per pingpong round trip under TCG ({ITERS} round trips, "
          "2 vCPUs, hz=0; waiting left out):")
    for line in table(counts):
        print(line)
    return 0
