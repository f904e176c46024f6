"""Walking one run from `tools/bench` to runs.csv and the tables crosses at most about 15
harness modules (issue 28), counted by runpath.py: every tools/idlelab module whose code
ran while the bench's main() ran, for a matrix of one idle run under TCG."""
import os

import runpath

MAX_MODULES = 15


def test_one_run_crosses_at_most_15_modules():
    code, mods = runpath.one_run()
    assert code == 0
    # the path really was walked: the command line, one boot, runs.csv and the table
    assert {"idlelab.bench.cli", "idlelab.report.tables"} <= set(mods)
    assert len(mods) <= MAX_MODULES, f"{len(mods)} modules:\n" + "\n".join(mods)


def test_the_count_sees_every_module_that_runs():
    """A module counts when any code of it runs, in any thread, module-level code of a late
    import included; a file outside the package does not count."""
    assert runpath.module_of(os.path.join(runpath.PKG, "host", "qemu.py")) == "idlelab.host.qemu"
    assert runpath.module_of(os.path.join(runpath.PKG, "bench", "__init__.py")) == "idlelab.bench"
    assert runpath.module_of(os.path.join(runpath.TOP, "tools", "bench")) is None
    assert runpath.module_of(os.__file__) is None
