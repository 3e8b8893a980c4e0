/* Seeded pseudo-random numbers, one generator per source (xoshiro256**, seeded through
 * splitmix64 from the system seed and the source's name), so that adding a source never shifts
 * the numbers another source draws. No wall-clock input. */
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <stdint.h>

struct sim_rng {
	uint64_t s[4]; /* xoshiro256** state */
};

void sim_rng_init(struct sim_rng *r, uint64_t seed, const char *source);
uint64_t sim_rng_next(struct sim_rng *r);
/* Uniform in [0, n) without modulo bias; n > 0. */
uint64_t sim_rng_below(struct sim_rng *r, uint64_t n);

#endif
