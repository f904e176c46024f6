"""The peer table (report/layouts/linux.py) on made-up rows: Linux rows pair with idlelab's by
name, each guest is its own floor's reference, Linux's poll hits are estimated only under its
haltpoll governor, and every difference above PEER_DIFF (and none below) gets a line with the
measured parts that explain it."""
from idlelab.derive import effects, runrow
from idlelab.host import qemu
from idlelab.report import tables
from idlelab.report.layouts import linux as peers


def pp(name, config, guest, rtt, exits_rt, polls_rt=0.0, governor="haltpoll", cpu=100.0,
       poll_entries=None, poll_hits=None, hlt=None, spread=None, repeat=3, kernel=None):
    rt_per_s = 1e6 / rtt
    return runrow.RunRow(
        matrix="linux", name=name, config=config, status="ok", workload="pingpong",
        guest=guest, linux_kernel=kernel or ("debian" if guest == "linux" else None),
        governor=governor, iters=1000, rtt_p50_us=rtt, rt_per_s=rt_per_s,
        host_halt_exits=int(exits_rt * 1000), host_successful_poll=int(polls_rt * 1000),
        halt_exits_per_s=exits_rt * rt_per_s, host_cpu_us_per_wakeup=cpu, host_cpu_pct=50.0,
        host_poll_pct=0.0, guest_poll_entries=poll_entries, guest_poll_hits=poll_hits,
        guest_hlt=hlt, spread=spread or {}, repeat=repeat)


def rows():
    return [
        pp("floor", "floor", "idlelab", 2.0, 0.0),
        pp("neither", "neither", "idlelab", 400.0, 1.0),
        pp("guest-poll", "guest-poll", "idlelab", 3.0, 0.0, poll_entries=1000, poll_hits=990),
        pp("linux-floor", "linux-floor", "linux", 22.0, 0.0, governor="none"),
        # within PEER_DIFF of idlelab's on every figure
        pp("linux-neither", "linux-neither", "linux", 420.0, 1.0, governor="none"),
        pp("linux-guest-poll", "linux-guest-poll", "linux", 500.0, 0.5, governor="menu",
           cpu=140.0, poll_entries=800, hlt=500),
        pp("linux-hpgov-floor", "linux-hpgov-floor", "linux", 22.0, 0.0, governor="none",
           kernel="haltpoll-gov"),
        pp("linux-hpgov-guest-poll", "linux-hpgov-guest-poll", "linux", 30.0, 0.1, cpu=100.0,
           poll_entries=1000, hlt=100, kernel="haltpoll-gov"),
    ]


def test_rows_pair_by_name_and_say_which_guest_ran():
    r = rows()
    assert [peers.base(x) for x in r[3:]] == ["floor", "neither", "guest-poll", "floor",
                                              "guest-poll"]
    assert peers.guest(r[0]) == "idlelab"
    assert peers.guest(r[4]) == "Linux"
    assert peers.guest(r[5]) == "Linux (menu)"
    labels = [label for label, _, _ in peers.pairs(r)]
    assert labels == ["floor, Linux", "neither, Linux", "guest-poll, Linux (menu)",
                      "floor, Linux (haltpoll-gov)", "guest-poll, Linux (haltpoll, haltpoll-gov)"]


def test_poll_hits_counted_by_idlelab_estimated_under_linux_haltpoll_only():
    r = rows()
    assert peers.poll_hit_pct(r[2]) == (99.0, True)
    assert peers.poll_hit_pct(r[7]) == (90.0, False)     # 1000 polls, 100 halts
    assert peers.poll_hit_pct(r[5]) == (None, True)      # menu: not known
    text = peers.markdown(r, {"accel": "kvm"})
    assert "| guest-poll | Linux (haltpoll, haltpoll-gov) | 30.0 | 1.36 | ≈90.0 |" in text
    assert "| guest-poll | Linux (menu) | 500.0 | 22.73 | — |" in text
    assert "| guest-poll | idlelab | 3.0 | 1.50 | 99.0 |" in text


def test_differences_above_the_bar_are_explained_by_the_floors_and_counts():
    text = "\n".join(peers.differences(rows()))
    # the floor: Linux's own wake path, measured with no exit at all
    assert "**floor, Linux**: round trip p50 22.0 µs against idlelab's 2.0 µs (+1000%)" in text
    assert "are 22.0 against 2.0 µs, +20.0 µs a round trip" in text
    # neither: 420 against 400 is +5 %: no line
    assert "neither, Linux" not in text
    # menu's guest polling: above its floor 478 µs against 1 µs, half the halts
    line = next(ln for ln in text.splitlines() if ln.startswith("- **guest-poll, Linux (menu)"))
    assert "above its floor Linux spends 478.0 µs and idlelab 1.0 µs" in line
    assert "per round trip 0.50 against 0.00 halt exits" in line
    assert "host CPU a wake-up 140.0 µs against idlelab's 100.0 µs (+40%)" in text
    # the haltpoll governor's CPU a wake-up equals idlelab's: no CPU line for it
    assert "guest-poll, Linux (haltpoll, haltpoll-gov)**: host CPU" not in text


def test_a_placed_row_is_its_own_configuration():
    """runs.csv's config drops a `.part`: host-poll.placed pairs with linux-host-poll.placed,
    not with host-poll."""
    r = [pp("host-poll", "host-poll", "idlelab", 800.0, 2.0),
         pp("host-poll.placed", "host-poll", "idlelab", 600.0, 2.0, polls_rt=0.8),
         pp("linux-host-poll", "linux-host-poll", "linux", 1100.0, 2.0, governor="none"),
         pp("linux-host-poll.placed", "linux-host-poll", "linux", 560.0, 1.7, polls_rt=0.7,
            governor="none")]
    assert [peers.base(x) for x in r] == ["host-poll", "host-poll.placed"] * 2
    assert [(label, lin.name, ida.name) for label, lin, ida in peers.pairs(r)] == [
        ("host-poll, Linux", "linux-host-poll", "host-poll"),
        ("host-poll.placed, Linux", "linux-host-poll.placed", "host-poll.placed")]
    assert "| host-poll.placed | idlelab | 600.0 |" in peers.pingpong_table(r)


def test_overlapping_repeats_are_said_and_no_difference_says_none():
    a = pp("neither", "neither", "idlelab", 400.0, 1.0, spread={"rtt_p50_us": (300.0, 500.0)})
    b = pp("linux-neither", "linux-neither", "linux", 480.0, 1.0, governor="none",
           spread={"rtt_p50_us": (450.0, 520.0)})
    assert "+20%, the repeats overlap" in peers.differences([a, b])[0]
    same = pp("linux-neither", "linux-neither", "linux", 410.0, 1.0, governor="none")
    assert peers.differences([a, same]) == []
    assert "None: every figure both guests measured is within 10%" in \
        peers.markdown([a, same], {"accel": "kvm"})


def test_the_report_dispatches_the_linux_matrix_to_the_peer_layout():
    assert tables.layout("linux") is peers
    assert tables.markdown("linux", rows(), {"accel": "kvm"}).startswith(f"# {peers.TITLE}")


def test_linux_haltpoll_durations_reach_linux_in_ns():
    """Linux's haltpoll parameters take plain ns; idlelab's way of writing them would be
    refused by Linux and its default kept without a word."""
    line = qemu.linux_cmdline("workload=periodic period=552us haltpoll.guest_halt_poll_ns=2ms "
                              "haltpoll.guest_halt_poll_grow_start=100us "
                              "haltpoll.guest_halt_poll_grow=2")
    assert line.startswith(qemu.LINUX_CMDLINE + " ")
    assert "period=552us" in line                            # idlelab's knob: as written
    assert "haltpoll.guest_halt_poll_ns=2000000" in line
    assert "haltpoll.guest_halt_poll_grow_start=100000" in line
    assert "haltpoll.guest_halt_poll_grow=2" in line


def test_a_periodic_difference_names_the_idle_gap_against_the_window():
    """At the same period a later timer leaves a shorter gap to poll in: the line says both
    gaps and the window, so a poll that hits in one guest and not the other is explained."""
    def per(name, guest, late, hits, hlt, governor="haltpoll"):
        return runrow.RunRow(
            matrix="linux", name=f"{name}-period=timer+2500us", config=name, status="ok",
            workload="periodic", guest=guest, governor=governor, period_us=2664.0,
            late_p50_us=late, guest_poll_entries=1000, guest_poll_hits=hits, guest_hlt=hlt,
            guest_wakeups=1000, host_halt_exits=hlt, halt_exits_per_s=hlt * 0.375,
            host_cpu_us_per_wakeup=700.0, guest_halt_poll_ns="2ms",
            linux_kernel="haltpoll-gov" if guest == "linux" else None)
    r = [per("sweep", "idlelab", 450.0, 0, 1000), per("linux-hpgov-sweep", "linux", 737.0,
                                                       None, 476)]
    text = "\n".join(peers.differences(r))
    assert "timer lateness p50 737.0 µs against idlelab's 450.0 µs (+64%)" in text
    assert "guest polls hit 52.4 against 0.0 %; the idle gap (period less lateness) 1927 " \
        "against 2214 µs, against the guest window of 2ms" in text


# --- within= rows: a setting judged on the paired windows of the same boots -------------------

def windows_of(name, config, guest, rtts, boots=3, rounds=2, paired=True):
    """A cell's window rows (or boot rows, unpaired), RTT by boot and round from rtts(boot,
    round), aggregated as the report aggregates them."""
    out = []
    for b in range(1, boots + 1):
        for k in range(1, rounds + 1):
            r = pp(name, config, guest, rtts(b, k), 1.0, governor="none", repeat=b)
            if paired:
                r = runrow.replace(r, window_round=k, window=k)
            out.append(r)
    return out


def boot_offset(b):
    """Boots 30 % apart: a comparison across boots cannot see a 10 % effect through that."""
    return {1: 700.0, 2: 1000.0, 3: 1300.0}[b]


def test_a_setting_that_shared_boots_is_judged_on_the_pairs_with_its_ci():
    """host-poll is 10 % faster than neither in every boot, the boots 30 % apart: paired,
    the effect is decided and its interval printed; the same windows in boots of their own
    are not judged on pairs, and the line says so."""
    group = "linux-neither-host-poll"
    a = windows_of("linux-neither", group, "linux", lambda b, k: boot_offset(b) + k)
    b = windows_of("linux-host-poll", group, "linux", lambda b, k: boot_offset(b) * 0.9 + k)
    rows = runrow.aggregate(a + b)
    assert [peers.base(r) for r in rows] == ["neither", "host-poll"]
    ra, rb = rows
    assert effects.paired_rows(ra, rb)
    effect, ci, how = peers.judged(ra, rb, "rtt_p50_us", " µs")
    assert how == "B below A: paired windows, 3 boots x 6 pairs"
    assert effect.startswith("-100 µs"), effect
    lo, hi = (float(x) for x in ci[len("95 % CI ["):-1].split(", "))
    assert lo < -100 < hi < 0, ci      # the planted effect: -70, -100, -130 µs by boot
    table = peers.effects_table(rows)
    assert "| host polling (300 µs) against neither | Linux | round trip p50 |" in table
    assert "95 % CI [" in table and "paired windows" in table
    # boots of their own (old results: no rounds), the same numbers
    a = windows_of("linux-neither", "linux-neither", "linux", lambda b, k: boot_offset(b) + k,
                   paired=False)
    b = windows_of("linux-host-poll", "linux-host-poll", "linux",
                   lambda b, k: boot_offset(b) * 0.9 + k, paired=False)
    ra, rb = runrow.aggregate(a + b)
    assert not effects.paired_rows(ra, rb)
    effect, ci, how = peers.judged(ra, rb, "rtt_p50_us", " µs")
    assert ci == tables.EMPTY and how == "boots of their own, medians: the repeats overlap"
    assert effect == "-100 µs, -10%"


def test_windows_of_different_boot_rows_are_not_paired():
    a = runrow.aggregate(windows_of("neither", "one-boot-row", "idlelab", lambda b, k: 400.0))
    b = runrow.aggregate(windows_of("host-poll", "another", "idlelab", lambda b, k: 300.0))
    assert not effects.paired_rows(a[0], b[0])
    assert peers.judged(a[0], b[0], "rtt_p50_us", " µs")[2].startswith("boots of their own")


def test_each_guests_effects_are_laid_out_and_old_results_still_make_the_page():
    r = rows() + [pp("host-poll", "host-poll", "idlelab", 300.0, 1.0),
                  pp("linux-host-poll", "linux-host-poll", "linux", 350.0, 1.0,
                     governor="none")]
    got = [(what, who, a.name, b.name) for what, who, a, b in peers.effect_rows(r)]
    assert got == [
        ("host polling (300 µs) against neither", "idlelab", "neither", "host-poll"),
        ("host polling (300 µs) against neither", "Linux", "linux-neither", "linux-host-poll"),
        ("guest polling against neither", "idlelab", "neither", "guest-poll"),
        ("guest polling against neither", "Linux (menu)", "linux-neither", "linux-guest-poll")]
    text = peers.markdown(r, {"accel": "kvm"})
    assert "## What each setting does, guest by guest" in text
    assert "| guest polling against neither | Linux (menu) | round trip p50 | 420.0 | 500.0 | " \
        "+80 µs, +19% | — | boots of their own, medians: the repeats do not overlap |" in text
    assert "| -2500/s, -100% |" in text           # idlelab's guest polling: no halt left
    assert "Two guests never share a boot" in text
