/*
 * The governor interface (kernel/policy/governor.h) on the host: the registry matches the
 * cpuidle.governor= choices; an entry aborted before its state ran is no entry to either
 * governor; and the "predict" governor's rule, vector by vector: haltpoll's decisions off
 * the plateau of docs/haltpoll-spec.md §1.10.3, timed halts and short polls on it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "kernel/knobs/knobs.h"
#include "kernel/policy/governors.h"
#include "kernel/policy/predict.h"
#include "tests/unit/ideal_idle.h"
#include "tests/unit/named_cases.h"

#define US	    1000ull
#define TICK_NS_250 4000000ull

static struct gov_params params(uint32_t gmax_ns, uint32_t grow_start_ns)
{
	return (struct gov_params){.guest_halt_poll_ns = gmax_ns,
				   .grow = 2,
				   .shrink = 2,
				   .grow_start = grow_start_ns,
				   .allow_shrink = true};
}

/* The idealised idle of §1.10.2 (ideal_idle.h), a period at a time through the kernel's
 * entry sequence (kernel/policy/idle_entry.h), at 250 Hz. */
static void run_init(struct ideal_cpu *r, const struct idle_governor *gov, struct gov_params p)
{
	ideal_init(r, gov, p, TICK_NS_250);
}

static void idle_period(struct ideal_cpu *r, uint64_t d)
{
	ideal_period(r, d, 8);
}

static void test_registry_matches_the_knob(void **state)
{
	(void)state;
	assert_int_equal(idle_governors_count, KNOB_NCHOICES_governor);
	for (unsigned i = 0; i < idle_governors_count; i++)
		assert_string_equal(idle_governors[i]->name, knob_defs[KNOB_governor].choices[i]);
	assert_ptr_equal(idle_governors[knob_defs[KNOB_governor].def], &gov_haltpoll);
}

/*
 * An entry given up after select because work had come (an interrupt pending as the state
 * would begin: call_cpuidle()'s -EBUSY) ran no state: it is no poll and no halt, and the
 * governor does not reflect it (docs/haltpoll-spec.md §1.8). Each case brings a CPU to a
 * state with a history of idle periods (and the first entries of one more), aborts the next
 * entry there, then idles on beside a twin that went through the same but for the abort:
 * both must decide the same, entry by entry. Counted as a poll, the abort would leave
 * haltpoll's last state a poll: after a halt, with an expiry still marked from the poll
 * before it, haltpoll would halt where its twin polls (select row 3 instead of row 5).
 */
#define MAX_PERIODS 16

struct abort_case {
	const char *name;
	const struct idle_governor *gov;
	uint32_t gmax_ns, grow_start_ns;
	bool latency_req_zero;
	uint64_t history[MAX_PERIODS]; /* whole idle periods before the one aborted in */
	unsigned n_history;
	uint64_t period_ns; /* the period aborted in ... */
	unsigned entries;   /* ... after this many of its entries (none of them ending it) */
	uint64_t after[MAX_PERIODS]; /* then these, compared with the twin's */
	unsigned n_after;
};

#define X4(v)  v, v, v, v
#define X12(v) X4(v), X4(v), X4(v)
static const struct abort_case aborts[] = {
    {"haltpoll: an abort on a fresh CPU (W = 0) is nothing",
     &gov_haltpoll,
     200 * US,
     50 * US,
     false,
     {0},
     0,
     30 * US,
     0,
     {30 * US, 30 * US, 80 * US, 300 * US},
     4},
    /* W = 50 us; the 80 us period polled (expired) then halted: last a halt, an expiry
     * marked */
    {"haltpoll: an abort after a halt is no poll",
     &gov_haltpoll,
     200 * US,
     50 * US,
     false,
     {30 * US, 80 * US},
     2,
     30 * US,
     0,
     {30 * US, 30 * US, 80 * US, 120 * US},
     4},
    {"haltpoll: an abort after a poll hit is no poll",
     &gov_haltpoll,
     200 * US,
     50 * US,
     false,
     {30 * US, 30 * US},
     2,
     30 * US,
     0,
     {30 * US, 80 * US, 80 * US},
     3},
    /* the period's poll expired, then the work came as the halt would begin */
    {"haltpoll: an abort after an expired poll is no poll",
     &gov_haltpoll,
     200 * US,
     50 * US,
     false,
     {30 * US},
     1,
     80 * US,
     1,
     {30 * US, 80 * US, 30 * US},
     3},
    /* forced to poll from W = 0: aborted, it asks no limit, so the fallback is not stored */
    {"haltpoll: an aborted forced poll stores no window",
     &gov_haltpoll,
     200 * US,
     50 * US,
     true,
     {0},
     0,
     30 * US,
     0,
     {30 * US, 30 * US},
     2},
    {"predict: an abort after an expired poll off the plateau is no poll",
     &gov_predict,
     200 * US,
     50 * US,
     false,
     {30 * US},
     1,
     80 * US,
     1,
     {80 * US, 80 * US, 80 * US, 80 * US},
     4},
    {"predict: an abort between periods on the plateau is nothing",
     &gov_predict,
     2000 * US,
     100 * US,
     false,
     {X12(1500 * US)},
     12,
     1500 * US,
     0,
     {X4(1500 * US), 1900 * US},
     5},
    /* the plateau's timed halt ended by its timer, then the work came as the poll would begin */
    {"predict: an abort after the plateau's timed halt is no poll",
     &gov_predict,
     2000 * US,
     100 * US,
     false,
     {X12(1500 * US)},
     12,
     1500 * US,
     1,
     {X4(1500 * US), 1900 * US},
     5},
};

/* Up to the entry that is aborted (or, for the twin, would be): the history, then the first
 * `entries` entries of one more period, none of which ends it; then the work has come. */
static void idle_up_to_the_abort(struct ideal_cpu *c, const struct abort_case *a)
{
	ideal_init(c, a->gov, params(a->gmax_ns, a->grow_start_ns), TICK_NS_250);
	c->k.latency_req_zero = a->latency_req_zero;
	for (unsigned i = 0; i < a->n_history; i++)
		ideal_period(c, a->history[i], 8);
	c->left = a->period_ns;
	c->n = 0;
	for (unsigned i = 0; i < a->entries; i++)
		assert_false(idle_entry_run(&ideal_ops, c, &c->k, &c->g, &c->seq));
	c->left = 0;
}

static void test_abort_case(void **state)
{
	const struct abort_case *a = *state;
	struct ideal_cpu ab, twin;
	unsigned polls, halts;

	idle_up_to_the_abort(&ab, a);
	idle_up_to_the_abort(&twin, a);
	polls = ab.polls;
	halts = ab.halts;
	assert_true(idle_entry_run(&ideal_ops, &ab, &ab.k, &ab.g, &ab.seq)); /* the abort */
	idle_entry_reflect_last(&ideal_ops, &ab, &ab.k, &ab.g, &ab.seq);
	assert_int_equal(ab.aborted, 1);
	assert_int_equal(ab.polls, polls);
	assert_int_equal(ab.halts, halts);
	assert_int_equal(a->gov->window_ns(&ab.g), a->gov->window_ns(&twin.g));
	for (unsigned i = 0; i < a->n_after; i++) {
		unsigned n = ideal_period(&ab, a->after[i], 8);

		assert_int_equal(ideal_period(&twin, a->after[i], 8), n);
		for (unsigned k = 0; k < n && k < IDEAL_MAX_ENTRIES; k++) {
			assert_int_equal(ab.e[k].state, twin.e[k].state);
			assert_int_equal(ab.e[k].ns, twin.e[k].ns);
			assert_int_equal(ab.e[k].expired, twin.e[k].expired);
		}
		assert_int_equal(a->gov->window_ns(&ab.g), a->gov->window_ns(&twin.g));
	}
	assert_int_equal(ab.polls, twin.polls);
	assert_int_equal(ab.hits, twin.hits);
	assert_int_equal(ab.halts, twin.halts);
	assert_int_equal(ab.grows, twin.grows);
	assert_int_equal(ab.shrinks, twin.shrinks);
	assert_int_equal(ab.g.takeovers, twin.g.takeovers);
}

/* One governor's decisions step by step against another's, over the same periods. */
static void assert_same_run(const struct ideal_cpu *a, const struct ideal_cpu *b)
{
	assert_int_equal(a->polls, b->polls);
	assert_int_equal(a->hits, b->hits);
	assert_int_equal(a->expiries, b->expiries);
	assert_int_equal(a->halts, b->halts);
	assert_int_equal(a->timed_halts, b->timed_halts);
	assert_int_equal(a->polled_ns, b->polled_ns);
	assert_int_equal(a->g.haltpoll.poll_limit_ns, b->g.haltpoll.poll_limit_ns);
}

/*
 * The plateau (the measurement): a constant 1500 us period, guest_halt_poll_ns 2 ms,
 * grow_start 100 us. haltpoll's window settles below the period: every poll expires and
 * halts anyway. predict goes as haltpoll until it has seen the signature four times with
 * haltpoll's window settled (W: 0, 100, 200, 400, 800 us, then 800 for good); then each
 * period is a halt timed to end a margin (1500/16 us) before the wake-up and a poll that
 * catches it: a poll hit for a margin's polling, where haltpoll polls 800 us and halts.
 */
static void test_plateau_haltpoll_expires_predict_hits(void **state)
{
	struct gov_params p = params(2000 * US, 100 * US);
	struct ideal_cpu hp, pr;
	uint64_t pr_before_ns;
	int seen = 0;

	(void)state;
	run_init(&hp, &gov_haltpoll, p);
	run_init(&pr, &gov_predict, p);
	while (!pr.g.predict.plateau && seen < 50) {
		idle_period(&hp, 1500 * US);
		idle_period(&pr, 1500 * US);
		assert_same_run(&pr, &hp); /* haltpoll's decisions until the plateau is seen */
		seen++;
	}
	assert_int_equal(hp.g.haltpoll.poll_limit_ns, 800 * US);
	assert_int_equal(seen, 8); /* W reaches 800 in period 4, holds in 5-8: the signature */
	pr_before_ns = pr.polled_ns;
	for (int i = seen; i < 200; i++) {
		idle_period(&hp, 1500 * US);
		idle_period(&pr, 1500 * US);
	}
	assert_true(hp.expiries >= 190 && hp.hits == 0);
	assert_true(hp.g.haltpoll.poll_limit_ns < 1500 * US);
	assert_int_equal(pr.hits, 200 - 8);
	assert_int_equal(pr.expiries, 8 - 1); /* all but the first period, which halted at W = 0 */
	assert_int_equal(pr.timed_halts, 200 - 8);
	assert_int_equal(pr.g.predict.halt_until_ns, 1500 * US - 1500 * US / 16);
	assert_int_equal(pr.g.predict.poll_until_ns, 1500 * US + 1500 * US / 16);
	assert_int_equal(gov_predict.window_ns(&pr.g), 2 * (1500 * US / 16));
	assert_int_equal(pr.g.takeovers, 1);
	/* what the hits cost: a margin each, against haltpoll's 800 us window each */
	assert_int_equal(pr.polled_ns, pr_before_ns + 192 * (1500 * US / 16));
	assert_true(pr.polled_ns < hp.polled_ns / 5);
	/* haltpoll's own window waits where it was, for when the plateau ends */
	assert_int_equal(pr.g.haltpoll.poll_limit_ns, hp.g.haltpoll.poll_limit_ns);
}

/*
 * Off the plateau predict is haltpoll: 5000 pseudo-random periods of 1-600 us with the
 * default 200 us cap (hits, expiries, halts, long and short) give haltpoll's decisions
 * until chance lines up four missed, regular periods under a settled window (the spec's own
 * plateau, W = 100 us and 100 < D <= 200 us, four times running); each such spell ends at
 * its first expiry. Over the run: the plateau entered rarely, within 1 % of haltpoll's
 * hits, and no more than 5 % more time polled.
 */
static void test_off_the_plateau_it_is_haltpoll(void **state)
{
	struct gov_params p = params(200 * US, 50 * US);
	struct ideal_cpu hp, pr;
	uint64_t x = 12345;
	int first = -1;

	(void)state;
	run_init(&hp, &gov_haltpoll, p);
	run_init(&pr, &gov_predict, p);
	for (int i = 0; i < 5000; i++) {
		uint64_t d;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		d = (x >> 33) % (600 * US) + 1;
		idle_period(&hp, d);
		idle_period(&pr, d);
		if (first < 0 && !pr.g.takeovers)
			assert_same_run(&pr, &hp);
		else if (first < 0)
			first = i;
	}
	print_message("random periods: plateau entered %lu times (first at period %d); hits %u "
		      "vs %u, polled %lu vs %lu us\n",
		      (unsigned long)pr.g.takeovers, first, pr.hits, hp.hits,
		      (unsigned long)(pr.polled_ns / US), (unsigned long)(hp.polled_ns / US));
	assert_true(first > 100);
	assert_true(pr.g.takeovers <= 10);
	assert_true(pr.hits * 100 >= hp.hits * 99);
	assert_true(pr.polled_ns * 100 <= hp.polled_ns * 105);
	assert_true(hp.hits > 100 && hp.expiries > 100 && hp.halts > 100);
}

/* Long periods carry no signature (haltpoll shrinks to W = 0 and halts at once, burning
 * nothing): haltpoll's own decisions, untimed halts. */
static void test_long_periods_are_haltpoll_s(void **state)
{
	struct gov_params p = params(200 * US, 50 * US);
	struct ideal_cpu hp, pr;

	(void)state;
	run_init(&hp, &gov_haltpoll, p);
	run_init(&pr, &gov_predict, p);
	for (int i = 0; i < 50; i++) {
		idle_period(&hp, 5000 * US);
		idle_period(&pr, 5000 * US);
	}
	assert_same_run(&pr, &hp);
	assert_int_equal(pr.g.predict.streak, 0);
	assert_false(pr.g.predict.plateau);
}

/*
 * Missed wake-ups that are not regular (max > 2 * min over the last four) are chance, not a
 * plateau: 600, 1300, 600, 1300 us (each polled, missed, then halted) stay haltpoll's.
 */
static void test_irregular_misses_are_not_a_plateau(void **state)
{
	struct gov_params p = params(2000 * US, 100 * US);
	struct ideal_cpu hp, pr;
	const uint64_t d[] = {1300 * US, 600 * US};

	(void)state;
	run_init(&hp, &gov_haltpoll, p);
	run_init(&pr, &gov_predict, p);
	for (int i = 0; i < 40; i++) {
		idle_period(&hp, d[i % 2]);
		idle_period(&pr, d[i % 2]);
	}
	assert_same_run(&pr, &hp);
	assert_true(hp.expiries >= 20); /* haltpoll missed: the signature was there */
	assert_int_equal(pr.g.takeovers, 0);
}

/*
 * The plateau is left at the first poll that expires: the period moved from 1500 to
 * 1900 us (past the 1593.75 us the poll covers). That period halts, polls, expires, and
 * haltpoll takes the rest from that expired poll (it halts, as after one of its own); it
 * is no signature (haltpoll did not decide all of it); the next ones are haltpoll's
 * until its window has settled and missed four times again, and the new plan is around
 * 1900 us.
 */
static void test_an_expiry_leaves_the_plateau(void **state)
{
	struct gov_params p = params(2000 * US, 100 * US);
	struct ideal_cpu r;
	unsigned hits, expiries;

	(void)state;
	run_init(&r, &gov_predict, p);
	for (int i = 0; i < 12; i++)
		idle_period(&r, 1500 * US);
	assert_true(r.g.predict.plateau);
	expiries = r.expiries;
	idle_period(&r, 1900 * US);
	assert_false(r.g.predict.plateau);
	assert_int_equal(r.expiries, expiries + 1);
	assert_int_equal(r.g.predict.streak, 0);
	hits = r.hits;
	for (int i = 0; i < 20 && !r.g.predict.plateau; i++)
		idle_period(&r, 1900 * US);
	assert_true(r.g.predict.plateau); /* haltpoll's window moved, settled, missed 4 times */
	assert_int_equal(r.g.takeovers, 2);
	/* the history still holds one 1500: the spread (400 us) is the margin */
	idle_period(&r, 1900 * US);
	assert_int_equal(r.hits, hits + 1);
}

/*
 * Leaving the plateau, haltpoll goes on from the poll that expired, as after any expired
 * poll of its own: it halts. Linux's defaults, 10 periods of 60 us (haltpoll's window
 * settles at 50 us and misses: the plateau, planned 53.75-66.25 us), then one of 120 us:
 * a timed halt, the plateau's 12.5 us poll expires, and the rest of the period is one
 * halt; haltpoll adapts on that halt's residual (53.75 us: it grows to 100 us, as haltpoll
 * alone does on its 70 us one) and is a poll hit again after.
 */
static void test_leaving_the_plateau_halts_at_once(void **state)
{
	struct gov_params p = params(200 * US, 50 * US);
	struct ideal_cpu hp, pr;
	unsigned expiries;

	(void)state;
	run_init(&hp, &gov_haltpoll, p);
	run_init(&pr, &gov_predict, p);
	for (int i = 0; i < 10; i++) {
		idle_period(&hp, 60 * US);
		idle_period(&pr, 60 * US);
	}
	assert_true(pr.g.predict.plateau);
	assert_int_equal(pr.g.predict.halt_until_ns, 60 * US - 50 * US / 8);
	assert_int_equal(pr.g.predict.poll_until_ns, 60 * US + 50 * US / 8);
	expiries = pr.expiries;
	idle_period(&hp, 120 * US);
	assert_int_equal(ideal_period(&pr, 120 * US, 8), 3);
	assert_int_equal(pr.e[0].state, GOV_STATE_HALT);
	assert_int_equal(pr.e[0].ns, 60 * US - 50 * US / 8);
	assert_int_equal(pr.e[1].state, GOV_STATE_POLL);
	assert_int_equal(pr.e[1].ns, 2 * (50 * US / 8));
	assert_true(pr.e[1].expired);
	assert_int_equal(pr.e[2].state, GOV_STATE_HALT);
	assert_int_equal(pr.e[2].ns, 120 * US - 60 * US - 50 * US / 8);
	assert_int_equal(pr.expiries, expiries + 1);
	assert_false(pr.g.predict.plateau);
	assert_int_equal(pr.g.haltpoll.poll_limit_ns, 100 * US);
	assert_int_equal(pr.g.haltpoll.poll_limit_ns, hp.g.haltpoll.poll_limit_ns);
	/* and haltpoll's again from there: the next 120 us period is its 100 us poll's miss */
	idle_period(&hp, 120 * US);
	idle_period(&pr, 120 * US);
	assert_int_equal(pr.e[0].state, GOV_STATE_POLL);
	assert_int_equal(pr.e[0].ns, 100 * US);
	assert_int_equal(pr.g.haltpoll.poll_limit_ns, hp.g.haltpoll.poll_limit_ns);
}

/*
 * A wake-up that lands at a poll's expiry check (the kernel's poll loop tests for work,
 * then the clock: work that comes between the two is pending as the poll reports its
 * expiry) ends the idle period there; the next period is a period of its own. On the
 * plateau of 1500 us periods the plateau's poll ends at 1593.75 us: a period of exactly
 * that is a timed halt and a poll that expires as the wake-up comes, caught at its last
 * check. The period, 1593.75 us, is filed, predict stays on the plateau, and the next
 * 1500 us period is a timed halt and a hit, as before it.
 */
static void test_a_wake_at_the_expiry_check_ends_the_period(void **state)
{
	struct gov_params p = params(2000 * US, 100 * US);
	const uint64_t edge = 1500 * US + 1500 * US / 16;
	struct ideal_cpu r;
	unsigned hits, expiries;

	(void)state;
	run_init(&r, &gov_predict, p);
	for (int i = 0; i < 12; i++)
		idle_period(&r, 1500 * US);
	assert_true(r.g.predict.plateau);
	assert_int_equal(r.g.predict.poll_until_ns, edge);
	r.wake_at_check = true;
	expiries = r.expiries;
	assert_int_equal(ideal_period(&r, edge, 8), 2);
	assert_int_equal(r.expiries, expiries + 1); /* its poll reported an expiry */
	assert_int_equal(r.g.predict.period_ns, 0); /* and the period is over */
	assert_int_equal(
	    r.g.predict.periods[(r.g.predict.next + PREDICT_HISTORY - 1) % PREDICT_HISTORY], edge);
	assert_true(r.g.predict.plateau);
	hits = r.hits;
	assert_int_equal(ideal_period(&r, 1500 * US, 8), 2);
	assert_int_equal(r.hits, hits + 1);
	assert_int_equal(r.e[0].state, GOV_STATE_HALT);
	assert_int_equal(r.g.predict.period_ns, 0);
	assert_int_equal(
	    r.g.predict.periods[(r.g.predict.next + PREDICT_HISTORY - 1) % PREDICT_HISTORY],
	    1500 * US);
}

/*
 * Where a timed halt comes back late (the timer's slack, the wake-up from a halt: hundreds
 * of us on this machine), the overshoot is measured and the halt shortened by it. With
 * 300 us of overshoot and a 1500 us period the first timed halts are still ended by the
 * work (each raising the lower bound), until one returns before it: from then on each
 * period is a hit again.
 */
static void test_the_overshoot_is_learnt(void **state)
{
	struct gov_params p = params(2000 * US, 100 * US);
	struct ideal_cpu r;
	unsigned hits;

	(void)state;
	run_init(&r, &gov_predict, p);
	r.overshoot_ns = 300 * US;
	for (int i = 0; i < 8; i++)
		idle_period(&r, 1500 * US);
	assert_true(r.g.predict.plateau);
	for (int i = 0; i < 10; i++)
		idle_period(&r, 1500 * US);
	assert_int_equal(r.g.predict.overshoot_ns, 300 * US);
	assert_int_equal(r.g.predict.halt_until_ns, 1500 * US - 1500 * US / 16 - 300 * US);
	hits = r.hits;
	for (int i = 0; i < 50; i++)
		idle_period(&r, 1500 * US);
	assert_int_equal(r.hits, hits + 50);
	assert_true(r.g.predict.plateau);
}

/*
 * An overshoot so large that it leaves no room for a halt would never be measured again
 * (only a timed halt measures it): each period without one takes a quarter off it, until a
 * timed halt fits, returns with the true overshoot, and the plan is the usual one again.
 */
static void test_an_overshoot_with_no_room_is_tried_again(void **state)
{
	struct gov_params p = params(2000 * US, 100 * US);
	struct ideal_cpu r;
	unsigned timed, hits;

	(void)state;
	run_init(&r, &gov_predict, p);
	r.overshoot_ns = 300 * US;
	for (int i = 0; i < 20; i++)
		idle_period(&r, 1500 * US);
	assert_true(r.g.predict.plateau);
	assert_int_equal(r.g.predict.overshoot_ns, 300 * US);
	r.g.predict.overshoot_ns = 5000 * US; /* measured at a bad moment */
	r.g.predict.halt_until_ns = 0;
	timed = r.timed_halts;
	hits = r.hits;
	/* 5000 -> 3750 -> 2812.5 -> 2109 -> 1582 -> 1187 us: room again (1500 - 94 - 1187) */
	for (int i = 0; i < 5; i++)
		idle_period(&r, 1500 * US);
	assert_int_equal(r.timed_halts, timed); /* polled through: no room */
	assert_int_equal(r.hits, hits + 5);	/* (and caught every wake-up) */
	assert_true(r.g.predict.overshoot_ns < 1500 * US - 1500 * US / 16);
	idle_period(&r, 1500 * US);
	/* a short timed halt fits; its timer measures 300 us and the plan has a second one */
	assert_int_equal(r.timed_halts, timed + 2);
	assert_int_equal(r.g.predict.overshoot_ns, 300 * US); /* measured again */
	assert_int_equal(r.g.predict.halt_until_ns, 1500 * US - 1500 * US / 16 - 300 * US);
	hits = r.hits;
	for (int i = 0; i < 20; i++)
		idle_period(&r, 1500 * US);
	assert_int_equal(r.hits, hits + 20);
	assert_true(r.g.predict.plateau);
}

/* Halts that end without work (a tick) add to the period instead of ending it. The period
 * is a plateau period (a poll expired, the window stayed), the only kind that is filed. */
static void test_ticks_extend_the_period(void **state)
{
	struct gov_params p = params(2000 * US, 100 * US);
	struct gov_cpu g;
	struct gov_entry expired = {
	    .state = GOV_STATE_POLL, .residency_ns = 100 * US, .limit_ns = 100 * US, .work = false};
	/* halts shorter than the window leave it where it is */
	struct gov_entry tick = {.state = GOV_STATE_HALT,
				 .residency_ns = 40 * US,
				 .limit_ns = GOV_NO_LIMIT,
				 .work = false};
	struct gov_entry woke = tick;

	(void)state;
	gov_predict.enable(&g);
	g.haltpoll.poll_limit_ns = 100 * US;
	g.predict.window_at_start = 100 * US;
	woke.work = true;
	gov_predict.reflect(&g, &p, &expired);
	gov_predict.reflect(&g, &p, &tick);
	gov_predict.reflect(&g, &p, &tick);
	assert_int_equal(g.predict.count, 0);
	gov_predict.reflect(&g, &p, &woke);
	assert_int_equal(gov_haltpoll.window_ns(&g), 100 * US);
	assert_int_equal(g.predict.streak, 1);
	assert_int_equal(g.predict.count, 1);
	assert_int_equal(g.predict.periods[0], 220 * US);
}

/* The margin is the largest of a sixteenth of the longest recent period, their spread and
 * an eighth of grow_start. */
static void test_margin(void **state)
{
	struct gov_params p = params(1000 * US, 800 * US);
	struct predict_cpu h = {.periods = {8 * US}, .count = 1};

	(void)state;
	assert_int_equal(predict_margin(&h, &p), 100 * US); /* grow_start / 8 */
	p.grow_start = 0;
	assert_int_equal(predict_margin(&h, &p), 8 * US / 16);
	h = (struct predict_cpu){.periods = {400 * US, 500 * US, 420 * US, 450 * US}, .count = 4};
	assert_int_equal(predict_margin(&h, &p), 100 * US); /* the spread */
	h = (struct predict_cpu){.periods = {1600 * US, 1600 * US, 1600 * US, 1600 * US},
				 .count = 4};
	assert_int_equal(predict_margin(&h, &p), 100 * US); /* a sixteenth */
}

/* latency_req_zero off the plateau is haltpoll's: it polls, with the W = 0 fallback limit
 * (TICK_NSEC/16) that haltpoll then stores. */
static void test_latency_req_zero_is_haltpoll_s(void **state)
{
	struct gov_params p = params(200 * US, 50 * US);
	struct gov_cpu g, h;
	bool stop_tick = true, hp_stop = true;

	(void)state;
	gov_predict.enable(&g);
	gov_haltpoll.enable(&h);
	assert_int_equal(gov_predict.select(&g, &p, true, &stop_tick),
			 gov_haltpoll.select(&h, &p, true, &hp_stop));
	assert_int_equal(stop_tick, hp_stop);
	gov_predict.poll_begin(&g);
	gov_haltpoll.poll_begin(&h);
	assert_int_equal(gov_predict.poll_limit(&g, &p, TICK_NS_250),
			 gov_haltpoll.poll_limit(&h, &p, TICK_NS_250));
	assert_int_equal(gov_predict.window_ns(&g), gov_haltpoll.window_ns(&h));
}

int main(void)
{
	struct named_tests t = {0};

	ADD_TEST(&t, test_registry_matches_the_knob);
	ADD_CASES(&t, aborts, test_abort_case);
	ADD_TEST(&t, test_plateau_haltpoll_expires_predict_hits);
	ADD_TEST(&t, test_off_the_plateau_it_is_haltpoll);
	ADD_TEST(&t, test_long_periods_are_haltpoll_s);
	ADD_TEST(&t, test_irregular_misses_are_not_a_plateau);
	ADD_TEST(&t, test_an_expiry_leaves_the_plateau);
	ADD_TEST(&t, test_leaving_the_plateau_halts_at_once);
	ADD_TEST(&t, test_a_wake_at_the_expiry_check_ends_the_period);
	ADD_TEST(&t, test_the_overshoot_is_learnt);
	ADD_TEST(&t, test_an_overshoot_with_no_room_is_tried_again);
	ADD_TEST(&t, test_ticks_extend_the_period);
	ADD_TEST(&t, test_margin);
	ADD_TEST(&t, test_latency_req_zero_is_haltpoll_s);
	return RUN_NAMED_TESTS("governors", &t);
}
