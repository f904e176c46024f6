/*
 * A period closes at the exit of a halt, or at the exit of a poll that the CPU did not follow
 * with another entry within merge_gap_ns (a poll that caught its wake-up; one that expired is
 * followed at once by the governor's next choice). cpu_idle is emitted on the CPU itself, so
 * each CPU's events are in order.
 */
#include "tools/kvmreplay/guest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/policy/governors.h"
#include "tools/kvmreplay/exits.h"
#include "tools/kvmreplay/ideal_idle.h"

#define LEFT_IDLE UINT32_MAX /* cpu_idle's state for "the CPU left the idle state" */

static struct gp_cpu *cpu_of(struct gp_trace *t, int cpu)
{
	for (size_t i = 0; i < t->nc; i++)
		if (t->c[i].cpu == cpu)
			return &t->c[i];
	if (t->nc == t->capc)
		t->c = rp_grow(t->c, &t->capc, sizeof *t->c, 8);
	t->c[t->nc] = (struct gp_cpu){.cpu = cpu};
	return &t->c[t->nc++];
}

static void close_period(struct gp_trace *t, struct gp_cpu *c, uint64_t end)
{
	if (c->n == c->cap)
		c->p = rp_grow(c->p, &c->cap, sizeof *c->p, 1024);
	c->cur.d = end - c->start;
	c->p[c->n++] = c->cur;
	c->hits += c->last_poll;
	c->open = false;
	t->periods++;
}

static void take(void *ctx, const struct rp_event *e)
{
	struct gp_trace *t = ctx;
	struct gp_cpu *c;

	if (!e->idle)
		return;
	c = cpu_of(t, e->idle_cpu);
	if (!t->any)
		t->t_first = e->t_ns;
	t->any = true;
	t->t_last = e->t_ns;
	t->unitless |= e->unitless;
	if (e->idle_state != LEFT_IDLE) {
		if (c->open && !c->in_entry &&
		    !(c->last_poll && e->t_ns - c->last_exit <= t->merge_gap_ns))
			close_period(t, c, c->last_exit);
		if (!c->open) {
			c->open = true;
			c->start = e->t_ns;
			c->cur = (struct gp_period){0};
		}
		c->in_entry = true;
		c->state = e->idle_state;
		c->entry_t = e->t_ns;
		if (c->cur.n < GP_MAX_ENTRIES)
			c->cur.states[c->cur.n] =
			    e->idle_state == 0 ? GOV_STATE_POLL : GOV_STATE_HALT;
		if (c->cur.n < UINT8_MAX)
			c->cur.n++;
		return;
	}
	if (!c->in_entry) /* the trace began inside this entry */
		return;
	c->in_entry = false;
	c->last_exit = e->t_ns;
	c->last_poll = c->state == 0;
	if (c->last_poll) {
		c->polls++;
		c->poll_ns += e->t_ns - c->entry_t;
	} else {
		c->halts++;
		close_period(t, c, e->t_ns);
	}
}

int gp_read(const char *path, struct gp_trace *t)
{
	uint64_t gap = t->merge_gap_ns;
	int code;

	*t = (struct gp_trace){.merge_gap_ns = gap};
	code = rp_read_events(path, take, t, &t->lines, &t->lost, &t->format);
	if (code != RP_EXIT_OK)
		return code;
	for (size_t i = 0; i < t->nc; i++) /* the last poll caught its wake-up */
		if (t->c[i].open && !t->c[i].in_entry)
			close_period(t, &t->c[i], t->c[i].last_exit);
	if (t->periods == 0) {
		fprintf(stderr,
			"idlelab-replay: %s: no power:cpu_idle idle period in %lu lines (record "
			"power:cpu_idle in the guest)\n",
			path, t->lines);
		return RP_EXIT_NO_EVENTS;
	}
	return RP_EXIT_OK;
}

void gp_replay(const struct gp_cpu *c, const struct gov_params *p, uint64_t tick_nsec,
	       struct gp_stats *out)
{
	static struct ideal_cpu ic;

	memset(out, 0, sizeof *out);
	ideal_init(&ic, &gov_haltpoll, *p, tick_nsec);
	for (size_t i = 0; i < c->n; i++) {
		const struct gp_period *g = &c->p[i];
		unsigned n = ideal_period_try(&ic, g->d ? g->d : 1, GP_MAX_ENTRIES);
		bool same = n == g->n;

		for (unsigned j = 0; same && j < n && j < GP_MAX_ENTRIES; j++)
			same = ic.e[j].state == (enum gov_state)g->states[j];
		out->agree += same;
	}
	out->periods = c->n;
	out->polls = ic.polls;
	out->hits = ic.hits;
	out->poll_ns = ic.polled_ns;
	out->halts = ic.halts;
}

void gp_free(struct gp_trace *t)
{
	for (size_t i = 0; i < t->nc; i++)
		free(t->c[i].p);
	free(t->c);
	*t = (struct gp_trace){0};
}
