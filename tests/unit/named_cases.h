/*
 * Tables of named cases as cmocka tests: every row of a table whose first member is its name
 * (const char *name) becomes a test of its own, run with the row as its state, so cmocka
 * prints and fails each case by name. Include after <cmocka.h>.
 *
 *   struct named_tests t = {0};
 *   ADD_CASES(&t, rows, test_row);   // test_row(void **state): const struct row *r = *state
 *   ADD_TEST(&t, test_other);
 *   return RUN_NAMED_TESTS("group", &t);
 */
#ifndef IDLELAB_TESTS_NAMED_CASES_H
#define IDLELAB_TESTS_NAMED_CASES_H

#include <stddef.h>
#include <stdlib.h>

#define NAMED_TESTS_MAX 128

struct named_tests {
	struct CMUnitTest t[NAMED_TESTS_MAX];
	size_t n;
};

static void named_tests_add(struct named_tests *l, const char *name, CMUnitTestFunction fn,
			    const void *row)
{
	if (l->n == NAMED_TESTS_MAX) {
		print_error(
		    "more than NAMED_TESTS_MAX tests: raise it (tests/unit/named_cases.h)\n");
		exit(1);
	}
	l->t[l->n++] = (struct CMUnitTest){name, fn, NULL, NULL, (void *)row};
}

#define ADD_CASES(list, rows, fn)                                                                  \
	for (size_t i_ = 0; i_ < sizeof(rows) / sizeof((rows)[0]); i_++)                           \
	named_tests_add((list), (rows)[i_].name, (fn), &(rows)[i_])
#define ADD_TEST(list, fn) named_tests_add((list), #fn, (fn), NULL)
#define RUN_NAMED_TESTS(group, list)                                                               \
	_cmocka_run_group_tests((group), (list)->t, (list)->n, NULL, NULL)

#endif
