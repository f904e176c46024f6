/* Binary heap of events, ordered by time then insertion sequence (see events.h). */
#include <stdio.h>
#include <stdlib.h>

#include "tools/sim/events.h"

static bool before(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void events_init(struct event_heap *h)
{
	*h = (struct event_heap){0};
}

void events_free(struct event_heap *h)
{
	free(h->ev);
	*h = (struct event_heap){0};
}

void events_push(struct event_heap *h, uint64_t t, uint32_t cpu, uint16_t kind, uint32_t gen)
{
	uint32_t i;

	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 64;
		struct sim_event *ev = realloc(h->ev, cap * sizeof(*ev));

		if (!ev) {
			fprintf(stderr, "idlelab-sim: out of memory\n");
			exit(1);
		}
		h->ev = ev;
		h->cap = cap;
	}
	i = h->n++;
	h->ev[i] = (struct sim_event){t, h->next_seq++, cpu, kind, gen};
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		struct sim_event tmp;

		if (!before(&h->ev[i], &h->ev[parent]))
			break;
		tmp = h->ev[i];
		h->ev[i] = h->ev[parent];
		h->ev[parent] = tmp;
		i = parent;
	}
}

bool events_pop(struct event_heap *h, struct sim_event *out)
{
	uint32_t i = 0;

	if (h->n == 0)
		return false;
	*out = h->ev[0];
	h->ev[0] = h->ev[--h->n];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		struct sim_event tmp;

		if (l < h->n && before(&h->ev[l], &h->ev[m]))
			m = l;
		if (r < h->n && before(&h->ev[r], &h->ev[m]))
			m = r;
		if (m == i)
			break;
		tmp = h->ev[i];
		h->ev[i] = h->ev[m];
		h->ev[m] = tmp;
		i = m;
	}
	return true;
}
