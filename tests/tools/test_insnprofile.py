"""The wake-up path's instructions by function (tools/insncount/profile): the parsing and
mapping on made-up inputs, and a live TCG profile held against insncount's phase count."""
import pytest

from idlelab.wakepath import insncount, insnprofile


def test_parse_profile_and_nm():
    assert insnprofile.parse_profile("100000 3\n100004 7\n") == {0x100000: 3, 0x100004: 7}
    with pytest.raises(ValueError, match="line 2"):
        insnprofile.parse_profile("100000 3\nnot a line at all\n")
    syms = insnprofile.parse_nm("0000000000100010 T b\n0000000000100000 t a\n"
                                "0000000000200000 D data\n                 U undef\n")
    assert syms == [(0x100000, "a"), (0x100010, "b")]


def test_counts_go_to_the_function_that_holds_them_per_round_trip():
    syms = [(0x100000, "a"), (0x100010, "b")]
    by_fn, by_addr = insnprofile.per_round_trip(
        {0x100000: 40, 0x10000f: 20, 0x100010: 100, 0x100020: 10}, 10, syms)
    assert by_fn == {"a": 6.0, "b": 11.0}
    assert by_addr[0x10000f] == 2.0


def test_the_waiting_left_out_is_the_one_insncount_leaves_out():
    ids = insncount.probe_ids()
    block = insnprofile.plugin_args("idle=poll", "o", "p", ids)
    spin = insnprofile.plugin_args("pingpong.mode=spin", "o", "p", ids)
    assert f"window={ids['WINDOW_OPEN']}:{ids['WINDOW_CLOSE']}" in block
    assert f"skip={ids['IDLE_WAIT']}:{ids['NOTICE']}" in block
    assert f"skip={ids['WAKE_END']}:{ids['RUNNING']}" in spin


def test_the_profile_adds_up_to_the_counted_path():
    """Both count the same instructions (the window, waiting out): a profile that counted
    the boot, the waiting or nothing at all would miss by far more than 3 %."""
    by_fn, _ = insnprofile.profile("idle=haltpoll")
    counted = insncount.count("idle=haltpoll").per_rt()
    total = sum(by_fn.values())
    assert abs(total - counted) <= 0.03 * counted, (total, counted)
    assert by_fn["idle_until_work"] > 10 and by_fn["thread_wake"] > 10
