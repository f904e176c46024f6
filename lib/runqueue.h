/*
 * A CPU's queue of runnable threads: intrusive, FIFO, O(1) everywhere. Pure list logic with
 * no locking: only the CPU the queue belongs to calls it, with interrupts off (kernel/sched.c).
 */
#ifndef IDLELAB_LIB_RUNQUEUE_H
#define IDLELAB_LIB_RUNQUEUE_H

#include <stdbool.h>
#include <stddef.h>

struct rq_link {
	struct rq_link *next, *prev;
	bool queued;
};

struct runqueue {
	struct rq_link *head, *tail;
	size_t len;
};

/* Appends; returns false (and changes nothing) if the link is already queued somewhere. */
bool rq_push(struct runqueue *q, struct rq_link *l);
/* Removes and returns the oldest link, NULL if empty. */
struct rq_link *rq_pop(struct runqueue *q);
/* Unlinks l from q; returns false if l is not queued. */
bool rq_remove(struct runqueue *q, struct rq_link *l);

static inline bool rq_empty(const struct runqueue *q)
{
	return q->len == 0;
}

#endif
