/* Unit tests for kernel/workloads/wake_phases.h: a pingpong hand-over's phases from its stamps,
 * with the waker's and the target's TSCs in agreement or not, and every difference that the
 * stamps of two CPUs, or an aborted halt, could make negative. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "kernel/workloads/wake_phases.h"

static struct wake_phases split(uint64_t woke, uint64_t since, uint64_t entered, uint64_t notice,
				uint64_t running, bool cross)
{
	struct wake_stamps s = {
	    .woke = woke, .since = since, .entered = entered, .notice = notice, .running = running};
	struct wake_phases p;

	wake_phases_split(&s, cross, &p);
	return p;
}

static void target_idle_already(void **state)
{
	/* ran at 500, idle from 900, woken at 1000, noticed at 1500, running at 1600 */
	struct wake_phases p = split(1000, 500, 900, 1500, 1600, true);

	(void)state;
	assert_true(p.idled);
	assert_int_equal(p.total, 600);
	assert_int_equal(p.going_idle, 0);
	assert_int_equal(p.notice, 500); /* from the wake, not from the idle entry */
	assert_int_equal(p.run, 100);
	assert_int_equal(p.going_idle + p.notice + p.run, p.total);
}

static void target_still_going_idle(void **state)
{
	struct wake_phases p = split(1000, 500, 1200, 1500, 1600, true);

	(void)state;
	assert_true(p.idled);
	assert_int_equal(p.going_idle, 200);
	assert_int_equal(p.notice, 300);
	assert_int_equal(p.run, 100);
	assert_int_equal(p.going_idle + p.notice + p.run, p.total);
}

static void target_that_never_idled_is_busy(void **state)
{
	/* its last notice is from before its thread last ran */
	struct wake_phases p = split(1000, 500, 300, 400, 1600, true);

	(void)state;
	assert_false(p.idled);
	assert_int_equal(p.total, 600);
	assert_int_equal(p.going_idle + p.notice + p.run, 0);
}

static void a_notice_before_the_wake_is_not_this_wakes(void **state)
{
	/* a tick's HLT exit at 800, the wake at 1000 before the CPU went back to idle */
	struct wake_phases p = split(1000, 500, 700, 800, 1600, true);

	(void)state;
	assert_false(p.idled);
	assert_int_equal(p.total, 600);
}

static void target_tsc_behind_the_wakers_never_wraps(void **state)
{
	/* the target's TSC reads 2000 behind the waker's: running comes out before the wake */
	struct wake_phases p = split(3000, 500, 900, 1500, 1600, true);

	(void)state;
	assert_int_equal(p.total, 0);
	assert_false(p.idled); /* with agreeing TSCs the notice would be before the wake */
	p = split(1400, 500, 1450, 1500, 1600, true);
	assert_true(p.idled);
	assert_int_equal(p.going_idle, 50);
	assert_true(p.going_idle + p.notice + p.run <= 1600 - 500);
}

static void an_aborted_halt_after_the_last_notice(void **state)
{
	/* noticed at 1100, then a poll from 1200 expired into a halt that saw the wake and
	 * never halted: the last entry follows the last notice */
	struct wake_phases p = split(1000, 500, 1200, 1100, 1600, true);

	(void)state;
	assert_true(p.idled);
	assert_int_equal(p.notice, 0);
	assert_int_equal(p.going_idle, 200);
	assert_int_equal(p.run, 500);
}

static void disagreeing_tscs_give_the_targets_own_phase_only(void **state)
{
	/* the same hand-over as target_idle_already, the waker's clock unusable */
	struct wake_phases p = split(1000, 500, 900, 1500, 1600, false);

	(void)state;
	assert_true(p.idled);
	assert_int_equal(p.total + p.going_idle + p.notice, 0);
	assert_int_equal(p.run, 100);
	/* a waker's stamp far ahead changes nothing: it is never compared */
	p = split(UINT64_MAX - 5, 500, 900, 1500, 1600, false);
	assert_true(p.idled);
	assert_int_equal(p.run, 100);
	assert_int_equal(p.total, 0);
	/* busy is still told, on the target's clock alone */
	p = split(1000, 500, 300, 400, 1600, false);
	assert_false(p.idled);
	assert_int_equal(p.run, 0);
}

static void a_first_hand_over_with_no_idle_yet(void **state)
{
	struct wake_phases p = split(1000, 0, 0, 0, 1600, true);

	(void)state;
	assert_false(p.idled);
	assert_int_equal(p.total, 600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(target_idle_already),
	    cmocka_unit_test(target_still_going_idle),
	    cmocka_unit_test(target_that_never_idled_is_busy),
	    cmocka_unit_test(a_notice_before_the_wake_is_not_this_wakes),
	    cmocka_unit_test(target_tsc_behind_the_wakers_never_wraps),
	    cmocka_unit_test(an_aborted_halt_after_the_last_notice),
	    cmocka_unit_test(disagreeing_tscs_give_the_targets_own_phase_only),
	    cmocka_unit_test(a_first_hand_over_with_no_idle_yet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
