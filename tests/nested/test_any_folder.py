"""The nested host from any folder: a tree under /tmp with a space in its path runs the
smoke job, and a bench given a matrix and a results folder under /tmp reads the one and
writes the other, as the same files this machine sees. About half a minute each."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from conftest import TOP
from idlelab.host import nested


@pytest.fixture(scope="module")
def image():
    ok, why = nested.image_state()
    if not ok:
        pytest.fail(f"make test builds the nested host first: {why}")


def test_the_paths_on_the_hosts_command_line_survive_spaces_and_commas(tmp_path):
    assert nested.encode("/srv/my tree,x%") == "/srv/my%20tree%2Cx%25"
    assert nested.encode("/srv/idlelab/build/nested/run/a-1_2.sh") == \
        "/srv/idlelab/build/nested/run/a-1_2.sh"
    assert nested.opt("/a,b") == "/a,,b"
    # tools/nested/init's own arg(), reading a command line of ours instead of /proc/cmdline
    with open(os.path.join(TOP, "tools", "nested", "init")) as f:
        arg = re.search(r"^arg\(\) \{\n.*?^\}\n", f.read(), re.S | re.M).group(0)
    path = "/srv/my tree,x%\\n"
    with open(tmp_path / "cmdline", "w") as f:
        f.write(f"console=ttyS0 idlelab.tree={nested.encode(path)} quiet\n")
    script = arg.replace("/proc/cmdline", str(tmp_path / "cmdline")) + "arg tree"
    out = subprocess.run([nested.BUSYBOX, "sh", "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert out == path


# build/ as `make test` leaves it in a fresh clone: not the nested host's runs and package
# cache, nor the Linux guest's own kernel tree (1.6 GB where `make linux-guest-kernel` ran:
# copying it took longer than the job it was copied for)
NOT_COPIED = (("nested", "run"), ("nested", "cache"), ("linuxguest", "kernel"))


def copy_tree(dest):
    """The tree's files (tracked, and new ones git does not ignore) and the built kernel and
    nested image, as a fresh clone that was built would have them (NOT_COPIED left out)."""
    files = subprocess.run(["git", "-C", TOP, "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True,
                           check=True).stdout.split(b"\0")
    for rel in (f.decode() for f in files if f):
        if os.path.isfile(os.path.join(TOP, rel)):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(os.path.join(TOP, rel), os.path.join(dest, rel))
    shutil.copytree(os.path.join(TOP, "build"), os.path.join(dest, "build"), symlinks=True,
                    ignore=lambda d, names: [n for n in names if os.path.join(d, n) in {
                        os.path.join(TOP, "build", *p) for p in NOT_COPIED}])


def test_a_tree_under_tmp_with_a_space_runs_the_smoke_job(image):
    top = tempfile.mkdtemp(prefix="idlelab tree ", dir="/tmp")
    try:
        copy_tree(top)
        code = ("import sys; from idlelab.host import nested; "
                "r = nested.run_job(['/bin/sh', 'tests/nested/smoke.sh'], timeout=300, "
                "retries=1); print('status', r.status, r.error); sys.exit(r.status)")
        res = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(top, "tools"),
                             capture_output=True, text=True, timeout=700)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert "smoke kvm=1 host=nested" in res.stdout
        assert "smoke halt_poll_ns old=200000 set=123000" in res.stdout
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_bench_reads_and_writes_under_tmp_from_another_folder(image, tmp_path):
    folder = tempfile.mkdtemp(prefix="idlelab bench ", dir="/tmp")
    try:
        with open(os.path.join(folder, "m.txt"), "w") as f:
            # a global kvm parameter: the nested host's, since it sets one
            f.write("a: workload=pingpong duration=200ms smp=2 halt_poll_ns=global:0\n")
        res = subprocess.run([sys.executable, os.path.join(TOP, "tools", "bench"), "--accel",
                              "nested", "--no-cost-table", "--matrix", "m.txt",
                              "--results-dir", "res"], cwd=folder, capture_output=True,
                             text=True, timeout=700)
        out = res.stdout + res.stderr
        assert res.returncode == 0, out[-4000:]
        assert "1 boot from m under nested" in out
        assert "broken or compromised" not in out
        with open(os.path.join(folder, "res", "latest", "runs.csv")) as f:
            rows = f.read().splitlines()
        assert len(rows) == 2 and ",ok," in rows[1], rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)
