/*
 * The "predict" governor: polls for the whole idle period it predicts, or not at all.
 *
 * Why. Linux's haltpoll governor adapts its window on the residual halt after an expired
 * poll. For a wake-up period a little above the window (docs/haltpoll-spec.md §1.10.3, the
 * plateau) every poll expires and the residual never asks for more: the CPU pays the whole
 * window on every wake-up and halts anyway. This governor learns the whole idle period
 * instead, from first idle entry to the work that ends it, and decides on that.
 *
 * The rule (integers only, PREDICT_HISTORY = 4 periods of memory per CPU):
 *   period    the sum of the residencies of consecutive idle entries up to and including
 *             the one that ended with work; entries that ended without work (an expired
 *             poll, a halt ended by a tick) add to it and it goes on.
 *   predict   P = the second largest of the last 4 periods (the largest while fewer are
 *             known; 0 with none): one outlier in four is ignored, the rest covered.
 *   select    latency_req_zero: poll (limit as haltpoll's W = 0 fallback if P = 0). A poll
 *             already expired in this period: halt (it did not cover the period, another
 *             poll would not either). P = 0 or P > guest_halt_poll_ns: halt. Otherwise poll.
 *   limit     L = P + max(P / 8, grow_start / 8), at most guest_halt_poll_ns: an eighth of
 *             margin for jitter, never less than an eighth of grow_start.
 *   reflect   add the residency to the period; if the entry ended with work, the period
 *             goes into the history and a new one starts. The window (L) is recomputed; a
 *             larger L counts as a grow, a smaller as a shrink.
 * So for a constant period D <= guest_halt_poll_ns every wake-up after the first is a poll
 * hit with L = 9D/8; for D above it, every entry halts at once, and nothing is burnt on a
 * poll that cannot succeed.
 */
#include "kernel/policy/governor.h"

uint64_t predict_next_period(const struct predict_cpu *p)
{
	uint64_t first = 0, second = 0;

	for (unsigned i = 0; i < p->count; i++) {
		uint64_t v = p->periods[i];

		if (v > first) {
			second = first;
			first = v;
		} else if (v > second) {
			second = v;
		}
	}
	return p->count < PREDICT_HISTORY ? first : second;
}

static uint64_t limit_for(const struct haltpoll_params *hp, uint64_t period)
{
	uint64_t margin = period / 8, floor = hp->grow_start / 8, l;

	if (period == 0 || period > hp->guest_halt_poll_ns)
		return 0;
	l = period + (margin > floor ? margin : floor);
	return l > hp->guest_halt_poll_ns ? hp->guest_halt_poll_ns : l;
}

static void predict_enable(struct gov_cpu *g)
{
	g->predict = (struct predict_cpu){0};
}

static int predict_select(struct gov_cpu *g, const struct haltpoll_params *hp,
			  bool latency_req_zero, bool *stop_tick)
{
	struct predict_cpu *p = &g->predict;

	if (!latency_req_zero && (p->polled_out || limit_for(hp, predict_next_period(p)) == 0))
		return GOV_STATE_HALT;
	*stop_tick = false;
	return GOV_STATE_POLL;
}

static void predict_poll_begin(struct gov_cpu *g)
{
	(void)g; /* nothing to reset: the period runs on across entries */
}

static uint64_t predict_poll_limit(struct gov_cpu *g, const struct haltpoll_params *hp,
				   uint64_t tick_nsec)
{
	uint64_t l = limit_for(hp, predict_next_period(&g->predict));

	return l ? l : haltpoll_fallback_limit(tick_nsec, HALTPOLL_HALT_TARGET_RESIDENCY_NS);
}

static enum haltpoll_adjust predict_reflect(struct gov_cpu *g, const struct haltpoll_params *hp,
					    const struct gov_entry *e)
{
	struct predict_cpu *p = &g->predict;
	uint64_t old = p->limit_ns;

	p->period_ns += e->residency_ns;
	if (e->state == GOV_STATE_POLL && !e->work)
		p->polled_out = true;
	if (e->work) {
		p->periods[p->next] = p->period_ns;
		p->next = (p->next + 1) % PREDICT_HISTORY;
		if (p->count < PREDICT_HISTORY)
			p->count++;
		p->period_ns = 0;
		p->polled_out = false;
	}
	p->limit_ns = limit_for(hp, predict_next_period(p));
	return p->limit_ns > old   ? HALTPOLL_ADJ_GROW
	       : p->limit_ns < old ? HALTPOLL_ADJ_SHRINK
				   : HALTPOLL_ADJ_NONE;
}

static void predict_aborted(struct gov_cpu *g)
{
	(void)g; /* no time passed in an aborted entry: the period is unchanged */
}

static uint64_t predict_window_ns(const struct gov_cpu *g)
{
	return g->predict.limit_ns;
}

const struct idle_governor gov_predict = {
    .name = "predict",
    .enable = predict_enable,
    .select = predict_select,
    .poll_begin = predict_poll_begin,
    .poll_limit = predict_poll_limit,
    .reflect = predict_reflect,
    .aborted = predict_aborted,
    .window_ns = predict_window_ns,
};
