"""From matrix files to the work list: the built-in seed matrices, each run's
configuration name and guest command line (checked by the kernel's own knob parser before
anything runs), and the time a boot should take."""
import os
import subprocess

from idlelab.derive import records
from idlelab.bench import matrix
from idlelab.host import qemu

TOP = qemu.TOP
MATRIX_DIR = os.path.join(TOP, "tools", "matrices")
QUICK_DIR = os.path.join(MATRIX_DIR, "quick")
SEEDS = ("000", "002", "003", "004")
# The bench's window edges are synchronised (the guest quiesces and waits for the probe's
# acknowledgement), so no hold is needed; --window-hold adds one for a matrix that turns
# window_sync off.
WINDOW_HOLD = "0s"
RUN_OVERHEAD_S = 1.0     # boot + table printing + exit here, before any run is measured
# The kernel's knobs_parse() on the host (tools/knobdoc.c), built by tests/knobdoc.mk.
KNOBDOC = os.path.join(TOP, "build", "host", "knobdoc")
KNOBDOC_MK = os.path.join(TOP, "tests", "knobdoc.mk")


class KnobCheckUnavailable(RuntimeError):
    """build/host/knobdoc could not be built or run, so values were not checked."""


def builtin_matrices(quick=False, seeds=SEEDS):
    """Paths of the built-in seed matrices (the reduced set with quick)."""
    base = QUICK_DIR if quick else MATRIX_DIR
    return [os.path.join(base, f"seed{s}.txt") for s in seeds]


def matrix_id(path):
    """A matrix's id is its file name without .txt: `seed003` picks the seed 003 tables."""
    return os.path.splitext(os.path.basename(path))[0]


def config_of(run):
    """The configuration a run belongs to: its run-line name without the sweep suffix and
    without a `.part` ("no-poll.idle-hz=0" -> "no-poll"). The report lays tables out by it."""
    suffix = "".join(f"-{matrix.short_key(k)}={v.replace(':', '_')}"
                     for k, v in run.sweep.items())
    base = run.name[:len(run.name) - len(suffix)] if suffix else run.name
    return base.split(".", 1)[0]


def load_matrices(paths):
    """[(matrix id, path, [Run])], every guest knob checked against the kernel's table."""
    knobs = matrix.guest_knob_names()
    return [(matrix_id(p), p, matrix.load(p, guest_knobs=knobs)) for p in paths]


def check_cmdlines(loaded, window_hold=WINDOW_HOLD):
    """Raises matrix.MatrixError naming the file, line and run of the first command line the
    guest kernel would refuse at boot (EXIT_BAD_KNOB): the full line each run boots with,
    values and the knobs the bench adds included. The kernel's parser decides (knobdoc
    --check-cmdline), so the harness holds no second definition of a valid value."""
    # A Linux guest's line is Linux's: its program refuses a bad value of an idlelab knob it
    # reads at boot (BAD_KNOB, with the same parser's message), Linux ignores what it lacks.
    runs = [run for _, _, rs in loaded for run in rs if run.guest_os == "idlelab"]
    # A value in the cost table's terms (timer+300us) becomes a time only once the table is
    # measured; any table gives a time of the same syntax, so a placeholder checks it.
    placeholder = records.placeholder()
    refused = kernel_refuses([guest_cmdline(records.resolve_run(r, placeholder), window_hold)
                              for r in runs])
    if refused:
        (i, msg), more = refused[0], len(refused) - 1
        also = f" (and {more} more run{'s' if more > 1 else ''} refused)" if more else ""
        raise matrix.MatrixError(f"{runs[i].where}: run {runs[i].name!r}: the guest would "
                                 f"refuse its command line: {msg}{also}")


def kernel_refuses(cmdlines):
    """[(index, the kernel's one-line error)] for each command line it would refuse."""
    built = subprocess.run(["make", "--no-print-directory", "-s", "-C", TOP, "-f", KNOBDOC_MK,
                            os.path.relpath(KNOBDOC, TOP)],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        last = (built.stderr or built.stdout).strip().splitlines()[-1:] or ["?"]
        raise KnobCheckUnavailable(f"building {relpath(KNOBDOC)} failed: {last[0]}")
    res = subprocess.run([KNOBDOC, "--check-cmdline", "-"], input="".join(
        c + "\n" for c in cmdlines), capture_output=True, text=True, timeout=60)
    if res.returncode not in (0, 1):
        raise KnobCheckUnavailable(f"{relpath(KNOBDOC)} --check-cmdline failed: "
                                   f"{res.stderr.strip()}")
    out = []
    for line in res.stdout.splitlines():
        num, _, msg = line.partition(": ")
        out.append((int(num) - 1, msg))
    return out


def plan(loaded):
    """The work list: one (matrix id, Run, repeat index) per boot. One pass over the
    matrices, in matrix order, per repeat: this machine's speed drifts over minutes, and
    repeats made back to back would put one configuration's medians in a slower stretch
    than the next one's; spread over the whole bench, the drift falls on all alike."""
    most = max((run.repeat for _, _, runs in loaded for run in runs), default=0)
    return [(mid, run, i) for i in range(1, most + 1) for mid, _, runs in loaded
            for run in runs if i <= run.repeat]


def guest_cmdline(run, window_hold=WINDOW_HOLD):
    """The guest command line: the workload and its duration (matrix keys of their own),
    the run's guest knobs, then window_sync=1 (exact window edges: probe.py) and a
    non-zero window_hold, each unless the matrix set it."""
    parts = [f"workload={run.workload}", f"duration={run.settings['duration']}"]
    if run.cmdline():
        parts.append(run.cmdline())
    if "window_sync" not in run.guest:
        parts.append("window_sync=1")
    if "window_hold" not in run.guest and matrix.parse_time(window_hold):
        parts.append(f"window_hold={window_hold}")
    return " ".join(parts)


def estimate_s(run):
    """Expected wall time of one boot, for the ETA: fixed cost + warm-up + window."""
    warmup = matrix.parse_time(run.guest.get("warmup", "100ms"))
    return RUN_OVERHEAD_S + (warmup + run.duration_ns) / 1e9


def relpath(path):
    """A path as the tables show it: relative to the tree when inside it."""
    return os.path.relpath(path, TOP) if path.startswith(TOP) else path
