/* xoshiro256** (Blackman & Vigna) with splitmix64 seeding. */
#include "sim/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void sim_rng_init(struct sim_rng *r, uint64_t seed, const char *source)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the source name */

	for (const char *p = source ? source : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	h ^= seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&h);
}

uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
	uint64_t lim = -n % n, x;

	do
		x = sim_rng_next(r);
	while (x < lim);
	return x % n;
}
