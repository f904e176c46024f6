/*
 * Host unit tests for the haltpoll governor (kernel/policy/haltpoll.h) against the vectors of
 * spec 1.10 and the rules of 1.4-1.6, most of them tables of named cases. The idealized idle
 * model of 1.10.2 lives with the tests (ideal_idle.h), not in the kernel: it is a test
 * oracle, not policy; the sequence of calls it drives the governor with is the kernel's
 * (kernel/policy/idle_entry.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kernel/policy/governors.h"
#include "kernel/policy/haltpoll.h"
#include "tests/unit/ideal_idle.h"
#include "tests/unit/named_cases.h"

#define HZ1000_TICK_NSEC 1000000ull
#define MAX_STEPS	 20
#define MAX_ENTRIES	 4
#define PERIODS		 6

/* ---------------------------------------------------------------------------------------- */
/* Shared fixtures                                                                          */

/* Linux's defaults: the values the knob table also takes its defaults from. */
static struct gov_params defaults(void)
{
	return (struct gov_params){
	    .guest_halt_poll_ns = HALTPOLL_DEFAULT_POLL_NS,
	    .grow = HALTPOLL_DEFAULT_GROW,
	    .shrink = HALTPOLL_DEFAULT_SHRINK,
	    .grow_start = HALTPOLL_DEFAULT_GROW_START,
	    .allow_shrink = true,
	    .legacy_shrink = false,
	};
}

/* A CPU that has just enabled haltpoll, its window then set to w. */
static struct gov_cpu cpu_with_window(uint64_t w)
{
	struct gov_cpu g;

	haltpoll_enable(&g);
	g.haltpoll.poll_limit_ns = w;
	return g;
}

/* A halt of residency b, as the idle core reflects it; what it did to the window. */
static enum gov_adjust halt_of(const struct gov_params *p, struct gov_cpu *g, uint64_t b)
{
	const struct gov_entry e = {
	    .state = GOV_STATE_HALT, .residency_ns = b, .limit_ns = GOV_NO_LIMIT, .work = true};

	return haltpoll_reflect(g, p, &e);
}

/* ---------------------------------------------------------------------------------------- */
/* 1.5: the window rule, a halt at a time (1.10.1's G1-G12, then its boundaries)            */

struct adj_case {
	const char *name;
	struct gov_params params;
	uint64_t w_start;
	unsigned int steps;
	uint64_t b[MAX_STEPS];
	uint64_t w_after[MAX_STEPS];
	enum gov_adjust branch[MAX_STEPS];
};

#define N GOV_ADJ_NONE
#define G GOV_ADJ_GROW
#define S GOV_ADJ_SHRINK
/* Row for row the table of docs/haltpoll-spec.md §1.10.1; kept out of clang-format so it
 * stays a table. */
/* clang-format off */
/* Params for a vector: Gmax is always the default 200000 in 1.10.1. */
#define P(grow, shrink, gs, allow_shrink, legacy) {200000, grow, shrink, gs, allow_shrink, legacy}
#define PDEF P(2, 2, 50000, true, false)
#define PMAX(gmax, grow, shrink, gs, allow_shrink) {gmax, grow, shrink, gs, allow_shrink, false}
#define X4(v) v, v, v, v
#define X18(v) X4(v), X4(v), X4(v), X4(v), v, v

static const struct adj_case spec_vectors[] = {
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

/* The boundaries of 1.5's bullets, each its own case. */
static const struct adj_case boundaries[] = {
	{"B = W is not a grow, B = W + 1 is", PDEF, 70000, 2, {70000, 70001},
	 {70000, 140000}, {N, G}},
	{"B = Gmax is a grow, B = Gmax + 1 a shrink", PDEF, 70000, 2, {200000, 200001},
	 {140000, 70000}, {G, S}},
	/* GS > Gmax: the GS floor comes first, then the Gmax ceiling: every grow lands on Gmax. */
	{"GS above Gmax, from W = 0: Gmax", PMAX(40000, 2, 2, 50000, true), 0, 1, {30000},
	 {40000}, {G}},
	{"GS above Gmax, from W below both: Gmax", PMAX(40000, 2, 2, 50000, true), 10000, 1,
	 {40000}, {40000}, {G}},
	/* Events count the branch taken even where the value does not move (trace semantics). */
	{"grow=0: every grow lands on GS, and counts", P(0, 2, 50000, true, false), 0, 4,
	 {X4(190000)}, {X4(50000)}, {X4(G)}},
	{"grow=0 with Gmax below GS: Gmax", PMAX(30000, 0, 2, 50000, true), 0, 1, {20000},
	 {30000}, {G}},
	/* From W = 0 any 0 < B <= Gmax (even a skipped halt's) grows to min(GS, Gmax). */
	{"from W = 0, B = 300 ns (a skipped halt) grows to GS", PDEF, 0, 1, {300}, {50000}, {G}},
	{"from W = 0, B = GS - 1 grows to GS", PDEF, 0, 1, {49999}, {50000}, {G}},
	{"from W = 0, B = GS grows to GS", PDEF, 0, 1, {50000}, {50000}, {G}},
	{"from W = 0, B = Gmax - 1 grows to GS", PDEF, 0, 1, {199999}, {50000}, {G}},
	{"from W = 0, B = Gmax grows to GS", PDEF, 0, 1, {200000}, {50000}, {G}},
	{"from W = 0, B = 0 is no event", PDEF, 0, 1, {0}, {0}, {N}},
	{"from W = 0 a long halt is a shrink to 0", PDEF, 0, 1, {5000000}, {0}, {S}},
	{"from W = 0 a long halt is a shrink to 0, pre-v6.9", P(2, 2, 50000, true, true), 0, 1,
	 {5000000}, {0}, {S}},
	{"from W = 0 a long halt is a shrink to 0, shrink=0", P(2, 0, 50000, true, true), 0, 1,
	 {5000000}, {0}, {S}},
	/* v6.9+ collapse against the legacy divide on the same input; the collapse is < GS. */
	{"v6.9 shrink to exactly GS stays", PDEF, 100000, 1, {300000}, {50000}, {S}},
	{"v6.9 shrink to just below GS collapses to 0", PDEF, 99999, 1, {300000}, {0}, {S}},
	{"pre-v6.9 shrink to just below GS stays", P(2, 2, 50000, true, true), 99999, 1,
	 {300000}, {49999}, {S}},
	{"allow_shrink=N: a long halt is no event", P(2, 2, 50000, false, false), 100000, 1,
	 {200001}, {100000}, {N}},
	/* Linux grows the u64 field and truncates into an unsigned int: the product wraps. */
	{"the grow wraps mod 2^32, then the GS floor", PMAX(0xffffffffu, 2, 2, 50000, true),
	 0x80000000u, 1, {0x90000000u}, {50000}, {G}},
};
/* clang-format on */

/* Feeds each B as the residency of a halt entry, the way the idle core would. */
static void run_adj_case(const struct adj_case *v, const struct gov_params *params)
{
	struct gov_cpu g = cpu_with_window(v->w_start);
	uint64_t grows = 0, shrinks = 0;

	for (unsigned int i = 0; i < v->steps; i++) {
		assert_int_equal(halt_of(params, &g, v->b[i]), v->branch[i]);
		assert_int_equal(g.haltpoll.poll_limit_ns, v->w_after[i]);
		assert_int_equal(g.haltpoll.last_state_idx, GOV_STATE_HALT);
		grows += v->branch[i] == G;
		shrinks += v->branch[i] == S;
	}
	assert_int_equal(g.haltpoll.grow_events, grows);
	assert_int_equal(g.haltpoll.shrink_events, shrinks);
}

static void test_adj_case(void **state)
{
	const struct adj_case *v = *state;

	run_adj_case(v, &v->params);
}

/*
 * Linux's defaults, by what they do: with defaults() the vectors the spec writes with the
 * default parameters (G1-G3, G8, G9) take the same branches to the same windows.
 */
static bool same_params(const struct gov_params *a, const struct gov_params *b)
{
	return a->guest_halt_poll_ns == b->guest_halt_poll_ns && a->grow == b->grow &&
	       a->shrink == b->shrink && a->grow_start == b->grow_start &&
	       a->allow_shrink == b->allow_shrink && a->legacy_shrink == b->legacy_shrink;
}

static void test_defaults(void **state)
{
	const struct gov_params d = defaults();
	unsigned ran = 0;

	(void)state;
	for (unsigned i = 0; i < sizeof(spec_vectors) / sizeof(spec_vectors[0]); i++) {
		if (!same_params(&spec_vectors[i].params, &spec_vectors[0].params)) /* G1: PDEF */
			continue;
		run_adj_case(&spec_vectors[i], &d);
		ran++;
	}
	assert_int_equal(ran, 5);
}

/* Parameters are re-read on every call (0644 module parameters, no snapshot). */
static void test_params_reread(void **state)
{
	struct gov_params p = defaults();
	struct gov_cpu g = cpu_with_window(50000);

	(void)state;
	p.grow = 4;
	assert_int_equal(halt_of(&p, &g, 60000), G);
	assert_int_equal(g.haltpoll.poll_limit_ns, 200000);
	/* Lower Gmax below W: 150000 is now a long sleep. */
	p.guest_halt_poll_ns = 100000;
	assert_int_equal(halt_of(&p, &g, 150000), S);
	assert_int_equal(g.haltpoll.poll_limit_ns, 100000);
	p.allow_shrink = false;
	assert_int_equal(halt_of(&p, &g, 150000), N);
	assert_int_equal(g.haltpoll.poll_limit_ns, 100000);
	p.allow_shrink = true;
	p.shrink = 4;
	p.legacy_shrink = true;
	assert_int_equal(halt_of(&p, &g, 150000), S);
	assert_int_equal(g.haltpoll.poll_limit_ns, 25000);
	/* grow is still 4: 25000 * 4 = 100000 is below the new grow_start. */
	p.grow_start = 150000;
	p.guest_halt_poll_ns = 200000;
	assert_int_equal(halt_of(&p, &g, 30000), G);
	assert_int_equal(g.haltpoll.poll_limit_ns, 150000);
	p.legacy_shrink = false;
	p.shrink = 2;
	assert_int_equal(halt_of(&p, &g, 250000), S);
	assert_int_equal(g.haltpoll.poll_limit_ns, 0);
}

/* Only halts adjust. A poll entry records its index and leaves W alone; one its limit ended
 * marks the expiry for select (row 3), one work ended does not. */
static void test_reflect_of_a_poll(void **state)
{
	struct gov_params p = defaults();
	struct gov_cpu g = cpu_with_window(100000);
	const struct gov_entry hit = {
	    .state = GOV_STATE_POLL, .residency_ns = 150000, .limit_ns = 200000, .work = true};
	const struct gov_entry expiry = {.state = GOV_STATE_POLL,
					 .residency_ns = 100000,
					 .limit_ns = 100000,
					 .work_at_expiry = true};

	(void)state;
	g.haltpoll.last_state_idx = GOV_STATE_HALT;
	assert_int_equal(haltpoll_reflect(&g, &p, &hit), N);
	assert_int_equal(g.haltpoll.last_state_idx, GOV_STATE_POLL);
	assert_false(g.haltpoll.poll_time_limit);
	assert_int_equal(g.haltpoll.poll_limit_ns, 100000);
	/* work at the expiry check is still an expiry to haltpoll, as in Linux */
	assert_int_equal(haltpoll_reflect(&g, &p, &expiry), N);
	assert_true(g.haltpoll.poll_time_limit);
	assert_int_equal(g.haltpoll.poll_limit_ns, 100000);
	assert_int_equal(g.haltpoll.grow_events + g.haltpoll.shrink_events, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* 1.4: select, row by row                                                                  */

struct select_case {
	const char *name;
	bool latency_zero;
	uint64_t w;
	enum gov_state last;
	bool time_limit;
	enum gov_state want;
	bool want_stop_tick; /* given that the idle core pre-set it to true */
};

#define POLL GOV_STATE_POLL
#define HALT GOV_STATE_HALT
static const struct select_case selects[] = {
    {"row 1: latency_req_zero polls, W = 0 after a halt", true, 0, HALT, false, POLL, false},
    {"row 1: latency_req_zero polls, after an expired poll", true, 100000, POLL, true, POLL, false},
    {"row 1: latency_req_zero polls, W > 0 after a halt", true, 100000, HALT, false, POLL, false},
    {"row 2: W = 0 halts, after a halt", false, 0, HALT, false, HALT, true},
    {"row 2: W = 0 halts, after a poll hit", false, 0, POLL, false, HALT, true},
    {"row 2: W = 0 halts, after an expired poll", false, 0, POLL, true, HALT, true},
    {"row 3: after an expired poll, a halt", false, 50000, POLL, true, HALT, true},
    {"row 4: after a poll hit, a poll", false, 50000, POLL, false, POLL, false},
    {"row 5: after a halt, a poll", false, 50000, HALT, false, POLL, false},
    /* only the last state index matters after a halt */
    {"row 5: after a halt, a stale expiry is ignored", false, 50000, HALT, true, POLL, false},
};

static void test_select_case(void **state)
{
	const struct select_case *c = *state;
	struct gov_params p = defaults();
	struct gov_cpu g = cpu_with_window(c->w);
	bool stop_tick = true;
	bool untouched = false;

	g.haltpoll.last_state_idx = c->last;
	g.haltpoll.poll_time_limit = c->time_limit;
	assert_int_equal(haltpoll_select(&g, &p, c->latency_zero, &stop_tick), c->want);
	assert_int_equal(stop_tick, c->want_stop_tick);
	/* "left true" means not written at all: a false pre-set must survive a halt decision. */
	assert_int_equal(haltpoll_select(&g, &p, c->latency_zero, &untouched), c->want);
	assert_false(untouched);
}

/* ---------------------------------------------------------------------------------------- */
/* Idealized idle model of 1.10.2 (ideal_idle.h): zero overheads; a poll with window W hits  */
/* iff the remaining time <= W, else expires after exactly W; a halt lasts the remaining     */
/* time. The governor runs behind its interface, through the kernel's entry sequence.       */

struct entry {
	enum gov_state state;
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
		out->e[k] = (struct entry){s->e[k].state, s->e[k].ns, s->e[k].expired};
}

static void assert_entry(const struct entry *e, enum gov_state state, uint64_t ns, bool expired)
{
	assert_int_equal(e->state, state);
	assert_int_equal(e->ns, ns);
	assert_int_equal(e->expired, expired);
}

#define POLL_HIT(ns)                                                                               \
	{                                                                                          \
		GOV_STATE_POLL, (ns), false                                                        \
	}
#define POLL_EXP(ns)                                                                               \
	{                                                                                          \
		GOV_STATE_POLL, (ns), true                                                         \
	}
#define HALTED(ns)                                                                                 \
	{                                                                                          \
		GOV_STATE_HALT, (ns), false                                                        \
	}

/* 1.10.2: the full state-machine vector. */
struct smstep {
	uint64_t d;
	unsigned int n;
	struct entry e[2];
	enum gov_adjust adj;
	uint64_t w_after;
};

static const struct smstep smvec[] = {
    {30000, 1, {HALTED(30000)}, G, 50000},
    {30000, 1, {POLL_HIT(30000)}, N, 50000},
    {300000, 2, {POLL_EXP(50000), HALTED(250000)}, S, 0},
    {120000, 1, {HALTED(120000)}, G, 50000},
    {120000, 2, {POLL_EXP(50000), HALTED(70000)}, G, 100000},
    {120000, 2, {POLL_EXP(100000), HALTED(20000)}, N, 100000},
    {40000, 1, {POLL_HIT(40000)}, N, 100000},
    {1000000, 2, {POLL_EXP(100000), HALTED(900000)}, S, 50000},
    {1000000, 2, {POLL_EXP(50000), HALTED(950000)}, S, 0},
    {1000000, 1, {HALTED(1000000)}, S, 0},
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
		halt_exits += p.e[p.n - 1].state == GOV_STATE_HALT;
		assert_int_equal(p.e[p.n - 1].state == GOV_STATE_HALT, i != 1 && i != 6);
	}
	assert_int_equal(halt_exits, 8);
	assert_int_equal(s.halts, 8);
	assert_int_equal(s.hits, 2);
}

/*
 * 1.10.3: a constant period d, six times, from a fresh CPU: the window after each period,
 * the last period's entries, and what the six did in all.
 */
struct periodic_case {
	const char *name;
	uint64_t d;
	uint64_t w[PERIODS];
	unsigned int n; /* the last period's entries */
	struct entry e[2];
	unsigned halts, hits, expiries;
	uint64_t shrinks;
};

static const struct periodic_case periodics[] = {
    /* the first period halts at W = 0 and grows it; every later one is a poll hit */
    {"20 us: poll hits after the first halt",
     20000,
     {50000, 50000, 50000, 50000, 50000, 50000},
     1,
     {POLL_HIT(20000)},
     1,
     5,
     0,
     0},
    {"50 us, the window exactly: poll hits after the first halt",
     50000,
     {50000, 50000, 50000, 50000, 50000, 50000},
     1,
     {POLL_HIT(50000)},
     1,
     5,
     0,
     0},
    /* the residual after an expired 50 us poll, 30 us, is inside W: nothing grows it */
    {"80 us: every poll expires, W stays 50 us",
     80000,
     {50000, 50000, 50000, 50000, 50000, 50000},
     2,
     {POLL_EXP(50000), HALTED(30000)},
     6,
     0,
     5,
     0},
    {"150 us: W grows once to 100 us, then every poll expires",
     150000,
     {50000, 100000, 100000, 100000, 100000, 100000},
     2,
     {POLL_EXP(100000), HALTED(50000)},
     6,
     0,
     5,
     0},
    {"230 us: every halt is long, W stays 0", 230000, {0}, 1, {HALTED(230000)}, 6, 0, 0, 6},
    {"Gmax + 1 ns: never polls", 200001, {0}, 1, {HALTED(200001)}, 6, 0, 0, 6},
};

static void test_periodic_case(void **state)
{
	const struct periodic_case *c = *state;
	struct ideal_cpu s;
	struct period p;

	sim_init(&s);
	for (unsigned int i = 0; i < PERIODS; i++) {
		sim_period(&s, c->d, &p);
		assert_int_equal(s.g.haltpoll.poll_limit_ns, c->w[i]);
	}
	assert_int_equal(p.n, c->n);
	for (unsigned int k = 0; k < c->n; k++)
		assert_entry(&p.e[k], c->e[k].state, c->e[k].ns, c->e[k].expired);
	assert_int_equal(s.halts, c->halts);
	assert_int_equal(s.hits, c->hits);
	assert_int_equal(s.expiries, c->expiries);
	assert_int_equal(s.g.haltpoll.shrink_events, c->shrinks);
}

/* The plateau W a constant period d in (50us, 200us] settles at, per the 1.10.3 rule. */
static uint64_t plateau_for(uint64_t d)
{
	return d <= 100000 ? 50000 : 100000;
}

/*
 * 1.10.3 general rule, deliberately locked in (see the section 8 note in haltpoll.h): from
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
		assert_entry(&p.e[0], GOV_STATE_POLL, plateau_for(d), true);
		assert_entry(&p.e[1], GOV_STATE_HALT, d - plateau_for(d), false);
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

/*
 * The whole state machine with the window pinned at 0: nothing is short enough to grow on,
 * or growing from 0 gives 0. Whatever the idle periods, the governor never polls and every
 * period is one halt, as with idle=halt.
 */
struct never_polls_case {
	const char *name;
	uint32_t guest_halt_poll_ns, grow_start;
};

static const struct never_polls_case never_polls[] = {
    {"guest_halt_poll_ns=0 never polls", 0, HALTPOLL_DEFAULT_GROW_START},
    {"grow_start=0 never polls from W = 0", HALTPOLL_DEFAULT_POLL_NS, 0},
};

static void test_never_polls_case(void **state)
{
	static const uint64_t d[] = {1, 1000, 30000, 50000, 120000, 200000, 200001, 5000000};
	const struct never_polls_case *c = *state;
	struct ideal_cpu s;

	sim_init(&s);
	s.p.guest_halt_poll_ns = c->guest_halt_poll_ns;
	s.p.grow_start = c->grow_start;
	for (unsigned int round = 0; round < 3; round++)
		for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
			struct period p;

			sim_period(&s, d[i], &p);
			assert_int_equal(p.n, 1);
			assert_entry(&p.e[0], GOV_STATE_HALT, d[i], false);
			assert_int_equal(s.g.haltpoll.poll_limit_ns, 0);
		}
	assert_int_equal(s.hits + s.expiries, 0);
	assert_int_equal(s.halts, 3 * sizeof(d) / sizeof(d[0]));
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
	s.p.grow_start = 0;
	s.k.latency_req_zero = true;
	assert_int_equal(ideal_period(&s, 10000, 1), 1); /* a forced poll, ended by the work */
	assert_int_equal(s.e[0].state, GOV_STATE_POLL);
	assert_int_equal(s.g.haltpoll.poll_limit_ns, HZ1000_TICK_NSEC / HALTPOLL_POLL_MAX_TICK_DIV);
	assert_int_equal(halt_of(&s.p, &s.g, 80000), G); /* a short halt: 62500 -> 125000 */
	assert_int_equal(s.g.haltpoll.poll_limit_ns,
			 2 * (HZ1000_TICK_NSEC / HALTPOLL_POLL_MAX_TICK_DIV));
}

/* ---------------------------------------------------------------------------------------- */
/* 1.6 poll limit, W == 0 fallback                                                          */

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
struct fallback_case {
	const char *name;
	uint32_t hz;
	uint64_t want;
};

static const struct fallback_case fallbacks[] = {
    {"a forced poll from W = 0 stores 62.5 us at HZ=1000", 1000, 62500},
    {"a forced poll from W = 0 stores 250 us at HZ=250", 250, 250000},
};

static void test_fallback_case(void **state)
{
	const struct fallback_case *c = *state;
	struct gov_params p = defaults();
	struct gov_cpu g = cpu_with_window(0);
	bool stop_tick = true;

	assert_int_equal(haltpoll_select(&g, &p, true, &stop_tick), GOV_STATE_POLL);
	assert_false(stop_tick);
	haltpoll_poll_begin(&g);
	assert_int_equal(haltpoll_poll_limit(&g, &p, haltpoll_tick_nsec(c->hz)), c->want);
	assert_int_equal(g.haltpoll.poll_limit_ns, c->want);
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
	struct gov_params p = defaults();

	(void)state;
	for (unsigned i = 0; i < sizeof(hzs) / sizeof(hzs[0]); i++) {
		struct gov_cpu g = cpu_with_window(0);
		uint64_t tick = haltpoll_tick_nsec(hzs[i]);

		assert_int_equal(haltpoll_poll_limit(&g, &p, tick),
				 tick / HALTPOLL_POLL_MAX_TICK_DIV);
	}
}

/* A non-zero W is the limit as is, whatever the tick. */
static void test_poll_limit_uses_window(void **state)
{
	struct gov_params p = defaults();
	struct gov_cpu g = cpu_with_window(100000);

	(void)state;
	assert_int_equal(haltpoll_poll_limit(&g, &p, HZ1000_TICK_NSEC), 100000);
	assert_int_equal(haltpoll_poll_limit(&g, &p, haltpoll_tick_nsec(250)), 100000);
	assert_int_equal(g.haltpoll.poll_limit_ns, 100000);
}

/*
 * Why the quirk is visible: after the forced poll, normal selection resumes from W = 62500
 * (not a GS multiple), so the next grow goes to 125000; at HZ=250 W = 250000 > Gmax sticks
 * (no B can be > W and <= Gmax) until a long sleep shrinks it.
 */
static void test_fallback_leaks_into_window(void **state)
{
	struct gov_params p = defaults();
	struct gov_cpu g = cpu_with_window(0);
	const struct gov_entry hit = {
	    .state = GOV_STATE_POLL, .residency_ns = 3000, .limit_ns = 62500, .work = true};
	bool stop_tick = true;

	(void)state;
	haltpoll_poll_begin(&g);
	assert_int_equal(haltpoll_poll_limit(&g, &p, HZ1000_TICK_NSEC), 62500);
	haltpoll_reflect(&g, &p, &hit);
	assert_int_equal(haltpoll_select(&g, &p, false, &stop_tick), GOV_STATE_POLL);
	assert_int_equal(halt_of(&p, &g, 70000), G);
	assert_int_equal(g.haltpoll.poll_limit_ns, 125000);

	g = cpu_with_window(0);
	haltpoll_poll_limit(&g, &p, haltpoll_tick_nsec(250));
	assert_int_equal(halt_of(&p, &g, 200000), N);
	assert_int_equal(g.haltpoll.poll_limit_ns, 250000);
	assert_int_equal(halt_of(&p, &g, 200001), S);
	assert_int_equal(g.haltpoll.poll_limit_ns, 125000);
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
	struct gov_params p = defaults();
	struct gov_cpu g = cpu_with_window(0);
	bool stop_tick = true;

	(void)state;
	assert_int_equal(haltpoll_select(&g, &p, false, &stop_tick), GOV_STATE_HALT);
	assert_int_equal(halt_of(&p, &g, 300), G); /* the skipped enter's few hundred ns */
	assert_int_equal(g.haltpoll.poll_limit_ns, HALTPOLL_DEFAULT_GROW_START);
	assert_int_equal(g.haltpoll.last_state_idx, GOV_STATE_HALT);
}

/*
 * V3: latency_req_zero with W = 0 forces a poll, but work is already pending when the poll
 * state sets POLLING and tests: Linux's poll_idle() then never asks for the limit, so the
 * TICK_NSEC/16 fallback is not stored into W. The entry is reflected as a poll that was not
 * cut short by its limit.
 */
static void test_v3_pending_wake_at_poll_start_leaves_w_zero(void **state)
{
	struct gov_params p = defaults();
	struct gov_cpu g = cpu_with_window(0);
	const struct gov_entry immediate = {
	    .state = GOV_STATE_POLL, .residency_ns = 200, .limit_ns = GOV_NO_LIMIT, .work = true};
	bool stop_tick = true;

	(void)state;
	g.haltpoll.poll_time_limit = true; /* the poll before this one expired */
	assert_int_equal(haltpoll_select(&g, &p, true, &stop_tick), GOV_STATE_POLL);
	haltpoll_poll_begin(&g);
	/* set-polling-and-test found work: no haltpoll_poll_limit() call; 200 ns after W = 0
	 * would grow W to grow_start were it a halt's: a poll's does not */
	assert_int_equal(haltpoll_reflect(&g, &p, &immediate), N);
	assert_int_equal(g.haltpoll.poll_limit_ns, 0);
	assert_int_equal(g.haltpoll.grow_events, 0);
	/* ended by work, not by its limit: the expiry of the poll before is forgotten */
	assert_false(g.haltpoll.poll_time_limit);
	/* next entry without the latency request: W = 0 still means halt */
	assert_int_equal(haltpoll_select(&g, &p, false, &stop_tick), GOV_STATE_HALT);
}

/* Enabling the governor for a CPU forgets whatever the CPU's state held. */
static void test_enable_resets_everything(void **state)
{
	struct gov_cpu g;

	(void)state;
	memset(&g, 0xa5, sizeof(g));
	haltpoll_enable(&g);
	assert_int_equal(g.haltpoll.poll_limit_ns, 0);
	assert_int_equal(g.haltpoll.last_state_idx, GOV_STATE_POLL);
	assert_false(g.haltpoll.poll_time_limit);
	assert_int_equal(g.haltpoll.last_residency_ns, 0);
	assert_int_equal(g.haltpoll.grow_events, 0);
	assert_int_equal(g.haltpoll.shrink_events, 0);
}

/* ---------------------------------------------------------------------------------------- */

int main(void)
{
	struct named_tests t = {0};

	ADD_CASES(&t, spec_vectors, test_adj_case);
	ADD_TEST(&t, test_defaults);
	ADD_CASES(&t, boundaries, test_adj_case);
	ADD_TEST(&t, test_params_reread);
	ADD_TEST(&t, test_reflect_of_a_poll);
	ADD_CASES(&t, selects, test_select_case);
	ADD_TEST(&t, test_state_machine_vector);
	ADD_CASES(&t, periodics, test_periodic_case);
	ADD_TEST(&t, test_periodic_plateau_rule);
	ADD_CASES(&t, never_polls, test_never_polls_case);
	ADD_TEST(&t, test_grow_start_zero_after_the_fallback);
	ADD_TEST(&t, test_tick_nsec);
	ADD_CASES(&t, fallbacks, test_fallback_case);
	ADD_TEST(&t, test_fallback_deeper_state);
	ADD_TEST(&t, test_fallback_ignores_the_halt_state);
	ADD_TEST(&t, test_poll_limit_uses_window);
	ADD_TEST(&t, test_fallback_leaks_into_window);
	ADD_TEST(&t, test_v2_skipped_halt_is_reflected_and_grows_from_zero);
	ADD_TEST(&t, test_v3_pending_wake_at_poll_start_leaves_w_zero);
	ADD_TEST(&t, test_enable_resets_everything);
	return RUN_NAMED_TESTS("haltpoll", &t);
}
