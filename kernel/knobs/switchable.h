/*
 * The knobs a running guest can take between two measured windows (windows= given with
 * window_sync=1: the host sends them with its acknowledgement of a marker, every CPU parked).
 * The rest shape the boot itself (the CPUs, the tick, the workload's threads, the window
 * protocol) and cannot change once it ran; the host refuses them before it boots
 * (build/host/knobdoc --check-switchable, the same list).
 */
#ifndef IDLELAB_KERNEL_KNOBS_SWITCHABLE_H
#define IDLELAB_KERNEL_KNOBS_SWITCHABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/knobs/knobs.h"

bool knob_switchable(enum knob_id id);

/*
 * Parses a settings line ("name=value ...", possibly empty) into *vals (every other knob at
 * its default, vals->given[] marking the line's) and checks each is switchable. KNOB_OK, or
 * the parser's error or KNOB_E_FIXED with one line naming the knob in err.
 */
#define KNOB_E_FIXED (-7)
int knobs_parse_switch(const char *line, struct knob_values *vals, char *err, size_t errlen);

/*
 * The same for another guest's list (the Linux guest's, tools/linuxguest/switchable.c):
 * allowed(id) says which knobs switch; a refusal reads "<knob> cannot change while <when>".
 */
int knobs_parse_allowed(const char *line, struct knob_values *vals, bool (*allowed)(enum knob_id),
			const char *when, char *err, size_t errlen);

#endif
