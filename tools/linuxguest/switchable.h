/*
 * What the Linux guest can change between two measured windows of one boot (windows= given,
 * window_sync=1; docs/windows.md): the haltpoll governor's tunables, which Linux keeps in
 * /sys/module/haltpoll/parameters/ and reads at every idle entry. The rest shapes the boot
 * itself (idle=, cpuidle_haltpoll.force, cpuidle.governor, the workload) and is refused: by
 * the guest, with `@idlelab error what=settings`, and by the host before it boots
 * (build/host/linuxguest-knobcheck --check-switchable, this same list). Pure.
 */
#ifndef IDLELAB_LINUXGUEST_SWITCHABLE_H
#define IDLELAB_LINUXGUEST_SWITCHABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/knobs/knobs.h"
#include "kernel/knobs/switchable.h"

/* A haltpoll governor parameter of Linux and the idlelab knob of the same meaning. */
struct lg_param {
	const char *param; /* its file in /sys/module/haltpoll/parameters/ */
	enum knob_id knob;
};

/* The governor's parameters: the config record prints them, and they are what switches. */
extern const struct lg_param linuxguest_haltpoll_params[];
extern const size_t linuxguest_nhaltpoll_params;

/* The parameter's file name for a knob that switches, NULL for any other knob. */
const char *linuxguest_param_of(enum knob_id id);

/*
 * Parses a settings line ("name=value ...", possibly empty) with the kernel's parser into
 * *vals (vals->given[] marking the line's knobs) and checks that each switches here. KNOB_OK,
 * or the parser's KNOB_E_* or KNOB_E_FIXED with one line naming the knob in err.
 */
int linuxguest_parse_switch(const char *line, struct knob_values *vals, char *err, size_t errlen);

/*
 * The text Linux's parameter takes for value v of knob id (ns for times, Y/N for a bool)
 * into buf (size len). The length like snprintf, or -1 for a knob that does not switch.
 */
int linuxguest_param_text(enum knob_id id, int64_t v, char *buf, size_t len);

#endif
