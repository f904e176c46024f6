"""Shared pytest setup: makes tools/ importable and offers the accelerator fixtures."""
import os
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(TOP, "tools"))

from idlelab import qemu  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "kvm: needs a usable /dev/kvm")


def require(accel):
    """Skips (visibly, with the reason) a KVM check on a machine without KVM."""
    if accel == "kvm" and not qemu.kvm_usable():
        pytest.skip("/dev/kvm is missing or not usable: KVM-only check not run")
