/*
 * Leftist heap: every node precedes its children in (expiry, seq) order, and every node's
 * left child has rank >= its right child's. The second property keeps each right spine at
 * most log2(n + 1) nodes long, and every operation below walks only right spines or a
 * rank-bounded stretch of ancestors.
 */
#include "lib/timerqueue.h"
#include "lib/string.h"

/* A strict total order: seq is unique within a queue, so two queued nodes never tie. */
static bool tq_before(const struct tq_node *a, const struct tq_node *b)
{
	if (a->expiry != b->expiry)
		return a->expiry < b->expiry;
	return a->seq < b->seq;
}

static uint32_t rank_of(const struct tq_node *n)
{
	return n ? n->rank : 0;
}

/* Re-establishes the leftist property at n after a child changed; true if n's rank moved. */
static bool fix_rank(struct tq_node *n)
{
	uint32_t old = n->rank;

	if (rank_of(n->left) < rank_of(n->right)) {
		struct tq_node *t = n->left;

		n->left = n->right;
		n->right = t;
	}
	n->rank = rank_of(n->right) + 1;
	return n->rank != old;
}

/*
 * Melds two heaps by zipping their right spines together, then fixes ranks back up the
 * zipped spine. Touches O(log n) nodes. The parent pointer of the returned root is left for
 * the caller to set.
 */
static struct tq_node *meld(struct tq_node *a, struct tq_node *b)
{
	struct tq_node *root;
	struct tq_node *cur;

	if (!a)
		return b;
	if (!b)
		return a;
	if (tq_before(b, a)) {
		root = b;
		b = a;
	} else {
		root = a;
	}
	/* Invariant: cur precedes every node of b, which still has to be hung below cur. */
	cur = root;
	for (;;) {
		struct tq_node *r = cur->right;

		if (!r) {
			cur->right = b;
			b->parent = cur;
			break;
		}
		if (tq_before(b, r)) {
			cur->right = b;
			b->parent = cur;
			b = r;
		}
		cur = cur->right;
	}
	/* Every node whose right child changed lies on the parent chain from cur to root. */
	for (;;) {
		fix_rank(cur);
		if (cur == root)
			break;
		cur = cur->parent;
	}
	return root;
}

/* Points whatever referred to old (its parent's child slot, or the root) at sub. */
static void replace_link(struct tq *q, struct tq_node *old, struct tq_node *sub)
{
	struct tq_node *p = old->parent;

	if (sub)
		sub->parent = p;
	if (!p)
		q->root = sub;
	else if (p->left == old)
		p->left = sub;
	else
		p->right = sub;
}

/*
 * Recomputes ranks from p towards the root while they keep changing. The path to the root
 * can be long, but the walk is short: when a node's rank changes from r to r', its parent's
 * rank changes only if the sibling's rank exceeds min(r, r'), and then the parent's
 * min(old, new) is exactly 1 + min(r, r'). That minimum rises by one per level and no rank
 * exceeds log2(n + 1), so the walk stops within O(log n) levels.
 */
static void fix_upward(struct tq_node *p)
{
	while (p && fix_rank(p))
		p = p->parent;
}

static void unlink_node(struct tq *q, struct tq_node *node)
{
	struct tq_node *parent = node->parent;

	replace_link(q, node, meld(node->left, node->right));
	fix_upward(parent);
	q->count--;
	/* expiry stays readable: a callback re-arming a periodic timer computes from it. */
	node->left = NULL;
	node->right = NULL;
	node->parent = NULL;
	node->owner = NULL;
	node->rank = 0;
}

void tq_init(struct tq *q)
{
	memset(q, 0, sizeof(*q));
}

void tq_node_init(struct tq_node *node)
{
	memset(node, 0, sizeof(*node));
}

bool tq_insert(struct tq *q, struct tq_node *node, uint64_t expiry)
{
	if (node->owner)
		return false;
	tq_node_init(node);
	node->owner = q;
	node->expiry = expiry;
	node->seq = q->next_seq++;
	node->rank = 1;
	q->root = meld(q->root, node);
	q->root->parent = NULL;
	q->count++;
	return true;
}

struct tq_node *tq_peek(const struct tq *q)
{
	return q->root;
}

struct tq_node *tq_pop(struct tq *q)
{
	struct tq_node *head = q->root;

	if (head)
		unlink_node(q, head);
	return head;
}

bool tq_remove(struct tq *q, struct tq_node *node)
{
	if (node->owner != q)
		return false;
	unlink_node(q, node);
	return true;
}

bool tq_is_queued(const struct tq_node *node)
{
	return node->owner != NULL;
}

size_t tq_count(const struct tq *q)
{
	return q->count;
}

size_t tq_collect_expired(struct tq *q, uint64_t now, tq_expire_fn fn, void *ctx)
{
	size_t fired = 0;

	/* Re-peek every time: fn may have cancelled or inserted nodes. */
	for (;;) {
		struct tq_node *head = q->root;

		if (!head || head->expiry > now)
			break;
		unlink_node(q, head);
		fn(head, ctx);
		fired++;
	}
	return fired;
}
