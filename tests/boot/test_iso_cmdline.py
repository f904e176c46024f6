"""tools/mkiso: the guest booted from the ISO sees the command line byte for byte, or mkiso
refuses the line in one line (exit 2). GRUB 2.06 reads grub.cfg as a script ($x expands, ';'
ends a command, blanks separate words) and its multiboot2 command joins its words with one
space each, puts a backslash before every ', " and \\, and its config reader drops CR.

mkiso first refuses, through build/host/knobdoc, every line the kernel would refuse, and no
knob value holds a GRUB metacharacter. To test the GRUB layer on its own, the tests that need
such bytes run a copy of mkiso whose knobdoc accepts everything: the guest then stops with
BAD_KNOB, after printing the command line it got ("booted via ..., cmdline "..."", printed
raw, before the knobs are parsed). The guest drops leading spaces (boot/bootinfo.c), so no
line here starts with one. ISO boots run under TCG (GRUB under this machine's KVM is slow)."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import TOP
from idlelab.host import qemu

TIMEOUT = 60
MKISO = os.path.join(TOP, "tools", "mkiso")
BOOTED = re.compile(r'idlelab: booted via (\S+), cmdline "(.*)"', re.S)


def mkiso(script, iso, cmdline):
    return subprocess.run([script, str(iso), cmdline], capture_output=True, text=True,
                          timeout=120)


def build(script, iso, cmdline):
    res = mkiso(script, iso, cmdline)
    assert res.returncode == 0, f"mkiso exit {res.returncode}:\n{res.stderr}"
    return str(iso)


def boot_iso(iso, expect):
    res = qemu.run(qemu.Config(smp=1, accel="tcg", machine="pc", iso=iso), timeout=TIMEOUT)
    assert not res.timed_out, f"QEMU timed out after {TIMEOUT}s:\n{res.output}"
    assert res.outcome.name == expect, \
        f"exit {res.outcome.name} (status {res.status}), wanted {expect}:\n{res.output}"
    return res


def seen_cmdline(res):
    """The command line the guest got, from its 'booted via' line."""
    seen = [m for m in map(BOOTED.fullmatch, res.output.split("\n")) if m]
    assert len(seen) == 1, f"expected one 'booted via' line:\n{res.output}"
    assert seen[0].group(1) == "multiboot2", res.output
    return seen[0].group(2)


@pytest.fixture
def lax_mkiso(tmp_path):
    """A copy of tools/mkiso next to the real kernel and a knobdoc that accepts any line."""
    top = tmp_path / "top"
    os.makedirs(top / "tools")
    os.makedirs(top / "build" / "host")
    shutil.copy2(MKISO, top / "tools" / "mkiso")
    os.symlink(os.path.join(TOP, "build", "idlelab.elf"), top / "build" / "idlelab.elf")
    knobdoc = top / "build" / "host" / "knobdoc"
    knobdoc.write_text("#!/bin/sh\nexit 0\n")
    knobdoc.chmod(0o755)
    return str(top / "tools" / "mkiso")


def test_blanks_reach_the_guest_unchanged(tmp_path):
    """A tab, a run of spaces and trailing blanks: the kernel accepts the line (real mkiso,
    real knobdoc), and GRUB must not re-join its words with single spaces."""
    cmdline = "verbose=1\thz=100   boot_timeout=3s \t  "
    res = boot_iso(build(MKISO, tmp_path / "blanks.iso", cmdline), "SUCCESS")
    assert seen_cmdline(res) == cmdline
    cfg = {k: v for _, f in res.records("config") for k, v in f.items()}
    assert (cfg["verbose"], cfg["hz"], cfg["boot_timeout"]) == ("1", "100", "3s"), res.output


@pytest.mark.parametrize("cmdline", [
    # GRUB 2.06 given these unquoted boots the kernel with "hz= a=b"
    "hz=$x250 a=${y}b;c  d=`f`\t #g ",
    # and these are a grub.cfg syntax error: GRUB never boots the kernel
    "hz=$(x)250 a||b c&&d {e} <f> *?[g] ~h=!i^ j=$ n=\xe9  ",
], ids=["expanded", "syntax"])
def test_grub_metacharacters_reach_the_guest_unchanged(tmp_path, lax_mkiso, cmdline):
    """$x250, ${...}, $(...), `...`, ;, #, ||, &&, {}, <>, globs, a lone $, a tab, a byte
    >= 0x80 and runs of spaces: GRUB must expand, split and drop nothing."""
    res = boot_iso(build(lax_mkiso, tmp_path / "meta.iso", cmdline), "BAD_KNOB")
    assert seen_cmdline(res) == cmdline
    err = [f for _, f in res.records("error")]
    assert len(err) == 1 and f"'{cmdline.split()[0]}'" in err[0]["msg"], res.output


@pytest.mark.parametrize("char, name", [("'", "single quote"), ('"', "double quote"),
                                        ("\\", "backslash"), ("\r", "carriage return")])
def test_what_grub_cannot_pass_is_refused_in_one_line(tmp_path, lax_mkiso, char, name):
    """GRUB's multiboot2 command puts a backslash before every ', " and \\ (so "a'b" boots as
    "a\\'b") and its config reader drops CR: no quoting carries them, mkiso refuses."""
    iso = tmp_path / "bad.iso"
    res = mkiso(lax_mkiso, iso, f"verbose=1 x=a{char}b;$c")
    assert res.returncode == 2, f"exit {res.returncode}, wanted 2:\n{res.stderr}"
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mkiso: command line "), res.stderr
    assert name in lines[0] and "GRUB cannot pass" in lines[0], res.stderr
    assert "\r" not in res.stderr
    assert sorted(os.listdir(tmp_path)) == ["top"]          # no ISO, no stage left behind
