/*
 * Unit tests for kernel/histogram: the bucket mapping, exact statistics, merge, the overflow
 * policy, and a differential check of every percentile 0 .. 10000 against an exact
 * nearest-rank reference computed from the sorted samples.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/histogram.h"

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* --- bucket mapping --- */

static void check_value_maps_into_its_bucket(uint64_t v)
{
	unsigned idx = hist_bucket_index(v);

	assert_true(idx < HIST_BUCKETS);
	assert_true(hist_bucket_lowest(idx) <= v);
	assert_true(v <= hist_bucket_highest(idx));
	assert_int_equal(hist_bucket_index(hist_bucket_lowest(idx)), idx);
	assert_int_equal(hist_bucket_index(hist_bucket_highest(idx)), idx);
}

static void test_mapping_power_of_two_boundaries(void **state)
{
	(void)state;
	for (unsigned k = 0; k < 64; k++) {
		uint64_t p = UINT64_C(1) << k;

		check_value_maps_into_its_bucket(p - 1);
		check_value_maps_into_its_bucket(p);
		check_value_maps_into_its_bucket(p + 1);
		/* A power of two at or above 2B always starts a new bucket. */
		if (p >= 2 * HIST_SUB_COUNT) {
			assert_int_equal(hist_bucket_lowest(hist_bucket_index(p)), p);
			assert_int_equal(hist_bucket_highest(hist_bucket_index(p - 1)), p - 1);
		}
	}
	check_value_maps_into_its_bucket(UINT64_MAX);
	assert_int_equal(hist_bucket_index(UINT64_MAX), HIST_BUCKETS - 1);
	assert_int_equal(hist_bucket_highest(HIST_BUCKETS - 1), UINT64_MAX);
}

/* The buckets tile [0, 2^64) with no gap or overlap and respect the width bound. */
static void test_mapping_tiles_the_range(void **state)
{
	(void)state;
	assert_int_equal(hist_bucket_lowest(0), 0);
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		uint64_t lo = hist_bucket_lowest(i);
		uint64_t hi = hist_bucket_highest(i);

		assert_true(lo <= hi);
		if (i > 0)
			assert_int_equal(hist_bucket_highest(i - 1) + 1, lo);
		if (i < 2 * HIST_SUB_COUNT)
			assert_int_equal(hi, lo);
		else
			assert_true(hi - lo + 1 <= lo >> HIST_SUB_BITS);
		assert_int_equal(hist_bucket_index(lo), i);
		assert_int_equal(hist_bucket_index(hi), i);
		assert_int_equal(hist_bucket_index(lo + (hi - lo) / 2), i);
	}
	assert_int_equal(hist_bucket_lowest(HIST_BUCKETS), UINT64_MAX);
	assert_int_equal(hist_bucket_highest(HIST_BUCKETS), UINT64_MAX);
}

static void test_mapping_random_values(void **state)
{
	uint64_t seed = 7;

	(void)state;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = rng_next(&seed);

		/* Spread over all magnitudes, not just the top few octaves. */
		check_value_maps_into_its_bucket(v >> (v % 64));
	}
}

/* --- basic statistics --- */

static void test_empty(void **state)
{
	struct hist h;
	uint64_t hi;
	uint64_t lo;

	(void)state;
	memset(&h, 0, sizeof(h)); /* all-zero memory is a valid empty histogram */
	assert_int_equal(hist_count(&h), 0);
	assert_int_equal(hist_min(&h), 0);
	assert_int_equal(hist_max(&h), 0);
	assert_int_equal(hist_mean(&h), 0);
	hist_sum(&h, &hi, &lo);
	assert_int_equal(hi, 0);
	assert_int_equal(lo, 0);
	for (uint32_t p = 0; p <= HIST_P_MAX; p += 100)
		assert_int_equal(hist_percentile(&h, p), 0);
	assert_true(hist_record(&h, 9));
	assert_int_equal(hist_min(&h), 9);
}

static void test_exact_small_values(void **state)
{
	static struct hist h;

	(void)state;
	hist_init(&h);
	/* Below 2B every value has its own bucket, so every statistic is exact. */
	for (uint64_t v = 0; v < 2 * HIST_SUB_COUNT; v++) {
		assert_int_equal(hist_bucket_index(v), v);
		assert_true(hist_record(&h, v));
		assert_int_equal(hist_bucket_count(&h, (unsigned)v), 1);
	}
	assert_int_equal(hist_count(&h), 64);
	for (uint32_t k = 1; k <= 64; k++)
		assert_int_equal(hist_percentile(&h, k * HIST_P_MAX / 64), k - 1);
	assert_int_equal(hist_percentile(&h, 0), 0);
	assert_int_equal(hist_bucket_count(&h, HIST_BUCKETS), 0);
}

static void test_min_max_count_sum(void **state)
{
	static struct hist h;
	uint64_t hi;
	uint64_t lo;

	(void)state;
	hist_init(&h);
	assert_true(hist_record(&h, 1000));
	assert_true(hist_record(&h, 7));
	assert_true(hist_record(&h, 123456789));
	assert_int_equal(hist_count(&h), 3);
	assert_int_equal(hist_min(&h), 7);
	assert_int_equal(hist_max(&h), 123456789);
	hist_sum(&h, &hi, &lo);
	assert_int_equal(hi, 0);
	assert_int_equal(lo, 123457796);
	assert_int_equal(hist_mean(&h), 123457796 / 3);
	/* Zero as a sample must register as the minimum. */
	assert_true(hist_record(&h, 0));
	assert_int_equal(hist_min(&h), 0);
	assert_int_equal(hist_percentile(&h, 0), 0);
	assert_int_equal(hist_percentile(&h, HIST_P_MAX), 123456789);
	assert_int_equal(hist_percentile(&h, 20000), 123456789);
	hist_reset(&h);
	assert_int_equal(hist_count(&h), 0);
	assert_int_equal(hist_max(&h), 0);
}

/* The sum carries into the high word instead of wrapping. */
static void test_sum_is_128_bit(void **state)
{
	static struct hist h;
	uint64_t hi;
	uint64_t lo;

	(void)state;
	hist_init(&h);
	for (int i = 0; i < 3; i++)
		assert_true(hist_record(&h, UINT64_MAX));
	hist_sum(&h, &hi, &lo);
	assert_int_equal(hi, 2);
	assert_int_equal(lo, UINT64_MAX - 2);
	assert_int_equal(hist_mean(&h), UINT64_MAX);
	assert_true(hist_record(&h, 1));
	/* (3 * (2^64 - 1) + 1) / 4 = 3 * 2^62 - 1/2, floored. */
	assert_int_equal(hist_mean(&h), 3 * (UINT64_C(1) << 62) - 1);
	assert_int_equal(hist_percentile(&h, HIST_P_MAX), UINT64_MAX);
	assert_int_equal(hist_percentile(&h, 2500), 1);
}

/* Small hand-checked case of the nearest-rank definition. */
static void test_nearest_rank_definition(void **state)
{
	static struct hist h;

	(void)state;
	hist_init(&h);
	for (uint64_t v = 1; v <= 10; v++)
		assert_true(hist_record(&h, v));
	assert_int_equal(hist_percentile(&h, 1), 1);	/* rank ceil(0.001) = 1 */
	assert_int_equal(hist_percentile(&h, 1000), 1); /* rank 1 */
	assert_int_equal(hist_percentile(&h, 1001), 2); /* rank ceil(1.001) = 2 */
	assert_int_equal(hist_percentile(&h, 5000), 5);
	assert_int_equal(hist_percentile(&h, 9000), 9);
	assert_int_equal(hist_percentile(&h, 9900), 10);
}

/* A value at the top of a wide bucket is reported as the bucket's top, clamped to max. */
static void test_percentile_reports_bucket_top_clamped(void **state)
{
	static struct hist h;
	unsigned idx = hist_bucket_index(1000000);

	(void)state;
	hist_init(&h);
	assert_true(hist_record(&h, hist_bucket_lowest(idx)));
	assert_true(hist_record(&h, hist_bucket_lowest(idx) + 1));
	assert_int_equal(hist_percentile(&h, 5000), hist_bucket_lowest(idx) + 1);
	assert_true(hist_record(&h, 10000000));
	assert_int_equal(hist_percentile(&h, 5000), hist_bucket_highest(idx));
}

/* --- merge --- */

static void record_stream(struct hist *h, uint64_t seed, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t v = rng_next(&seed);

		assert_true(hist_record(h, v >> (v % 64)));
	}
}

static void test_merge_equals_recording_both(void **state)
{
	static struct hist a;
	static struct hist b;
	static struct hist both;
	static struct hist empty;

	(void)state;
	hist_init(&a);
	hist_init(&b);
	hist_init(&both);
	hist_init(&empty);
	record_stream(&a, 1, 5000);
	record_stream(&b, 2, 7000);
	record_stream(&both, 1, 5000);
	record_stream(&both, 2, 7000);
	assert_true(hist_merge(&a, &b));
	assert_memory_equal(&a, &both, sizeof(a));

	/* Merging an empty histogram is a no-op; merging into one is a copy. */
	assert_true(hist_merge(&a, &empty));
	assert_memory_equal(&a, &both, sizeof(a));
	assert_true(hist_merge(&empty, &both));
	assert_memory_equal(&empty, &both, sizeof(a));

	/* Into an empty histogram, whose stored min of 0 must not win. */
	hist_init(&a);
	hist_init(&b);
	assert_true(hist_record(&b, 500));
	assert_true(hist_record(&b, 70));
	assert_true(hist_merge(&a, &b));
	assert_memory_equal(&a, &b, sizeof(a));
	assert_int_equal(hist_min(&a), 70);
}

/* --- bucket overflow policy --- */

/* Fills v's bucket to `fill` samples directly, keeping every invariant of struct hist. */
static void prefill(struct hist *h, uint64_t v, uint32_t fill)
{
	hist_init(h);
	h->buckets[hist_bucket_index(v)] = fill;
	h->count = fill;
	h->min = v;
	h->max = v;
	/* fill * v as 128 bits, v < 2^32 here */
	h->sum_lo = (uint64_t)fill * v;
}

static void test_full_bucket_drops(void **state)
{
	static struct hist h;
	static struct hist before;

	(void)state;
	prefill(&h, 5, UINT32_MAX - 1);
	assert_true(hist_record(&h, 5));
	before = h;
	assert_false(hist_record(&h, 5));
	assert_int_equal(hist_dropped(&h), 1);
	h.dropped = 0;
	assert_memory_equal(&h, &before, sizeof(h));
	/* Other buckets are unaffected. */
	assert_true(hist_record(&h, 6));
	assert_int_equal(hist_count(&h), (uint64_t)UINT32_MAX + 1);
}

static void test_merge_overflow_is_all_or_nothing(void **state)
{
	static struct hist dst;
	static struct hist src;
	static struct hist before;

	(void)state;
	prefill(&dst, 40, UINT32_MAX - 1);
	hist_init(&src);
	assert_true(hist_record(&src, 3));  /* fits */
	assert_true(hist_record(&src, 40)); /* fits exactly */
	src.dropped = 4;
	assert_true(hist_merge(&dst, &src));
	assert_int_equal(hist_bucket_count(&dst, 40), UINT32_MAX);
	assert_int_equal(hist_dropped(&dst), 4);

	before = dst;
	assert_false(hist_merge(&dst, &src));
	assert_memory_equal(&dst, &before, sizeof(dst));
}

/* --- differential test against exact nearest-rank percentiles --- */

#define NSAMPLES 20000

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a;
	uint64_t y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t reference_percentile(const uint64_t *sorted, uint64_t n, uint32_t p)
{
	uint64_t rank = (n * p + HIST_P_MAX - 1) / HIST_P_MAX;

	if (p > HIST_P_MAX)
		rank = n;
	return sorted[rank ? rank - 1 : 0];
}

/* The documented bound: x <= r <= top of x's bucket, exact below 2B, else r - x < x / 2^S. */
static void check_percentile_bound(uint64_t x, uint64_t r)
{
	assert_true(r >= x);
	assert_true(r <= hist_bucket_highest(hist_bucket_index(x)));
	if (x < 2 * HIST_SUB_COUNT)
		assert_int_equal(r, x);
	else
		assert_true(r - x < (x >> HIST_SUB_BITS));
}

typedef uint64_t (*dist_fn)(uint64_t *seed);

static uint64_t dist_uniform(uint64_t *s)
{
	return rng_next(s) % 1000000;
}

static uint64_t dist_full_range(uint64_t *s)
{
	return rng_next(s);
}

static uint64_t dist_tiny(uint64_t *s)
{
	return rng_next(s) % 64;
}

/* Geometric octave (trailing zeros of a random word) times a uniform mantissa. */
static uint64_t dist_exponential(uint64_t *s)
{
	uint64_t r = rng_next(s);
	unsigned octave = r ? (unsigned)__builtin_ctzll(r) : 63;

	if (octave > 40)
		octave = 40;
	return (500 + rng_next(s) % 1000) << octave;
}

/* Poll hits around 2 us, halt wakeups around 5 ms. */
static uint64_t dist_bimodal(uint64_t *s)
{
	uint64_t r = rng_next(s);

	if (r % 10 < 9)
		return 1900 + (r >> 8) % 200;
	return 4000000 + (r >> 8) % 2000000;
}

static uint64_t dist_constant(uint64_t *s)
{
	(void)s;
	return 123456789;
}

static uint64_t dist_huge(uint64_t *s)
{
	uint64_t r = rng_next(s);

	if (r % 16 == 0)
		return UINT64_MAX - r % 4;
	return (UINT64_C(1) << 63) - (UINT64_C(1) << 40) + (r >> 20);
}

static void check_stats(const struct hist *h, const uint64_t *sorted, uint64_t n)
{
	uint64_t hi = 0;
	uint64_t lo = 0;
	uint64_t got_hi;
	uint64_t got_lo;

	for (uint64_t i = 0; i < n; i++) {
		lo += sorted[i];
		hi += lo < sorted[i];
	}
	hist_sum(h, &got_hi, &got_lo);
	assert_int_equal(got_hi, hi);
	assert_int_equal(got_lo, lo);
	assert_int_equal(hist_count(h), n);
	assert_int_equal(hist_min(h), sorted[0]);
	assert_int_equal(hist_max(h), sorted[n - 1]);
}

static void run_distribution(dist_fn dist, uint64_t seed)
{
	static const uint32_t named[] = {0, 100, 5000, 9000, 9900, 9990, 10000};
	static struct hist h;
	static uint64_t v[NSAMPLES];

	hist_init(&h);
	for (int i = 0; i < NSAMPLES; i++) {
		v[i] = dist(&seed);
		assert_true(hist_record(&h, v[i]));
	}
	qsort(v, NSAMPLES, sizeof(v[0]), cmp_u64);
	check_stats(&h, v, NSAMPLES);
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		check_percentile_bound(reference_percentile(v, NSAMPLES, named[i]),
				       hist_percentile(&h, named[i]));
	/* Every basis point, plus out-of-range p. */
	for (uint32_t p = 0; p <= HIST_P_MAX + 1; p++)
		check_percentile_bound(reference_percentile(v, NSAMPLES, p),
				       hist_percentile(&h, p));
	assert_int_equal(hist_percentile(&h, 0), v[0]);
	assert_int_equal(hist_percentile(&h, HIST_P_MAX), v[NSAMPLES - 1]);
}

static void test_differential_distributions(void **state)
{
	static const dist_fn dists[] = {dist_uniform, dist_full_range, dist_tiny, dist_exponential,
					dist_bimodal, dist_constant,   dist_huge};

	(void)state;
	for (size_t i = 0; i < sizeof(dists) / sizeof(dists[0]); i++)
		run_distribution(dists[i], 1000 + i);
}

/* Small populations stress the rank rounding (ceil, rank 0 -> 1). */
static void test_differential_small_counts(void **state)
{
	static struct hist h;
	uint64_t v[37];
	uint64_t seed = 99;

	(void)state;
	for (uint64_t n = 1; n <= 37; n++) {
		hist_init(&h);
		for (uint64_t i = 0; i < n; i++) {
			v[i] = dist_exponential(&seed);
			assert_true(hist_record(&h, v[i]));
		}
		qsort(v, n, sizeof(v[0]), cmp_u64);
		check_stats(&h, v, n);
		for (uint32_t p = 0; p <= HIST_P_MAX; p++)
			check_percentile_bound(reference_percentile(v, n, p),
					       hist_percentile(&h, p));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mapping_power_of_two_boundaries),
	    cmocka_unit_test(test_mapping_tiles_the_range),
	    cmocka_unit_test(test_mapping_random_values),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_exact_small_values),
	    cmocka_unit_test(test_min_max_count_sum),
	    cmocka_unit_test(test_sum_is_128_bit),
	    cmocka_unit_test(test_nearest_rank_definition),
	    cmocka_unit_test(test_percentile_reports_bucket_top_clamped),
	    cmocka_unit_test(test_merge_equals_recording_both),
	    cmocka_unit_test(test_full_bucket_drops),
	    cmocka_unit_test(test_merge_overflow_is_all_or_nothing),
	    cmocka_unit_test(test_differential_distributions),
	    cmocka_unit_test(test_differential_small_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
