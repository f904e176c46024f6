/* Unit tests for kernel/spool.c: a batch's pointer line names exactly the bytes its lines
 * took (read back here at that address, as the host reads guest memory), batches follow one
 * another until a rewind, an empty batch prints nothing, and a full buffer ends the batch
 * and keeps the spool shut until the host has read it (the rewind). */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/spool.h"

struct pointer {
	const char *at;
	size_t bytes;
};

static struct pointer close_batch(void)
{
	char line[SPOOL_LINE_MAX];
	size_t n = spool_close(line);
	uintptr_t at = 0;
	uint64_t bytes = 0;
	int len = 0;

	if (!n)
		return (struct pointer){NULL, 0};
	assert_int_equal(sscanf(line, "@idlelab spool at=0x%" SCNxPTR " bytes=%" SCNu64 "\n%n", &at,
				&bytes, &len),
			 2);
	assert_int_equal((size_t)len, n);
	return (struct pointer){(const char *)at, (size_t)bytes};
}

static int fresh(void **state)
{
	(void)state;
	close_batch();
	spool_rewind();
	return 0;
}

static void nothing_is_taken_without_a_batch(void **state)
{
	(void)state;
	assert_false(spool_active());
	assert_false(spool_put("x\n", 2));
	assert_null(close_batch().at);
}

static void a_pointer_names_its_batch_bytes(void **state)
{
	const char *a = "@idlelab cpu id=0 hlt=3\n", *b = "@idlelab result ok=1\n";
	struct pointer p;

	(void)state;
	spool_open();
	assert_true(spool_active());
	assert_true(spool_put(a, strlen(a)));
	assert_true(spool_put(b, strlen(b)));
	p = close_batch();
	assert_false(spool_active());
	assert_int_equal(p.bytes, strlen(a) + strlen(b));
	assert_memory_equal(p.at, a, strlen(a));
	assert_memory_equal(p.at + strlen(a), b, strlen(b));
}

static void batches_follow_each_other_until_a_rewind(void **state)
{
	struct pointer p, q, r;

	(void)state;
	spool_open();
	spool_put("one\n", 4);
	p = close_batch();
	spool_open();
	spool_put("two\n", 4);
	q = close_batch();
	assert_ptr_equal(q.at, p.at + 4); /* the first is not overwritten: not yet read */
	assert_memory_equal(p.at, "one\n", 4);
	spool_rewind();
	spool_open();
	spool_put("six\n", 4);
	r = close_batch();
	assert_ptr_equal(r.at, p.at);
}

static void an_empty_batch_prints_no_pointer(void **state)
{
	(void)state;
	spool_open();
	assert_null(close_batch().at);
}

static void a_full_buffer_ends_the_batch_until_the_rewind(void **state)
{
	static char line[4096];
	size_t taken = 0;
	struct pointer p;

	(void)state;
	memset(line, 'r', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	spool_open();
	while (spool_put(line, sizeof(line)))
		taken += sizeof(line);
	assert_int_equal(taken, SPOOL_BYTES / sizeof(line) * sizeof(line));
	p = close_batch(); /* printk prints the pointer, then the line that did not fit */
	assert_int_equal(p.bytes, taken);
	spool_open(); /* full: the next batch stays on the console */
	assert_false(spool_active());
	assert_false(spool_put("x\n", 2));
	spool_rewind();
	spool_open();
	assert_true(spool_active());
	assert_true(spool_put("x\n", 2));
	assert_ptr_equal(close_batch().at, p.at);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(nothing_is_taken_without_a_batch, fresh),
	    cmocka_unit_test_setup(a_pointer_names_its_batch_bytes, fresh),
	    cmocka_unit_test_setup(batches_follow_each_other_until_a_rewind, fresh),
	    cmocka_unit_test_setup(an_empty_batch_prints_no_pointer, fresh),
	    cmocka_unit_test_setup(a_full_buffer_ends_the_batch_until_the_rewind, fresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
