/* SPDX-License-Identifier: MIT */
/*
 * SSSE3 GF(2^8) region kernels: the AVX2 design (split 4-bit tables,
 * pshufb, up to four outputs in registers, one walk over the inputs per
 * group) at 128 bits, 32 bytes per step, for CPUs without AVX2.
 */
#if defined(__x86_64__) || defined(__i386__)
#include "gf8_kernels.h"

#include <immintrin.h>

#define SSSE3 __attribute__((target("ssse3")))
#define INLINE_SSSE3 __attribute__((target("ssse3"), always_inline)) static inline

INLINE_SSSE3 __m128i mul_nib(const uint8_t *t, __m128i lo, __m128i hi)
{
	return _mm_xor_si128(_mm_shuffle_epi8(_mm_load_si128((const __m128i *)t), lo),
	                     _mm_shuffle_epi8(_mm_load_si128((const __m128i *)(t + 32)), hi));
}

INLINE_SSSE3 void dot_group(size_t pos, size_t end, int k, const int n,
                            const gf8_row *rows, const uint8_t *const *in,
                            uint8_t *const *out, int accumulate)
{
	const __m128i mask = _mm_set1_epi8(0x0f);
	const uint8_t *tab[4];

	_Pragma("GCC unroll 8")
	for (int r = 0; r < n; r++)
		tab[r] = rows[r].nib;
	for (; pos + 32 <= end; pos += 32) {
		__m128i a0[4], a1[4];

		_Pragma("GCC unroll 8")
		for (int r = 0; r < n; r++)
			a0[r] = a1[r] = _mm_setzero_si128();
		for (int i = 0; i < k; i++) {
			const uint8_t *s = in[i] + pos;
			__m128i d0 = _mm_loadu_si128((const __m128i *)s);
			__m128i d1 = _mm_loadu_si128((const __m128i *)(s + 16));
			__m128i l0 = _mm_and_si128(d0, mask);
			__m128i l1 = _mm_and_si128(d1, mask);
			__m128i h0 = _mm_and_si128(_mm_srli_epi16(d0, 4), mask);
			__m128i h1 = _mm_and_si128(_mm_srli_epi16(d1, 4), mask);

			_Pragma("GCC unroll 8")
			for (int r = 0; r < n; r++) {
				const uint8_t *t = tab[r] + (size_t)i * GF8_NIB_BYTES;

				a0[r] = _mm_xor_si128(a0[r], mul_nib(t, l0, h0));
				a1[r] = _mm_xor_si128(a1[r], mul_nib(t, l1, h1));
			}
		}
		_Pragma("GCC unroll 8")
		for (int r = 0; r < n; r++) {
			__m128i *o = (__m128i *)(out[r] + pos);

			if (accumulate) {
				a0[r] = _mm_xor_si128(a0[r], _mm_loadu_si128(o));
				a1[r] = _mm_xor_si128(a1[r], _mm_loadu_si128(o + 1));
			}
			_mm_storeu_si128(o, a0[r]);
			_mm_storeu_si128(o + 1, a1[r]);
		}
	}
	if (pos < end)
		gf8_dot_scalar(pos, end - pos, k, n, rows, in, out, accumulate);
}

SSSE3 void gf8_dot_ssse3(size_t off, size_t len, int k, int nout,
                         const gf8_row *rows, const uint8_t *const *in,
                         uint8_t *const *out, int accumulate)
{
	size_t end = off + len;

	for (int g = 0; g < nout;) {
		int n = nout - g;

		if (n >= 4)
			dot_group(off, end, k, 4, rows + g, in, out + g, accumulate);
		else if (n == 3)
			dot_group(off, end, k, 3, rows + g, in, out + g, accumulate);
		else if (n == 2)
			dot_group(off, end, k, 2, rows + g, in, out + g, accumulate);
		else
			dot_group(off, end, k, 1, rows + g, in, out + g, accumulate);
		g += n >= 4 ? 4 : n;
	}
}

SSSE3 void gf8_pq_ssse3(size_t off, size_t len, int k, const uint8_t *const *d,
                        uint8_t *p, uint8_t *q)
{
	const __m128i poly = _mm_set1_epi8(0x1d);
	const __m128i zero = _mm_setzero_si128();
	size_t pos = off, end = off + len;

	for (; pos + 16 <= end; pos += 16) {
		__m128i pp = _mm_loadu_si128((const __m128i *)(d[k - 1] + pos));
		__m128i qq = pp;

		for (int i = k - 2; i >= 0; i--) {
			__m128i x = _mm_loadu_si128((const __m128i *)(d[i] + pos));
			__m128i top = _mm_cmpgt_epi8(zero, qq);

			pp = _mm_xor_si128(pp, x);
			qq = _mm_xor_si128(_mm_xor_si128(_mm_add_epi8(qq, qq),
			                                 _mm_and_si128(top, poly)), x);
		}
		_mm_storeu_si128((__m128i *)(p + pos), pp);
		_mm_storeu_si128((__m128i *)(q + pos), qq);
	}
	if (pos < end)
		gf8_pq_scalar(pos, end - pos, k, d, p, q);
}
#endif
