/* SPDX-License-Identifier: MIT */
/*
 * AVX2 region multiply for GF(2^16) (words in host order, as gfw.h).
 *
 * A 16-bit product c * x is the XOR of four lookups, one per nibble of x,
 * each giving a 16-bit value: eight 16-entry byte tables (the low and high
 * result byte for each nibble position), so vpshufb can do them.  Each
 * 64-byte step of an input is first split into its 32 low bytes and 32 high
 * bytes (an in-lane byte shuffle and two qword unpacks), then every output
 * of the group accumulates its low and high result bytes separately; the
 * bytes are re-interleaved into words once per output at the end of the
 * step.  Coefficient tables: GFW16_NIB_OFFSET in each gfw table (gfw.c).
 */
#if defined(__x86_64__) || defined(__i386__)
#include "gfw.h"

#include <immintrin.h>

#define INLINE_AVX2 __attribute__((target("avx2"), always_inline)) static inline

/* Accumulates one input's 64-byte step (nibbles a0, a1 of the low bytes,
 * b0, b1 of the high bytes) times the coefficient with tables t. */
INLINE_AVX2 void mul_acc16(const uint8_t *t, __m256i a0, __m256i a1,
                           __m256i b0, __m256i b1, __m256i *lo, __m256i *hi)
{
	const __m256i *v = (const __m256i *)t;

	/* v[2j] / v[2j+1]: low / high result byte for nibble position j */
	*lo = _mm256_xor_si256(*lo, _mm256_xor_si256(
		_mm256_xor_si256(_mm256_shuffle_epi8(_mm256_load_si256(v + 0), a0),
		                 _mm256_shuffle_epi8(_mm256_load_si256(v + 2), a1)),
		_mm256_xor_si256(_mm256_shuffle_epi8(_mm256_load_si256(v + 4), b0),
		                 _mm256_shuffle_epi8(_mm256_load_si256(v + 6), b1))));
	*hi = _mm256_xor_si256(*hi, _mm256_xor_si256(
		_mm256_xor_si256(_mm256_shuffle_epi8(_mm256_load_si256(v + 1), a0),
		                 _mm256_shuffle_epi8(_mm256_load_si256(v + 3), a1)),
		_mm256_xor_si256(_mm256_shuffle_epi8(_mm256_load_si256(v + 5), b0),
		                 _mm256_shuffle_epi8(_mm256_load_si256(v + 7), b1))));
}

INLINE_AVX2 void group16(size_t pos, size_t end, int k, const int n,
                         const uint8_t *const *tabs, const uint8_t *const *in,
                         uint8_t *const *out, int accumulate)
{
	const __m256i mask = _mm256_set1_epi8(0x0f);
	/* Per 128-bit lane: even (low) bytes first, then odd (high) bytes. */
	const __m256i split = _mm256_setr_epi8(
		0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
		0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
	size_t tb = gfw_table_bytes(16);

	for (; pos + 64 <= end; pos += 64) {
		__m256i lo[3], hi[3];

		_Pragma("GCC unroll 4")
		for (int r = 0; r < n; r++)
			lo[r] = hi[r] = _mm256_setzero_si256();
		for (int i = 0; i < k; i++) {
			const uint8_t *s = in[i] + pos;
			__m256i d0 = _mm256_shuffle_epi8(
				_mm256_loadu_si256((const __m256i *)s), split);
			__m256i d1 = _mm256_shuffle_epi8(
				_mm256_loadu_si256((const __m256i *)(s + 32)), split);
			__m256i a = _mm256_unpacklo_epi64(d0, d1); /* low bytes */
			__m256i b = _mm256_unpackhi_epi64(d0, d1); /* high bytes */
			__m256i a0 = _mm256_and_si256(a, mask);
			__m256i a1 = _mm256_and_si256(_mm256_srli_epi16(a, 4), mask);
			__m256i b0 = _mm256_and_si256(b, mask);
			__m256i b1 = _mm256_and_si256(_mm256_srli_epi16(b, 4), mask);

			_Pragma("GCC unroll 4")
			for (int r = 0; r < n; r++)
				mul_acc16(tabs[r] + (size_t)i * tb + GFW16_NIB_OFFSET,
				          a0, a1, b0, b1, &lo[r], &hi[r]);
		}
		_Pragma("GCC unroll 4")
		for (int r = 0; r < n; r++) {
			/* Undo the split: lane by lane, the low qwords came from
			 * the first 32 bytes and the high qwords from the second. */
			__m256i w0 = _mm256_unpacklo_epi8(lo[r], hi[r]);
			__m256i w1 = _mm256_unpackhi_epi8(lo[r], hi[r]);
			__m256i *o = (__m256i *)(out[r] + pos);

			if (accumulate) {
				w0 = _mm256_xor_si256(w0, _mm256_loadu_si256(o));
				w1 = _mm256_xor_si256(w1, _mm256_loadu_si256(o + 1));
			}
			_mm256_storeu_si256(o, w0);
			_mm256_storeu_si256(o + 1, w1);
		}
	}
	if (pos < end)
		gfw_dot_scalar_at(16, pos, end - pos, k, n, tabs, in, out, accumulate);
}

__attribute__((target("avx2")))
void gfw16_dot_avx2(size_t off, size_t len, int k, int nout,
                    const uint8_t *const *tabs, const uint8_t *const *in,
                    uint8_t *const *out, int accumulate)
{
	size_t end = off + len;

	for (int g = 0; g < nout;) {
		int n = nout - g;

		if (n == 1)
			group16(off, end, k, 1, tabs + g, in, out + g, accumulate);
		else if (n == 2 || n == 4)
			group16(off, end, k, 2, tabs + g, in, out + g, accumulate);
		else
			group16(off, end, k, 3, tabs + g, in, out + g, accumulate);
		g += n == 1 ? 1 : (n == 2 || n == 4) ? 2 : 3;
	}
	_mm256_zeroupper();
}
#endif
