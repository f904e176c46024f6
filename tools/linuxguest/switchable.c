#include <stdio.h>

#include "tools/linuxguest/switchable.h"

const struct lg_param linuxguest_haltpoll_params[] = {
    {"guest_halt_poll_ns", KNOB_guest_halt_poll_ns},
    {"guest_halt_poll_grow", KNOB_guest_halt_poll_grow},
    {"guest_halt_poll_shrink", KNOB_guest_halt_poll_shrink},
    {"guest_halt_poll_grow_start", KNOB_guest_halt_poll_grow_start},
    {"guest_halt_poll_allow_shrink", KNOB_guest_halt_poll_allow_shrink},
};
const size_t linuxguest_nhaltpoll_params =
    sizeof(linuxguest_haltpoll_params) / sizeof(linuxguest_haltpoll_params[0]);

const char *linuxguest_param_of(enum knob_id id)
{
	for (size_t i = 0; i < linuxguest_nhaltpoll_params; i++)
		if (linuxguest_haltpoll_params[i].knob == id)
			return linuxguest_haltpoll_params[i].param;
	return NULL;
}

static bool switches(enum knob_id id)
{
	return linuxguest_param_of(id) != NULL;
}

int linuxguest_parse_switch(const char *line, struct knob_values *vals, char *err, size_t errlen)
{
	return knobs_parse_allowed(line, vals, switches,
				   "the Linux guest runs: only the haltpoll governor's tunables "
				   "(haltpoll.guest_halt_poll_*) switch between its windows",
				   err, errlen);
}

int linuxguest_param_text(enum knob_id id, int64_t v, char *buf, size_t len)
{
	if (!linuxguest_param_of(id))
		return -1;
	/* Linux's bool parameter reads back as Y or N; its times are plain ns */
	if (knob_defs[id].type == KNOB_T_BOOL)
		return snprintf(buf, len, "%s", v ? "Y" : "N");
	return snprintf(buf, len, "%lld", (long long)v);
}
