/*
 * The event queue: a binary min-heap on (time, sequence). The sequence number breaks ties in
 * insertion order, which is what makes a run with the same seed byte-identical.
 */
#ifndef IDLELAB_SIM_EVENTS_H
#define IDLELAB_SIM_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

struct sim_event {
	uint64_t t;
	uint64_t seq;
	uint32_t cpu;
	uint16_t kind;
	uint32_t gen; /* stale if it no longer matches the generation it was armed for */
};

struct event_heap {
	struct sim_event *ev;
	uint32_t n, cap;
	uint64_t next_seq;
};

void events_init(struct event_heap *h);
void events_free(struct event_heap *h);
void events_push(struct event_heap *h, uint64_t t, uint32_t cpu, uint16_t kind, uint32_t gen);
bool events_pop(struct event_heap *h, struct sim_event *out);

#endif
