"""idlelab's host harness, one import root (`idlelab`), in packages that follow a run:

  bench/     tools/bench: the command line, the invocation with its work plan, one boot
             with its window probe and raw record, the matrix format
  host/      what runs on or reads the host: QEMU with its exit codes and QMP, which host
             and the nested KVM host, the platform (KVM's parameters, the preload library,
             the cost table), /proc samplers, neighbours, stalls, tracefs
  derive/    pure derivations: what the guest printed (records, results, the cost table's
             values, whose fault a late wake-up was), a record's RunRow, KVM deltas, the
             accuracy rule
  report/    the results folder, runs.csv and the terminal's lines (output.py), one
             markdown table per matrix (report/layouts/: one layout per seed), the plots
  timeline/  tools/timeline: per-CPU timelines from the guest's trace and the host's
  wakepath/  the wake path's round trips and instruction counts (make wakepath-*)
  sim/       idlelab-sim's predictions beside a bench, and the governors in the simulator

usage.py (the tools' exit statuses and one-line errors) and timings.py (what a boot, the
cost table and the nested host's start took on each host) are shared by the tools.
tests/tools/test_packages.py keeps the structure: no import cycle, and no I/O in the pure
modules."""
import os

# The source tree's top: every path the harness reads or builds is under it.
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The guest kernels a run can boot: idlelab's own, or Linux (tools/linuxguest/) running the
# same workloads. The matrix format and QEMU's configuration both take these names.
GUESTS = ("idlelab", "linux")
# The Linux guest's kernels: Debian's as it ships (the default; its haltpoll driver runs under
# menu) or the one `make linux-guest-kernel` builds from Debian's source with the haltpoll
# governor. tools/qemu-run's --linux-kernel and the matrix's linux_kernel= take these names.
LINUX_KERNELS = ("debian", "haltpoll-gov")
