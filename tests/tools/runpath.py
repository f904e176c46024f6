"""The harness modules one bench run walks through: every tools/idlelab module a function of
which runs (in any thread) while `tools/bench`'s main() runs, recorded with sys.setprofile.
Module-level code run by an import inside main() counts as well, so a lazy import cannot
hide a module from the count.

    python3 tests/tools/runpath.py [tools/bench arguments]

prints the modules crossed, one a line, then their count (the bench's own output goes to
stderr as usual). With no arguments: one idle run of 200 ms under TCG, its results folder
made in a temporary folder and removed.

A plain module, not a conftest.py (see live.py); test_runpath.py gates the count."""
import contextlib
import os
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
PKG = os.path.join(TOP, "tools", "idlelab")
if os.path.join(TOP, "tools") not in sys.path:
    sys.path.insert(0, os.path.join(TOP, "tools"))

# The one-run matrix the count is taken for (issue 28: "walking one run from tools/bench to
# runs.csv and the tables").
ONE_RUN = "idle: workload=idle duration=200ms\n"


def module_of(filename):
    """The dotted idlelab module a source file is, or None outside tools/idlelab."""
    path = os.path.abspath(filename)
    if not path.startswith(PKG + os.sep) or not path.endswith(".py"):
        return None
    rel = os.path.relpath(path, os.path.dirname(PKG))[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def crossed(argv):
    """(bench exit status, sorted idlelab modules whose code ran while main(argv) ran)."""
    from idlelab.bench import cli
    seen = set()
    files = {}

    def profile(frame, event, _arg):
        if event == "call":
            name = frame.f_code.co_filename
            if name not in files:
                files[name] = module_of(name)
            if files[name]:
                seen.add(files[name])

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        with contextlib.redirect_stdout(sys.stderr):   # the list alone on stdout
            code = cli.main(argv)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return code, sorted(seen)


def one_run(extra=()):
    """crossed() for the one-run TCG matrix, in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="idlelab-runpath-") as tmp:
        mfile = os.path.join(tmp, "one.txt")
        with open(mfile, "w", encoding="utf-8") as f:
            f.write(ONE_RUN)
        return crossed(["--accel", "tcg", "--matrix", mfile,
                        "--results-dir", os.path.join(tmp, "results"), *extra])


def main(argv):
    code, mods = crossed(argv) if argv else one_run()
    for m in mods:
        print(m)
    print(f"{len(mods)} modules (bench exit {code})")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
