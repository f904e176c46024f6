/*
 * Differences of TSC stamps that may have been taken on two CPUs. Each CPU's TSC only moves
 * forward, but two CPUs' need not agree (a nested KVM host gives each vCPU an offset of its
 * own; kernel/tsc_sync.c checks at boot), so a "later" stamp from one CPU can be below an
 * "earlier" one from another, and their u64 difference would wrap to nearly 2^64.
 *
 * Pure, host-tested (tests/unit/test_tsc_delta.c).
 */
#ifndef IDLELAB_LIB_TSC_DELTA_H
#define IDLELAB_LIB_TSC_DELTA_H

#include <stdint.h>

/* later - earlier, or 0 where later is the earlier of the two. A true difference of 2^63
 * cycles (a century) never occurs, so the top bit tells a wrapped one. */
static inline uint64_t tsc_delta(uint64_t later, uint64_t earlier)
{
	uint64_t d = later - earlier;

	return d > (uint64_t)INT64_MAX ? 0 : d;
}

/*
 * A CPU's poll and halt cycles between two snapshots of its counters, each given as the
 * counters' u64 difference, bounded by what is possible: neither below 0, and together no
 * more than span, the cycles between the two snapshots on the CPU that took both. A snapshot
 * credits an idle state still in progress from the idle CPU's stamp to the reader's clock,
 * so either bound can be broken by the offset between the two TSCs. Beyond span both are
 * scaled down in proportion: which of the two carried the offset is not known.
 */
void tsc_idle_clamp(uint64_t *poll, uint64_t *halt, uint64_t span);

#endif
