"""The guest's record spool read back (record_spool=1, kernel/spool.h): the guest's RAM is a
memfd this process shares with QEMU, and each `@idlelab spool at= bytes=` line the guest
prints is replaced by the lines it points at, read from that memory, followed by the pointer
line itself (what the console carried). Every reader of the console (the window probe, the
records, the raw result) then sees the records where the guest printed them.

Why: under the nested host each console character is a VM exit of ~0.1-0.2 ms, and a
window's records (~1.4 KB) cost more than its gap (docs/windows.md). The guest reuses its
buffer once the host acknowledged a later marker, so a batch must be read as soon as its
line arrives: qemu.run() expands each line before it hands on any later one."""
import os
import re

from idlelab.derive.records import PREFIX

POINTER = re.compile(re.escape(PREFIX) + r"spool at=0x([0-9a-f]+) bytes=(\d+)$")
_SIZE = re.compile(r"([1-9]\d*)([KMGT]?)")
_SCALE = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# Guest-physical addresses below this are RAM at the same offset of the backing file on every
# machine here (microvm, pc and q35 put RAM below 4 GiB at 0, less the PCI hole above 3 GiB).
LOW_RAM_END = 3 << 30


def ram_bytes(mem):
    """QEMU's -m size (256M, 1G; no suffix: MiB) in bytes."""
    m = _SIZE.fullmatch(mem)
    if not m:
        raise ValueError(f"memory size {mem!r}: expected a size like 256M or 1G")
    return int(m.group(1)) * _SCALE[m.group(2)]


def qemu_args(mem, path):
    """QEMU's options that put the guest's RAM in the file at `path`, shared."""
    return ["-object", f"memory-backend-file,id=idlelab-ram,size={mem},mem-path={path},share=on",
            "-machine", "memory-backend=idlelab-ram"]


class SharedRAM:
    """A memfd as large as the guest's RAM, inherited by QEMU under the same descriptor."""

    def __init__(self, mem):
        self.size = ram_bytes(mem)
        self.fd = os.memfd_create("idlelab-guest-ram", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.size)

    @property
    def path(self):
        return f"/proc/self/fd/{self.fd}"

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def expand(self, line):
        """The lines `line` stands for: a spool pointer's batch then the pointer; a pointer
        that cannot be read stays, with a line saying why (the records it held are missing,
        and whatever needs them fails on that)."""
        m = POINTER.search(line)
        if not m:
            return [line]
        at, n = int(m.group(1), 16), int(m.group(2))
        end = min(self.size, LOW_RAM_END)
        if at + n > end:
            return [line, f"idlelab-host: spool at=0x{at:x} bytes={n} lies beyond the guest's "
                          f"{end >> 20} MiB of RAM: its records are lost"]
        batch = os.pread(self.fd, n, at).decode("utf-8", "replace").split("\n")
        if batch[-1] == "":         # the batch's last line ends with its newline
            batch.pop()
        return [b.rstrip("\r") for b in batch] + [line]
