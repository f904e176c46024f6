"""The wake path priced by a cost table (`make wakepath-estimate`): the instruction kinds,
their prices from the table's primitives, the sum, its one-line refusals, and one real run
under TCG."""
import json
import os
import subprocess

import pytest

from idlelab import costtable
from idlelab.host import qemu
from idlelab.wakepath import insnprice
from idlelab.usage import EXIT_NO_KVM, EXIT_OK, EXIT_USAGE


@pytest.mark.parametrize("text, kind", [
    ("add    $0x1,%rsi", "alu"), ("mov    %rdi,%r8", "alu"),
    ("mov    0x200(%rdi),%eax", "load"), ("mov    %rdx,0x1c0(%rdi)", "load"),
    ("addq   $0x1,0x40(%rbx)", "load"), ("push   %rbx", "load"), ("pop    %r12", "load"),
    ("lock cmpxchg %edx,(%r9)", "locked"), ("lock orl $0x2,0x200(%r8)", "locked"),
    ("xchg   %rdx,0x208(%rbx)", "locked"), ("xchg   %ax,%ax", "alu"),
    ("call   10a570 <thread_wake>", "call"), ("call   *0x103ee(%rip)", "call"),
    ("ret", "call"), ("jmp    *%rax", "call"), ("jmp    10abcc <thread_block+0x2c>", "alu"),
    ("pushf", "pushf"), ("cli", "cli_sti"), ("sti", "cli_sti"), ("rdtsc", "rdtsc"),
    ("pause", "pause"), ("nopl   0x1d1e0005(%rax)", "alu"), ("lea    0x20(%rdi),%r9", "alu"),
])
def test_each_instruction_has_its_kind(text, kind):
    assert insnprice.kind(text) == kind


def table(**ns):
    prims = dict(alu=1, load=2, call=10, locked_rmw=3, cli_sti=4, rdtsc=5, pause=6, pushf=9,
                 poll_wake_rtt=100)
    prims.update(ns)
    return {"accel": "kvm", "prims": {p: {"ns_p50": float(v)} for p, v in prims.items()}}


def test_prices_come_from_the_tables_primitives():
    k = insnprice.kind_ns(table())
    assert k == {"alu": 1, "load": 2, "locked": 3, "call": 5, "cli_sti": 2, "pushf": 7,
                 "rdtsc": 5, "pause": 6}
    # PUSHF's own price is the primitive less the POP it includes, never below an ALU op
    assert insnprice.kind_ns(table(pushf=1.5))["pushf"] == 1
    bad = table()
    del bad["prims"]["call"]
    with pytest.raises(costtable.CostTableError, match="'call'"):
        insnprice.kind_ns(bad)


def test_a_profile_priced_and_reported():
    insns = [("f", 1, "mov    0x8(%rdi),%rax"), ("f", 2, "call   3 <g>"), ("g", 3, "ret"),
             ("g", 4, "lock orl $0x1,(%rax)"), ("h", 5, "add    $1,%rax")]
    path, by_kind, by_fn = insnprice.price({1: 2.0, 2: 1.0, 3: 1.0, 4: 0.5}, insns,
                                           insnprice.kind_ns(table()))
    assert (path, by_kind) == (4 + 5 + 5 + 1.5, {"load": 4, "call": 10, "locked": 1.5})
    assert by_fn == {"f": 9, "g": 6.5}

    def profile(knobs):        # instructions per round trip, by function and by address
        return ({"f": 2.0}, {1: 2.0}) if "spin" in knobs else ({"f": 4.0}, {1: 4.0, 2: 1.0})
    rows = insnprice.estimate(table(), profile=profile, insns=lambda: insns)
    assert [(name, n, path, hand) for name, n, path, hand, _, _ in rows] == [
        ("floor", 2.0, 4, 100), ("idle=poll", 4.0, 13, 100), ("idle=haltpoll", 4.0, 13, 100)]
    lines = insnprice.report(rows, "a table")
    assert "estimated idle=poll / floor 1.09 (goal 3)" in lines[-3]
    assert lines[-2].startswith("idle=poll's path by kind: load 0.0 us, call 0.0 us")


def test_bad_input_is_one_line_and_its_exit_code(tmp_path, capsys, monkeypatch):
    assert insnprice.main(["--costs", str(tmp_path)]) == EXIT_USAGE
    assert "no cost table" in capsys.readouterr().err
    (tmp_path / "meta.json").write_text("{")
    assert insnprice.main(["--costs", str(tmp_path)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "not a meta.json" in err and err.count("\n") == 1
    (tmp_path / "meta.json").write_text(json.dumps({"cost_table": table()}))
    monkeypatch.setattr(insnprice, "estimate", lambda t, **kw: [])
    assert insnprice.main(["--costs", str(tmp_path)]) == EXIT_OK
    assert insnprice.main(["--costs", str(tmp_path / "meta.json")]) == EXIT_OK  # the file
    assert insnprice.main(["--costs", str(tmp_path), "--build", str(tmp_path)]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"wakepath-estimate: --build: no idlelab.elf in {tmp_path} (a kernel's build folder)\n")
    monkeypatch.setattr(qemu, "kvm_usable", lambda: False)
    assert insnprice.main(["--accel", "kvm"]) == EXIT_NO_KVM
    assert insnprice.main(["--bogus"]) == EXIT_USAGE


def test_the_recorded_ring0_costs_price_every_kind():
    """docs/ring0-costs-kvm-20261130.json (platform-notes' KVM figures, which the notebook's
    estimate for KVM uses) holds every primitive the estimate needs."""
    table = insnprice.folder_table(os.path.join(qemu.TOP, "docs",
                                                "ring0-costs-kvm-20261130.json"))
    k = insnprice.kind_ns(table)
    assert table["accel"] == "kvm" and k["call"] > k["load"] > k["alu"] > 0


@pytest.mark.parametrize("text, why", [
    ('{"cost_table": {"prims": {"alu": 313}}}', "'alu' is not an object with ns_p50"),
    ('{"cost_table": {"prims": []}}', "no cost table in it"),
    ('{"cost_table": "prims"}', "no cost table in it"),
    ('{"cost_table": {"prims": {"alu": {"ns_p50": "313"}}}}', "'alu' ns_p50 is '313'"),
])
def test_a_hand_written_table_is_refused_in_one_line(tmp_path, capsys, text, why):
    f = tmp_path / "costs.json"
    f.write_text(text)
    assert insnprice.main(["--costs", str(f)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1 and "Traceback" not in err
    assert insnprice.main(["--costs", str(tmp_path / "none")]) == EXIT_USAGE
    assert "no such file or folder" in capsys.readouterr().err


def test_another_builds_kernel_is_priced(tmp_path, monkeypatch):
    """--build: the other build's 32-bit image is what boots and its ELF is what names the
    addresses (nm) and what is disassembled (objdump), not this tree's."""
    build = tmp_path / "build"
    build.mkdir()
    for name in ("idlelab.elf", "idlelab32.elf"):
        (build / name).write_text("")
    booted, read = [], []

    def boot_counted(knobs, iters, plugin_args, *_, kernel=None, **__):
        booted.append(kernel)
        for key in ("out=", "profile="):        # the marks and the profile, both empty
            with open(plugin_args.split(key)[1].split(",")[0], "w") as f:
                f.write("")
        return 1

    def run(argv, **kw):
        read.append((argv[0], argv[-1]))
        return subprocess.CompletedProcess(argv, 0, stdout="", stderr="")

    monkeypatch.setattr(insnprice.insncount, "boot_counted", boot_counted)
    monkeypatch.setattr(insnprice.insncount, "analyse",       # the empty marks: a clean count
                        lambda marks, ids, rts, spin: insnprice.insncount.Count(rts, 0, 0))
    monkeypatch.setattr(insnprice.insnprofile.subprocess, "run", run)
    monkeypatch.setattr(insnprice, "estimate",
                        lambda t, profile, insns: [profile("k"), insns()] and [])
    f = tmp_path / "meta.json"
    f.write_text(json.dumps({"cost_table": table()}))
    assert insnprice.main(["--costs", str(f), "--build", str(build)]) == EXIT_OK
    assert booted == [str(build / "idlelab32.elf")]
    assert read == [("nm", str(build / "idlelab.elf")), ("objdump", str(build / "idlelab.elf"))]


def test_a_real_estimate_under_tcg(capsys):
    """The cost table measured now under TCG, the three profiles taken: every row priced,
    the path dearer than the floor's, the goals' ratios printed (not judged: an estimate)."""
    assert insnprice.main(["--accel", "tcg"]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    rows = {ln.split()[0]: [float(x) for x in ln.split()[1:]] for ln in out[2:5]}
    assert set(rows) == {"floor", "idle=poll", "idle=haltpoll"}
    assert rows["idle=poll"][1] > rows["floor"][1] > 0
    assert all(r[3] == pytest.approx(r[1] + r[2], abs=0.15) for r in rows.values())
    assert out[5].startswith("estimated idle=poll / floor ")
