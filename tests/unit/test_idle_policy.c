/* idle=auto gating (Linux's cpuidle-haltpoll load rules) and the poll-control MSR value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kernel/policy/idle_policy.h"

static int choose(int knob, bool kvm, bool hint, bool force, const char *want_reason)
{
	struct idle_env env = {.kvm = kvm, .realtime_hint = hint, .force = force};
	const char *reason = NULL;
	int p = idle_policy_choose(knob, &env, &reason);

	assert_string_equal(reason, want_reason);
	return p;
}

static void test_auto_follows_linux_gating(void **state)
{
	(void)state;
	assert_int_equal(choose(IDLE_AUTO, true, true, false, "realtime_hint"), IDLE_HALTPOLL);
	assert_int_equal(choose(IDLE_AUTO, true, false, true, "forced"), IDLE_HALTPOLL);
	assert_int_equal(choose(IDLE_AUTO, true, false, false, "no_realtime_hint"), IDLE_HALT);
	/* force does not help without KVM: Linux also needs kvm_para_available() */
	assert_int_equal(choose(IDLE_AUTO, false, false, true, "not_kvm"), IDLE_HALT);
	assert_int_equal(choose(IDLE_AUTO, false, true, true, "not_kvm"), IDLE_HALT);
}

static void test_explicit_policy_wins(void **state)
{
	(void)state;
	assert_int_equal(choose(IDLE_HALT, true, true, true, "knob"), IDLE_HALT);
	assert_int_equal(choose(IDLE_POLL, false, false, false, "knob"), IDLE_POLL);
	assert_int_equal(choose(IDLE_HALTPOLL, false, false, false, "knob"), IDLE_HALTPOLL);
}

static void test_msr_value(void **state)
{
	struct idle_env with = {.pollctl = true}, without = {.pollctl = false};

	(void)state;
	assert_int_equal(hostpoll_msr_value(HOSTPOLL_AUTO, IDLE_HALTPOLL, &with), 0);
	assert_int_equal(hostpoll_msr_value(HOSTPOLL_AUTO, IDLE_POLL, &with), 0);
	assert_int_equal(hostpoll_msr_value(HOSTPOLL_AUTO, IDLE_HALT, &with), 1);
	assert_int_equal(hostpoll_msr_value(HOSTPOLL_ON, IDLE_HALTPOLL, &with), 1);
	assert_int_equal(hostpoll_msr_value(HOSTPOLL_OFF, IDLE_HALT, &with), 0);
	for (int k = HOSTPOLL_AUTO; k <= HOSTPOLL_OFF; k++)
		assert_int_equal(hostpoll_msr_value(k, IDLE_HALTPOLL, &without), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_auto_follows_linux_gating),
	    cmocka_unit_test(test_explicit_policy_wins),
	    cmocka_unit_test(test_msr_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
