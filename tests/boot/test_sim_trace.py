"""The simulator's governor trace equals the kernel's for the same idle sequence.

A guest records, on the vCPU that runs the workload, each idle state (poll, halt) with its
TSC stamps and the window haltpoll left after each reflect (timeline=N, the `reflect` event).
The simulator then replays that idle sequence (script=: each period's length, and for a
period that halted the recorded halt's residency; every cost zero, so nothing but the
engine's idle loop stands between the sequence and the governor), starting from the window
the kernel had after its first recorded halt. Every reflect must leave the same window in
both: the engine calls the governor in the kernel's order with the kernel's inputs
(kernel/policy/idle_entry.h's deferred reflect, the expired poll then the halt, W = 0
halting at once). This is kernel against simulator, not either against the spec (tests/unit/test_sim.c
holds the engine to the spec's vectors)."""
import os
import subprocess

import pytest

from conftest import TOP
from idlelab.derive import records
from idlelab.timeline import records as timeline_records
from test_boot import ACCELS_FULL, boot

SIM = os.path.join(TOP, "build", "idlelab-sim")
# Random sleeps around a 2 ms cap: polls that hit and expire, grows and shrinks, on this
# nested KVM too (with the default 200 us cap its slow wake-ups shrink the window to 0 for
# good: nothing but halts, docs/wakepath.md, "Why the haltpoll row's window is set").
KNOBS = ("workload=random dist=exp mean=1ms cpus=0x2 hz=0 idle=haltpoll "
         "haltpoll.guest_halt_poll_ns=2ms haltpoll.guest_halt_poll_grow_start=100us "
         "warmup=20ms duration=500ms timeline=4096")
MIN_COMPARED = 100
# Every cost zero but the guest's poll iteration (1 ns: a poll is seen to expire past W).
# The cost names from the hardware table, which gives each exactly once (costs.c refuses a
# table that misses one): a cost added to the simulator is zeroed here without a second list.
with open(os.path.join(TOP, "tools", "sim", "costs", "hardware.txt")) as _f:
    COST_NAMES = [ln.split("=", 1)[0].strip() for ln in _f if "=" in ln.split("#", 1)[0]]
ZERO_COSTS = "\n".join(f"{name} = {1 if name == 'guest_poll_iter' else 0}"
                       for name in COST_NAMES) + "\n"


def tsc_to_ns(cycles, hz):
    """arch/x86/tsc.h's conversion, bit for bit: the residency the kernel reflected."""
    return (cycles * ((10 ** 9 << 32) // hz)) >> 32


def recorded_states(tl, cpu):
    """[(state, residency_ns, reflect_window_or_None)] of one CPU's log in order, from its
    first idle state's start; the log's last state may have no reflect yet (a halt's is
    made at the next idle entry). Stops at what a script cannot replay: a halt that ended
    without work (nothing on this workload should end one)."""
    states, open_state, reflects = [], None, []
    started = False
    for e in tl.cpus[cpu].events:
        if e.kind in ("poll", "halt"):
            started = True
            open_state = (e.kind, e.tsc)
        elif e.kind == "idle_end" and open_state:
            kind, t0 = open_state
            work = bool(e.arg & timeline_records.END_WORK)
            if kind == "halt" and not work:
                break
            states.append([kind, tsc_to_ns(e.tsc - t0, tl.tsc_hz), work])
            open_state = None
        elif e.kind == "reflect" and started:
            reflects.append(e.arg)
    return [(k, r, w, reflects[i] if i < len(reflects) else None)
            for i, (k, r, w) in enumerate(states)]


def script_from(states):
    """The replay: the window after the first halt's reflect, and from the next period on
    one `L H` line per period, with the windows the kernel reflected to in order."""
    first = next(i for i, s in enumerate(states) if s[0] == "halt" and s[3] is not None)
    window = states[first][3]
    lines, want, before = [], [], window
    i = first + 1
    while i < len(states) and states[i][3] is not None:
        kind, res, work, after = states[i]
        if kind == "poll" and work:             # a hit; seen in time by the kernel's check
            lines.append(f"{min(res, before) if before else res} 0")
            want.append(after)
        elif kind == "poll":                    # expired, then a halt of its own length
            if i + 1 >= len(states) or states[i + 1][0] != "halt" or states[i + 1][3] is None:
                break
            halt = states[i + 1][1]
            lines.append(f"{max(res + halt, 2 * before + 1)} {halt}")
            want += [after, states[i + 1][3]]
            after = states[i + 1][3]
            i += 1
        else:                                   # W = 0: straight to the halt
            lines.append(f"{res} {res}")
            want.append(after)
        before = after
        i += 1
    return window, lines, want


def simulated_windows(tmp_path, window, lines):
    (tmp_path / "script").write_text("\n".join(lines) + "\n")
    (tmp_path / "costs").write_text(ZERO_COSTS)
    res = subprocess.run([SIM, "smp=1", "idle=haltpoll", "hz=0", "trace=1",
                          "haltpoll.guest_halt_poll_ns=2ms",
                          "haltpoll.guest_halt_poll_grow_start=100us",
                          f"script={tmp_path / 'script'}", f"script_window={window}",
                          f"costs={tmp_path / 'costs'}"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return [int(f["window_ns"]) for k, f in records.parse_records(res.stdout) if k == "trace"]


@pytest.mark.parametrize("accel", ACCELS_FULL)
def test_the_simulated_governor_reflects_as_the_kernel_did(accel, tmp_path):
    subprocess.run(["make", "-s", "build/idlelab-sim"], cwd=TOP, check=True)
    res = boot(accel, smp=2, cmdline=KNOBS)
    tl = timeline_records.parse_text(res.output)
    assert tl is not None, res.output[-2000:]
    states = recorded_states(tl, 1)
    kinds = {(k, w) for k, _, w, _ in states}
    assert ("poll", True) in kinds and ("halt", True) in kinds, kinds
    window, lines, want = script_from(states)
    got = simulated_windows(tmp_path, window, lines)
    assert len(want) >= MIN_COMPARED, (len(want), len(states))
    assert len(got) >= len(want), (len(got), len(want))
    for n, (w, g) in enumerate(zip(want, got)):
        assert g == w, (f"reflect {n} of {len(want)}: kernel window {w}, simulator {g}; "
                        f"windows before: kernel {want[max(0, n - 5):n]}, "
                        f"simulator {got[max(0, n - 5):n]}")
