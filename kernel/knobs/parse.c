/*
 * The command-line parser: tokens, names and values, into a struct knob_values. A bad token
 * leaves the defaults and a one-line message (messages.c).
 */
#include "kernel/knobs/knob_text.h"

/*
 * A number as typed: magnitude and sign kept apart so that INT64_MIN parses, and overflow
 * remembered rather than wrapped so that a huge but well-formed value is a range error.
 */
struct number {
	uint64_t mag;
	bool neg;
	bool overflow;
};

static int digit_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Returns how many digits of base it consumed from s[0..n). */
static size_t scan_digits(const char *s, size_t n, unsigned base, struct number *num)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int d = digit_value(s[i]);

		if (d < 0 || (unsigned)d >= base)
			break;
		if (num->mag > (UINT64_MAX - (unsigned)d) / base)
			num->overflow = true;
		else
			num->mag = num->mag * base + (unsigned)d;
	}
	return i;
}

/* A leading '-' belongs to the number only where negative values are in range. */
static size_t scan_sign(const struct knob_def *d, const char *s, size_t n, struct number *num)
{
	if (n > 0 && s[0] == '-' && d->min < 0) {
		num->neg = true;
		return 1;
	}
	return 0;
}

static int number_to_value(const struct knob_def *d, const struct number *num, int64_t *v)
{
	const uint64_t limit = num->neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

	if (num->overflow || num->mag > limit)
		return KNOB_E_RANGE;
	/* -(mag - 1) - 1 stays in range even for mag == 2^63. */
	if (!num->neg)
		*v = (int64_t)num->mag;
	else if (num->mag == 0)
		*v = 0;
	else
		*v = -(int64_t)(num->mag - 1) - 1;
	if (*v < d->min || *v > d->max)
		return KNOB_E_RANGE;
	return KNOB_OK;
}

static bool has_hex_prefix(const char *s, size_t n)
{
	return n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

static int parse_int(const struct knob_def *d, const char *s, size_t n, int64_t *v)
{
	struct number num = {0, false, false};
	size_t i = scan_sign(d, s, n, &num);
	unsigned base = 10;
	size_t digits;

	if (has_hex_prefix(s + i, n - i)) {
		base = 16;
		i += 2;
	}
	digits = scan_digits(s + i, n - i, base, &num);
	if (digits == 0 || i + digits != n)
		return KNOB_E_VALUE;
	return number_to_value(d, &num, v);
}

/* Nanoseconds per unit of the suffix s[0..n), 1 for no suffix, 0 if it is no unit. */
static uint64_t unit_ns(const char *s, size_t n)
{
	if (n == 0)
		return 1;
	for (size_t u = 0; u < ARRAY_SIZE(knob_time_units); u++) {
		if (strlen(knob_time_units[u].suffix) == n &&
		    memcmp(knob_time_units[u].suffix, s, n) == 0)
			return knob_time_units[u].ns;
	}
	return 0;
}

static int parse_time(const struct knob_def *d, const char *s, size_t n, int64_t *v)
{
	struct number num = {0, false, false};
	size_t i = scan_sign(d, s, n, &num);
	size_t digits = scan_digits(s + i, n - i, 10, &num);
	uint64_t mult = unit_ns(s + i + digits, n - i - digits);

	if (digits == 0 || mult == 0)
		return KNOB_E_VALUE;
	if (num.mag > UINT64_MAX / mult)
		num.overflow = true;
	else
		num.mag *= mult;
	return number_to_value(d, &num, v);
}

static bool same_word(const char *word, const char *s, size_t n)
{
	return strlen(word) == n && memcmp(word, s, n) == 0;
}

static int parse_bool(const char *s, size_t n, int64_t *v)
{
	for (size_t i = 0; i < ARRAY_SIZE(knob_bool_words); i++) {
		if (same_word(knob_bool_words[i].word, s, n)) {
			*v = knob_bool_words[i].value;
			return KNOB_OK;
		}
	}
	return KNOB_E_VALUE;
}

static int parse_enum(const struct knob_def *d, const char *s, size_t n, int64_t *v)
{
	for (unsigned i = 0; i < d->nchoices; i++) {
		if (same_word(d->choices[i], s, n)) {
			*v = i;
			return KNOB_OK;
		}
	}
	return KNOB_E_VALUE;
}

static int parse_value(const struct knob_def *d, const char *s, size_t n, int64_t *v)
{
	switch (d->type) {
	case KNOB_T_BOOL:
		return parse_bool(s, n, v);
	case KNOB_T_INT:
	case KNOB_T_MASK:
		return parse_int(d, s, n, v);
	case KNOB_T_TIME:
		return parse_time(d, s, n, v);
	case KNOB_T_ENUM:
		return parse_enum(d, s, n, v);
	}
	return KNOB_E_VALUE;
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing the command line. */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool next_token(const char **cursor, struct token *tok)
{
	const char *s = *cursor;

	while (is_blank(*s))
		s++;
	tok->s = s;
	while (*s && !is_blank(*s))
		s++;
	tok->len = (size_t)(s - tok->s);
	for (tok->name_len = 0; tok->name_len < tok->len; tok->name_len++) {
		if (tok->s[tok->name_len] == '=')
			break;
	}
	*cursor = s;
	return tok->len > 0;
}

static int lookup(const char *name, size_t len)
{
	for (int i = 0; i < KNOB__COUNT; i++) {
		if (same_word(knob_defs[i].name, name, len))
			return i;
	}
	return -1;
}

static int token_value(const struct knob_def *d, const struct token *tok, int64_t *v)
{
	const char *s = tok->s + tok->name_len + 1;

	if (tok->name_len == tok->len) {
		/* A bare name switches a BOOL on; any other type needs name=value. */
		*v = 1;
		return d->type == KNOB_T_BOOL ? KNOB_OK : KNOB_E_MISSING;
	}
	if (tok->name_len + 1 == tok->len)
		return KNOB_E_MISSING;
	return parse_value(d, s, tok->len - tok->name_len - 1, v);
}

static int apply_token(const struct token *tok, struct knob_values *vals, struct text *msg)
{
	int id;
	int rc;
	int64_t v = 0;

	if (tok->name_len == 0)
		return knob_fail_syntax(msg, tok);
	id = lookup(tok->s, tok->name_len);
	if (id < 0)
		return knob_fail_unknown(msg, tok);
	if (vals->given[id])
		return knob_fail_duplicate(msg, tok);
	rc = token_value(&knob_defs[id], tok, &v);
	if (rc != KNOB_OK)
		return knob_fail_value(msg, rc, &knob_defs[id], tok);
	vals->v[id] = v;
	vals->given[id] = true;
	return KNOB_OK;
}

int knobs_parse(const char *cmdline, struct knob_values *out, char *err, size_t errlen)
{
	/* Built aside so that a bad token leaves plain defaults, never half a command line. */
	struct knob_values vals;
	struct text msg = text_init(err, err ? errlen : 0);
	const char *cursor = cmdline ? cmdline : "";
	struct token tok;
	int rc = KNOB_OK;

	/* Without an err buffer the message is only measured, never stored. */
	knobs_set_defaults(&vals);
	while (rc == KNOB_OK && next_token(&cursor, &tok))
		rc = apply_token(&tok, &vals, &msg);
	if (rc != KNOB_OK) {
		knobs_set_defaults(out);
		return rc;
	}
	*out = vals;
	return KNOB_OK;
}
