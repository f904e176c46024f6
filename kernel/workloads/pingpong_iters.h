/*
 * Whether workload=pingpong ends its window by count: one definition for the guest
 * (kernel/workloads/pingpong.c) and the simulator (tools/sim/workloads.c). iters= is the
 * benchmark's when one ran first in the boot (a cost table measured in the boot it prices,
 * the bench's boot_costs=): the window is then duration='s. Pure integer code.
 */
#ifndef IDLELAB_KERNEL_PINGPONG_ITERS_H
#define IDLELAB_KERNEL_PINGPONG_ITERS_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/knobs/knobs.h"

/* Round trips a pair makes before its window ends; 0: the window is duration='s. */
static inline uint64_t pingpong_iters(bool iters_given, int64_t iters, int64_t bench)
{
	return iters_given && bench == BENCH_NONE ? (uint64_t)iters : 0;
}

#endif
