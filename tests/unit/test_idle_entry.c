/*
 * The governed idle entry (kernel/policy/idle_entry.h), the sequence the kernel's idle loop
 * runs, path by path: a poll hit, an expiry, work at an expiry's check, a halt, a timed halt,
 * work at the poll's own test, and the two tests for work after select (call_cpuidle's
 * abort, not reflected; the halt's own, reflected). First with a governor that logs what it
 * is asked, then with haltpoll, whose window shows what it heard.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/policy/governors.h"
#include "kernel/policy/idle_entry.h"

#define US	   1000ull
#define SKIP_NS	   300 /* a halt skipped because work was there: its own few hundred ns */
#define INSTANT_NS 200 /* a poll whose first test found work */
#define TICK_NS	   1000000ull

/* When the work arrives, as seen from the entry. */
enum wake {
	WAKE_BEFORE_SELECT, /* pending when select returns: the entry is aborted */
	WAKE_AT_POLL_TEST,  /* between poll_begin and the poll's first test */
	WAKE_AT_HALT,	    /* between the abort test and the halt */
	WAKE_AT_EXPIRY,	    /* between the poll's last test for work and its clock check */
	WAKE_AFTER,	    /* wake_ns into the state */
};

/* The CPU the entry runs on, and a log of every call, the governor's and the states'. */
static struct fake {
	enum wake wake;
	uint64_t wake_ns;
	bool work, gate;
	char log[512];
	/* the logging governor's answers */
	enum gov_state choice;
	uint64_t halt_limit_ns, poll_limit_ns;
} f;

static void say(const char *fmt, ...)
{
	size_t n = strlen(f.log);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f.log + n, sizeof(f.log) - n, fmt, ap);
	va_end(ap);
}

static const char *ns_str(uint64_t v)
{
	static char buf[4][24];
	static unsigned i;

	i = (i + 1) % 4;
	if (v == GOV_NO_LIMIT)
		return "none";
	snprintf(buf[i], sizeof(buf[i]), "%llu", (unsigned long long)v);
	return buf[i];
}

static bool fake_work(void *cpu)
{
	(void)cpu;
	return f.work;
}

static bool fake_gate(void *cpu)
{
	(void)cpu;
	say("gate ");
	return f.gate;
}

static bool fake_poll_start(void *cpu, uint64_t *t)
{
	(void)cpu;
	say("poll_start ");
	if (f.wake != WAKE_AT_POLL_TEST)
		return false;
	f.work = true;
	*t = INSTANT_NS;
	return true;
}

static bool fake_poll_wait(void *cpu, uint64_t limit_ns, uint64_t *t)
{
	(void)cpu;
	say("poll_wait(%s) ", ns_str(limit_ns));
	if (f.wake == WAKE_AT_EXPIRY) { /* the clock says expired; the work is there */
		f.work = true;
		*t = limit_ns;
		return false;
	}
	f.work = f.wake_ns <= limit_ns;
	*t = f.work ? f.wake_ns : limit_ns;
	return f.work;
}

static uint64_t fake_halt(void *cpu, uint64_t limit_ns)
{
	(void)cpu;
	say("halt(%s) ", ns_str(limit_ns));
	if (f.wake == WAKE_AT_HALT) {
		f.work = true;
		return SKIP_NS;
	}
	f.work = !limit_ns || f.wake_ns <= limit_ns;
	return f.work ? f.wake_ns : limit_ns;
}

static void fake_aborted(void *cpu)
{
	(void)cpu;
	say("aborted ");
}

static void fake_reflected(void *cpu, enum gov_adjust a)
{
	static const char *const names[] = {"none", "grow", "shrink"};

	(void)cpu;
	say("adj=%s ", names[a]);
}

static const struct idle_entry_ops ops = {
    .work = fake_work,
    .gate = fake_gate,
    .poll_start = fake_poll_start,
    .poll_wait = fake_poll_wait,
    .halt = fake_halt,
    .aborted = fake_aborted,
    .reflected = fake_reflected,
};

/* The logging governor: answers from f, says what it was asked. */
static void log_enable(struct gov_cpu *g)
{
	(void)g;
}

static enum gov_state log_select(struct gov_cpu *g, const struct gov_params *p, bool lrz,
				 bool *stop_tick)
{
	(void)g, (void)p, (void)lrz, (void)stop_tick;
	say("select ");
	return f.choice;
}

static uint64_t log_halt_limit(struct gov_cpu *g, const struct gov_params *p)
{
	(void)g, (void)p;
	say("halt_limit ");
	return f.halt_limit_ns;
}

static void log_poll_begin(struct gov_cpu *g)
{
	(void)g;
	say("poll_begin ");
}

static uint64_t log_poll_limit(struct gov_cpu *g, const struct gov_params *p, uint64_t tick)
{
	(void)g, (void)p;
	assert_int_equal(tick, TICK_NS);
	say("poll_limit ");
	return f.poll_limit_ns;
}

static enum gov_adjust log_reflect(struct gov_cpu *g, const struct gov_params *p,
				   const struct gov_entry *e)
{
	(void)g, (void)p;
	say("reflect(%s,%s,%s,%s) ", e->state == GOV_STATE_POLL ? "poll" : "halt",
	    ns_str(e->residency_ns), ns_str(e->limit_ns),
	    e->work		? "work"
	    : e->work_at_expiry ? "work at expiry"
				: "no work");
	return e->state == GOV_STATE_HALT ? GOV_ADJ_GROW : GOV_ADJ_NONE;
}

static void log_aborted(struct gov_cpu *g)
{
	(void)g;
	say("gov_aborted ");
}

static uint64_t log_window_ns(const struct gov_cpu *g)
{
	(void)g;
	return 0;
}

static const struct idle_governor logging = {
    .name = "log",
    .enable = log_enable,
    .select = log_select,
    .halt_limit = log_halt_limit,
    .poll_begin = log_poll_begin,
    .poll_limit = log_poll_limit,
    .reflect = log_reflect,
    .aborted = log_aborted,
    .window_ns = log_window_ns,
};

static struct gov_params params = {.guest_halt_poll_ns = 200000,
				   .grow = 2,
				   .shrink = 2,
				   .grow_start = 50000,
				   .allow_shrink = true};
static struct idle_entry_setup setup = {.params = &params, .tick_nsec = TICK_NS};
static struct gov_cpu g;
static struct idle_entry_cpu seq;

static int reset(void **state)
{
	(void)state;
	memset(&f, 0, sizeof(f));
	memset(&seq, 0, sizeof(seq));
	setup.gov = &logging;
	setup.latency_req_zero = false;
	gov_haltpoll.enable(&g);
	return 0;
}

/* One entry with the work arriving as `wake` says; *log what it called. */
static bool entry(enum wake wake, uint64_t wake_ns)
{
	f.wake = wake;
	f.wake_ns = wake_ns;
	f.work = wake == WAKE_BEFORE_SELECT;
	f.log[0] = 0;
	return idle_entry_run(&ops, &f, &setup, &g, &seq);
}

/* The next entry's start: the governor hears of the last one, if it has not (then a
 * halt the test makes last, so that it shows nothing else). */
static void next_entry(void)
{
	f.choice = GOV_STATE_HALT;
	f.halt_limit_ns = 0;
	assert_true(entry(WAKE_AFTER, 1));
}

static void test_poll_hit_is_reflected_at_the_next_entry(void **state)
{
	(void)state;
	f.choice = GOV_STATE_POLL;
	f.poll_limit_ns = 100 * US;
	assert_true(entry(WAKE_AFTER, 40 * US));
	assert_string_equal(f.log,
			    "gate select poll_begin poll_start poll_limit poll_wait(100000) ");
	next_entry();
	assert_string_equal(f.log, "reflect(poll,40000,100000,work) adj=none gate select "
				   "halt_limit halt(0) ");
}

static void test_poll_expiry_is_reflected_at_once(void **state)
{
	(void)state;
	f.choice = GOV_STATE_POLL;
	f.poll_limit_ns = 100 * US;
	assert_false(entry(WAKE_AFTER, 300 * US));
	assert_string_equal(f.log, "gate select poll_begin poll_start poll_limit poll_wait(100000) "
				   "reflect(poll,100000,100000,no work) adj=none ");
	next_entry();
	assert_string_equal(f.log, "gate select halt_limit halt(0) ");
}

/* Work that came between the poll's last test and its clock check: the poll reports its
 * expiry, but the work is there, so the entry ends the idle period, and is reflected (an
 * expiry, with work at it) when this CPU next idles, as a poll hit is. */
static void test_work_at_the_expiry_check_ends_the_entry(void **state)
{
	(void)state;
	f.choice = GOV_STATE_POLL;
	f.poll_limit_ns = 100 * US;
	assert_true(entry(WAKE_AT_EXPIRY, 0));
	assert_string_equal(f.log,
			    "gate select poll_begin poll_start poll_limit poll_wait(100000) ");
	next_entry();
	assert_string_equal(f.log, "reflect(poll,100000,100000,work at expiry) adj=none gate "
				   "select halt_limit halt(0) ");
}

static void test_halt_until_work(void **state)
{
	(void)state;
	f.choice = GOV_STATE_HALT;
	assert_true(entry(WAKE_AFTER, 500 * US));
	assert_string_equal(f.log, "gate select halt_limit halt(0) ");
	next_entry();
	assert_string_equal(f.log, "reflect(halt,500000,none,work) adj=grow gate select "
				   "halt_limit halt(0) ");
}

/* A halt the governor limited and its timer ended: no work, reflected at once. */
static void test_timed_halt_ended_by_its_limit(void **state)
{
	(void)state;
	f.choice = GOV_STATE_HALT;
	f.halt_limit_ns = 200 * US;
	assert_false(entry(WAKE_AFTER, 500 * US));
	assert_string_equal(f.log, "gate select halt_limit halt(200000) "
				   "reflect(halt,200000,none,no work) adj=grow ");
}

/* Work at the poll's own test: the poll ends at once, no limit is asked (it may store). */
static void test_immediate_wake_asks_no_limit(void **state)
{
	(void)state;
	f.choice = GOV_STATE_POLL;
	assert_true(entry(WAKE_AT_POLL_TEST, 0));
	assert_string_equal(f.log, "gate select poll_begin poll_start ");
	next_entry();
	assert_string_equal(f.log, "reflect(poll,200,none,work) adj=none gate select "
				   "halt_limit halt(0) ");
}

/* call_cpuidle()'s test: the entry is given up, the governor told, nothing reflected. */
static void test_work_before_the_state_aborts(void **state)
{
	(void)state;
	f.choice = GOV_STATE_POLL;
	assert_true(entry(WAKE_BEFORE_SELECT, 0));
	assert_string_equal(f.log, "gate select gov_aborted aborted ");
	f.choice = GOV_STATE_HALT;
	assert_true(entry(WAKE_BEFORE_SELECT, 0));
	assert_string_equal(f.log, "gate select gov_aborted aborted ");
	next_entry();
	assert_string_equal(f.log, "gate select halt_limit halt(0) ");
}

/* The halt's own test: no HLT, but the entry counts, with its near-zero residency. */
static void test_skipped_halt_is_reflected(void **state)
{
	(void)state;
	f.choice = GOV_STATE_HALT;
	assert_true(entry(WAKE_AT_HALT, 0));
	assert_string_equal(f.log, "gate select halt_limit halt(0) ");
	next_entry();
	assert_string_equal(f.log, "reflect(halt,300,none,work) adj=grow gate select "
				   "halt_limit halt(0) ");
}

/* A gate that takes the entry: after the last entry's reflect, no governor at all. */
static void test_gate_takes_the_entry_after_the_reflect(void **state)
{
	(void)state;
	f.choice = GOV_STATE_HALT;
	assert_true(entry(WAKE_AFTER, 500 * US));
	f.gate = true;
	assert_false(entry(WAKE_AFTER, 1));
	assert_string_equal(f.log, "reflect(halt,500000,none,work) adj=grow gate ");
	f.gate = false;
	next_entry();
	assert_string_equal(f.log, "gate select halt_limit halt(0) ");
}

/* A poll hit after a halt: the governor hears a poll that work ended (what the halt left in
 * the kept entry is not read for it). */
static void test_poll_hit_after_a_halt_is_heard_as_a_poll(void **state)
{
	(void)state;
	f.choice = GOV_STATE_HALT;
	assert_true(entry(WAKE_AFTER, 500 * US));
	assert_string_equal(f.log, "gate select halt_limit halt(0) ");
	f.choice = GOV_STATE_POLL;
	f.poll_limit_ns = 100 * US;
	assert_true(entry(WAKE_AFTER, 40 * US));
	assert_string_equal(f.log, "reflect(halt,500000,none,work) adj=grow gate select "
				   "poll_begin poll_start poll_limit poll_wait(100000) ");
	next_entry();
	assert_string_equal(f.log, "reflect(poll,40000,100000,work) adj=none gate select "
				   "halt_limit halt(0) ");
}

/* The same paths with haltpoll (docs/haltpoll-spec.md §1.8): V1, an abort, leaves W and the
 * last state as they were. */
static void test_haltpoll_v1_abort_is_not_reflected(void **state)
{
	(void)state;
	setup.gov = &gov_haltpoll;
	assert_true(entry(WAKE_BEFORE_SELECT, 0));
	next_entry(); /* haltpoll chooses halt (W = 0); the test's halt is 1 ns, a grow */
	assert_int_equal(g.haltpoll.grow_events, 0);
	assert_int_equal(g.haltpoll.poll_limit_ns, 0);
	assert_int_equal(g.haltpoll.last_state_idx, GOV_STATE_POLL);
	assert_int_equal(g.haltpoll.last_residency_ns, 0);
}

/* V2: the skipped halt is reflected, and from W = 0 that short halt grows the window. */
static void test_haltpoll_v2_skipped_halt_grows_from_zero(void **state)
{
	(void)state;
	setup.gov = &gov_haltpoll;
	assert_true(entry(WAKE_AT_HALT, 0));
	assert_int_equal(g.haltpoll.poll_limit_ns, 0); /* not yet: at the next entry */
	idle_entry_reflect_last(&ops, &f, &setup, &g, &seq);
	assert_int_equal(g.haltpoll.grow_events, 1);
	assert_int_equal(g.haltpoll.poll_limit_ns, 50 * US);
	assert_int_equal(g.haltpoll.last_residency_ns, SKIP_NS);
	assert_int_equal(g.haltpoll.last_state_idx, GOV_STATE_HALT);
}

/* V3: latency_req_zero forces a poll from W = 0, work is there at its test: no limit is
 * asked, so the TICK_NSEC/16 fallback is not stored, and W = 0 still means halt after. */
static void test_haltpoll_v3_immediate_wake_leaves_w_zero(void **state)
{
	(void)state;
	setup.gov = &gov_haltpoll;
	setup.latency_req_zero = true;
	assert_true(entry(WAKE_AT_POLL_TEST, 0));
	setup.latency_req_zero = false;
	f.log[0] = 0;
	idle_entry_reflect_last(&ops, &f, &setup, &g, &seq);
	assert_string_equal(f.log, "adj=none ");
	assert_int_equal(g.haltpoll.poll_limit_ns, 0);
	assert_false(g.haltpoll.poll_time_limit);
	assert_true(entry(WAKE_AFTER, 30 * US));
	assert_string_equal(f.log, "gate halt(0) ");
}

/* Work at an expiry's check is an expiry to haltpoll, as in Linux (its poll loop sets
 * poll_time_limit and leaves): it halts next, W as it was. */
static void test_haltpoll_work_at_the_expiry_check_is_an_expiry(void **state)
{
	(void)state;
	setup.gov = &gov_haltpoll;
	assert_true(entry(WAKE_AFTER, 30 * US)); /* W = 0: a halt, then W = 50 us */
	assert_true(entry(WAKE_AT_EXPIRY, 0));
	assert_string_equal(f.log, "adj=grow gate poll_start poll_wait(50000) ");
	idle_entry_reflect_last(&ops, &f, &setup, &g, &seq);
	assert_true(g.haltpoll.poll_time_limit);
	assert_int_equal(g.haltpoll.last_state_idx, GOV_STATE_POLL);
	assert_int_equal(g.haltpoll.poll_limit_ns, 50 * US);
	assert_int_equal(g.haltpoll.grow_events, 1);
	assert_int_equal(g.haltpoll.shrink_events, 0);
	assert_true(entry(WAKE_AFTER, 30 * US));
	assert_string_equal(f.log, "gate halt(0) ");
}

/* With the limit asked, a forced poll from W = 0 stores the fallback: TICK_NSEC/16. */
static void test_haltpoll_forced_poll_stores_the_fallback(void **state)
{
	(void)state;
	setup.gov = &gov_haltpoll;
	setup.latency_req_zero = true;
	assert_true(entry(WAKE_AFTER, 30 * US));
	assert_string_equal(f.log, "gate poll_start poll_wait(62500) ");
	assert_int_equal(g.haltpoll.poll_limit_ns, TICK_NS / 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_poll_hit_is_reflected_at_the_next_entry, reset),
	    cmocka_unit_test_setup(test_poll_expiry_is_reflected_at_once, reset),
	    cmocka_unit_test_setup(test_work_at_the_expiry_check_ends_the_entry, reset),
	    cmocka_unit_test_setup(test_halt_until_work, reset),
	    cmocka_unit_test_setup(test_timed_halt_ended_by_its_limit, reset),
	    cmocka_unit_test_setup(test_immediate_wake_asks_no_limit, reset),
	    cmocka_unit_test_setup(test_work_before_the_state_aborts, reset),
	    cmocka_unit_test_setup(test_skipped_halt_is_reflected, reset),
	    cmocka_unit_test_setup(test_gate_takes_the_entry_after_the_reflect, reset),
	    cmocka_unit_test_setup(test_poll_hit_after_a_halt_is_heard_as_a_poll, reset),
	    cmocka_unit_test_setup(test_haltpoll_v1_abort_is_not_reflected, reset),
	    cmocka_unit_test_setup(test_haltpoll_v2_skipped_halt_grows_from_zero, reset),
	    cmocka_unit_test_setup(test_haltpoll_v3_immediate_wake_leaves_w_zero, reset),
	    cmocka_unit_test_setup(test_haltpoll_work_at_the_expiry_check_is_an_expiry, reset),
	    cmocka_unit_test_setup(test_haltpoll_forced_poll_stores_the_fallback, reset),
	};

	return cmocka_run_group_tests_name("idle_entry", tests, NULL, NULL);
}
