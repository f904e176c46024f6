/* Unit tests for kernel/policy/steal_gate.c: off at threshold 0, the interval, the
 * threshold's edge, the decision holding until the next interval ends, and restarts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "kernel/policy/steal_gate.h"

#define MS 1000000ull

static void off_at_threshold_zero(void **state)
{
	struct steal_gate g = {0};

	(void)state;
	assert_true(steal_gate_allows(&g, 0, 1 * MS, 0));
	assert_true(steal_gate_allows(&g, 0, 100 * MS, 100 * MS)); /* all stolen: still on */
}

static void suspends_above_the_threshold_after_an_interval(void **state)
{
	struct steal_gate g = {0};

	(void)state;
	assert_true(steal_gate_allows(&g, 20, 5 * MS, 1 * MS));
	/* 9 ms later: the interval is not over, whatever was stolen */
	assert_true(steal_gate_allows(&g, 20, 14 * MS, 10 * MS));
	/* 10 ms after the start, 3 ms stolen: 30 % > 20 % */
	assert_false(steal_gate_allows(&g, 20, 15 * MS, 4 * MS));
	/* the decision holds inside the next interval */
	assert_false(steal_gate_allows(&g, 20, 20 * MS, 4 * MS));
	/* the next interval: nothing stolen, polling allowed again */
	assert_true(steal_gate_allows(&g, 20, 25 * MS, 4 * MS));
}

static void the_threshold_itself_does_not_suspend(void **state)
{
	struct steal_gate g = {0};

	(void)state;
	steal_gate_allows(&g, 25, 10 * MS, 0);
	assert_true(steal_gate_allows(&g, 25, 30 * MS, 5 * MS)); /* exactly 25 % */
	assert_false(steal_gate_allows(&g, 25, 50 * MS, 5 * MS + 5 * MS + 1));
	/* 100 %: only more steal than time suspends, which cannot happen */
	struct steal_gate h = {0};
	steal_gate_allows(&h, 100, 10 * MS, 0);
	assert_true(steal_gate_allows(&h, 100, 20 * MS, 10 * MS));
}

static void backwards_counts_restart_the_interval(void **state)
{
	struct steal_gate g = {0};

	(void)state;
	steal_gate_allows(&g, 10, 10 * MS, 0);
	assert_false(steal_gate_allows(&g, 10, 20 * MS, 5 * MS));
	/* steal went backwards (a re-registered area): restart, keep the last decision */
	assert_false(steal_gate_allows(&g, 10, 21 * MS, 0));
	assert_true(steal_gate_allows(&g, 10, 31 * MS, 0));
	/* a clock at 0 still starts an interval */
	struct steal_gate z = {0};
	assert_true(steal_gate_allows(&z, 10, 0, 0));
	assert_true(z.since_ns != 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(off_at_threshold_zero),
	    cmocka_unit_test(suspends_above_the_threshold_after_an_interval),
	    cmocka_unit_test(the_threshold_itself_does_not_suspend),
	    cmocka_unit_test(backwards_counts_restart_the_interval),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
