/*
 * The idealised idle of docs/haltpoll-spec.md §1.10.2 (tools/kvmreplay/ideal_idle.h, which
 * tools/replay --guest runs too) for the host tests: a period that does not end within its
 * entries fails the test.
 */
#ifndef IDLELAB_TESTS_IDEAL_IDLE_H
#define IDLELAB_TESTS_IDEAL_IDLE_H

#include "tools/kvmreplay/ideal_idle.h"

static unsigned ideal_period(struct ideal_cpu *c, uint64_t d, unsigned max_entries)
{
	unsigned n = ideal_period_try(c, d, max_entries);

	if (n == 0)
		fail_msg("an idle period of %llu ns did not end within %u entries",
			 (unsigned long long)d, max_entries);
	return n;
}

#endif
