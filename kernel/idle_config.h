/*
 * What idle_setup() (kernel/idle_setup.c) decided from the knobs and the host, once, before
 * any CPU idles; the idle loop (kernel/idle.c) reads it on every entry, the fields it only
 * tests as the branches idle_setup() patches from them (kernel/static_branch.h).
 */
#ifndef IDLELAB_KERNEL_IDLE_CONFIG_H
#define IDLELAB_KERNEL_IDLE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/policy/governor.h"

struct idle_config {
	int policy;			 /* IDLE_HALT, IDLE_POLL or IDLE_HALTPOLL */
	const struct idle_governor *gov; /* idle=haltpoll's governor: cpuidle.governor= */
	struct gov_params params;	 /* the guest_halt_poll_* knobs */
	uint64_t tick_nsec;		 /* for the governor's W = 0 fallback */
	bool pollflag, latency_req_zero; /* pollflag=, cpuidle.latency_req_zero= */
	uint32_t steal_threshold;	 /* haltpoll.steal_threshold=, % (0: off) */
	uint64_t poll_iter_cycles;	 /* one poll-loop iteration without a clock read */
};

extern struct idle_config idle_config;

/* Linux checks the clock every 201 PAUSEs; we also cap it there (and a poll without a
 * limit reads it that often). */
#define IDLE_POLL_CHECK_MAX 200

/* How many poll iterations between clock reads for a poll limit of limit_cyc cycles. */
unsigned idle_poll_check_every(uint64_t limit_cyc);

#endif
