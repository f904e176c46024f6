"""The cost table (bench=exits) as the harness reads it, and time values written in its
terms (`timer+300us`), which place a sweep by this machine's own speed."""
import pytest

from idlelab import costtable
from idlelab.costtable import render
from idlelab.bench import matrix


OUTPUT = """\
@idlelab bench name=exits prim=alu ns_p50=540.671 ns_p90=737.279 n=50 ops_per_sample=1024
@idlelab bench name=exits prim=wrmsr_pollctl skipped=1 why="no poll control" n=0
@idlelab bench name=exits prim=timer ns_p50=654311.423 ns_p90=671088.639 n=50 timer=tsc_deadline
@idlelab bench name=sched prim=timer ns_p50=1 n=1
"""


def table():
    return {"accel": "kvm", "iters": 50, "prims": costtable.parse(OUTPUT)}


def test_parse_keeps_each_primitive_and_skips():
    prims = costtable.parse(OUTPUT)
    assert set(prims) == {"alu", "wrmsr_pollctl", "timer"}     # not bench=sched's records
    assert prims["timer"]["ns_p50"] == 654311.423 and prims["timer"]["n"] == 50
    assert prims["wrmsr_pollctl"]["skipped"] == "1"


@pytest.mark.parametrize("value, resolved", [
    ("timer+300us", "954us"), ("timer", "654us"), ("timer*2", "1309us"),
    ("timer*0.5+1ms", "1327us"), ("alu+10ns", "1us"),       # never below 1 us
    ("250us", "250us"), ("0x2", "0x2"), ("halt", "halt"),  # not an expression: unchanged
    ("nosuch+300us", "nosuch+300us"),                      # not a primitive: left to the knob check
])
def test_resolve(value, resolved):
    assert costtable.resolve(value, table()) == resolved


def test_a_skipped_or_missing_primitive_cannot_place_a_sweep():
    with pytest.raises(costtable.CostTableError, match="wrmsr_pollctl.*no poll control"):
        costtable.resolve("wrmsr_pollctl+1us", table())
    with pytest.raises(costtable.CostTableError, match="ipi_halt_rtt"):
        costtable.resolve("ipi_halt_rtt*2", table())


def test_resolve_run_keeps_the_name_and_resolves_the_knob(tmp_path):
    m = tmp_path / "m.txt"
    m.write_text("p: workload=periodic duration=1s guest.period=timer+300us,100us\n")
    runs = matrix.load(str(m))
    assert costtable.needs_table(runs)
    a, b = [costtable.resolve_run(r, table()) for r in runs]
    assert (a.name, a.guest["period"]) == ("p-period=timer+300us", "954us")
    assert b is runs[1]                                      # nothing to resolve


def test_markdown_lists_every_primitive_in_order():
    lines = render.markdown(table())
    rows = [ln.split("|")[1].strip() for ln in lines if ln.startswith("| ") and "---" not in ln]
    assert rows[1:] == list(costtable.PRIMS)
    assert any("wrmsr_pollctl | skipped" in ln for ln in lines)
    assert render.markdown({"error": "boom"})[0].endswith("boom")
    assert render.markdown(None) == []


def test_markdown_gives_the_kernels_wake_path_where_counted():
    path = {"knobs": "idle=halt", "user": 144.0, "wake": 154.8, "block": 78.0, "enter": 38.0,
            "run": 79.5}
    lines = render.markdown(dict(table(), path_insns=path))
    assert lines[-2] == ("The kernel's wake path, guest instructions per pingpong round trip "
                         "under TCG (idle=halt): user 144, wake 155, block 78, enter 38, "
                         "run 80 (494 in all).")
    lines = render.markdown(dict(table(), path_insns={"error": "no plugin"}))
    assert lines[-2] == "The kernel's wake path could not be counted: no plugin"
    assert not any("wake path" in ln for ln in render.markdown(table()))


def test_markdown_says_how_the_vcpu_threads_halts_split_or_why_not():
    t = dict(table(), threads={
        "halts": 12, "lost": 3, "vcpus": 2,
        "thread_halt": {"ns_p50": 30000.0, "ns_p90": 52000.0, "n": 12},
        "thread_wake": {"ns_p50": 8000.0, "ns_p90": 9000.0, "n": 12},
        "thread_entry": {"ns_p50": 61500.0, "ns_p90": 70000.0, "n": 12},
        "rewakes": 2, "rewake_ppm": 1234.5})
    line = next(ln for ln in render.markdown(t) if ln.startswith("Its vCPU threads"))
    assert "12 that slept" in line and "thread_halt 30.0 us (p90 52.0)" in line
    assert "thread_entry 61.5 us (p90 70.0)" in line and "3 trace events lost" in line
    assert "2 woken and asleep again without entering, on a CPU 0.12 % of the time" in line
    t["threads"] = {"why": "no KVM host to trace (TCG)"}
    assert render.markdown(t)[-2] == ("Its vCPU threads' halts were not split by the host's "
                                       "scheduler: no KVM host to trace (TCG)")
    assert not any(ln.startswith("Its vCPU") for ln in render.markdown(table()))


def test_markdown_says_the_kvm_parameters_of_the_boots():
    params = {"values": {"halt_poll_ns": 1000000000, "halt_poll_ns_grow": 1}, "set": True}
    text = "\n".join(render.markdown(dict(table(), host_params=params)))
    assert "kvm parameters halt_poll_ns=1000000000 halt_poll_ns_grow=1, set for them" in text
    params = {"values": {"halt_poll_ns": 200000}, "set": False, "why": "read-only here: x"}
    text = "\n".join(render.markdown(dict(table(), host_params=params)))
    assert "the host's kvm parameters (halt_poll_ns=200000): read-only here: x." in text
    assert "kvm parameters" not in "\n".join(render.markdown(table()))


def test_the_arms_of_a_boots_windows_are_resolved_with_its_run():
    """boot= rows in the cost table's terms (seed 000's and 002's placed windows) take turns
    with the others: every arm's guest value and host window is a time before the boot."""
    runs = matrix.parse("a: boot=b workload=pingpong duration=1s halt_poll_ns=global:0 "
                        "guest.haltpoll.guest_halt_poll_ns=100us\n"
                        "c: boot=b workload=pingpong duration=1s halt_poll_ns=global:timer*2 "
                        "guest.haltpoll.guest_halt_poll_ns=timer+300us\n")
    assert costtable.needs_table(runs)
    (run,) = [costtable.resolve_run(r, table()) for r in runs]
    a, c = run.windows.arms
    assert (a.host_params, c.host_params) == ({"halt_poll_ns": 0},
                                             {"halt_poll_ns": 1308623})
    assert c.guest == {"haltpoll.guest_halt_poll_ns": "954us"}
    assert run.windows.for_boot(1).guest_line(2) == "haltpoll.guest_halt_poll_ns=954us"
    assert runs[0].windows.arms[1].host_params == {"halt_poll_ns": "timer*2"}   # kept as written
    assert not costtable.needs_table(matrix.parse(
        "a: boot=b workload=idle duration=1s halt_poll_ns=global:0\n"
        "c: boot=b workload=idle duration=1s halt_poll_ns=global:1ms\n"))
