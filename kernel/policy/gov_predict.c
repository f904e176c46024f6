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
 *             that ended with work (entries ended by a tick, by the governor's own timer
 *             or by an expired poll add to it); filed in the history when it ends.
 *   haltpoll  off the plateau, select, poll_limit and reflect are haltpoll's, unchanged
 *             (and halts are untimed). On it, haltpoll's state is left as it was, and
 *             haltpoll goes on from there when the plateau ends.
 *   signature a period all of whose entries haltpoll decided is a plateau period if a poll
 *             in it expired, it still ended with work (in the halt that followed), and
 *             haltpoll's window ended it where it began it: haltpoll burnt its window,
 *             halted anyway, and will not move.
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
 *             asked gives a lower bound, which only raises it.
 *             latency_req_zero: poll at once.
 *   leave     a poll that expires on the plateau: the rest of that period, and every
 *             period after it until the signature is seen 4 times again, is haltpoll's.
 * So for a constant period D above haltpoll's settled window W, the periods go as haltpoll's
 * (poll W, expire, halt) until the signature has been seen 4 times; then each period is one
 * timed halt, one wake-up by the governor's timer and a poll of about a margin that ends
 * with the work: a poll hit, at a halt's cost plus a margin instead of W plus a halt.
 */
#include "kernel/policy/gov_haltpoll.h"
#include "kernel/policy/governor.h"

static void history_span(const struct predict_cpu *p, uint64_t *min, uint64_t *max)
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

uint64_t predict_margin(const struct predict_cpu *p, const struct haltpoll_params *hp)
{
	uint64_t min, max, margin;

	history_span(p, &min, &max);
	margin = max / 16;
	if (max - min > margin)
		margin = max - min;
	if (hp->grow_start / 8 > margin)
		margin = hp->grow_start / 8;
	return margin;
}

/* halt_until and poll_until from the history, the margin and the measured overshoot. */
static void plan(struct predict_cpu *p, const struct haltpoll_params *hp)
{
	uint64_t min, max, margin = predict_margin(p, hp), early;

	history_span(p, &min, &max);
	early = margin + p->overshoot_ns;
	p->halt_until_ns = min > early ? min - early : 0;
	p->poll_until_ns = max + margin;
}

static void predict_enable(struct gov_cpu *g)
{
	hp_enable(g);
	g->predict = (struct predict_cpu){0};
}

static int predict_select(struct gov_cpu *g, const struct haltpoll_params *hp,
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

static uint64_t predict_halt_limit(struct gov_cpu *g, const struct haltpoll_params *hp)
{
	struct predict_cpu *p = &g->predict;

	(void)hp;
	p->asked_halt_ns =
	    p->plateau && p->period_ns < p->halt_until_ns ? p->halt_until_ns - p->period_ns : 0;
	return p->asked_halt_ns;
}

static void predict_poll_begin(struct gov_cpu *g)
{
	hp_poll_begin(g);
}

static uint64_t predict_poll_limit(struct gov_cpu *g, const struct haltpoll_params *hp,
				   uint64_t tick_nsec)
{
	const struct predict_cpu *p = &g->predict;
	uint64_t margin, l;

	if (!p->plateau)
		return hp_poll_limit(g, hp, tick_nsec);
	margin = predict_margin(p, hp);
	l = p->poll_until_ns > p->period_ns + margin ? p->poll_until_ns - p->period_ns : margin;
	return l > hp->guest_halt_poll_ns ? hp->guest_halt_poll_ns : l;
}

/* Files the period that just ended and decides whether the plateau starts here. */
static void file_period(struct gov_cpu *g, const struct haltpoll_params *hp)
{
	struct predict_cpu *p = &g->predict;
	bool signature = !p->mixed && p->expired && hp_window_ns(g) == p->window_at_start;
	uint64_t min, max;

	p->periods[p->next] = p->period_ns;
	p->next = (p->next + 1) % PREDICT_HISTORY;
	if (p->count < PREDICT_HISTORY)
		p->count++;
	p->period_ns = 0;
	p->window_at_start = hp_window_ns(g);
	p->expired = false;
	p->mixed = false;
	if (!p->plateau)
		p->streak =
		    signature ? (p->streak < PREDICT_HISTORY ? p->streak + 1 : p->streak) : 0;
	history_span(p, &min, &max);
	if (!p->plateau && p->streak == PREDICT_HISTORY && max <= 2 * min) {
		p->plateau = true;
		p->overshoot_ns = 0;
		p->plateaus++;
	}
	if (p->plateau)
		plan(p, hp);
}

static enum haltpoll_adjust predict_reflect(struct gov_cpu *g, const struct haltpoll_params *hp,
					    const struct gov_entry *e)
{
	struct predict_cpu *p = &g->predict;
	uint64_t before = predict_window(g);
	bool decided = p->plateau; /* who chose this entry */
	enum haltpoll_adjust hp_adj = decided ? HALTPOLL_ADJ_NONE : hp_reflect(g, hp, e);

	p->period_ns += e->residency_ns;
	p->mixed |= decided;
	if (e->state == GOV_STATE_HALT && p->asked_halt_ns) {
		/* How late a timed halt comes back: measured when its timer ended it; when work
		 * ended it past the time asked, the timer would have been later still. */
		uint64_t late =
		    e->residency_ns > p->asked_halt_ns ? e->residency_ns - p->asked_halt_ns : 0;

		if (!e->work || late > p->overshoot_ns) {
			p->overshoot_ns = late;
			plan(p, hp);
		}
		p->asked_halt_ns = 0;
	}
	if (e->state == GOV_STATE_POLL && !e->work && e->limit_ns != GOV_NO_LIMIT) {
		p->expired = true;
		if (p->plateau) { /* the period outran the prediction: it has moved */
			p->plateau = false;
			p->streak = 0;
		}
	}
	if (e->work)
		file_period(g, hp);
	if (!decided && !p->plateau)
		return hp_adj; /* haltpoll's entry and haltpoll's window: its own verdict */
	return predict_window(g) > before   ? HALTPOLL_ADJ_GROW
	       : predict_window(g) < before ? HALTPOLL_ADJ_SHRINK
					    : HALTPOLL_ADJ_NONE;
}

static void predict_aborted(struct gov_cpu *g)
{
	g->predict.asked_halt_ns = 0;
	if (!g->predict.plateau)
		hp_aborted(g); /* no time passed: the period is unchanged */
}

/* On the plateau: the poll a period's prediction plans, from halt_until to poll_until. */
uint64_t predict_window(const struct gov_cpu *g)
{
	const struct predict_cpu *p = &g->predict;

	return p->plateau ? p->poll_until_ns - p->halt_until_ns : hp_window_ns(g);
}

const struct idle_governor gov_predict = {
    .name = "predict",
    .enable = predict_enable,
    .select = predict_select,
    .halt_limit = predict_halt_limit,
    .poll_begin = predict_poll_begin,
    .poll_limit = predict_poll_limit,
    .reflect = predict_reflect,
    .aborted = predict_aborted,
    .window_ns = predict_window,
};
