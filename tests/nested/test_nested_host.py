"""The nested KVM host itself (tools/idlelab/host/nested.py, tools/nested/): its image, one boot
that runs idlelab under its KVM, and a wedge caught, dumped and retried. Runs on any
machine (the host is emulated); about a minute."""
import json
import os
import subprocess

import pytest

from conftest import TOP
from idlelab.host import hosts, nested, qemu
from idlelab.derive.records import parse_records

MKIMAGE = os.path.join(TOP, "tools", "nested", "mkimage")


def newest_run():
    """The folder of the host booted last (build/nested/run/<time>-<pid>-<attempt>)."""
    runs = [os.path.join(nested.RUNS, n) for n in os.listdir(nested.RUNS)]
    return max((r for r in runs if os.path.isdir(r)), key=os.path.getmtime)


@pytest.fixture(scope="module")
def image():
    ok, why = nested.image_state()
    if not ok:
        pytest.fail(f"make test builds the nested host first: {why}")
    return nested.manifest()


def test_the_image_names_its_kernel_and_modules(image):
    with open(os.path.join(TOP, "tools", "nested", "kernel-package")) as f:
        assert image["package"] == f.read().split()[0]
    assert "kvm-amd.ko" in image["modules"] and "9p.ko" in image["modules"]
    assert image["modules"].index("kvm.ko") < image["modules"].index("kvm-amd.ko")


def test_a_changed_input_makes_the_image_stale(image, tmp_path, monkeypatch):
    changed = tmp_path / "init"
    changed.write_text(open(os.path.join(TOP, "tools", "nested", "init")).read() + "# changed\n")
    monkeypatch.setattr(nested, "INPUTS", [changed if os.path.basename(p) == "init" else p
                                           for p in nested.INPUTS])
    ok, why = nested.image_state()
    assert not ok and "stale" in why


def test_a_package_debian_lacks_is_one_line_and_its_code(tmp_path):
    tools = tmp_path / "nested"
    subprocess.run(["cp", "-r", os.path.dirname(MKIMAGE), str(tools)], check=True)
    (tools / "kernel-package").write_text("linux-image-0.0.0-0-nonesuch\n")
    p = subprocess.run([str(tools / "mkimage"), str(tmp_path / "out" / "image")],
                       capture_output=True, text=True)
    assert p.returncode == nested.CODES["NESTED_NO_PACKAGE"]
    assert p.stderr.count("\n") == 1 and "linux-image-0.0.0-0-nonesuch" in p.stderr
    assert not (tmp_path / "out" / "image").exists()


def test_the_image_builds_in_a_folder_with_a_space(image, tmp_path):
    """modprobe names the modules by their absolute paths: a tree whose path holds a space
    once got `has no kvm-amd module` for a path split at its space. The package is the one
    make test downloaded (NESTED_CACHE), so this unpacks and packs only (~4 s)."""
    out = tmp_path / "a tree" / "image"
    env = dict(os.environ, NESTED_CACHE=os.path.join(os.path.dirname(nested.IMAGE), "cache"))
    p = subprocess.run([MKIMAGE, str(out)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    with open(out / "manifest.json") as f:
        assert json.load(f)["modules"] == image["modules"]


def test_idlelab_runs_under_the_nested_kvm_with_writable_parameters(image):
    lines = []
    res = nested.run_job(["/bin/sh", "tests/nested/smoke.sh"], echo=False,
                         on_line=lines.append, timeout=300, retries=0)
    out = "\n".join(lines)
    assert res.status == 0 and res.error is None, out
    assert "smoke kvm=1 host=nested attempt=1" in out
    assert "smoke halt_poll_ns old=200000 set=123000" in out
    assert "smoke keys-held=1" in out
    recs = parse_records(out + "\n")
    boot = next(f for t, f in recs if t == "boot")
    assert (boot["kvm"], boot["pollctl"]) == ("1", "1")
    cpus = [f for t, f in recs if t == "cpu"]
    assert len(cpus) == 2 and all(int(c["hlt"]) > 0 for c in cpus), out
    # this machine's wait of the emulated host's two vCPU threads, measured over the job
    w = res.outer_wait
    assert w and sorted(w["total_ms"]) == [0, 1], w
    assert 0 <= w["worst_1s_ms"] <= 1000 * len(w["total_ms"]), w
    # the budget: /dev/kvm up within 10 s of the emulated host's start (its own uptime)
    print(f"nested host: /dev/kvm at {res.kvm_ready_s:.1f} s, job start at {res.boot_s:.1f} s")


def wedge_on(lines):
    """on_line for a job: a host that says `wedge me` has its CPUs stopped through its
    monitor, as a wedge stops them."""
    def on_line(line):
        lines.append(line)
        if line == "wedge me":
            nested._monitor(os.path.join(newest_run(), "monitor.sock"), "stop")
    return on_line


# Attempt by attempt (IDLELAB_NESTED_ATTEMPT): a wedge (the CPUs stopped), then a host CPU
# whose timer stopped, told by the host kernel's RCU stall report (written into its own log,
# /dev/kmsg at error level, so its console prints it as the kernel would; with the other CPU
# beating, the heartbeat cannot tell), then the job.
FAULT_JOB = ('case "$IDLELAB_NESTED_ATTEMPT" in '
             '1) echo wedge me; sleep 600;; '
             '2) echo "<3>rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:" > /dev/kmsg; '
             'sleep 600;; '
             '*) echo "attempt $IDLELAB_NESTED_ATTEMPT";; esac')


def test_each_host_fault_is_dumped_and_the_job_retried(image, monkeypatch):
    """A wedged host, then one whose kernel reports an RCU stall: each is seen within
    seconds, its registers dumped with the kernel functions they are in, and the job runs
    again on a new host, which says which attempt it is. (Two faults in one job: each host
    boot is ~20 s of emulation, and make test has a budget.)"""
    monkeypatch.setattr(nested, "WEDGE_S", 5)
    lines = []
    # one retry to spare: an emulated host on a loaded machine can stall for real as it
    # boots (2026-12-03: an RCU stall 25 s into the third host, before its job printed)
    res = nested.run_job(["/bin/sh", "-c", FAULT_JOB], echo=False, on_line=wedge_on(lines),
                        timeout=300, retries=3)
    assert res.status == 0 and res.attempts in (3, 4), lines
    assert len(res.wedges) == res.attempts - 1 and lines[-1] == f"attempt {res.attempts}"
    for run in res.wedges:
        with open(os.path.join(run, "registers.txt")) as f:
            dump = f.read()
        assert "CPU 0: RIP" in dump and "CPU 1: RIP" in dump, (run, dump[:2000])
    with open(os.path.join(res.wedges[0], "registers.txt")) as f:
        dump = f.read()
    # an idle host stops in the kernel: its RIP is named from System.map
    named = [l for l in dump.split("\n\n")[0].splitlines() if "not in the kernel" not in l]
    assert named and all("+0x" in l for l in named), dump[:2000]


def test_a_host_that_resets_itself_then_wedges_is_a_failure_with_its_code(image, monkeypatch):
    """The host's kernel rebooting mid-job (as a triple fault of it would: QEMU pauses) is
    dumped like a wedge; failing on the retry too ends the job with NESTED_WEDGED."""
    monkeypatch.setattr(nested, "WEDGE_S", 5)
    job = ('case "$IDLELAB_NESTED_ATTEMPT" in 1) echo b > /proc/sysrq-trigger; sleep 600;; '
           '*) echo wedge me; sleep 600;; esac')
    lines = []
    res = nested.run_job(["/bin/sh", "-c", job], echo=False, on_line=wedge_on(lines),
                        timeout=300, retries=1)
    assert res.status == nested.CODES["NESTED_WEDGED"] and res.attempts == 2, lines
    assert "failed 2 times" in res.error and len(res.wedges) == 2
    with open(os.path.join(res.wedges[0], "registers.txt")) as f:
        assert "CPU 0: RIP" in f.read()


def test_a_cpu_without_svm_is_one_line_and_its_code(image):
    res = nested.run_job(["true"], echo=False, timeout=120, retries=0, cpu="Nehalem")
    assert res.status == nested.CODES["NESTED_NO_SVM"] and "SVM" in res.error


def test_auto_says_which_host_and_why(monkeypatch):
    monkeypatch.setenv(qemu.KVM_ENV, "off")
    accel, why = hosts.choose("auto")
    assert accel == "nested" and "nested KVM host" in why
    monkeypatch.setattr(nested, "available", lambda build=True: (False, "no image"))
    accel, why = hosts.choose("auto")
    assert accel == "tcg" and "no image" in why


def test_inside_the_nested_host_nested_is_the_local_kvm(monkeypatch):
    monkeypatch.setenv(hosts.HOST_ENV, "nested")
    assert hosts.choose("nested") == ("kvm", None)
    assert hosts.choose("auto") == ("kvm", None)
    assert qemu.resolve_accel("nested") == "kvm"
    assert hosts.describe("kvm")["host"] == "nested"


def test_with_accel_replaces_either_spelling():
    assert hosts.with_accel(["--quick", "--accel", "nested", "-x"], "kvm") == \
        ["--quick", "-x", "--accel", "kvm"]
    assert hosts.with_accel(["--accel=auto"], "kvm") == ["--accel", "kvm"]
    assert json.dumps(hosts.with_accel([], "kvm")) == '["--accel", "kvm"]'


def test_a_host_fault_before_the_benchs_folder_starts_it_again_once(tmp_path, monkeypatch):
    """Nothing is measured before the bench names its folder: a fault there starts the bench
    again on a new host; a second one there stops it (NESTED_WEDGED)."""
    monkeypatch.setattr(hosts, "TOP", str(tmp_path))
    calls = []

    def fault_then(ok):
        def fake_run_job(argv, on_line=None, retries=1, **kw):
            calls.append(argv)
            if len(calls) == 1 or not ok:
                return nested.JobResult(nested.CODES["NESTED_WEDGED"], 1, [str(tmp_path)],
                                        wedged=True, error="wedged")
            return nested.JobResult(0, 1, [])
        return fake_run_job

    monkeypatch.setattr(nested, "run_job", fault_then(True))
    assert hosts.delegate_bench(["--quick", "--accel", "nested"]) == 0
    assert len(calls) == 2 and calls[1] == calls[0]            # the same bench, from scratch
    calls.clear()
    monkeypatch.setattr(nested, "run_job", fault_then(False))
    assert hosts.delegate_bench(["--quick"]) == nested.CODES["NESTED_WEDGED"]
    assert len(calls) == 2


def test_a_bench_goes_on_run_by_run_across_host_faults(tmp_path, monkeypatch):
    """hosts.delegate_bench with the host faking its faults: the first fault resumes the
    folder and retries the run it cut; a second fault in the same run records it as failed
    and goes on; a clean end returns the bench's status."""
    folder = tmp_path / "results" / "20261201-000000"
    (folder / "raw").mkdir(parents=True)
    monkeypatch.setattr(hosts, "TOP", str(tmp_path))
    calls = []

    def fake_run_job(argv, on_line=None, retries=1, **kw):
        calls.append(argv)
        n = len(calls)
        if n == 1:
            on_line("bench: 3 boots from m under kvm; results in results/20261201-000000")
            (folder / "raw" / "001-m-a.json").write_text("{}")
        if n <= 3:              # a fault in run 2, twice, then all goes well
            return nested.JobResult(nested.CODES["NESTED_WEDGED"], 1, [str(tmp_path)],
                                    wedged=True, error="failed")
        return nested.JobResult(0, 1, [])

    monkeypatch.setattr(nested, "run_job", fake_run_job)
    assert hosts.delegate_bench(["--quick", "--accel", "nested"]) == 0
    assert calls[0] == [str(tmp_path / "tools" / "bench"), "--quick", "--accel", "kvm"]
    assert calls[1][calls[1].index("--resume") + 1] == str(folder)
    assert "retried" in calls[1][calls[1].index("--resume-note") + 1]
    assert "--resume-fail" not in calls[1]
    assert "--resume-fail" in calls[2] and "twice" in calls[2][calls[2].index("--resume-note") + 1]
    assert calls[2][-2:] == ["--accel", "kvm"] and len(calls) == 4
