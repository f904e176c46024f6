/*
 * The governor registry: every governor, the per-CPU room for each one's state and the
 * tunables they read. The only place besides the governors themselves that knows them by
 * name; the idle driver and the entry sequence see struct idle_governor (governor.h).
 */
#ifndef IDLELAB_KERNEL_GOVERNORS_H
#define IDLELAB_KERNEL_GOVERNORS_H

#include "kernel/policy/governor.h"
#include "kernel/policy/haltpoll.h"
#include "kernel/policy/predict_cpu.h"

/* Each CPU's governor state: room for every governor; only the chosen one's is used. */
struct gov_cpu {
	struct haltpoll_cpu haltpoll;
	struct predict_cpu predict;
	/* Times the governor set haltpoll's rule aside (predict: entered its plateau); 0 for
	 * haltpoll. Written by the owning CPU only; the `cpu` record's takeovers. */
	uint64_t takeovers;
};

/* The tunables (the guest_halt_poll_* knobs): haltpoll's, which predict reads too. */
struct gov_params {
	struct haltpoll_params haltpoll;
};

extern const struct idle_governor gov_haltpoll, gov_predict;

/* The registry, indexed by the cpuidle.governor= choice. */
extern const struct idle_governor *const idle_governors[];
extern const unsigned idle_governors_count;

#endif
