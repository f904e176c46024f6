/*
 * Which events a measured window counts, one rule for the kernel's workloads
 * (kernel/workloads/workload.h) and the simulator's (tools/sim/workloads.c): an event (a
 * sleep's deadline, a round trip's or a lap's start) is the window's if it began at or after
 * the window opened. One that began before spans the opening, where every vCPU waits at the
 * barrier while the host reads its counters, and would carry that wait as its latency.
 *
 * Pure, host-tested (tests/unit/test_window_rule.c). Inline: a pingpong round trip pays for
 * it once.
 */
#ifndef IDLELAB_KERNEL_WINDOW_RULE_H
#define IDLELAB_KERNEL_WINDOW_RULE_H

#include <stdbool.h>
#include <stdint.h>

/* since, opened: one clock (TSC cycles, or the simulator's ns); a clock that wrapped past
 * 2^64 in between still compares right. */
static inline bool began_inside(uint64_t since, uint64_t opened)
{
	return (int64_t)(since - opened) >= 0;
}

#endif
