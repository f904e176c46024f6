/*
 * Per-CPU ordered queue of one-shot timers. Intrusive: the caller embeds a struct tq_node in
 * its own timer object and recovers it with container_of-style arithmetic; the queue never
 * allocates. Nodes are ordered by (expiry, insertion sequence), so timers with equal expiry
 * fire in the order they were inserted.
 *
 * The structure is a leftist heap with parent pointers. With n queued nodes:
 *   tq_insert, tq_pop, tq_remove   O(log n) worst case (not amortized)
 *   tq_peek, tq_count, tq_is_queued O(1)
 * Worst-case bounds matter here because the queue is manipulated with interrupts off.
 *
 * NOT thread-safe, by design: each CPU owns its queue and touches it only with interrupts
 * disabled on that CPU. Callers on other CPUs must not touch the queue or its nodes.
 */
#ifndef IDLELAB_LIB_TIMERQUEUE_H
#define IDLELAB_LIB_TIMERQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tq;

/*
 * Embedded in the caller's timer. All-zero memory (or tq_node_init) is a valid, unqueued
 * node. While queued, every field is owned by the queue; expiry may be read but not written.
 * After a node leaves the queue (pop, remove, collect) expiry still holds its last value.
 * rank is the leftist-heap null-path length: 1 + rank of the right child, empty subtree 0.
 */
struct tq_node {
	struct tq_node *left;
	struct tq_node *right;
	struct tq_node *parent;
	struct tq *owner; /* queue holding the node, NULL when not queued */
	uint64_t expiry;  /* in the caller's clock unit (the kernel uses TSC cycles) */
	uint64_t seq;	  /* insertion order; breaks expiry ties FIFO */
	uint32_t rank;
};

/* All-zero memory (or tq_init) is a valid empty queue. */
struct tq {
	struct tq_node *root;
	uint64_t next_seq;
	size_t count;
};

typedef void (*tq_expire_fn)(struct tq_node *node, void *ctx);

void tq_init(struct tq *q);
void tq_node_init(struct tq_node *node);

/* Queues node to expire at expiry. Returns false, changing nothing, if node is already
 * queued (here or in any other queue): re-arming is tq_remove followed by tq_insert. */
bool tq_insert(struct tq *q, struct tq_node *node, uint64_t expiry);

/* Earliest node, or NULL if the queue is empty. The node stays queued. */
struct tq_node *tq_peek(const struct tq *q);

/* Removes and returns the earliest node, or NULL if the queue is empty. */
struct tq_node *tq_pop(struct tq *q);

/* Cancels node. Returns true if it was queued in q and has been removed; returns false and
 * changes nothing if node is not queued or is queued in a different queue. */
bool tq_remove(struct tq *q, struct tq_node *node);

bool tq_is_queued(const struct tq_node *node);
size_t tq_count(const struct tq *q);

/*
 * Pops, in order, every node with expiry <= now and calls fn(node, ctx) on each after it has
 * left the queue. Returns the number of calls. fn may tq_remove other nodes (they then do not
 * fire) and may tq_insert any node, including the one it was given; a node inserted with
 * expiry <= now fires again within this same call, so a periodic timer must re-arm in the
 * future or this never returns.
 */
size_t tq_collect_expired(struct tq *q, uint64_t now, tq_expire_fn fn, void *ctx);

#endif
