"""idlelab's host harness, one import root (`idlelab`), in packages that follow a run:

  bench/     tools/bench: the command line, the invocation, the work plan, one boot, its
             raw record, the window probe, the matrix format
  host/      what runs on or reads the host: QEMU and QMP, the nested KVM host, KVM's
             parameters, /proc samplers, the preload library, neighbours, stalls, tracefs
  derive/    pure derivations: the guest's records, a record's RunRow, KVM deltas, whose
             fault a late wake-up was, the accuracy rule, the cost table's values
  report/    runs.csv, one markdown table per matrix (report/layouts/: one layout per
             seed), the plots and the console summary
  timeline/  tools/timeline: per-CPU timelines from the guest's trace and the host's
  wakepath/  the wake path's round trips and instruction counts (make wakepath-*)
  sim/       idlelab-sim's predictions beside a bench, and the governors in the simulator

usage.py (the tools' exit statuses and one-line errors) and resultsfolder.py (a results
folder's life) are shared by the tools. tests/tools/test_packages.py keeps the structure:
no import cycle, and no I/O in the pure modules."""
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
