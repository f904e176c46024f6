"""Every user-input error of every tool (bench, qemu-run, demo, mkiso) is one line on stderr
naming the input, exit status 2, no traceback, and nothing left behind: each case the issue
listed is driven here through the real scripts."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP
from test_report import META, record

TOOLS = os.path.join(TOP, "tools")


def tool(name, *args, cwd=None, env=None):
    cmd = [os.path.join(TOOLS, name), *args]
    if name != "mkiso":
        cmd.insert(0, sys.executable)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=cwd, env=env)


def one_line_usage_error(res, *words):
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.fixture
def place(tmp_path):
    (tmp_path / "plain").write_text("a file\n")
    (tmp_path / "binary.txt").write_bytes(open("/bin/true", "rb").read()[:400])
    (tmp_path / "noraw").mkdir()
    trunc = tmp_path / "trunc"
    (trunc / "raw").mkdir(parents=True)
    (trunc / "raw" / "001-m-a.json").write_text('{"matrix": "m", "name": "a", "stat')
    (tmp_path / "fieldless" / "raw").mkdir(parents=True)
    (tmp_path / "fieldless" / "raw" / "001-m-a.json").write_text(
        '{"matrix": "m", "name": "a", "status": "ok"}')
    csvdir = tmp_path / "csvdir"            # a complete folder, a folder where runs.csv goes
    (csvdir / "raw").mkdir(parents=True)
    (csvdir / "raw" / "001-m-a.json").write_text(json.dumps(record("m", "a", "a", "idle")))
    (csvdir / "meta.json").write_text(json.dumps(dict(META, status="complete", runs_made=1,
                                                      runs_planned=1, seconds=1.0)))
    (csvdir / "runs.csv").mkdir()
    return tmp_path


BENCH_CASES = {
    "matrix-binary": (["--matrix", "binary.txt", "--list"], ["binary.txt", "not a text"]),
    "matrix-folder": (["--matrix", "noraw", "--list"], ["noraw"]),
    "matrix-missing": (["--matrix", "nosuch.txt", "--list"], ["nosuch.txt"]),
    "report-missing": (["--report", "nosuch"], ["--report nosuch", "no such folder"]),
    "report-no-raw": (["--report", "noraw"], ["--report noraw", "no raw/"]),
    "report-file": (["--report", "plain"], ["--report plain", "not a folder"]),
    "report-truncated": (["--report", "trunc"], ["001-m-a.json", "invalid JSON"]),
    "report-fields-missing": (["--report", "fieldless"], ["001-m-a.json", "no 'halt_poll'"]),
    "report-csv-a-folder": (["--report", "csvdir"], ["--report csvdir/runs.csv",
                                                     "cannot write it: Is a directory"]),
    "results-dir-under-file": (["--results-dir", "plain/x", "--accel", "tcg", "--quick"],
                               ["--results-dir plain/x", "plain is a file"]),
    "timeout-nan": (["--timeout", "nan", "--list"], ["--timeout", "'nan'"]),
    "timeout-zero": (["--timeout", "0", "--list"], ["--timeout", "'0'"]),
    "timeout-negative": (["--timeout", "-5", "--list"], ["--timeout", "'-5'"]),
    "timeout-inf": (["--timeout", "inf", "--list"], ["--timeout", "'inf'"]),
    "window-hold": (["--window-hold", "5m", "--accel", "tcg", "--quick"],
                    ["--window-hold", "'5m'"]),
    "wait-quiet": (["--wait-quiet", "-1", "--list"], ["--wait-quiet", "'-1'"]),
    "quiet-below": (["--quiet-below", "nan", "--list"], ["--quiet-below"]),
    "seeds": (["--seeds", "001", "--list"], ["--seeds", "001"]),
    "repeat-zero": (["--repeat", "0", "--list"], ["--repeat", "'0'"]),
    "repeat-huge": (["--repeat", "1001", "--list"], ["--repeat", "'1001'"]),
    "unknown-option": (["--nosuch"], ["--nosuch"]),
}


@pytest.mark.parametrize("case", sorted(BENCH_CASES))
def test_bench_bad_input_is_one_line_and_exit_2(place, case):
    args, words = BENCH_CASES[case]
    before = set(os.listdir(place))
    extra = [] if "--results-dir" in args else ["--results-dir", "res"]
    res = tool("bench", *args, *extra, cwd=place)
    line = one_line_usage_error(res, *words)
    assert line.startswith("bench: ")
    # nothing was made: no results folder, no `latest`
    assert set(os.listdir(place)) == before, case


def test_window_hold_leaves_no_temporary_folder(place):
    tmp = place / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    res = tool("bench", "--window-hold", "5m", "--accel", "tcg", "--quick", "--results-dir",
               "res", cwd=place, env=env)
    one_line_usage_error(res, "--window-hold")
    assert os.listdir(tmp) == [] and not (place / "res").exists()


QEMU_RUN_CASES = {
    "smp-0": (["--smp", "0"], ["--smp", "'0'"]),
    "smp-text": (["--smp", "two"], ["--smp", "'two'"]),
    "timeout-nan": (["--timeout", "nan"], ["--timeout", "'nan'"]),
    "timeout-0": (["--timeout", "0"], ["--timeout", "'0'"]),
    "mem": (["--mem", "12Q"], ["--mem", "'12Q'"]),
    "iso-missing": (["--iso", "nosuch.iso", "--machine", "pc"], ["--iso", "nosuch.iso"]),
    "qmp-folder": (["--qmp", "/nonexistent/q"], ["--qmp", "/nonexistent"]),
    "qmp-under-file": (["--qmp", "plain/q"], ["--qmp", "plain", "is a file"]),
    "machine": (["--machine", "vax"], ["--machine", "vax"]),
    "iso-on-microvm": (["--iso", "plain"], ["ISO", "pc or q35"]),
}


@pytest.mark.parametrize("case", sorted(QEMU_RUN_CASES))
def test_qemu_run_bad_input_is_one_line_and_exit_2(place, case):
    args, words = QEMU_RUN_CASES[case]
    res = tool("qemu-run", *args, "--print-cmd", cwd=place)
    assert one_line_usage_error(res, *words).startswith("qemu-run: ")


@pytest.mark.parametrize("args,words", [
    (["--smp", "0"], ["--smp", "'0'"]),
    (["--smp", "1"], ["--smp", "'1'", "2..64"]),
    (["--accel", "fast"], ["--accel", "fast"]),
])
def test_demo_bad_input_is_one_line_and_exit_2(args, words):
    assert one_line_usage_error(tool("demo", *args), *words).startswith("demo: ")


@pytest.mark.parametrize("args,words", [
    ([], ["expected OUT.iso", "0 arguments"]),
    (["a.iso", "b", "c"], ["3 arguments"]),
    (["out/x.iso", "period=5m"], ["period=5m", "the kernel would refuse it"]),
    (["out/x.iso", "workload=nosuch"], ["workload=nosuch"]),
    (["plain/x.iso", ""], ["plain/x.iso", "cannot make its folder"]),
    (["noraw", ""], ["noraw", "is a folder"]),
])
def test_mkiso_bad_input_is_one_line_and_exit_2(place, args, words):
    res = tool("mkiso", *args, cwd=place)
    assert one_line_usage_error(res, *words).startswith("mkiso: ")
    assert not (place / "out").exists() or os.listdir(place / "out") == []


TIMELINE_CASES = {
    "nothing": ([], ["console file or folder, or --run"]),
    "both": (["plain", "--run"], ["console file or folder, or --run"]),
    "missing": (["nosuch.txt"], ["nosuch.txt", "no such file"]),
    "binary": (["binary.txt"], ["binary.txt", "not a text file"]),
    "no-records": (["plain"], ["plain", "no `@idlelab timeline` record"]),
    "folder-no-console": (["noraw"], ["noraw", "no console.txt"]),
    "raw-truncated": (["trunc/raw/001-m-a.json"], ["001-m-a.json", "invalid JSON"]),
    "raw-no-serial": (["noserial.json"], ["noserial.json", "not a bench raw record"]),
    "cut-short": (["cut.txt"], ["cut.txt", "no timeline_cpu record for CPU 1"]),
    "bad-event": (["badev.txt"], ["badev.txt", "bad event"]),
    "out-under-file": (["good.txt", "--out", "plain/x"], ["--out plain/x"]),
    "knobs-no-workload": (["--run", "--knobs", "idle=halt"], ["--knobs", "no workload="]),
    "knobs-refused": (["--run", "--knobs", "workload=pingpong timeline=9999"],
                      ["--knobs", "timeline"]),
    "smp": (["--run", "--smp", "0"], ["--smp", "'0'"]),
    "accel": (["--run", "--accel", "fast"], ["--accel", "fast"]),
}

TIMELINE_GOOD = "\n".join([
    "@idlelab timeline cpus=2 tsc_hz=1000 t0=0 t_end=100 asked=4 events_per_cpu=4 per_line=2 "
    "kinds=r:run,p:poll,h:halt,e:idle_end,w:wake,i:ipi_sent,a:ipi_avoided,q:ipi_pending,"
    "x:ipi_received",
    "@idlelab timeline_cpu cpu=0 events=1 full=0",
    "@idlelab timeline_ev cpu=0 seq=0 ev=r5.2",
    "@idlelab timeline_cpu cpu=1 events=1 full=0",
    "@idlelab timeline_ev cpu=1 seq=0 ev=h5",
]) + "\n"


@pytest.mark.parametrize("case", sorted(TIMELINE_CASES))
def test_timeline_bad_input_is_one_line_and_exit_2(place, case):
    (place / "noserial.json").write_text('{"matrix": "m"}\n')
    (place / "good.txt").write_text(TIMELINE_GOOD)
    (place / "cut.txt").write_text("".join(TIMELINE_GOOD.splitlines(True)[:3]))
    (place / "badev.txt").write_text(TIMELINE_GOOD.replace("ev=h5", "ev=h5,k"))
    args, words = TIMELINE_CASES[case]
    before = sorted(p.name for p in place.iterdir())
    res = tool("timeline", *args, cwd=place)
    assert one_line_usage_error(res, *words).startswith("timeline: ")
    assert sorted(p.name for p in place.iterdir()) == before     # nothing written


def test_timeline_draws_a_good_console(place):
    """The cases above fail for their own reason: the same files, well formed, are drawn."""
    (place / "good.txt").write_text(TIMELINE_GOOD)
    res = tool("timeline", "good.txt", "--out", "drawn", cwd=place)
    assert res.returncode == 0, res.stderr
    assert (place / "drawn" / "trace.json").is_file()
