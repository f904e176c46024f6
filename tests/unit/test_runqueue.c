/* The run queue against a reference array: FIFO order, removal anywhere, double queueing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "lib/runqueue.h"

#define N 64

static void check_order(const struct runqueue *q, struct rq_link *const *expect, size_t n)
{
	const struct rq_link *l = q->head, *prev = NULL;

	assert_int_equal(q->len, n);
	for (size_t i = 0; i < n; i++) {
		assert_ptr_equal(l, expect[i]);
		assert_ptr_equal(l->prev, prev);
		assert_true(l->queued);
		prev = l;
		l = l->next;
	}
	assert_null(l);
	assert_ptr_equal(q->tail, prev);
}

static void test_fifo(void **state)
{
	struct runqueue q = {0};
	struct rq_link links[3] = {0};

	(void)state;
	assert_null(rq_pop(&q));
	assert_true(rq_empty(&q));
	for (int i = 0; i < 3; i++)
		assert_true(rq_push(&q, &links[i]));
	for (int i = 0; i < 3; i++)
		assert_ptr_equal(rq_pop(&q), &links[i]);
	assert_true(rq_empty(&q));
	assert_null(q.head);
	assert_null(q.tail);
}

static void test_double_push_and_remove_unqueued_are_refused(void **state)
{
	struct runqueue q = {0}, other = {0};
	struct rq_link a = {0};

	(void)state;
	assert_true(rq_push(&q, &a));
	assert_false(rq_push(&q, &a));
	assert_false(rq_push(&other, &a));
	assert_int_equal(q.len, 1);
	assert_true(rq_remove(&q, &a));
	assert_false(rq_remove(&q, &a));
	assert_false(a.queued);
	assert_true(rq_push(&q, &a)); /* re-queueing after removal works */
}

static void test_random_against_reference(void **state)
{
	struct runqueue q = {0};
	struct rq_link links[N] = {0};
	struct rq_link *ref[N];
	size_t n = 0;

	(void)state;
	srand(12345);
	for (int step = 0; step < 200000; step++) {
		int op = rand() % 3;
		struct rq_link *l = &links[rand() % N];

		if (op == 0) {
			bool was = l->queued;

			assert_int_equal(rq_push(&q, l), !was);
			if (!was)
				ref[n++] = l;
		} else if (op == 1) {
			struct rq_link *got = rq_pop(&q);

			assert_ptr_equal(got, n ? ref[0] : NULL);
			if (n) {
				for (size_t i = 1; i < n; i++)
					ref[i - 1] = ref[i];
				n--;
			}
		} else {
			size_t at = n;

			for (size_t i = 0; i < n; i++)
				if (ref[i] == l)
					at = i;
			assert_int_equal(rq_remove(&q, l), at != n);
			if (at != n) {
				for (size_t i = at + 1; i < n; i++)
					ref[i - 1] = ref[i];
				n--;
			}
		}
		check_order(&q, ref, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fifo),
	    cmocka_unit_test(test_double_push_and_remove_unqueued_are_refused),
	    cmocka_unit_test(test_random_against_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
