/*
 * Host unit tests for idlelab-sim's model of KVM's halt polling (tools/sim/host_poll.c)
 * against every host vector of docs/haltpoll-spec.md §2.7 (H1-H13), one named case each, in
 * the spec's idealized model: the guest halts for D ns; a poll with window W > 0 succeeds iff
 * D <= W (poll time D), else it polls W and waits D - W; halt_ns = D. Each case gives, halt
 * by halt, the window polled with and W after, and the counters of spec §2.6 at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/named_cases.h"
#include "tools/sim/host_poll.h"

#define MAX_HALTS 8

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

struct host_case {
	const char *name;
	struct hp_params params;
	bool poll_allowed; /* MSR_KVM_POLL_CONTROL bit 0 */
	uint64_t w_start;
	bool invalid; /* every halt's wakeup an invalid one (s390's) */
	unsigned halts;
	uint64_t d[MAX_HALTS];
	uint64_t window[MAX_HALTS]; /* what each halt polled with, 0: no poll */
	uint64_t w_after[MAX_HALTS];
	/* the counters after the last halt */
	uint64_t halt_exits, attempted, successful, invalid_polls, success_ns, fail_ns, wait_ns,
	    grows, shrinks;
};

/* The module parameters (max, grow, grow_start, shrink); the spec's defaults are DEF. */
#define KVM(max, grow, grow_start, shrink)                                                         \
	{                                                                                          \
		max, grow, grow_start, shrink, false, 0, false, 0                                  \
	}
#define DEF KVM(200000, 2, 10000, 2)
/* KVM_CAP_HALT_POLL's per-VM max, which replaces halt_poll_ns. */
#define VM(halt_poll_ns, vm_max)                                                                   \
	{                                                                                          \
		halt_poll_ns, 2, 10000, 2, true, vm_max, false, 0                                  \
	}
#define X2(v) v, v
#define X3(v) v, v, v
#define X4(v) v, v, v, v

/* clang-format off */
static const struct host_case cases[] = {
	{"H1 periodic 75 us: W grows to 80 us, then hits", DEF, true, 0, false, 7,
	 {X4(75000), X3(75000)},
	 {0, 10000, 20000, 40000, 80000, 80000, 80000},
	 {10000, 20000, 40000, 80000, 80000, 80000, 80000},
	 7, 6, 3, 0, 225000, 70000, 230000, 4, 0},
	{"H2 halts longer than max never poll", DEF, true, 0, false, 5,
	 {X4(300000), 300000}, {0}, {0},
	 5, 0, 0, 0, 0, 0, 1500000, 0, 0},
	{"H3 shrink=2: long halts halve W, down to grow_start", DEF, true, 0, false, 8,
	 {X4(50000), X3(500000), 150000},
	 {0, 10000, 20000, 40000, 80000, 40000, 20000, 10000},
	 {10000, 20000, 40000, 80000, 40000, 20000, 10000, 20000},
	 8, 7, 0, 0, 0, 220000, 1630000, 5, 3},
	{"H3 shrink=0: a long halt resets W to 0", KVM(200000, 2, 10000, 0), true, 0, false, 8,
	 {X4(50000), X3(500000), 150000},
	 {0, 10000, 20000, 40000, 80000, 0, 0, 0},
	 {10000, 20000, 40000, 80000, 0, 0, 0, 10000},
	 8, 4, 0, 0, 0, 150000, 1700000, 5, 1},
	{"H4 a shrink below grow_start collapses W to 0", DEF, true, 10000, false, 1,
	 {500000}, {10000}, {0},
	 1, 1, 0, 0, 0, 10000, 490000, 0, 1},
	{"H5 a grow above max is clamped at the next halt", DEF, true, 160000, false, 3,
	 {190000, 190000, 500000}, {160000, 200000, 200000}, {320000, 200000, 100000},
	 3, 3, 1, 0, 190000, 360000, 330000, 1, 1},
	{"H6 KVM_CAP_HALT_POLL max 0: W is clamped to 0, never polls", VM(200000, 0), true, 40000,
	 false, 3, {X3(5000)}, {0}, {0},
	 3, 0, 0, 0, 0, 0, 15000, 0, 0},
	{"H7 MSR_KVM_POLL_CONTROL=0: no poll, W frozen", DEF, false, 40000, false, 2,
	 {20000, 500000}, {0}, {X2(40000)},
	 2, 0, 0, 0, 0, 0, 520000, 0, 0},
	{"H8 a halt of exactly max neither grows nor shrinks", DEF, true, 100000, false, 1,
	 {200000}, {100000}, {100000},
	 1, 1, 0, 0, 0, 100000, 100000, 0, 0},
	/* the grow branch is taken (and counted), but grow=0 leaves W as it was */
	{"H9 halt_poll_ns_grow=0: W stays 0, never polls", KVM(200000, 0, 10000, 2), true, 0,
	 false, 2, {X2(50000)}, {0}, {0},
	 2, 0, 0, 0, 0, 0, 100000, 2, 0},
	{"H10 an invalid wakeup is a hit that shrinks W", DEF, true, 40000, true, 1,
	 {5000}, {40000}, {20000},
	 1, 1, 1, 1, 5000, 0, 0, 0, 1},
	{"H11 KVM_CAP_HALT_POLL max 1 ms: halt_poll_ns is ignored", VM(0, 1000000), true, 0, false,
	 8, {X4(300000), X4(300000)},
	 {0, 10000, 20000, 40000, 80000, 160000, 320000, 320000},
	 {10000, 20000, 40000, 80000, 160000, 320000, 320000, 320000},
	 8, 7, 2, 0, 600000, 310000, 1490000, 6, 0},
	/* grow is a factor of its own, not a doubling */
	{"H12 halt_poll_ns_grow=3 triples W from grow_start", KVM(200000, 3, 10000, 2), true, 0,
	 false, 4, {X4(50000)}, {0, 10000, 30000, 90000}, {10000, 30000, 90000, 90000},
	 4, 3, 1, 0, 50000, 40000, 110000, 3, 0},
	{"H13 a halt of exactly W keeps W", DEF, true, 40000, false, 2, {X2(40000)},
	 {X2(40000)}, {X2(40000)},
	 2, 2, 2, 0, 80000, 0, 0, 0, 0},
};
/* clang-format on */

static void test_host_case(void **state)
{
	const struct host_case *c = *state;
	struct hp_vcpu v;

	hp_vcpu_init(&v, c->poll_allowed);
	v.w = c->w_start;
	for (unsigned i = 0; i < c->halts; i++) {
		assert_int_equal(halt(&c->params, &v, c->d[i], c->invalid), c->window[i]);
		assert_int_equal(v.w, c->w_after[i]);
	}
	assert_int_equal(v.halt_exits, c->halt_exits);
	assert_int_equal(v.attempted_poll, c->attempted);
	assert_int_equal(v.successful_poll, c->successful);
	assert_int_equal(v.poll_invalid, c->invalid_polls);
	assert_int_equal(v.poll_success_ns, c->success_ns);
	assert_int_equal(v.poll_fail_ns, c->fail_ns);
	assert_int_equal(v.wait_ns, c->wait_ns);
	assert_int_equal(v.grows, c->grows);
	assert_int_equal(v.shrinks, c->shrinks);
}

int main(void)
{
	struct named_tests t = {0};

	ADD_CASES(&t, cases, test_host_case);
	return RUN_NAMED_TESTS("sim_hostpoll", &t);
}
