/*
 * Fixed-memory log-linear (HDR-style) histogram of u64 nanosecond samples. Recording is
 * O(1) and never allocates; per-CPU histograms are merged at report time.
 *
 * Buckets, with S = HIST_SUB_BITS and B = 2^S:
 *   values 0 .. 2B-1 have one bucket each (exact);
 *   for m = S+1 .. 63, the range [2^m, 2^(m+1)) is split into B equal buckets of width
 *   2^(m-S).
 * A bucket's width is at most 1/B of its lowest value, so any value in a bucket is within a
 * relative error of 2^-S (3.1% for S = 5) of any other value in the same bucket.
 *
 * sizeof(struct hist) = 48 + 4 * HIST_BUCKETS = 7728 bytes for S = 5.
 *
 * Not thread-safe: a histogram is owned by one CPU, or by the reporter after collection.
 */
#ifndef IDLELAB_LIB_HISTOGRAM_H
#define IDLELAB_LIB_HISTOGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HIST_SUB_BITS  5u
#define HIST_SUB_COUNT (1u << HIST_SUB_BITS)
/* The exact range [0, 2B) takes two groups of B, then one group per power of two above it. */
#define HIST_BUCKETS ((64u - HIST_SUB_BITS + 1u) * HIST_SUB_COUNT)

/* Percentiles are given in basis points: 1/10000ths of the population. */
#define HIST_P_MAX 10000u

/*
 * Invariants: count == sum of buckets[]; (sum_hi:sum_lo) is the exact 128-bit sum of the
 * recorded samples; min/max are exact when count > 0 and both 0 when it is 0, so all-zero
 * memory is a valid empty histogram. count stays below HIST_BUCKETS * 2^32 < 2^43, so the
 * 128-bit sum (< 2^107) cannot overflow.
 */
struct hist {
	uint64_t count;
	uint64_t min;
	uint64_t max;
	uint64_t sum_lo;
	uint64_t sum_hi;
	uint64_t dropped; /* samples refused because their bucket was full */
	uint32_t buckets[HIST_BUCKETS];
};

/* Empties h, dropped included. hist_init and hist_reset are the same operation. */
void hist_init(struct hist *h);
void hist_reset(struct hist *h);

/*
 * Records one sample. Returns false if the sample's bucket already holds UINT32_MAX samples:
 * the sample is then counted in dropped and affects nothing else, so every other statistic
 * describes exactly the samples that were recorded.
 */
bool hist_record(struct hist *h, uint64_t v);

/*
 * Adds src into dst, as if every sample recorded in src had been recorded in dst; dst's
 * dropped grows by src's (saturating). All or nothing: if any bucket would overflow, returns
 * false and leaves dst unchanged.
 */
bool hist_merge(struct hist *dst, const struct hist *src);

uint64_t hist_count(const struct hist *h);
uint64_t hist_dropped(const struct hist *h);
/* Exact smallest / largest recorded sample; 0 when empty. */
uint64_t hist_min(const struct hist *h);
uint64_t hist_max(const struct hist *h);
/* Exact sum of the recorded samples as a 128-bit number hi:lo. */
void hist_sum(const struct hist *h, uint64_t *hi, uint64_t *lo);
/* floor(sum / count), exact; 0 when empty. */
uint64_t hist_mean(const struct hist *h);

/*
 * Percentile p in basis points (5000 = p50, 9900 = p99, 9990 = p99.9, 10000 = max; p above
 * 10000 is treated as 10000). Let x be the exact nearest-rank percentile: the sample of rank
 * ceil(p * count / 10000) in sorted order, with rank 0 raised to 1. The result is the
 * highest value of x's bucket, clamped to max. Hence, exactly:
 *   x <= result <= hist_bucket_highest(hist_bucket_index(x)),
 * so result == x when x < 2 * HIST_SUB_COUNT, and otherwise 0 <= result - x < x / 2^S.
 * Special cases: p == 0 returns min exactly, p >= 10000 returns max exactly, and an empty
 * histogram returns 0.
 */
uint64_t hist_percentile(const struct hist *h, uint32_t p);

/*
 * Bucket mapping, exposed for tests and for dumping raw buckets in reports. Bucket idx holds
 * exactly the values lowest(idx) .. highest(idx); for idx >= HIST_BUCKETS both return
 * UINT64_MAX.
 */
unsigned hist_bucket_index(uint64_t v);
uint64_t hist_bucket_lowest(unsigned idx);
uint64_t hist_bucket_highest(unsigned idx);
/* Samples in bucket idx; 0 for idx >= HIST_BUCKETS. */
uint32_t hist_bucket_count(const struct hist *h, unsigned idx);

#endif
