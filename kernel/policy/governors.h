/*
 * The governor registry: every governor's table, indexed by the cpuidle.governor= choice.
 * The one place besides the governors themselves and the idle loop's entries for them
 * (kernel/idle.c) that knows them by name; the entry sequence sees struct idle_governor
 * (governor.h).
 */
#ifndef IDLELAB_KERNEL_GOVERNORS_H
#define IDLELAB_KERNEL_GOVERNORS_H

#include "kernel/policy/governor.h"

extern const struct idle_governor gov_haltpoll, gov_predict;

/* The registry, indexed by the cpuidle.governor= choice. */
extern const struct idle_governor *const idle_governors[];
extern const unsigned idle_governors_count;

#endif
