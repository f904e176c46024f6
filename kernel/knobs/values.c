/* Knob values as text: the spellings the parser accepts and the canonical text it prints. */
#include "kernel/knobs/knob_text.h"
#include "lib/format.h"

const struct knob_bool_word knob_bool_words[10] = {
    {"0", false},  {"1", true}, {"on", true}, {"off", false}, {"yes", true},
    {"no", false}, {"y", true}, {"n", false}, {"true", true}, {"false", false},
};

const struct knob_time_unit knob_time_units[4] = {
    {"s", 1000000000},
    {"ms", 1000000},
    {"us", 1000},
    {"ns", 1},
};

static int format_time(int64_t v, char *buf, size_t len)
{
	size_t u = 0;

	/* The last unit (1 ns) divides everything, so this stops. */
	while (v % (int64_t)knob_time_units[u].ns != 0)
		u++;
	return snprintf(buf, len, "%lld%s", (long long)(v / (int64_t)knob_time_units[u].ns),
			knob_time_units[u].suffix);
}

static bool is_choice(const struct knob_def *d, int64_t v)
{
	return d->type == KNOB_T_ENUM && v >= 0 && v < (int64_t)d->nchoices;
}

static int format_value(const struct knob_def *d, int64_t v, char *buf, size_t len)
{
	if (is_choice(d, v))
		return snprintf(buf, len, "%s", d->choices[v]);
	if (d->type == KNOB_T_TIME)
		return format_time(v, buf, len);
	if (d->type == KNOB_T_MASK)
		return snprintf(buf, len, "0x%llx", (unsigned long long)v);
	/* BOOL, INT, and an ENUM value that is no choice (only possible if set by hand). */
	return snprintf(buf, len, "%lld", (long long)v);
}

int knob_format_value(enum knob_id id, int64_t v, char *buf, size_t len)
{
	if ((unsigned)id >= KNOB__COUNT)
		return -1;
	return format_value(&knob_defs[id], v, buf, len);
}

void knob_put_value(struct text *t, const struct knob_def *d, int64_t v)
{
	char val[KNOB_VALUE_MAX];

	/* Choice names can be longer than any number, so they bypass the buffer. */
	if (is_choice(d, v)) {
		text_puts(t, d->choices[v]);
		return;
	}
	format_value(d, v, val, sizeof(val));
	text_puts(t, val);
}

/* N if v is 2^N - 1 or -2^N, the limits of an N+1-bit signed or N-bit unsigned type; else 0. */
static unsigned type_limit_bits(int64_t v)
{
	uint64_t edge = v < 0 ? -(uint64_t)v : (uint64_t)v + 1;
	unsigned bits = 0;

	if (edge == 0 || (edge & (edge - 1)) != 0)
		return 0;
	while (edge >>= 1)
		bits++;
	return bits;
}

/* A time in the largest unit it reaches, with a decimal point if need be: 4.294967295s. */
static void put_time_decimal(struct text *t, const struct knob_def *d, int64_t v)
{
	uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;
	size_t u = 0;
	uint64_t whole, frac;
	char digits[KNOB_VALUE_MAX];
	size_t n = 0;

	while (u + 1 < ARRAY_SIZE(knob_time_units) && mag < knob_time_units[u].ns)
		u++;
	whole = mag / knob_time_units[u].ns;
	frac = mag % knob_time_units[u].ns;
	if (frac == 0) {
		/* The canonical text then is the same (and 0 stays 0s, not 0ns). */
		knob_put_value(t, d, v);
		return;
	}
	snprintf(digits, sizeof(digits), "%s%llu.", v < 0 ? "-" : "", (unsigned long long)whole);
	text_puts(t, digits);
	for (uint64_t place = knob_time_units[u].ns / 10; frac; place /= 10) {
		digits[n++] = (char)('0' + frac / place);
		frac %= place;
	}
	text_putn(t, digits, n);
	text_puts(t, knob_time_units[u].suffix);
}

/*
 * A range's bounds are read, never typed back, so they are written to be read: the limit of
 * a 32- or 64-bit type as 2^N-1 (Linux's u32 haltpoll parameters, any seed), a time in the
 * largest unit it reaches even where that takes a decimal point.
 */
static void put_bound(struct text *t, const struct knob_def *d, int64_t v)
{
	unsigned bits = d->type == KNOB_T_INT ? type_limit_bits(v) : 0;
	char val[KNOB_VALUE_MAX];

	if (bits < 32) {
		if (d->type == KNOB_T_TIME)
			put_time_decimal(t, d, v);
		else
			knob_put_value(t, d, v);
		return;
	}
	snprintf(val, sizeof(val), v < 0 ? "-2^%u" : "2^%u-1", bits);
	text_puts(t, val);
}

void knob_put_range(struct text *t, const struct knob_def *d, const char *quote)
{
	text_puts(t, quote);
	put_bound(t, d, d->min);
	text_puts(t, quote);
	text_puts(t, "..");
	text_puts(t, quote);
	put_bound(t, d, d->max);
	text_puts(t, quote);
}

void knob_put_choices(struct text *t, const struct knob_def *d, const char *sep)
{
	for (unsigned i = 0; i < d->nchoices; i++) {
		if (i)
			text_puts(t, sep);
		text_puts(t, d->choices[i]);
	}
}

void knob_put_bool_words(struct text *t, const char *open, const char *close, const char *sep)
{
	for (size_t i = 0; i < ARRAY_SIZE(knob_bool_words); i++) {
		if (i)
			text_puts(t, sep);
		text_puts(t, open);
		text_puts(t, knob_bool_words[i].word);
		text_puts(t, close);
	}
}

const char *knob_type_name(enum knob_type type)
{
	switch (type) {
	case KNOB_T_BOOL:
		return "bool";
	case KNOB_T_INT:
		return "int";
	case KNOB_T_MASK:
		return "mask";
	case KNOB_T_TIME:
		return "time";
	case KNOB_T_ENUM:
		return "enum";
	}
	return "?";
}
