/*
 * Host unit tests for the haltpoll governor (kernel/policy/haltpoll.c) against the vectors of spec
 * 1.10 and the rules of 1.4-1.6. The idealized idle model of 1.10.2 lives with the tests
 * (ideal_idle.h), not in the kernel: it is a test oracle, not policy; the sequence of calls
 * it drives the governor with is the kernel's (kernel/policy/idle_entry.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kernel/policy/gov_haltpoll.h"
#include "kernel/policy/haltpoll.h"
#include "tests/unit/ideal_idle.h"

#define HZ1000_TICK_NSEC 1000000ull
#define MAX_STEPS	 20
#define MAX_ENTRIES	 4

/* ---------------------------------------------------------------------------------------- */
/* Shared fixtures                                                                          */

/* Linux's defaults: the values the knob table also takes its defaults from. */
static struct haltpoll_params defaults(void)
{
	return (struct haltpoll_params){
	    .guest_halt_poll_ns = HALTPOLL_DEFAULT_POLL_NS,
	    .grow = HALTPOLL_DEFAULT_GROW,
	    .shrink = HALTPOLL_DEFAULT_SHRINK,
	    .grow_start = HALTPOLL_DEFAULT_GROW_START,
	    .allow_shrink = true,
	    .legacy_shrink = false,
	};
}

static struct haltpoll_cpu cpu_with_window(uint64_t w)
{
	struct haltpoll_cpu cpu;

	haltpoll_cpu_init(&cpu);
	cpu.poll_limit_ns = w;
	return cpu;
}

/* ---------------------------------------------------------------------------------------- */
/* 1.10.1: pure adjustment vectors G1-G12                                                   */

struct gvec {
	const char *name;
	struct haltpoll_params params;
	uint64_t w_start;
	unsigned int steps;
	uint64_t b[MAX_STEPS];
	uint64_t w_after[MAX_STEPS];
	enum haltpoll_adjust branch[MAX_STEPS];
};

#define N HALTPOLL_ADJ_NONE
#define G HALTPOLL_ADJ_GROW
#define S HALTPOLL_ADJ_SHRINK
/* Row for row the table of docs/haltpoll-spec.md §1.10.1; kept out of clang-format so it
 * stays a table. */
/* clang-format off */
/* Params for a vector: Gmax is always the default 200000 in 1.10.1. */
#define P(grow, shrink, gs, allow_shrink, legacy) {200000, grow, shrink, gs, allow_shrink, legacy}
#define PDEF P(2, 2, 50000, true, false)
#define PMAX(gmax, grow, shrink, gs, allow_shrink) {gmax, grow, shrink, gs, allow_shrink, false}
#define X18(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v

static struct gvec gvecs[] = {
	{"G1", PDEF, 0, 4, {150000, 150000, 150000, 150000},
	 {50000, 100000, 200000, 200000}, {G, G, G, N}},
	{"G2", PDEF, 0, 4, {200000, 200000, 200000, 200000},
	 {50000, 100000, 200000, 200000}, {G, G, G, N}},
	{"G3", PDEF, 200000, 4, {200001, 200001, 200001, 200001},
	 {100000, 50000, 0, 0}, {S, S, S, S}},
	{"G4 pre-v6.9 shrink", P(2, 2, 50000, true, true), 200000, 18, {X18(1000000)},
	 {100000, 50000, 25000, 12500, 6250, 3125, 1562, 781, 390, 195, 97, 48, 24, 12, 6, 3, 1, 0},
	 {X18(S)}},
	{"G5 shrink=0", P(2, 0, 50000, true, false), 100000, 2, {250000, 60000},
	 {0, 50000}, {S, G}},
	{"G6 allow_shrink=N", P(2, 2, 50000, false, false), 200000, 2, {5000000, 5000000},
	 {200000, 200000}, {N, N}},
	{"G7 grow=3 GS=10000", P(3, 2, 10000, true, false), 0, 5,
	 {199000, 199000, 199000, 199000, 199000},
	 {10000, 30000, 90000, 200000, 200000}, {G, G, G, G, N}},
	{"G8", PDEF, 50000, 2, {50000, 50001}, {50000, 100000}, {N, G}},
	{"G9", PDEF, 0, 1, {1}, {50000}, {G}},
	{"G10 GS=300000", P(2, 2, 300000, true, false), 0, 2, {100000, 100000},
	 {200000, 200000}, {G, N}},
	{"G11 shrink=3", P(2, 3, 50000, true, false), 200000, 3, {500000, 500000, 500000},
	 {66666, 0, 0}, {S, S, S}},
	{"G12 grow=0", P(0, 2, 50000, true, false), 0, 2, {100000, 150000},
	 {50000, 50000}, {G, G}},
	/* Beyond 1.10.1. grow_start=0: from W=0 a grow gives 0*grow = 0 and no floor lifts it,
	 * so a short halt counts a grow that leaves W at 0, for ever. */
	{"G13 GS=0 from W=0", P(2, 2, 0, true, false), 0, 3, {100000, 1, 200000},
	 {0, 0, 0}, {G, G, G}},
	/* grow_start=0 grows normally from a non-zero W ... */
	{"G14 GS=0 from W>0", P(2, 2, 0, true, false), 30000, 3, {40000, 100000, 150000},
	 {60000, 120000, 200000}, {G, G, G}},
	/* ... and a shrunk window is never below it, so v6.9's collapse never happens: the
	 * window decays through every fraction, exactly as G4's pre-v6.9 rule. */
	{"G15 GS=0 shrink decays", P(2, 2, 0, true, false), 200000, 18, {X18(1000000)},
	 {100000, 50000, 25000, 12500, 6250, 3125, 1562, 781, 390, 195, 97, 48, 24, 12, 6, 3, 1, 0},
	 {X18(S)}},
	/* guest_halt_poll_ns=0: no B can be both > W and <= 0, so nothing ever grows; every
	 * halt longer than 0 is "long" and shrinks W (already 0); a 0 ns halt changes nothing. */
	{"G16 Gmax=0", PMAX(0, 2, 2, 50000, true), 0, 3, {1, 100000, 0},
	 {0, 0, 0}, {S, S, N}},
	{"G17 Gmax=0 from W>0", PMAX(0, 2, 2, 50000, true), 100000, 2, {1, 1},
	 {50000, 0}, {S, S}},
	{"G18 Gmax=0 allow_shrink=N", PMAX(0, 2, 2, 50000, false), 0, 2, {1, 5000000},
	 {0, 0}, {N, N}},
};
/* clang-format on */

/* Feeds each B as the residency of a halt entry, the way the idle core would. */
static void test_gvec(void **state)
{
	const struct gvec *v = *state;
	struct haltpoll_cpu cpu = cpu_with_window(v->w_start);
	uint64_t grows = 0, shrinks = 0;

	for (unsigned int i = 0; i < v->steps; i++) {
		haltpoll_record_residency(&cpu, v->b[i]);
		assert_int_equal(haltpoll_reflect(&v->params, &cpu, HALTPOLL_STATE_HALT),
				 v->branch[i]);
		assert_int_equal(cpu.poll_limit_ns, v->w_after[i]);
		assert_int_equal(cpu.last_state_idx, HALTPOLL_STATE_HALT);
		grows += v->branch[i] == G;
		shrinks += v->branch[i] == S;
	}
	assert_int_equal(cpu.grow_events, grows);
	assert_int_equal(cpu.shrink_events, shrinks);
}

/* ---------------------------------------------------------------------------------------- */
/* Idealized idle model of 1.10.2 (ideal_idle.h): zero overheads; a poll with window W hits  */
/* iff the remaining time <= W, else expires after exactly W; a halt lasts the remaining     */
/* time. The governor runs behind its interface, through the kernel's entry sequence.       */

struct entry {
	int state;
	uint64_t ns;
	bool expired;
};

struct period {
	unsigned int n;
	struct entry e[MAX_ENTRIES];
};

/* haltpoll with Linux's defaults, at HZ=1000. */
static void sim_init(struct ideal_cpu *s)
{
	ideal_init(s, &gov_haltpoll, defaults(), HZ1000_TICK_NSEC);
}

/* One idle period of length d: select / enter / measure / reflect until the wakeup. */
static void sim_period(struct ideal_cpu *s, uint64_t d, struct period *out)
{
	out->n = ideal_period(s, d, MAX_ENTRIES);
	for (unsigned int k = 0; k < out->n; k++)
		out->e[k] = (struct entry){(int)s->e[k].state, s->e[k].ns, s->e[k].expired};
}

static void assert_entry(const struct entry *e, int state, uint64_t ns, bool expired)
{
	assert_int_equal(e->state, state);
	assert_int_equal(e->ns, ns);
	assert_int_equal(e->expired, expired);
}

/* ---------------------------------------------------------------------------------------- */
/* 1.10.2: full state-machine vector                                                        */

struct smstep {
	uint64_t d;
	unsigned int n;
	struct entry e[2];
	enum haltpoll_adjust adj;
	uint64_t w_after;
};

#define POLL_HIT(ns)                                                                               \
	{                                                                                          \
		HALTPOLL_STATE_POLL, (ns), false                                                   \
	}
#define POLL_EXP(ns)                                                                               \
	{                                                                                          \
		HALTPOLL_STATE_POLL, (ns), true                                                    \
	}
#define HALT(ns)                                                                                   \
	{                                                                                          \
		HALTPOLL_STATE_HALT, (ns), false                                                   \
	}

static const struct smstep smvec[] = {
    {30000, 1, {HALT(30000)}, G, 50000},
    {30000, 1, {POLL_HIT(30000)}, N, 50000},
    {300000, 2, {POLL_EXP(50000), HALT(250000)}, S, 0},
    {120000, 1, {HALT(120000)}, G, 50000},
    {120000, 2, {POLL_EXP(50000), HALT(70000)}, G, 100000},
    {120000, 2, {POLL_EXP(100000), HALT(20000)}, N, 100000},
    {40000, 1, {POLL_HIT(40000)}, N, 100000},
    {1000000, 2, {POLL_EXP(100000), HALT(900000)}, S, 50000},
    {1000000, 2, {POLL_EXP(50000), HALT(950000)}, S, 0},
    {1000000, 1, {HALT(1000000)}, S, 0},
};

static void test_state_machine_vector(void **state)
{
	struct ideal_cpu s;
	unsigned int halt_exits = 0;

	(void)state;
	sim_init(&s);
	for (size_t i = 0; i < sizeof(smvec) / sizeof(smvec[0]); i++) {
		const struct smstep *st = &smvec[i];
		uint64_t grows = s.g.haltpoll.grow_events, shrinks = s.g.haltpoll.shrink_events;
		struct period p;

		sim_period(&s, st->d, &p);
		assert_int_equal(p.n, st->n);
		for (unsigned int k = 0; k < st->n; k++)
			assert_entry(&p.e[k], st->e[k].state, st->e[k].ns, st->e[k].expired);
		assert_int_equal(s.g.haltpoll.poll_limit_ns, st->w_after);
		assert_int_equal(s.g.haltpoll.grow_events - grows, st->adj == G);
		assert_int_equal(s.g.haltpoll.shrink_events - shrinks, st->adj == S);
		/* Every halt in the ideal model executes HLT: one exit, none in steps 2 and 7. */
		halt_exits += p.e[p.n - 1].state == HALTPOLL_STATE_HALT;
		assert_int_equal(p.e[p.n - 1].state == HALTPOLL_STATE_HALT, i != 1 && i != 6);
	}
	assert_int_equal(halt_exits, 8);
	assert_int_equal(s.halts, 8);
	assert_int_equal(s.hits, 2);
}

/*
 * The whole state machine with the window pinned at 0: guest_halt_poll_ns=0 (nothing is
 * short enough to grow on) or grow_start=0 (growing from 0 gives 0). Whatever the idle
 * periods, the governor never polls and every period is one halt, as with idle=halt.
 */
static void assert_never_polls(const struct haltpoll_params *params)
{
	static const uint64_t d[] = {1, 1000, 30000, 50000, 120000, 200000, 200001, 5000000};
	struct ideal_cpu s;

	sim_init(&s);
	s.p.haltpoll = *params;
	for (unsigned int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
			struct period p;

			sim_period(&s, d[i], &p);
			assert_int_equal(p.n, 1);
			assert_entry(&p.e[0], HALTPOLL_STATE_HALT, d[i], false);
			assert_int_equal(s.g.haltpoll.poll_limit_ns, 0);
		}
	assert_int_equal(s.hits + s.expiries, 0);
	assert_int_equal(s.halts, 3 * sizeof(d) / sizeof(d[0]));
}

static void test_gmax_zero_never_polls(void **state)
{
	struct haltpoll_params p = defaults();

	(void)state;
	p.guest_halt_poll_ns = 0;
	assert_never_polls(&p);
}

static void test_grow_start_zero_never_polls_from_zero(void **state)
{
	struct haltpoll_params p = defaults();

	(void)state;
	p.grow_start = 0;
	assert_never_polls(&p);
}

/*
 * But a poll forced by latency_req_zero from W=0 stores the fallback (TICK_NSEC/16) into W,
 * and with grow_start=0 the window then grows and shrinks from there like any other.
 */
static void test_grow_start_zero_after_the_fallback(void **state)
{
	struct ideal_cpu s;

	(void)state;
	sim_init(&s);
	s.p.haltpoll.grow_start = 0;
	s.k.latency_req_zero = true;
	assert_int_equal(ideal_period(&s, 10000, 1), 1); /* a forced poll, ended by the work */
	assert_int_equal(s.e[0].state, GOV_STATE_POLL);
	assert_int_equal(s.g.haltpoll.poll_limit_ns, HZ1000_TICK_NSEC / HALTPOLL_POLL_MAX_TICK_DIV);
	haltpoll_record_residency(&s.g.haltpoll, 80000); /* a short halt: grows 62500 -> 125000 */
	assert_int_equal(haltpoll_reflect(&s.p.haltpoll, &s.g.haltpoll, HALTPOLL_STATE_HALT), G);
	assert_int_equal(s.g.haltpoll.poll_limit_ns,
			 2 * (HZ1000_TICK_NSEC / HALTPOLL_POLL_MAX_TICK_DIV));
}

/* ---------------------------------------------------------------------------------------- */
/* 1.10.3: periodic wakeups                                                                 */

/* Runs `periods` idle periods of length d, checking W after each against w[] (0-padded). */
static void run_periodic(struct ideal_cpu *s, uint64_t d, unsigned int periods, const uint64_t *w,
			 struct period *last)
{
	for (unsigned int i = 0; i < periods; i++) {
		sim_period(s, d, last);
		assert_int_equal(s->g.haltpoll.poll_limit_ns, w[i]);
	}
}

static void test_periodic_20us(void **state)
{
	static const uint64_t w[] = {50000, 50000, 50000, 50000, 50000, 50000};
	struct ideal_cpu s;
	struct period p;

	(void)state;
	sim_init(&s);
	run_periodic(&s, 20000, 6, w, &p);
	assert_int_equal(p.n, 1);
	assert_entry(&p.e[0], HALTPOLL_STATE_POLL, 20000, false);
	/* Ideal case: only the first period exits. */
	assert_int_equal(s.halts, 1);
}

static void test_periodic_80us(void **state)
{
	static const uint64_t w[] = {50000, 50000, 50000, 50000, 50000, 50000};
	struct ideal_cpu s;
	struct period p;

	(void)state;
	sim_init(&s);
	run_periodic(&s, 80000, 6, w, &p);
	assert_int_equal(p.n, 2);
	assert_entry(&p.e[0], HALTPOLL_STATE_POLL, 50000, true);
	assert_entry(&p.e[1], HALTPOLL_STATE_HALT, 30000, false);
	assert_int_equal(s.halts, 6);
	assert_int_equal(s.hits, 0);
}

static void test_periodic_150us(void **state)
{
	static const uint64_t w[] = {50000, 100000, 100000, 100000, 100000, 100000};
	struct ideal_cpu s;
	struct period p;

	(void)state;
	sim_init(&s);
	run_periodic(&s, 150000, 6, w, &p);
	assert_int_equal(p.n, 2);
	assert_entry(&p.e[0], HALTPOLL_STATE_POLL, 100000, true);
	assert_entry(&p.e[1], HALTPOLL_STATE_HALT, 50000, false);
	assert_int_equal(s.halts, 6);
	assert_int_equal(s.hits, 0);
}

static void test_periodic_230us(void **state)
{
	static const uint64_t w[] = {0, 0, 0, 0, 0, 0};
	struct ideal_cpu s;
	struct period p;

	(void)state;
	sim_init(&s);
	run_periodic(&s, 230000, 6, w, &p);
	assert_int_equal(p.n, 1);
	assert_entry(&p.e[0], HALTPOLL_STATE_HALT, 230000, false);
	assert_int_equal(s.expiries + s.hits, 0);
	assert_int_equal(s.g.haltpoll.shrink_events, 6);
}

/* The plateau W a constant period d in (50us, 200us] settles at, per the 1.10.3 rule. */
static uint64_t plateau_for(uint64_t d)
{
	return d <= 100000 ? 50000 : 100000;
}

/*
 * 1.10.3 general rule, deliberately locked in (see the section 8 note in haltpoll.c): from
 * the third period on, W sits on the plateau and every period is an expired poll plus a halt.
 */
static void check_plateau(uint64_t d)
{
	struct ideal_cpu s;
	struct period p;

	sim_init(&s);
	for (unsigned int i = 0; i < 12; i++) {
		sim_period(&s, d, &p);
		if (i < 2)
			continue;
		assert_int_equal(s.g.haltpoll.poll_limit_ns, plateau_for(d));
		assert_int_equal(p.n, 2);
		assert_entry(&p.e[0], HALTPOLL_STATE_POLL, plateau_for(d), true);
		assert_entry(&p.e[1], HALTPOLL_STATE_HALT, d - plateau_for(d), false);
	}
	assert_int_equal(s.hits, 0);
	assert_int_equal(s.halts, 12);
}

static void test_periodic_plateau_rule(void **state)
{
	static const uint64_t edges[] = {50001, 99999, 100000, 100001, 199999, 200000};

	(void)state;
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		check_plateau(edges[i]);
	for (uint64_t d = 50001; d <= 200000; d += 997)
		check_plateau(d);
}

/* Just outside the plateau range: D = 50 us hits every time, D = 200 us + 1 never polls. */
static void test_periodic_plateau_edges(void **state)
{
	struct ideal_cpu s;
	struct period p;

	(void)state;
	sim_init(&s);
	for (unsigned int i = 0; i < 6; i++)
		sim_period(&s, 50000, &p);
	assert_int_equal(s.halts, 1);
	assert_int_equal(s.hits, 5);
	assert_int_equal(s.g.haltpoll.poll_limit_ns, 50000);

	sim_init(&s);
	for (unsigned int i = 0; i < 6; i++)
		sim_period(&s, 200001, &p);
	assert_int_equal(s.halts, 6);
	assert_int_equal(s.hits + s.expiries, 0);
	assert_int_equal(s.g.haltpoll.poll_limit_ns, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* 1.5 boundary bullets                                                                     */

static enum haltpoll_adjust adjust_once(const struct haltpoll_params *p, struct haltpoll_cpu *cpu,
					uint64_t b)
{
	haltpoll_record_residency(cpu, b);
	return haltpoll_reflect(p, cpu, HALTPOLL_STATE_HALT);
}

static void test_boundary_b_vs_w(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(70000);

	(void)state;
	assert_int_equal(adjust_once(&p, &cpu, 70000), N);
	assert_int_equal(cpu.poll_limit_ns, 70000);
	assert_int_equal(adjust_once(&p, &cpu, 70001), G);
	assert_int_equal(cpu.poll_limit_ns, 140000);
}

static void test_boundary_b_vs_gmax(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(70000);

	(void)state;
	assert_int_equal(adjust_once(&p, &cpu, 200000), G);
	assert_int_equal(cpu.poll_limit_ns, 140000);
	assert_int_equal(adjust_once(&p, &cpu, 200001), S);
	assert_int_equal(cpu.poll_limit_ns, 70000);
}

/* GS > Gmax: the GS floor comes first, then the Gmax ceiling, so every grow lands on Gmax. */
static void test_boundary_gs_above_gmax(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(0);

	(void)state;
	p.guest_halt_poll_ns = 40000;
	assert_int_equal(adjust_once(&p, &cpu, 30000), G);
	assert_int_equal(cpu.poll_limit_ns, 40000);
	cpu.poll_limit_ns = 10000;
	assert_int_equal(adjust_once(&p, &cpu, 40000), G);
	assert_int_equal(cpu.poll_limit_ns, 40000);
}

/* grow == 0: every grow lands on min(GS, Gmax); the window never exceeds grow_start. */
static void test_boundary_grow_zero(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(0);

	(void)state;
	p.grow = 0;
	for (unsigned int i = 0; i < 4; i++) {
		assert_int_equal(adjust_once(&p, &cpu, 190000), G);
		assert_int_equal(cpu.poll_limit_ns, 50000);
	}
	p.guest_halt_poll_ns = 30000;
	cpu.poll_limit_ns = 0;
	assert_int_equal(adjust_once(&p, &cpu, 20000), G);
	assert_int_equal(cpu.poll_limit_ns, 30000);
	/* Events are counted per branch even when the value does not move (trace semantics). */
	assert_int_equal(cpu.grow_events, 5);
}

/* From W == 0 any 0 < B <= Gmax (even an aborted halt) grows to min(GS, Gmax); B == 0 does not. */
static void test_boundary_grow_from_zero(void **state)
{
	static const uint64_t bs[] = {1, 300, 49999, 50000, 199999, 200000};
	struct haltpoll_params p = defaults();

	(void)state;
	for (size_t i = 0; i < sizeof(bs) / sizeof(bs[0]); i++) {
		struct haltpoll_cpu cpu = cpu_with_window(0);

		assert_int_equal(adjust_once(&p, &cpu, bs[i]), G);
		assert_int_equal(cpu.poll_limit_ns, 50000);
	}
	struct haltpoll_cpu cpu = cpu_with_window(0);

	assert_int_equal(adjust_once(&p, &cpu, 0), N);
	assert_int_equal(cpu.poll_limit_ns, 0);
}

static void test_boundary_shrink_from_zero(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(0);

	(void)state;
	assert_int_equal(adjust_once(&p, &cpu, 5000000), S);
	assert_int_equal(cpu.poll_limit_ns, 0);
	p.legacy_shrink = true;
	assert_int_equal(adjust_once(&p, &cpu, 5000000), S);
	assert_int_equal(cpu.poll_limit_ns, 0);
	p.shrink = 0;
	assert_int_equal(adjust_once(&p, &cpu, 5000000), S);
	assert_int_equal(cpu.poll_limit_ns, 0);
	assert_int_equal(cpu.shrink_events, 3);
}

/* v6.9+ collapse vs legacy divide on the same input; the collapse test is strict (< GS). */
static void test_boundary_shrink_rules(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(100000);

	(void)state;
	assert_int_equal(adjust_once(&p, &cpu, 300000), S);
	assert_int_equal(cpu.poll_limit_ns, 50000);
	cpu.poll_limit_ns = 99999;
	assert_int_equal(adjust_once(&p, &cpu, 300000), S);
	assert_int_equal(cpu.poll_limit_ns, 0);
	p.legacy_shrink = true;
	cpu.poll_limit_ns = 99999;
	assert_int_equal(adjust_once(&p, &cpu, 300000), S);
	assert_int_equal(cpu.poll_limit_ns, 49999);
}

/* allow_shrink = N: a long sleep is neither a shrink nor an event. */
static void test_boundary_no_shrink_no_event(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(100000);

	(void)state;
	p.allow_shrink = false;
	assert_int_equal(adjust_once(&p, &cpu, 200001), N);
	assert_int_equal(cpu.poll_limit_ns, 100000);
	assert_int_equal(cpu.shrink_events + cpu.grow_events, 0);
}

/* Linux grows the u64 field and truncates into an unsigned int: the product wraps mod 2^32. */
static void test_boundary_u32_wrap(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(0x80000000u);

	(void)state;
	p.guest_halt_poll_ns = 0xffffffffu;
	assert_int_equal(adjust_once(&p, &cpu, 0x90000000u), G);
	assert_int_equal(cpu.poll_limit_ns, 50000);
}

/* Only halts adjust; a poll entry records its index and leaves W alone. */
static void test_reflect_poll_does_not_adjust(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(100000);

	(void)state;
	cpu.last_state_idx = HALTPOLL_STATE_HALT;
	haltpoll_record_residency(&cpu, 150000);
	assert_int_equal(haltpoll_reflect(&p, &cpu, HALTPOLL_STATE_POLL), N);
	assert_int_equal(cpu.last_state_idx, HALTPOLL_STATE_POLL);
	assert_int_equal(cpu.poll_limit_ns, 100000);
	assert_int_equal(cpu.grow_events, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* 1.4 select rows                                                                          */

struct selcase {
	bool latency_zero;
	uint64_t w;
	int last_idx;
	bool time_limit;
	int want_idx;
	bool want_stop_tick; /* given that the idle core pre-set it to true */
};

static void check_select(const struct selcase *c)
{
	struct haltpoll_cpu cpu = cpu_with_window(c->w);
	bool stop_tick = true;
	bool untouched = false;
	int idx;

	cpu.last_state_idx = c->last_idx;
	cpu.poll_time_limit = c->time_limit;
	assert_int_equal(haltpoll_select(&cpu, c->latency_zero, &stop_tick), c->want_idx);
	assert_int_equal(stop_tick, c->want_stop_tick);
	/* "left true" means not written at all: a false pre-set must survive a halt decision. */
	idx = haltpoll_select(&cpu, c->latency_zero, &untouched);
	assert_int_equal(idx, c->want_idx);
	assert_false(untouched);
}

static void test_select_row1_latency_zero(void **state)
{
	static const struct selcase cases[] = {
	    {true, 0, HALTPOLL_STATE_HALT, false, HALTPOLL_STATE_POLL, false},
	    {true, 100000, HALTPOLL_STATE_POLL, true, HALTPOLL_STATE_POLL, false},
	    {true, 100000, HALTPOLL_STATE_HALT, false, HALTPOLL_STATE_POLL, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_select(&cases[i]);
}

static void test_select_row2_window_zero(void **state)
{
	static const struct selcase cases[] = {
	    {false, 0, HALTPOLL_STATE_HALT, false, HALTPOLL_STATE_HALT, true},
	    {false, 0, HALTPOLL_STATE_POLL, false, HALTPOLL_STATE_HALT, true},
	    {false, 0, HALTPOLL_STATE_POLL, true, HALTPOLL_STATE_HALT, true},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_select(&cases[i]);
}

static void test_select_row3_poll_expired(void **state)
{
	static const struct selcase c = {
	    false, 50000, HALTPOLL_STATE_POLL, true, HALTPOLL_STATE_HALT, true};

	(void)state;
	check_select(&c);
}

static void test_select_row4_poll_hit(void **state)
{
	static const struct selcase c = {
	    false, 50000, HALTPOLL_STATE_POLL, false, HALTPOLL_STATE_POLL, false};

	(void)state;
	check_select(&c);
}

/* Row 5 ignores a stale poll_time_limit: only the last state index matters after a halt. */
static void test_select_row5_after_halt(void **state)
{
	static const struct selcase cases[] = {
	    {false, 50000, HALTPOLL_STATE_HALT, false, HALTPOLL_STATE_POLL, false},
	    {false, 50000, HALTPOLL_STATE_HALT, true, HALTPOLL_STATE_POLL, false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_select(&cases[i]);
}

/* ---------------------------------------------------------------------------------------- */
/* 1.6 poll limit, W == 0 fallback, poll-loop bookkeeping                                   */

static void test_tick_nsec(void **state)
{
	(void)state;
	assert_int_equal(haltpoll_tick_nsec(1000), 1000000);
	assert_int_equal(haltpoll_tick_nsec(250), 4000000);
	assert_int_equal(haltpoll_tick_nsec(100), 10000000);
	assert_int_equal(haltpoll_tick_nsec(300), 3333333);
	/* Rounded to nearest like Linux's TICK_NSEC, not truncated (976562.5 -> 976563). */
	assert_int_equal(haltpoll_tick_nsec(1024), 976563);
	assert_int_equal(haltpoll_tick_nsec(0), 0);
}

/* Forced poll with W == 0: the fallback TICK_NSEC/16 is returned AND stored into W. */
static void check_fallback_stored(uint32_t hz, uint64_t want)
{
	struct haltpoll_cpu cpu = cpu_with_window(0);
	bool stop_tick = true;

	assert_int_equal(haltpoll_select(&cpu, true, &stop_tick), HALTPOLL_STATE_POLL);
	assert_false(stop_tick);
	haltpoll_poll_begin(&cpu);
	assert_int_equal(haltpoll_poll_limit(&cpu, haltpoll_tick_nsec(hz)), want);
	assert_int_equal(cpu.poll_limit_ns, want);
}

static void test_fallback_hz1000(void **state)
{
	(void)state;
	check_fallback_stored(1000, 62500);
}

static void test_fallback_hz250(void **state)
{
	(void)state;
	check_fallback_stored(250, 250000);
}

/* A deeper state counts only from 10 us and is capped at TICK_NSEC/16; ours (1 us) never does. */
static void test_fallback_deeper_state(void **state)
{
	(void)state;
	assert_int_equal(haltpoll_fallback_limit(HZ1000_TICK_NSEC, 1000), 62500);
	assert_int_equal(haltpoll_fallback_limit(HZ1000_TICK_NSEC, 9999), 62500);
	assert_int_equal(haltpoll_fallback_limit(HZ1000_TICK_NSEC, 10000), 10000);
	assert_int_equal(haltpoll_fallback_limit(HZ1000_TICK_NSEC, 20000), 20000);
	assert_int_equal(haltpoll_fallback_limit(HZ1000_TICK_NSEC, 100000), 62500);
}

/* The limit a poll from W = 0 takes is TICK_NSEC/16 at every HZ: the halt state the driver
 * registers is too shallow (1 us) to count as a deeper state and lower it. */
static void test_fallback_ignores_the_halt_state(void **state)
{
	static const uint32_t hzs[] = {100, 250, 300, 1000, 1024};

	(void)state;
	for (unsigned i = 0; i < sizeof(hzs) / sizeof(hzs[0]); i++) {
		struct haltpoll_cpu cpu = cpu_with_window(0);
		uint64_t tick = haltpoll_tick_nsec(hzs[i]);

		assert_int_equal(haltpoll_poll_limit(&cpu, tick),
				 tick / HALTPOLL_POLL_MAX_TICK_DIV);
	}
}

/* A non-zero W is the limit as is, whatever the tick. */
static void test_poll_limit_uses_window(void **state)
{
	struct haltpoll_cpu cpu = cpu_with_window(100000);

	(void)state;
	assert_int_equal(haltpoll_poll_limit(&cpu, HZ1000_TICK_NSEC), 100000);
	assert_int_equal(haltpoll_poll_limit(&cpu, haltpoll_tick_nsec(250)), 100000);
	assert_int_equal(cpu.poll_limit_ns, 100000);
}

/*
 * Why the quirk is visible: after the forced poll, normal selection resumes from W = 62500
 * (not a GS multiple), so the next grow goes to 125000; at HZ=250 W = 250000 > Gmax sticks
 * (no B can be > W and <= Gmax) until a long sleep shrinks it.
 */
static void test_fallback_leaks_into_window(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(0);
	bool stop_tick = true;

	(void)state;
	haltpoll_poll_begin(&cpu);
	assert_int_equal(haltpoll_poll_limit(&cpu, HZ1000_TICK_NSEC), 62500);
	haltpoll_record_residency(&cpu, 3000);
	haltpoll_reflect(&p, &cpu, HALTPOLL_STATE_POLL);
	assert_int_equal(haltpoll_select(&cpu, false, &stop_tick), HALTPOLL_STATE_POLL);
	assert_int_equal(adjust_once(&p, &cpu, 70000), G);
	assert_int_equal(cpu.poll_limit_ns, 125000);

	cpu = cpu_with_window(0);
	haltpoll_poll_limit(&cpu, haltpoll_tick_nsec(250));
	assert_int_equal(adjust_once(&p, &cpu, 200000), N);
	assert_int_equal(cpu.poll_limit_ns, 250000);
	assert_int_equal(adjust_once(&p, &cpu, 200001), S);
	assert_int_equal(cpu.poll_limit_ns, 125000);
}

/* Expiry is strict (elapsed > limit), work beats expiry, and only expiry sets the flag. */
static void test_poll_check(void **state)
{
	struct haltpoll_cpu cpu = cpu_with_window(50000);

	(void)state;
	cpu.poll_time_limit = true;
	haltpoll_poll_begin(&cpu);
	assert_false(cpu.poll_time_limit);
	assert_int_equal(haltpoll_poll_check(&cpu, false, 0, 50000), HALTPOLL_POLL_CONTINUE);
	assert_int_equal(haltpoll_poll_check(&cpu, false, 50000, 50000), HALTPOLL_POLL_CONTINUE);
	assert_false(cpu.poll_time_limit);
	assert_int_equal(haltpoll_poll_check(&cpu, true, 90000, 50000), HALTPOLL_POLL_WORK);
	assert_false(cpu.poll_time_limit);
	assert_int_equal(haltpoll_poll_check(&cpu, false, 50001, 50000), HALTPOLL_POLL_EXPIRED);
	assert_true(cpu.poll_time_limit);
}

/*
 * Linux tests for work twice after select, and the governor sees the two differently
 * (kernel/policy/idle_entry.h follows both). V1, call_cpuidle() finding work (-EBUSY, not
 * reflected), is the governor interface's aborted(): tests/unit/test_governors.c.
 *
 * V2: the halt state's own enter (default_enter_idle) finds work: no HLT, but it returns its
 * index, so the entry is measured and reflected with its near-zero residency, which from
 * W = 0 is a short halt: the window grows to grow_start.
 */
static void test_v2_skipped_halt_is_reflected_and_grows_from_zero(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(0);
	bool stop_tick = true;

	(void)state;
	assert_int_equal(haltpoll_select(&cpu, false, &stop_tick), HALTPOLL_STATE_HALT);
	haltpoll_record_residency(&cpu, 300); /* the skipped enter's few hundred ns */
	assert_int_equal(haltpoll_reflect(&p, &cpu, HALTPOLL_STATE_HALT), G);
	assert_int_equal(cpu.poll_limit_ns, HALTPOLL_DEFAULT_GROW_START);
	assert_int_equal(cpu.last_state_idx, HALTPOLL_STATE_HALT);
}

/*
 * V3: latency_req_zero with W = 0 forces a poll, but work is already pending when the poll
 * state sets POLLING and tests: Linux's poll_idle() then never asks for the limit, so the
 * TICK_NSEC/16 fallback is not stored into W. The entry is reflected as a poll that was not
 * cut short by its limit.
 */
static void test_v3_pending_wake_at_poll_start_leaves_w_zero(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(0);
	bool stop_tick = true;

	(void)state;
	cpu.poll_time_limit = true; /* the poll before this one expired */
	assert_int_equal(haltpoll_select(&cpu, true, &stop_tick), HALTPOLL_STATE_POLL);
	haltpoll_poll_begin(&cpu);
	/* set-polling-and-test found work: no haltpoll_poll_limit() call */
	haltpoll_record_residency(&cpu, 200);
	/* 200 ns after W = 0 would grow W to grow_start were it a halt's: a poll's does not */
	assert_int_equal(haltpoll_reflect(&p, &cpu, HALTPOLL_STATE_POLL), N);
	assert_int_equal(cpu.poll_limit_ns, 0);
	assert_int_equal(cpu.grow_events, 0);
	/* ended by work, not by its limit: the expiry of the poll before is forgotten */
	assert_false(cpu.poll_time_limit);
	/* next entry without the latency request: W = 0 still means halt */
	assert_int_equal(haltpoll_select(&cpu, false, &stop_tick), HALTPOLL_STATE_HALT);
}

/* ---------------------------------------------------------------------------------------- */
/* Parameters are re-read on every call (0644 module parameters, no snapshot)               */

static void test_params_reread(void **state)
{
	struct haltpoll_params p = defaults();
	struct haltpoll_cpu cpu = cpu_with_window(50000);

	(void)state;
	p.grow = 4;
	assert_int_equal(adjust_once(&p, &cpu, 60000), G);
	assert_int_equal(cpu.poll_limit_ns, 200000);
	/* Lower Gmax below W: 150000 is now a long sleep. */
	p.guest_halt_poll_ns = 100000;
	assert_int_equal(adjust_once(&p, &cpu, 150000), S);
	assert_int_equal(cpu.poll_limit_ns, 100000);
	p.allow_shrink = false;
	assert_int_equal(adjust_once(&p, &cpu, 150000), N);
	assert_int_equal(cpu.poll_limit_ns, 100000);
	p.allow_shrink = true;
	p.shrink = 4;
	p.legacy_shrink = true;
	assert_int_equal(adjust_once(&p, &cpu, 150000), S);
	assert_int_equal(cpu.poll_limit_ns, 25000);
	/* grow is still 4: 25000 * 4 = 100000 is below the new grow_start. */
	p.grow_start = 150000;
	p.guest_halt_poll_ns = 200000;
	assert_int_equal(adjust_once(&p, &cpu, 30000), G);
	assert_int_equal(cpu.poll_limit_ns, 150000);
	p.legacy_shrink = false;
	p.shrink = 2;
	assert_int_equal(adjust_once(&p, &cpu, 250000), S);
	assert_int_equal(cpu.poll_limit_ns, 0);
}

/*
 * Linux's defaults, by what they do: with defaults() the vectors the spec writes with the
 * default parameters (G1-G3, G8, G9) take the same branches to the same windows.
 */
static bool same_params(const struct haltpoll_params *a, const struct haltpoll_params *b)
{
	return a->guest_halt_poll_ns == b->guest_halt_poll_ns && a->grow == b->grow &&
	       a->shrink == b->shrink && a->grow_start == b->grow_start &&
	       a->allow_shrink == b->allow_shrink && a->legacy_shrink == b->legacy_shrink;
}

static void test_defaults(void **state)
{
	unsigned ran = 0;

	(void)state;
	for (unsigned i = 0; i < sizeof(gvecs) / sizeof(gvecs[0]); i++) {
		struct gvec v = gvecs[i];
		void *st = &v;

		if (!same_params(&v.params, &gvecs[0].params)) /* G1 is PDEF */
			continue;
		v.params = defaults();
		test_gvec(&st);
		ran++;
	}
	assert_int_equal(ran, 5);
}

/* Enabling the governor for a CPU forgets whatever the CPU's state held. */
static void test_cpu_init_resets_everything(void **state)
{
	struct haltpoll_cpu cpu;

	(void)state;
	memset(&cpu, 0xa5, sizeof(cpu));
	haltpoll_cpu_init(&cpu);
	assert_int_equal(cpu.poll_limit_ns, 0);
	assert_int_equal(cpu.last_state_idx, HALTPOLL_STATE_POLL);
	assert_false(cpu.poll_time_limit);
	assert_int_equal(cpu.last_residency_ns, 0);
	assert_int_equal(cpu.grow_events, 0);
	assert_int_equal(cpu.shrink_events, 0);
}

/* ---------------------------------------------------------------------------------------- */

#define VEC_TEST(i)                                                                                \
	{                                                                                          \
		gvecs[i].name, test_gvec, NULL, NULL, &gvecs[i]                                    \
	}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    VEC_TEST(0),
	    VEC_TEST(1),
	    VEC_TEST(2),
	    VEC_TEST(3),
	    VEC_TEST(4),
	    VEC_TEST(5),
	    VEC_TEST(6),
	    VEC_TEST(7),
	    VEC_TEST(8),
	    VEC_TEST(9),
	    VEC_TEST(10),
	    VEC_TEST(11),
	    VEC_TEST(12),
	    VEC_TEST(13),
	    VEC_TEST(14),
	    VEC_TEST(15),
	    VEC_TEST(16),
	    VEC_TEST(17),
	    cmocka_unit_test(test_state_machine_vector),
	    cmocka_unit_test(test_gmax_zero_never_polls),
	    cmocka_unit_test(test_grow_start_zero_never_polls_from_zero),
	    cmocka_unit_test(test_grow_start_zero_after_the_fallback),
	    cmocka_unit_test(test_periodic_20us),
	    cmocka_unit_test(test_periodic_80us),
	    cmocka_unit_test(test_periodic_150us),
	    cmocka_unit_test(test_periodic_230us),
	    cmocka_unit_test(test_periodic_plateau_rule),
	    cmocka_unit_test(test_periodic_plateau_edges),
	    cmocka_unit_test(test_boundary_b_vs_w),
	    cmocka_unit_test(test_boundary_b_vs_gmax),
	    cmocka_unit_test(test_boundary_gs_above_gmax),
	    cmocka_unit_test(test_boundary_grow_zero),
	    cmocka_unit_test(test_boundary_grow_from_zero),
	    cmocka_unit_test(test_boundary_shrink_from_zero),
	    cmocka_unit_test(test_boundary_shrink_rules),
	    cmocka_unit_test(test_boundary_no_shrink_no_event),
	    cmocka_unit_test(test_boundary_u32_wrap),
	    cmocka_unit_test(test_reflect_poll_does_not_adjust),
	    cmocka_unit_test(test_select_row1_latency_zero),
	    cmocka_unit_test(test_select_row2_window_zero),
	    cmocka_unit_test(test_select_row3_poll_expired),
	    cmocka_unit_test(test_select_row4_poll_hit),
	    cmocka_unit_test(test_select_row5_after_halt),
	    cmocka_unit_test(test_tick_nsec),
	    cmocka_unit_test(test_fallback_hz1000),
	    cmocka_unit_test(test_fallback_hz250),
	    cmocka_unit_test(test_fallback_deeper_state),
	    cmocka_unit_test(test_fallback_ignores_the_halt_state),
	    cmocka_unit_test(test_poll_limit_uses_window),
	    cmocka_unit_test(test_fallback_leaks_into_window),
	    cmocka_unit_test(test_poll_check),
	    cmocka_unit_test(test_v2_skipped_halt_is_reflected_and_grows_from_zero),
	    cmocka_unit_test(test_v3_pending_wake_at_poll_start_leaves_w_zero),
	    cmocka_unit_test(test_params_reread),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_cpu_init_resets_everything),
	};

	_Static_assert(sizeof(gvecs) / sizeof(gvecs[0]) == 18, "one VEC_TEST per G vector");
	return cmocka_run_group_tests_name("haltpoll", tests, NULL, NULL);
}
