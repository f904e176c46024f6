/*
 * Host unit tests for idlelab-sim's engine: the simulated governor's trace equals the
 * kernel's for the same idle sequence (docs/haltpoll-spec.md §1.10.2, the vector the kernel's
 * own governor is tested against in test_haltpoll.c), with every cost zero so the run is the
 * spec's idealized model; the cost file parser refuses bad tables naming the field.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tools/sim/sim.h"

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

static void test_costs_missing_field(void **state)
{
	struct sim_costs c;
	char err[512];

	(void)state;
	assert_int_equal(sim_costs_parse_text("ipi_send = 1us\n", "t", NULL, &c, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "missing field 'ipi_latency'"));
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

static void test_costs_expressions(void **state)
{
	static const char *const base = "ipi_latency=1\nhalt_exit=1\nvm_entry=1\nwake_latency=1\n"
					"timer_slack=1\ntimer_running=1\nhost_poll_iter=1\n"
					"guest_poll_iter=1\npoll_wake=1\nirq_entry=1\ntimer_irq=1\n"
					"timer_arm=1\nsleep_step=1\nwake_path=1\nidle_entry=1\n"
					"idle_reentry=1\nthread_step=1\nblock_charge_ppm=0\n"
					"wake_cold_ppm=0\nwake_cold_max=0\n";
	double prims[11] = {500, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	char text[1024], err[512];
	struct sim_costs c;

	(void)state;
	snprintf(text, sizeof(text), "%sipi_send = alu*3 + 1.5us - 100ns # comment\n", base);
	assert_int_equal(sim_costs_parse_text(text, "t", prims, &c, err, sizeof(err)), 0);
	assert_int_equal(c.v[COST_ipi_send], 2900);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_governor_trace_matches_spec_1_10_2),
	    cmocka_unit_test(test_governor_plateau_1_10_3),
	    cmocka_unit_test(test_costs_missing_field),
	    cmocka_unit_test(test_costs_unknown_and_bad_fields),
	    cmocka_unit_test(test_costs_expressions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
