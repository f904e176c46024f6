/*
 * What the knob files (kernel/knobs/) share among themselves: the limits on the table's
 * text, bounded text building, the value spellings and the printers of values. Not for
 * the rest of the kernel, which includes kernel/knobs/knobs.h.
 */
#ifndef IDLELAB_KERNEL_KNOBS_KNOB_TEXT_H
#define IDLELAB_KERNEL_KNOBS_KNOB_TEXT_H

#include "kernel/knobs/knobs.h"
#include "lib/string.h"

/*
 * Limits on the table's text, checked at compile time (table.c), so that every help, docs
 * table and config line fits KNOB_LINE_MAX without truncation.
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

#define ARRAY_SIZE(a)  (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------------------------ */
/* Bounded text building: every message and output line goes through this. */

/* buf == NULL only measures: len counts what would have been written. */
struct text {
	char *buf;
	size_t cap;
	size_t len;
};

static inline struct text text_init(char *buf, size_t cap)
{
	struct text t = {buf, cap, 0};

	if (buf && cap)
		buf[0] = '\0';
	return t;
}

static inline void text_putc(struct text *t, char c)
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

static inline void text_putn(struct text *t, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		text_putc(t, s[i]);
}

static inline void text_puts(struct text *t, const char *s)
{
	text_putn(t, s, strlen(s));
}

static inline void text_pad(struct text *t, size_t column)
{
	while (t->len < column && (!t->buf || t->len + 1 < t->cap))
		text_putc(t, ' ');
}

/* ------------------------------------------------------------------------------------------ */
/* Values (values.c): the spellings the parser accepts and the canonical text it prints. */

struct knob_bool_word {
	const char *word;
	bool value;
};
extern const struct knob_bool_word knob_bool_words[10];

struct knob_time_unit {
	const char *suffix;
	uint64_t ns;
};
/* Largest first, so formatting picks the largest exact unit. */
extern const struct knob_time_unit knob_time_units[4];

void knob_put_value(struct text *t, const struct knob_def *d, int64_t v);
/*
 * min..max of an INT, MASK or TIME knob as it reads best, which is not always as it is typed;
 * each bound between two quotes (markdown's `, or "").
 */
void knob_put_range(struct text *t, const struct knob_def *d, const char *quote);
void knob_put_choices(struct text *t, const struct knob_def *d, const char *sep);
void knob_put_bool_words(struct text *t, const char *open, const char *close, const char *sep);
/* "bool", "int", "mask", "time" or "enum". */
const char *knob_type_name(enum knob_type type);

/* ------------------------------------------------------------------------------------------ */
/* The parser's messages (messages.c). */

/* One whitespace-free token of the command line; name is s[0..name_len). */
struct token {
	const char *s;
	size_t len;
	size_t name_len;
};

int knob_fail_unknown(struct text *msg, const struct token *tok);
int knob_fail_syntax(struct text *msg, const struct token *tok);
int knob_fail_duplicate(struct text *msg, const struct token *tok);
int knob_fail_value(struct text *msg, int rc, const struct knob_def *d, const struct token *tok);

/* ------------------------------------------------------------------------------------------ */
/* The closest knob name to word[0..len) (suggest.c), or NULL if none is close enough. */
const char *knob_suggest(const char *word, size_t len);

#endif
