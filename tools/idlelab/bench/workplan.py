"""A bench's work plan, from matrix files to the work list: the built-in seed matrices, every
run's full command line judged by the kernel's own knob parser before anything runs, the list
in its order (one pass over the matrices per repeat) and what each boot should take."""
import os
import re
import functools
import subprocess

from idlelab import TOP, costtable, timings
from idlelab.bench import matrix, matrixvalues, plateau, windowplan
from idlelab.report.console import relpath


MATRIX_DIR = os.path.join(TOP, "tools", "matrices")
QUICK_DIR = os.path.join(MATRIX_DIR, "quick")
SEEDS = ("000", "002", "003", "004")
RUN_OVERHEAD_S = 1.0     # boot + table printing + exit here, before any run is measured
# The kernel's knobs_parse() on the host (tools/knobdoc.c), built by tests/knobdoc.mk.
KNOBDOC = os.path.join(TOP, "build", "host", "knobdoc")
KNOBDOC_MK = os.path.join(TOP, "tests", "knobdoc.mk")
# The Linux guest's own refusal of a settings line (tools/linuxguest/switchable.c's list),
# built by tools/linuxguest/linuxguest.mk.
LINUX_KNOBCHECK = os.path.join(TOP, "build", "host", "linuxguest-knobcheck")


class KnobCheckUnavailable(RuntimeError):
    """build/host/knobdoc could not be built or run, so values were not checked."""


def builtin_matrices(quick=False, seeds=SEEDS):
    """Paths of the built-in seed matrices (the reduced set with quick)."""
    base = QUICK_DIR if quick else MATRIX_DIR
    return [os.path.join(base, f"seed{s}.txt") for s in seeds]


def matrix_id(path):
    """A matrix's id is its file name without .txt: `seed003` picks the seed 003 tables."""
    return os.path.splitext(os.path.basename(path))[0]


def load_matrices(paths):
    """[(matrix id, path, [Run])], every guest knob checked against the kernel's table."""
    knobs = matrix.guest_knob_names()
    return [(matrix_id(p), p, matrix.load(p, guest_knobs=knobs)) for p in paths]


def check_cmdlines(loaded, window_hold=matrix.WINDOW_HOLD):
    """Raises matrix.MatrixError naming the file, line and run of the first command line the
    guest kernel would refuse at boot (EXIT_BAD_KNOB): the full line each run boots with,
    values and the knobs the bench adds included. The kernel's parser decides (knobdoc
    --check-cmdline), so the harness holds no second definition of a valid value."""
    if any(costtable.misplaced_located(rs) for _, _, rs in loaded):
        plateau.check(loaded)
    # A Linux guest's line is Linux's: its program refuses a bad value of an idlelab knob it
    # reads at boot (BAD_KNOB, with the same parser's message), Linux ignores what it lacks.
    runs = [run for _, _, rs in loaded for run in rs if run.guest_os == "idlelab"]
    # A value in the cost table's terms (timer+300us) becomes a time only once the table is
    # measured; any table gives a time of the same syntax, so a placeholder checks it.
    placeholder = costtable.placeholder()
    for r in (r for _, _, rs in loaded for r in rs):   # within=: by each guest's own list
        if r.windows is not None:
            try:
                check_arms(costtable.resolve_run(r, placeholder).windows.arms, r.guest_os)
            except windowplan.PlanError as e:
                raise matrix.MatrixError(f"{matrix.where_set(r, 'within')}: run {r.name!r}: "
                                         f"{e}") from None
    refused = kernel_refuses([matrix.guest_cmdline(costtable.resolve_run(r, placeholder),
                                                   window_hold) for r in runs])
    if refused:
        (i, msg), more = refused[0], len(refused) - 1
        also = f" (and {more} more run{'s' if more > 1 else ''} refused)" if more else ""
        # the kernel names the knob it refused: the line that set it (a defaults line too)
        knob = re.match(r"knob '([^=']+)", msg)
        where = matrix.where_set(runs[i], f"guest.{knob.group(1)}") if knob else runs[i].where
        raise matrix.MatrixError(f"{where}: run {runs[i].name!r}: the guest would "
                                 f"refuse its command line: {msg}{also}")


def build_knobdoc():
    """build/host/knobdoc, the kernel's knob parser compiled for this machine."""
    built = subprocess.run(["make", "--no-print-directory", "-s", "-C", TOP, "-f", KNOBDOC_MK,
                            os.path.relpath(KNOBDOC, TOP)],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        last = (built.stderr or built.stdout).strip().splitlines()[-1:] or ["?"]
        raise KnobCheckUnavailable(f"building {relpath(KNOBDOC)} failed: {last[0]}")


@functools.lru_cache(maxsize=None)
def knob_defaults():
    """{knob: its default, as the kernel writes it} (build/host/knobdoc --defaults)."""
    build_knobdoc()
    res = subprocess.run([KNOBDOC, "--defaults"], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise KnobCheckUnavailable(f"{relpath(KNOBDOC)} --defaults failed: "
                                   f"{res.stderr.strip()}")
    return dict(line.split("=", 1) for line in res.stdout.split())


def knob_default(name):
    return knob_defaults()[name]


def kernel_refuses(cmdlines):
    """[(index, the kernel's one-line error)] for each command line it would refuse."""
    build_knobdoc()
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


def estimate_s(run, boot_s=RUN_OVERHEAD_S):
    """Expected wall time of one boot, for the ETA: fixed cost + warm-up + window."""
    return timings.run_s(run, boot_s, matrixvalues.parse_time,
                         f"{matrixvalues.knob_define('WINDOW_GAP_DEFAULT_MS')}ms")



def planned_by_matrix(work):
    """{matrix id: boots planned}, for the tables of a folder cut short."""
    out = {}
    for mid, _, _ in work:
        out[mid] = out.get(mid, 0) + 1
    return out


def build_linux_knobcheck():
    """build/host/linuxguest-knobcheck, the Linux guest's list of what switches."""
    built = subprocess.run(["make", "--no-print-directory", "-s", "-C", TOP,
                            os.path.relpath(LINUX_KNOBCHECK, TOP)],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        last = (built.stderr or built.stdout).strip().splitlines()[-1:] or ["?"]
        raise KnobCheckUnavailable(f"building {relpath(LINUX_KNOBCHECK)} failed: {last[0]}")


def kernel_refuses_switch(line, guest="idlelab"):
    """The guest's own refusal of a settings line, None if it takes it: idlelab's
    (build/host/knobdoc --check-switchable, kernel/knobs/switchable.c) or the Linux guest's
    (build/host/linuxguest-knobcheck, tools/linuxguest/switchable.c)."""
    if guest == "linux":
        build_linux_knobcheck()
        tool = LINUX_KNOBCHECK
    else:
        build_knobdoc()
        tool = KNOBDOC
    res = subprocess.run([tool, "--check-switchable", line], capture_output=True,
                         text=True, timeout=30)
    if res.returncode == 0:
        return None
    return res.stdout.strip() or res.stderr.strip() or \
        f"{os.path.basename(tool)} exit {res.returncode}"


def check_arms(arms, guest="idlelab"):
    """PlanError for the first arm whose guest settings the guest would refuse to switch."""
    for arm in arms:
        if arm.guest:
            refused = kernel_refuses_switch(" ".join(f"{k}={v}" for k, v in arm.guest.items()),
                                            guest)
            if refused:
                raise windowplan.PlanError(f"arm {arm.label}: {refused}")


def with_defaults(base_guest, arms):
    """The boot's guest knobs with the kernel's default of every knob an arm sets that the
    boot does not: what the other arms' windows return to."""
    out = dict(base_guest)
    for key in {k for a in arms for k in a.guest}:
        if key not in out:
            out[key] = knob_default(key)
    return out
