/*
 * The knob table in markdown (tools/knobdoc, docs): made on the host, so the guest image does
 * not carry it.
 */
#include "kernel/knobs/knob_text.h"

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
	knob_put_value(t, d, v);
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
	knob_put_range(t, d, "`");
}

static void put_md_row(struct text *t, const struct knob_def *d)
{
	text_puts(t, "| ");
	put_md_code(t, d->name);
	text_puts(t, " | ");
	text_puts(t, knob_type_name(d->type));
	text_puts(t, " | ");
	put_md_value(t, d, d->def);
	text_puts(t, " | ");
	put_md_range(t, d);
	text_puts(t, " | ");
	put_md_escaped(t, d->help);
	text_puts(t, " |");
}

/* The value grammar, from the parser's own tables so docs/knobs.md cannot drift from it. */
static void put_md_syntax(struct text *t)
{
	text_puts(t, "Knobs go on the kernel command line as `name=value`, separated by spaces. "
		     "Booleans take ");
	knob_put_bool_words(t, "`", "`", ", ");
	text_puts(t, "; a bare name means `1`. Integers and masks are decimal or `0x` hex (a "
		     "mask prints in hex). Times are an integer with an optional unit ");
	for (size_t u = ARRAY_SIZE(knob_time_units); u-- > 0;) {
		put_md_code(t, knob_time_units[u].suffix);
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
