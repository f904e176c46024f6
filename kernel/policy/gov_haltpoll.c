/*
 * Linux's haltpoll governor (kernel/policy/haltpoll.c) behind the governor interface, in the
 * order cpuidle-haltpoll calls it: select; poll_begin on entering the poll state; the limit
 * once the poll really starts; the end check, the residency and reflect afterwards.
 */
#include "kernel/policy/governor.h"

static void hp_enable(struct gov_cpu *g)
{
	haltpoll_cpu_init(&g->haltpoll);
}

static int hp_select(struct gov_cpu *g, const struct haltpoll_params *p, bool latency_req_zero,
		     bool *stop_tick)
{
	(void)p;
	return haltpoll_select(&g->haltpoll, latency_req_zero, stop_tick);
}

static void hp_poll_begin(struct gov_cpu *g)
{
	haltpoll_poll_begin(&g->haltpoll);
}

static uint64_t hp_poll_limit(struct gov_cpu *g, const struct haltpoll_params *p,
			      uint64_t tick_nsec)
{
	(void)p;
	return haltpoll_poll_limit(&g->haltpoll, tick_nsec);
}

static enum haltpoll_adjust hp_reflect(struct gov_cpu *g, const struct haltpoll_params *p,
				       const struct gov_entry *e)
{
	struct haltpoll_cpu *h = &g->haltpoll;
	uint64_t ns = e->residency_ns, limit = e->limit_ns;

	if (e->state == HALTPOLL_STATE_POLL && limit != GOV_NO_LIMIT)
		/* The loop compared cycles; ns rounding must not turn an expiry into a tie. */
		haltpoll_poll_check(h, e->work, e->work || ns > limit ? ns : limit + 1, limit);
	haltpoll_record_residency(h, ns);
	return haltpoll_reflect(p, h, e->state);
}

static void hp_aborted(struct gov_cpu *g)
{
	haltpoll_record_residency(&g->haltpoll, 0);
}

static uint64_t hp_window_ns(const struct gov_cpu *g)
{
	return g->haltpoll.poll_limit_ns;
}

const struct idle_governor gov_haltpoll = {
    .name = "haltpoll",
    .enable = hp_enable,
    .select = hp_select,
    .poll_begin = hp_poll_begin,
    .poll_limit = hp_poll_limit,
    .reflect = hp_reflect,
    .aborted = hp_aborted,
    .window_ns = hp_window_ns,
};
