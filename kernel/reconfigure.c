/*
 * Between-window settings (kernel/reconfigure.h). Nothing is printed while the CPUs are parked:
 * under the nested host each character is a VM exit of up to a millisecond, paid while every
 * vCPU spins. The line is kept and printed once they run (reconfigure_print).
 */
#include "kernel/exit_codes.h"
#include "kernel/idle.h"
#include "kernel/knobs/switchable.h"
#include "kernel/printk.h"
#include "kernel/reconfigure.h"
#include "kernel/window.h"
#include "lib/format.h"

static char pending[WINDOW_SETTINGS_MAX];
static unsigned pending_window;

bool reconfigure_apply(const char *line, unsigned window)
{
	struct knob_values vals;
	char err[KNOB_ERR_MAX];

	if (knobs_parse_switch(line, &vals, err, sizeof(err)) != KNOB_OK) {
		printk("@idlelab error what=settings window=%u msg=\"%s\"", window, err);
		kernel_exit(EXIT_BAD_KNOB);
	}
	for (int id = 0; id < KNOB__COUNT; id++)
		if (vals.given[id]) {
			knobs.v[id] = vals.v[id];
			knobs.given[id] = true;
		}
	idle_reconfigure();
	snprintf(pending, sizeof(pending), "%s", line);
	pending_window = window;
	return true;
}

void reconfigure_print(unsigned window)
{
	if (!pending[0] || pending_window != window)
		return;
	printk("@idlelab settings window=%u %s", window, pending);
	idle_print_record();
	pending[0] = '\0';
}
