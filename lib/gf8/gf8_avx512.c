/* SPDX-License-Identifier: MIT */
/*
 * AVX-512 (F + BW) GF(2^8) region kernels.
 *
 * The AVX-512 dot kernel is the AVX2 design at 512 bits: split 4-bit
 * tables broadcast from memory to all four lanes (a load, not a shuffle) and
 * vpshufb, up to eight outputs per group.  The GFNI kernel, which replaces
 * the two table lookups by one GF2P8AFFINEQB, is in gf8_gfni.c.  Tails use
 * masked loads and stores, so no byte outside a block is touched.
 *
 * This CPU family may be absent on the build machine, so the tests compile
 * this file and gf8_gfni.c a second time with EC_SIMD_EMULATE defined and a
 * plain C model of exactly the intrinsics used here injected by the build
 * (tests/lib); the functions then get an _emul suffix and run against the
 * scalar kernel.
 */
#if defined(__x86_64__) || defined(__i386__) || defined(EC_SIMD_EMULATE)
#include "gf8_kernels.h"

#ifdef EC_SIMD_EMULATE
#define KERNEL(name) name##_emul
#define TARGET_512
#else
#include <immintrin.h>
#define KERNEL(name) name
#define TARGET_512 __attribute__((target("avx512f,avx512bw")))
#endif

#define GROUP512 8

/* All-ones for a full vector, else the low `rem` bytes. */
static inline __mmask64 tail_mask(size_t rem)
{
	return rem >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << rem) - 1);
}

/* Stores (or XORs into) the outputs of one group. */
TARGET_512 __attribute__((always_inline)) static inline void
store_group(const int n, __m512i *acc, uint8_t *const *out, size_t pos,
            __mmask64 km, int accumulate)
{
	_Pragma("GCC unroll 8")
	for (int r = 0; r < n; r++) {
		if (accumulate)
			acc[r] = _mm512_xor_si512(acc[r],
				_mm512_maskz_loadu_epi8(km, out[r] + pos));
		_mm512_mask_storeu_epi8(out[r] + pos, km, acc[r]);
	}
}

TARGET_512 __attribute__((always_inline)) static inline void
dot_group512(size_t pos, size_t end, int k, const int n, const gf8_row *rows,
             const uint8_t *const *in, uint8_t *const *out, int accumulate)
{
	const __m512i mask = _mm512_set1_epi8(0x0f);

	for (; pos < end; pos += 64) {
		__mmask64 km = tail_mask(end - pos);
		__m512i acc[GROUP512];

		_Pragma("GCC unroll 8")
		for (int r = 0; r < n; r++)
			acc[r] = _mm512_setzero_si512();
		for (int i = 0; i < k; i++) {
			__m512i d = _mm512_maskz_loadu_epi8(km, in[i] + pos);
			__m512i lo = _mm512_and_si512(d, mask);
			__m512i hi = _mm512_and_si512(_mm512_srli_epi16(d, 4), mask);

			_Pragma("GCC unroll 8")
			for (int r = 0; r < n; r++) {
				const uint8_t *t = rows[r].nib + (size_t)i * GF8_NIB_BYTES;
				__m512i tl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t));
				__m512i th = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(t + 32)));

				acc[r] = _mm512_xor_si512(acc[r], _mm512_xor_si512(
					_mm512_shuffle_epi8(tl, lo), _mm512_shuffle_epi8(th, hi)));
			}
		}
		store_group(n, acc, out, pos, km, accumulate);
	}
}

/* Calls GROUP(pos, end, k, n, ...) with n a constant, for groups of up to
 * GROUP512 outputs, so every accumulator array is kept in registers. */
#define DISPATCH_GROUPS(GROUP)                                                 \
	for (int g = 0; g < nout;) {                                           \
		int n = nout - g < GROUP512 ? nout - g : GROUP512;             \
		const gf8_row *rg = rows + g;                                  \
		uint8_t *const *og = out + g;                                  \
		switch (n) {                                                   \
		case 1: GROUP(off, off + len, k, 1, rg, in, og, accumulate); break; \
		case 2: GROUP(off, off + len, k, 2, rg, in, og, accumulate); break; \
		case 3: GROUP(off, off + len, k, 3, rg, in, og, accumulate); break; \
		case 4: GROUP(off, off + len, k, 4, rg, in, og, accumulate); break; \
		case 5: GROUP(off, off + len, k, 5, rg, in, og, accumulate); break; \
		case 6: GROUP(off, off + len, k, 6, rg, in, og, accumulate); break; \
		case 7: GROUP(off, off + len, k, 7, rg, in, og, accumulate); break; \
		default: GROUP(off, off + len, k, 8, rg, in, og, accumulate); break; \
		}                                                              \
		g += n;                                                        \
	}                                                                      \
	_mm256_zeroupper()

TARGET_512 void KERNEL(gf8_dot_avx512)(size_t off, size_t len, int k, int nout,
                                       const gf8_row *rows,
                                       const uint8_t *const *in,
                                       uint8_t *const *out, int accumulate)
{
	DISPATCH_GROUPS(dot_group512);
}

TARGET_512 void KERNEL(gf8_pq_avx512)(size_t off, size_t len, int k,
                                      const uint8_t *const *d, uint8_t *p,
                                      uint8_t *q)
{
	const __m512i poly = _mm512_set1_epi8(0x1d);
	size_t end = off + len;

	for (size_t pos = off; pos < end; pos += 64) {
		__mmask64 km = tail_mask(end - pos);
		__m512i pp = _mm512_maskz_loadu_epi8(km, d[k - 1] + pos);
		__m512i qq = pp;

		for (int i = k - 2; i >= 0; i--) {
			__m512i x = _mm512_maskz_loadu_epi8(km, d[i] + pos);
			/* times 2: shift left, reduce the bytes whose top bit was set */
			__mmask64 top = _mm512_movepi8_mask(qq);

			pp = _mm512_xor_si512(pp, x);
			qq = _mm512_xor_si512(_mm512_add_epi8(qq, qq),
			                      _mm512_maskz_mov_epi8(top, poly));
			qq = _mm512_xor_si512(qq, x);
		}
		_mm512_mask_storeu_epi8(p + pos, km, pp);
		_mm512_mask_storeu_epi8(q + pos, km, qq);
	}
	_mm256_zeroupper();
}
#endif
