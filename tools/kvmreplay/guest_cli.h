/* tools/replay --guest's table: the check and the what-if of guest.h, printed. */
#ifndef IDLELAB_REPLAY_GUEST_CLI_H
#define IDLELAB_REPLAY_GUEST_CLI_H

#include <stdio.h>

#include "kernel/policy/governor.h"
#include "tools/kvmreplay/options.h"

struct gp_options {
	struct gov_params base; /* the guest's tunables (Linux's defaults unless given) */
	uint32_t hpn[RP_MAX_VALUES], grow[RP_MAX_VALUES], shrink[RP_MAX_VALUES],
	    start[RP_MAX_VALUES];
	unsigned nh, ng, ns, nst;
	uint64_t merge_gap_ns, tick_nsec;
	bool totals, require;
	FILE *csv;
};

int gp_main(const char *path, const struct gp_options *o);

#endif
