"""Boot tests: real QEMU runs of build/idlelab32.elf (and a GRUB ISO), under KVM and TCG."""
import os
import re
import shutil

import pytest

from conftest import TOP, require
from idlelab.host import qemu

TIMEOUT = 60
ACCELS = ["kvm", "tcg"]
# The same, with the KVM case left to make test-kvm-full where KVM is the nested host (its
# boots take seconds there: make test keeps under 10 minutes); with /dev/kvm both run.
ACCELS_FULL = [pytest.param("kvm", marks=pytest.mark.kvm_full), "tcg"]


def run(cfg, expect="SUCCESS", timeout=TIMEOUT, **kw):
    """One QEMU run that must end with the exit code `expect`: no test reads the records of
    a run that ended some other way (a PANIC boot can still print the record a test wants)."""
    require(cfg.accel)
    res = qemu.run(cfg, timeout=timeout, **kw)
    assert not res.timed_out, f"QEMU timed out after {timeout}s:\n{res.output}"
    assert_exit(res, expect)
    return res


def boot(accel, smp=1, cmdline="", machine="microvm", iso=None, expect="SUCCESS"):
    cfg = qemu.Config(smp=smp, accel=accel, cmdline=cmdline, machine=machine, iso=iso)
    return run(cfg, expect)


def one(res, kind):
    recs = res.records(kind)
    assert len(recs) == 1, f"expected one '{kind}' record, got {len(recs)}:\n{res.output}"
    return recs[0][1]


def assert_exit(res, name):
    out = res.outcome
    assert out.name == name, f"exit {out.name} (status {res.status}), wanted {name}:\n{res.output}"
    assert one(res, "exit")["name"] == name


def assert_tsc_check_fields(b):
    """tsc_sync is the verdict of the boot's TSC check (kernel/tsc_sync.c), tsc_skew_ns the
    largest warp it saw: either may be anything a host gives, but agreement means no warp."""
    assert b["tsc_sync"] in ("0", "1"), b
    assert re.fullmatch(r"\d+", b["tsc_skew_ns"]), b
    if b["tsc_sync"] == "1":
        assert b["tsc_skew_ns"] == "0", b


@pytest.mark.parametrize("accel", ACCELS)
@pytest.mark.parametrize("smp", [1, 2, 4])
def test_every_cpu_comes_online(accel, smp):
    res = boot(accel, smp=smp)
    online = sorted(int(f["cpu"]) for _, f in res.records("online"))
    assert online == list(range(smp)), res.output
    apic_ids = [f["apic_id"] for _, f in res.records("online")]
    assert len(set(apic_ids)) == smp, "two CPUs reported the same APIC ID"
    b = one(res, "boot")
    assert int(b["cpus"]) == smp
    assert int(b["tsc_hz"]) > 100_000_000
    assert b["protocol"] == "multiboot1"
    assert_tsc_check_fields(b)
    if smp == 1:  # one TSC agrees with itself: nothing to check
        assert (b["tsc_sync"], b["tsc_skew_ns"]) == ("1", "0"), res.output


@pytest.mark.parametrize("accel", ACCELS)
def test_boot_record_matches_the_platform(accel):
    b = one(boot(accel, smp=2), "boot")
    assert_tsc_check_fields(b)
    if accel == "kvm":
        # run script offers x2APIC, TSC-deadline, poll control and the REALTIME hint
        assert (b["kvm"], b["x2apic"], b["tsc_deadline"], b["pollctl"], b["realtime"]) == \
            ("1", "1", "1", "1", "1")
    else:
        # QEMU 7.2 TCG has neither x2APIC nor TSC-deadline: the fallbacks must be in use
        assert (b["kvm"], b["x2apic"], b["tsc_deadline"]) == ("0", "0", "0")


@pytest.mark.parametrize("accel", ACCELS_FULL)
@pytest.mark.parametrize("machine", ["pc", "q35"])
def test_firmware_machines_boot(accel, machine):
    res = boot(accel, smp=2, machine=machine)
    assert int(one(res, "boot")["cpus"]) == 2


def test_microvm_acpi_goes_through_the_xsdt():
    """microvm's RSDP is revision 2 with RSDT = 0; pc's firmware gives an RSDT."""
    res = boot("tcg", smp=2)
    assert re.search(r"ACPI via xsdt", res.output), res.output
    res = boot("tcg", smp=2, machine="pc")
    assert re.search(r"ACPI via rsdt", res.output), res.output


@pytest.mark.parametrize("cmdline, knob, says", [
    ("nosuchknob=1", "nosuchknob", "unknown knob"),
    ("duraton=1s", "duraton", "(did you mean 'duration'? boot with 'help'"),
    ("cpus=-1", "cpus", "range 0x0..0x7fffffffffffffff"),
    ("boot_timeout=1ms", "boot_timeout", "10ms..600s"),
    ("boot_timeout=fast", "boot_timeout", "expected a time"),
    ("panic_test=segv", "panic_test", "none|ud|de|pf|gp|null"),
    ("verbose=2", "verbose", "verbose"),
])
def test_bad_knob_is_refused_with_its_own_exit_code(cmdline, knob, says):
    res = boot("tcg", cmdline=cmdline, expect="BAD_KNOB")
    err = one(res, "error")
    assert err["what"] == "knob"
    assert knob in err["msg"] and says in err["msg"], err["msg"]
    assert not res.records("boot"), "the kernel went on booting after a bad knob"


def test_help_lists_every_knob_and_exits_cleanly():
    """The config records of a normal boot name every knob in the table: help must too."""
    names = [k for _, f in boot("tcg").records("config") for k in f]
    assert len(names) >= 4, "the config records list too few knobs"
    res = boot("tcg", cmdline="help")
    for name in names:
        assert re.search(rf"^\s*{re.escape(name)}\b", res.output, re.M), f"help lacks {name}"


@pytest.mark.parametrize("accel", ACCELS_FULL)
@pytest.mark.parametrize("which, vector, name", [
    ("ud", 6, "invalid opcode"),
    ("de", 0, "divide error"),
    ("pf", 14, "page fault"),
    ("gp", 13, "general protection"),
    ("null", 14, "page fault"),  # page 0 is absent: a null pointer cannot read low memory
])
def test_exception_dumps_registers_and_exits(accel, which, vector, name):
    res = boot(accel, cmdline=f"panic_test={which}", expect="EXCEPTION")
    exc = one(res, "exception")
    assert int(exc["vector"]) == vector and exc["name"] == name
    for field in ("cpu", "error", "rip", "rsp", "cr2"):
        assert field in exc
    if which == "pf":
        assert int(exc["cr2"], 16) == 0x700000000000
    if which == "null":
        assert int(exc["cr2"], 16) == 0x18  # FAULT_NULL_OFFSET
    for reg in ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8 ", "r15", "rflags"):
        assert f"{reg}=" in res.output, f"dump lacks {reg}"


@pytest.fixture(scope="module")
def iso(tmp_path_factory):
    path = tmp_path_factory.mktemp("iso") / "idlelab.iso"
    rc = os.system(f"{TOP}/tools/mkiso {path} 'verbose=1 boot_timeout=3s'")
    assert rc == 0, "tools/mkiso failed"
    return str(path)


def test_grub_iso_boots_and_passes_the_cmdline(iso):
    """GRUB takes ~40 s under this machine's emulated KVM and 0.5 s under TCG: TCG here."""
    res = boot("tcg", smp=2, machine="pc", iso=iso)
    b = one(res, "boot")
    assert b["protocol"] == "multiboot2" and int(b["cpus"]) == 2
    cfg = {k: v for _, f in res.records("config") for k, v in f.items()}
    assert cfg["verbose"] == "1" and cfg["boot_timeout"] == "3s", res.output


def test_a_kernel_path_with_spaces_and_dashes_boots(tmp_path):
    """QEMU hands the guest "<path> <arguments>"; the path may hold spaces, '=' and even a
    '--' of its own: the guest takes the arguments after the last standalone '--'."""
    folder = tmp_path / "a b=c -- d"
    folder.mkdir()
    kernel = folder / "idle lab.elf"
    shutil.copy(qemu.KERNEL32, kernel)
    res = run(qemu.Config(smp=1, accel="tcg", kernel=str(kernel), cmdline="verbose=1 hz=100"))
    cfg = {k: v for _, f in res.records("config") for k, v in f.items()}
    assert (cfg["verbose"], cfg["hz"]) == ("1", "100")


def test_an_overlong_command_line_is_refused_with_a_record():
    cmdline = " ".join(["verbose=1"] * 250)          # 2499 bytes, over the 2047 the guest keeps
    res = boot("tcg", cmdline=cmdline, expect="BAD_KNOB")
    err = one(res, "error")
    assert err["what"] == "cmdline" and "longer than 2047 bytes" in err["msg"]
