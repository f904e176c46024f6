"""The wake path's instructions priced by the platform's cost table: an estimate of a pingpong
round trip in time, from the TCG profile (insnprofile.py: each instruction's executions per
round trip) and what each kind of instruction costs on a machine (bench=exits: alu, load,
call, locked_rmw, cli_sti, rdtsc, pause, pushf).

Why: where guest ring 0 is emulated (docs/platform-notes.md) an instruction's kind, not
only the count, sets its time (a call with its return costs there what ten adds do), so a
count alone misjudges which cut buys what, and the lean path's goals are ratios of time.
The estimate is the path only, priced instruction by instruction, plus one poll-to-poll
hand-over per direction (`poll_wake_rtt`, the cross-CPU memory round trip); it knows
nothing of halts (idle=halt's wake is an exit: `make wakepath-rtt` measures it), of caches
beyond a dependent load's, or of two vCPUs sharing a host CPU. Check it against
`make wakepath-rtt` in the same sitting before trusting a ratio from it.

`make wakepath-estimate [WAKEPATH_ESTIMATE_ARGS="--costs RESULTS_DIR|META_JSON | --accel tcg
                       | --build OTHER_BUILD_DIR"]`
"""
import argparse
import functools
import os
import re
import subprocess
import sys

from idlelab import costtable
from idlelab.costtable import measuring
from idlelab.host import hosts, qemu
from idlelab.report import resultsdir
from idlelab.wakepath import insncount, insnprofile
from idlelab.usage import EXIT_NO_KVM, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE

# The configurations priced, insncount's: the floor and the two that poll (a hand-over is a
# poll's; idle=halt's is an exit, which no instruction price covers).
CONFIGS = tuple(c for c in insncount.CONFIGS if c[0] in ("floor", "idle=poll", "idle=haltpoll"))
# The primitives it prices with, each the cost of one instruction of a kind (call: a call
# with its return; cli_sti and pushf: a pair, split as below).
NEEDED = ("alu", "load", "call", "locked_rmw", "cli_sti", "rdtsc", "pause", "pushf",
          "poll_wake_rtt")
_LOCKED = re.compile(r"^(lock\b|xchg\S*\s.*\()")


def kind(text):
    """The kind of one instruction ("mnemonic operands" as objdump prints it)."""
    op = text.split(None, 1)[0] if text else ""
    if _LOCKED.match(text):
        return "locked"           # a LOCK prefix, or XCHG with memory (locked implicitly)
    if op.startswith(("call", "ret")) or (op == "jmp" and "*" in text):
        return "call"             # and an indirect jump: a branch to a computed target too
    if op in ("pushf", "pushfq"):
        return "pushf"
    if op in ("cli", "sti"):
        return "cli_sti"
    if op in ("rdtsc", "pause"):
        return op
    if op.startswith(("nop", "lea")):
        return "alu"              # no memory access (a NOP's or LEA's operand is not one)
    if op.startswith(("push", "pop")) or "(" in text:
        return "load"             # a stack or memory access, load or store
    return "alu"


def folder_table(where):
    """The cost table of a results folder's meta.json, or of a meta.json-shaped file (e.g.
    docs/ring0-costs-kvm-20261130.json); CostTableError if it has none."""
    if not os.path.exists(where):
        raise costtable.CostTableError(f"{where}: no such file or folder")
    folder, name = (os.path.split(where) if os.path.isfile(where) else (where, None))
    try:
        table = resultsdir.read_meta(folder, name).get("cost_table") or {}
    except OSError as e:
        raise costtable.CostTableError(f"{where}: {e.strerror}") from None
    if not isinstance(table, dict) or not isinstance(table.get("prims"), dict):
        raise costtable.CostTableError(f"{where}: no cost table in it (a folder of `make "
                                       "bench`, measured with its cost table, or its meta.json)")
    return table


def kind_ns(table):
    """ns per instruction of each kind from a cost table (costtable.median_ns: raises
    CostTableError naming a primitive it lacks)."""
    ns = {p: costtable.median_ns(table, p) for p in NEEDED}
    return {
        "alu": ns["alu"], "load": ns["load"], "locked": ns["locked_rmw"],
        "call": ns["call"] / 2,                  # the call, and apart the return
        "cli_sti": ns["cli_sti"] / 2,
        "pushf": max(ns["pushf"] - ns["load"], ns["alu"]),   # its POP is priced as a load
        "rdtsc": ns["rdtsc"], "pause": ns["pause"],
    }


def price(by_addr, insns, per_kind):
    """(ns per round trip of the path, {kind: ns}, {function: ns}) of a profile."""
    by_kind, by_fn = {}, {}
    for fn, addr, text in insns:
        d = by_addr.get(addr)
        if not d:
            continue
        k = kind(text)
        ns = d * per_kind[k]
        by_kind[k] = by_kind.get(k, 0) + ns
        by_fn[fn] = by_fn.get(fn, 0) + ns
    return sum(by_kind.values()), by_kind, by_fn


def estimate(table, configs=CONFIGS, profile=insnprofile.profile,
             insns=insnprofile.instructions):
    """[(name, instructions per RT, path ns, hand-over ns, {kind: ns}, {function: ns})]."""
    per_kind, listing = kind_ns(table), insns()
    hand_overs = costtable.median_ns(table, "poll_wake_rtt")   # one each way per round trip
    out = []
    for name, knobs in configs:
        by_fn_insns, by_addr = profile(knobs)
        path, by_kind, by_fn = price(by_addr, listing, per_kind)
        out.append((name, sum(by_fn_insns.values()), path, hand_overs, by_kind, by_fn))
    return out


def report(rows, where):
    """The table and the goals' ratios by the estimate, as lines."""
    lines = [f"pingpong round trips estimated from the TCG profile, priced by {where}:",
             f"{'configuration':16} {'insns':>6} {'path us':>8} {'hand-overs':>10} "
             f"{'RT us':>7}"]
    rt = {}
    for name, n, path, hand, _, _ in rows:
        rt[name] = (path + hand) / 1000
        lines.append(f"{name:16} {n:6.0f} {path / 1000:8.1f} {hand / 1000:10.1f} "
                     f"{rt[name]:7.1f}")
    if {"floor", "idle=poll", "idle=haltpoll"} <= set(rt):
        lines.append(f"estimated idle=poll / floor {rt['idle=poll'] / rt['floor']:.2f} "
                     f"(goal 3), idle=haltpoll / idle=poll "
                     f"{rt['idle=haltpoll'] / rt['idle=poll']:.2f} (goal 1.1)")
    for name, _, path, _, by_kind, by_fn in rows:
        if name == "idle=poll":
            lines.append("idle=poll's path by kind: " + ", ".join(
                f"{k} {v / 1000:.1f} us" for k, v in sorted(by_kind.items(),
                                                           key=lambda kv: -kv[1])))
            lines.append("and by function: " + ", ".join(
                f"{f} {v / 1000:.1f}" for f, v in sorted(by_fn.items(),
                                                       key=lambda kv: -kv[1])[:8]))
    return lines


def main(argv):
    ap = argparse.ArgumentParser(prog="wakepath-estimate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--costs", metavar="RESULTS_DIR|FILE",
                    help="price with this results folder's cost table (its meta.json), or a "
                         "file of meta.json's shape, instead of measuring one now")
    ap.add_argument("--accel", choices=hosts.ACCELS, default="auto",
                    help="where to measure the cost table now (auto: KVM if usable, else the "
                         "nested KVM host, else TCG)")
    ap.add_argument("--build", metavar="BUILD_DIR",
                    help="price another commit's kernel: its build folder (idlelab.elf and "
                         "idlelab32.elf, with this tree's probe marks), e.g. a worktree's")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_OK if e.code == 0 else EXIT_USAGE
    if not args.costs:
        args.accel, code = hosts.place("wakepath-estimate", "tools/insncount/estimate",
                                       args.accel, argv)
        if code is not None:
            return code
    if args.accel == "kvm" and not args.costs and not qemu.kvm_usable():
        print("wakepath-estimate: --accel kvm: /dev/kvm is not usable here", file=sys.stderr)
        return EXIT_NO_KVM
    why = qemu.build_missing(args.build) if args.build is not None else None
    if why:
        print(f"wakepath-estimate: --build: {why}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.costs:
            table = folder_table(args.costs)
            where = f"the cost table of {args.costs} ({table.get('accel', '?')})"
        else:
            accel = qemu.resolve_accel(args.accel)
            table = measuring.measure(accel)
            where = f"a cost table measured now ({accel})"
        rows = estimate(table, profile=functools.partial(insnprofile.profile, build=args.build),
                        insns=functools.partial(insnprofile.instructions, args.build))
    except (costtable.CostTableError, resultsdir.FolderError) as e:
        print(f"wakepath-estimate: {e}", file=sys.stderr)
        return EXIT_USAGE if args.costs else EXIT_RUN_FAILED
    except (RuntimeError, ValueError, OSError, subprocess.CalledProcessError) as e:
        print(f"wakepath-estimate: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED
    for line in report(rows, where):
        print(line)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
