#include "lib/tsc_delta.h"

/* a * b / c for a <= c and b < c, without a 128-bit division (the freestanding kernel links
 * no helper for one): all three are shifted down until c fits in 32 bits, which keeps 31
 * bits of precision, far finer than the offset being corrected. */
static uint64_t scale(uint64_t a, uint64_t b, uint64_t c)
{
	unsigned k = 0;

	while (c >> k >= (1ull << 32))
		k++;
	return ((a >> k) * (b >> k) / (c >> k)) << k;
}

void tsc_idle_clamp(uint64_t *poll, uint64_t *halt, uint64_t span)
{
	/* (counter differences that went below 0 wrapped like any other) */
	uint64_t p = tsc_delta(*poll, 0), h = tsc_delta(*halt, 0);

	if (p + h > span) {
		p = scale(p, span, p + h); /* <= span, as p <= p + h */
		h = span - p;
	}
	*poll = p;
	*halt = h;
}
