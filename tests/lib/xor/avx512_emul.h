/* SPDX-License-Identifier: MIT */
/*
 * Plain-C model of the few AVX-512 intrinsics lib/xor/xor_kernel_avx512.c uses
 * (unaligned 512-bit load and store, XOR, zero, and vzeroupper), so that
 * the AVX-512 XOR kernel can be compiled a second time and checked against
 * the scalar kernel on a CPU without AVX-512.
 */
#ifndef XOR_AVX512_EMUL_H
#define XOR_AVX512_EMUL_H

#include <stdint.h>
#include <string.h>

typedef struct {
	uint64_t q[8];
} __m512i;

static inline __m512i _mm512_loadu_si512(const void *p)
{
	__m512i r;
	memcpy(r.q, p, sizeof(r.q));
	return r;
}

static inline void _mm512_storeu_si512(void *p, __m512i a)
{
	memcpy(p, a.q, sizeof(a.q));
}

static inline __m512i _mm512_xor_si512(__m512i a, __m512i b)
{
	for (int i = 0; i < 8; i++)
		a.q[i] ^= b.q[i];
	return a;
}

static inline __m512i _mm512_setzero_si512(void)
{
	__m512i r;
	memset(r.q, 0, sizeof(r.q));
	return r;
}

/* No vector state to clean in C. */
static inline void _mm256_zeroupper(void)
{
}

#endif /* XOR_AVX512_EMUL_H */
