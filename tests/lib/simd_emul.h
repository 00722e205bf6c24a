/* SPDX-License-Identifier: MIT */
/*
 * A plain C model of the AVX-512 intrinsics used by the AVX-512 kernels of
 * lib/ (lib/gf8/gf8_avx512.c: AVX-512, lib/gf8/gf8_gfni.c: GFNI,
 * lib/xor/xor_kernel_avx512.c: XOR), so that they can be compiled and
 * checked against the scalar kernels on a CPU without those instructions.  meson.build injects it (-include)
 * into the second, EC_SIMD_EMULATE build of those files.  Each function
 * follows the operation pseudocode of the Intel SDM / Intrinsics Guide;
 * masked loads and stores touch only the bytes whose mask bit is set (as the
 * hardware's fault suppression guarantees), so a kernel that relied on
 * reading past a block would misbehave here too (and under a sanitizer,
 * fail loudly).
 */
#ifndef EC_SIMD_EMUL_H
#define EC_SIMD_EMUL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bytes for the shuffles and masks, quadwords for the bitwise operations. */
typedef union { uint8_t b[64]; uint64_t q[8]; } __m512i;
typedef struct { uint8_t b[16]; } __m128i;
typedef uint64_t __mmask64;

static inline __m512i _mm512_setzero_si512(void)
{
	__m512i r;

	memset(&r, 0, sizeof(r));
	return r;
}

static inline __m512i _mm512_set1_epi8(char a)
{
	__m512i r;

	memset(r.b, (uint8_t)a, 64);
	return r;
}

static inline __m512i _mm512_set1_epi64(long long a)
{
	__m512i r;

	for (int q = 0; q < 8; q++)
		for (int b = 0; b < 8; b++)
			r.b[q * 8 + b] = (uint8_t)((unsigned long long)a >> (8 * b));
	return r;
}

static inline __m128i _mm_loadu_si128(const __m128i *p)
{
	__m128i r;

	memcpy(r.b, p, 16);
	return r;
}

static inline __m512i _mm512_broadcast_i32x4(__m128i a)
{
	__m512i r;

	for (int l = 0; l < 4; l++)
		memcpy(r.b + 16 * l, a.b, 16);
	return r;
}

static inline __m512i _mm512_loadu_si512(const void *p)
{
	__m512i r;

	memcpy(r.b, p, 64);
	return r;
}

static inline void _mm512_storeu_si512(void *p, __m512i a)
{
	memcpy(p, a.b, 64);
}

/* The non-temporal store: the real one faults on an address not 64-byte
 * aligned, and so does this one (an abort the tests would see). */
static inline void _mm512_stream_si512(void *p, __m512i a)
{
	if ((uintptr_t)p & 63)
		abort();
	memcpy(p, a.b, 64);
}

static inline void _mm_sfence(void)
{
}

/* A prefetch is a hint, and may name an address past the end of a block:
 * nothing to model. */
#define _MM_HINT_T0 3
static inline void _mm_prefetch(const char *p, int hint)
{
	(void)p;
	(void)hint;
}

static inline __m512i _mm512_maskz_loadu_epi8(__mmask64 k, const void *p)
{
	const uint8_t *s = p;
	__m512i r;

	for (int i = 0; i < 64; i++)
		r.b[i] = ((k >> i) & 1) ? s[i] : 0;
	return r;
}

static inline void _mm512_mask_storeu_epi8(void *p, __mmask64 k, __m512i a)
{
	uint8_t *d = p;

	for (int i = 0; i < 64; i++)
		if ((k >> i) & 1)
			d[i] = a.b[i];
}

static inline __m512i _mm512_and_si512(__m512i a, __m512i b)
{
	for (int i = 0; i < 8; i++)
		a.q[i] &= b.q[i];
	return a;
}

static inline __m512i _mm512_xor_si512(__m512i a, __m512i b)
{
	for (int i = 0; i < 8; i++)
		a.q[i] ^= b.q[i];
	return a;
}

static inline __m512i _mm512_add_epi8(__m512i a, __m512i b)
{
	for (int i = 0; i < 64; i++)
		a.b[i] = (uint8_t)(a.b[i] + b.b[i]);
	return a;
}

/* VPSRLW: each 16-bit element shifted right; counts above 15 give zero. */
static inline __m512i _mm512_srli_epi16(__m512i a, unsigned int imm)
{
	__m512i r;

	for (int i = 0; i < 32; i++) {
		uint16_t v = (uint16_t)(a.b[2 * i] | (a.b[2 * i + 1] << 8));

		v = imm > 15 ? 0 : (uint16_t)(v >> imm);
		r.b[2 * i] = (uint8_t)v;
		r.b[2 * i + 1] = (uint8_t)(v >> 8);
	}
	return r;
}

/* VPSHUFB: within each 128-bit lane, byte i = 0 if b[i] bit 7 is set, else
 * a[lane base + (b[i] & 15)]. */
static inline __m512i _mm512_shuffle_epi8(__m512i a, __m512i b)
{
	__m512i r;

	for (int i = 0; i < 64; i++)
		r.b[i] = (b.b[i] & 0x80) ? 0 : a.b[(i & ~15) + (b.b[i] & 15)];
	return r;
}

/* VPMOVB2M: mask bit i = most significant bit of byte i. */
static inline __mmask64 _mm512_movepi8_mask(__m512i a)
{
	__mmask64 k = 0;

	for (int i = 0; i < 64; i++)
		k |= (__mmask64)(a.b[i] >> 7) << i;
	return k;
}

/* VMOVDQU8 with zero masking. */
static inline __m512i _mm512_maskz_mov_epi8(__mmask64 k, __m512i a)
{
	for (int i = 0; i < 64; i++)
		if (!((k >> i) & 1))
			a.b[i] = 0;
	return a;
}

/* VPTERNLOGQ: each result bit is bit (a << 2 | b << 1 | c) of imm. */
static inline __m512i _mm512_ternarylogic_epi64(__m512i a, __m512i b, __m512i c, int imm)
{
	__m512i r;

	for (int i = 0; i < 64; i++) {
		uint8_t o = 0;

		for (int j = 0; j < 8; j++) {
			int idx = ((a.b[i] >> j) & 1) << 2 | ((b.b[i] >> j) & 1) << 1 |
			          ((c.b[i] >> j) & 1);

			o |= (uint8_t)(((imm >> idx) & 1) << j);
		}
		r.b[i] = o;
	}
	return r;
}

static inline uint8_t emul_parity8(uint8_t x)
{
	x ^= x >> 4;
	x ^= x >> 2;
	x ^= x >> 1;
	return x & 1;
}

/* GF2P8AFFINEQB: for each qword j and byte b of x, result bit i =
 * parity(A.qword[j].byte[7 - i] AND x.qword[j].byte[b]) XOR imm8 bit i. */
static inline __m512i _mm512_gf2p8affine_epi64_epi8(__m512i x, __m512i A, int imm)
{
	__m512i r;

	for (int j = 0; j < 8; j++) {
		for (int b = 0; b < 8; b++) {
			uint8_t v = x.b[8 * j + b], out = 0;

			for (int i = 0; i < 8; i++) {
				uint8_t bit = emul_parity8(A.b[8 * j + (7 - i)] & v) ^
				              (uint8_t)((imm >> i) & 1);

				out |= (uint8_t)(bit << i);
			}
			r.b[8 * j + b] = out;
		}
	}
	return r;
}

/* No vector state to clean in C. */
static inline void _mm256_zeroupper(void)
{
}

#endif /* EC_SIMD_EMUL_H */
