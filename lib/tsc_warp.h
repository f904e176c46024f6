/*
 * The score of the boot-time TSC synchronisation check (kernel/tsc_sync.c), after Linux's
 * check_tsc_warp() (arch/x86/kernel/tsc_sync.c): two CPUs, the two sides, take turns under
 * one lock reading the TSC, and each reading is compared with the last one, the other side's.
 * A reading earlier than the last is a warp: the other CPU's TSC runs ahead of this one's by
 * at least that much. A lead smaller than the time from one reading to the next, the check's
 * resolution, stays hidden. The two agree when no reading warped and each side's readings
 * followed the other's often enough to count as evidence: a side that only ever read after
 * itself compared nothing.
 *
 * Pure, host-tested (tests/unit/test_tsc_warp.c); the caller holds the lock around
 * tsc_warp_note().
 */
#ifndef IDLELAB_LIB_TSC_WARP_H
#define IDLELAB_LIB_TSC_WARP_H

#include <stdbool.h>
#include <stdint.h>

#define TSC_WARP_SIDES 2

struct tsc_warp {
	uint64_t last;			    /* the latest reading, by either side */
	unsigned last_side;		    /* who took it */
	uint64_t readings[TSC_WARP_SIDES];  /* per side */
	uint64_t crossings[TSC_WARP_SIDES]; /* readings that came right after the other's */
	uint64_t min_step[TSC_WARP_SIDES];  /* the smallest forward step of those, in cycles */
	uint64_t warps;			    /* readings earlier than the one before */
	uint64_t max_warp;		    /* the largest such step back, in cycles */
};

void tsc_warp_init(struct tsc_warp *w);
/* Side `side` (0 or 1) read `now`. */
void tsc_warp_note(struct tsc_warp *w, unsigned side, uint64_t now);
/* No warp, and at least min_each readings of each side right after the other's. */
bool tsc_warp_agree(const struct tsc_warp *w, uint64_t min_each);
/* The smallest lead, in cycles, the check would have seen in either direction: the larger of
 * the two sides' smallest steps. UINT64_MAX while a side has not followed the other. */
uint64_t tsc_warp_resolution(const struct tsc_warp *w);

/* cycles at hz in ns, rounded up so that a warp of any size is never reported as 0 ns;
 * UINT64_MAX (unknown, not small) for hz 0 or above 2^34 (17 GHz), where it would overflow. */
uint64_t tsc_warp_ns(uint64_t cycles, uint64_t hz);

#endif
