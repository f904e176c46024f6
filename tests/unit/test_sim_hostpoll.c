/*
 * Host unit tests for idlelab-sim's model of KVM's halt polling (tools/sim/host_poll.c)
 * against every host vector of docs/haltpoll-spec.md §2.7 (H1-H11), in the spec's idealized
 * model: the guest halts for D ns; a poll with window W > 0 succeeds iff D <= W (poll time D),
 * else it polls W and waits D - W; halt_ns = D.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tools/sim/host_poll.h"

static struct hp_params defaults(void)
{
	return (struct hp_params){
	    .halt_poll_ns = 200000, .grow = 2, .grow_start = 10000, .shrink = 2};
}

/* One halt of length d in the idealized model; returns the window it polled with. */
static uint64_t halt(const struct hp_params *p, struct hp_vcpu *v, uint64_t d, bool invalid)
{
	uint64_t w;
	struct hp_halt h = {.halt_ns = d, .invalid = invalid};

	hp_halt_exit(v);
	w = hp_halt_begin(p, v);
	h.window = w;
	if (w && d <= w) {
		h.success = true;
		h.poll_ns = d;
	} else {
		h.poll_ns = w;
		h.wait_ns = d - w;
	}
	hp_halt_end(p, v, &h);
	return w;
}

static void test_h1_periodic_75us(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;
	const uint64_t w_after[7] = {10000, 20000, 40000, 80000, 80000, 80000, 80000};

	(void)state;
	hp_vcpu_init(&v, true);
	for (int i = 0; i < 7; i++) {
		halt(&p, &v, 75000, false);
		assert_int_equal(v.w, w_after[i]);
	}
	assert_int_equal(v.halt_exits, 7);
	assert_int_equal(v.attempted_poll, 6);
	assert_int_equal(v.successful_poll, 3);
	assert_int_equal(v.poll_success_ns, 225000);
	assert_int_equal(v.poll_fail_ns, 70000);
	assert_int_equal(v.wait_ns, 230000);
}

static void test_h2_long_halts_never_poll(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;

	(void)state;
	hp_vcpu_init(&v, true);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(halt(&p, &v, 300000, false), 0);
		assert_int_equal(v.w, 0);
	}
	assert_int_equal(v.attempted_poll, 0);
}

static void h3(uint32_t shrink, const uint64_t *w_after, uint64_t attempted, uint64_t fail_ns,
	       uint64_t wait_ns)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;
	const uint64_t d[8] = {50000, 50000, 50000, 50000, 500000, 500000, 500000, 150000};

	p.shrink = shrink;
	hp_vcpu_init(&v, true);
	for (int i = 0; i < 8; i++) {
		halt(&p, &v, d[i], false);
		assert_int_equal(v.w, w_after[i]);
	}
	assert_int_equal(v.attempted_poll, attempted);
	assert_int_equal(v.successful_poll, 0);
	assert_int_equal(v.poll_fail_ns, fail_ns);
	assert_int_equal(v.wait_ns, wait_ns);
}

static void test_h3_shrink2(void **state)
{
	const uint64_t w[8] = {10000, 20000, 40000, 80000, 40000, 20000, 10000, 20000};

	(void)state;
	h3(2, w, 7, 220000, 1630000);
}

static void test_h3_shrink0(void **state)
{
	const uint64_t w[8] = {10000, 20000, 40000, 80000, 0, 0, 0, 10000};

	(void)state;
	h3(0, w, 4, 150000, 1700000);
}

static void test_h4_shrink_below_grow_start(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;

	(void)state;
	hp_vcpu_init(&v, true);
	v.w = 10000;
	halt(&p, &v, 500000, false);
	assert_int_equal(v.w, 0);
}

static void test_h5_clamp_at_next_halt(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;

	(void)state;
	hp_vcpu_init(&v, true);
	v.w = 160000;
	halt(&p, &v, 190000, false);
	assert_int_equal(v.w, 320000); /* grown above max: not clamped yet */
	assert_int_equal(halt(&p, &v, 190000, false), 200000);
	assert_int_equal(v.successful_poll, 1);
	assert_int_equal(v.w, 200000);
	halt(&p, &v, 500000, false);
	assert_int_equal(v.w, 100000);
}

static void test_h6_cap_zero(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;

	(void)state;
	p.vm_override = true;
	p.vm_max = 0;
	hp_vcpu_init(&v, true);
	v.w = 40000;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(halt(&p, &v, 5000, false), 0);
		assert_int_equal(v.w, 0);
	}
	assert_int_equal(v.attempted_poll, 0);
}

static void test_h7_msr_zero_freezes(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;

	(void)state;
	hp_vcpu_init(&v, false);
	v.w = 40000;
	assert_int_equal(halt(&p, &v, 20000, false), 0);
	assert_int_equal(halt(&p, &v, 500000, false), 0);
	assert_int_equal(v.w, 40000);
	assert_int_equal(v.attempted_poll, 0);
	assert_int_equal(v.wait_ns, 520000);
	assert_int_equal(v.halt_exits, 2);
}

static void test_h8_halt_equals_max(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;

	(void)state;
	hp_vcpu_init(&v, true);
	v.w = 100000;
	halt(&p, &v, 200000, false);
	assert_int_equal(v.w, 100000);
	assert_int_equal(v.grows + v.shrinks, 0);
}

static void test_h9_grow_zero(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;

	(void)state;
	p.grow = 0;
	hp_vcpu_init(&v, true);
	halt(&p, &v, 50000, false);
	halt(&p, &v, 50000, false);
	assert_int_equal(v.w, 0);
	assert_int_equal(v.attempted_poll, 0);
}

static void test_h10_invalid_wakeup(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;

	(void)state;
	hp_vcpu_init(&v, true);
	v.w = 40000;
	halt(&p, &v, 5000, true);
	assert_int_equal(v.successful_poll, 1);
	assert_int_equal(v.poll_invalid, 1);
	assert_int_equal(v.w, 20000);
}

static void test_h11_cap_1ms(void **state)
{
	struct hp_params p = defaults();
	struct hp_vcpu v;
	const uint64_t w[8] = {10000, 20000, 40000, 80000, 160000, 320000, 320000, 320000};

	(void)state;
	p.vm_override = true;
	p.vm_max = 1000000;
	p.halt_poll_ns = 0; /* ignored: the VM overrides it */
	hp_vcpu_init(&v, true);
	for (int i = 0; i < 8; i++) {
		halt(&p, &v, 300000, false);
		assert_int_equal(v.w, w[i]);
	}
	assert_int_equal(v.successful_poll, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_h1_periodic_75us),
	    cmocka_unit_test(test_h2_long_halts_never_poll),
	    cmocka_unit_test(test_h3_shrink2),
	    cmocka_unit_test(test_h3_shrink0),
	    cmocka_unit_test(test_h4_shrink_below_grow_start),
	    cmocka_unit_test(test_h5_clamp_at_next_halt),
	    cmocka_unit_test(test_h6_cap_zero),
	    cmocka_unit_test(test_h7_msr_zero_freezes),
	    cmocka_unit_test(test_h8_halt_equals_max),
	    cmocka_unit_test(test_h9_grow_zero),
	    cmocka_unit_test(test_h10_invalid_wakeup),
	    cmocka_unit_test(test_h11_cap_1ms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
