/* `help`: one aligned line per knob (name, type, default, range or choices, help). */
#include "kernel/knobs/knob_text.h"

/* The range column of `help`. */
static void put_help_range(struct text *t, const struct knob_def *d)
{
	if (d->type == KNOB_T_BOOL)
		text_puts(t, "0|1");
	else if (d->type == KNOB_T_ENUM)
		knob_put_choices(t, d, "|");
	else
		knob_put_range(t, d, "");
}

static void put_help_default(struct text *t, const struct knob_def *d)
{
	text_puts(t, "default ");
	knob_put_value(t, d, d->def);
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
		text_puts(&t, knob_type_name(d->type));
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
