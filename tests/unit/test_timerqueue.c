/*
 * Unit tests for kernel/timerqueue: hand-written edge cases plus a long randomized
 * differential run against a sorted-array model, with the heap's structural invariants
 * checked after every operation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/timerqueue.h"

struct timer {
	int id;
	struct tq_node node;
};

static struct timer *timer_of(struct tq_node *n)
{
	return n ? (struct timer *)((char *)n - offsetof(struct timer, node)) : NULL;
}

static void init_timers(struct timer *t, int n)
{
	for (int i = 0; i < n; i++) {
		tq_node_init(&t[i].node);
		t[i].id = i;
	}
}

/* --- structural invariants, read straight from the public node fields --- */

static uint32_t rank_or_zero(const struct tq_node *n)
{
	return n ? n->rank : 0;
}

static bool key_before(const struct tq_node *a, const struct tq_node *b)
{
	return a->expiry != b->expiry ? a->expiry < b->expiry : a->seq < b->seq;
}

/* Returns the subtree size; fails on any broken link, order or leftist property. */
static size_t check_subtree(const struct tq *q, const struct tq_node *n,
			    const struct tq_node *parent)
{
	if (!n)
		return 0;
	assert_ptr_equal(n->owner, q);
	assert_ptr_equal(n->parent, parent);
	if (parent)
		assert_true(key_before(parent, n));
	assert_true(rank_or_zero(n->left) >= rank_or_zero(n->right));
	assert_int_equal(n->rank, rank_or_zero(n->right) + 1);
	return 1 + check_subtree(q, n->left, n) + check_subtree(q, n->right, n);
}

static void check_heap(const struct tq *q)
{
	assert_int_equal(check_subtree(q, q->root, NULL), tq_count(q));
}

/* --- edge cases --- */

static void test_empty(void **state)
{
	struct tq q;
	struct timer t[1];

	(void)state;
	tq_init(&q);
	init_timers(t, 1);
	assert_null(tq_peek(&q));
	assert_null(tq_pop(&q));
	assert_int_equal(tq_count(&q), 0);
	assert_false(tq_remove(&q, &t[0].node));
	assert_false(tq_is_queued(&t[0].node));
	check_heap(&q);
}

static void test_zeroed_memory_is_valid(void **state)
{
	struct tq q;
	struct timer t;

	(void)state;
	memset(&q, 0, sizeof(q));
	memset(&t, 0, sizeof(t));
	assert_false(tq_is_queued(&t.node));
	assert_true(tq_insert(&q, &t.node, 5));
	assert_ptr_equal(tq_pop(&q), &t.node);
}

static void test_single(void **state)
{
	struct tq q;
	struct timer t[1];

	(void)state;
	tq_init(&q);
	init_timers(t, 1);
	assert_true(tq_insert(&q, &t[0].node, 42));
	assert_true(tq_is_queued(&t[0].node));
	assert_int_equal(tq_count(&q), 1);
	assert_ptr_equal(tq_peek(&q), &t[0].node);
	assert_int_equal(tq_peek(&q)->expiry, 42);
	check_heap(&q);
	assert_ptr_equal(tq_pop(&q), &t[0].node);
	assert_false(tq_is_queued(&t[0].node));
	assert_int_equal(tq_count(&q), 0);
	assert_null(tq_peek(&q));
}

static void test_order_and_extremes(void **state)
{
	static const uint64_t exp[] = {7, UINT64_MAX, 0, 3, UINT64_MAX - 1, 1, 3};
	static const int want[] = {2, 5, 3, 6, 0, 4, 1};
	struct tq q;
	struct timer t[7];

	(void)state;
	tq_init(&q);
	init_timers(t, 7);
	for (int i = 0; i < 7; i++)
		assert_true(tq_insert(&q, &t[i].node, exp[i]));
	check_heap(&q);
	for (int i = 0; i < 7; i++)
		assert_int_equal(timer_of(tq_pop(&q))->id, want[i]);
	assert_null(tq_pop(&q));
}

static void test_fifo_tie_break(void **state)
{
	struct tq q;
	struct timer t[64];

	(void)state;
	tq_init(&q);
	init_timers(t, 64);
	/* Even ids at expiry 100, odd ids at 50, inserted interleaved. */
	for (int i = 0; i < 64; i++)
		assert_true(tq_insert(&q, &t[i].node, i % 2 ? 50 : 100));
	check_heap(&q);
	for (int i = 1; i < 64; i += 2)
		assert_int_equal(timer_of(tq_pop(&q))->id, i);
	for (int i = 0; i < 64; i += 2)
		assert_int_equal(timer_of(tq_pop(&q))->id, i);
}

static void fill_equal(struct tq *q, struct timer *t, int n)
{
	tq_init(q);
	init_timers(t, n);
	for (int i = 0; i < n; i++)
		assert_true(tq_insert(q, &t[i].node, 1000));
}

/* Pops everything and checks the ids come out as want[0..n). */
static void expect_drain(struct tq *q, const int *want, int n)
{
	check_heap(q);
	assert_int_equal(tq_count(q), n);
	for (int i = 0; i < n; i++)
		assert_int_equal(timer_of(tq_pop(q))->id, want[i]);
	assert_null(tq_pop(q));
}

static void test_remove_head_middle_last(void **state)
{
	struct tq q;
	struct timer t[5];

	(void)state;
	fill_equal(&q, t, 5);
	assert_true(tq_remove(&q, &t[0].node));
	assert_false(tq_is_queued(&t[0].node));
	expect_drain(&q, (const int[]){1, 2, 3, 4}, 4);

	fill_equal(&q, t, 5);
	assert_true(tq_remove(&q, &t[2].node));
	expect_drain(&q, (const int[]){0, 1, 3, 4}, 4);

	fill_equal(&q, t, 5);
	assert_true(tq_remove(&q, &t[4].node));
	expect_drain(&q, (const int[]){0, 1, 2, 3}, 4);

	fill_equal(&q, t, 1);
	assert_true(tq_remove(&q, &t[0].node));
	expect_drain(&q, NULL, 0);
}

static void test_reinsert_after_removal(void **state)
{
	struct tq q;
	struct timer t[4];

	(void)state;
	fill_equal(&q, t, 4);
	assert_true(tq_remove(&q, &t[1].node));
	/* Re-inserted with the same expiry it queues behind everything already there. */
	assert_true(tq_insert(&q, &t[1].node, 1000));
	expect_drain(&q, (const int[]){0, 2, 3, 1}, 4);

	fill_equal(&q, t, 4);
	assert_true(tq_remove(&q, &t[3].node));
	assert_true(tq_insert(&q, &t[3].node, 1));
	expect_drain(&q, (const int[]){3, 0, 1, 2}, 4);
}

/* Documented behaviour: bad remove/insert calls are rejected and change nothing. */
static void test_rejected_calls(void **state)
{
	struct tq q;
	struct tq other;
	struct timer t[3];

	(void)state;
	fill_equal(&q, t, 2);
	tq_init(&other);
	init_timers(&t[2], 1);
	t[2].id = 2;

	assert_false(tq_remove(&q, &t[2].node));     /* never queued */
	assert_false(tq_remove(&other, &t[0].node)); /* queued elsewhere */
	assert_true(tq_is_queued(&t[0].node));
	assert_false(tq_insert(&q, &t[0].node, 1));	/* already queued here */
	assert_false(tq_insert(&other, &t[0].node, 1)); /* already queued elsewhere */
	assert_int_equal(tq_count(&other), 0);
	assert_true(tq_remove(&q, &t[0].node));
	assert_false(tq_remove(&q, &t[0].node)); /* second cancel */
	expect_drain(&q, (const int[]){1}, 1);
}

/* --- tq_collect_expired --- */

struct fire_log {
	struct tq *q;
	int ids[32];
	int n;
	struct tq_node *cancel_on_first; /* cancelled by the first callback */
	uint64_t rearm_period;		 /* timer 0 re-arms itself at expiry + period */
	int rearms_left;
};

static void on_expire(struct tq_node *node, void *ctx)
{
	struct fire_log *log = ctx;
	struct timer *t = timer_of(node);

	assert_false(tq_is_queued(node));
	assert_true(log->n < 32);
	log->ids[log->n++] = t->id;
	if (log->n == 1 && log->cancel_on_first)
		assert_true(tq_remove(log->q, log->cancel_on_first));
	if (t->id == 0 && log->rearms_left > 0) {
		log->rearms_left--;
		assert_true(tq_insert(log->q, node, node->expiry + log->rearm_period));
	}
}

static void test_collect_expired(void **state)
{
	static const uint64_t exp[] = {30, 10, 20, 20, 40, 10};
	struct tq q;
	struct timer t[6];
	struct fire_log log = {.q = &q};

	(void)state;
	tq_init(&q);
	init_timers(t, 6);
	for (int i = 0; i < 6; i++)
		assert_true(tq_insert(&q, &t[i].node, exp[i]));
	assert_int_equal(tq_collect_expired(&q, 9, on_expire, &log), 0);
	assert_int_equal(tq_collect_expired(&q, 20, on_expire, &log), 4);
	assert_memory_equal(log.ids, ((const int[]){1, 5, 2, 3}), 4 * sizeof(int));
	check_heap(&q);
	assert_int_equal(tq_count(&q), 2);
	assert_int_equal(tq_collect_expired(&q, UINT64_MAX, on_expire, &log), 2);
	assert_memory_equal(log.ids + 4, ((const int[]){0, 4}), 2 * sizeof(int));
	assert_int_equal(tq_count(&q), 0);
}

static void test_collect_cancel_and_rearm(void **state)
{
	struct tq q;
	struct timer t[3];
	struct fire_log log = {.q = &q, .rearm_period = 5, .rearms_left = 3};

	(void)state;
	tq_init(&q);
	init_timers(t, 3);
	log.cancel_on_first = &t[2].node;
	assert_true(tq_insert(&q, &t[0].node, 10));
	assert_true(tq_insert(&q, &t[1].node, 12));
	assert_true(tq_insert(&q, &t[2].node, 13));
	/* 0 fires at 10 and cancels 2; re-armed at 15 and 20 it fires twice more; 1 fires at 12.
	 * The third re-arm (25) is beyond now and stays queued. */
	assert_int_equal(tq_collect_expired(&q, 20, on_expire, &log), 4);
	assert_memory_equal(log.ids, ((const int[]){0, 1, 0, 0}), 4 * sizeof(int));
	assert_false(tq_is_queued(&t[2].node));
	assert_int_equal(tq_count(&q), 1);
	assert_int_equal(tq_peek(&q)->expiry, 25);
	check_heap(&q);
}

#define MONO_N 4096

/* Sorted and reverse-sorted input are the classic worst cases for naive heaps. */
static void test_monotonic_inputs(void **state)
{
	static struct timer t[MONO_N];
	struct tq q;

	(void)state;
	for (int dir = 0; dir < 2; dir++) {
		tq_init(&q);
		init_timers(t, MONO_N);
		for (int i = 0; i < MONO_N; i++) {
			uint64_t expiry = dir ? (uint64_t)(MONO_N - i) : (uint64_t)i;

			assert_true(tq_insert(&q, &t[i].node, expiry));
		}
		check_heap(&q);
		/* Leftist property: rank(root) <= log2(MONO_N + 1) = 12. */
		assert_true(q.root->rank <= 12);
		for (int i = 0; i < MONO_N; i += 2)
			assert_true(tq_remove(&q, &t[i].node));
		check_heap(&q);
		for (int i = 0; i < MONO_N / 2; i++) {
			int want = dir ? MONO_N - 1 - 2 * i : 2 * i + 1;

			assert_int_equal(timer_of(tq_pop(&q))->id, want);
		}
	}
}

/* --- randomized differential test --- */

#define POOL 512
#define OPS  200000

struct model {
	struct timer *v[POOL]; /* queued timers, in expected firing order */
	int n;
};

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: full-period, good enough mixing for test data */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* FIFO: a new timer goes after every queued timer with expiry <= its own. */
static void model_insert(struct model *m, struct timer *t)
{
	int i = m->n;

	while (i > 0 && m->v[i - 1]->node.expiry > t->node.expiry) {
		m->v[i] = m->v[i - 1];
		i--;
	}
	m->v[i] = t;
	m->n++;
}

static void model_remove_at(struct model *m, int i)
{
	memmove(&m->v[i], &m->v[i + 1], (size_t)(m->n - i - 1) * sizeof(m->v[0]));
	m->n--;
}

static int model_find(const struct model *m, const struct timer *t)
{
	for (int i = 0; i < m->n; i++)
		if (m->v[i] == t)
			return i;
	return -1;
}

/* Mixes heavy ties, full-range values and the extremes. */
static uint64_t random_expiry(uint64_t *s)
{
	uint64_t r = rng_next(s);

	switch (r % 5) {
	case 0:
		return rng_next(s) % 8;
	case 1:
		return 1000000 + rng_next(s) % 256;
	case 2:
		return rng_next(s);
	case 3:
		return r & 1 ? UINT64_MAX : 0;
	default:
		return rng_next(s) % 1000000;
	}
}

struct diff_run {
	struct tq q;
	struct model m;
	struct timer t[POOL];
	uint64_t seed;
	int fired[POOL];
	int nfired;
	int max_n;
};

static void record_fire(struct tq_node *node, void *ctx)
{
	struct diff_run *r = ctx;

	r->fired[r->nfired++] = timer_of(node)->id;
}

static void op_insert(struct diff_run *r, struct timer *t)
{
	uint64_t e = random_expiry(&r->seed);

	if (tq_is_queued(&t->node)) {
		assert_false(tq_insert(&r->q, &t->node, e));
		return;
	}
	assert_true(tq_insert(&r->q, &t->node, e));
	model_insert(&r->m, t);
}

static void op_pop(struct diff_run *r)
{
	struct timer *got = timer_of(tq_pop(&r->q));

	if (r->m.n == 0) {
		assert_null(got);
		return;
	}
	assert_ptr_equal(got, r->m.v[0]);
	assert_false(tq_is_queued(&got->node));
	model_remove_at(&r->m, 0);
}

static void op_remove(struct diff_run *r, struct timer *t)
{
	int i = model_find(&r->m, t);

	assert_int_equal(tq_remove(&r->q, &t->node), i >= 0);
	if (i >= 0)
		model_remove_at(&r->m, i);
	assert_false(tq_is_queued(&t->node));
}

static void op_collect(struct diff_run *r)
{
	uint64_t now = random_expiry(&r->seed);
	int due = 0;

	while (due < r->m.n && r->m.v[due]->node.expiry <= now)
		due++;
	r->nfired = 0;
	assert_int_equal(tq_collect_expired(&r->q, now, record_fire, r), due);
	assert_int_equal(r->nfired, due);
	for (int i = 0; i < due; i++)
		assert_int_equal(r->fired[i], r->m.v[i]->id);
	for (int i = 0; i < due; i++)
		model_remove_at(&r->m, 0);
}

static void check_agrees(const struct diff_run *r)
{
	check_heap(&r->q);
	assert_int_equal(tq_count(&r->q), r->m.n);
	assert_ptr_equal(timer_of(tq_peek(&r->q)), r->m.n ? r->m.v[0] : NULL);
}

/*
 * Runs OPS random operations. The mix alternates every 25k ops between a filling phase and
 * a draining phase so the queue sweeps between small and most of the pool; every 20k ops the
 * queue is drained completely and its whole order compared with the model.
 */
static void test_random_differential(void **state)
{
	static struct diff_run r;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.seed = 0x1d1e1abull;
	tq_init(&r.q);
	init_timers(r.t, POOL);
	for (int op = 1; op <= OPS; op++) {
		/* Cumulative percentages: insert, pop, remove, peek; the rest collect. */
		static const unsigned mix[2][4] = {{70, 78, 92, 99}, {25, 55, 90, 97}};
		const unsigned *w = mix[(op / 25000) % 2];
		uint64_t x = rng_next(&r.seed);
		unsigned pick = (unsigned)(x % 100);
		struct timer *t = &r.t[(x >> 32) % POOL];

		if (pick < w[0])
			op_insert(&r, t);
		else if (pick < w[1])
			op_pop(&r);
		else if (pick < w[2])
			op_remove(&r, t);
		else if (pick < w[3])
			assert_ptr_equal(timer_of(tq_peek(&r.q)), r.m.n ? r.m.v[0] : NULL);
		else
			op_collect(&r);
		if (r.m.n > r.max_n)
			r.max_n = r.m.n;
		check_agrees(&r);
		if (op % 20000 == 0) {
			while (r.m.n > 0)
				op_pop(&r);
			op_pop(&r);
			check_agrees(&r);
		}
	}
	/* The filling phases must actually have stressed a large heap. */
	assert_true(r.max_n > POOL / 2);
	print_message("random differential: %d ops, max queue length %d\n", OPS, r.max_n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_zeroed_memory_is_valid),
	    cmocka_unit_test(test_single),
	    cmocka_unit_test(test_order_and_extremes),
	    cmocka_unit_test(test_fifo_tie_break),
	    cmocka_unit_test(test_remove_head_middle_last),
	    cmocka_unit_test(test_reinsert_after_removal),
	    cmocka_unit_test(test_rejected_calls),
	    cmocka_unit_test(test_collect_expired),
	    cmocka_unit_test(test_collect_cancel_and_rearm),
	    cmocka_unit_test(test_monotonic_inputs),
	    cmocka_unit_test(test_random_differential),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
