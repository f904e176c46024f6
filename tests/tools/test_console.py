"""The terminal's tables (report/console.py) from canned records: a run's guest counts beside
KVM's per vCPU, and `make run`'s closing comparison against plain halt, by their numbers."""
from idlelab.derive import runrow
from idlelab.report import console
from test_report import record


def cells(line):
    return line.split()


def test_the_vcpu_table_puts_the_guests_hlt_beside_kvms_halt_exits():
    rec = record("demo", "pingpong-hostpoll", "c", "pingpong", hlt=(500, 400),
                 exits=(501, 400), attempted=(300, 7), ok=(120, 0), cpu_pct=(61.5, 40.25))
    lines = console.vcpu_table(rec)
    assert "guest" in lines[0] and "KVM polls" in lines[0]
    assert cells(lines[1])[:4] == ["vCPU", "wakeups", "HLT", "halt_exits"]
    # vCPU, wakeups, HLT, halt_exits, tried, caught, IPIs sent, avoided, poll %, thread CPU %
    assert cells(lines[2]) == ["0", "3", "500", "501", "300", "120", "1000", "0", "0.0", "61.5"]
    assert cells(lines[3]) == ["1", "3", "400", "400", "7", "0", "1000", "0", "0.0", "40.2"]


def test_under_tcg_the_kvm_columns_say_so_and_a_failed_run_has_no_table():
    lines = console.vcpu_table(record("demo", "pingpong-halt", "c", "pingpong", accel="tcg"))
    assert cells(lines[2])[3:6] == ["n/a", "n/a", "n/a"]
    assert console.vcpu_table(record("demo", "x", "c", "pingpong", status="failed")) == []


def test_the_comparison_holds_each_configuration_against_plain_halt():
    rows = [runrow.summarize(r) for r in (
        record("demo", "pingpong-halt", "c", "pingpong", hlt=(1000, 1000), rtt=400000,
               cpu_pct=(60.0, 60.0)),
        record("demo", "pingpong-guestpoll", "c", "pingpong", hlt=(250, 250), rtt=200000,
               cpu_pct=(90.0, 90.0)),
        record("demo", "pingpong-hostpoll", "c", "pingpong", status="not run",
               reason="no KVM"))]
    labels = {"halt": "plain halt", "hostpoll": "host polls", "guestpoll": "guest polls"}
    head, halt, hostpoll, guestpoll = console.comparison(rows, labels, "halt")
    assert "vs halt: CPU" in head
    # host CPU, its us per wake-up (6 wake-ups: the record's 3 a vCPU), halt exits, IPIs
    # sent and avoided per wake-up, latency
    assert cells(halt)[3:10] == ["60.0%", "200000.0", "333.33", "333.33", "0.00", "RTT", "p50"]
    assert cells(halt)[10] == "400us" and len(cells(halt)) == 11
    assert hostpoll.split()[:4] == ["pingpong", "host", "polls", "not"]
    # +30 points of host CPU (+50 % per wake-up), 75 % fewer halt exits, IPIs the same,
    # half the round trip
    assert cells(guestpoll)[-6:] == ["+30.0", "pt", "+50%", "-75%", "+0%", "-50%"]


def test_under_tcg_the_comparison_has_no_kvm_figures():
    rows = [runrow.summarize(record("demo", f"periodic-{c}", "c", "periodic", accel="tcg"))
            for c in ("halt", "guestpoll")]
    _, halt, guestpoll = console.comparison(rows, {"halt": "halt", "guestpoll": "poll"}, "halt")
    assert cells(halt)[3] != "n/a" and cells(halt)[4] == "n/a"
    assert cells(guestpoll)[-3] == "n/a"       # no change of KVM's exits to show
