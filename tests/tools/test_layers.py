"""The layering of the sources, checked from their #include lines.

Arrows point down only (docs/architecture.md): boot and drivers and arch/x86 know nothing
of the kernel; the pure policy in kernel/policy/ includes nothing but itself, the knobs
(kernel/knobs/) and lib/, and the knobs nothing but lib/ (so the host tests and tools
compile them unchanged); nothing below the workloads and self tests names
them; and no two modules include each other, directly or through others.
"""
import os
import re

from conftest import TOP

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_DIRS = ("boot", "arch", "drivers", "kernel", "lib")


def sources():
    for d in SOURCE_DIRS:
        for root, _, files in os.walk(os.path.join(TOP, d)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(root, f), TOP)


def includes():
    """{file: [included paths]} for every C source of the kernel."""
    out = {}
    for path in sources():
        with open(os.path.join(TOP, path), encoding="utf-8") as f:
            out[path] = INCLUDE.findall(f.read())
    return out


def module(path):
    """foo.c and foo.h are one module."""
    return os.path.splitext(path)[0]


def layer(path):
    """The folder that decides what a file may include."""
    for prefix in ("kernel/policy/", "kernel/knobs/", "kernel/workloads/", "kernel/selftest/"):
        if path.startswith(prefix):
            return prefix.rstrip("/")
    return path.split("/")[0] if not path.startswith("arch/") else "arch"


# What each layer may include, besides itself.
ALLOWED = {
    "lib": set(),
    "boot": {"lib"},
    "arch": {"lib"},
    "drivers": {"arch", "lib"},
    "kernel/knobs": {"lib"},
    "kernel/policy": {"kernel/knobs", "lib"},
    "kernel": {"kernel/policy", "kernel/knobs", "arch", "drivers", "boot", "lib"},
    "kernel/workloads": {"kernel", "kernel/policy", "kernel/knobs", "arch", "lib"},
    "kernel/selftest": {"kernel", "kernel/policy", "kernel/knobs", "kernel/workloads", "arch",
                        "lib"},
}
# kernel/init.c starts the run the knobs choose: the one place the core names what sits above.
# The knob table takes haltpoll's defaults from the governor, where Linux's values are defined.
UPWARD_OK = {("kernel/init.c", "kernel/workloads"), ("kernel/init.c", "kernel/selftest"),
             ("kernel/knobs/knob_table.h", "kernel/policy")}


def layering_violations(incs):
    wrong = []
    for path, names in incs.items():
        mine = layer(path)
        for inc in names:
            theirs = layer(inc)
            if theirs != mine and theirs not in ALLOWED[mine] \
                    and (path, theirs) not in UPWARD_OK:
                wrong.append(f"{path} includes {inc} ({mine} -> {theirs})")
    return wrong


def include_cycles(incs):
    graph = {}
    for path, names in incs.items():
        graph.setdefault(module(path), set()).update(
            module(i) for i in names if module(i) != module(path))
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_every_include_points_down():
    wrong = layering_violations(includes())
    assert not wrong, "\n".join(wrong)


def test_no_include_cycle_between_modules():
    cycles = include_cycles(includes())
    assert not cycles, "include cycles:\n" + "\n".join(cycles)


def test_the_checks_catch_what_they_exist_for():
    """Both checks must be able to fail: a made-up tree with one fault of each kind."""
    planted = {
        "arch/x86/trap.c": ["arch/x86/trap.h", "kernel/printk.h"],
        "kernel/policy/haltpoll.c": ["kernel/policy/haltpoll.h", "arch/x86/cpu.h"],
        "kernel/sched.c": ["kernel/timer.h"],
        "kernel/timer.c": ["kernel/percpu.h"],
        "kernel/percpu.h": ["kernel/timer.h"],
        "kernel/init.c": ["kernel/workloads/workload.h"],
    }
    assert layering_violations(planted) == [
        "arch/x86/trap.c includes kernel/printk.h (arch -> kernel)",
        "kernel/policy/haltpoll.c includes arch/x86/cpu.h (kernel/policy -> arch)",
    ]
    assert include_cycles(planted) == ["kernel/percpu -> kernel/timer -> kernel/percpu"]
