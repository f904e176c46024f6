"""tools/bench --resume: a folder a bench left unfinished (its host wedged, its process was
killed) goes on from the first run it lacks, keeping every run it holds; the first run made
says it was retried, or, with --resume-fail, is recorded as failed with the reason and the
rest of the matrix still runs (what the nested host's retry after a wedge relies on)."""
import json
import os
import subprocess
import sys

from conftest import TOP
from idlelab.report import resultsdir

BENCH = os.path.join(TOP, "tools", "bench")
MATRIX = "defaults: accel=tcg smp=1 duration=50ms guest.warmup=10ms\na: workload=idle repeat=3\n"


def bench(tmp_path, *args):
    return subprocess.run([sys.executable, BENCH, "--matrix", str(tmp_path / "m.txt"),
                           "--accel", "tcg", "--no-cost-table", "--results-dir",
                           str(tmp_path / "res"), *args], capture_output=True, text=True,
                          timeout=300)


def cut_after_first_run(tmp_path):
    """A finished 3-run folder made to look as a wedge leaves it: runs 2 and 3 missing, the
    meta still "running"."""
    (tmp_path / "m.txt").write_text(MATRIX)
    p = bench(tmp_path)
    assert p.returncode == 0, p.stderr
    folder = os.path.realpath(tmp_path / "res" / "latest")
    raw = sorted(os.listdir(os.path.join(folder, "raw")))
    first = json.load(open(os.path.join(folder, "raw", raw[0])))
    for name in raw[1:]:
        os.unlink(os.path.join(folder, "raw", name))
    meta = resultsdir.read_meta(folder)
    meta[resultsdir.STATUS] = resultsdir.RUNNING
    resultsdir.write_meta(folder, meta)
    return folder, first


def records(folder):
    return [json.load(open(os.path.join(folder, "raw", n)))
            for n in sorted(os.listdir(os.path.join(folder, "raw")))]


def test_resume_keeps_the_runs_made_and_marks_the_retried_one(tmp_path):
    folder, first = cut_after_first_run(tmp_path)
    p = bench(tmp_path, "--resume", folder, "--resume-note", "retried: wedged")
    assert p.returncode == 0, p.stderr
    recs = records(folder)
    assert [r["repeat"] for r in recs] == [1, 2, 3]
    assert recs[0] == first                       # kept byte for byte in content
    assert recs[1]["retried"] == "retried: wedged" and "retried" not in recs[2]
    assert all(r["status"] == "ok" for r in recs)
    meta = resultsdir.read_meta(folder)
    assert meta[resultsdir.STATUS] == resultsdir.COMPLETE and meta["runs_made"] == 3
    assert meta["resumed"][0]["at_run"] == 2


def test_resume_fail_records_the_run_and_goes_on(tmp_path):
    folder, _ = cut_after_first_run(tmp_path)
    p = bench(tmp_path, "--resume", folder, "--resume-note", "failed: wedged twice",
              "--resume-fail")
    assert p.returncode == 1, p.stderr              # a run failed
    recs = records(folder)
    assert [r["status"] for r in recs] == ["ok", "failed", "ok"]
    assert recs[1]["reason"] == "failed: wedged twice"


def test_resume_of_a_folder_with_a_gap_is_refused_in_one_line(tmp_path):
    folder, _ = cut_after_first_run(tmp_path)
    os.rename(os.path.join(folder, "raw", sorted(os.listdir(os.path.join(folder, "raw")))[0]),
              os.path.join(folder, "raw", "002-a-a-r2.json"))
    p = bench(tmp_path, "--resume", folder)
    assert p.returncode == 2
    said = [ln for ln in p.stderr.splitlines() if "--resume" in ln]
    assert len(said) == 1 and "cannot be resumed" in said[0], p.stderr


def test_resume_with_other_matrices_is_refused_in_one_line(tmp_path):
    """The runs a folder holds must be the first of the work list the resumed bench makes:
    with another matrix (another run's name here) nothing is run and the folder is kept."""
    folder, _ = cut_after_first_run(tmp_path)
    (tmp_path / "m.txt").write_text(MATRIX.replace("a: ", "b: "))
    p = bench(tmp_path, "--resume", folder)
    assert p.returncode == 2
    said = [ln for ln in p.stderr.splitlines() if "--resume" in ln]
    assert len(said) == 1 and "not the first of these matrices' work list" in said[0], p.stderr
    assert len(records(folder)) == 1


def test_resume_flags_without_resume_are_refused():
    p = subprocess.run([sys.executable, BENCH, "--resume-fail"], capture_output=True, text=True)
    assert p.returncode == 2 and "go with --resume" in p.stderr


def test_resume_of_a_windowed_bench_writes_a_row_per_window(tmp_path):
    """A boot of several windows holds a result record each: the resumed folder's runs.csv is
    remade from them window by window, as the run loop wrote it (it once summarized the boot
    as one run and stopped with a traceback)."""
    (tmp_path / "m.txt").write_text("defaults: accel=tcg smp=1 duration=50ms guest.warmup=10ms\n"
                                    "a: workload=idle repeat=2 guest.idle=halt,poll "
                                    "within=guest.idle\n")
    p = bench(tmp_path)
    assert p.returncode == 0, p.stderr
    folder = os.path.realpath(tmp_path / "res" / "latest")
    with open(os.path.join(folder, resultsdir.CSV_NAME)) as f:
        rows = len(f.read().splitlines())
    raw = sorted(os.listdir(os.path.join(folder, "raw")))
    os.unlink(os.path.join(folder, "raw", raw[-1]))
    meta = resultsdir.read_meta(folder)
    meta[resultsdir.STATUS] = resultsdir.RUNNING
    resultsdir.write_meta(folder, meta)
    p = bench(tmp_path, "--resume", folder)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(folder, resultsdir.CSV_NAME)) as f:
        assert len(f.read().splitlines()) == rows > 1 + 2    # more than a row per boot
