"""idlelab's host harness, one import root (`idlelab`), in packages that follow a run:

  bench/     tools/bench: the command line, the invocation step by step, its work plan and
             run loop, one boot with its window probe and raw record, the matrix format
             and its values
  costtable/ the platform's cost table: its figures and the values written in its terms,
             the boots that measure it, its traced boot, its markdown
  host/      what runs on or reads the host: QEMU with its exit codes, QMP, which host and
             the nested KVM host, KVM's parameters, the per-VM window's preload library,
             the machine's load, the vCPU threads and their waits, neighbours, stalls, tracefs
  derive/    pure derivations: the guest's records, one run's results, whose fault a late
             wake-up was, a record's RunRow, KVM deltas, the accuracy rule
  report/    the results folder with runs.csv and the tables written into it, the terminal's
             lines and tables, one markdown table per matrix (report/layouts/: one layout
             per seed), the plots
  timeline/  tools/timeline: per-CPU timelines from the guest's trace and the host's
  wakepath/  the wake path's round trips and instruction counts (make wakepath-*)
  sim/       idlelab-sim's predictions beside a bench, and the governors in the simulator

Shared by the tools: usage.py (their exit statuses and one-line errors), timings.py (what a
boot, the cost table and the nested host's start took on each host), stopsignals.py (what
SIGINT, SIGTERM and SIGHUP do: one mechanism) and processes.py (whether the process a file
names still runs). tests/tools/test_packages.py keeps the structure: no import cycle, and no
I/O in the pure modules."""
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
