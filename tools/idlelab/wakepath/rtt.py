"""The wake-up path's round trips in time, against the goals of the lean path
(docs/wakepath.md): `make wakepath-rtt`.

One sitting: pingpong (2 vCPUs, hz=0, 1 s window) under each configuration, the
configurations alternated within each repeat (this machine's speed drifts over minutes), and
bench=exits once per repeat for `ipi_halt_rtt`; the median of the repeats' round-trip p50s.
The goals are ratios within that one sitting, so the machine's speed of the day cancels:
idle=poll at most 3x the spin floor, idle=haltpoll at most 1.1x idle=poll, and a poll-hit
round trip (idle=haltpoll, whose replies are poll hits) below half of ipi_halt_rtt.

`--before BUILD_DIR` measures another commit's kernel (its build folder, e.g. a worktree's) in
the same sitting, alternated with this tree's configuration by configuration, and prints the
two side by side: the before and after of a change to the path, as docs/notebook/2026-12-01-wakepath-cuts.md gives them.

Exit status: 0 measured (whether or not the goals are met: the table says), 1 a run failed,
2 bad arguments, 3 KVM asked for and not usable.
"""
import argparse
import os
import re
import statistics
import sys

from idlelab.derive import records
from idlelab import costtable
from idlelab.costtable import measuring
from idlelab.host import hosts, qemu
from idlelab.usage import EXIT_NO_KVM, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE

# (name, guest knobs). haltpoll's window is scaled to this kind of machine (docs/wakepath.md: with the
# default 200 us a round trip here sits at the window's edge and the outcome is bimodal).
CONFIGS = (
    ("floor", "pingpong.mode=spin"),
    ("idle=poll", "idle=poll"),
    ("idle=haltpoll", "idle=haltpoll haltpoll.guest_halt_poll_ns=1ms"),
    ("idle=halt", "idle=halt hostpoll=off"),
)
GOALS = (  # (what, numerator, denominator, at most)
    ("idle=poll / floor", "idle=poll", "floor", 3.0),
    ("idle=haltpoll / idle=poll", "idle=haltpoll", "idle=poll", 1.1),
    ("poll-hit RT / ipi_halt_rtt", "idle=haltpoll", "ipi_halt_rtt", 0.5),
)


FAILED_DIR = os.path.join(os.path.dirname(qemu.KERNEL32), "wakepath-rtt")


def rtt_p50_ns(output):
    """The pingpong result's round-trip p50, ns; ValueError if the output has none."""
    for kind, f in records.parse_records(output):
        if kind == "result" and f.get("workload") == "pingpong":
            return int(f["rtt_p50_ns"])
    raise ValueError("no pingpong result record")


def medians(samples):
    """{name: median} of {name: [values]}; names with no value are left out."""
    return {k: statistics.median(v) for k, v in samples.items() if v}


def verdicts(med):
    """[(what, ratio or None, at most, met or None)]: None where a figure is missing."""
    out = []
    for what, num, den, most in GOALS:
        if med.get(num) is None or not med.get(den):
            out.append((what, None, most, None))
            continue
        ratio = med[num] / med[den]
        out.append((what, ratio, most, ratio <= most))
    return out


def table(med, repeats, accel, duration="1s"):
    lines = [f"wake-up path round trips, {accel}, pingpong 2 vCPUs hz=0 {duration}, p50, "
             f"median of {repeats} alternated repeats:"]
    for name, _ in CONFIGS + (("ipi_halt_rtt", ""),):
        v = med.get(name)
        lines.append(f"  {name:16} {v / 1000:9.1f} us" if v is not None
                     else f"  {name:16} {'n/a':>9}")
    lines.append("goals (ratios of this one sitting" + (
        "; under TCG, the emulator's, not what the goals are about):" if accel == "tcg"
        else "):"))
    for what, ratio, most, met in verdicts(med):
        shown = f"{ratio:6.2f}" if ratio is not None else "   n/a"
        state = "n/a" if met is None else ("met" if met else "NOT met")
        lines.append(f"  {what:28} {shown}  (at most {most:g}): {state}")
    return lines


class RunFailed(RuntimeError):
    """A boot of the sitting failed: the message names it and where its console is kept;
    `samples` holds what the repeats before it measured."""

    def __init__(self, message, samples):
        super().__init__(message)
        self.samples = samples


def keep_console(res, name, label, repeat, folder):
    """Writes a failed boot's console to `folder` and returns the file's path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"wakepath-rtt-failed-{re.sub(r'[^A-Za-z0-9]+', '_', name)}"
                                f"{'-' + label if label else ''}-{repeat}.txt")
    with open(path, "w") as f:
        f.write(res.output)
    return path


def measure(accel, repeats, duration, timeout=120, run=qemu.run, cost=measuring.measure,
            kernels=None, failed_dir=FAILED_DIR):
    """{kernel label: {name: [rtt p50 ns per repeat]} plus "ipi_halt_rtt"} for `kernels`
    ({label: 32-bit boot image}, this tree's alone by default, labelled ""), each
    configuration's kernels run back to back; raises RunFailed naming the run that failed,
    its console kept in `failed_dir`. ipi_halt_rtt is the platform's (this tree's
    bench=exits), the same for all."""
    kernels = kernels or {"": qemu.KERNEL32}
    samples = {label: {name: [] for name, _ in CONFIGS + (("ipi_halt_rtt", ""),)}
               for label in kernels}
    for r in range(repeats):
        for name, knobs in CONFIGS:
            for label, kernel in kernels.items():
                res = run(qemu.Config(smp=2, accel=accel, kernel=kernel,
                                      cmdline=f"workload=pingpong duration={duration} "
                                              f"warmup=100ms hz=0 {knobs}"), timeout=timeout)
                if not res.outcome.ok:
                    path = keep_console(res, name, label, r + 1, failed_dir)
                    raise RunFailed(f"{name}{' ' + label if label else ''}, repeat {r + 1}: "
                                    f"{records.guest_failure(res.outcome.name, res.output)} "
                                    f"(its console: "
                                    f"{os.path.relpath(path)})", samples)
                samples[label][name].append(rtt_p50_ns(res.output))
        prim = cost(accel)["prims"].get("ipi_halt_rtt", {})
        if "ns_p50" in prim:
            for label in kernels:
                samples[label]["ipi_halt_rtt"].append(prim["ns_p50"])
        print(f"wakepath-rtt: repeat {r + 1} of {repeats} done", file=sys.stderr, flush=True)
    return samples


def spreads(samples):
    """{name: (min, max)} of {name: [values]}: the run-to-run spread of the repeats."""
    return {k: (min(v), max(v)) for k, v in samples.items() if v}


def within(after, spread):
    """True if `after` lies inside the before kernel's run-to-run spread (min..max), None
    if either is missing."""
    if after is None or spread is None:
        return None
    return spread[0] <= after <= spread[1]


def side_by_side(before, after, repeats, accel, where, duration="1s", spread=None):
    """The before/after table of two kernels' medians, each repeat's spread (min..max of
    the repeats' p50s, `spread` = {"before": spreads(), "after": spreads()}), whether the
    after median lies within the before spread, and the goals for each."""
    spread = spread or {"before": {}, "after": {}}
    lines = [f"wake-up path round trips, {accel}, pingpong 2 vCPUs hz=0 {duration}, p50, "
             f"median of {repeats} alternated repeats [min..max of the repeats]; before: "
             f"{where}, after: this tree:",
             f"  {'configuration':16} {'before':>22} {'after':>22}  after/before  "
             "after within before's spread"]

    def cell(v, sp):
        if v is None:
            return f"{'n/a':>22}"
        rng = f" [{sp[0] / 1000:.1f}..{sp[1] / 1000:.1f}]" if sp else ""
        return f"{f'{v / 1000:.1f} us{rng}':>22}"

    for name, _ in CONFIGS:
        b, a = before.get(name), after.get(name)
        ratio = f"{a / b:12.2f}" if a is not None and b else f"{'n/a':>12}"
        inside = within(a, spread["before"].get(name))
        verdict = "n/a" if inside is None else ("yes" if inside else "NO")
        lines.append(f"  {name:16} {cell(b, spread['before'].get(name))} "
                     f"{cell(a, spread['after'].get(name))}  {ratio}  {verdict}")
    rtt = after.get("ipi_halt_rtt")   # the platform's, one measurement for both
    lines.append(f"  {'ipi_halt_rtt':16} {rtt / 1000:6.1f} us (both)" if rtt is not None
                 else f"  {'ipi_halt_rtt':16} {'n/a':>9}")
    if accel == "tcg":
        lines.append("(under TCG: the emulator's round trips, not what the goals are about)")
    for label, med in (("before", before), ("after", after)):
        lines.append(f"goals, {label}: " + "; ".join(
            f"{what} {ratio:.2f} ({'met' if met else 'NOT met'})" if ratio is not None
            else f"{what} n/a" for what, ratio, _, met in verdicts(med)))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(prog="wakepath-rtt", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="alternated repeats (1-50)")
    ap.add_argument("--accel", choices=hosts.ACCELS, default="auto",
                    help="the goals are about KVM: auto (default) is /dev/kvm, else the "
                         "nested KVM host; tcg measures the emulator instead")
    ap.add_argument("--duration", default="1s", help="each run's window (guest time knob)")
    ap.add_argument("--before", metavar="BUILD_DIR",
                    help="also measure this build folder's kernel (another commit's), "
                         "alternated with this tree's, and print the two side by side")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code else EXIT_OK
    if not 1 <= args.repeats <= 50:
        print(f"wakepath-rtt: --repeats {args.repeats}: must be 1 to 50", file=sys.stderr)
        return EXIT_USAGE
    if not re.fullmatch(r"[1-9][0-9]*(ms|s)", args.duration):
        print(f"wakepath-rtt: --duration {args.duration!r}: a whole number of ms or s, "
              "e.g. 1s", file=sys.stderr)
        return EXIT_USAGE
    args.accel, code = hosts.place("wakepath-rtt", "tools/wakepath-rtt", args.accel, argv)
    if code is not None:
        return code
    if args.accel == "kvm" and not qemu.kvm_usable():
        print(f"wakepath-rtt: KVM not run: /dev/kvm is missing or not usable (exit "
              f"{EXIT_NO_KVM}); --accel tcg measures the emulator instead", file=sys.stderr)
        return EXIT_NO_KVM
    kernels = {"": qemu.KERNEL32}
    if args.before is not None:
        why = qemu.build_missing(args.before)
        if why:
            print(f"wakepath-rtt: --before: {why}", file=sys.stderr)
            return EXIT_USAGE
        kernels = {"before": qemu.build_files(args.before)[1], "after": qemu.KERNEL32}
    failed = None
    try:
        samples = measure(args.accel, args.repeats, args.duration, kernels=kernels)
    except RunFailed as e:
        failed, samples = e, e.samples
        print(f"wakepath-rtt: {e}; what the sitting measured before it:", file=sys.stderr)
    except (RuntimeError, ValueError, costtable.CostTableError) as e:
        print(f"wakepath-rtt: {e}", file=sys.stderr)
        return EXIT_RUN_FAILED
    repeats = args.repeats
    if failed:      # the medians are of the runs made (the failed repeat's earlier ones too)
        repeats = max(len(v) for k in samples for v in samples[k].values())
        print(f"(partial: the runs made before the failure, at most {repeats} of "
              f"{args.repeats} repeats a configuration)")
    if args.before is not None:
        lines = side_by_side(medians(samples["before"]), medians(samples["after"]),
                             repeats, args.accel, args.before, args.duration,
                             spread={k: spreads(samples[k]) for k in ("before", "after")})
    else:
        lines = table(medians(samples[""]), repeats, args.accel, args.duration)
    for line in lines:
        print(line)
    return EXIT_RUN_FAILED if failed else EXIT_OK
