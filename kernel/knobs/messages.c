/*
 * The parser's one-line messages: what was wrong with a token and what the knob accepts.
 * Built in the caller's buffer and truncated rather than overflowed, so any input is safe.
 */
#include "kernel/knobs/knob_text.h"
#include "lib/format.h"

/* What a knob accepts, phrased to follow "knob 'x=y': ". */
static void put_accepted(struct text *t, const struct knob_def *d)
{
	switch (d->type) {
	case KNOB_T_BOOL:
		text_puts(t, "expected one of ");
		knob_put_bool_words(t, "", "", "|");
		return;
	case KNOB_T_INT:
		text_puts(t, "expected an integer (decimal or 0x hex), range ");
		knob_put_range(t, d, "");
		return;
	case KNOB_T_MASK:
		text_puts(t, "expected a bit mask (0x hex or decimal), range ");
		knob_put_range(t, d, "");
		return;
	case KNOB_T_TIME:
		text_puts(t, "expected a time like 250us, 10ms or 2s (ns if no unit), range ");
		knob_put_range(t, d, "");
		return;
	case KNOB_T_ENUM:
		text_puts(t, "must be one of ");
		knob_put_choices(t, d, "|");
		return;
	}
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

int knob_fail_unknown(struct text *msg, const struct token *tok)
{
	const char *near = knob_suggest(tok->s, tok->name_len);

	text_puts(msg, "unknown knob ");
	put_quoted(msg, tok->s, tok->name_len);
	text_puts(msg, " (");
	if (near) {
		text_puts(msg, "did you mean '");
		text_puts(msg, near);
		text_puts(msg, "'? ");
	}
	text_puts(msg, "boot with 'help' to list knobs)");
	return KNOB_E_UNKNOWN;
}

int knob_fail_syntax(struct text *msg, const struct token *tok)
{
	text_puts(msg, "knob ");
	put_quoted(msg, tok->s, tok->len);
	text_puts(msg, ": missing name before '=' (expected name=value)");
	return KNOB_E_SYNTAX;
}

int knob_fail_duplicate(struct text *msg, const struct token *tok)
{
	text_puts(msg, "knob ");
	put_quoted(msg, tok->s, tok->name_len);
	text_puts(msg, " given twice");
	return KNOB_E_DUPLICATE;
}

int knob_fail_value(struct text *msg, int rc, const struct knob_def *d, const struct token *tok)
{
	text_puts(msg, "knob ");
	put_quoted(msg, tok->s, tok->len);
	if (rc == KNOB_E_MISSING) {
		text_puts(msg, " needs a value: ");
		put_accepted(msg, d);
	} else if (rc == KNOB_E_RANGE) {
		text_puts(msg, ": out of range, accepted ");
		knob_put_range(msg, d, "");
	} else {
		text_puts(msg, ": ");
		put_accepted(msg, d);
	}
	return rc;
}
