"""The harness's package structure, checked from its import statements (tools/idlelab/).

No two modules import each other, directly or through others: every import counts, a lazy
one inside a function too (such an import once hid the circle neighbour -> hostload ->
progress -> matrix -> neighbour). And the modules meant pure do no I/O: they import no
module that reaches processes, sockets or devices, use `os` only for paths and the CPU
count, name no /proc or /sys path (a string that is one: prose that mentions one, as a
runs.csv column's meaning does, reads nothing), open no file to write, write nothing to the
terminal, and import only other pure modules (so nothing they call does I/O behind them).
"""
import ast
import importlib
import os

from conftest import TOP

PKG_DIR = os.path.join(TOP, "tools", "idlelab")
# The pure derivations (derive/): the records, a run's results and whose fault a late
# wake-up was from the guest's output; a record's row; KVM deltas; the accuracy rule. The cost
# table's figures with the values in its terms, and its markdown. And the matrix format (with
# each run's guest command line), its values and a boot's plan of windows, and the tables
# laid out from rows.
PURE = ("idlelab.derive.", "idlelab.costtable", "idlelab.costtable.render",
        "idlelab.costtable.pooling",
        "idlelab.bench.matrix", "idlelab.bench.matrixvalues", "idlelab.bench.windowplan",
        "idlelab.report.tables",
        "idlelab.report.layouts.", "idlelab.replay.schedule", "idlelab.replay.predict")
# The root package only defines TOP (a path).
PURE_ROOT = "idlelab"
IO_MODULES = {"subprocess", "socket", "ctypes", "mmap", "fcntl", "signal", "select",
              "threading", "multiprocessing", "resource", "shutil", "tempfile", "time",
              "urllib", "http", "asyncio"}
OS_ALLOWED = {"path", "cpu_count", "sep"}


def modules():
    """{dotted name: source} of every module of the package."""
    out = {}
    for root, _, files in os.walk(PKG_DIR):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), os.path.dirname(PKG_DIR))
                name = rel[:-3].replace(os.sep, ".")
                name = name[:-len(".__init__")] if name.endswith(".__init__") else name
                with open(os.path.join(root, f), encoding="utf-8") as src:
                    out[name] = src.read()
    return out


def imports(source, known):
    """(idlelab modules, other top-level modules) a source imports, anywhere in it."""
    ours, others = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                (ours if a.name.split(".")[0] == "idlelab" else others).add(
                    a.name if a.name.split(".")[0] == "idlelab" else a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "idlelab":
                others.add(node.module.split(".")[0])
                continue
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                ours.add(sub if sub in known else node.module)
        elif isinstance(node, ast.ImportFrom):
            ours.add("relative import (use idlelab.<package>.<module>)")
    return ours, others


def graph(mods):
    return {name: imports(src, mods)[0] - {name} for name, src in mods.items()}


def cycles(g):
    state, found = {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(g.get(node, ())):
            if state.get(nxt) == "open":
                found.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(g):
        if node not in state:
            visit(node, [node])
    return found


def is_pure(name):
    return name == PURE_ROOT or any(name == p or (p.endswith(".") and name.startswith(p))
                                    for p in PURE)


def impurities(name, source, known):
    """What makes a module meant pure do (or reach) I/O, one line each."""
    wrong = []
    ours, others = imports(source, known)
    wrong += [f"{name} imports {m}" for m in sorted(others & IO_MODULES)]
    wrong += [f"{name} imports {m}, which is not pure" for m in sorted(ours)
              if not is_pure(m)]
    tree = ast.parse(source)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if id(node) in docstrings:
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "os" and node.attr not in OS_ALLOWED:
            wrong.append(f"{name} calls os.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith(("/proc", "/sys/")):
            wrong.append(f"{name} names {node.value!r} (line {node.lineno})")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "print" or isinstance(node, ast.Attribute) \
                and isinstance(node.value, ast.Name) and node.value.id == "sys" \
                and node.attr in ("stdout", "stderr"):
            wrong.append(f"{name} writes to the terminal (line {node.lineno})")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "open":
            modes = [a for a in node.args[1:2]] + [k.value for k in node.keywords
                                                    if k.arg == "mode"]
            if any(not (isinstance(m, ast.Constant) and m.value in ("r", "rt")) for m in modes):
                wrong.append(f"{name} opens a file to write (line {node.lineno})")
    return sorted(wrong)


def test_no_import_cycle_between_modules():
    found = cycles(graph(modules()))
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_pure_modules_do_no_io():
    mods = modules()
    pure = [n for n in mods if is_pure(n)]
    assert {"idlelab.derive.records", "idlelab.derive.guestrun", "idlelab.derive.latewake",
            "idlelab.derive.runrow", "idlelab.derive.kvmdelta", "idlelab.derive.tolerance",
            "idlelab.derive.kvmtrace", "idlelab.derive.effects", "idlelab.costtable",
            "idlelab.costtable.render", "idlelab.bench.matrix", "idlelab.bench.matrixvalues",
            "idlelab.report.tables",
            "idlelab.report.layouts.seed003", "idlelab.report.layouts.seed004"} <= set(pure)
    assert not is_pure("idlelab.costtable.measure")
    wrong = [w for n in sorted(pure) for w in impurities(n, mods[n], mods)]
    assert not wrong, "\n".join(wrong)


def test_one_import_root():
    """Every module imports the package by its one root, `idlelab` (a relative import or a
    second root such as tools.idlelab would load a second copy of a module)."""
    mods = modules()
    wrong = [f"{n}: {m}" for n, src in mods.items() for m in imports(src, mods)[0]
             if not (m == "idlelab" or m.startswith("idlelab."))]
    assert not wrong, "\n".join(wrong)


def test_every_layout_is_found_by_its_matrix_id():
    """report/tables loads a seed's layout by its matrix id: each id names a module that
    lays out that matrix, and every layout module is reachable."""
    from idlelab.report import tables
    on_disk = {f[:-3] for f in os.listdir(os.path.join(PKG_DIR, "report", "layouts"))
               if f.endswith(".py") and f != "__init__.py"}
    assert set(tables.LAYOUTS) == on_disk
    for mid in tables.LAYOUTS:
        assert tables.layout(mid).MATRIX == mid
    assert tables.layout("my-matrix") is None
    mod = importlib.import_module("idlelab.report.layouts.seed000")
    assert tables.layout("seed000") is mod


def test_the_checks_catch_what_they_exist_for():
    """Both checks must be able to fail: a made-up package with one fault of each kind."""
    planted = {"idlelab.a": {"idlelab.b"}, "idlelab.b": {"idlelab.c"},
               "idlelab.c": {"idlelab.a"}, "idlelab.d": {"idlelab.a"}}
    assert cycles(planted) == ["idlelab.a -> idlelab.b -> idlelab.c -> idlelab.a"]
    lazy = "def f():\n    from idlelab.host import qemu\n"
    assert imports(lazy, {"idlelab.host.qemu"})[0] == {"idlelab.host.qemu"}
    known = {"idlelab.derive.x", "idlelab.host.qemu", "idlelab.derive.runrow"}
    src = ("import subprocess\nimport os\nfrom idlelab.host import qemu\n"
           "from idlelab.derive import runrow\n"
           "def f():\n    os.listdir('/proc/self/task')\n"
           "    open('out.csv', 'w')\n    open('in.txt')\n    os.path.join('a', 'b')\n"
           "    print('said', file=sys.stderr)\n"
           "    return 'the load, from /proc/stat'\n")
    assert impurities("idlelab.derive.x", '"""Reads /proc."""\n' + src, known) == [
        "idlelab.derive.x calls os.listdir (line 7)",
        "idlelab.derive.x imports idlelab.host.qemu, which is not pure",
        "idlelab.derive.x imports subprocess",
        "idlelab.derive.x names '/proc/self/task' (line 7)",
        "idlelab.derive.x opens a file to write (line 8)",
        "idlelab.derive.x writes to the terminal (line 11)",
        "idlelab.derive.x writes to the terminal (line 11)",
    ]
