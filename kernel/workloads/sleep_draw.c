#include "kernel/knobs/knobs.h"
#include "kernel/workloads/sleep_draw.h"

/* Exponential with the given mean, from a uniform draw, in integer arithmetic: the
 * inverse CDF -mean * ln(u), with -ln(k/64) tabulated in 1/1024 units (k = 0 capped at 8)
 * and interpolated linearly between entries. */
static uint64_t exp_draw(struct prng *rng, uint64_t mean)
{
	static const uint16_t neg_ln[65] = {
	    8192, 4259, 3549, 3134, 2839, 2611, 2424, 2266, 2129, 2009, 1901, 1803, 1714,
	    1632, 1556, 1486, 1420, 1357, 1299, 1244, 1191, 1141, 1093, 1048, 1004, 963,
	    922,  884,	847,  811,  776,  742,	710,  678,  648,  618,	589,  561,  534,
	    507,  481,	456,  431,  407,  384,	361,  338,  316,  295,	273,  253,  233,
	    213,  193,	174,  155,  137,  119,	101,  83,   66,	  49,	33,   16,   0,
	};
	uint64_t u = prng_next(rng) >> 40; /* 24 bits */
	unsigned k = (unsigned)(u >> 18), frac = (unsigned)(u & 0x3ffff);
	uint64_t lo = neg_ln[k], hi = k < 64 ? neg_ln[k + 1] : 0;
	uint64_t v = lo - ((lo - hi) * frac >> 18);

	return mean * v / 1024;
}

uint64_t sleep_draw(struct prng *rng, int dist, uint64_t mean, uint64_t spread)
{
	uint64_t lo = mean > spread ? mean - spread : 1;

	switch (dist) {
	case DIST_UNIFORM:
		return prng_range(rng, lo, mean + spread);
	case DIST_BIMODAL:
		return (prng_next(rng) & 1) ? mean + spread : lo;
	default:
		return exp_draw(rng, mean) + 1;
	}
}
