/*
 * lib/format.c, the kernel's own vsnprintf, against the C library's on every format the
 * header promises (%d %i %u %x %X %o %c %s %p %%, l/ll/z, '-', '0', width): every record the
 * host parses is printed by it, and host builds of shared code use glibc's instead, so only
 * this test sees the kernel's formatter at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* The kernel's formatter under other names, so glibc's stays available as the reference. */
#undef IDLELAB_HOST
#define vsnprintf kernel_vsnprintf
#define snprintf  kernel_snprintf
#include "lib/format.c"
#undef vsnprintf
#undef snprintf

#define BUF 256

/*
 * Wrappers without a format attribute, for the cases the compiler would rightly warn about
 * (a null %s, an unknown conversion, deliberate truncation): that is the behaviour under test.
 */
static int kernel_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kernel_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static int libc_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

/* Formats with both and compares text and return value; a mismatch names the format. */
#define SAME(fmt, ...)                                                                             \
	do {                                                                                       \
		char mine[BUF], ref[BUF];                                                          \
		int n_mine = kernel_snprintf(mine, sizeof(mine), fmt, __VA_ARGS__);                \
		int n_ref = snprintf(ref, sizeof(ref), fmt, __VA_ARGS__);                          \
		if (strcmp(mine, ref) != 0 || n_mine != n_ref)                                     \
			fail_msg("format \"%s\": kernel \"%s\" (%d), libc \"%s\" (%d)", fmt, mine, \
				 n_mine, ref, n_ref);                                              \
	} while (0)

static const int ints[] = {0, 1, -1, 7, -42, 1000000, INT32_MAX, INT32_MIN};
static const unsigned uints[] = {0, 1, 9, 10, 255, 4096, 0xdeadbeefu, UINT32_MAX};
static const long longs[] = {0, -1, 123456789012L, -123456789012L, INT64_MAX, INT64_MIN};
static const unsigned long ulongs[] = {0, 1, 0xffffffffUL, 0x123456789abcdefUL, UINT64_MAX};

static void test_int_conversions(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		int v = ints[i];

		SAME("%d", v);
		SAME("%i", v);
		SAME("[%5d]", v);
		SAME("[%-5d]", v);
		SAME("[%05d]", v);
		SAME("[%012d]", v);
		SAME("[%-12i|", v);
		SAME("[%1d]", v);
	}
	for (size_t i = 0; i < sizeof(uints) / sizeof(uints[0]); i++) {
		unsigned v = uints[i];

		SAME("%u %x %X %o", v, v, v, v);
		SAME("[%8u] [%08x] [%-8X] [%010o]", v, v, v, v);
		SAME("[%2x] [%04X]", v, v);
	}
}

static void test_long_and_size_conversions(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(longs) / sizeof(longs[0]); i++) {
		long v = longs[i];

		SAME("%ld", v);
		SAME("%lld", (long long)v);
		SAME("[%21ld] [%-21li] [%021ld]", v, v, v);
	}
	for (size_t i = 0; i < sizeof(ulongs) / sizeof(ulongs[0]); i++) {
		unsigned long v = ulongs[i];

		SAME("%lu %lx %lX %lo", v, v, v, v);
		SAME("%llu %llx", (unsigned long long)v, (unsigned long long)v);
		SAME("%zu %zx", (size_t)v, (size_t)v);
		SAME("[%016lx] [%04lx] [%-20lu]", v, v, v); /* the exception dump's formats */
	}
}

static void test_strings_chars_and_percent(void **state)
{
	(void)state;
	SAME("%s", "");
	SAME("%s=%s", "key", "value with spaces");
	SAME("[%10s] [%-10s] [%2s]", "abc", "abc", "abcdef");
	SAME("%c%c%c", 'a', ' ', '~');
	SAME("100%% of %s", "it");
	SAME("no conversion at all%s", "");
	{
		char mine[BUF], ref[BUF];

		kernel_fmt(mine, sizeof(mine), "%s", (const char *)NULL);
		libc_fmt(ref, sizeof(ref), "%s", (const char *)NULL);
		assert_string_equal(mine, ref); /* both print "(null)" */
	}
}

/* glibc prints a null pointer as "(nil)"; ours as 0x0. Every other pointer the same way. */
static void test_pointers(void **state)
{
	char mine[BUF];
	int x;

	(void)state;
	SAME("%p", (void *)&x);
	SAME("%p", (void *)0x1000);
	kernel_snprintf(mine, sizeof(mine), "%p", (void *)0);
	assert_string_equal(mine, "0x0");
}

/* Truncation: the output is cut and terminated, the return value is the full length. */
static void test_truncation_and_return_value(void **state)
{
	(void)state;
	for (size_t size = 0; size < 24; size++) {
		char mine[32], ref[32];
		int n_mine, n_ref;

		memset(mine, 'X', sizeof(mine));
		memset(ref, 'X', sizeof(ref));
		n_mine = kernel_fmt(mine, size, "cpu=%u hlt=%lu %s", 3u, 123456789UL, "end");
		n_ref = libc_fmt(ref, size, "cpu=%u hlt=%lu %s", 3u, 123456789UL, "end");
		assert_int_equal(n_mine, n_ref);
		assert_memory_equal(mine, ref, sizeof(mine)); /* nothing written past size */
	}
}

/* An unknown conversion is shown, not guessed at, and does not eat an argument. */
static void test_unknown_conversion_is_shown(void **state)
{
	char buf[BUF];

	(void)state;
	kernel_fmt(buf, sizeof(buf), "a%qb %d", 5);
	assert_string_equal(buf, "a%qb 5");
	kernel_fmt(buf, sizeof(buf), "trailing %");
	assert_string_equal(buf, "trailing %");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_int_conversions),
	    cmocka_unit_test(test_long_and_size_conversions),
	    cmocka_unit_test(test_strings_chars_and_percent),
	    cmocka_unit_test(test_pointers),
	    cmocka_unit_test(test_truncation_and_return_value),
	    cmocka_unit_test(test_unknown_conversion_is_shown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
