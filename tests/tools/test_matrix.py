"""The experiment-matrix format: good files, sweeps, and errors that name file:line."""
import os
import re
import types

import pytest

from conftest import TOP
from idlelab.bench import matrix, matrixvalues
from idlelab.report.layouts import linux as peers
from idlelab.bench.matrix import MatrixError, parse

GOOD = """\
# IPI ping-pong at three periods, with and without host polling
defaults: smp=2 duration=5s repeat=3 guest.verbose=0

pingpong: workload=pingpong guest.period=50us,100us,200us halt_poll_ns=0,200us   # 6 runs
idle:     workload=idle duration=20s halt_poll_ns=global:400us host_shrink=0 host_grow=4
defaults: smp=4 machine=q35
big:      workload=idle host_grow_start=20us accel=tcg
"""


def test_good_file():
    runs = parse(GOOD, "m.txt")
    assert [r.name for r in runs] == [
        "pingpong-period=50us-halt_poll_ns=0", "pingpong-period=50us-halt_poll_ns=200us",
        "pingpong-period=100us-halt_poll_ns=0", "pingpong-period=100us-halt_poll_ns=200us",
        "pingpong-period=200us-halt_poll_ns=0", "pingpong-period=200us-halt_poll_ns=200us",
        "idle", "big"]
    pp = runs[1]
    assert (pp.where, pp.workload, pp.duration_ns, pp.repeat, pp.smp, pp.machine, pp.accel) \
        == ("m.txt:4", "pingpong", 5_000_000_000, 3, 2, "microvm", "kvm")
    assert pp.vm_halt_poll_ns == 200_000 and pp.host_params == {}
    assert pp.cmdline() == "verbose=0 period=50us"
    assert pp.sweep == {"guest.period": "50us", "halt_poll_ns": "200us"}
    idle = runs[6]
    assert idle.duration_ns == 20_000_000_000 and idle.vm_halt_poll_ns is None
    assert idle.host_params == {"halt_poll_ns": 400_000, "halt_poll_ns_shrink": 0,
                                "halt_poll_ns_grow": 4}
    big = runs[7]
    assert (big.smp, big.machine, big.accel, big.repeat) == (4, "q35", "tcg", 3)
    assert big.host_params == {"halt_poll_ns_grow_start": 20_000}
    assert big.settings["halt_poll_ns"] == "host"


def test_defaults_without_a_sweep_and_builtin_defaults():
    (r,) = parse("r: workload=w duration=1ms", "m")
    assert (r.name, r.smp, r.repeat, r.machine, r.accel, r.vm_halt_poll_ns, r.host_params,
            r.guest, r.sweep) == ("r", 2, 1, "microvm", "kvm", None, {}, {}, {})


def test_sweep_in_defaults_multiplies_every_run_below():
    runs = parse("defaults: duration=1s halt_poll_ns=0,global:0\n"
                 "a: workload=x smp=1,2\n"
                 "b: workload=y halt_poll_ns=host\n", "m")
    assert [r.name for r in runs] == [
        "a-halt_poll_ns=0-smp=1", "a-halt_poll_ns=0-smp=2",
        "a-halt_poll_ns=global_0-smp=1", "a-halt_poll_ns=global_0-smp=2", "b"]
    assert runs[2].host_params == {"halt_poll_ns": 0} and runs[2].vm_halt_poll_ns is None
    assert runs[0].vm_halt_poll_ns == 0


def test_time_units():
    assert [matrixvalues.parse_time(t) for t in ("7", "7ns", "7us", "7ms", "7s")] == \
        [7, 7, 7_000, 7_000_000, 7_000_000_000]


def test_a_time_without_a_unit_is_ns_for_every_key():
    """The kernel's rule (kernel/knobs/parse.c: no unit, ns) in every time of a matrix."""
    (r,) = parse("r: workload=w duration=5000000 stall=1@1000000+2000000 "
                 "halt_poll_ns=200000", "m")
    assert (r.duration_ns, r.stall, r.vm_halt_poll_ns) == (
        5_000_000, matrixvalues.Stall(vcpu=1, offset_ns=1_000_000, duration_ns=2_000_000), 200_000)
    assert matrix.guest_cmdline(r).startswith("workload=w duration=5000000 ")
    assert [r.duration_ns for r in parse("a: workload=w duration=1ms,3600s", "m")] == \
        [1_000_000, 3_600_000_000_000]


def test_guest_knobs_checked_against_the_kernel_table():
    knobs = matrix.guest_knob_names()
    assert {"help", "verbose", "boot_timeout"} <= knobs
    (r,) = parse("r: workload=w duration=1s guest.boot_timeout=2s", "m", guest_knobs=knobs)
    assert r.cmdline() == "boot_timeout=2s"


def test_load_names_errors_after_the_file(tmp_path):
    path = tmp_path / "matrix.txt"
    path.write_text("a: workload=x duration=1s\n\nb: workload=x duration=1s smpp=2\n")
    with pytest.raises(MatrixError, match=re.escape(f"{path}:3: unknown key 'smpp' "
                                                     "(did you mean 'smp'?)")):
        matrix.load(str(path))


KNOBS = {"period", "verbose"}
BAD = [
    ("a: workload=x duration=1s peroid=5",
     "matrix.txt:1: unknown key 'peroid' (did you mean 'guest.period'?)"),
    ("a: workload=x duration=1s guest.peroid=5",
     "matrix.txt:1: unknown guest knob 'peroid' (did you mean 'period'?)"),
    ("# c\na: workload=x duration=1s smpp=2", "matrix.txt:2: unknown key 'smpp' (did you mean"),
    ("a workload=x", "matrix.txt:1: expected 'name: key=value ...'"),
    ("a: workload=x duration", "matrix.txt:1: expected key=value, got 'duration'"),
    ("a: workload=x =1", "matrix.txt:1: expected key=value, got '=1'"),
    ("a: workload=x duration=", "matrix.txt:1: duration: empty value"),
    ("a: workload=x duration=1s,,2s", "matrix.txt:1: duration: empty value"),
    ("a: workload=x duration=1s,1s", "matrix.txt:1: duration: a value repeats"),
    ("a: workload=x duration=1s smp=2 smp=3", "matrix.txt:1: key 'smp' given twice"),
    ("a: workload=x duration=300", "matrix.txt:1: duration=300: expected a duration in "
     "1ms..3600s (read as 300 ns: a time without a unit is in ns, as the kernel reads it)"),
    ("a: workload=x duration=0s", "matrix.txt:1: duration=0s: expected a duration in "
     "1ms..3600s"),
    ("a: workload=x duration=999999", "matrix.txt:1: duration=999999: expected a duration in "
     "1ms..3600s (read as 999999 ns"),
    ("a: workload=x duration=3601s", "matrix.txt:1: duration=3601s: expected a duration in "
     "1ms..3600s"),
    ("a: workload=x duration=1.5s", "matrix.txt:1: duration=1.5s: expected a time: an integer"),
    ("a: workload=X duration=1s", "matrix.txt:1: workload=X: expected a name"),
    ("a: workload=x duration=1s smp=0", "matrix.txt:1: smp=0: expected an integer in 1..64"),
    ("a: workload=x duration=1s smp=two", "matrix.txt:1: smp=two: expected an integer"),
    ("a: workload=x duration=1s repeat=0", "matrix.txt:1: repeat=0: expected an integer"),
    ("a: workload=x duration=1s machine=isapc", "matrix.txt:1: machine=isapc: expected one of"),
    ("a: workload=x duration=1s accel=auto", "matrix.txt:1: accel=auto: expected one of kvm"),
    ("a: workload=x duration=1s halt_poll_ns=lots", "matrix.txt:1: halt_poll_ns=lots: expected"
     " 'host', a time (per VM) or 'global:<time>'"),
    ("a: workload=x duration=1s halt_poll_ns=5s", "matrix.txt:1: halt_poll_ns=5s: expected "
     "'host'"),
    ("a: workload=x duration=1s halt_poll_ns=global:x", "matrix.txt:1: halt_poll_ns=global:x:"),
    ("a: workload=x duration=1s host_shrink=-1", "matrix.txt:1: host_shrink=-1: expected an "
     "integer in 0..4294967295"),
    ("a: workload=x duration=1s host_grow_start=1h", "matrix.txt:1: host_grow_start=1h"),
    ("a: workload=x duration=1s guest.=1", "matrix.txt:1: bad guest knob name ''"),
    ("\n\na: workload=x", "matrix.txt:3: run 'a' has no duration"),
    ("a: duration=1s", "matrix.txt:1: run 'a' has no workload"),
    ("a: workload=x duration=1s\n\n\na: workload=y duration=1s",
     "matrix.txt:4: run name 'a' already used at matrix.txt:1"),
    ("a: workload=x duration=1s smp=3,2\na: workload=x duration=1s smp=1,2",
     "matrix.txt:2: run name 'a-smp=2' already used at matrix.txt:1"),
    ("defaults: smpp=1\na: workload=x duration=1s", "matrix.txt:1: unknown key 'smpp'"),
    ("defaults: smp=1\n# nothing else\n", "matrix.txt:2: no runs in the matrix"),
    ("a: workload=x duration=1s stall=1@100ms", "matrix.txt:1: stall=1@100ms: expected 'none' "
     "or VCPU@OFFSET+DURATION, e.g. 1@100ms+300ms"),
    ("a: workload=x duration=1s stall=yes", "matrix.txt:1: stall=yes: expected 'none' or"),
    ("a: workload=x duration=1s stall=-1@1ms+1ms", "matrix.txt:1: stall=-1@1ms+1ms: expected"),
    ("a: workload=x duration=1s stall=1@100x+300ms", "matrix.txt:1: stall=1@100x+300ms: "
     "expected VCPU@OFFSET+DURATION with OFFSET and DURATION a time"),
    ("a: workload=x duration=1s stall=1@100ms+0.3s", "matrix.txt:1: stall=1@100ms+0.3s: "
     "expected VCPU@OFFSET+DURATION with OFFSET and DURATION"),
    ("a: workload=x duration=1s stall=1@100ms+0ms", "matrix.txt:1: stall=1@100ms+0ms: expected "
     "a stall DURATION above 0"),
    ("a: workload=x duration=1s stall=2@100ms+300ms", "matrix.txt:1: stall=2@100ms+300ms: run "
     "'a' has no vCPU 2 (smp=2: vCPUs 0..1)"),
    ("defaults: stall=1@1ms+1ms\n\na: workload=x duration=1s smp=1",
     "matrix.txt:3: stall=1@1ms+1ms: run 'a' has no vCPU 1 (smp=1: vCPUs 0..0)"),
    # A value a defaults line sets is reported there, unless a later line made it wrong.
    ("defaults: duration=7200s\n# runs\na: workload=x", "matrix.txt:1: duration=7200s: "
     "expected a duration in 1ms..3600s"),
    ("defaults: workload=x duration=1s stall=0@900ms+300ms\n\na:\n",
     "matrix.txt:1: stall=0@900ms+300ms: run 'a' would stall until 1200 ms"),
    ("defaults: stall=1@1ms+1ms\ndefaults: smp=1\na: workload=x duration=1s",
     "matrix.txt:2: stall=1@1ms+1ms: run 'a' has no vCPU 1"),
    ("defaults: pin=0\n\na: workload=x duration=1s", "matrix.txt:1: pin=0: run 'a' has 2 vCPUs"),
    ("a: workload=x duration=1s alone=1", "matrix.txt:1: alone=1: run 'a' pins no vCPU"),
    ("a: workload=x duration=1s pin=0+0 alone=1", "matrix.txt:1: alone=1: run 'a' needs vCPU "
     "1 below smp=2 and pinned to a host CPU no other vCPU shares"),
    ("a: workload=x duration=1s pin=0+1 alone=2", "matrix.txt:1: alone=2: run 'a' needs vCPU 2"),
    ("a: workload=x duration=1s pin=0+1 alone=one", "matrix.txt:1: alone=one: expected 'none' "
     "or a vCPU number"),
    ("defaults: linux_kernel=debian\n\na: workload=x duration=1s",
     "matrix.txt:1: linux_kernel=debian: run 'a' boots guest=idlelab"),
    ("defaults: linux_kernel=debian\n\na: workload=x duration=1s guest=idlelab",
     "matrix.txt:3: linux_kernel=debian: run 'a' boots guest=idlelab"),
    ("a: workload=x duration=1s stall=1@800ms+300ms", "matrix.txt:1: stall=1@800ms+300ms: run "
     "'a' would stall until 1100 ms into its window, past duration=1s (1000 ms)"),
    ("a: workload=x duration=1s,500ms stall=0@200ms+300ms+1", "matrix.txt:1: "
     "stall=0@200ms+300ms+1: expected"),
    ("a: workload=x duration=1s,500ms stall=0@300ms+300ms", "matrix.txt:1: "
     "stall=0@300ms+300ms: run 'a-duration=500ms' would stall until 600 ms"),
    ("a: workload=x duration=1s stall=stal", "matrix.txt:1: stall=stal: expected 'none'"),
    ("", "matrix.txt:1: no runs in the matrix"),
]


@pytest.mark.parametrize("text, message", BAD, ids=[m.split(": ", 1)[1][:40] for _, m in BAD])
def test_errors_name_file_and_line(text, message):
    with pytest.raises(MatrixError) as e:
        parse(text, "matrix.txt", guest_knobs=KNOBS)
    assert str(e.value).startswith(message), str(e.value)
    assert re.match(r"matrix\.txt:\d+: ", str(e.value))


def test_stall_key():
    """stall=VCPU@OFFSET+DURATION: parsed into Run.stall, none (the default) is None, a
    stall may be swept and may end exactly at the end of the window."""
    runs = parse("defaults: workload=pingpong duration=1s\n"
                 "a: stall=1@200ms+300ms\nb: stall=none\nc:\n"
                 "d: smp=4 stall=none,3@0ms+1s\n", "m.txt")
    a, b, c, d0, d1 = runs
    assert a.stall == matrixvalues.Stall(vcpu=1, offset_ns=200_000_000, duration_ns=300_000_000)
    assert a.settings["stall"] == "1@200ms+300ms" and a.cmdline() == ""
    assert b.stall is None and c.stall is None and "stall" not in c.settings
    assert (d0.name, d0.stall) == ("d-stall=none", None)
    assert d1.name == "d-stall=3@0ms+1s" and d1.stall.duration_ns == 1_000_000_000
    assert "stall" in matrix.__doc__ and "stall" in matrixvalues.KEYS


def test_the_docstring_example_parses():
    example = matrix.__doc__.split("One run per line::", 1)[1].split("\n\n")[1]
    runs = parse(example, "doc")
    assert len(runs) == 7 and runs[0].name == "pingpong-period=50us-halt_poll_ns=0"


def test_trace_key():
    runs = parse("defaults: workload=pingpong duration=1s\n"
                 "a: trace=halt_poll_ns\nb: trace=none\nc:\nd: trace=threads\n", "m.txt")
    assert [r.trace for r in runs] == ["halt_poll_ns", None, None, "threads"]
    with pytest.raises(MatrixError, match=r"m.txt:1: trace=kvm_exit: expected one of none, "
                                          r"halt_poll_ns"):
        parse("a: workload=idle duration=1s trace=kvm_exit\n", "m.txt")


def test_a_host_window_in_the_cost_tables_terms_is_placed_by_the_table():
    """halt_poll_ns=global:timer+200us (or per VM) stays an expression until the bench has
    measured the table; resolve_run makes it ns, the run's name and settings keep it."""
    from idlelab import costtable
    g, v = parse("defaults: workload=idle duration=1s\n"
                 "g: halt_poll_ns=global:timer+200us\nv: halt_poll_ns=timer*2\n", "m.txt")
    assert g.host_params == {"halt_poll_ns": "timer+200us"} and v.vm_halt_poll_ns == "timer*2"
    assert costtable.needs_table([g]) and costtable.needs_table([v])
    table = {"prims": {"timer": {"ns_p50": 335544.3}}}
    g2, v2 = (costtable.resolve_run(r, table) for r in (g, v))
    assert g2.host_params == {"halt_poll_ns": 535544} and v2.vm_halt_poll_ns == 671089
    assert g2.settings["halt_poll_ns"] == "global:timer+200us" and g2.name == "g"
    with pytest.raises(MatrixError, match="halt_poll_ns=global:tmier"):
        parse("a: workload=idle duration=1s halt_poll_ns=global:tmier+2us\n", "m.txt")


def test_guest_key_chooses_the_guest_and_defaults_to_idlelab():
    runs = parse("defaults: workload=pingpong duration=1s\n"
                 "a: halt_poll_ns=0\n"
                 "b: guest=linux\n"
                 "c: guest=idlelab,linux\n", "m", guest_knobs=KNOBS)
    assert [(r.name, r.guest_os) for r in runs] == [
        ("a", "idlelab"), ("b", "linux"), ("c-guest=idlelab", "idlelab"),
        ("c-guest=linux", "linux")]
    assert runs[0].settings["guest"] == "idlelab"
    with pytest.raises(MatrixError, match=r"m:1: guest=bsd: expected one of idlelab, linux"):
        parse("a: workload=x duration=1s guest=bsd", "m")


def test_linux_kernel_key_chooses_the_linux_guests_kernel_and_defaults_to_debians():
    runs = parse("defaults: workload=pingpong duration=1s\n"
                 "a: guest=linux\n"
                 "b: guest=linux linux_kernel=debian,haltpoll-gov\n"
                 "c: halt_poll_ns=0\n", "m", guest_knobs=KNOBS)
    assert [(r.name, r.linux_kernel) for r in runs] == [
        ("a", "debian"), ("b-linux_kernel=debian", "debian"),
        ("b-linux_kernel=haltpoll-gov", "haltpoll-gov"), ("c", None)]
    with pytest.raises(MatrixError, match=r"m:1: linux_kernel=mine: expected one of debian, "
                                          r"haltpoll-gov"):
        parse("a: workload=x duration=1s guest=linux linux_kernel=mine", "m")
    # an idlelab run has its own kernel: asking it for Linux's is a mistake, not ignored,
    # named at the defaults line that asks
    with pytest.raises(MatrixError, match=r"m:1: linux_kernel=haltpoll-gov: run 'a' boots "
                                          r"guest=idlelab; linux_kernel= is for guest=linux"):
        parse("defaults: linux_kernel=haltpoll-gov\na: workload=x duration=1s\n", "m")


def test_a_linux_guests_parameters_are_linuxs_but_idlelabs_knobs_are_checked():
    (r,) = parse("a: workload=x duration=1s guest=linux guest.cpuidle.off=1", "m",
                 guest_knobs=KNOBS)
    assert r.cmdline() == "cpuidle.off=1"
    # the same name on an idlelab run is refused, at the line that wrote it
    with pytest.raises(MatrixError, match=r"m:1: unknown guest knob 'cpuidle.off'"):
        parse("defaults: guest.cpuidle.off=1\n\na: workload=x duration=1s\n", "m",
              guest_knobs=KNOBS)
    with pytest.raises(MatrixError, match=r"m:1: unknown guest knob 'peroid'"):
        parse("a: workload=x duration=1s guest=idlelab,linux guest.peroid=1\n", "m",
              guest_knobs=KNOBS)


def test_the_linux_matrix_has_seed_002s_configurations_for_both_guests():
    """Every Linux row has its idlelab peer (the peer table pairs them by name), on each
    Linux kernel; the haltpoll governor's guest-polling rows are the stock rows plus
    idlelab's window; the sweep is one period list for every guest."""
    runs = matrix.load(os.path.join(TOP, "tools", "matrices", "linux.txt"),
                       guest_knobs=matrix.guest_knob_names())
    configs = {}
    # as the report sees a row: config, name, guest; a boot= row's windows are its rows
    for boot in runs:
        for r in matrix.cells(boot):
            row = types.SimpleNamespace(config=matrix.config_of(r), name=r.name,
                                        guest=r.guest_os)
            configs.setdefault(peers.with_part(row), (r, row))
    idl = [c for c, (r, _) in configs.items() if r.guest_os == "idlelab"]
    assert idl == ["floor", "neither", "host-poll", "host-poll.placed", "guest-poll",
                   "guest-poll.placed", "guest-msr", "both", "sweep"]
    # the guest's window alone tells the guest-poll rows apart: idlelab and Linux's haltpoll
    # governor switch it between windows, so each guest's pair takes turns in the same boots
    shared = {tuple(sorted(r.name for r in matrix.cells(b))) for b in runs
              if b.windows is not None}
    assert ("guest-poll", "guest-poll.placed") in shared
    assert ("linux-hpgov-guest-poll", "linux-hpgov-guest-poll.placed") in shared
    for c, (r, row) in configs.items():
        if r.guest_os == "linux":
            assert peers.base(row) in idl, c
    configs = {c: r for c, (r, _) in configs.items()}
    stock = {c: r for c, r in configs.items() if r.linux_kernel == "debian"}
    hp = {c: r for c, r in configs.items() if r.linux_kernel == "haltpoll-gov"}
    assert {"linux-hpgov-floor", "linux-hpgov-guest-poll", "linux-hpgov-guest-msr",
            "linux-hpgov-sweep"} <= set(hp)
    for name in ("guest-poll", "guest-msr"):
        twin, r = stock[f"linux-{name}"], hp[f"linux-hpgov-{name}"]
        assert r.settings["halt_poll_ns"] == twin.settings["halt_poll_ns"]
        assert r.guest == dict(twin.guest, **{"haltpoll.guest_halt_poll_ns": "300us"})
    periods = {r.guest.get("period") for r in runs if r.workload == "periodic"}
    assert len(periods) == 4 and all(p.startswith("timer+") for p in periods)
    assert all(r.smp == 2 for r in runs)


def test_alone_key():
    """alone=VCPU keeps that vCPU's pinned host CPU for it alone; none is the default."""
    a, b = parse("defaults: workload=periodic duration=1s pin=0+1\na: alone=1\nb:\n", "m.txt")
    assert (a.alone, a.pin, b.alone) == (1, (0, 1), None)
    assert "alone" in matrix.__doc__ and "alone" in matrixvalues.KEYS


# --- boot=: rows that take turns inside the same boots -----------------------------------------

BOOT_ROWS = """defaults: workload=pingpong duration=1s repeat=3 rounds=2 guest.hz=0,250
no-poll:  boot=b halt_poll_ns=global:0     host_grow=2 host_shrink=0
always:   boot=b halt_poll_ns=global:1s    host_grow=1 host_shrink=1
dynamic:  boot=b halt_poll_ns=global:500us host_grow=2 host_shrink=0
alone:    halt_poll_ns=global:0
"""


def test_boot_rows_become_one_boot_per_swept_value_with_a_cell_per_row():
    runs = matrix.parse(BOOT_ROWS)
    assert [r.name for r in runs] == ["b-hz=0", "b-hz=250", "alone-hz=0", "alone-hz=250"]
    b0 = runs[0]
    assert b0.repeat == 3 and b0.windows.windows == 6 and b0.sweep == {"guest.hz": "0"}
    assert [c.name for c in matrix.cells(b0)] == ["no-poll-hz=0", "always-hz=0", "dynamic-hz=0"]
    arms = b0.windows.arms
    assert [a.config for a in arms] == ["no-poll", "always", "dynamic"]
    assert arms[1].host_params == {"halt_poll_ns": 1000000000, "halt_poll_ns_grow": 1,
                                   "halt_poll_ns_shrink": 1}
    plan = b0.windows.for_boot(1)
    assert plan.windows == 6 and plan.describe(1)["config"] == "no-poll"


@pytest.mark.parametrize("text, where, what", [
    ("a: boot=x workload=idle duration=1s\nb: boot=x workload=pingpong duration=1s\n", 2,
     "rows 'a' and 'b' differ in workload=, which cannot change inside a boot"),
    ("a: boot=x workload=idle duration=1s halt_poll_ns=global:0 host_grow=2\n"
     "b: boot=x workload=idle duration=1s halt_poll_ns=global:1s\n", 2,
     "row 'b' does not state host_grow="),
    ("a: boot=x workload=idle duration=1s\nc: workload=idle duration=1s\n", 1,
     "only row 'a' joins this boot"),
    ("a: boot=x workload=idle duration=1s halt_poll_ns=global:0,global:1s within=halt_poll_ns\n",
     1, "give one of them"),
    ("a: boot=x workload=idle duration=1s halt_poll_ns=200us\n"
     "b: boot=x workload=idle duration=1s halt_poll_ns=global:0\n", 1,
     "cannot be taken back inside a boot"),
    ("a: boot=x, workload=idle duration=1s\n", 1, "boot=x,: expected a name"),
])
def test_a_boot_its_rows_cannot_share_is_refused_at_the_line(text, where, what):
    with pytest.raises(matrix.MatrixError) as e:
        matrix.parse(text, "m.txt")
    assert str(e.value).startswith(f"m.txt:{where}: ") and what in str(e.value), str(e.value)
