/*
 * Host unit tests for idlelab-sim's engine: the simulated governor's trace equals the
 * kernel's for the same idle sequence (docs/haltpoll-spec.md §1.10.2, the vector the kernel's
 * own governor is tested against in test_haltpoll.c), with every cost zero so the run is the
 * spec's idealized model; its cpu record is the kernel's (kernel/cpu_record.h); the cost file
 * parser refuses bad tables naming the field.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/cpu_record.h"
#include "tools/sim/engine.h"

static char *run_script(const char *knobs, const uint64_t *d, unsigned n)
{
	static struct sim_config cfg;
	char err[KNOB_ERR_MAX];
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(knobs_parse(knobs, &cfg.knobs, err, sizeof(err)), KNOB_OK);
	cfg.smp = 1;
	cfg.host =
	    (struct hp_params){.halt_poll_ns = 0, .grow = 2, .grow_start = 10000, .shrink = 2};
	cfg.costs.v[COST_guest_poll_iter] = 1; /* expiry is seen at W + 1: strictly past W */
	cfg.trace = true;
	cfg.script = d;
	cfg.script_len = n;
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(sim_run(&cfg, out), 0);
	fclose(out);
	return buf;
}

/* The window after each idle period: the trace line that ends it (a hit or a woken halt). */
static unsigned windows_after_periods(const char *text, uint64_t *w, unsigned max)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, "@idlelab trace ")) != NULL; p++) {
		const char *eol = strchr(p, '\n');
		const char *hit = strstr(p, "outcome=hit"), *woken = strstr(p, "outcome=woken");
		const char *win = strstr(p, "window_ns=");

		if (((hit && hit < eol) || (woken && woken < eol)) && n < max)
			w[n++] = strtoull(win + 10, NULL, 10);
	}
	return n;
}

static void test_governor_trace_matches_spec_1_10_2(void **state)
{
	const uint64_t d[10] = {30000,	30000, 300000,	120000,	 120000,
				120000, 40000, 1000000, 1000000, 1000000};
	const uint64_t want[10] = {50000, 50000, 0, 50000, 100000, 100000, 100000, 50000, 0, 0};
	uint64_t got[16];
	char *text = run_script("idle=haltpoll hz=0", d, 10);
	const char *cpu = strstr(text, "@idlelab cpu id=0 ");

	(void)state;
	assert_int_equal(windows_after_periods(text, got, 16), 10);
	for (int i = 0; i < 10; i++)
		assert_int_equal(got[i], want[i]);
	/* one HLT exit in every period but 2 and 7 */
	assert_non_null(cpu);
	assert_non_null(strstr(cpu, " hlt=8 "));
	assert_non_null(strstr(text, "@idlelab host vcpu=0 simulated=1 halt_exits=8 "));
	free(text);
}

static void test_governor_plateau_1_10_3(void **state)
{
	uint64_t d[6], got[8];
	char *text;

	(void)state;
	for (int i = 0; i < 6; i++)
		d[i] = 150000;
	text = run_script("idle=haltpoll hz=0", d, 6);
	assert_int_equal(windows_after_periods(text, got, 8), 6);
	assert_int_equal(got[0], 50000);
	for (int i = 1; i < 6; i++)
		assert_int_equal(got[i], 100000); /* every poll expires, the window stays */
	free(text);
}

/* The value of `name` in the record line that starts at rec, which must have it. */
static uint64_t field(const char *rec, const char *name)
{
	char key[64];
	const char *eol = strchr(rec, '\n'), *at;

	snprintf(key, sizeof(key), " %s=", name);
	at = strstr(rec, key);
	assert_true(at != NULL && at < eol);
	return strtoull(at + strlen(key), NULL, 10);
}

/*
 * The simulator's cpu record is the kernel's: every field of kernel/cpu_record.h, in its
 * order, and nothing else; and the counters the engine keeps apart (engine.c counts every
 * idle entry, poll and HLT as it happens) add up as the kernel's do, on a run that both
 * polls and halts.
 */
static void test_cpu_record_has_every_field_and_adds_up(void **state)
{
#define NAME(name, unit, meaning) #name,
	static const char *const names[] = {CPU_RECORD_FIELDS(NAME)};
#undef NAME
	const uint64_t d[10] = {30000,	30000, 300000,	120000,	 120000,
				120000, 40000, 1000000, 1000000, 1000000};
	char *text = run_script("idle=haltpoll hz=0", d, 10);
	const char *rec = strstr(text, "@idlelab cpu "), *p;
	unsigned n = 0;

	(void)state;
	assert_non_null(rec);
	for (p = rec + strlen("@idlelab cpu"); *p == ' '; n++) {
		size_t len = strcspn(p + 1, "=");

		assert_true(n < CPU_REC__COUNT);
		assert_int_equal(len, strlen(names[n]));
		assert_memory_equal(p + 1, names[n], len);
		p = p + 1 + len + 1 + strcspn(p + 1 + len + 1, " \n");
	}
	assert_int_equal(*p, '\n');
	assert_int_equal(n, CPU_REC__COUNT);
	assert_true(field(rec, "poll_entries") > 0 && field(rec, "hlt") > 0);
	assert_int_equal(field(rec, "idle_entries"),
			 field(rec, "poll_entries") + field(rec, "halts"));
	assert_int_equal(field(rec, "poll_entries"), field(rec, "poll_hits") +
							 field(rec, "poll_immediate") +
							 field(rec, "poll_expired"));
	assert_int_equal(field(rec, "hlt"), field(rec, "halts") - field(rec, "halts_aborted"));
	free(text);
}

static void test_costs_missing_field(void **state)
{
	struct sim_costs c;
	char err[512];

	(void)state;
	assert_int_equal(sim_costs_parse_text("ipi_send = 1us\n", "t", NULL, &c, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "missing field 'ipi_send_awake'"));
}

static void test_costs_unknown_and_bad_fields(void **state)
{
	struct sim_costs c;
	char err[512];

	(void)state;
	assert_int_equal(sim_costs_parse_text("ipi_sned = 1us\n", "t", NULL, &c, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "unknown field 'ipi_sned'"));
	assert_int_equal(
	    sim_costs_parse_text("halt_exit = 5 parsecs\n", "t", NULL, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "halt_exit"));
	assert_int_equal(
	    sim_costs_parse_text("wake_path = alu*3\n", "t", NULL, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "wake_path: uses primitive 'alu'"));
	assert_int_equal(
	    sim_costs_parse_text("vm_entry = 1us - 2us\n", "t", NULL, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "vm_entry"));
}

/* A cost file with every field but `omit` at 1 ns (the *_ppm, wake_cold_max and
 * preempt_per_s at 0), then `line`. */
static void cost_text(char *buf, size_t size, const char *omit, const char *line)
{
	size_t len = 0;

	for (unsigned i = 0; i < COST__COUNT; i++) {
		const char *name = sim_cost_names[i];
		bool zero = strstr(name, "_ppm") || !strcmp(name, "wake_cold_max") ||
			    !strcmp(name, "preempt_per_s");

		if (strcmp(name, omit))
			len += (size_t)snprintf(buf + len, size - len, "%s=%s\n", name,
						zero ? "0" : "1");
	}
	snprintf(buf + len, size - len, "%s", line);
}

/* ipi_send's line parsed into a full table with these primitives: its value in ns. */
static void expect_ipi_send(const double *prims, const char *line, long ns)
{
	char text[1024], err[512];
	struct sim_costs c;

	cost_text(text, sizeof(text), "ipi_send", line);
	assert_int_equal(sim_costs_parse_text(text, "t", prims, &c, err, sizeof(err)), 0);
	assert_int_equal(c.v[COST_ipi_send], ns);
}

/* `field`'s line refused, the message containing `why`. */
static void expect_field_refused(const double *prims, const char *field, const char *line,
				 const char *why)
{
	char text[1024], err[512];
	struct sim_costs c;

	cost_text(text, sizeof(text), field, line);
	assert_int_equal(sim_costs_parse_text(text, "t", prims, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, why));
}

static void expect_refused(const double *prims, const char *line, const char *why)
{
	expect_field_refused(prims, "ipi_send", line, why);
}

static void test_costs_expressions(void **state)
{
	double prims[SIM_NPRIMS] = {500, 0, 0, 0,  0,  0,  0,  0,  0,  0,
				    0,	 0, 0, -1, -1, -1, -1, 80, -1, -1};

	(void)state;
	expect_ipi_send(prims, "ipi_send = alu*3 + 1.5us - 100ns # comment\n", 2900);

	/* `|`: the first alternative whose primitives the folder has; wakepath_run is -1 here */
	expect_ipi_send(prims, "ipi_send = wakepath_run | alu*2\n", 1000);
	prims[13] = 7000;
	expect_ipi_send(prims, "ipi_send = wakepath_run | alu*2\n", 7000);
	/* products and quotients: a fitted path scaled by its instruction count (insns_block,
	 * 80 here, against the fit's 160); a count the folder lacks falls back */
	expect_ipi_send(prims, "ipi_send = alu*3*insns_block/160 + 1us\n", 1750);
	expect_ipi_send(prims, "ipi_send = alu*insns_enter/2 | alu*4\n", 2000);
	expect_refused(prims, "ipi_send = alu/0\n", "ipi_send: division by zero");
	expect_refused(prims, "ipi_send = alu*\n", "ipi_send: '*' needs");
	/* a missing primitive falls back only if the rest of its alternative is sound */
	expect_refused(prims, "ipi_send = alu*insns_entr/267 | 3us\n",
		       "unknown primitive or cost 'insns_entr'");
	expect_refused(prims, "ipi_send = insns_enter * 5 parsecs | 3us\n", "unexpected 'parsecs");
	expect_ipi_send(prims, "ipi_send = alu/insns_enter | 3us\n", 3000);
	expect_refused(prims, "ipi_send =\n", "ipi_send: empty expression");
	/* a syntax error in the first alternative is an error, not a reason to fall back */
	expect_refused(prims, "ipi_send = 5 parsecs | alu\n", "ipi_send");
	/* max(A, B): a difference kept from going negative, nested, as a factor */
	expect_ipi_send(prims, "ipi_send = max(alu - 2us, 0) + 1us\n", 1000);
	expect_ipi_send(prims, "ipi_send = 2*max(max(alu, 1us), alu*0.5)\n", 2000);
	/* a primitive missing inside falls back like any other */
	expect_ipi_send(prims, "ipi_send = max(wakepath_notice, alu) | 3us\n", 3000);
	expect_refused(prims, "ipi_send = max(alu)\n", "ipi_send: max needs two arguments");
	expect_refused(prims, "ipi_send = max(alu, 1us\n", "ipi_send: max needs two arguments");
	expect_refused(prims, "ipi_send = max(alu, 1 parsec)\n", "unexpected 'parsec");
	expect_refused(prims, "ipi_send = max(alu, 1us, 2us)\n", "max needs two arguments");
	expect_refused(prims, "ipi_send = max(alu, (1us)\n", "max needs two arguments");
	/* the primitive named is the first one missing, wherever it stands */
	expect_refused(prims, "ipi_send = insns_user + max(wakepath_notice, 0)\n",
		       "uses primitive 'insns_user'");
	expect_refused(prims, "ipi_send = max(wakepath_notice, insns_user)\n",
		       "uses primitive 'wakepath_notice'");
	/* a cost given on a line above, as cost.NAME (its median) or spread.NAME; one below is
	 * an error, not a fallback (cost_text() puts ipi_send's line last) */
	expect_ipi_send(prims, "ipi_send = cost.vm_entry*1000 + spread.vm_entry + 1us\n", 2000);
	expect_ipi_send(prims, "ipi_send = wakepath_notice | cost.vm_entry*3\n", 3);
	{
		char text[1024], err[512];
		struct sim_costs c;
		size_t n =
		    (size_t)snprintf(text, sizeof(text), "ipi_send = cost.timer_wake | 1us\n");

		cost_text(text + n, sizeof(text) - n, "ipi_send", "");
		assert_int_equal(sim_costs_parse_text(text, "t", prims, &c, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "uses cost 'cost.timer_wake' before its own line"));
	}
}

/* A cost's spread: `~` gives its p90 less its median, refused on a non-time cost. */
static void test_costs_spread(void **state)
{
	double prims[SIM_NPRIMS];
	char text[1024], err[512];
	struct sim_costs c;

	(void)state;
	for (unsigned i = 0; i < SIM_NPRIMS; i++)
		prims[i] = -1;
	prims[7] = 25000;      /* ipi_send */
	prims[20 + 7] = 40000; /* ipi_send_p90 */
	cost_text(text, sizeof(text), "ipi_send",
		  "ipi_send = ipi_send ~ ipi_send_p90 - ipi_send\n");
	assert_int_equal(sim_costs_parse_text(text, "t", prims, &c, err, sizeof(err)), 0);
	assert_int_equal(c.v[COST_ipi_send], 25000);
	assert_int_equal(c.spread[COST_ipi_send], 15000);
	assert_int_equal(c.spread[COST_ipi_latency], 0);
	/* a spread whose primitives the folder lacks falls back like any expression */
	cost_text(text, sizeof(text), "ipi_send", "ipi_send = 1us ~ wakepath_run_p90 | 2us\n");
	assert_int_equal(sim_costs_parse_text(text, "t", prims, &c, err, sizeof(err)), 0);
	assert_int_equal(c.spread[COST_ipi_send], 2000);
	expect_field_refused(prims, "wake_cold_ppm", "wake_cold_ppm = 5 ~ 1\n",
			     "'wake_cold_ppm' is not a drawn cost");
	expect_field_refused(prims, "preempt_per_s", "preempt_per_s = 75 ~ 10\n",
			     "'preempt_per_s' is not a drawn cost");
	expect_field_refused(prims, "ipi_send", "ipi_send = 1us ~ 1us - 2us\n", "ipi_send spread");
	expect_field_refused(prims, "ipi_send", "ipi_send = 1us ~\n",
			     "ipi_send spread: empty expression");
	/* the engine reads the poll loops' steps as constants: a spread there is refused */
	expect_field_refused(prims, "host_poll_iter", "host_poll_iter = 60ns ~ 1us\n",
			     "'host_poll_iter' is a poll loop's step");
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The engine's draw of a cost with a spread has the median and p90 the table gives, and with
 * a tail the p99 too; a cost without a spread is the constant, drawing nothing from the
 * PRNG. */
static void test_cost_draws_have_the_tables_median_and_p90(void **state)
{
	static uint64_t draws[20000];
	uint64_t c[COST__COUNT] = {0}, spread[COST__COUNT] = {0}, before;
	const uint64_t no_tail[COST__COUNT] = {0};
	const uint64_t tail[COST__COUNT] = {[COST_wake_latency] = 300000};
	const uint64_t wide_c[COST__COUNT] = {[COST_wake_latency] = 1000};
	const uint64_t wide_spread[COST__COUNT] = {[COST_wake_latency] = 100000};
	struct sim *s = calloc(1, sizeof(*s));

	(void)state;
	assert_non_null(s);
	c[COST_wake_latency] = 100000;
	spread[COST_wake_latency] = 50000;
	c[COST_ipi_send] = 7;
	s->c = c;
	s->spread = spread;
	s->tail = no_tail;
	prng_seed(&s->cost_rng, 1);
	before = s->cost_rng.s;
	assert_int_equal(sim_cost(s, COST_ipi_send), 7);
	assert_true(s->cost_rng.s == before);
	for (unsigned i = 0; i < 20000; i++)
		draws[i] = sim_cost(s, COST_wake_latency);
	qsort(draws, 20000, sizeof(draws[0]), cmp_u64);
	assert_in_range(draws[10000], 98000, 102000);	     /* median 100 us */
	assert_in_range(draws[18000], 146000, 154000);	     /* p90 150 us */
	assert_true(draws[0] >= 100000 - 50000 * 0.431 - 1); /* the shift: median - 0.43 spread */
	assert_in_range(draws[19800], 212000, 232000);	     /* p99: the body's exponential on */
	/* a tail: the p99 where it says (150 + 300 us), the median and p90 as they were */
	s->tail = tail;
	for (unsigned i = 0; i < 20000; i++)
		draws[i] = sim_cost(s, COST_wake_latency);
	qsort(draws, 20000, sizeof(draws[0]), cmp_u64);
	assert_in_range(draws[10000], 98000, 102000);
	assert_in_range(draws[18000], 146000, 154000);
	assert_in_range(draws[19800], 420000, 480000);
	/* a spread far above the median: the shift would go below 0, the draw stops there */
	s->tail = no_tail;
	s->c = wide_c;
	s->spread = wide_spread;
	for (unsigned i = 0; i < 20000; i++)
		draws[i] = sim_cost(s, COST_wake_latency);
	qsort(draws, 20000, sizeof(draws[0]), cmp_u64);
	assert_int_equal(draws[0], 0);
	assert_in_range(draws[10000], 0, 3000);
	free(s);
}

static void test_costs_ppm_range(void **state)
{
	char text[1024], err[512];
	struct sim_costs c;

	(void)state;
	cost_text(text, sizeof(text), "block_charge_ppm", "block_charge_ppm = 1000000\n");
	assert_int_equal(sim_costs_parse_text(text, "t", NULL, &c, err, sizeof(err)), 0);
	cost_text(text, sizeof(text), "block_charge_ppm", "block_charge_ppm = 5000000\n");
	assert_int_equal(sim_costs_parse_text(text, "t", NULL, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "block_charge_ppm"));
	assert_non_null(strstr(err, "out of range"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_governor_trace_matches_spec_1_10_2),
	    cmocka_unit_test(test_governor_plateau_1_10_3),
	    cmocka_unit_test(test_cpu_record_has_every_field_and_adds_up),
	    cmocka_unit_test(test_costs_missing_field),
	    cmocka_unit_test(test_costs_unknown_and_bad_fields),
	    cmocka_unit_test(test_costs_expressions),
	    cmocka_unit_test(test_costs_ppm_range),
	    cmocka_unit_test(test_costs_spread),
	    cmocka_unit_test(test_cost_draws_have_the_tables_median_and_p90),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
