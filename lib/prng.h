/* A small seeded PRNG (xorshift64*) so runs with the same `seed=` repeat exactly. */
#ifndef IDLELAB_LIB_PRNG_H
#define IDLELAB_LIB_PRNG_H

#include <stdint.h>

struct prng {
	uint64_t s;
};

static inline void prng_seed(struct prng *p, uint64_t seed)
{
	/* splitmix64 step: any seed, including 0, gives a non-zero state */
	uint64_t z = seed + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	p->s = (z ^ (z >> 31)) | 1;
}

static inline uint64_t prng_next(struct prng *p)
{
	p->s ^= p->s >> 12;
	p->s ^= p->s << 25;
	p->s ^= p->s >> 27;
	return p->s * 0x2545f4914f6cdd1dull;
}

/* Uniform in [lo, hi]; the modulo bias is negligible for the ranges used here. */
static inline uint64_t prng_range(struct prng *p, uint64_t lo, uint64_t hi)
{
	return lo + prng_next(p) % (hi - lo + 1);
}

#endif
