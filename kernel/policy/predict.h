/*
 * The "predict" governor: Linux's haltpoll, until it is seen stuck on its plateau; there, a
 * halt timed to end just before the wake-up it predicts, then a short poll that catches it.
 *
 * Why. haltpoll adapts its window on the residual halt after an expired poll. For a wake-up
 * period a little above the window (docs/haltpoll-spec.md §1.10.3, the plateau) every poll
 * expires and the residual never asks for more: the CPU burns the whole window on every
 * wake-up, then takes the halt exit and the halt wake-up anyway. Polling the whole period
 * instead would catch the wake-up but burn more still. A period that regular can be
 * predicted, though: sleep through most of it, and poll only across the moment the wake-up
 * is due. Everywhere else haltpoll does well, so this governor is haltpoll everywhere else.
 *
 * The rule (integers only, PREDICT_HISTORY = 4 periods of memory per CPU; cap is
 * guest_halt_poll_ns):
 *   period    the sum of the residencies of the idle entries up to and including the one
 *             that ends it: one that ended with work, or a poll that expired as the work
 *             came (work at its expiry check, work_at_expiry: still an expiry to
 *             haltpoll). Entries ended by a tick, by the governor's own timer or by a poll
 *             that expired without work add to it. Filed in the history when it ends, if it
 *             is a plateau period or the plateau decided it (the history feeds nothing
 *             else: a full streak has just filed the periods the plateau test reads).
 *   haltpoll  off the plateau, select, poll_limit and reflect are haltpoll's, unchanged
 *             (and halts are untimed). On it, haltpoll's state is left as it was; when
 *             the plateau ends, haltpoll goes on from the poll that ended it, which it
 *             hears as its own expired poll (it was one: a poll whose limit passed).
 *   signature a period all of whose entries haltpoll decided is a plateau period if a poll
 *             in it expired, it still ended with work (in the halt that followed, or at
 *             that poll's expiry check), and haltpoll's window ended it where it began
 *             it: haltpoll burnt its window, missed, and will not move.
 *   enter     when the last 4 filed periods are all plateau periods and regular
 *             (max <= 2 * min): a constant period haltpoll keeps missing, not chance.
 *   on it     with min and max of the last 4 periods, margin = max(max / 16, max - min,
 *             grow_start / 8) (the recent jitter, and at least a sixteenth):
 *               halt_until = min - margin - overshoot (none if that is <= 0)
 *               poll_until = max + margin
 *             select: while the period so far is short of halt_until, halt, with the halt
 *             limited to the rest of it (halt_limit: the idle driver's timer ends it);
 *             then poll, with the limit max(poll_until - period so far, margin), at most
 *             cap. overshoot is how much later than asked the last timed halt returned (the
 *             timer's slack and the wake-up from a halt), measured, so the poll still
 *             starts before the wake-up on a machine where those take hundreds of us: a
 *             halt its timer ended gives it exactly; one that work ended past the time
 *             asked gives a lower bound, which only raises it; a period with no timed
 *             halt (the overshoot left no room) takes a quarter off it, so that one
 *             measured at a bad moment is tried again rather than kept for good.
 *             latency_req_zero: poll at once.
 *   leave     a poll that expires on the plateau (one with work at its expiry check
 *             caught the wake-up at its last check: a hit for the plateau): the rest of
 *             that period, and every period after it until the signature is seen 4 times
 *             again, is haltpoll's. After an expired poll haltpoll halts, so the rest of
 *             that period is one halt, on whose residual haltpoll adapts, as after its own.
 * So for a constant period D above haltpoll's settled window W, the periods go as haltpoll's
 * (poll W, expire, halt) until the signature has been seen 4 times; then each period is one
 * timed halt, one wake-up by the governor's timer and a poll of about a margin that ends
 * with the work: a poll hit, at a halt's cost plus a margin instead of W plus a halt.
 *
 * Its per-CPU state is struct predict_cpu (kernel/policy/governor.h), beside haltpoll's.
 * Every function is inline, beside haltpoll's, which they call, so that the idle loop's
 * entry for predict (kernel/idle.c) compiles with both in it, and off the plateau adds
 * little to haltpoll but the period's sum.
 */
#ifndef IDLELAB_KERNEL_PREDICT_H
#define IDLELAB_KERNEL_PREDICT_H

#include "kernel/policy/haltpoll.h"

/* A plateau period without a timed halt takes 1/PREDICT_OVERSHOOT_DECAY off the overshoot. */
#define PREDICT_OVERSHOOT_DECAY 4u

/* On the plateau: the poll a period's prediction plans, from halt_until to poll_until. */
static inline uint64_t predict_window_ns(const struct gov_cpu *g)
{
	const struct predict_cpu *p = &g->predict;

	return p->plateau ? p->poll_until_ns - p->halt_until_ns : haltpoll_window_ns(g);
}

/* Files the period in progress into the history ring. */
static inline void predict_history_add(struct predict_cpu *p)
{
	p->periods[p->next] = p->period_ns;
	p->next = (p->next + 1) % PREDICT_HISTORY;
	if (p->count < PREDICT_HISTORY)
		p->count++;
}

/* The entry ended the idle period: work ended it, or came as its poll expired. */
static inline bool predict_period_ends(const struct gov_entry *e)
{
	return e->work || e->work_at_expiry;
}

static inline enum gov_adjust predict_adjust(uint64_t after, uint64_t before)
{
	return after > before ? GOV_ADJ_GROW : after < before ? GOV_ADJ_SHRINK : GOV_ADJ_NONE;
}

static inline void predict_history_span(const struct predict_cpu *p, uint64_t *min, uint64_t *max)
{
	*min = UINT64_MAX;
	*max = 0;
	for (unsigned i = 0; i < p->count; i++) {
		uint64_t v = p->periods[i];

		if (v < *min)
			*min = v;
		if (v > *max)
			*max = v;
	}
	if (!p->count)
		*min = 0;
}

static inline uint64_t predict_margin(const struct predict_cpu *p, const struct gov_params *params)
{
	uint64_t min, max, margin;

	predict_history_span(p, &min, &max);
	margin = max / 16;
	if (max - min > margin)
		margin = max - min;
	if (params->grow_start / 8 > margin)
		margin = params->grow_start / 8;
	return margin;
}

/* halt_until and poll_until from the history, the margin and the measured overshoot. */
static inline void predict_plan(struct predict_cpu *p, const struct gov_params *params)
{
	uint64_t min, max, margin = predict_margin(p, params), early;

	predict_history_span(p, &min, &max);
	early = margin + p->overshoot_ns;
	p->halt_until_ns = min > early ? min - early : 0;
	p->poll_until_ns = max + margin;
}

static inline uint64_t predict_plateau_poll_limit(struct gov_cpu *g,
						  const struct gov_params *params)
{
	const struct predict_cpu *p = &g->predict;
	uint64_t margin = predict_margin(p, params), l;

	l = p->poll_until_ns > p->period_ns + margin ? p->poll_until_ns - p->period_ns : margin;
	return l > params->guest_halt_poll_ns ? params->guest_halt_poll_ns : l;
}

/* The signature has been seen PREDICT_HISTORY periods in a row: the plateau starts if the
 * periods are regular. */
static inline void predict_try_plateau(struct gov_cpu *g, const struct gov_params *params)
{
	struct predict_cpu *p = &g->predict;
	uint64_t min, max;

	predict_history_span(p, &min, &max);
	if (max > 2 * min)
		return;
	p->plateau = true;
	p->overshoot_ns = 0;
	p->timed = false;
	g->takeovers++;
	predict_plan(p, params);
}

/* On the plateau, the period that work just ended is filed and the plan made from it. A
 * period without a timed halt (the overshoot left no room for one) takes a quarter off the
 * overshoot: nothing else would ever measure it again. */
static inline void predict_file_plateau_period(struct gov_cpu *g, const struct gov_params *params)
{
	struct predict_cpu *p = &g->predict;

	if (!p->timed)
		p->overshoot_ns -= p->overshoot_ns / PREDICT_OVERSHOOT_DECAY;
	p->timed = false;
	predict_history_add(p);
	p->period_ns = 0;
	p->window_at_start = haltpoll_window_ns(g);
	p->expired = false;
	p->mixed = false;
	predict_plan(p, params);
}

/* An entry the plateau decided; a poll of it that expires hands the rest of the period,
 * and what follows, back to haltpoll, which hears that poll as its own expired one: it
 * halts next, as after any poll of its own that expired, and adapts on that halt. */
static inline enum gov_adjust predict_reflect_plateau(struct gov_cpu *g,
						      const struct gov_params *params,
						      const struct gov_entry *e)
{
	struct predict_cpu *p = &g->predict;
	uint64_t before = predict_window_ns(g);

	p->period_ns += e->residency_ns;
	p->mixed = true;
	if (e->state == GOV_STATE_HALT && p->asked_halt_ns) {
		p->timed = true;
		/* How late a timed halt comes back: measured when its timer ended it; when work
		 * ended it past the time asked, the timer would have been later still. */
		uint64_t late =
		    e->residency_ns > p->asked_halt_ns ? e->residency_ns - p->asked_halt_ns : 0;

		if (!e->work || late > p->overshoot_ns) {
			p->overshoot_ns = late;
			predict_plan(p, params);
		}
		p->asked_halt_ns = 0;
	}
	if (predict_period_ends(e)) { /* (a poll with work at its expiry check caught it) */
		predict_file_plateau_period(g, params);
	} else if (e->state == GOV_STATE_POLL && e->limit_ns != GOV_NO_LIMIT) {
		p->expired = true;
		p->plateau = false; /* the period outran the prediction: it has moved */
		p->streak = 0;
		haltpoll_reflect(g, params, e);
	}
	return predict_adjust(predict_window_ns(g), before);
}

static inline enum gov_state predict_select(struct gov_cpu *g, const struct gov_params *params,
					    bool latency_req_zero, bool *stop_tick)
{
	const struct predict_cpu *p = &g->predict;

	if (!p->plateau) /* (a poll that expired ended the plateau: see reflect) */
		return haltpoll_select(g, params, latency_req_zero, stop_tick);
	if (!latency_req_zero && p->period_ns < p->halt_until_ns)
		return GOV_STATE_HALT;
	*stop_tick = false;
	return GOV_STATE_POLL;
}

static inline uint64_t predict_halt_limit(struct gov_cpu *g, const struct gov_params *params)
{
	struct predict_cpu *p = &g->predict;

	(void)params;
	p->asked_halt_ns =
	    p->plateau && p->period_ns < p->halt_until_ns ? p->halt_until_ns - p->period_ns : 0;
	return p->asked_halt_ns;
}

static inline void predict_poll_begin(struct gov_cpu *g)
{
	haltpoll_poll_begin(g);
}

static inline uint64_t predict_poll_limit(struct gov_cpu *g, const struct gov_params *params,
					  uint64_t tick_nsec)
{
	if (!g->predict.plateau)
		return haltpoll_poll_limit(g, params, tick_nsec);
	return predict_plateau_poll_limit(g, params);
}

/*
 * Off the plateau: haltpoll's reflect, the period's sum, and when work ends the period, its
 * filing: a plateau period (the signature) adds to the streak, any other ends it.
 */
static inline enum gov_adjust predict_reflect(struct gov_cpu *g, const struct gov_params *params,
					      const struct gov_entry *e)
{
	struct predict_cpu *p = &g->predict;
	uint64_t before = haltpoll_window_ns(g);
	enum gov_adjust adj;
	bool signature;

	if (p->plateau)
		return predict_reflect_plateau(g, params, e);
	adj = haltpoll_reflect(g, params, e);
	p->period_ns += e->residency_ns;
	if (e->state == GOV_STATE_POLL && !e->work && e->limit_ns != GOV_NO_LIMIT)
		p->expired = true;
	if (!predict_period_ends(e))
		return adj;
	if (!p->expired) { /* the common period, no poll expired: no plateau period (and
			    * not mixed: a plateau period is left only by an expired poll) */
		p->streak = 0;
		p->period_ns = 0;
		p->window_at_start = haltpoll_window_ns(g);
		return adj;
	}
	signature = !p->mixed && haltpoll_window_ns(g) == p->window_at_start;
	if (signature) {
		/* Only the streak's periods are kept: the plateau test reads the last
		 * PREDICT_HISTORY, which a full streak has just written. */
		predict_history_add(p);
		if (p->streak < PREDICT_HISTORY)
			p->streak++;
	} else {
		p->streak = 0;
	}
	p->period_ns = 0;
	p->window_at_start = haltpoll_window_ns(g);
	p->expired = false;
	p->mixed = false;
	if (p->streak < PREDICT_HISTORY)
		return adj;
	predict_try_plateau(g, params);
	return p->plateau ? predict_adjust(predict_window_ns(g), before) : adj;
}

static inline void predict_aborted(struct gov_cpu *g)
{
	g->predict.asked_halt_ns = 0;
	if (!g->predict.plateau)
		haltpoll_aborted(g); /* no time passed: the period is unchanged */
}

static inline void predict_enable(struct gov_cpu *g)
{
	haltpoll_enable(g);
	g->predict = (struct predict_cpu){0};
	g->takeovers = 0;
}

/* The table's initializer: gov_predict (kernel/policy/governors.c), and the idle loop's
 * constant copy through which these functions are called directly when predict governs. */
#define PREDICT_GOVERNOR                                                                           \
	{                                                                                          \
		.name = "predict", .enable = predict_enable, .select = predict_select,             \
		.halt_limit = predict_halt_limit, .poll_begin = predict_poll_begin,                \
		.poll_limit = predict_poll_limit, .reflect = predict_reflect,                      \
		.aborted = predict_aborted, .window_ns = predict_window_ns,                        \
	}

#endif
