/*
 * The governor interface (kernel/policy/governor.h) on the host: the registry matches the
 * cpuidle.governor= choices; haltpoll behind the interface decides exactly as the direct
 * calls do; and the "predict" governor's rule, vector by vector, including the plateau of
 * docs/haltpoll-spec.md §1.10.3 where haltpoll's every poll expires.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "kernel/policy/governor.h"
#include "kernel/policy/knobs.h"

#define US	    1000ull
#define TICK_NS_250 4000000ull

static struct haltpoll_params params(uint32_t gmax_ns, uint32_t grow_start_ns)
{
	return (struct haltpoll_params){.guest_halt_poll_ns = gmax_ns,
					.grow = 2,
					.shrink = 2,
					.grow_start = grow_start_ns,
					.allow_shrink = true};
}

/* The idealised idle of §1.10.2: a poll with limit L ends with work iff the wake-up comes
 * within L, else it expires after exactly L; a halt lasts until the wake-up. */
struct run {
	const struct idle_governor *gov;
	struct gov_cpu g;
	struct haltpoll_params p;
	unsigned polls, hits, expiries, halts;
	uint64_t polled_ns;
};

static void run_init(struct run *r, const struct idle_governor *gov, struct haltpoll_params p)
{
	*r = (struct run){.gov = gov, .p = p};
	gov->enable(&r->g);
}

/* One idle period of length d: select / enter / reflect until the work arrives. */
static void idle_period(struct run *r, uint64_t d)
{
	uint64_t left = d;

	for (int guard = 0; guard < 8; guard++) {
		bool stop_tick = true;
		struct gov_entry e = {.limit_ns = GOV_NO_LIMIT};

		e.state = r->gov->select(&r->g, &r->p, false, &stop_tick);
		if (e.state == GOV_STATE_POLL) {
			r->gov->poll_begin(&r->g);
			e.limit_ns = r->gov->poll_limit(&r->g, &r->p, TICK_NS_250);
			r->polls++;
			e.work = left <= e.limit_ns;
			e.residency_ns = e.work ? left : e.limit_ns;
			r->polled_ns += e.residency_ns;
			if (e.work)
				r->hits++;
			else
				r->expiries++;
		} else {
			r->halts++;
			e.residency_ns = left;
			e.work = true;
		}
		left -= e.residency_ns;
		r->gov->reflect(&r->g, &r->p, &e);
		if (e.work)
			return;
	}
	fail_msg("an idle period did not end within 8 entries");
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
 * haltpoll behind the interface against the direct calls, over a long pseudo-random
 * sequence of idle periods spanning every branch: the same state, W and counters each step.
 */
static void test_haltpoll_interface_is_exact(void **state)
{
	struct haltpoll_params p = params(200 * US, 50 * US);
	struct run r;
	struct haltpoll_cpu direct;
	uint64_t x = 12345;

	(void)state;
	run_init(&r, &gov_haltpoll, p);
	haltpoll_cpu_init(&direct);
	for (int i = 0; i < 5000; i++) {
		uint64_t d, left;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		d = (x >> 33) % (600 * US) + 1;
		left = d;
		idle_period(&r, d);
		for (;;) { /* the same period through the direct calls */
			bool stop_tick = true;
			int s = haltpoll_select(&direct, false, &stop_tick);

			if (s == HALTPOLL_STATE_POLL) {
				uint64_t lim, ns;
				bool work;

				haltpoll_poll_begin(&direct);
				lim = haltpoll_poll_limit(&direct, TICK_NS_250);
				work = left <= lim;
				ns = work ? left : lim;
				haltpoll_poll_check(&direct, work, work ? ns : lim + 1, lim);
				haltpoll_record_residency(&direct, ns);
				haltpoll_reflect(&p, &direct, s);
				left -= ns;
				if (work)
					break;
			} else {
				haltpoll_record_residency(&direct, left);
				haltpoll_reflect(&p, &direct, s);
				break;
			}
		}
		assert_int_equal(r.g.haltpoll.poll_limit_ns, direct.poll_limit_ns);
		assert_int_equal(r.g.haltpoll.last_state_idx, direct.last_state_idx);
		assert_int_equal(r.g.haltpoll.poll_time_limit, direct.poll_time_limit);
		assert_int_equal(r.g.haltpoll.grow_events, direct.grow_events);
		assert_int_equal(r.g.haltpoll.shrink_events, direct.shrink_events);
	}
	assert_true(r.hits > 100 && r.expiries > 100 && r.halts > 100); /* every branch ran */
}

/*
 * The plateau (the measurement): a constant 1500 us period, guest_halt_poll_ns 2 ms,
 * grow_start 100 us. haltpoll's window settles below the period: every poll expires and
 * halts anyway. predict polls with 9/8 of the period from the second one on: all hits.
 */
static void test_plateau_haltpoll_expires_predict_hits(void **state)
{
	struct haltpoll_params p = params(2000 * US, 100 * US);
	struct run hp, pr;

	(void)state;
	run_init(&hp, &gov_haltpoll, p);
	run_init(&pr, &gov_predict, p);
	for (int i = 0; i < 200; i++) {
		idle_period(&hp, 1500 * US);
		idle_period(&pr, 1500 * US);
	}
	assert_true(hp.expiries >= 190 && hp.hits == 0);
	assert_true(hp.g.haltpoll.poll_limit_ns < 1500 * US);
	assert_int_equal(pr.hits, 199); /* all but the first period, which had no history */
	assert_int_equal(pr.expiries, 0);
	assert_int_equal(pr.halts, 1);
	assert_int_equal(pr.g.predict.limit_ns, 1500 * US + 1500 * US / 8);
	/* what it costs: polling the whole period, never a window then a halt on top */
	assert_int_equal(pr.polled_ns, 199 * 1500 * US);
}

/* A period longer than guest_halt_poll_ns is never polled: halts at once, nothing burnt. */
static void test_long_periods_halt_at_once(void **state)
{
	struct run r;

	(void)state;
	run_init(&r, &gov_predict, params(200 * US, 50 * US));
	for (int i = 0; i < 50; i++)
		idle_period(&r, 5000 * US);
	assert_int_equal(r.polls, 0);
	assert_int_equal(r.halts, 50);
	assert_int_equal(r.g.predict.limit_ns, 0);
}

/* The prediction is the second largest of the last four: one outlier is ignored. */
static void test_prediction_ignores_one_outlier_in_four(void **state)
{
	struct predict_cpu p = {0};

	(void)state;
	assert_int_equal(predict_next_period(&p), 0);
	p = (struct predict_cpu){.periods = {100}, .count = 1};
	assert_int_equal(predict_next_period(&p), 100); /* fewer than four: the largest */
	p = (struct predict_cpu){.periods = {100, 100, 9000, 100}, .count = 4};
	assert_int_equal(predict_next_period(&p), 100);
	p = (struct predict_cpu){.periods = {100, 9000, 9000, 100}, .count = 4};
	assert_int_equal(predict_next_period(&p), 9000); /* two long ones: not an outlier */
}

/*
 * After an outlier long period the next poll is still made, and an expiry within a period
 * makes the rest of that period halt (no second poll).
 */
static void test_one_expiry_then_halt_for_the_rest(void **state)
{
	struct run r;

	(void)state;
	run_init(&r, &gov_predict, params(2000 * US, 100 * US));
	for (int i = 0; i < 4; i++)
		idle_period(&r, 300 * US);
	idle_period(&r, 1800 * US); /* within gmax but above 9/8 of 300 us: expires, halts */
	assert_int_equal(r.expiries, 1);
	assert_int_equal(r.halts, 1 + 1); /* the first period, and the rest of this one */
	idle_period(&r, 300 * US);	  /* the outlier is ignored: still a hit */
	assert_int_equal(r.hits, 3 + 1);
}

/* Halts that end without work (a tick) add to the period instead of ending it. */
static void test_ticks_extend_the_period(void **state)
{
	struct haltpoll_params p = params(2000 * US, 100 * US);
	struct gov_cpu g;
	struct gov_entry tick = {.state = GOV_STATE_HALT,
				 .residency_ns = 400 * US,
				 .limit_ns = GOV_NO_LIMIT,
				 .work = false};
	struct gov_entry woke = tick;

	(void)state;
	gov_predict.enable(&g);
	woke.work = true;
	gov_predict.reflect(&g, &p, &tick);
	gov_predict.reflect(&g, &p, &tick);
	gov_predict.reflect(&g, &p, &woke);
	assert_int_equal(g.predict.count, 1);
	assert_int_equal(g.predict.periods[0], 1200 * US);
}

/* The margin is an eighth of the period, at least an eighth of grow_start, at most gmax. */
static void test_limit_margin_and_cap(void **state)
{
	struct haltpoll_params p = params(1000 * US, 80 * US);
	struct gov_cpu g;
	struct gov_entry e = {.state = GOV_STATE_HALT, .limit_ns = GOV_NO_LIMIT, .work = true};

	(void)state;
	gov_predict.enable(&g);
	e.residency_ns = 8 * US; /* tiny: the floor, grow_start / 8 = 10 us */
	gov_predict.reflect(&g, &p, &e);
	assert_int_equal(g.predict.limit_ns, 18 * US);
	gov_predict.enable(&g);
	e.residency_ns = 950 * US; /* 950 + 118.75 > 1000: capped */
	gov_predict.reflect(&g, &p, &e);
	assert_int_equal(g.predict.limit_ns, 1000 * US);
}

/* latency_req_zero always polls; with no prediction the limit is haltpoll's W = 0
 * fallback (TICK_NSEC/16), which predict does not store. */
static void test_latency_req_zero_polls(void **state)
{
	struct haltpoll_params p = params(200 * US, 50 * US);
	struct gov_cpu g;
	bool stop_tick = true;

	(void)state;
	gov_predict.enable(&g);
	assert_int_equal(gov_predict.select(&g, &p, true, &stop_tick), GOV_STATE_POLL);
	assert_false(stop_tick);
	assert_int_equal(gov_predict.poll_limit(&g, &p, TICK_NS_250), TICK_NS_250 / 16);
	assert_int_equal(g.predict.limit_ns, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_registry_matches_the_knob),
	    cmocka_unit_test(test_haltpoll_interface_is_exact),
	    cmocka_unit_test(test_plateau_haltpoll_expires_predict_hits),
	    cmocka_unit_test(test_long_periods_halt_at_once),
	    cmocka_unit_test(test_prediction_ignores_one_outlier_in_four),
	    cmocka_unit_test(test_one_expiry_then_halt_for_the_rest),
	    cmocka_unit_test(test_ticks_extend_the_period),
	    cmocka_unit_test(test_limit_margin_and_cap),
	    cmocka_unit_test(test_latency_req_zero_polls),
	};

	return cmocka_run_group_tests_name("governors", tests, NULL, NULL);
}
