"""`tools/qemu-run`: one boot of idlelab under QEMU, on the host hosts.choose() picks (the
nested KVM host runs the same command inside itself)."""
import argparse
import os
import shlex
import signal
import sys

from idlelab import usage
from idlelab.host import hosts, nested, spool
from idlelab.host.qemu import (GUESTS, LINUX_KERNELS, MACHINES, TOP, Config, build_command,
                               linux_tcg_note, missing_boot_file, run)


def _mem(text):
    """--mem as QEMU's -m takes it: a size with an optional K/M/G/T suffix."""
    try:
        spool.ram_bytes(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a size like 256M or 1G") from None
    return text


def _file(text):
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text!r}: no such file")
    return text


def _socket_path(text):
    folder = os.path.dirname(os.path.abspath(text))
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text!r}: {folder} is a file, not a folder")
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text!r}: its folder {folder} does not exist")
    return text


def main(argv=None):
    """`tools/qemu-run`. Exit status: 0 the guest exited SUCCESS; 2 bad arguments (one line
    naming the input); 124 timed out; else QEMU's status (the guest's exit code << 1 | 1)."""
    ap = usage.Parser(prog="qemu-run", description="Boot idlelab (or the Linux guest) under QEMU.")
    ap.add_argument("--guest", default="idlelab", choices=GUESTS,
                    help="idlelab's kernel, or Linux running the same workloads "
                         "(tools/linuxguest/; `make linux-guest` builds it)")
    ap.add_argument("--linux-kernel", default=LINUX_KERNELS[0], choices=LINUX_KERNELS,
                    help="the Linux guest's kernel: Debian's as it ships (menu governor), or "
                         "Debian's source with the haltpoll governor (`make linux-guest-kernel`)")
    ap.add_argument("--smp", type=usage.int_in(1, 64), default=1)
    ap.add_argument("--machine", default="microvm", choices=MACHINES)
    ap.add_argument("--accel", default="auto", choices=hosts.ACCELS)
    ap.add_argument("--cmdline", default="")
    ap.add_argument("--mem", type=_mem, default="256M")
    ap.add_argument("--iso", type=_file, help="boot this GRUB ISO (multiboot2) instead of -kernel")
    ap.add_argument("--qmp", type=_socket_path, help="create a QMP socket at this path")
    ap.add_argument("--timeout", type=usage.positive_seconds, default=600)
    ap.add_argument("--gdb", action="store_true", help="start halted, gdb stub on :1234")
    ap.add_argument("--print-cmd", action="store_true", help="print the QEMU command and exit")
    args = ap.parse_args(argv)
    cfg = Config(smp=args.smp, machine=args.machine, accel="tcg", cmdline=args.cmdline,
                 mem=args.mem, iso=args.iso, qmp=args.qmp, gdb=args.gdb, guest=args.guest,
                 linux_kernel=args.linux_kernel)
    try:
        build_command(cfg)        # bad input is refused before any host is chosen or built
        accel, why = hosts.choose(args.accel)
    except ValueError as e:
        ap.error(str(e))
    if not hosts.inside() and not args.print_cmd:
        print(f"qemu-run: {hosts.host_line(accel, why)}", file=sys.stderr, flush=True)
    cfg.accel = "kvm" if accel == "nested" else accel
    note = linux_tcg_note(cfg, cfg.accel)
    if note:
        print(f"qemu-run: note: {note}", file=sys.stderr, flush=True)
    cmd, _ = build_command(cfg)
    if args.print_cmd:
        print(("(inside the nested host) " if accel == "nested" else "") + shlex.join(cmd))
        return 0
    if missing_boot_file(cfg):
        ap.error(missing_boot_file(cfg))
    if accel == "nested":
        if args.gdb or args.qmp:
            ap.error("--gdb and --qmp need QEMU on this machine: not with the nested host "
                     "(use --accel tcg, or a machine with /dev/kvm)")
        return hosts.delegate("tools/qemu-run", sys.argv[1:] if argv is None else argv,
                              "qemu-run", timeout=args.timeout + nested.BOOT_S)
    if args.gdb:
        print("qemu-run: QEMU is halted with a gdb stub; attach with:\n"
              f"  gdb {os.path.join(TOP, 'build', 'idlelab.elf')} -ex 'target remote :1234'",
              file=sys.stderr)
        args.timeout = 10 ** 9
    # SIGTERM (e.g. from `timeout`) unwinds through run()'s cleanup like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    res = run(cfg, timeout=args.timeout, echo=True)
    out = res.outcome
    print(f"qemu-run: guest exit {out.name} ({out.description}); QEMU status {res.status}, "
          f"{res.seconds:.2f}s under {res.accel}", file=sys.stderr)
    if out.ok:
        return 0
    return 124 if res.timed_out else (res.status if res.status > 0 else 1)
