"""make wakepath-rtt: the goals' arithmetic on made-up figures, the alternation, and the
refusals; the live KVM run is `make wakepath-rtt` itself (minutes, not a test)."""
from types import SimpleNamespace

import pytest

from idlelab.wakepath import rtt as w
from idlelab.usage import EXIT_NO_KVM, EXIT_USAGE


def test_the_goals_from_the_medians():
    med = w.medians({"floor": [30e3, 34e3, 40e3], "idle=poll": [100e3, 90e3, 95e3],
                     "idle=haltpoll": [120e3], "idle=halt": [], "ipi_halt_rtt": [200e3]})
    assert "idle=halt" not in med
    got = {what: (round(r, 3) if r is not None else None, met)
           for what, r, _, met in w.verdicts(med)}
    assert got == {"idle=poll / floor": (2.794, True),
                   "idle=haltpoll / idle=poll": (1.263, False),
                   "poll-hit RT / ipi_halt_rtt": (0.6, False)}
    assert any("NOT met" in ln for ln in w.table(med, 3, "kvm"))


def test_a_missing_figure_is_not_a_verdict():
    med = w.medians({"floor": [30e3], "idle=poll": [90e3], "idle=haltpoll": [99e3],
                     "ipi_halt_rtt": []})
    v = {what: met for what, _, _, met in w.verdicts(med)}
    assert v["poll-hit RT / ipi_halt_rtt"] is None and v["idle=poll / floor"] is True
    assert any("n/a" in ln for ln in w.table(med, 1, "kvm"))


def test_the_configurations_alternate_within_each_repeat():
    order = []

    def run(cfg, timeout):
        order.append(next(n for n, k in w.CONFIGS if k in cfg.cmdline))
        out = "@idlelab result workload=pingpong ok=1 rtt_p50_ns=1000\n"
        return SimpleNamespace(outcome=SimpleNamespace(ok=True, name="SUCCESS"), output=out)

    s = w.measure("tcg", 2, "10ms", run=run,
                  cost=lambda accel: {"prims": {"ipi_halt_rtt": {"ns_p50": 5.0}}})[""]
    names = [n for n, _ in w.CONFIGS]
    assert order == names + names
    assert s["ipi_halt_rtt"] == [5.0, 5.0] and s["floor"] == [1000, 1000]


def test_two_kernels_alternate_configuration_by_configuration():
    """--before: each configuration's two kernels run back to back, within each repeat, and
    the table gives both with their ratio and each one's goals."""
    order = []

    def run(cfg, timeout):
        name = next(n for n, k in w.CONFIGS if k in cfg.cmdline)
        order.append((name, cfg.kernel))
        rtt = 2000 if cfg.kernel == "old.elf" else 1000
        out = f"@idlelab result workload=pingpong ok=1 rtt_p50_ns={rtt}\n"
        return SimpleNamespace(outcome=SimpleNamespace(ok=True, name="SUCCESS"), output=out)

    s = w.measure("tcg", 1, "10ms", run=run, kernels={"before": "old.elf", "after": "new.elf"},
                  cost=lambda accel: {"prims": {"ipi_halt_rtt": {"ns_p50": 5000.0}}})
    assert order == [(n, k) for n, _ in w.CONFIGS for k in ("old.elf", "new.elf")]
    lines = w.side_by_side(w.medians(s["before"]), w.medians(s["after"]), 1, "tcg", "old/",
                           spread={k: w.spreads(s[k]) for k in ("before", "after")})
    floor = next(ln for ln in lines if ln.startswith("  floor "))
    assert floor.split() == ["floor", "2.0", "us", "[2.0..2.0]", "1.0", "us", "[1.0..1.0]",
                             "0.50", "NO"]      # half the time: outside one run's spread
    assert "  ipi_halt_rtt        5.0 us (both)" in lines
    assert any(ln.startswith("(under TCG") for ln in lines)
    assert lines[-1].startswith("goals, after: idle=poll / floor 1.00 (met)")


def test_within_the_spread_is_the_before_kernels_min_to_max():
    sp = w.spreads({"idle=poll": [900, 1000, 1200], "floor": []})
    assert sp == {"idle=poll": (900, 1200)}
    assert w.within(1100, sp["idle=poll"]) and w.within(900, sp["idle=poll"])
    assert w.within(1201, sp["idle=poll"]) is False
    assert w.within(None, sp["idle=poll"]) is None and w.within(5, None) is None


def test_before_needs_a_build_folder(tmp_path, capsys):
    assert w.main(["--accel", "tcg", "--before", str(tmp_path)]) == EXIT_USAGE
    host, refusal = capsys.readouterr().err.splitlines()
    assert host.startswith("wakepath-rtt: host: tcg, ")
    assert refusal == f"wakepath-rtt: --before: no idlelab.elf in {tmp_path} (a kernel's build folder)"


@pytest.mark.parametrize("argv", [["--repeats", "0"], ["--repeats", "x"],
                                  ["--duration", "5m", "--accel", "tcg"], ["--bogus"]])
def test_bad_arguments_exit_2(argv, capsys):
    assert w.main(argv) == EXIT_USAGE


def test_without_kvm_it_says_not_run(monkeypatch, capsys):
    monkeypatch.setattr(w.qemu, "kvm_usable", lambda: False)
    assert w.main(["--accel", "kvm"]) == EXIT_NO_KVM
    assert "not run" in capsys.readouterr().err


def test_a_failed_boot_keeps_its_console_and_what_was_measured(tmp_path):
    """The sitting stops at a failed boot: its console is kept (the error says where, with
    the guest's own error record), and the repeats before it are handed back."""
    boots = []

    def run(cfg, timeout):
        boots.append(cfg.cmdline)
        if len(boots) == 4:
            out = "@idlelab error what=watchdog msg=\"stuck\"\nlast words\n"
            return SimpleNamespace(outcome=SimpleNamespace(ok=False, name="WATCHDOG"), output=out)
        out = "@idlelab result workload=pingpong ok=1 rtt_p50_ns=1000\n"
        return SimpleNamespace(outcome=SimpleNamespace(ok=True, name="SUCCESS"), output=out)

    with pytest.raises(w.RunFailed) as e:
        w.measure("tcg", 2, "10ms", run=run, failed_dir=str(tmp_path),
                  cost=lambda accel: {"prims": {"ipi_halt_rtt": {"ns_p50": 5.0}}})
    assert "idle=halt, repeat 1: guest exit WATCHDOG: stuck" in str(e.value)
    kept = list(tmp_path.iterdir())
    assert len(kept) == 1 and kept[0].read_text().endswith("last words\n")
    assert str(kept[0].name) in str(e.value)
    assert sum(len(v) for v in e.value.samples[""].values()) == 3


def test_a_failed_sitting_prints_what_it_measured_marked_partial(monkeypatch, capsys):
    """main(): the error on stderr, then the table of the runs made, marked partial, exit 1."""
    samples = {"": {"floor": [1000.0], "idle=poll": [2000.0], "idle=haltpoll": [],
                    "idle=halt": [], "ipi_halt_rtt": []}}

    def failing(*a, **k):
        raise w.RunFailed("idle=haltpoll, repeat 1: guest exit TIMEOUT (its console: x)", samples)

    monkeypatch.setattr(w, "measure", failing)
    monkeypatch.setattr(w.hosts, "place", lambda *a: ("tcg", None))
    assert w.main(["--accel", "tcg", "--repeats", "3"]) == w.EXIT_RUN_FAILED
    out, err = capsys.readouterr()
    assert "guest exit TIMEOUT" in err and "(partial: the runs made before the failure, at " \
        "most 1 of 3 repeats a configuration)" in out and "floor" in out
