"""Nothing measured is lost on the way out, with real signals at three points of a matrix:
before the first run (the folder exists, the bench measures the cost table), in a run (a
QEMU is up) and between runs (the bench cools down before run 2).
tools/bench runs a short TCG matrix as a subprocess. SIGINT, SIGTERM (and SIGHUP) must end it
with 128 + the signal, meta.json "status": "interrupted" with the signal and where it landed,
runs.csv and the tables written from the runs made, each table saying how many of how many.
SIGKILL must leave meta.json "running", every finished run in raw/ and runs.csv and `latest`
pointing at the folder; --report then marks it incomplete and its tables say so. No point
leaves a temporary file outside the folder, nor tmp/ inside a finished one."""
import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import TOP
from idlelab.report import resultsdir

BENCH = os.path.join(TOP, "tools", "bench")
# 1 s windows under TCG: long enough to be signalled in the middle of the second boot.
SLOW = "defaults: accel=tcg smp=1 duration=1s guest.warmup=10ms\na: workload=idle repeat=6\n"
FAST = "defaults: accel=tcg smp=1 duration=50ms guest.warmup=10ms\nb: workload=idle\n"
PLANNED = 6


@pytest.fixture
def place(tmp_path):
    (tmp_path / "slow.txt").write_text(SLOW)
    (tmp_path / "fast.txt").write_text(FAST)
    (tmp_path / "tmp").mkdir()
    yield tmp_path


def start(place, matrix="slow.txt", extra=("--no-cost-table",)):
    env = dict(os.environ, TMPDIR=str(place / "tmp"))
    return subprocess.Popen([sys.executable, BENCH, "--matrix", str(place / matrix), "--accel",
                             "tcg", "--results-dir", str(place / "res"), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def folders(place):
    return [n for n in os.listdir(place / "res") if n != "latest"]


def the_folder(place):
    (name,) = folders(place)
    return place / "res" / name


def signal_at(place, proc, point, signum):
    """Reads the bench's progress until `point` is reached, sends the signal there; returns
    its stderr."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if point == "before" and "measuring the platform's cost table" in line:
            break
        if point == "between" and "cooling down" in line:
            break
        if point == "in" and line.startswith("bench: [ 2/"):
            tmp = the_folder(place) / "tmp"
            deadline = time.monotonic() + 10
            while not os.listdir(tmp) and time.monotonic() < deadline:
                time.sleep(0.01)             # the boot's temporary folder: QEMU is coming
            break
    else:
        pytest.fail(f"the bench ended before the point '{point}':\n" + "".join(seen))
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=90)
    return "".join(seen) + err


def meta_of(path):
    with open(os.path.join(path, "meta.json")) as f:
        return json.load(f)


def rows_of(outdir):
    with open(outdir / "runs.csv") as f:
        return list(csv.DictReader(f))


WHERE = {"before": "before the first run", "between": "between runs 1 and 2 of 6",
         "in": "in run 2 of 6 (a #2)"}
MADE = {"before": 0, "between": 1, "in": 1}
POINTS = [(p, s) for p in ("before", "in", "between")
          for s in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)] + [("in", signal.SIGHUP)]


@pytest.mark.parametrize("point,signum", POINTS,
                         ids=[f"{p}-{signal.Signals(s).name}" for p, s in POINTS])
def test_a_signal_leaves_a_folder_that_says_what_it_holds(place, point, signum):
    extra = {"before": (), "between": ("--no-cost-table", "--cooldown", "60"),
             "in": ("--no-cost-table",)}[point]
    proc = start(place, extra=extra)
    err = signal_at(place, proc, point, signum)
    outdir = the_folder(place)
    made = MADE[point]
    assert os.readlink(place / "res" / "latest") == outdir.name     # from its first moment
    assert len(os.listdir(outdir / "raw")) == made
    rows = rows_of(outdir)
    assert len(rows) == made and all(r["status"] == "ok" for r in rows)
    meta = meta_of(outdir)
    assert meta["runs_made"] == made and meta["runs_planned"] == PLANNED
    assert os.listdir(place / "tmp") == []            # nothing outside the folder
    if signum == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
        assert meta["status"] == "running"
        rep = subprocess.run([sys.executable, BENCH, "--report", str(outdir)],
                             capture_output=True, text=True, timeout=60)
        assert rep.returncode == 0, rep.stderr
        assert rep.stderr.count("\n") == 1 and "incomplete" in rep.stderr
        assert f"after {made} raw record" in rep.stderr and f"of {PLANNED} planned" in rep.stderr
        meta = meta_of(outdir)
        assert meta["status"] == "incomplete" and meta["incomplete"]["by"] == "--report"
        why = "its bench ended without finishing (killed?)"
    else:
        assert proc.returncode == 128 + signum, err
        assert "Traceback" not in err
        assert meta["status"] == "interrupted" and meta["interrupted"] is True
        assert meta["signal"] == signal.Signals(signum).name
        assert meta["where"] == WHERE[point]
        assert f"interrupted {WHERE[point]}, after {made} of {PLANNED} runs" in err
        why = f"interrupted by {meta['signal']} {WHERE[point]}"
    assert not (outdir / "tmp").exists()
    assert len(rows_of(outdir)) == made
    table = (outdir / "slow.md").read_text()
    assert f"**Incomplete: {made} of {PLANNED} runs of this matrix made** ({why}" in table


def test_the_next_bench_marks_a_killed_folder(place):
    proc = start(place)
    signal_at(place, proc, "in", signal.SIGKILL)
    killed = the_folder(place)
    nxt = start(place, "fast.txt")
    out, err = nxt.communicate(timeout=60)
    assert nxt.returncode == 0, err
    assert f"{killed}: incomplete" in err and "1 raw record of 6 planned" in err
    assert meta_of(killed)["status"] == "incomplete"
    assert not (killed / "tmp").exists()
    latest = os.readlink(place / "res" / "latest")
    assert latest != killed.name and meta_of(place / "res" / latest)["status"] == "complete"
    assert "Incomplete" not in (place / "res" / latest / "fast.md").read_text()


def test_a_running_folder_of_a_live_bench_is_not_reported(place):
    outdir = place / "res" / "20260101-000000"
    (outdir / "raw").mkdir(parents=True)
    resultsdir.write_meta(str(outdir), {"status": "running", "owner": resultsdir.owner()})
    rep = subprocess.run([sys.executable, BENCH, "--report", str(outdir)], capture_output=True,
                         text=True, timeout=60)
    assert rep.returncode == 2 and "still being written" in rep.stderr
    assert resultsdir.find_incomplete(str(place / "res")) == []


def test_folders_from_before_status_are_read_by_what_they_hold():
    assert resultsdir.status({"started": "x"}) == "incomplete"
    assert resultsdir.status({"seconds": 3}) == "complete"
    assert resultsdir.status({"seconds": 3, "interrupted": True}) == "interrupted"
    assert resultsdir.status({"state": "complete"}) == "complete"
    gone = {"pid": 999999999, "start": 1}
    assert resultsdir.status({"status": "running", "owner": gone}) == "incomplete"
    assert resultsdir.status({"state": "running", "owner": gone}) == "incomplete"


def test_a_bench_removes_its_own_temporary_folders_on_the_way_out(tmp_path):
    """A signal can land between a boot's mkdtemp and the try block that removes its folder,
    so a bench finishing after a signal sweeps its own; another live bench's folders stay."""
    from idlelab.bench import onerun
    mine = tmp_path / f"{onerun.TEMP_PREFIX}{os.getpid()}-abc"
    live = tmp_path / f"{onerun.TEMP_PREFIX}{os.getppid()}-def"
    other = tmp_path / "unrelated"
    for d in (mine, live, other):
        d.mkdir()
    assert onerun.reclaim_temp_dirs(str(tmp_path)) == 0          # all alive: nothing goes
    assert onerun.reclaim_temp_dirs(str(tmp_path), own=True) == 1
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, other.name])


def test_a_socket_in_a_folder_too_deep_for_sun_path_is_reached_all_the_same(tmp_path):
    """The bench's boots keep their QMP socket in the results folder, which can be deeper
    than a UNIX socket's path may be long: the socket is bound and reached through a
    descriptor of its folder, as QEMU and the harness do it."""
    import socket
    from idlelab.bench import onerun
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path, fd = onerun.socket_path(str(deep), "qmp")
    assert fd is not None and len(path) <= onerun.SOCKET_PATH_MAX
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen(1)
        client = socket.socket(socket.AF_UNIX)
        client.connect(path)
        client.close()
        server.close()
    finally:
        os.close(fd)
    assert (deep / "qmp").exists()
    assert onerun.socket_path("/short", "qmp") == ("/short/qmp", None)
