"""trace=halt_poll_ns's cost per halt, from the traced and untraced boots' own cost tables
(tools/idlelab/sim/tracecost.py), and the traced boots' windows priced with it."""
import json

from idlelab.sim import predict, tracecost


def table(ipi_us, timer_us):
    return {"in_boot": True, "iters": 100,
            "prims": {"ipi_halt_rtt": {"ns_p50": ipi_us * 1000.0},
                      "timer_sleep": {"ns_p50": timer_us * 1000.0}}}


def boot(ipi_us, timer_us, traced):
    return {"cost_table": table(ipi_us, timer_us),
            "trace": {"what": "halt_poll_ns"} if traced else None}


BENCH = table(150, 200)["prims"]


def test_the_cost_is_the_difference_of_medians_traced_against_untraced():
    boots = [boot(185, 215, True), boot(180, 210, True), boot(300, 400, True),
             boot(160, 205, False), boot(140, 190, False)]
    # traced medians 185 / 215; untraced 150 / 200 with the bench's table among them
    assert tracecost.measure(boots, BENCH) == {"ipi_ns": 35000.0, "timer_ns": 15000.0,
                                               "traced_tables": 3, "untraced_tables": 3,
                                               "with_bench": True}
    # a boot traced otherwise (trace=threads) is slowed too: on neither side
    threads = dict(boot(400, 500, False), trace={"what": "threads"})
    assert tracecost.measure(boots + [threads], BENCH)["untraced_tables"] == 3


def test_no_cost_without_both_sides_and_none_below_zero():
    assert tracecost.measure([boot(160, 205, False)], BENCH) is None
    assert tracecost.measure([boot(180, 210, True)], None) is None
    assert tracecost.measure([{"cost_table": None, "trace": {"what": "halt_poll_ns"}}],
                             BENCH) is None
    # a traced table faster than the untraced ones is the boots' spread, not a gain
    assert tracecost.measure([boot(140, 190, True)], BENCH)["ipi_ns"] == 0.0
    # trace=threads is another trace: its boots are not this one's
    assert not tracecost.traced({"trace": {"what": "threads"}})


def test_the_cost_lands_in_the_wake_parts_at_every_percentile():
    parts = {"what": "threads",
             "thread_wake": {"ns_p50": 80000.0, "ns_p90": 130000.0, "ns_p99": 450000.0},
             "thread_wake_timer": {"ns_p50": 20000.0, "ns_p90": 40000.0},
             "thread_entry": {"ns_p50": 30000.0, "ns_p90": 50000.0}}
    cost = {"ipi_ns": 25000.0, "timer_ns": 12000.0}
    out = tracecost.priced(parts, cost)
    assert out["thread_wake"] == {"ns_p50": 105000.0, "ns_p90": 155000.0, "ns_p99": 475000.0}
    assert out["thread_wake_timer"] == {"ns_p50": 32000.0, "ns_p90": 52000.0}
    assert out["thread_entry"] == parts["thread_entry"] and parts["thread_wake"]["ns_p50"] == 80000.0
    assert tracecost.priced({"why": "TCG"}, cost) == {"why": "TCG"}
    assert tracecost.priced(parts, None) is parts


def test_a_traced_boots_own_table_is_priced_with_it_and_an_untraced_ones_not(tmp_path):
    meta = {"cost_table": {"prims": dict(BENCH),
                           "threads": {"thread_wake": {"ns_p50": 80000.0, "ns_p90": 90000.0}}}}
    cost = {"ipi_ns": 25000.0, "timer_ns": 12000.0, "traced_tables": 1, "untraced_tables": 2}
    predict.boot_cost_spec(str(tmp_path), boot(180, 210, True), meta, 1, cost)
    predict.boot_cost_spec(str(tmp_path), boot(150, 200, False), meta, 2, cost)
    t1 = json.load(open(tmp_path / "boot-costs-001.json"))["cost_table"]
    t2 = json.load(open(tmp_path / "boot-costs-002.json"))["cost_table"]
    assert t1["threads"]["thread_wake"] == {"ns_p50": 105000.0, "ns_p90": 115000.0}
    assert t1["in_boot"]["trace_cost"] == cost
    assert t2["threads"]["thread_wake"] == {"ns_p50": 80000.0, "ns_p90": 90000.0}
    assert "trace_cost" not in t2["in_boot"]


def test_predicted_md_says_what_the_traced_windows_were_priced_with():
    cost = {"ipi_ns": 25165.8, "timer_ns": 12582.9, "traced_tables": 15, "untraced_tables": 31,
            "with_bench": True}
    lines = predict.trace_cost_lines([{"trace_cost": cost}, {"trace_cost": cost}, {}])
    assert lines[0].startswith("The 2 windows of boots traced with trace=halt_poll_ns")
    assert "(15 and 31, the bench's among them; medians): +25.2 µs in an IPI's wake" in lines[0]
    cost["with_bench"] = False
    assert "(15 and 31; medians)" in predict.trace_cost_lines([{"trace_cost": cost}])[0]
    assert predict.trace_cost_lines([{}]) == []


def test_no_price_where_the_bench_has_no_parts(tmp_path):
    """A bench whose traced boot failed has a reason, not parts: nothing is priced, and the
    per-boot file says no trace cost it did not apply."""
    meta = {"cost_table": {"prims": dict(BENCH), "threads": {"why": "the traced boot: hung"}}}
    cost = {"ipi_ns": 25000.0, "timer_ns": 12000.0, "traced_tables": 1, "untraced_tables": 2}
    predict.boot_cost_spec(str(tmp_path), boot(180, 210, True), meta, 1, cost)
    t1 = json.load(open(tmp_path / "boot-costs-001.json"))["cost_table"]
    assert "trace_cost" not in t1["in_boot"] and t1["threads"] == meta["cost_table"]["threads"]
    assert not tracecost.priceable({"why": "x"}) and not tracecost.priceable({"what": "threads"})
