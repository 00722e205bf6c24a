/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the libec unit tests: a seeded PRNG (so failures
 * reproduce), and an independent bit-by-bit GF(2^w) multiply, written
 * from the field definition rather than from lib/gf/gf.c, to serve as the
 * reference the library is checked against.
 */
#ifndef EC_TEST_UTIL_H
#define EC_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

static uint64_t test_rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t test_rand(void)
{
	/* xorshift64* */
	uint64_t x = test_rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	test_rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static inline uint32_t test_rand_below(uint32_t n)
{
	return (uint32_t)(test_rand() % n);
}

static inline void test_fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(test_rand() >> 24);
}

/* The field polynomials of gf.h, x^w term included (w = 32: x^32 implied). */
static inline uint64_t test_poly(int w)
{
	switch (w) {
	case 8: return 0x11d;
	case 16: return 0x1100b;
	default: return 0x100400007ull;
	}
}

/* Carry-less product, then reduction, one bit at a time. */
static inline uint32_t ref_mul(int w, uint32_t a, uint32_t b)
{
	uint64_t p = 0, poly = test_poly(w);

	for (int i = 0; i < w; i++)
		if ((b >> i) & 1)
			p ^= (uint64_t)a << i;
	for (int i = 2 * w - 2; i >= w; i--)
		if ((p >> i) & 1)
			p ^= poly << (i - w);
	return (uint32_t)p;
}

/* Inverse by exhaustive search for w = 8, by a^(2^w - 2) otherwise. */
static inline uint32_t ref_inv(int w, uint32_t a)
{
	uint32_t r = 1;
	uint64_t e = (w == 32 ? 0xffffffffull : ((1ull << w) - 1)) - 1;

	while (e) {
		if (e & 1)
			r = ref_mul(w, r, a);
		a = ref_mul(w, a, a);
		e >>= 1;
	}
	return r;
}

#endif /* EC_TEST_UTIL_H */
