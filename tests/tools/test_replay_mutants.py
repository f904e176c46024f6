"""The transcription of kvm_vcpu_halt (tools/sim/host_poll.c) against its mutants: each
changes one decision, and each must be caught by the spec's host vectors
(tests/unit/test_sim_hostpoll.c) or by replaying traces (a real one of the nested host's KVM,
and synthetic ones the unmutated code made). Mutants that cannot be told apart from the
original by anything KVM does (a clamp at >= instead of >, which stores the same value) are not
listed: docs/replay.md, "Mutants"."""
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess

import pytest

from idlelab import TOP
from idlelab.replay import cli

SRC = os.path.join(TOP, "tools", "sim", "host_poll.c")
NESTED = os.path.join(os.path.dirname(__file__), "data", "nested-6.1-seed003")

# (what it breaks, the text, its replacement): each text occurs once in host_poll.c
MUTANTS = (
    ("no clamp as a halt begins", "p->form == HP_FORM_2022 && v->w > max",
     "p->form == HP_FORM_2021 && v->w > max"),
    ("grow=0 grows all the same", "if (p->grow == 0)\n\t\treturn c;", ""),
    ("grow doubles whatever grow says", "c.new = v->w * p->grow;", "c.new = v->w * 2;"),
    ("grow starts at grow_start even when the product is above it",
     "if (c.new < p->grow_start)\n\t\tc.new = p->grow_start;\n\tif",
     "c.new = c.new > p->grow_start ? p->grow_start : c.new;\n\tif"),
    ("grow clamps to max in the current form", "p->form == HP_FORM_2021 && c.new > max",
     "c.new > max"),
    ("shrink halves whatever shrink says", "p->shrink == 0 ? 0 : v->w / p->shrink",
     "v->w / 2"),
    ("shrink keeps a window of exactly grow_start",
     "if (c.new < p->grow_start)\n\t\tc.new = 0;", "if (c.new <= p->grow_start)\n\t\tc.new = 0;"),
    ("a halt of exactly W is too long", "if (h->halt_ns <= v->w)", "if (h->halt_ns < v->w)"),
    ("a window of 0 shrinks", "if (v->w != 0 && h->halt_ns > max)", "if (h->halt_ns > max)"),
    ("a halt of exactly max shrinks", "if (v->w != 0 && h->halt_ns > max)",
     "if (v->w != 0 && h->halt_ns >= max)"),
    ("a halt of exactly max grows", "if (v->w < max && h->halt_ns < max)",
     "if (v->w < max && h->halt_ns <= max)"),
    ("an invalid wake-up adjusts as a valid one", "if (h->invalid)\n\t\treturn shrink(p, v);",
     ""),
    ("KVM_CAP_HALT_POLL ignored", "return p->vm_override ? p->vm_max : p->halt_poll_ns;",
     "return p->halt_poll_ns;"),
    ("MSR_KVM_POLL_CONTROL=0 still adjusts", "if (!v->poll_allowed || p->fixed)",
     "if (p->fixed)"),
    ("a poll that caught the wake-up is not counted", "v->successful_poll++;", ""),
)


CFLAGS = ["-std=gnu11", "-DIDLELAB_HOST", "-I", TOP]


def build(tmp, name, sources, libs, opt="-O1"):
    exe = os.path.join(tmp, name)
    subprocess.run(["cc"] + CFLAGS + [opt, "-o", exe] + sources + libs, check=True,
                   capture_output=True)
    return exe


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    """tools/kvmreplay/replay.mk's sources but host_poll.c, compiled once."""
    d = str(tmp_path_factory.mktemp("objects"))
    srcs = sorted(glob.glob(os.path.join(TOP, "tools", "kvmreplay", "*.c")) +
                  glob.glob(os.path.join(TOP, "kernel", "knobs", "*.c")) +
                  [os.path.join(TOP, "kernel", "policy", "governors.c")])
    out = []
    for i, src in enumerate(srcs):
        out.append(os.path.join(d, f"{i}.o"))
        subprocess.run(["cc"] + CFLAGS + ["-O1", "-c", "-o", out[-1], src], check=True,
                       capture_output=True)
    return out


def caught(tmp, source, traces, objects):
    """Which checks fail with `source` in host_poll.c's place (empty: none)."""
    os.makedirs(tmp, exist_ok=True)
    src = os.path.join(tmp, "host_poll.c")
    with open(src, "w") as f:
        f.write(source)
    failed = []
    unit = build(tmp, "unit", [src, os.path.join(TOP, "tests", "unit", "test_sim_hostpoll.c")],
                 ["-lcmocka"], "-O0")
    if subprocess.run([unit], capture_output=True).returncode != 0:
        failed.append("host vectors")
    eng = build(tmp, "engine", [src] + objects, ["-lz"])
    for name, args in traces:
        if subprocess.run([eng] + args + ["--require-agree", "--totals"],
                          capture_output=True).returncode != 0:
            failed.append(name)
    return failed


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("mutants")
    real = cli.engine()
    out = []
    for seed in ("seed003", "seed004"):
        base = NESTED.replace("seed003", seed)
        with open(base + ".schedule") as f:
            params = re.search(r"^# before the first switch: (\S+)$", f.read(), re.M)[1]
        out.append((f"nested trace {seed}", [base + ".trace.gz", "--params", params,
                                             "--schedule", base + ".schedule", "--from-start"]))
    for i, p in enumerate(("halt_poll_ns=200us,grow=2,grow_start=10us,shrink=2",
                           "halt_poll_ns=150us,grow=3,grow_start=20us,shrink=0",
                           "halt_poll_ns=1ms,grow=2,grow_start=10us,shrink=4,vm=300us")):
        path = str(d / f"synth{i}.trace")
        with open(path, "w") as f:
            subprocess.run([real, "--synthesize", f"2,1,{i + 1}", "--params", p], stdout=f,
                           check=True)
        out.append((f"synthetic {p}", [path, "--params", p, "--from-start"]))
    return out


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_every_mutant_is_caught(traces, objects, tmp_path):
    with open(SRC) as f:
        original = f.read()
    assert caught(str(tmp_path / "original"), original, traces, objects) == []
    for what, text, _ in MUTANTS:
        assert original.count(text) == 1, f"mutant {what!r}: its text is not in host_poll.c once"
    # two at a time: each is a compiler and a few engine runs, one process each
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        found = list(pool.map(lambda m: caught(str(tmp_path / f"m{m[0]}"),
                                               original.replace(m[1][1], m[1][2]), traces,
                                               objects), enumerate(MUTANTS)))
    survivors = [what for (what, _, _), f in zip(MUTANTS, found) if not f]
    assert len(MUTANTS) >= 10
    assert survivors == []
