"""The Linux guest's own kernel (`make linux-guest-kernel`, tools/linuxguest/kernel/): its
configuration check names an option Kconfig dropped, a run chooses it by name (the stock
Debian kernel by default) and is refused in one line naming the make target when it is not
built, and under TCG it boots with the haltpoll governor running. The build itself is never
started here: it takes minutes, so the boot test is skipped without it."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import NOT_BUILT, TOP
from idlelab.bench import cli
from idlelab.derive import guestrun
from idlelab.host import qemu

KERNEL_DIR = os.path.join(TOP, "tools", "linuxguest", "kernel")
CHECKCONFIG = os.path.join(KERNEL_DIR, "checkconfig")
BUILT = qemu.LINUX_KERNEL_FILES["haltpoll-gov"][0]
BOOT_TIMEOUT_S = 240
SHORT = "duration=300ms warmup=100ms window_sync=1 window_sync_timeout=60s"


def exit_code(name):
    with open(os.path.join(KERNEL_DIR, "exit-codes")) as f:
        codes = dict(ln.strip().split("=") for ln in f if ln[0].isalpha())
    return int(codes[name])


def checkconfig(tmp_path, fragment, dotconfig):
    (tmp_path / "frag").write_text(fragment)
    (tmp_path / ".config").write_text(dotconfig)
    return subprocess.run([CHECKCONFIG, str(tmp_path / "frag"), str(tmp_path / ".config")],
                          capture_output=True, text=True, timeout=30)


DOTCONFIG = ("CONFIG_SMP=y\nCONFIG_KVM_GUEST=y\n# CONFIG_PCI is not set\n"
             'CONFIG_LOCALVERSION="-x"\n')


def test_checkconfig_passes_a_fragment_that_survived(tmp_path):
    res = checkconfig(tmp_path, '# a comment\nCONFIG_SMP=y\nCONFIG_LOCALVERSION="-x"\n'
                                "# CONFIG_MODULES is not set\n", DOTCONFIG)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


@pytest.mark.parametrize("fragment, says", [
    ("CONFIG_SMP=y\nCONFIG_PCI=y\n",
     "CONFIG_PCI=y did not survive the configuration (a dependency is missing): the kernel "
     "has '# CONFIG_PCI is not set'"),
    ('CONFIG_LOCALVERSION="-y"\n', "the kernel has 'CONFIG_LOCALVERSION=\"-x\"'"),
    ("CONFIG_NO_SUCH=y\n", "the kernel has no CONFIG_NO_SUCH (a dependency is missing, or no "
                           "such option)"),
    ("# CONFIG_KVM_GUEST is not set\n", "(something selects it): the kernel has "
                                        "'CONFIG_KVM_GUEST=y'"),
])
def test_checkconfig_names_the_dropped_option_in_one_line(tmp_path, fragment, says):
    res = checkconfig(tmp_path, fragment, DOTCONFIG)
    assert res.returncode == exit_code("LINUXKERNEL_OPTION_DROPPED")
    assert len(res.stderr.splitlines()) == 1 and says in res.stderr, res.stderr


def test_the_fragment_names_the_haltpoll_governor_and_driver():
    with open(os.path.join(KERNEL_DIR, "haltpoll-gov.config")) as f:
        lines = set(f.read().splitlines())
    assert {"CONFIG_CPU_IDLE_GOV_HALTPOLL=y", "CONFIG_HALTPOLL_CPUIDLE=y",
            "CONFIG_CPU_IDLE_GOV_MENU=y", "CONFIG_KVM_GUEST=y"} <= lines


def test_the_build_refuses_a_source_package_without_a_version(tmp_path):
    for f in os.listdir(KERNEL_DIR):
        shutil.copy(os.path.join(KERNEL_DIR, f), tmp_path / f)
    (tmp_path / "source-package").write_text("# no version\nlinux-source-6.1\n")
    res = subprocess.run([str(tmp_path / "build"), str(tmp_path / "bzImage")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == exit_code("LINUXKERNEL_NO_PACKAGE")
    assert res.stderr.splitlines() == ["linux-guest-kernel: tools/linuxguest/kernel/"
                                       "source-package names no package=version"]
    assert not os.path.exists(tmp_path / "bzImage")


def test_the_qemu_command_boots_the_chosen_linux_kernel():
    for name, (kernel, _) in qemu.LINUX_KERNEL_FILES.items():
        argv, _ = qemu.build_command(qemu.Config(accel="tcg", guest="linux", linux_kernel=name))
        assert argv[argv.index("-kernel") + 1] == kernel
    assert qemu.Config().linux_kernel == "debian"
    assert qemu.LINUX_KERNEL_FILES["debian"][0] == qemu.LINUX_KERNEL
    with pytest.raises(ValueError, match="the Linux kernel haltpoll-gov is for the Linux guest"):
        qemu.build_command(qemu.Config(accel="tcg", linux_kernel="haltpoll-gov"))
    with pytest.raises(ValueError, match="linux kernel must be one of debian|haltpoll-gov"):
        qemu.build_command(qemu.Config(accel="tcg", guest="linux", linux_kernel="mine"))


def test_qemu_run_names_the_make_target_of_a_kernel_not_built(tmp_path, monkeypatch):
    missing = str(tmp_path / "bzImage")
    monkeypatch.setitem(qemu.LINUX_KERNEL_FILES, "haltpoll-gov",
                        (missing, "make linux-guest-kernel"))
    cfg = qemu.Config(accel="tcg", guest="linux", linux_kernel="haltpoll-gov")
    assert qemu.missing_boot_file(cfg) == (f"{missing} does not exist: run "
                                           "`make linux-guest-kernel` first")
    res = subprocess.run([sys.executable, os.path.join(TOP, "tools", "qemu-run"), "--guest",
                          "linux", "--linux-kernel", "mine", "--print-cmd"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "--linux-kernel" in res.stderr


def test_a_bench_asking_for_a_kernel_not_built_is_refused_before_any_run(tmp_path,
                                                                         monkeypatch, capsys):
    monkeypatch.setitem(qemu.LINUX_KERNEL_FILES, "haltpoll-gov",
                        (str(tmp_path / "bzImage"), "make linux-guest-kernel"))
    (tmp_path / "m.txt").write_text("defaults: workload=idle duration=100ms machine=pc\n"
                                    "hp: guest=linux linux_kernel=haltpoll-gov\n")
    assert cli.main(["--matrix", str(tmp_path / "m.txt"), "--accel", "tcg", "--no-cost-table",
                     "--results-dir", str(tmp_path / "out")]) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run `make linux-guest-kernel` first" in err[0], err
    assert "m.txt:2: run 'hp'" in err[0]
    assert not os.path.exists(tmp_path / "out")


@pytest.fixture(scope="module")
def built_kernel():
    """The built kernel (skipped without it: `make test` never builds it) and the initramfs."""
    if not os.path.isfile(BUILT):
        pytest.skip(f"{os.path.relpath(BUILT, TOP)} is {NOT_BUILT} (`make linux-guest-kernel`: "
                    "minutes of both cores)")
    res = subprocess.run(["make", "-s", "--no-print-directory", "-C", TOP,
                          "build/linuxguest/initrd.img"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]


def tcg_boot(cmdline):
    """One TCG boot of the built kernel on machine pc (test_linux_guest.boot says why pc),
    acknowledging each synchronised marker as the probe does."""
    procs, acks = [], []

    def line(text):
        if text.startswith("@idlelab window ") and "sync=1" in text:
            qemu.acknowledge(procs[0])
            acks.append(text)

    cfg = qemu.Config(smp=2, machine="pc", accel="tcg", guest="linux",
                      linux_kernel="haltpoll-gov", cmdline=f"{cmdline} {SHORT}")
    res = qemu.run(cfg, timeout=BOOT_TIMEOUT_S, on_start=procs.append, on_line=line)
    assert res.outcome.name == "SUCCESS", res.output[-3000:]
    run = guestrun.parse_run(res.output)
    assert len(acks) == 2 and run.exit["name"] == "SUCCESS"
    assert guestrun.check_invariants(run) == []
    return run


def test_the_built_kernel_boots_under_tcg_with_the_haltpoll_governor_built_in(built_kernel):
    """Pingpong under TCG: the boot record names the built kernel, and Linux's haltpoll
    governor is in it: its parameters exist (Debian's kernel has none) and the window given
    on Linux's command line in nanoseconds reads back as idlelab's knob. Under TCG neither
    the governor nor cpuidle-haltpoll registers (both need KVM's paravirtual CPUID leaves:
    kvm=0), so the idle record says menu with no driver; under KVM it says haltpoll."""
    run = tcg_boot("workload=pingpong cpuidle_haltpoll.force=1 "
                   "haltpoll.guest_halt_poll_ns=300000")
    assert run.boot["guest"] == "linux" and run.boot["cpus"] == 2
    assert run.boot["kernel"].endswith("-idlelab-haltpoll-gov") and run.boot["kvm"] == 0
    assert run.config["haltpoll.guest_halt_poll_ns"] == "300us"
    assert run.config["haltpoll.guest_halt_poll_grow"] == "2"
    assert (run.idle["governor"], run.idle["driver"]) == ("menu", "none")
    assert run.idle["cpuidle_haltpoll.force"] == 1
    assert run.result["workload"] == "pingpong" and run.result["iters"] > 0
