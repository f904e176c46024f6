"""Which host a tool measures on, chosen once: `kvm` (this machine's /dev/kvm), `nested` (the
nested KVM host, host/nested.py) or `tcg` (QEMU's emulator, no KVM); and a tool placed on it.

Every tool that takes --accel goes through choose() (place() for the whole first step): `auto`
is KVM where /dev/kvm is usable, else the nested host where it can be built and booted, else
TCG, and the tool says in one line which and why (host_line()). A tool given `nested` (by the
user or by auto) runs itself inside the nested host with `--accel kvm` (delegate(), and
delegate_bench() for tools/bench, resumed across the host's faults): there the local KVM path
is the KVM path, so one code path measures every KVM host. describe() is what every result
records about the host it came from."""
import os
import platform
import re
import sys

from idlelab import TOP
from idlelab.host import nested, qemu
from idlelab.host.kvmparams import HostParams


ACCELS = ("auto", "kvm", "nested", "tcg")
# Set by the nested host's /init for its job: there `nested` is the local KVM.
HOST_ENV = qemu.HOST_ENV


def choose(requested, needs_params=None, build=True):
    """(accel, why): accel is kvm, nested or tcg; why is one line for the user, or None when
    the choice is simply what was asked. Inside the nested host, nested is its local KVM.

    needs_params says what of the job must set kvm module parameters this machine's KVM has
    read-only (a line, or None): auto then takes the nested host, whose parameters are its
    own, so that those runs are made rather than reported not run. `kvm` asked for keeps the
    local KVM whatever the job needs. build=False: a nested host whose image is not built
    yet counts as available (for a plan: nothing is built or booted)."""
    if requested not in ACCELS:
        raise ValueError(f"accel must be one of {'|'.join(ACCELS)}, not {requested!r}")
    if inside():
        if requested in ("auto", "nested"):
            return "kvm", None
        return requested, None
    if requested != "auto":
        return requested, None
    if qemu.kvm_usable():
        if not needs_params:
            return "kvm", "/dev/kvm is usable" + ("" if needs_params is None else
                                                  " and the job sets no kvm parameter")
        ok, why = nested.available(build)
        if ok:
            return "nested", (f"{needs_params}; --accel kvm keeps this machine's KVM and "
                              "reports those runs not run")
        return "kvm", f"{needs_params}, and there is no nested host ({why}): those runs are " \
                      "reported not run"
    ok, why = nested.available(build)
    if ok:
        return "nested", "no usable /dev/kvm here: running on the nested KVM host (Debian's " \
                         "kernel with kvm_amd under QEMU's emulated SVM; slow exits, real KVM)"
    return "tcg", f"no usable /dev/kvm and no nested host ({why}): running under TCG " \
                  "(no KVM counters)"


def host_line(accel, why=None):
    """The one line a tool says before anything runs: the host, why it was chosen, its
    kernel, and its kvm parameters with whether they are writable."""
    reason = f" (auto: {why})" if why else ""
    if accel == "tcg":
        return (f"host: tcg, QEMU's emulator on this machine (Linux {platform.release()}): no "
                f"KVM, so no host polling and no KVM counts{reason}")
    if accel == "nested":
        try:
            m = nested.manifest()
            kernel = f"Debian's {m['package']} {m['version']}"
        except (OSError, ValueError, KeyError):
            kernel = "Debian's kernel"
        return (f"host: nested, {kernel} with kvm_amd under QEMU's emulated SVM on this "
                f"machine; its kvm parameters are its own and writable, set per run and "
                f"recorded{reason}")
    kind = "nested" if inside() else "kvm"
    where = "the nested host's own KVM" if kind == "nested" else "this machine's /dev/kvm"
    return (f"host: {kind}, {where}, Linux {platform.release()}; "
            f"{HostParams().describe()}{reason}")


def describe(accel):
    """The host a result came from, for its record: kind, and for KVM hosts the kernel."""
    if accel == "tcg":
        return {"host": "tcg"}
    kind = "nested" if inside() else "kvm"
    desc = {"host": kind, "host_kernel": platform.release()}
    attempt = os.environ.get(nested.ATTEMPT_ENV)
    if kind == "nested" and attempt:
        desc["host_attempt"] = int(attempt)
    return desc


def with_accel(argv, accel):
    """argv with its --accel value (either spelling) replaced by accel, or it appended."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--accel":
            skip = True
            continue
        if a.startswith("--accel="):
            continue
        out.append(a)
    return out + ["--accel", accel]


def delegate(tool, argv, prog, timeout=None):
    """Runs `tool argv` (tool relative to the tree's top) inside a fresh nested host, under
    its KVM, and returns the exit status to exit with. A host that cannot be had, or that
    wedged twice, is one line naming why and its own exit code (tools/nested/exit-codes)."""
    try:
        res = nested.run_job([os.path.join(TOP, tool)] + with_accel(argv, "kvm"),
                             timeout=timeout, cwd=os.getcwd())
    except nested.NestedError as e:
        print(f"{prog}: nested host: {e}", file=sys.stderr, flush=True)
        return e.code
    if res.attempts > 1:
        print(f"{prog}: nested host: the result above came from attempt {res.attempts} (the "
              f"first host wedged; its dump: {', '.join(res.wedges)})", file=sys.stderr)
    if res.error:
        print(f"{prog}: nested host: {res.error}", file=sys.stderr, flush=True)
    return res.status


def place(prog, tool, requested, argv, needs_params=None):
    """The one step every --accel tool takes first: (accel, None) to run here under kvm or
    tcg, or (nested, exit status) once the tool has run inside the nested host. Says the
    host in one line (host_line) before anything runs; inside the nested host the tool
    outside has said it already."""
    accel, why = choose(requested, needs_params)
    if not inside():
        print(f"{prog}: {host_line(accel, why)}", file=sys.stderr, flush=True)
    if accel != "nested":
        return accel, None
    argv = sys.argv[1:] if argv is None else list(argv)
    if tool == "tools/bench":
        return accel, delegate_bench(argv, prog)
    return accel, delegate(tool, argv, prog)


def inside():
    """True in a tool that the nested host's /init started (the job)."""
    return os.environ.get(HOST_ENV) == "nested"


RESULTS_AT = re.compile(r"results in (.+)$")
MAX_WEDGES = 10


def delegate_bench(argv, prog="bench", folders=None):
    """tools/bench on the nested host, kept going across wedges run by run: a host that wedges
    is dumped and replaced, and the bench resumes its own results folder on the new one
    (--resume): the run it was in is made again and marked `retried`; a run whose host wedges
    a second time is recorded as failed with that reason, and the rest of the matrix goes on.
    Nothing measured is lost: every finished run's raw record is in the folder already.
    `folders`, a list, gets the results folder once the bench has said it."""
    folder, extra, made_at_wedge, wedges = None, [], None, 0

    def on_line(line):
        nonlocal folder
        m = RESULTS_AT.search(line)
        if m:
            folder = os.path.join(TOP, m.group(1))
            if folders is not None and folder not in folders:
                folders.append(folder)
    while True:
        try:
            res = nested.run_job([os.path.join(TOP, "tools", "bench")]
                                 + with_accel(argv + extra, "kvm"), on_line=on_line, retries=0,
                                 cwd=os.getcwd())
        except nested.NestedError as e:
            print(f"{prog}: nested host: {e}", file=sys.stderr, flush=True)
            return e.code
        if not res.wedged:
            if res.error:
                print(f"{prog}: nested host: {res.error}", file=sys.stderr, flush=True)
            return res.status
        wedges += 1
        if folder is None and wedges == 1:
            # nothing was measured yet (no folder): the bench starts again, once
            print(f"{prog}: nested host wedged before the bench made its folder; starting it "
                  "again on a new host", file=sys.stderr, flush=True)
            continue
        if folder is None or wedges > MAX_WEDGES:
            when = "before the bench made its folder" if folder is None else f"{wedges} times"
            print(f"{prog}: nested host: failed {when}; stopping (dump: {res.wedges})",
                  file=sys.stderr)
            return nested.CODES["NESTED_WEDGED"]
        raw = os.path.join(folder, "raw")
        made = len([n for n in os.listdir(raw) if n.endswith(".json")]) if os.path.isdir(raw) \
            else 0
        if made == made_at_wedge:
            note = "failed: the nested host wedged twice in this run"
            extra = ["--resume", folder, "--resume-note", note, "--resume-fail"]
        else:
            note = "retried: the nested host wedged during the first try of this run"
            extra = ["--resume", folder, "--resume-note", note]
        made_at_wedge = made
        print(f"{prog}: nested host wedged in run {made + 1}; {note.split(':')[0]} on a new "
              "host", file=sys.stderr, flush=True)
