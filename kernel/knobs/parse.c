/*
 * Boot knobs: tables generated from kernel/policy/knob_table.h, the command-line parser and the
 * printers. Every message and line is built in a caller's or a fixed stack buffer and is
 * truncated rather than overflowed, so any input is safe.
 */
#include "kernel/policy/knobs.h"
#include "lib/format.h"
#include "lib/string.h"

/*
 * Limits on the table's text, checked at compile time below, so that every help, README and
 * config line fits KNOB_LINE_MAX without truncation.
 */
#define KNOB_NAME_MAX	      48  /* sizeof(name), i.e. including the NUL */
#define KNOB_HELP_MAX	      300 /* sizeof(help) */
#define KNOB_CHOICES_MAX      16  /* choices of one ENUM knob */
#define KNOB_CHOICE_CHARS_MAX 128 /* sum of sizeof(choice) of one ENUM knob */
#define KNOB_LINE_MAX	      1024
#define KNOB_CONFIG_LINE      900
/* Digits of the longest value text, "-9223372036854775808ns", with room to spare. */
#define KNOB_VALUE_MAX 32
/*
 * Printed width of a bad token echoed in an error: enough to recognise it, short enough that
 * with the table limits above every message fits KNOB_ERR_MAX.
 */
#define KNOB_QUOTE_MAX 40

/* The choice strings of every ENUM knob: knob_choices_<ident>[], indexed by value. */
#define KNOB__CHOICE_NAME(constant, name) name,
#define KNOB__CHOICE_ARRAY(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_)                                 \
	KNOB__IF_ENUM_##ty_(                                                                       \
	    static const char *const knob_choices_##id_[] = {ch_(KNOB__CHOICE_NAME)};, )
KNOB_LIST(KNOB__CHOICE_ARRAY)

/* Compile-time checks of every entry, so a bad table never boots. */
#define KNOB__PLUS_SIZE(constant, name) +sizeof(name)
#define KNOB__CHECK_BOOL(id_, df_, lo_, hi_, ch_)                                                  \
	_Static_assert((lo_) == 0 && (hi_) == 1, "BOOL knob " #id_ ": min, max must be 0, 1");     \
	_Static_assert((df_) == 0 || (df_) == 1, "BOOL knob " #id_ ": default must be 0 or 1");
#define KNOB__CHECK_RANGE(id_, df_, lo_, hi_, ch_)                                                 \
	_Static_assert((lo_) <= (df_) && (df_) <= (hi_), "knob " #id_ ": default out of range");
#define KNOB__CHECK_INT(id_, df_, lo_, hi_, ch_)  KNOB__CHECK_RANGE(id_, df_, lo_, hi_, ch_)
#define KNOB__CHECK_TIME(id_, df_, lo_, hi_, ch_) KNOB__CHECK_RANGE(id_, df_, lo_, hi_, ch_)
#define KNOB__CHECK_ENUM(id_, df_, lo_, hi_, ch_)                                                  \
	_Static_assert((lo_) == 0 && (hi_) == 0, "ENUM knob " #id_ ": write 0, 0 for min, max");   \
	_Static_assert(KNOB_NCHOICES_##id_ >= 1 && KNOB_NCHOICES_##id_ <= KNOB_CHOICES_MAX,        \
		       "ENUM knob " #id_ ": 1 to 16 choices");                                     \
	_Static_assert((int64_t)(df_) >= 0 && (int64_t)(df_) < (int64_t)KNOB_NCHOICES_##id_,       \
		       "ENUM knob " #id_ ": default is not a choice");                             \
	_Static_assert(0 ch_(KNOB__PLUS_SIZE) <= KNOB_CHOICE_CHARS_MAX,                            \
		       "ENUM knob " #id_ ": choice names too long");
#define KNOB__CHECK(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_)                                        \
	_Static_assert(sizeof(nm_) > 1 && sizeof(nm_) <= KNOB_NAME_MAX,                            \
		       "knob " #id_ ": name empty or too long");                                   \
	_Static_assert(sizeof(hl_) <= KNOB_HELP_MAX, "knob " #id_ ": help text too long");         \
	KNOB__CHECK_##ty_(id_, df_, lo_, hi_, ch_)
KNOB_LIST(KNOB__CHECK)

#define KNOB__DEF(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_)                                          \
	[KNOB_##id_] = {                                                                           \
	    .name = nm_,                                                                           \
	    .type = KNOB_T_##ty_,                                                                  \
	    .def = (df_),                                                                          \
	    .min = (lo_),                                                                          \
	    .max = KNOB__IF_ENUM_##ty_(KNOB_NCHOICES_##id_ - 1, (hi_)),                            \
	    .choices = KNOB__IF_ENUM_##ty_(knob_choices_##id_, NULL),                              \
	    .nchoices = KNOB_NCHOICES_##id_,                                                       \
	    .help = hl_,                                                                           \
	},
const struct knob_def knob_defs[KNOB__COUNT] = {KNOB_LIST(KNOB__DEF)};

#define KNOB__DEFAULT(id_, nm_, ty_, df_, lo_, hi_, ch_, hl_) [KNOB_##id_] = (df_),
struct knob_values knobs = {.v = {KNOB_LIST(KNOB__DEFAULT)}};

/* ------------------------------------------------------------------------------------------ */
/* Bounded text building: every message and output line goes through this. */

/* buf == NULL only measures: len counts what would have been written. */
struct text {
	char *buf;
	size_t cap;
	size_t len;
};

static struct text text_init(char *buf, size_t cap)
{
	struct text t = {buf, cap, 0};

	if (buf && cap)
		buf[0] = '\0';
	return t;
}

static void text_putc(struct text *t, char c)
{
	if (!t->buf) {
		t->len++;
		return;
	}
	if (t->len + 1 >= t->cap)
		return;
	t->buf[t->len++] = c;
	t->buf[t->len] = '\0';
}

static void text_putn(struct text *t, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		text_putc(t, s[i]);
}

static void text_puts(struct text *t, const char *s)
{
	text_putn(t, s, strlen(s));
}

static void text_pad(struct text *t, size_t column)
{
	while (t->len < column && (!t->buf || t->len + 1 < t->cap))
		text_putc(t, ' ');
}

/* ------------------------------------------------------------------------------------------ */
/* Values: the spellings the parser accepts and the canonical text it prints. */

static const struct {
	const char *word;
	bool value;
} bool_words[] = {
    {"0", false},  {"1", true}, {"on", true}, {"off", false}, {"yes", true},
    {"no", false}, {"y", true}, {"n", false}, {"true", true}, {"false", false},
};

/* Largest first, so formatting picks the largest exact unit. */
static const struct {
	const char *suffix;
	uint64_t ns;
} time_units[] = {
    {"s", 1000000000},
    {"ms", 1000000},
    {"us", 1000},
    {"ns", 1},
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int format_time(int64_t v, char *buf, size_t len)
{
	size_t u = 0;

	/* The last unit (1 ns) divides everything, so this stops. */
	while (v % (int64_t)time_units[u].ns != 0)
		u++;
	return snprintf(buf, len, "%lld%s", (long long)(v / (int64_t)time_units[u].ns),
			time_units[u].suffix);
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
	/* BOOL, INT, and an ENUM value that is no choice (only possible if set by hand). */
	return snprintf(buf, len, "%lld", (long long)v);
}

int knob_format_value(enum knob_id id, int64_t v, char *buf, size_t len)
{
	if ((unsigned)id >= KNOB__COUNT)
		return -1;
	return format_value(&knob_defs[id], v, buf, len);
}

static void put_value(struct text *t, const struct knob_def *d, int64_t v)
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

static void put_range(struct text *t, const struct knob_def *d)
{
	put_value(t, d, d->min);
	text_puts(t, "..");
	put_value(t, d, d->max);
}

static void put_choices(struct text *t, const struct knob_def *d, const char *sep)
{
	for (unsigned i = 0; i < d->nchoices; i++) {
		if (i)
			text_puts(t, sep);
		text_puts(t, d->choices[i]);
	}
}

static void put_bool_words(struct text *t, const char *open, const char *close, const char *sep)
{
	for (size_t i = 0; i < ARRAY_SIZE(bool_words); i++) {
		if (i)
			text_puts(t, sep);
		text_puts(t, open);
		text_puts(t, bool_words[i].word);
		text_puts(t, close);
	}
}

/* What a knob accepts, phrased to follow "knob 'x=y': ". */
static void put_accepted(struct text *t, const struct knob_def *d)
{
	switch (d->type) {
	case KNOB_T_BOOL:
		text_puts(t, "expected one of ");
		put_bool_words(t, "", "", "|");
		return;
	case KNOB_T_INT:
		text_puts(t, "expected an integer (decimal or 0x hex), range ");
		put_range(t, d);
		return;
	case KNOB_T_TIME:
		text_puts(t, "expected a time like 250us, 10ms or 2s (ns if no unit), range ");
		put_range(t, d);
		return;
	case KNOB_T_ENUM:
		text_puts(t, "must be one of ");
		put_choices(t, d, "|");
		return;
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing one value. */

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
	for (size_t u = 0; u < ARRAY_SIZE(time_units); u++) {
		if (strlen(time_units[u].suffix) == n && memcmp(time_units[u].suffix, s, n) == 0)
			return time_units[u].ns;
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
	for (size_t i = 0; i < ARRAY_SIZE(bool_words); i++) {
		if (same_word(bool_words[i].word, s, n)) {
			*v = bool_words[i].value;
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

/* One whitespace-free token of the command line; name is s[0..name_len). */
struct token {
	const char *s;
	size_t len;
	size_t name_len;
};

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

/*
 * Bytes other than plain printable ASCII are shown as \xHH: control bytes would break the
 * one-line contract of err, and escaping '"' and '\\' too lets callers embed err in a quoted
 * field. The quote is cut by its printed width so that the whole message stays short.
 */
static size_t put_token_byte(struct text *t, unsigned char c)
{
	char esc[8];

	if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
		text_putc(t, (char)c);
		return 1;
	}
	snprintf(esc, sizeof(esc), "\\x%02x", c);
	text_puts(t, esc);
	return 4;
}

static size_t token_byte_width(unsigned char c)
{
	struct text measure = text_init(NULL, 0);

	return put_token_byte(&measure, c);
}

static void put_quoted(struct text *t, const char *s, size_t n)
{
	size_t width = 0;
	size_t i;

	text_putc(t, '\'');
	for (i = 0; i < n; i++) {
		width += token_byte_width((unsigned char)s[i]);
		if (width > KNOB_QUOTE_MAX)
			break;
		put_token_byte(t, (unsigned char)s[i]);
	}
	if (i < n)
		text_puts(t, "...");
	text_putc(t, '\'');
}

static int fail_unknown(struct text *msg, const struct token *tok)
{
	text_puts(msg, "unknown knob ");
	put_quoted(msg, tok->s, tok->name_len);
	text_puts(msg, " (boot with 'help' to list knobs)");
	return KNOB_E_UNKNOWN;
}

static int fail_syntax(struct text *msg, const struct token *tok)
{
	text_puts(msg, "knob ");
	put_quoted(msg, tok->s, tok->len);
	text_puts(msg, ": missing name before '=' (expected name=value)");
	return KNOB_E_SYNTAX;
}

static int fail_duplicate(struct text *msg, const struct token *tok)
{
	text_puts(msg, "knob ");
	put_quoted(msg, tok->s, tok->name_len);
	text_puts(msg, " given twice");
	return KNOB_E_DUPLICATE;
}

static int fail_value(struct text *msg, int rc, const struct knob_def *d, const struct token *tok)
{
	text_puts(msg, "knob ");
	put_quoted(msg, tok->s, tok->len);
	if (rc == KNOB_E_MISSING) {
		text_puts(msg, " needs a value: ");
		put_accepted(msg, d);
	} else if (rc == KNOB_E_RANGE) {
		text_puts(msg, ": out of range, accepted ");
		put_range(msg, d);
	} else {
		text_puts(msg, ": ");
		put_accepted(msg, d);
	}
	return rc;
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
		return fail_syntax(msg, tok);
	id = lookup(tok->s, tok->name_len);
	if (id < 0)
		return fail_unknown(msg, tok);
	if (vals->given[id])
		return fail_duplicate(msg, tok);
	rc = token_value(&knob_defs[id], tok, &v);
	if (rc != KNOB_OK)
		return fail_value(msg, rc, &knob_defs[id], tok);
	vals->v[id] = v;
	vals->given[id] = true;
	return KNOB_OK;
}

/*
 * One aggregate copy, not a loop over the fields: GCC 12 (-O1 and up) dropped the loop's
 * stores into knobs_parse()'s local values as dead (its mod/ref summary of the loop leaves
 * the extent of the `given` stores unknown), so a parse started from whatever the stack
 * held. A struct copy is a store the compiler tracks whole.
 */
static const struct knob_values default_values = {.v = {KNOB_LIST(KNOB__DEFAULT)}};

void knobs_set_defaults(struct knob_values *vals)
{
	*vals = default_values;
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

/* ------------------------------------------------------------------------------------------ */
/* Printers. */

static const char *type_name(enum knob_type type)
{
	switch (type) {
	case KNOB_T_BOOL:
		return "bool";
	case KNOB_T_INT:
		return "int";
	case KNOB_T_TIME:
		return "time";
	case KNOB_T_ENUM:
		return "enum";
	}
	return "?";
}

/* The range column of `help`. */
static void put_help_range(struct text *t, const struct knob_def *d)
{
	if (d->type == KNOB_T_BOOL)
		text_puts(t, "0|1");
	else if (d->type == KNOB_T_ENUM)
		put_choices(t, d, "|");
	else
		put_range(t, d);
}

static void put_help_default(struct text *t, const struct knob_def *d)
{
	text_puts(t, "default ");
	put_value(t, d, d->def);
}

typedef void put_column_fn(struct text *t, const struct knob_def *d);

static void put_name(struct text *t, const struct knob_def *d)
{
	text_puts(t, d->name);
}

/*
 * Width of a help column: its widest cell plus a two-space gap. Cells wider than cap do not
 * count, so one long name or choice list cannot push every line right.
 */
static size_t column_width(put_column_fn *put, size_t cap)
{
	size_t width = 0;

	for (int i = 0; i < KNOB__COUNT; i++) {
		struct text t = text_init(NULL, 0);

		put(&t, &knob_defs[i]);
		if (t.len > width && t.len <= cap)
			width = t.len;
	}
	return width + 2;
}

/* Ends a help cell begun at start; an over-wide cell keeps a two-space gap instead. */
static void end_cell(struct text *t, size_t start, size_t width)
{
	text_pad(t, t->len + 2 > start + width ? t->len + 2 : start + width);
}

void knobs_print_help(knob_emit_fn *emit, void *ctx)
{
	const size_t name_w = column_width(put_name, 32);
	const size_t def_w = column_width(put_help_default, 24);
	const size_t range_w = column_width(put_help_range, 24);
	char line[KNOB_LINE_MAX];

	for (int i = 0; i < KNOB__COUNT; i++) {
		const struct knob_def *d = &knob_defs[i];
		struct text t = text_init(line, sizeof(line));
		size_t start;

		put_name(&t, d);
		end_cell(&t, 0, name_w);
		start = t.len;
		text_puts(&t, type_name(d->type));
		end_cell(&t, start, 6);
		start = t.len;
		put_help_default(&t, d);
		end_cell(&t, start, def_w);
		start = t.len;
		put_help_range(&t, d);
		end_cell(&t, start, range_w);
		text_puts(&t, d->help);
		emit(line, ctx);
	}
}

/* The README table is made on the host (tools/knobdoc); the guest image does not carry it. */
#ifdef IDLELAB_HOST
/* Pipes would end a markdown table cell. */
static void put_md_escaped(struct text *t, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			text_putc(t, '\\');
		text_putc(t, *s);
	}
}

static void put_md_code(struct text *t, const char *s)
{
	text_putc(t, '`');
	text_puts(t, s);
	text_putc(t, '`');
}

static void put_md_value(struct text *t, const struct knob_def *d, int64_t v)
{
	text_putc(t, '`');
	put_value(t, d, v);
	text_putc(t, '`');
}

static void put_md_range(struct text *t, const struct knob_def *d)
{
	if (d->type == KNOB_T_BOOL) {
		text_puts(t, "`0`, `1`");
		return;
	}
	if (d->type == KNOB_T_ENUM) {
		for (unsigned i = 0; i < d->nchoices; i++) {
			if (i)
				text_puts(t, ", ");
			put_md_code(t, d->choices[i]);
		}
		return;
	}
	put_md_value(t, d, d->min);
	text_puts(t, "..");
	put_md_value(t, d, d->max);
}

static void put_md_row(struct text *t, const struct knob_def *d)
{
	text_puts(t, "| ");
	put_md_code(t, d->name);
	text_puts(t, " | ");
	text_puts(t, type_name(d->type));
	text_puts(t, " | ");
	put_md_value(t, d, d->def);
	text_puts(t, " | ");
	put_md_range(t, d);
	text_puts(t, " | ");
	put_md_escaped(t, d->help);
	text_puts(t, " |");
}

/* The value grammar, from the parser's own tables so the README cannot drift from it. */
static void put_md_syntax(struct text *t)
{
	text_puts(t, "Knobs go on the kernel command line as `name=value`, separated by spaces. "
		     "Booleans take ");
	put_bool_words(t, "`", "`", ", ");
	text_puts(t, "; a bare name means `1`. Integers are decimal or `0x` hex. Times are an "
		     "integer with an optional unit ");
	for (size_t u = ARRAY_SIZE(time_units); u-- > 0;) {
		put_md_code(t, time_units[u].suffix);
		text_puts(t, u ? ", " : " (no unit means ns).");
	}
}

void knobs_print_markdown(knob_emit_fn *emit, void *ctx)
{
	char line[KNOB_LINE_MAX];
	struct text t;

	emit("| knob | type | default | range | description |", ctx);
	emit("| --- | --- | --- | --- | --- |", ctx);
	for (int i = 0; i < KNOB__COUNT; i++) {
		t = text_init(line, sizeof(line));
		put_md_row(&t, &knob_defs[i]);
		emit(line, ctx);
	}
	emit("", ctx);
	t = text_init(line, sizeof(line));
	put_md_syntax(&t);
	emit(line, ctx);
}
#endif

static void put_pair(struct text *t, const struct knob_def *d, int64_t v)
{
	text_puts(t, d->name);
	text_putc(t, '=');
	put_value(t, d, v);
}

void knobs_print_values(const struct knob_values *vals, size_t max_line, knob_emit_fn *emit,
			void *ctx)
{
	static const char prefix[] = "@idlelab config";
	char line[KNOB_LINE_MAX];
	struct text t = text_init(line, sizeof(line));
	bool empty = true;

	if (max_line > sizeof(line) - 1)
		max_line = sizeof(line) - 1;
	text_puts(&t, prefix);
	for (int i = 0; i < KNOB__COUNT; i++) {
		struct text measure = text_init(NULL, 0);

		put_pair(&measure, &knob_defs[i], vals->v[i]);
		if (!empty && t.len + 1 + measure.len > max_line) {
			emit(line, ctx);
			t = text_init(line, sizeof(line));
			text_puts(&t, prefix);
		}
		text_putc(&t, ' ');
		put_pair(&t, &knob_defs[i], vals->v[i]);
		empty = false;
	}
	if (!empty)
		emit(line, ctx);
}

void knobs_print_config(knob_emit_fn *emit, void *ctx)
{
	knobs_print_values(&knobs, KNOB_CONFIG_LINE, emit, ctx);
}
