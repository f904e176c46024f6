"""tools/bench without QEMU: the built-in matrices and work plan (workplan), run naming and
the guest command line (matrix), which global-parameter runs can be made (kvmparams, onerun),
machine-load arithmetic (hostload), the results folder (resultsdir), progress (runloop), and
the CLI's accelerator choice and exit codes (cli)."""
import errno
import os
import re
import socket
import stat

import pytest

from conftest import TOP
from idlelab import costtable
from idlelab.report import resultsdir
from idlelab.bench import cli, matrix, matrixvalues, onerun, runloop, workplan
from idlelab.host import hostload, kvmparams
from idlelab.bench.matrix import parse


def _load(quick):
    return {mid: runs for mid, _, runs in workplan.load_matrices(workplan.builtin_matrices(quick))}


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
def test_builtin_matrices_parse_and_cover_each_seed(quick):
    """Each seed's matrix sets KVM's module parameters globally, as the seed did, repeated
    (at least 3 runs a cell in the full set)."""
    m = _load(quick)
    assert sorted(m) == ["seed000", "seed002", "seed003", "seed004"]
    boots = m
    # seeds 000 and 002 join rows into boots (boot=): their cells are the configurations
    m = dict(m, **{mid: [c for r in m[mid] for c in matrix.cells(r)]
                   for mid in ("seed000", "seed002")})
    runs = [r for rs in m.values() for r in rs]
    assert all(r.vm_halt_poll_ns is None and "halt_poll_ns" in r.host_params for r in runs
               if r.name != "guest-msr")
    assert all(r.repeat >= 3 for rs in boots.values() for r in rs) if not quick else True
    # seed 000: no / always / dynamic polling, idle tickless and at 250 Hz, and pingpong;
    # the v6 patch's values (500 us, grow 2 from 10 us, shrink 0), always-poll as a window
    # held at 500 us once open (grow_start 500 us, grow and shrink 1), opened by any halt
    # shorter than a second.
    s0 = m["seed000"]
    assert matrix.config_of(s0[0]) == "no-poll"
    assert {matrix.config_of(r) for r in s0} == {"no-poll", "always-poll", "dynamic-poll"}
    assert {(r.workload, r.guest.get("hz")) for r in s0} == {
        ("idle", "0"), ("idle", "250"), ("pingpong", "250")}
    params = {matrix.config_of(r): r.host_params for r in s0 if "placed" not in r.name}
    assert params["no-poll"]["halt_poll_ns"] == 0      # its grow values do nothing at 0
    assert params["dynamic-poll"] == {"halt_poll_ns": 500_000, "halt_poll_ns_grow": 2,
                                      "halt_poll_ns_grow_start": 10_000,
                                      "halt_poll_ns_shrink": 0}
    assert params["always-poll"] == {"halt_poll_ns": 1_000_000_000, "halt_poll_ns_grow": 1,
                                     "halt_poll_ns_grow_start": 500_000,
                                     "halt_poll_ns_shrink": 1}
    assert all(r.guest["idle"] == "halt" for r in s0)
    # the round trip again with the windows placed by the cost table
    placed = {r.name: costtable.resolve_run(r, {"prims": {"ipi_halt_rtt": {"ns_p50": 600_000}}})
              for r in s0 if r.name.endswith(".placed")}
    assert placed["always-poll.placed"].host_params["halt_poll_ns_grow_start"] == 4_800_000
    assert placed["dynamic-poll.placed"].host_params["halt_poll_ns"] == 4_800_000
    # seed 002: the floor (no exit at all) and the four polling combinations on pingpong;
    # guest polling with the host window at 0, as the seed had it.
    s2 = {r.name: r for r in m["seed002"]}
    assert list(s2) == ["floor", "neither", "host-poll", "guest-poll", "both",
                        "host-poll.placed", "guest-poll.placed", "both.placed", "guest-msr"]
    assert s2["guest-poll.placed"].guest["haltpoll.guest_halt_poll_ns"] == "ipi_halt_rtt*8"
    assert s2["host-poll.placed"].host_params["halt_poll_ns"] == "ipi_halt_rtt*8"
    assert (s2["guest-msr"].guest["hostpoll"], s2["guest-msr"].vm_halt_poll_ns) == \
        ("auto", 300_000)      # per VM: the MSR's check runs where the parameters are fixed
    assert s2["floor"].guest["idle"] == "poll"
    assert (s2["guest-poll"].guest["idle"], s2["guest-poll"].guest["hostpoll"],
            s2["guest-poll"].host_params["halt_poll_ns"]) == ("haltpoll", "auto", 0)
    assert (s2["both"].guest["hostpoll"], s2["both"].host_params["halt_poll_ns"]) == \
        ("on", 300_000)
    assert s2["host-poll"].host_params["halt_poll_ns"] == 300_000
    # seed 003: the seed's own 250 us and a sweep placed by the cost table around timer +
    # window, under three windows; resolved with a made-up table here.
    s3 = [c for r in m["seed003"] for c in matrix.cells(r)]
    assert {r.guest["period"] for r in s3} >= {"250us", "timer+300us"}
    table = {"prims": {p: {"ns_p50": 650_000.0} for p in costtable.PRIMS}}
    periods = {matrixvalues.parse_time(costtable.resolve_run(r, table).guest["period"]) for r in s3}
    assert 250_000 in periods and max(periods) >= 650_000 + 1_000_000
    assert 650_000 + 300_000 in periods    # inside the 400 us window, outside 200 us
    # every period under the three windows takes turns inside each boot
    # (within=guest.period,halt_poll_ns)
    assert {c.host_params["halt_poll_ns"] for c in s3} == {0, 200_000, 400_000}
    (boot,) = m["seed003"]
    assert len(s3) == 3 * len(periods) and boot.windows.windows == len(s3) * boot.windows.rounds
    arms = costtable.resolve_run(boot, table).windows.arms
    assert {matrixvalues.parse_time(a.guest["period"]) for a in arms} == periods
    # seed 004: random and pingpong under shrink 0 and 2 with the seed's window (200 us, grow
    # 2 from 10 us), random again with the window placed by the cost table, all traced.
    s4 = [c for r in m["seed004"] for c in matrix.cells(r)]
    assert {(matrix.config_of(r), r.host_params["halt_poll_ns_shrink"]) for r in s4} == {
        (c, s) for c in ("random", "pingpong", "placed-random") for s in (0, 2)}
    assert all(r.trace == "halt_poll_ns" and r.host_params["halt_poll_ns_grow"] == 2 and
               r.host_params["halt_poll_ns_grow_start"] == 10_000 for r in s4)
    placed = [costtable.resolve_run(r, table) for r in s4 if r.name.startswith("placed")]
    assert {r.host_params["halt_poll_ns"] for r in placed} == {650_000 + 200_000}


def test_full_and_quick_matrices_run_the_same_configurations():
    """The quick set is the full one made shorter, not a different experiment: the same
    configurations, placed on the host alike (pin=, alone=), traced alike and priced by their
    own boot's cost table alike (boot_costs=, its samples aside)."""
    full, quick = _load(False), _load(True)
    for mid in full:
        def configs(runs):
            return {(matrix.config_of(r), r.workload, r.settings["halt_poll_ns"],
                     tuple(sorted((k, v) for k, v in r.guest.items()
                                  if k not in ("period", "warmup"))),
                     tuple(sorted(r.host_params.items())),
                     r.pin, r.alone, r.trace, r.boot_costs is not None) for r in runs}
        assert configs([c for r in quick[mid] for c in matrix.cells(r)]) == \
            configs([c for r in full[mid] for c in matrix.cells(r)]), mid
        assert sum(workplan.estimate_s(r) * r.repeat for r in quick[mid]) < \
            sum(workplan.estimate_s(r) * r.repeat for r in full[mid])


def test_quick_set_is_estimated_under_a_minute():
    work = workplan.plan(workplan.load_matrices(workplan.builtin_matrices(True)))
    assert sum(workplan.estimate_s(run) for _, run, _ in work) < 60


def test_config_name_and_guest_cmdline():
    runs = parse("defaults: guest.hz=0,250 halt_poll_ns=0,global:200us\n"
                 "no-poll.idle: workload=idle duration=2s guest.idle=halt\n"
                 "rr: workload=pingpong duration=300ms guest.window_hold=5ms\n", "m")
    assert runs[0].name == "no-poll.idle-hz=0-halt_poll_ns=0"
    assert matrix.config_of(runs[0]) == "no-poll"
    assert matrix.config_of(runs[-1]) == "rr"
    assert matrix.guest_cmdline(runs[0]) == \
        "workload=idle duration=2s hz=0 idle=halt window_sync=1"
    assert matrix.guest_cmdline(runs[0], "20ms") == \
        "workload=idle duration=2s hz=0 idle=halt window_sync=1 window_hold=20ms"
    # a window_hold the matrix sets is kept, not doubled
    assert matrix.guest_cmdline(runs[-1], "20ms").count("window_hold=") == 1
    assert "window_hold=5ms" in matrix.guest_cmdline(runs[-1])
    # and so is a window_sync it turns off
    off = parse("a: workload=idle duration=1s guest.window_sync=0\n", "m")[0]
    assert matrix.guest_cmdline(off).count("window_sync=") == 1


def _param_dir(tmp_path, values, read_only=()):
    d = tmp_path / "params"
    d.mkdir()
    for name, value in values.items():
        p = d / name
        p.write_text(f"{value}\n")
        if name in read_only:
            p.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    return str(d)


HOST = {"halt_poll_ns": 200000, "halt_poll_ns_grow": 2, "halt_poll_ns_grow_start": 10000,
        "halt_poll_ns_shrink": 2}


def test_read_only_params_a_run_needing_another_value_is_not_run(tmp_path):
    pd = _param_dir(tmp_path, HOST, read_only=HOST)
    params = kvmparams.HostParams(pd, str(tmp_path / "journal"))
    assert params.describe().startswith("kvm parameters read-only here: halt_poll_ns=200000")
    s0, s2 = parse("r: workload=random duration=1s host_shrink=0,2", "m")
    assert params.changes_for(s0) == (None, "halt_poll_ns_shrink is read-only (fixed at 2)")
    assert params.changes_for(s2) == ({}, None)   # what the host already has: just run it
    (g,) = parse("r: workload=idle duration=1s halt_poll_ns=global:100us", "m")
    assert params.changes_for(g)[1] == "halt_poll_ns is read-only (fixed at 200000)"
    ctx = onerun.Context(accel="kvm", params=params)
    rec = onerun.execute("seed004", s0, 1, ctx)     # decided before any boot
    assert (rec["status"], rec["reason"]) == \
        ("not run", "halt_poll_ns_shrink is read-only (fixed at 2)")
    assert rec["host_params"]["values"] == HOST and "serial" not in rec


def test_writable_params_give_the_changes_to_make(tmp_path):
    pd = _param_dir(tmp_path, HOST)
    params = kvmparams.HostParams(pd, str(tmp_path / "journal"))
    (r,) = parse("r: workload=random duration=1s host_shrink=0 host_grow=2", "m")
    assert params.changes_for(r) == ({"halt_poll_ns_shrink": 0}, None)
    assert "writable" in params.describe()


def test_other_load_subtracts_our_own_cpu_and_idle():
    s = 1_000_000_000
    a = {"t_ns": 0, "idle_ns": 0, "steal_ns": 0, "self_ns": 0}
    # 2 CPUs for 1 s: 0.5 s idle, 0.1 s stolen -> 1.4 s busy, of which QEMU 1.0 s, us 0.1 s
    b = {"t_ns": s, "idle_ns": s // 2, "steal_ns": s // 10, "self_ns": s // 10}
    load = hostload.other_load(a, b, qemu_ns=s, ncpus=2)
    assert load["busy_pct"] == 70.0 and load["ours_pct"] == 55.0
    assert load["other_pct"] == 15.0 and load["steal_pct"] == 5.0
    # tick rounding can make "other" slightly negative: clamped, raw kept
    load = hostload.other_load(a, dict(b, idle_ns=s), qemu_ns=s, ncpus=2)
    assert load["other_pct"] == 0.0 and load["other_raw_pct"] < 0


def test_load_sample_reads_this_machine():
    a = hostload.load_sample(os.getpid())
    b = hostload.load_sample(os.getpid())
    assert b["t_ns"] >= a["t_ns"] and b["idle_ns"] >= a["idle_ns"]
    # asked about this process, the "QEMU" CPU time (/proc, in ticks) is our own rusage's
    assert abs(a["qemu_ns"] - a["self_ns"]) <= 50_000_000 and a["self_ns"] > 0, a
    assert len(hostload.loadavg()) == 3


def test_quiet_waiter_without_budget_does_not_sample():
    assert hostload.QuietWaiter(0, 10).wait("x") == (0.0, None, None)


def test_quiet_waiter_gives_up_within_its_budget():
    w = hostload.QuietWaiter(0.2, below_pct=-1, sample_s=0.05)   # never quiet
    waited, pct, quiet = w.wait("test")
    assert quiet is False and waited < 1.0 and pct >= 0
    assert w.wait("again")[2] is False and w.spent_s < 1.5


def test_new_results_dir_and_latest_link(tmp_path):
    a = resultsdir.new_results_dir(str(tmp_path))
    b = resultsdir.new_results_dir(str(tmp_path))
    assert a != b and os.path.isdir(a) and os.path.isdir(b)
    assert re.fullmatch(r"\d{8}-\d{6}(-\d+)?", os.path.basename(b))
    latest = tmp_path / "latest"
    assert not os.path.lexists(latest)      # moved only once a folder is finished
    resultsdir.point_latest(b)
    assert os.path.islink(latest) and os.readlink(latest) == os.path.basename(b)


def test_progress_line_counts_down_and_estimates():
    work = workplan.plan([("seed002", "x", parse(
        "defaults: workload=pingpong duration=1s repeat=2\na: guest.idle=halt\n"
        "b: guest.idle=haltpoll\n", "m"))])
    p = runloop.Progress(work)
    assert p.line(0) == "[ 1/4] seed002 a #1/2 (pingpong, 1s) | 3 left, ETA 0:08"
    assert p.line(3).startswith("[ 4/4] seed002 b #2/2 (pingpong, 1s) | 0 left, ETA 0:02")


def test_accel_choice(monkeypatch):
    monkeypatch.setattr(cli.qemu, "kvm_usable", lambda: False)
    monkeypatch.setattr(cli.nested, "available", lambda build=True: (True, None))
    accel, msg, code = cli.choose_accel("auto", True)      # the nested host is a KVM host
    assert (accel, code) == ("nested", None) and "nested KVM host" in msg
    assert msg.startswith("host: nested, ")
    monkeypatch.setattr(cli.nested, "available", lambda build=True: (False, "no image here"))
    accel, msg, code = cli.choose_accel("auto", False)
    assert (accel, code) == ("tcg", None) and "n/a (TCG)" in msg and "no image here" in msg
    accel, msg, code = cli.choose_accel("auto", True)
    assert (accel, code) == (None, cli.EXIT_NO_KVM) and "required" in msg
    assert cli.choose_accel("kvm", False)[2] == cli.EXIT_NO_KVM
    monkeypatch.setattr(cli.qemu, "kvm_usable", lambda: True)
    accel, msg, code = cli.choose_accel("auto", True)
    assert (accel, code) == ("kvm", None) and "(auto: /dev/kvm is usable)" in msg


class ReadOnly:
    """A host whose kvm parameters are all read-only, at Linux's defaults."""
    values = {"halt_poll_ns": 200000, "halt_poll_ns_grow": 2,
              "halt_poll_ns_grow_start": 10000, "halt_poll_ns_shrink": 0}
    read_only = list(values)
    changes_for = cli.HostParams.changes_for


def test_auto_takes_the_nested_host_for_runs_the_local_kvm_cannot_make(monkeypatch):
    loaded = [("m", "x", parse("defaults: workload=pingpong duration=1s\n"
                               "same: halt_poll_ns=global:200us\n"
                               "vm: halt_poll_ns=100us\n"
                               "other: host_shrink=2\n"
                               "scaled: halt_poll_ns=global:timer+200us\n", "m"))]
    needs = cli.params_needed(loaded, ReadOnly())
    # the host's own value needs no change; a value in the cost table's terms is not known
    assert needs == "2 of 4 runs set halt_poll_ns, halt_poll_ns_shrink, read-only in this " \
                    "machine's KVM"
    assert cli.params_needed(loaded[:1] and [("m", "x", loaded[0][2][:2])], ReadOnly()) is None
    monkeypatch.setattr(cli.qemu, "kvm_usable", lambda: True)
    monkeypatch.setattr(cli.nested, "available", lambda build=True: (True, None))
    accel, msg, code = cli.choose_accel("auto", False, needs)
    assert (accel, code) == ("nested", None) and needs in msg and "--accel kvm keeps" in msg
    assert cli.choose_accel("kvm", False, needs)[0] == "kvm"
    monkeypatch.setattr(cli.nested, "available", lambda build=True: (False, "no QEMU"))
    accel, msg, _ = cli.choose_accel("auto", False, needs)
    assert accel == "kvm" and "no nested host (no QEMU)" in msg and "not run" in msg


def test_require_kvm_without_kvm_exits_3_and_writes_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli.qemu, "kvm_usable", lambda: False)
    monkeypatch.setattr(cli.nested, "available", lambda build=True: (False, "no image here"))
    code = cli.main(["--quick", "--require-kvm", "--results-dir", str(tmp_path / "r")])
    assert code == cli.EXIT_NO_KVM == 3
    assert not (tmp_path / "r").exists()
    assert "no usable /dev/kvm" in capsys.readouterr().err


def test_bad_matrix_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "m.txt"
    bad.write_text("r: workload=idle duration=1s guest.nosuchknob=1\n")
    assert cli.main(["--matrix", str(bad), "--list"]) == cli.EXIT_USAGE
    assert "unknown guest knob 'nosuchknob'" in capsys.readouterr().err


def test_list_prints_every_matrix(capsys):
    assert cli.main(["--quick", "--list"]) == 0
    out = capsys.readouterr().out
    for mid in ("seed000", "seed002", "seed003", "seed004"):
        assert f"{mid}: tools/matrices/quick/{mid}.txt" in out


def test_repeat_makes_every_run_that_many_times(capsys):
    """--repeat N overrides each matrix's repeat, so the bar's control (predicted.md: each run
    made again against its first making) can be had from any matrix."""
    assert cli.main(["--quick", "--seeds", "002", "--repeat", "3", "--list"]) == 0
    runs = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ")]
    assert runs and all(ln.split(":")[0].endswith(" x3") for ln in runs)


def test_cli_script_and_make_target_exist():
    assert os.access(os.path.join(TOP, "tools", "bench"), os.X_OK)
    with open(os.path.join(TOP, "Makefile")) as f:
        make = f.read()
    assert re.search(r"^bench:", make, re.M) and "tools/bench" in make


def test_writable_params_are_overridden_for_the_run_and_restored(tmp_path, monkeypatch):
    """Where the host lets us, a run needing shrink=0 gets it for its boot only, through
    kvmparams.override (journal written, value restored afterwards)."""
    pd = _param_dir(tmp_path, HOST)
    journal = str(tmp_path / "journal")
    params = kvmparams.HostParams(pd, journal)
    seen = {}

    def fake_boot(run, rec, ctx, override=None):
        with open(os.path.join(pd, "halt_poll_ns_shrink")) as f:
            seen["during"] = int(f.read())
        seen["journal"] = os.path.exists(journal)
        rec.update(status="ok")
        return rec

    monkeypatch.setattr(onerun, "boot", fake_boot)
    (r,) = parse("r: workload=random duration=1s host_shrink=0", "m")
    rec = onerun.execute("seed004", r, 1, onerun.Context(accel="kvm", params=params))
    assert seen == {"during": 0, "journal": True}
    assert rec["host_params"]["changed"] == {"halt_poll_ns_shrink": 0}
    assert rec["host_params"]["values"]["halt_poll_ns_shrink"] == 0
    with open(os.path.join(pd, "halt_poll_ns_shrink")) as f:
        assert int(f.read()) == 2
    assert not os.path.exists(journal)


def test_a_harness_fault_after_the_boot_keeps_the_record_and_restores_the_host(
        tmp_path, monkeypatch):
    """A fault of the harness itself while it reads a boot (a boot_costs= table once met a
    missing import): the run is failed with where it broke, what the boot measured stays in
    the record (its console), the kvm parameter is put back, and the record becomes a row
    like any failed run's."""
    from idlelab.derive import runrow, windows
    pd = _param_dir(tmp_path, HOST)
    params = kvmparams.HostParams(pd, str(tmp_path / "journal"))

    def broken_boot(run, rec, ctx, override=None):
        rec["serial"] = "@idlelab result workload=idle ok=1 cpus=2 window_ns=1\n"
        return {}["cost_table"]

    monkeypatch.setattr(onerun, "boot", broken_boot)
    (r,) = parse("r: workload=idle duration=1s host_shrink=0", "m")
    rec = onerun.execute("seed004", r, 1, onerun.Context(accel="kvm", params=params))
    assert rec["status"] == "failed" and rec["serial"].startswith("@idlelab result")
    assert re.fullmatch(r"harness fault after the boot started: KeyError: 'cost_table' "
                        r"\(test_bench\.py:\d+\)", rec["reason"]), rec["reason"]
    with open(os.path.join(pd, "halt_poll_ns_shrink")) as f:
        assert int(f.read()) == 2
    row = runrow.summarize(windows.split(rec)[0])
    assert (row.status, row.reason) == ("failed", rec["reason"])


def test_a_boots_own_cost_table_is_read_from_its_console():
    """boot_costs=: the bench=exits records the boot printed before its windows, with the
    boot's own kvm parameters, and the primitives it lacks named."""
    out = ("@idlelab bench name=exits prim=timer ns_p50=130023.4 ns_p90=167772.2 n=100 "
           "ops_per_sample=1\n@idlelab bench name=exits prim=eoi ns_p50=39845.9 "
           "ns_p90=42991.6 n=100 ops_per_sample=64\n")
    rec = {"host_params": {"values": {"halt_poll_ns": 200000}}}
    table = onerun.boot_cost_table(out, 100, rec)
    assert table["prims"]["timer"]["ns_p50"] == 130023.4 and table["prims"]["eoi"]["n"] == 100
    assert table["iters"] == 100 and table["in_boot"] is True
    assert table["host_params"]["values"] == {"halt_poll_ns": 200000}
    assert "timer" not in table["missing"] and "ipi_halt_rtt" in table["missing"]


def test_a_run_asking_for_tcg_gets_it_and_no_host_params_check(tmp_path):
    pd = _param_dir(tmp_path, HOST, read_only=HOST)
    ctx = onerun.Context(accel="kvm", params=kvmparams.HostParams(pd, str(tmp_path / "j")))
    t, k = parse("t: workload=idle duration=1s accel=tcg\n"
                 "k: workload=idle duration=1s host_shrink=0\n", "m")
    assert ctx.run_accel(t) == "tcg" and ctx.run_accel(k) == "kvm"
    assert onerun.Context(accel="tcg", params=ctx.params).run_accel(k) == "tcg"
    assert ctx.base_record("m", t, 1)["accel"] == "tcg"


def test_sockets_work_says_whether_a_folder_takes_a_unix_socket(tmp_path, monkeypatch):
    """The nested host's 9p share of the tree refuses UNIX sockets (ENXIO): the bench then
    keeps its boots' QMP sockets in TMPDIR instead of the results folder's tmp/."""
    deep = tmp_path / ("d" * 100)          # past sun_path: reached through /proc/self/fd
    deep.mkdir()
    assert onerun.sockets_work(str(tmp_path)) and onerun.sockets_work(str(deep))
    assert sorted(p.name for p in tmp_path.iterdir()) == [deep.name]   # nothing left

    def refuse(self, path):
        raise OSError(errno.ENXIO, "No such device or address")
    monkeypatch.setattr(socket.socket, "bind", refuse)
    assert not onerun.sockets_work(str(tmp_path))
