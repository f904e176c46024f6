"""Shared pytest setup: makes tools/ importable, and keeps the KVM tests honest.

Where /dev/kvm is usable (CI's machine has it) nothing may skip: a skipped test there is
reported as a failure, so a KVM test cannot silently stop running. On a host without KVM
the KVM tests are skipped with one reason and the summary says how many were not run."""
import os
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tools"))

from idlelab import qemu  # noqa: E402

KVM_USABLE = qemu.kvm_usable()
NO_KVM = "/dev/kvm is missing or not usable: KVM test not run"


def pytest_configure(config):
    config.addinivalue_line("markers", "kvm: needs a usable /dev/kvm")


def require(accel):
    """Skips (visibly, with the reason) a KVM check on a machine without KVM."""
    if accel == "kvm" and not KVM_USABLE:
        pytest.skip(NO_KVM)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and KVM_USABLE:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"skipped on a host where /dev/kvm is usable (not allowed): {reason}"


def pytest_terminal_summary(terminalreporter):
    not_run = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple) and NO_KVM in r.longrepr[2]]
    if not KVM_USABLE:
        terminalreporter.write_line(
            f"KVM tests not run: {len(not_run)} (no usable /dev/kvm on this host); "
            "every other test ran", yellow=True)
