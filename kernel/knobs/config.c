/* The `@idlelab config` line: every knob's value, split into lines of a bounded length. */
#include "kernel/knobs/knob_text.h"

static void put_pair(struct text *t, const struct knob_def *d, int64_t v)
{
	text_puts(t, d->name);
	text_putc(t, '=');
	knob_put_value(t, d, v);
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
