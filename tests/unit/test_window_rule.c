/* Unit tests for kernel/workloads/window_rule.h: an event that began before the window opened
 * is not the window's (a periodic sleep whose deadline passed during the opening barrier once
 * reported 72 ms of lateness); one that began at the opening or after is. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "kernel/workloads/window_rule.h"

static void an_event_from_before_the_opening_is_not_the_windows(void **state)
{
	(void)state;
	assert_false(began_inside(999, 1000));
	assert_false(began_inside(0, 1000));
	assert_false(began_inside(UINT64_MAX - 4, 5)); /* before a wrap of the clock */
}

static void an_event_from_the_opening_on_is(void **state)
{
	(void)state;
	assert_true(began_inside(1000, 1000));
	assert_true(began_inside(1001, 1000));
	assert_true(began_inside(5, UINT64_MAX - 4)); /* after a wrap of the clock */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(an_event_from_before_the_opening_is_not_the_windows),
	    cmocka_unit_test(an_event_from_the_opening_on_is),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
