/*
 * Unit tests for kernel/knobs: every type, every error kind and its exact message, int64
 * and unit-multiplication edges, and the printers. The files of kernel/knobs are compiled
 * into this file under a table that extends the real one with test knobs (an INT with a positive range, a signed
 * INT, full-int64 INT and TIME, an ENUM with a '|' in its help), because the real table
 * alone cannot reach those edges. The real knobs are all still here, so their messages are
 * tested as the kernel prints them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define KNOB_TEST_CHOICES_COLOR(X)                                                                 \
	X(COLOR_RED, "red")                                                                        \
	X(COLOR_GREEN, "green")                                                                    \
	X(COLOR_BLUE, "blue")

/* As many and as long choices as the compile-time limits allow: the longest messages. */
#define KNOB_TEST_CHOICES_MANY(X)                                                                  \
	X(MANY_01, "alpha01")                                                                      \
	X(MANY_02, "alpha02")                                                                      \
	X(MANY_03, "alpha03")                                                                      \
	X(MANY_04, "alpha04")                                                                      \
	X(MANY_05, "alpha05")                                                                      \
	X(MANY_06, "alpha06")                                                                      \
	X(MANY_07, "alpha07")                                                                      \
	X(MANY_08, "alpha08")                                                                      \
	X(MANY_09, "alpha09")                                                                      \
	X(MANY_10, "alpha10")                                                                      \
	X(MANY_11, "alpha11")                                                                      \
	X(MANY_12, "alpha12")                                                                      \
	X(MANY_13, "alpha13")                                                                      \
	X(MANY_14, "alpha14")                                                                      \
	X(MANY_15, "alpha15")                                                                      \
	X(MANY_16, "alpha16")

// clang-format off
#define KNOB_LIST(K) \
	KNOB_TABLE(K) \
	K(t_int, "t.int", INT, 250, 1, 1000, KNOB_NO_CHOICES, "a small positive integer") \
	K(t_sint, "t.sint", INT, 0, -100, 100, KNOB_NO_CHOICES, "a signed integer") \
	K(t_wide, "t.wide", INT, 0, INT64_MIN, INT64_MAX, KNOB_NO_CHOICES, "any int64") \
	K(t_time, "t.time_wide", TIME, 0, INT64_MIN, INT64_MAX, KNOB_NO_CHOICES, "any time") \
	K(t_time_odd, "t.time_odd", TIME, KNOB_NS(1500), KNOB_NS(1500), KNOB_NS(2000000001), \
	  KNOB_NO_CHOICES, "a time whose bounds are no whole number of a unit") \
	K(t_color, "t.color", ENUM, COLOR_GREEN, 0, 0, KNOB_TEST_CHOICES_COLOR, "red | green | blue") \
	K(t_many, "t.many_choices_and_a_long_name_up_to_the_limit", ENUM, MANY_16, 0, 0, \
	  KNOB_TEST_CHOICES_MANY, "sixteen choices")
// clang-format on

#include "kernel/knobs/config.c"
#include "kernel/knobs/help.c"
#include "kernel/knobs/markdown.c"
#include "kernel/knobs/messages.c"
#include "kernel/knobs/parse.c"
#include "kernel/knobs/suggest.c"
#include "kernel/knobs/table.c"
#include "kernel/knobs/values.c"

static char err[256];
static struct knob_values parsed;

static int parse(const char *cmdline)
{
	memcpy(err, "stale", 6);
	return knobs_parse(cmdline, &parsed, err, sizeof(err));
}

static void check_ok(const char *cmdline, enum knob_id id, int64_t want)
{
	int rc = parse(cmdline);

	if (rc != KNOB_OK || parsed.v[id] != want || !parsed.given[id] || err[0]) {
		print_error("'%s': rc %d value %lld (want %lld) err '%s'\n", cmdline, rc,
			    (long long)parsed.v[id], (long long)want, err);
		fail();
	}
}

static void check_err(const char *cmdline, int want_rc, const char *want_msg)
{
	int rc = parse(cmdline);

	if (rc != want_rc || (want_msg && strcmp(err, want_msg) != 0)) {
		print_error("'%s': rc %d (want %d)\n  got  '%s'\n  want '%s'\n", cmdline, rc,
			    want_rc, err, want_msg ? want_msg : "(any)");
		fail();
	}
	assert_true(err[0] != '\0');
	assert_null(strchr(err, '\n'));
}

static void assert_all_defaults(const struct knob_values *v)
{
	for (int i = 0; i < KNOB__COUNT; i++) {
		assert_int_equal(v->v[i], knob_defs[i].def);
		assert_false(v->given[i]);
	}
}

/* --- the table itself --- */

static void test_table_is_sane(void **state)
{
	(void)state;
	for (int i = 0; i < KNOB__COUNT; i++) {
		const struct knob_def *d = &knob_defs[i];

		assert_true(d->name[0] != '\0');
		assert_null(strpbrk(d->name, "= \t\n"));
		assert_true(d->help[0] != '\0');
		assert_null(strchr(d->help, '\n'));
		assert_true(d->min <= d->def && d->def <= d->max);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(d->name, knob_defs[j].name);
		for (unsigned c = 0; c < d->nchoices; c++)
			assert_null(strpbrk(d->choices[c], "|= \t"));
		assert_true((d->type == KNOB_T_ENUM) == (d->choices != NULL));
	}
}

static void test_real_knobs(void **state)
{
	(void)state;
	assert_string_equal(knob_defs[KNOB_help].name, "help");
	assert_int_equal(knob_defs[KNOB_help].type, KNOB_T_BOOL);
	assert_string_equal(knob_defs[KNOB_verbose].name, "verbose");
	assert_int_equal(knob_defs[KNOB_boot_timeout].type, KNOB_T_TIME);
	assert_int_equal(knob_defs[KNOB_boot_timeout].def, 5000000000LL);
	assert_int_equal(knob_defs[KNOB_boot_timeout].min, 10000000LL);
	assert_int_equal(knob_defs[KNOB_boot_timeout].max, 600000000000LL);
	assert_int_equal(knob_defs[KNOB_panic_test].type, KNOB_T_ENUM);
	assert_int_equal(knob_defs[KNOB_panic_test].def, PANIC_TEST_NONE);
	assert_int_equal(knob_defs[KNOB_panic_test].max, 5);
}

/* The choice list yields constants and strings that agree, in order. */
static void test_enum_constants_match_strings(void **state)
{
	const struct knob_def *p = &knob_defs[KNOB_panic_test];
	const struct knob_def *c = &knob_defs[KNOB_t_color];

	(void)state;
	assert_int_equal(KNOB_NCHOICES_panic_test, 6);
	assert_int_equal(p->nchoices, 6);
	assert_string_equal(p->choices[PANIC_TEST_NONE], "none");
	assert_string_equal(p->choices[PANIC_TEST_UD], "ud");
	assert_string_equal(p->choices[PANIC_TEST_DE], "de");
	assert_string_equal(p->choices[PANIC_TEST_PF], "pf");
	assert_string_equal(p->choices[PANIC_TEST_GP], "gp");
	assert_string_equal(p->choices[PANIC_TEST_NULL], "null");
	assert_int_equal(KNOB_NCHOICES_verbose, 0);
	assert_int_equal(c->nchoices, 3);
	assert_string_equal(c->choices[COLOR_BLUE], "blue");
	assert_int_equal(c->def, COLOR_GREEN);
}

static void test_global_starts_at_defaults(void **state)
{
	(void)state;
	assert_all_defaults(&knobs);
	assert_int_equal(knob(KNOB_boot_timeout), 5000000000LL);
	assert_int_equal(knob(KNOB_panic_test), PANIC_TEST_NONE);
	assert_false(knob_given(KNOB_verbose));
}

static void test_set_defaults(void **state)
{
	struct knob_values v;

	(void)state;
	memset(&v, 0x5a, sizeof(v));
	knobs_set_defaults(&v);
	assert_all_defaults(&v);
}

/* --- tokens --- */

static void test_empty_and_blank_cmdlines(void **state)
{
	(void)state;
	const char *blank[] = {"", " ", "\t", "  \t \t  "};

	for (size_t i = 0; i < sizeof(blank) / sizeof(blank[0]); i++) {
		memset(&parsed, 0x5a, sizeof(parsed));
		assert_int_equal(parse(blank[i]), KNOB_OK);
		assert_string_equal(err, "");
		assert_all_defaults(&parsed);
	}
	memset(&parsed, 0x5a, sizeof(parsed));
	assert_int_equal(parse(NULL), KNOB_OK);
	assert_all_defaults(&parsed);
}

static void test_whitespace_runs(void **state)
{
	(void)state;
	assert_int_equal(parse(" \t verbose \t\t boot_timeout=1s\t  panic_test=pf  "), KNOB_OK);
	assert_int_equal(parsed.v[KNOB_verbose], 1);
	assert_int_equal(parsed.v[KNOB_boot_timeout], 1000000000LL);
	assert_int_equal(parsed.v[KNOB_panic_test], PANIC_TEST_PF);
	assert_false(parsed.given[KNOB_help]);
}

static void test_unrelated_knobs_keep_defaults(void **state)
{
	(void)state;
	check_ok("t.int=7", KNOB_t_int, 7);
	for (int i = 0; i < KNOB__COUNT; i++) {
		if (i == KNOB_t_int)
			continue;
		assert_int_equal(parsed.v[i], knob_defs[i].def);
		assert_false(parsed.given[i]);
	}
}

static void test_given_even_at_default(void **state)
{
	(void)state;
	check_ok("verbose=0", KNOB_verbose, 0);
	assert_true(parsed.given[KNOB_verbose]);
}

static void test_unknown_knob(void **state)
{
	(void)state;
	check_err("hzz", KNOB_E_UNKNOWN,
		  "unknown knob 'hzz' (did you mean 'hz'? boot with 'help' to list knobs)");
	check_err("hzz=5", KNOB_E_UNKNOWN,
		  "unknown knob 'hzz' (did you mean 'hz'? boot with 'help' to list knobs)");
	check_err("xyz", KNOB_E_UNKNOWN, "unknown knob 'xyz' (boot with 'help' to list knobs)");
	/* Names match exactly: no case folding, no prefixes. */
	check_err("Verbose", KNOB_E_UNKNOWN, NULL);
	check_err("verb", KNOB_E_UNKNOWN, NULL);
	check_err("verbosex", KNOB_E_UNKNOWN, NULL);
	check_err("t", KNOB_E_UNKNOWN, NULL);
	check_err("t.int.x=1", KNOB_E_UNKNOWN,
		  "unknown knob 't.int.x' (did you mean 't.int'? boot with 'help' to list knobs)");
	check_err("verbose hzz", KNOB_E_UNKNOWN, NULL);
}

/*
 * The suggestion is what the host's matrix parser suggests for a misspelt guest knob:
 * difflib.get_close_matches(word, names, n=1, cutoff=0.6). Each want below is that call's
 * answer for the word against this file's table (the real knobs and the t.* ones).
 */
static void check_suggestion(const char *why, const char *word, const char *want)
{
	char cmd[160];
	char hint[KNOB_NAME_MAX + 32];
	const char *got = knob_suggest(word, strlen(word));

	snprintf(cmd, sizeof(cmd), "%s=1", word);
	snprintf(hint, sizeof(hint), "(did you mean '%s'? ", want ? want : "");
	if (parse(cmd) != KNOB_E_UNKNOWN || (got == NULL) != (want == NULL) ||
	    (want && strcmp(got, want) != 0) || (strstr(err, "did you mean") != NULL) != !!want ||
	    (want && !strstr(err, hint))) {
		print_error("%s: '%s' suggests '%s' (want '%s'); err '%s'\n", why, word,
			    got ? got : "(none)", want ? want : "(none)", err);
		fail();
	}
}

static void test_unknown_knob_suggests_the_closest_name(void **state)
{
	static const struct {
		const char *why;
		const char *word;
		const char *want; /* NULL: no name is close enough */
	} cases[] = {
	    {"a letter too many", "hzz", "hz"},
	    {"a letter missing", "duraton", "duration"},
	    {"two letters swapped", "peroid", "period"},
	    {"another case is another letter", "Verbose", "verbose"},
	    {"a prefix of the name", "verb", "verbose"},
	    {"the name's prefix left off", "guest_halt_poll_ns", "haltpoll.guest_halt_poll_ns"},
	    {"nothing alike", "xyz", NULL},
	    {"a piece of a long name is far from it", "steal", NULL},
	    {"a ratio of exactly 0.6 is close enough", "speb", "spread"},
	    {"a tie goes to the name that sorts last (window_hold)", "window_hoyc", "window_sync"},
	    {"a tie goes to the name that sorts last (hostpoll)", "poll", "pollflag"},
	    {"a better ratio beats a tie below it (t.sint, t.wide)", "t.i", "t.int"},
	    /* difflib matches the name's blocks against the word's, not the other way round. */
	    {"name against word: 0.44 for seed (word against name: 0.67)", "e_esd", NULL},
	    {"name against word: 0.67 for idle (word against name: 0.5)", "deitdtle", "idle"},
	    {"matched characters, not edits (timeline: 4 edits, boot_timeout: 5)", "timeout",
	     "boot_timeout"},
	    {"matched characters, not edits (selftest: 6 edits)", "steal_thresh",
	     "haltpoll.steal_threshold"},
	};
	const char *longest = knob_defs[KNOB_t_many].name;
	size_t n = strlen(longest);
	/* The most junk after a whole name for which 2n / (2n + junk) is still >= 0.6. */
	size_t junk = 4 * n / 3;
	char word[KNOB_NAME_MAX * 3];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_suggestion(cases[i].why, cases[i].word, cases[i].want);
	assert_null(strchr(longest, 'x'));
	memcpy(word, longest, n);
	memset(word + n, 'x', junk + 1);
	word[n + junk] = '\0';
	check_suggestion("the longest name and the most junk it allows", word, longest);
	word[n + junk] = 'x';
	word[n + junk + 1] = '\0';
	check_suggestion("the longest name and a junk byte too many", word, NULL);
}

static void test_missing_name(void **state)
{
	(void)state;
	check_err("=5", KNOB_E_SYNTAX, "knob '=5': missing name before '=' (expected name=value)");
	check_err("=", KNOB_E_SYNTAX, "knob '=': missing name before '=' (expected name=value)");
}

static void test_duplicates(void **state)
{
	(void)state;
	check_err("verbose verbose", KNOB_E_DUPLICATE, "knob 'verbose' given twice");
	check_err("verbose=1 verbose=0", KNOB_E_DUPLICATE, "knob 'verbose' given twice");
	check_err("boot_timeout=1s verbose boot_timeout=1s", KNOB_E_DUPLICATE,
		  "knob 'boot_timeout' given twice");
}

static void test_missing_value(void **state)
{
	(void)state;
	check_err("boot_timeout", KNOB_E_MISSING,
		  "knob 'boot_timeout' needs a value: expected a time like 250us, 10ms or 2s "
		  "(ns if no unit), range 10ms..600s");
	check_err("boot_timeout=", KNOB_E_MISSING,
		  "knob 'boot_timeout=' needs a value: expected a time like 250us, 10ms or 2s "
		  "(ns if no unit), range 10ms..600s");
	check_err("panic_test", KNOB_E_MISSING,
		  "knob 'panic_test' needs a value: must be one of none|ud|de|pf|gp|null");
	check_err("t.int", KNOB_E_MISSING,
		  "knob 't.int' needs a value: expected an integer (decimal or 0x hex), range "
		  "1..1000");
	check_err("verbose=", KNOB_E_MISSING,
		  "knob 'verbose=' needs a value: expected one of "
		  "0|1|on|off|yes|no|y|n|true|false");
}

/* A bad token anywhere leaves plain defaults, not the knobs parsed before it. */
static void test_error_leaves_defaults(void **state)
{
	(void)state;
	memset(&parsed, 0x5a, sizeof(parsed));
	check_err("verbose boot_timeout=1s panic_test=gp hzz", KNOB_E_UNKNOWN, NULL);
	assert_all_defaults(&parsed);
}

/* --- BOOL --- */

static void test_bool_values(void **state)
{
	static const struct {
		const char *text;
		int64_t value;
	} words[] = {
	    {"0", 0},  {"1", 1}, {"on", 1}, {"off", 0},	 {"yes", 1},
	    {"no", 0}, {"y", 1}, {"n", 0},  {"true", 1}, {"false", 0},
	};
	char cmd[64];

	(void)state;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		snprintf(cmd, sizeof(cmd), "verbose=%s", words[i].text);
		check_ok(cmd, KNOB_verbose, words[i].value);
	}
	check_ok("verbose", KNOB_verbose, 1);
	check_ok("help", KNOB_help, 1);
}

static void test_bool_bad_values(void **state)
{
	(void)state;
	check_err("verbose=2", KNOB_E_VALUE,
		  "knob 'verbose=2': expected one of 0|1|on|off|yes|no|y|n|true|false");
	check_err("verbose=ON", KNOB_E_VALUE, NULL);
	check_err("verbose=yess", KNOB_E_VALUE, NULL);
	check_err("verbose=01", KNOB_E_VALUE, NULL);
	check_err("verbose==1", KNOB_E_VALUE, NULL);
}

/* --- ENUM --- */

static void test_enum_values(void **state)
{
	(void)state;
	check_ok("panic_test=none", KNOB_panic_test, PANIC_TEST_NONE);
	check_ok("panic_test=ud", KNOB_panic_test, PANIC_TEST_UD);
	check_ok("panic_test=de", KNOB_panic_test, PANIC_TEST_DE);
	check_ok("panic_test=pf", KNOB_panic_test, PANIC_TEST_PF);
	check_ok("panic_test=gp", KNOB_panic_test, PANIC_TEST_GP);
	check_ok("panic_test=null", KNOB_panic_test, PANIC_TEST_NULL);
	check_ok("t.color=blue", KNOB_t_color, COLOR_BLUE);
}

static void test_enum_bad_values(void **state)
{
	(void)state;
	check_err("panic_test=GP", KNOB_E_VALUE,
		  "knob 'panic_test=GP': must be one of none|ud|de|pf|gp|null");
	check_err("panic_test=g", KNOB_E_VALUE, NULL);
	check_err("panic_test=gpx", KNOB_E_VALUE, NULL);
	check_err("panic_test=4", KNOB_E_VALUE, NULL);
	check_err("t.color=red|blue", KNOB_E_VALUE,
		  "knob 't.color=red|blue': must be one of red|green|blue");
}

/* --- INT --- */

static void test_int_values(void **state)
{
	(void)state;
	check_ok("t.int=1", KNOB_t_int, 1);
	check_ok("t.int=1000", KNOB_t_int, 1000);
	check_ok("t.int=0x10", KNOB_t_int, 16);
	check_ok("t.int=0X3E8", KNOB_t_int, 1000);
	check_ok("t.int=0x3e8", KNOB_t_int, 1000);
	check_ok("t.int=007", KNOB_t_int, 7);
	check_ok("t.int=0x0000000000000000000000001", KNOB_t_int, 1);
	check_ok("t.sint=-100", KNOB_t_sint, -100);
	check_ok("t.sint=-0", KNOB_t_sint, 0);
	check_ok("t.sint=-0x10", KNOB_t_sint, -16);
	check_ok("t.sint=100", KNOB_t_sint, 100);
}

static void test_int_range(void **state)
{
	(void)state;
	check_err("t.int=1001", KNOB_E_RANGE, "knob 't.int=1001': out of range, accepted 1..1000");
	check_err("t.int=0", KNOB_E_RANGE, "knob 't.int=0': out of range, accepted 1..1000");
	check_err("t.int=0x3e9", KNOB_E_RANGE, NULL);
	check_err("t.sint=-101", KNOB_E_RANGE,
		  "knob 't.sint=-101': out of range, accepted -100..100");
	check_err("t.sint=101", KNOB_E_RANGE, NULL);
}

static void test_int_syntax(void **state)
{
	(void)state;
	check_err("t.int=abc", KNOB_E_VALUE,
		  "knob 't.int=abc': expected an integer (decimal or 0x hex), range 1..1000");
	/* '-' is no part of the syntax where no negative value is in range, not even -0. */
	check_err("t.int=-5", KNOB_E_VALUE, NULL);
	check_err("t.int=-0", KNOB_E_VALUE, NULL);
	check_err("t.int=+5", KNOB_E_VALUE, NULL);
	check_err("t.int=0x", KNOB_E_VALUE, NULL);
	check_err("t.int=0xg", KNOB_E_VALUE, NULL);
	check_err("t.int=10k", KNOB_E_VALUE, NULL);
	check_err("t.int=1_000", KNOB_E_VALUE, NULL);
	check_err("t.int=1.0", KNOB_E_VALUE, NULL);
	check_err("t.int=0b1", KNOB_E_VALUE, NULL);
	check_err("t.sint=-", KNOB_E_VALUE, NULL);
	check_err("t.sint=--5", KNOB_E_VALUE, NULL);
	check_err("t.sint=-+5", KNOB_E_VALUE, NULL);
	check_err("t.sint=5-", KNOB_E_VALUE, NULL);
}

static void test_int64_edges(void **state)
{
	(void)state;
	check_ok("t.wide=9223372036854775807", KNOB_t_wide, INT64_MAX);
	check_ok("t.wide=-9223372036854775808", KNOB_t_wide, INT64_MIN);
	check_ok("t.wide=0x7fffffffffffffff", KNOB_t_wide, INT64_MAX);
	check_ok("t.wide=-0x8000000000000000", KNOB_t_wide, INT64_MIN);
	check_ok("t.wide=-1", KNOB_t_wide, -1);
	check_ok("t.wide=000000000000000000000000000042", KNOB_t_wide, 42);
	check_err("t.wide=9223372036854775808", KNOB_E_RANGE,
		  "knob 't.wide=9223372036854775808': out of range, accepted -2^63..2^63-1");
	check_err("t.wide=-9223372036854775809", KNOB_E_RANGE, NULL);
	check_err("t.wide=0x8000000000000000", KNOB_E_RANGE, NULL);
	check_err("t.wide=-0x8000000000000001", KNOB_E_RANGE, NULL);
	check_err("t.wide=0xffffffffffffffff", KNOB_E_RANGE, NULL);
	check_err("t.wide=18446744073709551615", KNOB_E_RANGE, NULL);
	check_err("t.wide=18446744073709551616", KNOB_E_RANGE, NULL);
	check_err("t.wide=0x10000000000000000", KNOB_E_RANGE, NULL);
	check_err("t.wide=99999999999999999999999999999999999999", KNOB_E_RANGE, NULL);
	check_err("t.int=99999999999999999999999999999999999999", KNOB_E_RANGE, NULL);
	/* A malformed value is a syntax error even when its digits overflow. */
	check_err("t.wide=99999999999999999999999999x", KNOB_E_VALUE, NULL);
}

/* --- TIME --- */

static void test_time_values(void **state)
{
	(void)state;
	check_ok("boot_timeout=10ms", KNOB_boot_timeout, 10000000LL);
	check_ok("boot_timeout=600s", KNOB_boot_timeout, 600000000000LL);
	check_ok("boot_timeout=10000000", KNOB_boot_timeout, 10000000LL);
	check_ok("boot_timeout=10000000ns", KNOB_boot_timeout, 10000000LL);
	check_ok("boot_timeout=10000us", KNOB_boot_timeout, 10000000LL);
	check_ok("boot_timeout=1500000000", KNOB_boot_timeout, 1500000000LL);
	check_ok("boot_timeout=2s", KNOB_boot_timeout, 2000000000LL);
	check_ok("boot_timeout=0600s", KNOB_boot_timeout, 600000000000LL);
	check_ok("t.time_wide=-5ms", KNOB_t_time, -5000000LL);
	check_ok("t.time_wide=-0", KNOB_t_time, 0);
	check_ok("t.time_wide=-0s", KNOB_t_time, 0);
}

static void test_time_range(void **state)
{
	(void)state;
	check_err("boot_timeout=0", KNOB_E_RANGE,
		  "knob 'boot_timeout=0': out of range, accepted 10ms..600s");
	check_err("boot_timeout=9999999", KNOB_E_RANGE, NULL);
	check_err("boot_timeout=9999us", KNOB_E_RANGE, NULL);
	check_err("boot_timeout=600000000001", KNOB_E_RANGE, NULL);
	check_err("boot_timeout=601s", KNOB_E_RANGE, NULL);
	check_err("boot_timeout=250us", KNOB_E_RANGE, NULL);
	check_err("boot_timeout=99999999999999999999999s", KNOB_E_RANGE, NULL);
}

static void test_time_syntax(void **state)
{
	(void)state;
	check_err("boot_timeout=2h", KNOB_E_VALUE,
		  "knob 'boot_timeout=2h': expected a time like 250us, 10ms or 2s (ns if no "
		  "unit), range 10ms..600s");
	check_err("boot_timeout=10msx", KNOB_E_VALUE, NULL);
	check_err("boot_timeout=ms", KNOB_E_VALUE, NULL);
	check_err("boot_timeout=s", KNOB_E_VALUE, NULL);
	check_err("boot_timeout=10MS", KNOB_E_VALUE, NULL);
	check_err("boot_timeout=1.5s", KNOB_E_VALUE, NULL);
	check_err("boot_timeout=0x10", KNOB_E_VALUE, NULL);
	check_err("boot_timeout=-1s", KNOB_E_VALUE, NULL);
	check_err("boot_timeout=-0", KNOB_E_VALUE, NULL);
	check_err("boot_timeout=10 ms", KNOB_E_RANGE, NULL);
	check_err("t.time_wide=-", KNOB_E_VALUE, NULL);
	check_err("t.time_wide=-ms", KNOB_E_VALUE, NULL);
	check_err("t.time_wide=5mss", KNOB_E_VALUE, NULL);
	check_err("t.time_wide=5sms", KNOB_E_VALUE, NULL);
}

/* The unit multiplication must be checked, not wrapped. */
static void test_time_overflow(void **state)
{
	(void)state;
	check_ok("t.time_wide=9223372036854775807", KNOB_t_time, INT64_MAX);
	check_ok("t.time_wide=9223372036854775807ns", KNOB_t_time, INT64_MAX);
	check_ok("t.time_wide=9223372036854775us", KNOB_t_time, 9223372036854775000LL);
	check_ok("t.time_wide=9223372036854ms", KNOB_t_time, 9223372036854000000LL);
	check_ok("t.time_wide=9223372036s", KNOB_t_time, 9223372036000000000LL);
	check_ok("t.time_wide=-9223372036854775808", KNOB_t_time, INT64_MIN);
	check_ok("t.time_wide=-9223372036s", KNOB_t_time, -9223372036000000000LL);
	check_err("t.time_wide=9223372036854775808", KNOB_E_RANGE, NULL);
	check_err("t.time_wide=9223372036854776us", KNOB_E_RANGE, NULL);
	check_err("t.time_wide=9223372036855ms", KNOB_E_RANGE, NULL);
	check_err("t.time_wide=9223372037s", KNOB_E_RANGE, NULL);
	check_err("t.time_wide=-9223372037s", KNOB_E_RANGE, NULL);
	check_err("t.time_wide=18446744074s", KNOB_E_RANGE, NULL);
	check_err("t.time_wide=18446744073709551616ns", KNOB_E_RANGE, NULL);
	check_err("t.time_wide=-9223372036854775809", KNOB_E_RANGE,
		  "knob 't.time_wide=-9223372036854775809': out of range, accepted "
		  "-9223372036.854775808s..9223372036.854775807s");
}

/* --- messages under stress --- */

static void test_long_tokens_are_truncated(void **state)
{
	enum {
		LONG = 10000
	};
	char *cmd = malloc(LONG + 32);
	const char *tail;

	(void)state;
	assert_non_null(cmd);
	memset(cmd, 'x', LONG);
	cmd[LONG] = '\0';
	check_err(cmd, KNOB_E_UNKNOWN,
		  "unknown knob 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' (boot with 'help' "
		  "to list knobs)");

	strcpy(cmd, "boot_timeout=");
	memset(cmd + 13, '9', LONG);
	cmd[13 + LONG] = '\0';
	check_err(cmd, KNOB_E_RANGE,
		  "knob 'boot_timeout=999999999999999999999999999...': out of range, accepted "
		  "10ms..600s");
	cmd[13 + LONG - 1] = 'h';
	check_err(cmd, KNOB_E_VALUE, NULL);
	tail = strstr(err, "...': expected a time");
	assert_non_null(tail);
	free(cmd);
}

/* With KNOB_ERR_MAX bytes no message is cut, even for the worst token of every knob. */
static void test_err_max_holds_every_message(void **state)
{
	static const char junk[] = "\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01";
	char cmd[256];
	char big[KNOB_ERR_MAX];
	struct knob_values v;

	(void)state;
	for (int i = 0; i < KNOB__COUNT; i++) {
		const char *forms[] = {"%s=%s", "%s", "%s="};

		for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
			snprintf(cmd, sizeof(cmd), forms[f], knob_defs[i].name, junk);
			if (knobs_parse(cmd, &v, big, sizeof(big)) == KNOB_OK)
				continue;
			assert_true(strlen(big) < sizeof(big) - 1);
			if (f == 0)
				assert_non_null(strstr(big, "..."));
		}
	}
	snprintf(cmd, sizeof(cmd), "%s=x", knob_defs[KNOB_t_many].name);
	assert_int_equal(knobs_parse(cmd, &v, big, sizeof(big)), KNOB_E_VALUE);
	assert_string_equal(big + strlen(big) - 15, "alpha15|alpha16");
	snprintf(cmd, sizeof(cmd), "%s%s", junk, junk);
	assert_int_equal(knobs_parse(cmd, &v, big, sizeof(big)), KNOB_E_UNKNOWN);
	assert_string_equal(big,
			    "unknown knob '\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01...' "
			    "(boot with 'help' to list knobs)");
}

/* err gets exactly errlen bytes, always NUL-terminated; the heap buffer lets ASan check. */
static void test_small_err_buffers(void **state)
{
	struct knob_values v;

	(void)state;
	for (size_t len = 1; len < 40; len++) {
		char *small = malloc(len);

		assert_non_null(small);
		assert_int_equal(knobs_parse("hzz", &v, small, len), KNOB_E_UNKNOWN);
		assert_int_equal(strlen(small), len - 1);
		assert_memory_equal(small, "unknown knob 'hzz'", len - 1 < 18 ? len - 1 : 18);
		free(small);
	}
	assert_int_equal(knobs_parse("hzz", &v, NULL, 0), KNOB_E_UNKNOWN);
	assert_int_equal(knobs_parse("verbose", &v, NULL, 0), KNOB_OK);
	assert_int_equal(knobs_parse("hzz", &v, err, 0), KNOB_E_UNKNOWN);
}

/* Control bytes are escaped so err stays one printable line. */
static void test_control_bytes_are_escaped(void **state)
{
	(void)state;
	check_err("verbose\n", KNOB_E_UNKNOWN,
		  "unknown knob 'verbose\\x0a' (did you mean 'verbose'? boot with 'help' to list "
		  "knobs)");
	check_err("a\x01\x7f\xff", KNOB_E_UNKNOWN,
		  "unknown knob 'a\\x01\\x7f\\xff' (boot with 'help' to list knobs)");
	check_err("boot_timeout=1\rs", KNOB_E_VALUE, NULL);
	assert_non_null(strstr(err, "'boot_timeout=1\\x0ds'"));
	/* Quote and backslash too, so err can sit inside a quoted field. */
	check_err("a\"b\\c", KNOB_E_UNKNOWN,
		  "unknown knob 'a\\x22b\\x5cc' (boot with 'help' to list knobs)");
}

/* --- formatting --- */

static void check_format(enum knob_id id, int64_t v, const char *want)
{
	char buf[64];
	int n = knob_format_value(id, v, buf, sizeof(buf));

	assert_string_equal(buf, want);
	assert_int_equal(n, strlen(want));
}

static void test_format_value(void **state)
{
	char small[4];

	(void)state;
	check_format(KNOB_boot_timeout, 5000000000LL, "5s");
	check_format(KNOB_boot_timeout, 250000, "250us");
	check_format(KNOB_boot_timeout, 1500, "1500ns");
	check_format(KNOB_boot_timeout, 1500000000LL, "1500ms");
	check_format(KNOB_boot_timeout, 10000000, "10ms");
	check_format(KNOB_boot_timeout, 0, "0s");
	check_format(KNOB_t_time, -2000, "-2us");
	check_format(KNOB_t_time, INT64_MIN, "-9223372036854775808ns");
	check_format(KNOB_t_time, INT64_MAX, "9223372036854775807ns");
	check_format(KNOB_panic_test, PANIC_TEST_GP, "gp");
	check_format(KNOB_panic_test, 99, "99");
	check_format(KNOB_panic_test, -1, "-1");
	check_format(KNOB_verbose, 1, "1");
	check_format(KNOB_verbose, 0, "0");
	check_format(KNOB_t_wide, INT64_MIN, "-9223372036854775808");
	check_format(KNOB_t_int, 250, "250");
	assert_int_equal(knob_format_value(KNOB__COUNT, 0, small, sizeof(small)), -1);
	assert_int_equal(knob_format_value((enum knob_id) - 1, 0, small, sizeof(small)), -1);
	assert_int_equal(knob_format_value(KNOB_boot_timeout, 1500, small, sizeof(small)), 6);
	assert_string_equal(small, "150");
}

static void check_round_trip(enum knob_id id, int64_t v)
{
	char text[64];
	char cmd[128];

	knob_format_value(id, v, text, sizeof(text));
	snprintf(cmd, sizeof(cmd), "%s=%s", knob_defs[id].name, text);
	check_ok(cmd, id, v);
}

/* A mask is an INT read as one: typed in hex or decimal, printed in hex. */
static void test_mask_values(void **state)
{
	(void)state;
	assert_int_equal(knob_defs[KNOB_cpus].type, KNOB_T_MASK);
	assert_string_equal(knob_type_name(KNOB_T_MASK), "mask");
	check_ok("cpus=0x5", KNOB_cpus, 5);
	check_ok("cpus=0X5", KNOB_cpus, 5);
	check_ok("cpus=5", KNOB_cpus, 5);
	check_ok("cpus=0x7fffffffffffffff", KNOB_cpus, INT64_MAX);
	check_format(KNOB_cpus, 5, "0x5");
	check_format(KNOB_cpus, 0, "0x0");
	check_format(KNOB_cpus, INT64_MAX, "0x7fffffffffffffff");
	check_err("cpus=0x8000000000000000", KNOB_E_RANGE,
		  "knob 'cpus=0x8000000000000000': out of range, accepted 0x0..0x7fffffffffffffff");
	check_err("cpus=-1", KNOB_E_VALUE,
		  "knob 'cpus=-1': expected a bit mask (0x hex or decimal), range "
		  "0x0..0x7fffffffffffffff");
	check_err("cpus", KNOB_E_MISSING, NULL);
}

/* Ranges are written to be read: a type's limit as 2^N-1, a time in its largest unit. */
static void test_range_text(void **state)
{
	static const struct {
		const char *why;
		enum knob_id id;
		const char *want;
	} cases[] = {
	    {"a small int as it is", KNOB_t_int, "1..1000"},
	    {"a signed int as it is", KNOB_t_sint, "-100..100"},
	    {"a u32 limit (Linux's uint parameter)", KNOB_guest_halt_poll_grow, "0..2^32-1"},
	    {"an int64 limit", KNOB_seed, "0..2^63-1"},
	    {"both int64 limits", KNOB_t_wide, "-2^63..2^63-1"},
	    {"a mask in hex", KNOB_cpus, "0x0..0x7fffffffffffffff"},
	    {"whole units as typed", KNOB_boot_timeout, "10ms..600s"},
	    {"the u32 ns limit in seconds, exactly", KNOB_guest_halt_poll_ns, "0s..4.294967295s"},
	    {"the largest unit reached, its zeros kept", KNOB_t_time_odd, "1.5us..2.000000001s"},
	    {"the int64 ns limits", KNOB_t_time, "-9223372036.854775808s..9223372036.854775807s"},
	};
	char buf[KNOB_LINE_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct text t = text_init(buf, sizeof(buf));

		knob_put_range(&t, &knob_defs[cases[i].id], "");
		if (strcmp(buf, cases[i].want) != 0) {
			print_error("%s: %s's range '%s' (want '%s')\n", cases[i].why,
				    knob_defs[cases[i].id].name, buf, cases[i].want);
			fail();
		}
	}
}

static void test_format_round_trip(void **state)
{
	static const int64_t odd_times[] = {1, 999, 1001000, -1, 3000000000LL, -7000000LL};

	(void)state;
	for (int i = 0; i < KNOB__COUNT; i++) {
		check_round_trip(i, knob_defs[i].def);
		check_round_trip(i, knob_defs[i].min);
		check_round_trip(i, knob_defs[i].max);
	}
	for (size_t i = 0; i < sizeof(odd_times) / sizeof(odd_times[0]); i++)
		check_round_trip(KNOB_t_time, odd_times[i]);
}

/* --- printers --- */

struct lines {
	int n;
	char text[64][KNOB_LINE_MAX];
};

static void collect(const char *line, void *ctx)
{
	struct lines *l = ctx;

	assert_true(l->n < 64);
	assert_true(strlen(line) < KNOB_LINE_MAX - 1);
	assert_null(strchr(line, '\n'));
	strcpy(l->text[l->n++], line);
}

static struct lines out;

static int setup_lines(void **state)
{
	(void)state;
	memset(&out, 0, sizeof(out));
	return 0;
}

/* Copies s to buf with every run of spaces made one space. */
static const char *squeeze(const char *s, char *buf)
{
	char *o = buf;

	for (; *s; s++) {
		if (*s != ' ' || o == buf || o[-1] != ' ')
			*o++ = *s;
	}
	*o = '\0';
	return buf;
}

static void test_help_lists_every_knob(void **state)
{
	char value[64];
	char want[KNOB_LINE_MAX];

	(void)state;
	knobs_print_help(collect, &out);
	assert_int_equal(out.n, KNOB__COUNT);
	for (int i = 0; i < KNOB__COUNT; i++) {
		const struct knob_def *d = &knob_defs[i];
		const char *line = out.text[i];

		assert_memory_equal(line, d->name, strlen(d->name));
		assert_int_equal(line[strlen(d->name)], ' ');
		assert_non_null(strstr(line, knob_type_name(d->type)));
		assert_non_null(strstr(line, d->help));
		knob_format_value(i, d->def, value, sizeof(value));
		snprintf(want, sizeof(want), "default %s", value);
		assert_non_null(strstr(line, want));
	}
	/* Column widths depend on the whole table, so compare with blank runs squeezed. */
	assert_string_equal(
	    squeeze(out.text[KNOB_boot_timeout], want),
	    "boot_timeout time default 5s 10ms..600s how long the BSP waits for each "
	    "application processor to come online before failing the boot");
	assert_non_null(strstr(out.text[KNOB_panic_test], "none|ud|de|pf|gp|null"));
}

/*
 * Every line has its type at the same column, two past the widest name up to 32; a longer
 * name pushes its own line right by a two-space gap.
 */
static void test_help_columns_align(void **state)
{
	size_t widest = 0;

	(void)state;
	knobs_print_help(collect, &out);
	for (int i = 0; i < KNOB__COUNT; i++) {
		if (strlen(knob_defs[i].name) > widest && strlen(knob_defs[i].name) <= 32)
			widest = strlen(knob_defs[i].name);
	}
	for (int i = 0; i < KNOB__COUNT; i++) {
		const char *type = knob_type_name(knob_defs[i].type);
		size_t len = strlen(knob_defs[i].name);
		size_t col = len > widest ? len + 2 : widest + 2;

		assert_memory_equal(out.text[i] + col - 2, "  ", 2);
		assert_memory_equal(out.text[i] + col, type, strlen(type));
	}
}

static void test_markdown_lists_every_knob(void **state)
{
	char want[128];

	(void)state;
	knobs_print_markdown(collect, &out);
	assert_int_equal(out.n, 2 + KNOB__COUNT + 2);
	assert_string_equal(out.text[0], "| knob | type | default | range | description |");
	assert_string_equal(out.text[1], "| --- | --- | --- | --- | --- |");
	for (int i = 0; i < KNOB__COUNT; i++) {
		const char *row = out.text[2 + i];

		snprintf(want, sizeof(want), "| `%s` | %s | ", knob_defs[i].name,
			 knob_type_name(knob_defs[i].type));
		assert_memory_equal(row, want, strlen(want));
		assert_string_equal(row + strlen(row) - 2, " |");
	}
	assert_string_equal(out.text[2 + KNOB_boot_timeout],
			    "| `boot_timeout` | time | `5s` | `10ms`..`600s` | how long the BSP "
			    "waits for each application processor to come online before failing "
			    "the boot |");
	assert_non_null(strstr(out.text[2 + KNOB_panic_test],
			       "| `none` | `none`, `ud`, `de`, `pf`, `gp`, `null` | raise"));
	assert_non_null(strstr(out.text[2 + KNOB_t_color], "| red \\| green \\| blue |"));
	assert_string_equal(out.text[2 + KNOB__COUNT], "");
	assert_non_null(strstr(out.text[3 + KNOB__COUNT], "`ns`, `us`, `ms`, `s`"));
	assert_non_null(strstr(out.text[3 + KNOB__COUNT], "`true`, `false`"));
}

/* The config line lists every knob in table order with its canonical value, whatever the
 * table holds; the values given on the command line show up as given. */
static void test_config_line(void **state)
{
	char want[KNOB_LINE_MAX * 2] = "@idlelab config";
	char value[64];

	(void)state;
	assert_int_equal(knobs_parse("verbose boot_timeout=250ms panic_test=ud t.sint=-3", &knobs,
				     err, sizeof(err)),
			 KNOB_OK);
	for (int i = 0; i < KNOB__COUNT; i++) {
		knob_format_value((enum knob_id)i, knobs.v[i], value, sizeof(value));
		snprintf(want + strlen(want), sizeof(want) - strlen(want), " %s=%s",
			 knob_defs[i].name, value);
	}
	knobs_print_config(collect, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(out.text[0], want);
	assert_non_null(strstr(out.text[0], " panic_test=ud verbose=1 boot_timeout=250ms "));
	assert_non_null(strstr(out.text[0], " t.sint=-3 "));
	knobs_set_defaults(&knobs);
}

/* Split lines keep every pair, each line is a valid config line, and they parse back. */
static void test_config_splits_long_lines(void **state)
{
	char joined[KNOB_LINE_MAX * 2] = "";
	struct knob_values v;
	static const char prefix[] = "@idlelab config ";

	(void)state;
	assert_int_equal(parse("t.wide=-9223372036854775808 t.time_wide=1500ns panic_test=gp"),
			 KNOB_OK);
	v = parsed;
	knobs_print_values(&v, 80, collect, &out);
	assert_true(out.n > 1);
	for (int i = 0; i < out.n; i++) {
		assert_memory_equal(out.text[i], prefix, strlen(prefix));
		assert_true(strlen(out.text[i]) <= 80);
		strcat(joined, out.text[i] + strlen(prefix));
		strcat(joined, " ");
	}
	assert_int_equal(parse(joined), KNOB_OK);
	assert_memory_equal(parsed.v, v.v, sizeof(v.v));

	/* A limit below one pair still makes progress: one pair per line. */
	memset(&out, 0, sizeof(out));
	knobs_print_values(&v, 1, collect, &out);
	assert_int_equal(out.n, KNOB__COUNT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table_is_sane),
	    cmocka_unit_test(test_real_knobs),
	    cmocka_unit_test(test_enum_constants_match_strings),
	    cmocka_unit_test(test_global_starts_at_defaults),
	    cmocka_unit_test(test_set_defaults),
	    cmocka_unit_test(test_empty_and_blank_cmdlines),
	    cmocka_unit_test(test_whitespace_runs),
	    cmocka_unit_test(test_unrelated_knobs_keep_defaults),
	    cmocka_unit_test(test_given_even_at_default),
	    cmocka_unit_test(test_unknown_knob),
	    cmocka_unit_test(test_unknown_knob_suggests_the_closest_name),
	    cmocka_unit_test(test_missing_name),
	    cmocka_unit_test(test_duplicates),
	    cmocka_unit_test(test_missing_value),
	    cmocka_unit_test(test_error_leaves_defaults),
	    cmocka_unit_test(test_bool_values),
	    cmocka_unit_test(test_bool_bad_values),
	    cmocka_unit_test(test_enum_values),
	    cmocka_unit_test(test_enum_bad_values),
	    cmocka_unit_test(test_int_values),
	    cmocka_unit_test(test_int_range),
	    cmocka_unit_test(test_int_syntax),
	    cmocka_unit_test(test_mask_values),
	    cmocka_unit_test(test_range_text),
	    cmocka_unit_test(test_int64_edges),
	    cmocka_unit_test(test_time_values),
	    cmocka_unit_test(test_time_range),
	    cmocka_unit_test(test_time_syntax),
	    cmocka_unit_test(test_time_overflow),
	    cmocka_unit_test(test_long_tokens_are_truncated),
	    cmocka_unit_test(test_err_max_holds_every_message),
	    cmocka_unit_test(test_small_err_buffers),
	    cmocka_unit_test(test_control_bytes_are_escaped),
	    cmocka_unit_test(test_format_value),
	    cmocka_unit_test(test_format_round_trip),
	    cmocka_unit_test_setup(test_help_lists_every_knob, setup_lines),
	    cmocka_unit_test_setup(test_help_columns_align, setup_lines),
	    cmocka_unit_test_setup(test_markdown_lists_every_knob, setup_lines),
	    cmocka_unit_test_setup(test_config_line, setup_lines),
	    cmocka_unit_test_setup(test_config_splits_long_lines, setup_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
