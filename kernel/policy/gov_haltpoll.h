/*
 * Linux's haltpoll governor (kernel/policy/haltpoll.c) behind the governor interface, in the
 * order cpuidle-haltpoll calls it: select; poll_begin on entering the poll state; the limit
 * once the poll really starts; the end check, the residency and reflect afterwards.
 *
 * The functions are inline so that the idle driver can call the default governor directly
 * (kernel/idle.c, through GOV_HALTPOLL_TABLE) and the per-entry work compiles into its path;
 * gov_haltpoll's table (gov_haltpoll.c) holds the same functions for every other caller.
 */
#ifndef IDLELAB_KERNEL_GOV_HALTPOLL_H
#define IDLELAB_KERNEL_GOV_HALTPOLL_H

#include "kernel/policy/governors.h"

/* haltpoll's states and adjustments are the interface's, value for value. */
_Static_assert(HALTPOLL_STATE_POLL == (int)GOV_STATE_POLL &&
		   HALTPOLL_STATE_HALT == (int)GOV_STATE_HALT,
	       "haltpoll's state indices are the interface's");

static inline enum gov_adjust hp_adjust(enum haltpoll_adjust a)
{
	return a == HALTPOLL_ADJ_GROW	  ? GOV_ADJ_GROW
	       : a == HALTPOLL_ADJ_SHRINK ? GOV_ADJ_SHRINK
					  : GOV_ADJ_NONE;
}

static inline void hp_enable(struct gov_cpu *g)
{
	haltpoll_cpu_init(&g->haltpoll);
}

static inline enum gov_state hp_select(struct gov_cpu *g, const struct gov_params *p,
				       bool latency_req_zero, bool *stop_tick)
{
	(void)p;
	return (enum gov_state)haltpoll_select(&g->haltpoll, latency_req_zero, stop_tick);
}

static inline uint64_t hp_halt_limit(struct gov_cpu *g, const struct gov_params *p)
{
	(void)g;
	(void)p;
	return 0; /* Linux's halt lasts until an interrupt */
}

static inline void hp_poll_begin(struct gov_cpu *g)
{
	haltpoll_poll_begin(&g->haltpoll);
}

static inline uint64_t hp_poll_limit(struct gov_cpu *g, const struct gov_params *p,
				     uint64_t tick_nsec)
{
	(void)p;
	return haltpoll_poll_limit(&g->haltpoll, tick_nsec);
}

static inline enum gov_adjust hp_reflect(struct gov_cpu *g, const struct gov_params *p,
					 const struct gov_entry *e)
{
	struct haltpoll_cpu *h = &g->haltpoll;
	uint64_t ns = e->residency_ns, limit = e->limit_ns;

	if (e->state == GOV_STATE_POLL && limit != GOV_NO_LIMIT)
		/* The loop compared cycles; ns rounding must not turn an expiry into a tie. */
		haltpoll_poll_check(h, e->work, e->work || ns > limit ? ns : limit + 1, limit);
	haltpoll_record_residency(h, ns);
	return hp_adjust(haltpoll_reflect(&p->haltpoll, h, (int)e->state));
}

static inline void hp_aborted(struct gov_cpu *g)
{
	haltpoll_record_residency(&g->haltpoll, 0);
}

static inline uint64_t hp_window_ns(const struct gov_cpu *g)
{
	return g->haltpoll.poll_limit_ns;
}

/* The table's initializer: gov_haltpoll (gov_haltpoll.c), and the idle driver's constant
 * copy through which the default governor's functions are called directly. */
#define GOV_HALTPOLL_TABLE                                                                         \
	{                                                                                          \
		.name = "haltpoll", .enable = hp_enable, .select = hp_select,                      \
		.halt_limit = hp_halt_limit, .poll_begin = hp_poll_begin,                          \
		.poll_limit = hp_poll_limit, .reflect = hp_reflect, .aborted = hp_aborted,         \
		.window_ns = hp_window_ns,                                                         \
	}

#endif
