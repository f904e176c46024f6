/*
 * Log-linear histogram. Bucket idx = (group << S) | sub, where group 0 holds 0 .. B-1 and
 * group g >= 1 holds [2^(g+S-1), 2^(g+S)) split into B sub-buckets of width 2^(g-1).
 * Within group g >= 1 a value's top S+1 bits are 1 followed by its sub-bucket number, which
 * is what makes the mapping a shift and a mask.
 */
#include "lib/histogram.h"
#include "lib/string.h"

#define SUB_MASK (HIST_SUB_COUNT - 1u)

unsigned hist_bucket_index(uint64_t v)
{
	unsigned msb;
	unsigned shift;

	if (v < HIST_SUB_COUNT)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - HIST_SUB_BITS;
	return ((shift + 1u) << HIST_SUB_BITS) | ((unsigned)(v >> shift) & SUB_MASK);
}

uint64_t hist_bucket_lowest(unsigned idx)
{
	unsigned group = idx >> HIST_SUB_BITS;

	if (idx >= HIST_BUCKETS)
		return UINT64_MAX;
	if (group == 0)
		return idx;
	return (uint64_t)(HIST_SUB_COUNT + (idx & SUB_MASK)) << (group - 1u);
}

uint64_t hist_bucket_highest(unsigned idx)
{
	unsigned group = idx >> HIST_SUB_BITS;

	if (idx >= HIST_BUCKETS)
		return UINT64_MAX;
	if (group == 0)
		return idx;
	/* Adding width - 1 rather than width keeps the last bucket from wrapping past 2^64-1. */
	return hist_bucket_lowest(idx) + ((UINT64_C(1) << (group - 1u)) - 1u);
}

uint32_t hist_bucket_count(const struct hist *h, unsigned idx)
{
	return idx < HIST_BUCKETS ? h->buckets[idx] : 0;
}

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

void hist_reset(struct hist *h)
{
	hist_init(h);
}

static uint64_t add_saturating(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void add128(uint64_t *hi, uint64_t *lo, uint64_t add_hi, uint64_t add_lo)
{
	*lo += add_lo;
	*hi += add_hi + (*lo < add_lo);
}

bool hist_record(struct hist *h, uint64_t v)
{
	unsigned idx = hist_bucket_index(v);

	if (h->buckets[idx] == UINT32_MAX) {
		h->dropped = add_saturating(h->dropped, 1);
		return false;
	}
	h->buckets[idx]++;
	if (h->count == 0 || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	add128(&h->sum_hi, &h->sum_lo, 0, v);
	return true;
}

static bool merge_fits(const struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		if (src->buckets[i] > UINT32_MAX - dst->buckets[i])
			return false;
	return true;
}

bool hist_merge(struct hist *dst, const struct hist *src)
{
	if (!merge_fits(dst, src))
		return false;
	dst->dropped = add_saturating(dst->dropped, src->dropped);
	if (src->count == 0)
		return true;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	if (dst->count == 0 || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	add128(&dst->sum_hi, &dst->sum_lo, src->sum_hi, src->sum_lo);
	return true;
}

uint64_t hist_count(const struct hist *h)
{
	return h->count;
}

uint64_t hist_dropped(const struct hist *h)
{
	return h->dropped;
}

uint64_t hist_min(const struct hist *h)
{
	return h->min;
}

uint64_t hist_max(const struct hist *h)
{
	return h->max;
}

void hist_sum(const struct hist *h, uint64_t *hi, uint64_t *lo)
{
	*hi = h->sum_hi;
	*lo = h->sum_lo;
}

/*
 * floor((hi:lo) / d) by shift-and-subtract, avoiding a 128-bit division helper the freestanding
 * kernel does not link. Requires hi < d (the quotient fits in 64 bits) and d <= 2^63 (so the
 * shifted remainder fits in 64 bits). Invariant: rem < d at the top of every iteration.
 */
static uint64_t div128_64(uint64_t hi, uint64_t lo, uint64_t d)
{
	uint64_t rem = hi;
	uint64_t quot = 0;

	for (int bit = 63; bit >= 0; bit--) {
		rem = (rem << 1) | ((lo >> bit) & 1u);
		quot <<= 1;
		if (rem >= d) {
			rem -= d;
			quot |= 1u;
		}
	}
	return quot;
}

uint64_t hist_mean(const struct hist *h)
{
	/* sum <= count * max < count * 2^64, hence sum_hi < count; and count < 2^43. */
	if (h->count == 0)
		return 0;
	return div128_64(h->sum_hi, h->sum_lo, h->count);
}

/*
 * ceil(count * p / 10000) for p <= 10000, split as count = 10000 * q + r so that no product
 * overflows for any count. It is >= 1 whenever count and p are.
 */
static uint64_t nearest_rank(uint64_t count, uint32_t p)
{
	uint64_t whole = count / HIST_P_MAX * p;
	uint64_t part = count % HIST_P_MAX * p;

	return whole + (part + HIST_P_MAX - 1u) / HIST_P_MAX;
}

uint64_t hist_percentile(const struct hist *h, uint32_t p)
{
	uint64_t rank;
	uint64_t seen = 0;

	if (h->count == 0)
		return 0;
	if (p == 0)
		return h->min;
	if (p >= HIST_P_MAX)
		return h->max;
	rank = nearest_rank(h->count, p);
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t v = hist_bucket_highest(i);

			return v < h->max ? v : h->max;
		}
	}
	/* Unreachable while count == sum of buckets. */
	return h->max;
}
