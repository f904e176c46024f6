#include "lib/tsc_warp.h"

#define NSEC_PER_SEC 1000000000ull
#define HZ_LIMIT     (1ull << 34) /* (hz - 1) * NSEC_PER_SEC still fits in 64 bits */

void tsc_warp_init(struct tsc_warp *w)
{
	*w = (struct tsc_warp){.min_step = {UINT64_MAX, UINT64_MAX}};
}

/* Steps are read as signed, as tsc_delta reads differences: a TSC offset back past 0 (a
 * value near 2^64) is behind, not 2^64 ahead. */
void tsc_warp_note(struct tsc_warp *w, unsigned side, uint64_t now)
{
	bool first = w->readings[0] + w->readings[1] == 0;
	bool crossed = !first && w->last_side != side;
	uint64_t step = now - w->last;

	w->readings[side]++;
	if (crossed)
		w->crossings[side]++;
	if (!first && step > (uint64_t)INT64_MAX) {
		w->warps++;
		if (w->last - now > w->max_warp)
			w->max_warp = w->last - now;
	} else if (crossed && step < w->min_step[side]) {
		w->min_step[side] = step;
	}
	w->last = now;
	w->last_side = side;
}

bool tsc_warp_agree(const struct tsc_warp *w, uint64_t min_each)
{
	if (min_each == 0)
		min_each = 1;
	return w->warps == 0 && w->crossings[0] >= min_each && w->crossings[1] >= min_each;
}

uint64_t tsc_warp_resolution(const struct tsc_warp *w)
{
	return w->min_step[0] > w->min_step[1] ? w->min_step[0] : w->min_step[1];
}

uint64_t tsc_warp_ns(uint64_t cycles, uint64_t hz)
{
	uint64_t whole, rem;

	if (hz == 0 || hz > HZ_LIMIT)
		return UINT64_MAX;
	whole = cycles / hz;
	rem = cycles % hz;
	if (whole > UINT64_MAX / NSEC_PER_SEC - 1)
		return UINT64_MAX;
	return whole * NSEC_PER_SEC + (rem * NSEC_PER_SEC + hz - 1) / hz;
}
