#include "kernel/policy/steal_gate.h"

bool steal_gate_allows(struct steal_gate *g, uint32_t threshold_pct, uint64_t now_ns,
		       uint64_t steal_ns)
{
	uint64_t span;

	if (threshold_pct == 0)
		return true;
	if (g->since_ns == 0 || now_ns < g->since_ns || steal_ns < g->steal_at_ns) {
		/* first call, or a clock or steal count that went backwards: restart */
		g->since_ns = now_ns ? now_ns : 1;
		g->steal_at_ns = steal_ns;
		return !g->suspended;
	}
	span = now_ns - g->since_ns;
	if (span >= STEAL_GATE_INTERVAL_NS) {
		uint64_t stolen = steal_ns - g->steal_at_ns;
		/* stolen * 100 > threshold * span, without overflow for any sane interval */
		g->suspended =
		    stolen > span / 100 * threshold_pct + (span % 100) * threshold_pct / 100;
		g->since_ns = now_ns;
		g->steal_at_ns = steal_ns;
	}
	return !g->suspended;
}
