/*
 * The "predict" governor's per-entry functions (its rule is in kernel/policy/gov_predict.c).
 *
 * Off the plateau, where predict is haltpoll, an entry must cost what haltpoll's does: the
 * functions are inline, so the idle driver calls them directly (kernel/idle.c: GOV_CALL)
 * and haltpoll's own inline functions compile into them, and predict's bookkeeping is the
 * period's sum and, per period, a store into the history. What only the plateau needs
 * (the plan, the margin, the timed halt's overshoot) and the test for entering it, which
 * runs only once the signature has been seen PREDICT_HISTORY periods in a row, are out of
 * line in gov_predict.c. gov_predict's table there holds these same functions.
 */
#ifndef IDLELAB_KERNEL_GOV_PREDICT_H
#define IDLELAB_KERNEL_GOV_PREDICT_H

#include "kernel/policy/gov_haltpoll.h"

/* Out of line (gov_predict.c): the plateau's side of each function. */
enum haltpoll_adjust predict_reflect_plateau(struct gov_cpu *g, const struct haltpoll_params *hp,
					     const struct gov_entry *e);
uint64_t predict_plateau_poll_limit(struct gov_cpu *g, const struct haltpoll_params *hp);
void predict_try_plateau(struct gov_cpu *g, const struct haltpoll_params *hp);

static inline int pr_select(struct gov_cpu *g, const struct haltpoll_params *hp,
			    bool latency_req_zero, bool *stop_tick)
{
	const struct predict_cpu *p = &g->predict;

	if (!p->plateau) /* (a poll that expired ended the plateau: see reflect) */
		return hp_select(g, hp, latency_req_zero, stop_tick);
	if (!latency_req_zero && p->period_ns < p->halt_until_ns)
		return GOV_STATE_HALT;
	*stop_tick = false;
	return GOV_STATE_POLL;
}

static inline uint64_t pr_halt_limit(struct gov_cpu *g, const struct haltpoll_params *hp)
{
	struct predict_cpu *p = &g->predict;

	(void)hp;
	p->asked_halt_ns =
	    p->plateau && p->period_ns < p->halt_until_ns ? p->halt_until_ns - p->period_ns : 0;
	return p->asked_halt_ns;
}

static inline void pr_poll_begin(struct gov_cpu *g)
{
	hp_poll_begin(g);
}

static inline uint64_t pr_poll_limit(struct gov_cpu *g, const struct haltpoll_params *hp,
				     uint64_t tick_nsec)
{
	if (!g->predict.plateau)
		return hp_poll_limit(g, hp, tick_nsec);
	return predict_plateau_poll_limit(g, hp);
}

/* On the plateau: the poll a period's prediction plans, from halt_until to poll_until. */
static inline uint64_t pr_window_ns(const struct gov_cpu *g)
{
	const struct predict_cpu *p = &g->predict;

	return p->plateau ? p->poll_until_ns - p->halt_until_ns : hp_window_ns(g);
}

/* Files the period in progress into the history ring. */
static inline void pr_history_add(struct predict_cpu *p)
{
	p->periods[p->next] = p->period_ns;
	p->next = (p->next + 1) % PREDICT_HISTORY;
	if (p->count < PREDICT_HISTORY)
		p->count++;
}

static inline enum haltpoll_adjust pr_adjust(uint64_t after, uint64_t before)
{
	return after > before	? HALTPOLL_ADJ_GROW
	       : after < before ? HALTPOLL_ADJ_SHRINK
				: HALTPOLL_ADJ_NONE;
}

/*
 * Off the plateau: haltpoll's reflect, the period's sum, and when work ends the period, its
 * filing: a plateau period (the signature) adds to the streak, any other ends it.
 */
static inline enum haltpoll_adjust pr_reflect(struct gov_cpu *g, const struct haltpoll_params *hp,
					      const struct gov_entry *e)
{
	struct predict_cpu *p = &g->predict;
	uint64_t before = hp_window_ns(g);
	enum haltpoll_adjust adj;
	bool signature;

	if (p->plateau)
		return predict_reflect_plateau(g, hp, e);
	adj = hp_reflect(g, hp, e);
	p->period_ns += e->residency_ns;
	if (e->state == GOV_STATE_POLL && !e->work && e->limit_ns != GOV_NO_LIMIT)
		p->expired = true;
	if (!e->work)
		return adj;
	if (!p->expired) { /* the common period, no poll expired: no plateau period (and
			    * not mixed: a plateau period is left only by an expired poll) */
		p->streak = 0;
		p->period_ns = 0;
		p->window_at_start = hp_window_ns(g);
		return adj;
	}
	signature = !p->mixed && hp_window_ns(g) == p->window_at_start;
	if (signature) {
		/* Only the streak's periods are kept: the plateau test reads the last
		 * PREDICT_HISTORY, which a full streak has just written. */
		pr_history_add(p);
		if (p->streak < PREDICT_HISTORY)
			p->streak++;
	} else {
		p->streak = 0;
	}
	p->period_ns = 0;
	p->window_at_start = hp_window_ns(g);
	p->expired = false;
	p->mixed = false;
	if (p->streak < PREDICT_HISTORY)
		return adj;
	predict_try_plateau(g, hp);
	return p->plateau ? pr_adjust(pr_window_ns(g), before) : adj;
}

static inline void pr_aborted(struct gov_cpu *g)
{
	g->predict.asked_halt_ns = 0;
	if (!g->predict.plateau)
		hp_aborted(g); /* no time passed: the period is unchanged */
}

#endif
