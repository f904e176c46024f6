#include "lib/runqueue.h"

bool rq_push(struct runqueue *q, struct rq_link *l)
{
	if (l->queued)
		return false;
	l->next = NULL;
	l->prev = q->tail;
	if (q->tail)
		q->tail->next = l;
	else
		q->head = l;
	q->tail = l;
	l->queued = true;
	q->len++;
	return true;
}

bool rq_remove(struct runqueue *q, struct rq_link *l)
{
	if (!l->queued)
		return false;
	if (l->prev)
		l->prev->next = l->next;
	else
		q->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		q->tail = l->prev;
	l->next = l->prev = NULL;
	l->queued = false;
	q->len--;
	return true;
}

struct rq_link *rq_pop(struct runqueue *q)
{
	struct rq_link *l = q->head;

	if (l)
		rq_remove(q, l);
	return l;
}
