"""The documentation's generated tables and its links (make docs-check): each check passes on
the tree as it is and fails, naming what differs, on a copy made to differ."""
import dataclasses
import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import TOP
from idlelab.bench import workplan
from idlelab.derive import columns
from idlelab.host import nested, qemu

KNOBDOC = workplan.KNOBDOC
EXITDOC = os.path.join(TOP, "tools", "exitdoc")
DOCLINKS = os.path.join(TOP, "tools", "doclinks")
RECORDSDOC = os.path.join(TOP, "tools", "recordsdoc")
CPURECORDDOC = os.path.join(TOP, "build", "host", "cpurecorddoc")
RECORDS_MD = os.path.join(TOP, "docs", "records.md")


@pytest.fixture(scope="module", autouse=True)
def knobdoc():
    subprocess.run(["make", "-s", "-C", TOP, "-f", workplan.KNOBDOC_MK, "build/host/knobdoc"],
                   check=True, timeout=120)


@pytest.fixture(scope="module", autouse=True)
def cpurecorddoc():
    subprocess.run(["make", "-s", "-C", TOP, "build/host/cpurecorddoc"], check=True,
                   timeout=120)


def run(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60)


def copy(tmp_path, doc):
    dest = tmp_path / os.path.basename(doc)
    shutil.copy(os.path.join(TOP, doc), dest)
    return dest


# --- knobs ---

@pytest.mark.parametrize("doc", ["docs/knobs.md", "README.md"])
def test_knob_tables_are_current(doc):
    res = run(KNOBDOC, "--check", os.path.join(TOP, doc))
    assert res.returncode == 0, res.stderr


def test_full_knob_table_has_a_row_for_every_knob():
    rows = re.findall(r"^\| `([\w.]+)` \|", open(os.path.join(TOP, "docs/knobs.md")).read(),
                      re.M)
    generated = run(KNOBDOC).stdout
    assert rows == re.findall(r"^\| `([\w.]+)` \|", generated, re.M) and len(rows) > 30


def test_readme_has_the_rows_its_marker_names_in_that_order():
    text = open(os.path.join(TOP, "README.md")).read()
    names = re.search(r"<!-- knobs:begin ([^>]*) -->", text).group(1).split()
    rows = re.findall(r"^\| `([\w.]+)` \|", text, re.M)
    assert rows == names and len(names) == 10


def test_an_edited_knob_row_fails_the_check_and_update_restores_it(tmp_path):
    for doc in ("docs/knobs.md", "README.md"):
        path = copy(tmp_path, doc)
        good = path.read_text()
        path.write_text(good.replace("| `hz` | enum | `250` |", "| `hz` | enum | `100` |", 1))
        res = run(KNOBDOC, "--check", str(path))
        assert res.returncode == 1
        assert "knob table is out of date" in res.stderr
        assert "-| `hz` | enum | `100` |" in res.stderr and "+| `hz` | enum | `250` |" in res.stderr
        assert run(KNOBDOC, "--update", str(path)).returncode == 0
        assert path.read_text() == good


def test_a_marker_naming_no_knob_is_refused(tmp_path):
    path = tmp_path / "x.md"
    path.write_text("<!-- knobs:begin hz nosuch -->\n<!-- knobs:end -->\n")
    res = run(KNOBDOC, "--update", str(path))
    assert res.returncode == 2
    assert res.stderr.strip() == f"{path}:1: no knob 'nosuch' in kernel/knobs/knob_table.h"
    assert path.read_text() == "<!-- knobs:begin hz nosuch -->\n<!-- knobs:end -->\n"


def test_a_named_marker_is_filled_with_those_rows(tmp_path):
    path = tmp_path / "x.md"
    path.write_text("a\n<!-- knobs:begin idle hz -->\n<!-- knobs:end -->\nb\n")
    assert run(KNOBDOC, "--update", str(path)).returncode == 0
    lines = path.read_text().splitlines()
    assert lines[0] == "a" and lines[-1] == "b"
    assert lines[2:4] == ["| knob | type | default | range | description |",
                          "| --- | --- | --- | --- | --- |"]
    assert [l.split("`")[1] for l in lines[4:6]] == ["idle", "hz"] and len(lines) == 8


# --- exit codes ---

def test_exit_code_tables_are_current():
    res = run(sys.executable, EXITDOC, "--check", os.path.join(TOP, "docs/exit-codes.md"))
    assert res.returncode == 0, res.stderr


def test_exit_code_table_is_what_the_header_gives():
    text = open(os.path.join(TOP, "docs/exit-codes.md")).read()
    for code, (name, desc) in qemu.load_codes().items():
        assert f"| `{name}` | {code:#x} | {(code << 1) | 1} | {desc} |" in text
    for name, status in nested.CODES.items():
        assert f"| `{name}` | {status} |" in text


def test_an_edited_exit_code_fails_the_check_and_update_restores_it(tmp_path):
    path = copy(tmp_path, "docs/exit-codes.md")
    good = path.read_text()
    path.write_text(good.replace("| 0x12 | 37 |", "| 0x12 | 38 |"))
    res = run(sys.executable, EXITDOC, "--check", str(path))
    assert res.returncode == 1
    assert "-| `BAD_KNOB` | 0x12 | 38 |" in res.stderr
    assert run(sys.executable, EXITDOC, "--update", str(path)).returncode == 0
    assert path.read_text() == good


@pytest.mark.parametrize("text,why", [
    ("<!-- exitcodes:begin nosuch -->\n<!-- exitcodes:end -->\n", ":1: no table 'nosuch'"),
    ("<!-- exitcodes:begin guest -->\n", ":1: a begin marker without an end marker"),
    ("no markers\n", "no <!-- exitcodes:begin WHICH --> line"),
])
def test_exitdoc_refuses_bad_markers_in_one_line(tmp_path, text, why):
    path = tmp_path / "x.md"
    path.write_text(text)
    res = run(sys.executable, EXITDOC, "--check", str(path))
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1 and why in res.stderr


# --- records ---

def records_section(text, which):
    """The first cells of the rows of the table marked `which` in text, backquotes dropped."""
    body = text.split(f"<!-- records:begin {which} -->\n", 1)[1].split("<!-- records:end -->")[0]
    return [m.group(1) for m in re.finditer(r"^\| `([\w.]+)` \|", body, re.M)]


def test_records_tables_are_current():
    res = run(sys.executable, RECORDSDOC, "--check", RECORDS_MD)
    assert res.returncode == 0, res.stderr


def test_the_cpu_table_has_every_field_of_the_header_in_order():
    names = run(CPURECORDDOC, "--names").stdout.split()
    assert records_section(open(RECORDS_MD).read(), "cpu") == names
    assert names[0] == "id" and len(names) > 20


def test_the_runs_table_has_every_csv_column_in_order_with_its_source():
    text = open(RECORDS_MD).read()
    assert records_section(text, "runs.csv") == columns.COLUMNS
    body = text.split("<!-- records:begin runs.csv -->\n")[1].split("<!-- records:end -->")[0]
    for line in body.splitlines()[2:]:
        sources = line.split(" | ")[2].split(", ")
        assert set(sources) <= set(columns.SOURCES), line


def test_an_edited_records_row_fails_the_check_and_update_restores_it(tmp_path):
    path = copy(tmp_path, "docs/records.md")
    good = path.read_text()
    path.write_text(good.replace("| `ticks` | count |", "| `ticks` | ns |", 1)
                    .replace("| `host_exits` | count | KVM |", "| `host_exits` | count | guest |",
                             1))
    res = run(sys.executable, RECORDSDOC, "--check", str(path))
    assert res.returncode == 1 and "records table is out of date" in res.stderr
    assert "-| `ticks` | ns |" in res.stderr and "+| `ticks` | count |" in res.stderr
    assert "-| `host_exits` | count | guest |" in res.stderr
    assert run(sys.executable, RECORDSDOC, "--update", str(path)).returncode == 0
    assert path.read_text() == good


def load_recordsdoc():
    loader = importlib.machinery.SourceFileLoader("recordsdoc", RECORDSDOC)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_a_column_without_its_unit_source_or_meaning_is_refused(monkeypatch, capsys):
    """A field added to RunRow as a bare `= None` has no documentation: the table is not made."""
    doc = load_recordsdoc()
    bare = dataclasses.make_dataclass("Row", [("new_column", int, None)], bases=(columns.RunRow,))
    monkeypatch.setattr(columns, "RunRow", bare)
    monkeypatch.setattr(columns, "COLUMNS", columns.COLUMNS + ["new_column"])
    assert doc.main(["runs.csv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'new_column'" in err[0], err


@pytest.mark.parametrize("text,why", [
    ("<!-- records:begin nosuch -->\n<!-- records:end -->\n", ":1: no table 'nosuch'"),
    ("<!-- records:begin cpu -->\n", ":1: a begin marker without an end marker"),
    ("no markers\n", "no <!-- records:begin WHICH --> line"),
])
def test_recordsdoc_refuses_bad_markers_in_one_line(tmp_path, text, why):
    path = tmp_path / "x.md"
    path.write_text(text)
    res = run(sys.executable, RECORDSDOC, "--check", str(path))
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1 and why in res.stderr


# --- links ---

def test_every_relative_link_in_the_docs_resolves():
    res = run(sys.executable, DOCLINKS, os.path.join(TOP, "README.md"),
              os.path.join(TOP, "docs"))
    assert res.returncode == 0, res.stdout


def test_a_broken_link_or_anchor_is_named(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# The `x=` knob (here)\n\n## Twice\n## Twice\n")
    (tmp_path / "a.md").write_text(
        "[ok](sub/b.md) [ok](sub/b.md#the-x-knob-here) [ok](sub/b.md#twice-1) [ok](sub/)\n"
        "[gone](sub/c.md) [bad anchor](sub/b.md#nope) [web](https://example.org/x)\n"
        "`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n[self](#nope)\n")
    res = run(sys.executable, DOCLINKS, str(tmp_path / "a.md"))
    assert res.returncode == 1
    assert res.stdout.splitlines() == [
        f"{tmp_path}/a.md:2: link to sub/c.md: no such file or folder",
        f"{tmp_path}/a.md:2: link to sub/b.md#nope: no heading '#nope' in {tmp_path}/sub/b.md",
        f"{tmp_path}/a.md:7: link to #nope: no heading '#nope' in {tmp_path}/a.md",
    ]
