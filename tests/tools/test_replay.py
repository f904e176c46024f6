"""tools/replay: the three recorders' formats read alike, a trace cut mid-run synchronised,
the parameters inferred and said so, one line for each bad input, and the check on a real
trace of the nested host's KVM (Debian 6.1), which agrees halt for halt under the current
form of kvm_vcpu_halt and not under the 2021 one (so the check can fail)."""
import gzip
import os
import re
import subprocess

import pytest

from idlelab import TOP
from idlelab.replay import cli, exits

CODES = {n: c for n, (c, _) in exits.load().items()}
DATA = os.path.join(os.path.dirname(__file__), "data")
NESTED = os.path.join(DATA, "nested-6.1-seed003")
LINE = re.compile(r"^\s*(?P<comm>CPU \d+/KVM)-(?P<tid>\d+)\s+\[(?P<cpu>\d+)\] \S+ "
                  r"(?P<ts>[\d.]+): (?P<ev>\w+): (?P<body>.*)$")


@pytest.fixture(scope="module")
def engine():
    return cli.engine()


def run(engine, *args):
    return subprocess.run([engine] + [str(a) for a in args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def synthetic(engine, tmp_path_factory):
    path = tmp_path_factory.mktemp("replay") / "s.trace"
    with open(path, "w") as f:
        subprocess.run([engine, "--synthesize", "2,2,1"], stdout=f, check=True)
    return path


def agree(out):
    m = re.search(r"^\s+all\s+(\d+) of (\d+) halts agree$", out, re.M)
    return int(m[1]), int(m[2])


def rows(out):
    return [ln.split()[1:] for ln in out.splitlines() if ln.startswith("  all ") and
            ("recorded" in ln or "what-if" in ln)]


def converted(src, dst, fmt):
    """The synthetic tracefs text as trace-cmd report or perf script prints the same events."""
    with open(src) as f, open(dst, "w") as out:
        if fmt == "trace-cmd":
            out.write("cpus=2\n")
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            if fmt == "trace-cmd":
                out.write(f"  {m['comm']}-{m['tid']}  [{m['cpu']}]  {m['ts']}: {m['ev']}:"
                          f"      {m['body']}\n")
            else:
                out.write(f"  {m['comm']}  {m['tid']} [{m['cpu']}]  {m['ts']}:"
                          f"        kvm:{m['ev']}: {m['body']}\n")
    return dst


def test_the_three_formats_replay_alike(engine, synthetic, tmp_path):
    outs = {}
    for fmt in ("tracefs", "trace-cmd", "perf"):
        path = synthetic if fmt == "tracefs" else converted(synthetic, tmp_path / fmt, fmt)
        r = run(engine, path, "--halt-poll-ns", "0,50us,200us,400us", "--shrink", "0,2")
        assert r.returncode == 0, r.stderr
        outs[fmt] = r.stdout
        names = {"tracefs": "tracefs trace", "trace-cmd": "trace-cmd report",
                 "perf": "perf script"}
        assert f": {names[fmt]}, 2 vCPU threads" in r.stdout
    n, m = agree(outs["tracefs"])
    assert n == m > 15000
    assert agree(outs["trace-cmd"]) == agree(outs["perf"]) == (n, m)
    assert rows(outs["tracefs"]) == rows(outs["trace-cmd"]) == rows(outs["perf"])
    assert len(rows(outs["tracefs"])) == 1 + 8


def test_the_what_if_at_the_recorded_parameters_is_the_recording(engine, synthetic):
    r = run(engine, synthetic, "--from-start", "--halt-poll-ns", "200us", "--totals")
    rec, same = rows(r.stdout)
    assert rec[0] == "recorded" and same[0] == "what-if" and rec[1:] == same[1:]


def test_a_trace_cut_mid_run_is_synchronised_at_each_vcpus_first_change(engine, synthetic,
                                                                        tmp_path):
    lines = open(synthetic).read().splitlines(keepends=True)
    cut = tmp_path / "cut.trace"
    cut.write_text("".join(lines[len(lines) // 3:]))
    r = run(engine, cut)
    assert r.returncode == 0, r.stderr
    n, m = agree(r.stdout)
    assert n == m > 10000
    assert "before its first window change, not checked" in r.stdout


def test_parameters_are_inferred_and_said_so(engine, tmp_path):
    path = tmp_path / "shrink0.trace"
    with open(path, "w") as f:
        subprocess.run([engine, "--synthesize", "1,2,5", "--params",
                        "halt_poll_ns=150us,grow=4,grow_start=20us,shrink=0"],
                       stdout=f, check=True)
    r = run(engine, path, "--from-start")
    assert "parameters inferred from the trace" in r.stdout
    assert re.search(r"grow=4 .*grow_start=20000 .*shrink=0 .*halt_poll_ns=150000", r.stdout)
    n, m = agree(r.stdout)
    assert n == m


def one_line_error(r, code, *words):
    assert r.returncode == code, (r.returncode, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def test_bad_input_gets_one_line_and_its_own_code(engine, synthetic, tmp_path):
    text = open(synthetic).read()
    lines = text.splitlines(keepends=True)
    (tmp_path / "none").write_text("# tracer: nop\n  bash-12 [000] .... 1.0: sched_switch: x\n")
    one_line_error(run(engine, tmp_path / "none"), CODES["RP_EXIT_NO_EVENTS"],
                   "no kvm:kvm_vcpu_wakeup")
    wake = next(i for i, ln in enumerate(lines) if "kvm_vcpu_wakeup" in ln)
    (tmp_path / "cut").write_text("".join(lines[:wake]) + lines[wake][:-12] + "\n")
    one_line_error(run(engine, tmp_path / "cut"), CODES["RP_EXIT_TRUNCATED"],
                   f":{wake + 1}:", "cut short")
    perf = converted(synthetic, tmp_path / "perf", "perf").read_text().splitlines()[5]
    (tmp_path / "mixed").write_text("".join(lines[:50]) + perf + "\n")
    one_line_error(run(engine, tmp_path / "mixed"), CODES["RP_EXIT_MIXED"], "two formats")
    (tmp_path / "headers").write_text("".join(lines[:50]) + "cpus=2\n" + "".join(lines[50:60]))
    one_line_error(run(engine, tmp_path / "headers"), CODES["RP_EXIT_MIXED"], "two formats")
    (tmp_path / "nochange").write_text("".join(ln for ln in lines
                                               if "kvm_halt_poll_ns" not in ln))
    one_line_error(run(engine, tmp_path / "nochange"), CODES["RP_EXIT_NO_EVENTS"],
                   "kvm:kvm_halt_poll_ns", "--from-start")
    assert run(engine, tmp_path / "nochange", "--from-start").returncode == 0
    one_line_error(run(engine, tmp_path / "missing"), CODES["RP_EXIT_READ"], "missing")
    one_line_error(run(engine, synthetic, "--params", "halt_poll_ns=fast"),
                   CODES["RP_EXIT_USAGE"], "halt_poll_ns=fast")
    one_line_error(run(engine, synthetic, "--shrink", "2,x"), CODES["RP_EXIT_USAGE"], "'x'")
    gz = tmp_path / "t.gz"
    with gzip.open(gz, "wt") as f:
        f.write(text)
    assert agree(run(engine, gz).stdout) == agree(run(engine, synthetic).stdout)


def nested_params(base=NESTED):
    with open(base + ".schedule") as f:
        return re.search(r"^# before the first switch: (\S+)$", f.read(), re.M)[1]


@pytest.mark.parametrize("seed", ["seed003", "seed004"])
def test_kvms_own_trace_agrees_halt_for_halt(engine, seed):
    """Boots on the nested host: seed 003's switched halt_poll_ns between 0, 200 and 400 us
    while it ran, seed 004's halt_poll_ns_shrink between 0 and 2; every window change KVM
    traced is the transcription's, and without the switches it is not."""
    base = os.path.join(DATA, f"nested-6.1-{seed}")
    r = run(engine, base + ".trace.gz", "--params", nested_params(base), "--schedule",
            base + ".schedule", "--from-start", "--require-agree")
    assert r.returncode == 0, r.stdout[-2000:]
    n, m = agree(r.stdout)
    assert n == m > 6000
    r = run(engine, base + ".trace.gz", "--params", nested_params(base), "--from-start")
    n, m = agree(r.stdout)
    assert n < 0.99 * m


def test_the_2021_form_disagrees_with_debians_6_1(engine, tmp_path):
    """Debian's 6.1 carries the Dec 2022 fixes: the halt_poll_ns written while the VM ran
    reaches it (before them a VM kept the value it was created with), and a grow is not
    clamped to max. The 2021 form is caught on both."""
    sched = tmp_path / "s"
    sched.write_text("".join(ln.rstrip("\n") + ",form=2021\n" if not ln.startswith("#") else ln
                             for ln in open(NESTED + ".schedule")))
    r = run(engine, NESTED + ".trace.gz", "--params", nested_params() + ",form=2021",
            "--schedule", sched, "--from-start", "--require-agree")
    assert r.returncode == CODES["RP_EXIT_DISAGREE"]
    n, m = agree(r.stdout)
    assert n < 0.9 * m
    assert "replayed none 0 -> 0, recorded grow 0 -> 10000" in r.stdout


def test_the_png_is_drawn(engine, synthetic, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "w.png"
    r = subprocess.run([os.path.join(TOP, "tools", "replay"), str(synthetic), "--halt-poll-ns",
                        "0,100us,200us", "--png", str(png)], capture_output=True, text=True,
                       env=dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", "")))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_exit_codes_are_distinct():
    codes = [c for c, _ in exits.load().values()]
    assert len(codes) == len(set(codes)) >= 8


def test_a_records_switches_are_its_schedule():
    from idlelab.replay import schedule
    values = {"halt_poll_ns": 200000, "halt_poll_ns_grow": 2, "halt_poll_ns_grow_start": 10000,
              "halt_poll_ns_shrink": 0}
    rec = {"host_params": {"values": values}, "halt_poll": {"scope": "global", "ns": 200000},
           "windows": [{"switched": {"t0_ns": 5, "t_ns": 9, "vm_halt_poll_ns": None,
                                     "kvm_params": dict(values, halt_poll_ns_shrink=2)}},
                       {"switched": None}]}
    params, lines = schedule.of_record(rec)
    assert params == "halt_poll_ns=200000,grow=2,grow_start=10000,shrink=0"
    assert lines == ["5 9 halt_poll_ns=200000,grow=2,grow_start=10000,shrink=2"]
    old = {"host_params": {"values": values}, "windows": [{"switched": {"t_ns": 9}}]}
    with pytest.raises(schedule.NoSchedule, match="before tools/replay"):
        schedule.of_record(old)


def test_a_kept_trace_never_overwrites_another(tmp_path):
    from idlelab.host.windowtrace import keep_text
    a = keep_text("one\n", str(tmp_path / "t" / "x.trace.gz"))
    b = keep_text("two\n", str(tmp_path / "t" / "x.trace.gz"))
    assert a == {"path": "x.trace.gz"} and b == {"path": "x.trace.1.gz"}
    assert gzip.open(tmp_path / "t" / "x.trace.1.gz", "rt").read() == "two\n"


# docs/haltpoll-spec.md §1.10.2: each idle period's entries (state, ns) under Linux's defaults
SPEC_1_10_2 = [[(1, 30000)], [(0, 30000)], [(0, 50000), (1, 250000)], [(1, 120000)],
               [(0, 50000), (1, 70000)], [(0, 100000), (1, 20000)], [(0, 40000)],
               [(0, 100000), (1, 900000)], [(0, 50000), (1, 950000)], [(1, 1000000)]]


def guest_trace(path, periods, fmt="trace-cmd", cpu=1):
    """A guest's power:cpu_idle trace of these periods: entries 1 us apart inside a period
    (the governor's next choice after an expired poll), 20 us of work between periods."""
    t, out = 1_000_000_000, ["cpus=2"] if fmt == "trace-cmd" else []
    for entries in periods:
        for state, ns in entries:
            for st, at in ((state, t), (4294967295, t + ns)):
                ts = f"{at // 10**9}.{at % 10**9:09d}"
                out.append(f"          <idle>-0     [{cpu:03d}]  {ts}: cpu_idle:             "
                           f"state={st} cpu_id={cpu}" if fmt == "trace-cmd" else
                           f"         swapper     0 [{cpu:03d}]  {ts}: power:cpu_idle: "
                           f"state={st} cpu_id={cpu}")
            t += ns + 1000
        t += 20000
    path.write_text("\n".join(out) + "\n")
    return path


def test_the_guest_side_replays_the_specs_vector(engine, tmp_path):
    """The spec's own table of the haltpoll governor, written as a trace, replayed through the
    kernel's governor: every period's states as the table has them, and the what-if at the
    same tunables is the trace's own row."""
    for fmt in ("trace-cmd", "perf"):
        path = guest_trace(tmp_path / f"g-{fmt}", SPEC_1_10_2, fmt)
        r = run(engine, "--guest", path, "--guest-halt-poll-ns", "200us", "--totals",
                "--require-agree")
        assert r.returncode == 0, r.stdout + r.stderr
        assert re.search(r"^\s+all\s+10 of 10 idle periods agree$", r.stdout, re.M), r.stdout
        rows = [ln.split()[1:] for ln in r.stdout.splitlines() if ln.startswith("  all ")
                and ("recorded" in ln or "what-if" in ln)]
        rec, same = rows
        # periods 10, polls 7, hits 2, halts 8, polled 420 us
        assert rec[5:8] == ["10", "7", "2"] and rec[-1] == "8", rows
        assert rec[1:] == same[1:]


def test_other_guest_tunables_disagree_with_the_trace_and_poll_otherwise(engine, tmp_path):
    path = guest_trace(tmp_path / "g", SPEC_1_10_2 * 20)
    r = run(engine, "--guest", path, "--guest-params", "guest_halt_poll_ns=100us",
            "--require-agree", "--totals")
    assert r.returncode == CODES["RP_EXIT_DISAGREE"]
    r = run(engine, "--guest", path, "--guest-halt-poll-ns", "0,50us,400us", "--totals")
    polls = [int(ln.split()[7]) for ln in r.stdout.splitlines()
             if ln.startswith("  all ") and "what-if" in ln]
    assert polls[0] == 0 and polls[1] < polls[2]


def test_a_guest_trace_without_idle_events_is_one_line(engine, synthetic):
    one_line_error(run(engine, "--guest", synthetic), CODES["RP_EXIT_NO_EVENTS"],
                   "no power:cpu_idle")


def test_the_guest_png_is_drawn(engine, tmp_path):
    pytest.importorskip("matplotlib")
    path, png = guest_trace(tmp_path / "g", SPEC_1_10_2 * 5), tmp_path / "g.png"
    r = subprocess.run([os.path.join(TOP, "tools", "replay"), "--guest", str(path),
                        "--guest-halt-poll-ns", "50us,200us", "--png", str(png)],
                       capture_output=True, text=True,
                       env=dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", "")))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
