/* Unit tests for lib/tsc_delta.c: differences of stamps from two CPUs that would be
 * negative, the percentiles of samples holding such a difference (the wakepath record once
 * printed total_p90_ns=8800780553809821688), and a CPU's idle time bounded by the span
 * between two snapshots. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/histogram.h"
#include "lib/tsc_delta.h"

static void forward_differences_are_exact(void **state)
{
	(void)state;
	assert_int_equal(tsc_delta(1500, 1000), 500);
	assert_int_equal(tsc_delta(1000, 1000), 0);
	/* a TSC that wrapped past 2^64 in between (it would take a century) still counts */
	assert_int_equal(tsc_delta(5, UINT64_MAX - 4), 10);
}

static void a_negative_difference_is_zero_not_near_2_to_the_64(void **state)
{
	(void)state;
	assert_int_equal(tsc_delta(999, 1000), 0);
	assert_int_equal(tsc_delta(0, 1), 0);
	assert_int_equal(tsc_delta(1000, 1000 + 2600000000ull), 0); /* a second's skew */
	assert_int_equal(tsc_delta(0, UINT64_MAX / 2 + 1), 0);
}

/* Hand-overs whose waker's TSC runs `lead` cycles ahead of the target's: every tenth is a
 * fast one, where the target's stamp comes out before the waker's. */
static void record_skewed(struct hist *h, uint64_t lead, bool clamped)
{
	hist_init(h);
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t woke = 1000000 + i * 10000 + lead; /* the waker's clock */
		uint64_t running = 1000000 + i * 10000 + (i % 10 ? 3000 : 100); /* the target's */

		assert_true(hist_record(h, clamped ? tsc_delta(running, woke) : running - woke));
	}
}

static void percentiles_of_samples_with_a_negative_difference(void **state)
{
	struct hist h;

	(void)state;
	/* u64 subtraction: the fast tenth wraps and becomes the top of the distribution */
	record_skewed(&h, 500, false);
	assert_true(hist_percentile(&h, 9900) > UINT64_MAX / 2);
	assert_true(hist_max(&h) > UINT64_MAX / 2);
	/* tsc_delta: the fast tenth counts 0, and every percentile stays in range */
	record_skewed(&h, 500, true);
	assert_int_equal(hist_count(&h), 1000);
	assert_int_equal(hist_percentile(&h, 1000), 0);
	assert_int_equal(hist_percentile(&h, 5000), hist_percentile(&h, 9000));
	assert_true(hist_percentile(&h, 9000) <= 2500 + 2500 / 32);
	assert_int_equal(hist_max(&h), 2500);
	assert_true(hist_mean(&h) < 2500);
}

static void idle_within_the_span_is_left_alone(void **state)
{
	uint64_t poll = 300, halt = 600;

	(void)state;
	tsc_idle_clamp(&poll, &halt, 1000);
	assert_int_equal(poll, 300);
	assert_int_equal(halt, 600);
	tsc_idle_clamp(&poll, &halt, 900); /* exactly the span */
	assert_int_equal(poll + halt, 900);
	assert_int_equal(poll, 300);
}

static void a_wrapped_counter_difference_counts_zero(void **state)
{
	/* the state in progress at the first snapshot was credited past its real end */
	uint64_t poll = (uint64_t)-250, halt = 400;

	(void)state;
	tsc_idle_clamp(&poll, &halt, 1000);
	assert_int_equal(poll, 0);
	assert_int_equal(halt, 400);
}

static void idle_beyond_the_span_is_scaled_down_to_it(void **state)
{
	uint64_t poll = 200, halt = 1000;

	(void)state;
	tsc_idle_clamp(&poll, &halt, 600);
	assert_int_equal(poll + halt, 600);
	assert_int_equal(poll, 100); /* the split keeps its ratio */
	assert_int_equal(halt, 500);

	poll = 0;
	halt = 5000;
	tsc_idle_clamp(&poll, &halt, 4000);
	assert_int_equal(poll, 0);
	assert_int_equal(halt, 4000);

	poll = 7;
	halt = 9;
	tsc_idle_clamp(&poll, &halt, 0);
	assert_int_equal(poll + halt, 0);
}

static void large_counts_scale_without_overflow(void **state)
{
	/* an hour at 2.6 GHz is 2^43 cycles; these are far beyond it */
	uint64_t poll = 1ull << 61, halt = 3ull << 61, span = 1ull << 62;

	(void)state;
	tsc_idle_clamp(&poll, &halt, span);
	assert_int_equal(poll + halt, span);
	assert_true(poll >= span / 4 - (span >> 30) && poll <= span / 4);

	poll = 9360000000000ull; /* an hour */
	halt = 9360000000000ull;
	tsc_idle_clamp(&poll, &halt, 9360000000000ull);
	assert_int_equal(poll + halt, 9360000000000ull);
	/* 31 bits of precision: within 2^-28 of the exact half */
	assert_true(poll >= 4680000000000ull - (4680000000000ull >> 28) &&
		    poll <= 4680000000000ull);
}

static void no_span_bound_leaves_only_the_sign_check(void **state)
{
	uint64_t poll = (uint64_t)-1, halt = 123;

	(void)state;
	tsc_idle_clamp(&poll, &halt, UINT64_MAX);
	assert_int_equal(poll, 0);
	assert_int_equal(halt, 123);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(forward_differences_are_exact),
	    cmocka_unit_test(a_negative_difference_is_zero_not_near_2_to_the_64),
	    cmocka_unit_test(percentiles_of_samples_with_a_negative_difference),
	    cmocka_unit_test(idle_within_the_span_is_left_alone),
	    cmocka_unit_test(a_wrapped_counter_difference_counts_zero),
	    cmocka_unit_test(idle_beyond_the_span_is_scaled_down_to_it),
	    cmocka_unit_test(large_counts_scale_without_overflow),
	    cmocka_unit_test(no_span_bound_leaves_only_the_sign_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
