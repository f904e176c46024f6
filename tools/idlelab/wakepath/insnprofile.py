"""Where the wake-up path's instructions go, function by function: the insncount plugin's
flat profile (an execution count per guest instruction address) of a pingpong run, taken
inside the measurement window only and without each vCPU's waiting (the idle state from
IDLE_WAIT to NOTICE; in pingpong.mode=spin the turn's spin from WAKE_END to RUNNING), as
insncount's phase count leaves them out, divided by the round trips and mapped to the
kernel's symbols. The total is that count's path (plus the window's own marks and the
workload's set-up inside it, a fraction of an instruction per round trip).

`make wakepath-profile WAKEPATH_PROFILE_KNOBS="idle=haltpoll" [WAKEPATH_PROFILE_ANNOTATE=fn,...]`
"""
import bisect
import os
import subprocess
import sys

from idlelab.host import qemu
from idlelab.wakepath import insncount
from idlelab.usage import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE

ITERS = 5 * insncount.ITERS
SPIN_ITERS = 20     # a spin for the turn lasts a TCG time slice: the floor is slow to count
SHOWN_BELOW = 0.5   # per round trip: functions that cost less are left out of the table


def parse_profile(text):
    """{address: executions} from the plugin's profile file ("hexaddress count" lines)."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"profile line {n}: expected 'address count', got {line!r}")
        out[int(parts[0], 16)] = int(parts[1])
    return out


def parse_nm(text):
    """[(address, name)] of the code symbols in `nm -n` output, by address."""
    syms = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    return syms


def per_round_trip(counts, round_trips, syms):
    """({function: instructions per round trip}, {address: the same}) from a profile."""
    starts = [a for a, _ in syms]
    by_fn, by_addr = {}, {}
    for addr, n in counts.items():
        d = n / round_trips
        i = bisect.bisect_right(starts, addr) - 1
        fn = syms[i][1] if i >= 0 else f"{addr:#x}"
        by_fn[fn] = by_fn.get(fn, 0) + d
        by_addr[addr] = d
    return by_fn, by_addr


def plugin_args(knobs, out, prof, ids):
    """The plugin's arguments after its path: the window, and the waiting that insncount
    leaves out."""
    wait = ("WAKE_END", "RUNNING") if "pingpong.mode=spin" in knobs else ("IDLE_WAIT", "NOTICE")
    return (f"out={out},profile={prof},window={ids['WINDOW_OPEN']}:{ids['WINDOW_CLOSE']},"
            f"skip={ids[wait[0]]}:{ids[wait[1]]}")


def profile(knobs, iters=None, build=None):
    """By function and by address, instructions per round trip under `knobs`; `build`:
    another kernel's build folder (qemu.build_files), whose probe marks must be this tree's
    arch/x86/probe.h (a kernel from before them cannot be counted)."""
    if iters is None:
        iters = SPIN_ITERS if "pingpong.mode=spin" in knobs else ITERS
    elf, kernel = qemu.build_files(build)
    ids = insncount.probe_ids()

    def prof(tmp):
        return os.path.join(tmp, "profile.txt")

    def read(tmp):
        with open(prof(tmp), encoding="utf-8") as f:
            return parse_profile(f.read())

    # insncount's boot, with its retry where a thread first ran inside the window
    c, counts = insncount.count_with(
        knobs, iters, args=lambda marks, tmp: plugin_args(knobs, marks, prof(tmp), ids),
        read=read, kernel=kernel)
    nm = subprocess.run(["nm", "-n", elf], capture_output=True, text=True, check=True)
    return per_round_trip(counts, c.round_trips, parse_nm(nm.stdout))


def instructions(build=None):
    """[(function, address, "mnemonic operands")] of the kernel in address order, from
    objdump: the one reading of the disassembly."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", qemu.build_files(build)[0]],
                         capture_output=True, text=True, check=True).stdout
    out, current = [], None
    for line in dis.splitlines():
        if line.endswith(">:"):
            current = line.split("<", 1)[1][:-2]
            continue
        addr, sep, text = line.partition(":")
        if current is None or not sep:
            continue
        try:
            out.append((current, int(addr, 16), text.strip()))
        except ValueError:
            continue
    return out


def annotate(by_addr, functions):
    """objdump's disassembly of `functions`, each executed instruction with its count per
    round trip (blank: not executed)."""
    lines, current = [], None
    for fn, addr, text in instructions():
        if fn not in functions:
            continue
        if fn != current:
            current = fn
            lines += ["", f"{addr:016x} <{fn}>:"]
        d = by_addr.get(addr)
        line = f"{addr:x}:\t{text}"
        lines.append(f"{d:7.2f} {line}" if d else f"{'':7} {line}")
    return lines


def main(argv):
    """argv: KNOBS [FUNCTION,...]."""
    if not 1 <= len(argv) <= 2 or not argv[0].strip():
        print("wakepath-profile: usage: KNOBS [FUNCTION,...] (e.g. 'idle=haltpoll' "
              "idle_until_work)", file=sys.stderr)
        return EXIT_USAGE
    try:
        by_fn, by_addr = profile(argv[0])
    except (RuntimeError, ValueError, OSError, subprocess.CalledProcessError) as e:
        print(f"wakepath-profile: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED
    print(f"guest instructions per pingpong round trip by function under TCG ({argv[0]}; "
          "the window only, waiting left out):")
    print(f"{sum(by_fn.values()):9.1f}  all")
    for fn, d in sorted(by_fn.items(), key=lambda kv: -abs(kv[1])):
        if abs(d) >= SHOWN_BELOW:
            print(f"{d:9.1f}  {fn}")
    if len(argv) == 2:
        wanted = [f for f in argv[1].split(",") if f]
        missing = [f for f in wanted if f not in by_fn]
        for line in annotate(by_addr, wanted):
            print(line)
        if missing:
            print(f"(not executed per round trip: {', '.join(missing)})")
    return EXIT_OK
