/*
 * workload=random's sleep lengths: one definition for the guest (kernel/workloads/
 * sleepers.c) and the simulator (tools/sim/workloads.c), so the same seed gives the same
 * sequence on both. Pure integer code.
 */
#ifndef IDLELAB_KERNEL_SLEEP_DRAW_H
#define IDLELAB_KERNEL_SLEEP_DRAW_H

#include <stdint.h>

#include "lib/prng.h"

/* The next sleep length, ns (>= 1), for a dist= choice (DIST_*), mean= and spread=. */
uint64_t sleep_draw(struct prng *rng, int dist, uint64_t mean, uint64_t spread);

#endif
