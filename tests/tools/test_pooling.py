"""costtable/pooling.py: several traced pairs' thread parts made one."""
import pytest

from idlelab.costtable import pooling


def _summary(k, probe):
    return {"what": "threads", "halts": 10, "rewakes": 1, "rewake_ppm": 100.0 * k,
            "preempt_per_s": 5.0 * k, "preempted_by": {"kworker": k},
            "thread_wake": {"ns_p50": 100.0 * k, "ns_p90": 300.0 * k, "ns_p99": 900.0 * k,
                            "n": 10},
            "probe": {"ipi": probe, "timer": probe + 0.1, "basis": {"ipi": "ipi_halt_rtt",
                                                                   "timer": "timer_sleep"}}}


def test_each_figure_is_the_median_of_the_pairs_and_the_counts_their_sum():
    one, two, odd = _summary(1, 0.7), _summary(2, 0.8), _summary(30, 0.75)
    got = pooling.pooled([one, two, odd])
    # the outlier pair moves no statistic past the middle one
    assert got["thread_wake"] == {"ns_p50": 200.0, "ns_p90": 600.0, "ns_p99": 1800.0, "n": 30}
    assert (got["halts"], got["rewakes"], got["pairs"]) == (30, 3, 3)
    assert (got["rewake_ppm"], got["preempt_per_s"]) == (200.0, 10.0)
    assert got["probe"]["ipi"] == 0.75 and got["probe"]["timer"] == pytest.approx(0.85)
    assert got["probe"]["basis"] == one["probe"]["basis"]
    # by task, as preempted_ms is summed
    assert (got["what"], got["preempted_by"]) == ("threads", {"kworker": 33})


def test_a_part_only_some_pairs_have_is_theirs_and_one_pair_is_as_measured():
    one, two = _summary(1, 0.7), _summary(3, 0.8)
    one["thread_timer_late"] = {"ns_p50": 50.0, "ns_p90": 70.0, "n": 4}
    got = pooling.pooled([one, two])
    assert got["thread_timer_late"] == {"ns_p50": 50.0, "ns_p90": 70.0, "n": 4}
    assert got["thread_wake"]["ns_p50"] == 200.0        # two pairs: their mean
    assert pooling.pooled([one]) == dict(one, pairs=1)


def test_a_statistic_some_pair_lacks_is_left_out():
    """A pair traced before the p99 was kept: a median over the others alone could put the
    p99 under the p90."""
    one, two, three = _summary(1, 0.7), _summary(2, 0.8), _summary(3, 0.9)
    del two["thread_wake"]["ns_p99"]
    got = pooling.pooled([one, two, three])
    assert got["thread_wake"] == {"ns_p50": 200.0, "ns_p90": 600.0, "n": 30}
