"""Each vCPU's TSC offset as KVM keeps it (guest TSC = host TSC + offset), read from debugfs:
<debugfs>/kvm/<QEMU pid>-<VM fd>/vcpu<N>/tsc-offset, N the vCPU id (the APIC ID on x86).
The folder exists only while the VM does, so it is read while the guest runs."""
import glob
import os


class NoOffset(Exception):
    """The offsets cannot be read; the message says why."""


def vm_folder(debugfs, qemu_pid):
    found = sorted(glob.glob(os.path.join(debugfs, "kvm", f"{qemu_pid}-*")))
    if not found:
        raise NoOffset(f"no {os.path.join(debugfs, 'kvm', f'{qemu_pid}-*')} (not a KVM VM?)")
    if len(found) > 1:
        raise NoOffset(f"QEMU {qemu_pid} has {len(found)} VMs in debugfs")
    return found[0]


def _signed64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def read(debugfs, qemu_pid, vcpu_ids):
    """{vcpu_id: offset in TSC cycles}. Raises NoOffset."""
    folder = vm_folder(debugfs, qemu_pid)
    out = {}
    for n in vcpu_ids:
        path = os.path.join(folder, f"vcpu{n}", "tsc-offset")
        try:
            with open(path, encoding="utf-8") as f:
                out[n] = _signed64(int(f.read().strip(), 0))
        except FileNotFoundError:
            raise NoOffset(f"no {path}") from None
        except (OSError, ValueError) as e:
            raise NoOffset(f"{path}: {e}") from None
    return out
