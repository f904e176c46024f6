"""Guest values are checked before anything runs, by the kernel's own parser
(build/host/knobdoc --check-cmdline), on the full command line each run would boot with;
a matrix's sweeps are capped before they are expanded; `make iso` follows ISO_CMDLINE."""
import os
import random
import re
import subprocess
import time

import pytest

from conftest import TOP
from idlelab.bench import cli, matrix, workplan

KNOBDOC = workplan.KNOBDOC


@pytest.fixture(scope="module", autouse=True)
def knobdoc():
    subprocess.run(["make", "-s", "-C", TOP, "-f", workplan.KNOBDOC_MK, "build/host/knobdoc"],
                   check=True, timeout=120)


def check(text):
    return subprocess.run([KNOBDOC, "--check-cmdline", text], capture_output=True, text=True)


def test_check_cmdline_gives_the_kernels_own_error():
    assert check("workload=idle duration=1s window_sync=1").returncode == 0
    res = check("period=5m")
    assert res.returncode == 1
    assert res.stdout == ("knob 'period=5m': expected a time like 250us, 10ms or 2s "
                          "(ns if no unit), range 1us..10s\n")
    assert "must be one of none|pingpong" in check("workload=nosuch").stdout
    assert "longer than 2047 bytes" in check("verbose=1 " * 300).stdout


def test_check_cmdline_reads_many_lines_and_names_each_bad_one():
    # the same valid line twice: each parse starts from the defaults (no "given twice")
    lines = "hz=250 workload=idle\nhz=250 workload=idle\nfoo=1\nidle=halt\nhz=3\n"
    res = subprocess.run([KNOBDOC, "--check-cmdline", "-"], input=lines, capture_output=True,
                         text=True)
    assert res.returncode == 1
    assert [l.split(":")[0] for l in res.stdout.splitlines()] == ["3", "5"]


def test_unknown_knob_gets_the_matrix_parsers_suggestion():
    """The kernel's "did you mean" (kernel/knobs/suggest.c) is the matrix parser's
    (difflib's get_close_matches), for misspellings of every kind and for words far from
    any name."""
    names = sorted(matrix.guest_knob_names())
    rnd = random.Random(7)
    words = {"duraton", "hzz", "xyz", "window", "poll", "guest_halt_poll_ns"}
    while len(words) < 3000:
        w = rnd.choice(names)
        for _ in range(rnd.randint(1, 5)):
            p = rnd.randrange(len(w) + 1)
            w = rnd.choice((w[:p] + rnd.choice("abehilnoprstu._") + w[p:], w[:p] + w[p + 1:],
                            w[:p] + rnd.choice(names)[:rnd.randint(1, 9)] + w[p:]))
        if w and w not in names:
            words.add(w)
    words = sorted(words)
    res = subprocess.run([KNOBDOC, "--check-cmdline", "-"], text=True, capture_output=True,
                         input="".join(f"{w}=1\n" for w in words), timeout=60)
    got = [re.search(r"\(did you mean ('[^']*')\? ", line) for line in res.stdout.splitlines()]
    assert len(got) == len(words)
    wrong = [(w, m and m.group(1), matrix._did_you_mean(w, names))
             for w, m in zip(words, got)
             if (f" (did you mean {m.group(1)}?)" if m else "") != matrix._did_you_mean(w, names)]
    assert not wrong, wrong[:5]
    assert sum(m is not None for m in got) > len(words) / 3      # most are close to a name


def test_knobdoc_table_modes_still_work(tmp_path):
    for doc in ("docs/knobs.md", "README.md"):
        path = os.path.join(TOP, doc)
        assert subprocess.run([KNOBDOC, "--check", path], capture_output=True).returncode == 0
    assert subprocess.run([KNOBDOC, "--bogus"], capture_output=True).returncode == 2


@pytest.mark.parametrize("line,words", [
    ("x: workload=idle duration=1s guest.period=5m", ["m.txt:1", "run 'x'", "period=5m"]),
    ("x: workload=nosuch duration=1s", ["m.txt:1", "workload=nosuch"]),
    ("x: workload=idle duration=3601s", ["duration=3601s"]),    # the kernel's range
    ("x: workload=idle duration=1s guest.hz=0,3", ["run 'x-hz=3'", "hz=3"]),
])
def test_bad_guest_value_in_a_matrix_fails_list(tmp_path, capsys, line, words):
    m = tmp_path / "m.txt"
    m.write_text("ok: workload=idle duration=1s\n" + line + "\n")
    assert cli.main(["--matrix", str(m), "--list"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    for w in words:
        assert w.replace("m.txt:1", "m.txt:2") in err, err


def test_a_time_without_a_unit_is_ns_to_the_kernel_and_the_matrix_alike():
    """One rule for times: duration=1000000 is 1 ms to both; duration=300 is 300 ns, which
    both refuse by the knob's range alone."""
    assert check("workload=idle duration=1000000").returncode == 0
    assert "out of range, accepted 1ms..3600s" in check("workload=idle duration=300").stdout
    (r,) = matrix.parse("a: workload=idle duration=1000000", "m")
    assert r.duration_ns == 1_000_000
    with pytest.raises(matrix.MatrixError, match=r"^m:1: duration=300: expected a duration in "
                                                 r"1ms\.\.3600s \(read as 300 ns"):
        matrix.parse("a: workload=idle duration=300", "m")


def test_window_hold_is_part_of_the_checked_line(monkeypatch):
    seen = []
    monkeypatch.setattr(workplan, "kernel_refuses", lambda lines: seen.extend(lines) or [])
    loaded = [("m", "m.txt", matrix.parse("a: workload=idle duration=1s\n", "m.txt"))]
    workplan.check_cmdlines(loaded, "20ms")
    assert seen == ["workload=idle duration=1s window_sync=1 window_hold=20ms"]


def test_builtin_matrices_pass_the_kernels_check():
    for quick in (False, True):
        workplan.check_cmdlines(workplan.load_matrices(workplan.builtin_matrices(quick)))


def test_sweeps_of_millions_are_refused_before_expansion(tmp_path, capsys):
    values = lambda n, unit: ",".join(f"{i}{unit}" for i in range(1, n + 1))  # noqa: E731
    m = tmp_path / "big.txt"
    m.write_text(f"x: workload=idle duration={values(100, 'ms')} guest.period={values(100, 'us')} "
                 f"guest.seed={values(100, '')} guest.mean={values(100, 'us')}\n")
    t0 = time.monotonic()
    assert cli.main(["--matrix", str(m), "--list"]) == cli.EXIT_USAGE
    assert time.monotonic() - t0 < 2
    err = capsys.readouterr().err
    assert "big.txt:1: the sweeps expand to 100000000 runs" in err
    assert f"at most {matrix.MAX_RUNS}" in err


def test_the_cap_counts_every_line():
    line = "r{}: workload=idle duration=1s guest.seed=" + ",".join(map(str, range(1, 401)))
    matrix.parse("\n".join(line.format(i) for i in range(2)), "m")     # 800 runs: fine
    with pytest.raises(matrix.MatrixError, match=r"^m:3: the sweeps expand to 1200 runs"):
        matrix.parse("\n".join(line.format(i) for i in range(3)), "m")


def test_make_iso_rebuilds_when_only_iso_cmdline_changes(tmp_path):
    iso = tmp_path / "t.iso"

    def make(cmdline):
        return subprocess.run(["make", "--no-print-directory", "-C", TOP, "iso", f"ISO={iso}",
                               f"ISO_CMDLINE={cmdline}"], capture_output=True, text=True,
                              timeout=120)

    def baked():
        with open(iso, "rb") as f:
            data = f.read()
        start = data.index(b"multiboot2 /boot/idlelab.elf")
        return data[start:data.index(b"\n", start)].decode().split(" ", 2)[2:]

    assert make("verbose=1").returncode == 0 and baked() == ["verbose=1"]
    again = make("verbose=1")
    assert again.returncode == 0 and "MKISO" not in again.stdout      # up to date
    assert make("verbose=1 hz=100").returncode == 0 and baked() == ["verbose=1 hz=100"]
    bad = make("hz=3")
    assert bad.returncode != 0 and "the kernel would refuse it" in bad.stderr
    assert baked() == ["verbose=1 hz=100"]      # the old ISO stands, and is not up to date:
    assert "MKISO" in make("hz=3").stdout
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".iso-stage")]


def test_mkiso_reclaims_the_stage_of_a_killed_run(tmp_path):
    dead = tmp_path / ".iso-stage.999999999.abcdef"
    live = tmp_path / f".iso-stage.{os.getpid()}.abcdef"
    dead.mkdir()
    live.mkdir()
    subprocess.run([os.path.join(TOP, "tools", "mkiso"), str(tmp_path / "a.iso"), ""],
                   check=True, timeout=120)
    assert not dead.exists() and live.exists()


@pytest.mark.parametrize("text,line", [
    ("defaults: workload=periodic duration=1s guest.period=5x\na: guest.idle=halt\n", 1),
    ("defaults: workload=periodic duration=1s\na: guest.idle=halt guest.period=5x\n", 2),
    # a later defaults line overrides the earlier one's value: the later is to blame
    ("defaults: guest.period=1ms\ndefaults: workload=periodic duration=1s guest.period=5x\n"
     "a: guest.idle=halt\n", 2),
])
def test_the_kernels_refusal_names_the_line_that_set_the_knob(text, line):
    loaded = [("m", "m.txt", matrix.parse(text, "m.txt"))]
    with pytest.raises(matrix.MatrixError, match=rf"^m\.txt:{line}: run 'a': the guest would "
                                                 r"refuse its command line: knob 'period=5x'"):
        workplan.check_cmdlines(loaded)
