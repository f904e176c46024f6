/*
 * libFuzzer target for the knob parser. Arbitrary bytes become a command line; whatever the
 * outcome, the result must be well formed: accepted values inside their ranges and printing
 * back to text that parses to the same value, rejected input explained by one printable line
 * that fits its buffer. The files of kernel/knobs are compiled in under the real table plus
 * knobs that reach negative and full-int64 ranges, which the real table alone does not exercise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KNOB_FUZZ_CHOICES(X)                                                                       \
	X(FUZZ_A, "a")                                                                             \
	X(FUZZ_BB, "bb")                                                                           \
	X(FUZZ_CCC, "ccc")

// clang-format off
#define KNOB_LIST(K) \
	KNOB_TABLE(K) \
	K(f_int, "f.int", INT, 5, 1, 1000, KNOB_NO_CHOICES, "positive int") \
	K(f_sint, "f.sint", INT, 0, -1000, 1000, KNOB_NO_CHOICES, "signed int") \
	K(f_wide, "f.wide", INT, 0, INT64_MIN, INT64_MAX, KNOB_NO_CHOICES, "any int64") \
	K(f_time, "f.time", TIME, 0, INT64_MIN, INT64_MAX, KNOB_NO_CHOICES, "any time") \
	K(f_ptime, "f.ptime", TIME, KNOB_US(1), KNOB_NS(1), KNOB_S(10), KNOB_NO_CHOICES, "a time") \
	K(f_enum, "f.enum", ENUM, FUZZ_A, 0, 0, KNOB_FUZZ_CHOICES, "an enum")
// clang-format on

#include "kernel/knobs/config.c"
#include "kernel/knobs/help.c"
#include "kernel/knobs/markdown.c"
#include "kernel/knobs/messages.c"
#include "kernel/knobs/parse.c"
#include "kernel/knobs/suggest.c"
#include "kernel/knobs/table.c"
#include "kernel/knobs/values.c"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_value(int id, const struct knob_values *v)
{
	const struct knob_def *d = &knob_defs[id];

	CHECK(v->v[id] >= d->min && v->v[id] <= d->max);
	if (d->type == KNOB_T_ENUM)
		CHECK(v->v[id] < (int64_t)d->nchoices);
	if (d->type == KNOB_T_BOOL)
		CHECK(v->v[id] == 0 || v->v[id] == 1);
	if (!v->given[id])
		CHECK(v->v[id] == d->def);
}

/* Canonical text must be accepted back as the same value. */
static void check_round_trip(int id, int64_t v)
{
	char text[KNOB_LINE_MAX];
	char cmd[KNOB_LINE_MAX];
	char err[KNOB_ERR_MAX];
	struct knob_values back;
	int n = knob_format_value(id, v, text, sizeof(text));

	CHECK(n > 0 && (size_t)n < sizeof(text));
	snprintf(cmd, sizeof(cmd), "%s=%s", knob_defs[id].name, text);
	CHECK(knobs_parse(cmd, &back, err, sizeof(err)) == KNOB_OK);
	CHECK(back.v[id] == v);
}

/* The value text of knob id's token in cmdline; the knob was accepted, so it is there once. */
static const char *find_value(const char *cmdline, int id, size_t *len)
{
	const char *name = knob_defs[id].name;
	size_t name_len = strlen(name);
	const char *tok = cmdline;

	for (;;) {
		tok += strspn(tok, " \t");
		size_t tok_len = strcspn(tok, " \t");

		CHECK(tok_len > 0);
		if (tok_len > name_len && strncmp(tok, name, name_len) == 0 &&
		    tok[name_len] == '=') {
			*len = tok_len - name_len - 1;
			return tok + name_len + 1;
		}
		tok += tok_len;
	}
}

/*
 * An independent reading of an accepted INT, MASK or TIME value in 128-bit arithmetic, where
 * no accepted text can overflow: catches a parser that wraps into a plausible value.
 */
static __int128 reference_value(enum knob_type type, const char *s, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	__int128 mag = 0;
	__int128 unit = 1;
	size_t i = s[0] == '-';
	unsigned base = 10;

	if (type != KNOB_T_TIME && n > i + 2 && s[i] == '0' && (s[i + 1] | 0x20) == 'x') {
		base = 16;
		i += 2;
	}
	for (; i < n; i++) {
		char c = s[i] >= 'A' && s[i] <= 'F' ? (char)(s[i] - 'A' + 'a') : s[i];
		const char *d = memchr(digits, c, base);

		if (!d)
			break;
		if (mag < ((__int128)1 << 100))
			mag = mag * base + (d - digits);
	}
	if (type == KNOB_T_TIME && n - i == 1)
		unit = 1000000000;
	else if (type == KNOB_T_TIME && n - i == 2)
		unit = s[i] == 'm' ? 1000000 : s[i] == 'u' ? 1000 : 1;
	return (s[0] == '-' ? -mag : mag) * unit;
}

static void check_against_reference(const char *cmdline, int id, int64_t v)
{
	enum knob_type type = knob_defs[id].type;
	size_t len;
	const char *text;

	if (type != KNOB_T_INT && type != KNOB_T_MASK && type != KNOB_T_TIME)
		return;
	text = find_value(cmdline, id, &len);
	CHECK(reference_value(type, text, len) == v);
}

/* One printable line that was not cut short by the KNOB_ERR_MAX buffer. */
static void check_message(const char *err)
{
	size_t len = strnlen(err, KNOB_ERR_MAX);

	CHECK(len > 0 && len < KNOB_ERR_MAX - 1);
	for (size_t i = 0; i < len; i++)
		CHECK(err[i] >= 0x20 && err[i] < 0x7f);
}

/* Only an unknown name gets a suggestion, and what it suggests is a knob. */
static void check_suggestion(int rc, const char *err)
{
	static const char open[] = "(did you mean '";
	const char *hint = strstr(err, open);
	const char *end;

	if (!hint)
		return;
	CHECK(rc == KNOB_E_UNKNOWN);
	hint += strlen(open);
	end = strchr(hint, '\'');
	CHECK(end != NULL && lookup(hint, (size_t)(end - hint)) >= 0);
}

static bool is_error(int rc)
{
	return rc == KNOB_E_UNKNOWN || rc == KNOB_E_VALUE || rc == KNOB_E_RANGE ||
	       rc == KNOB_E_MISSING || rc == KNOB_E_DUPLICATE || rc == KNOB_E_SYNTAX;
}

static void check_config_line(const char *line, void *ctx)
{
	(void)ctx;
	CHECK(strncmp(line, "@idlelab config ", 16) == 0);
	CHECK(strchr(line, '\n') == NULL);
}

/* A short heap buffer, so ASan sees any write past errlen; the text must be a prefix. */
static void check_truncated_message(const char *cmdline, int rc, const char *full, size_t len)
{
	char *small = malloc(len);
	struct knob_values v;

	CHECK(small != NULL);
	CHECK(knobs_parse(cmdline, &v, small, len) == rc);
	CHECK(strnlen(small, len) < len);
	CHECK(strncmp(small, full, strlen(small)) == 0);
	CHECK(strlen(small) == (strlen(full) < len - 1 ? strlen(full) : len - 1));
	free(small);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *cmdline = malloc(size + 1);
	char *err = malloc(KNOB_ERR_MAX);
	struct knob_values v;
	int rc;

	CHECK(cmdline != NULL && err != NULL);
	memcpy(cmdline, data, size);
	cmdline[size] = '\0';
	rc = knobs_parse(cmdline, &v, err, KNOB_ERR_MAX);
	for (int i = 0; i < KNOB__COUNT; i++)
		check_value(i, &v);
	if (rc == KNOB_OK) {
		CHECK(err[0] == '\0');
		for (int i = 0; i < KNOB__COUNT; i++) {
			if (!v.given[i])
				continue;
			check_round_trip(i, v.v[i]);
			check_against_reference(cmdline, i, v.v[i]);
		}
		knobs_print_values(&v, size % 128, check_config_line, NULL);
	} else {
		CHECK(is_error(rc));
		check_message(err);
		check_suggestion(rc, err);
		for (int i = 0; i < KNOB__COUNT; i++)
			CHECK(!v.given[i]);
		check_truncated_message(cmdline, rc, err, 1 + size % 24);
	}
	free(err);
	free(cmdline);
	return 0;
}
