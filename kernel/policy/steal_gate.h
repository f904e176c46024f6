/*
 * haltpoll.steal_threshold=: suspend guest polling on a CPU while its recent steal time is
 * above a threshold, so an overcommitted host gets its CPU back (a polling vCPU is runnable:
 * it keeps a neighbour off the host CPU and is charged steal for every moment it waits).
 *
 * Pure policy, host-tested (tests/unit/test_steal_gate.c). "Recent steal" is the steal over
 * the last completed interval of at least STEAL_GATE_INTERVAL_NS of this CPU's time, as a
 * percentage of that interval's length; the decision made at the end of an interval holds
 * until the next one ends. Threshold 0 turns the gate off (polling always allowed); with
 * threshold T in 1..100, polling is suspended while recent steal > T %.
 */
#ifndef IDLELAB_POLICY_STEAL_GATE_H
#define IDLELAB_POLICY_STEAL_GATE_H

#include <stdbool.h>
#include <stdint.h>

#define STEAL_GATE_INTERVAL_NS 10000000ull /* 10 ms */

struct steal_gate {
	uint64_t since_ns;    /* start of the interval in progress (0: not started) */
	uint64_t steal_at_ns; /* steal time at its start */
	bool suspended;	      /* the decision of the last completed interval */
};

/* Whether this CPU may poll now, given its clock and its total steal time (both ns). */
bool steal_gate_allows(struct steal_gate *g, uint32_t threshold_pct, uint64_t now_ns,
		       uint64_t steal_ns);

#endif
