/* Which knobs can switch between windows (kernel/knobs/switchable.h). */
#include "kernel/knobs/switchable.h"
#include "lib/format.h"

/* The guest's side of the seeds' settings: the idle policy and governor with its tunables,
 * the POLL-flag trick and the poll-control MSR, which kernel/reconfigure.c applies; and the
 * periodic workload's period, which its sleepers read at every wake (seed 003's sweep). */
static const enum knob_id switchable[] = {
    KNOB_idle,
    KNOB_governor,
    KNOB_guest_halt_poll_ns,
    KNOB_guest_halt_poll_grow,
    KNOB_guest_halt_poll_shrink,
    KNOB_guest_halt_poll_grow_start,
    KNOB_guest_halt_poll_allow_shrink,
    KNOB_haltpoll_legacy_shrink,
    KNOB_haltpoll_force,
    KNOB_steal_threshold,
    KNOB_latency_req_zero,
    KNOB_pollflag,
    KNOB_hostpoll,
    KNOB_period,
};

bool knob_switchable(enum knob_id id)
{
	for (size_t i = 0; i < sizeof(switchable) / sizeof(switchable[0]); i++)
		if (switchable[i] == id)
			return true;
	return false;
}

int knobs_parse_allowed(const char *line, struct knob_values *vals, bool (*allowed)(enum knob_id),
			const char *when, char *err, size_t errlen)
{
	int rc = knobs_parse(line, vals, err, errlen);

	if (rc != KNOB_OK)
		return rc;
	for (int id = 0; id < KNOB__COUNT; id++)
		if (vals->given[id] && !allowed((enum knob_id)id)) {
			if (err)
				snprintf(err, errlen, "%s cannot change while %s",
					 knob_defs[id].name, when);
			return KNOB_E_FIXED;
		}
	return KNOB_OK;
}

int knobs_parse_switch(const char *line, struct knob_values *vals, char *err, size_t errlen)
{
	return knobs_parse_allowed(line, vals, knob_switchable,
				   "the guest runs: only the idle policy, governor, haltpoll "
				   "tunables, pollflag, hostpoll and period switch between windows",
				   err, errlen);
}
