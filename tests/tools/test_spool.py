"""The host's side of the record spool (tools/idlelab/host/spool.py, qemu.run): a pointer
line is replaced by the lines it names in the shared guest RAM, then itself; a pointer the
RAM cannot hold is kept and said to be unreadable; QEMU gets the RAM as a shared file and
the guest record_spool=1, only for idlelab."""
import os

import pytest

from idlelab.host import qemu, spool


@pytest.fixture
def ram():
    r = spool.SharedRAM("4M")
    yield r
    r.close()


def test_a_pointer_becomes_its_lines_then_itself(ram):
    batch = b"@idlelab cpu id=0 hlt=3\n@idlelab result workload=idle ok=1\n"
    os.pwrite(ram.fd, batch, 0x123000)
    pointer = f"@idlelab spool at=0x123000 bytes={len(batch)}"
    assert ram.expand(pointer) == ["@idlelab cpu id=0 hlt=3",
                                   "@idlelab result workload=idle ok=1", pointer]


def test_other_lines_pass_unchanged(ram):
    for line in ("@idlelab window state=close what=idle t_ns=1 sync=1", "plain text", ""):
        assert ram.expand(line) == [line]


def test_a_pointer_beyond_the_ram_is_kept_and_marked(ram):
    pointer = "@idlelab spool at=0x3ff000 bytes=8192"
    out = ram.expand(pointer)
    assert out[0] == pointer
    assert out[1].startswith("idlelab-host: spool at=0x3ff000 bytes=8192 lies beyond")
    assert "records are lost" in out[1] and len(out) == 2


@pytest.mark.parametrize("text,size", [("256M", 256 << 20), ("1G", 1 << 30), ("512", 512 << 20),
                                       ("64K", 64 << 10)])
def test_ram_sizes_read_as_qemu_reads_them(text, size):
    assert spool.ram_bytes(text) == size


@pytest.mark.parametrize("text", ["", "0M", "1.5G", "256MB", "-1"])
def test_a_bad_ram_size_is_one_error(text):
    with pytest.raises(ValueError, match="expected a size like 256M"):
        spool.ram_bytes(text)


def test_the_command_shares_the_ram_and_tells_the_guest():
    argv, _ = qemu.build_command(qemu.Config(accel="tcg", cmdline="workload=idle", spool=True),
                                 "/proc/self/fd/7")
    assert "memory-backend-file,id=idlelab-ram,size=256M,mem-path=/proc/self/fd/7,share=on" \
        in argv
    assert argv[argv.index("-append") + 1] == "-- workload=idle record_spool=1"
    plain, _ = qemu.build_command(qemu.Config(accel="tcg", cmdline="workload=idle"))
    assert "-object" not in plain and "record_spool" not in " ".join(plain)


def test_the_linux_guest_has_no_spool():
    with pytest.raises(ValueError, match="record spool is idlelab's"):
        qemu.build_command(qemu.Config(accel="tcg", guest="linux", spool=True))
