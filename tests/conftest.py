"""Shared pytest setup: makes tools/ importable, and keeps the KVM tests honest.

Every test that needs KVM carries the `kvm` mark (a test parametrized with accel "kvm" gets
it here). Where /dev/kvm is usable (the nested host's job included) nothing may skip: a
skipped test there is reported as a failure, so a KVM test cannot silently stop running.
Where it is not, the KVM tests are skipped here with one reason and run on the nested KVM
host instead (tools/test-kvm, the last step of `make test`); "not run" is left only where
there is no nested host either, with its reason. A test that asks for KVM without the mark
fails: it would run on no host at all."""
import os
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tools"))

from idlelab.host import nested, qemu  # noqa: E402

KVM_USABLE = qemu.kvm_usable()
NO_KVM = "/dev/kvm is missing or not usable: KVM test not run"
ON_NESTED = "no usable /dev/kvm: this KVM test runs on the nested KVM host (tools/test-kvm)"
# The one skip allowed on any host: a test of what `make test` deliberately never builds (the
# Linux guest's own kernel, `make linux-guest-kernel`: minutes of both cores) says this in its
# reason when that build is absent, and the summary counts it.
NOT_BUILT = "not built by make test"


def _kvm_elsewhere():
    """Why a KVM test is skipped here: it runs on the nested host, or nowhere (and why)."""
    ok, why = nested.image_state()
    return ON_NESTED if ok else f"{NO_KVM} ({why})"


def pytest_configure(config):
    config.addinivalue_line("markers", "kvm: needs a usable /dev/kvm (or runs on the nested host)")
    config.addinivalue_line("markers", "kvm_full: a KVM test left to make test-kvm-full on the "
                                       "nested host (make test runs it where /dev/kvm is usable)")


@pytest.hookimpl(tryfirst=True)   # before -m deselects by mark
def pytest_collection_modifyitems(config, items):
    reason = None if KVM_USABLE else _kvm_elsewhere()
    for item in items:
        params = getattr(item, "callspec", None)
        if params is not None and "kvm" in params.params.values():
            item.add_marker(pytest.mark.kvm)
        if reason and item.get_closest_marker("kvm"):
            item.add_marker(pytest.mark.skip(reason=reason))


_current = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _current.append(item)
    yield
    _current.pop()


def require(accel):
    """Inside a KVM test (marked): nothing to do, collection already placed it. A test that
    reaches here without the mark on a machine without KVM fails, naming the mark."""
    if accel == "kvm" and not KVM_USABLE:
        item = _current[-1] if _current else None
        if item is None or not item.get_closest_marker("kvm"):
            pytest.fail("require('kvm') in a test without @pytest.mark.kvm: it would run on "
                        "no host (mark it)")
        pytest.skip(_kvm_elsewhere())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
    if rep.skipped and KVM_USABLE and NOT_BUILT not in reason:
        rep.outcome = "failed"
        rep.longrepr = f"skipped on a host where /dev/kvm is usable (not allowed): {reason}"


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple)]
    delegated = sum(ON_NESTED in r.longrepr[2] for r in skipped)
    not_run = sum(NO_KVM in r.longrepr[2] for r in skipped)
    not_built = sum(NOT_BUILT in r.longrepr[2] for r in skipped)
    if delegated:
        terminalreporter.write_line(
            f"KVM tests left to the nested KVM host: {delegated} (no usable /dev/kvm here; "
            "tools/test-kvm runs them next)", yellow=True)
    if not_run:
        terminalreporter.write_line(
            f"KVM tests not run: {not_run} (no usable /dev/kvm and no nested host image); "
            "every other test ran", yellow=True)
    if not_built:
        terminalreporter.write_line(
            f"tests of optional builds not run: {not_built} (their build is absent; the skip "
            "names the make target)", yellow=True)
