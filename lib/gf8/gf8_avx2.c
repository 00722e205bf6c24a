/* SPDX-License-Identifier: MIT */
/*
 * AVX2 GF(2^8) region kernels.
 *
 * Multiplication by a constant uses the split 4-bit tables and vpshufb.  The
 * tables are stored pre-broadcast to both 128-bit lanes (gf8_kernels.h), so
 * each (input, output) pair costs two plain loads and, per 32 bytes, two
 * vpshufb: no lane shuffles (ISA-L 2.30's AVX2 kernels spent two vperm2i128
 * per pair on that; 2.32.1 broadcasts from memory, as a load).  Each pass
 * walks all k inputs and keeps a group of outputs in registers: up to three
 * outputs 64 bytes (two ymm each) per step, so a table is loaded once per
 * 64 bytes, or exactly four outputs 32 bytes per step (see dot_group4x32).
 * m = 4 is thus one pass over the data, m = 6 two passes over an L1-sized
 * slice (gf8_dot); measured, these beat 2+2, 3+1, 4+2 and 2+2+2 passes.
 * With more than 8 inputs on blocks that crowd the same cache sets (ecfs's
 * stripes), gf8_dot instead runs up to 6 outputs over parts of at most 5
 * inputs (gf8.c's dot_split).
 *
 * The loop is bound by its loads as much as by the shuffles: on the AMD
 * Zen 4 measured (AVX2 forced), keeping each table in a register for both
 * of its uses (IN_REG) made m <= 3 10-15% faster, 1.1-1.2x ISA-L 2.32.1's
 * AVX2 kernel.  The kernels are instantiated for each number of inputs up
 * to FIXED_IN, so that the walk over the inputs is unrolled, every table
 * sits at a fixed offset and the input pointers stay in registers; on the
 * Zen 5 measured that took m = 4 from 18 to 22 GB/s at 4 KiB and [14,2] at
 * 64 KiB from 37 to 41, and it needs the accumulators pinned as well
 * (IN_REG): left free, the compiler sums each step's products as a tree
 * and spills most of them.
 */
#if defined(__x86_64__) || defined(__i386__)
#include "gf8_kernels.h"

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define INLINE_AVX2 __attribute__((target("avx2"), always_inline)) static inline

/* Keeps v in a register.  vpshufb takes only its index from memory, so a
 * table must be loaded into a register; left to itself the compiler loads
 * it again for its second use, and with two outputs the loads (two of
 * data and eight of tables per input and 64 bytes, against the six
 * needed) then bound the loop, not the shuffles. */
#define IN_REG(v) __asm__("" : "+x"(v))

/* The product of 64 input bytes (split into nibbles l0/h0, l1/h1) with
 * the coefficient whose broadcast tables are at t. */
#define MUL64(t, r0, r1)                                                      \
	do {                                                                   \
		__m256i tl_ = _mm256_load_si256((const __m256i *)(t));         \
		__m256i th_ = _mm256_load_si256((const __m256i *)(t) + 1);     \
		IN_REG(tl_);                                                   \
		IN_REG(th_);                                                   \
		r0 = _mm256_xor_si256(_mm256_shuffle_epi8(tl_, l0),            \
		                      _mm256_shuffle_epi8(th_, h0));           \
		r1 = _mm256_xor_si256(_mm256_shuffle_epi8(tl_, l1),            \
		                      _mm256_shuffle_epi8(th_, h1));           \
	} while (0)

/* Splits the 64 bytes at s into low (l0, l1) and high (h0, h1) nibbles. */
#define SPLIT64(s)                                                             \
	__m256i d0 = _mm256_loadu_si256((const __m256i *)(s));                 \
	__m256i d1 = _mm256_loadu_si256((const __m256i *)(s) + 1);             \
	__m256i l0 = _mm256_and_si256(d0, mask);                               \
	__m256i l1 = _mm256_and_si256(d1, mask);                               \
	__m256i h0 = _mm256_and_si256(_mm256_srli_epi16(d0, 4), mask);         \
	__m256i h1 = _mm256_and_si256(_mm256_srli_epi16(d1, 4), mask)

/* Each input is prefetched this far ahead of the loop: the hardware
 * prefetchers, which stop at page boundaries and follow only so many
 * streams, fell behind on strips of 1 MiB, where the loop then ran at
 * 0.5-0.9x of its speed in cache ([14,2] 20-29 -> 38 GB/s, [10,6] 11 -> 14
 * on the Zen 5 measured, AVX2 forced); from 1 to 2 KiB ahead did as well,
 * 4 KiB a little worse.  Past the end of an input it touches whatever
 * follows, which costs nothing measurable on 4 KiB strips. */
#define PREFETCH_AHEAD 2048
/* ... but only where the region reaches past this point (gf8_dot runs a
 * long region in slices, so a slice's end is all the kernel knows of it):
 * over shorter regions, which stay in L2, they cost 2-4% ([14,2] 64K
 * 39.5 -> 41 GB/s without them).  For two and four outputs (the grid's
 * m = 2 and the m = 4 pass) the kernel is instantiated with and without
 * them: a test of the flag in the loop cost as much at [6,2] 64K. */
#define PREFETCH_PAST ((size_t)128 << 10)
#define PREFETCH(p) _mm_prefetch((const char *)(p) + PREFETCH_AHEAD, _MM_HINT_T0)

/* Inputs one kernel call walks at most: the group kernels are
 * instantiated for each count up to this (see dot_inputs). */
#define FIXED_IN 16

/*
 * One group of n (1..3) outputs over k inputs, k and n compile-time
 * constants after inlining.  The input and output pointers live in local
 * variables, each used at the position: read from the caller's arrays
 * inside the loop instead, each one is reloaded after every store (a store
 * through a byte pointer may alias them).
 */
INLINE_AVX2 void dot_group(size_t pos, size_t end, const int k, const int n,
                           const gf8_row *rows, const uint8_t *const *in,
                           uint8_t *const *out, int accumulate, const int pf)
{
	const __m256i mask = _mm256_set1_epi8(0x0f);
	const uint8_t *src[FIXED_IN], *tab[3];
	uint8_t *dst[3];

	_Pragma("GCC unroll 16")
	for (int i = 0; i < k; i++)
		src[i] = in[i];
	_Pragma("GCC unroll 3")
	for (int r = 0; r < n; r++) {
		tab[r] = rows[r].nib;
		dst[r] = out[r];
	}
	for (; pos + 64 <= end; pos += 64) {
		__m256i a0[3], a1[3];

		{
			/* The first input sets the accumulators. */
			SPLIT64(src[0] + pos);
			if (pf)
				PREFETCH(src[0] + pos);
			_Pragma("GCC unroll 3")
			for (int r = 0; r < n; r++)
				MUL64(tab[r], a0[r], a1[r]);
		}
		_Pragma("GCC unroll 16")
		for (int i = 1; i < k; i++) {
			SPLIT64(src[i] + pos);
			if (pf)
				PREFETCH(src[i] + pos);
			_Pragma("GCC unroll 3")
			for (int r = 0; r < n; r++) {
				__m256i p0, p1;

				MUL64(tab[r] + (size_t)i * GF8_NIB_BYTES, p0, p1);
				a0[r] = _mm256_xor_si256(a0[r], p0);
				a1[r] = _mm256_xor_si256(a1[r], p1);
				IN_REG(a0[r]);
				IN_REG(a1[r]);
			}
		}
		_Pragma("GCC unroll 3")
		for (int r = 0; r < n; r++) {
			__m256i *o = (__m256i *)(dst[r] + pos);

			if (accumulate) {
				a0[r] = _mm256_xor_si256(a0[r], _mm256_loadu_si256(o));
				a1[r] = _mm256_xor_si256(a1[r], _mm256_loadu_si256(o + 1));
			}
			_mm256_storeu_si256(o, a0[r]);
			_mm256_storeu_si256(o + 1, a1[r]);
		}
	}
	if (pos < end)
		gf8_dot_scalar(pos, end - pos, k, n, rows, in, out, accumulate);
}

/* Four outputs, 32 bytes per step: with 64-byte steps the eight
 * accumulators, four nibble vectors, the mask and the tables need more than
 * the 16 ymm registers, and the spilled accumulator's store-to-load
 * round trip then limits the whole loop.  Pointers as in dot_group. */
INLINE_AVX2 void dot_group4x32(size_t pos, size_t end, const int k,
                               const gf8_row *rows, const uint8_t *const *in,
                               uint8_t *const *out, int accumulate, const int pf)
{
	const __m256i mask = _mm256_set1_epi8(0x0f);
	const uint8_t *t0 = rows[0].nib, *t1 = rows[1].nib;
	const uint8_t *t2 = rows[2].nib, *t3 = rows[3].nib;
	const uint8_t *src[FIXED_IN];
	uint8_t *d0 = out[0], *d1 = out[1], *d2 = out[2], *d3 = out[3];

	_Pragma("GCC unroll 16")
	for (int i = 0; i < k; i++)
		src[i] = in[i];
	for (; pos + 32 <= end; pos += 32) {
		__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;

		_Pragma("GCC unroll 16")
		for (int i = 0; i < k; i++) {
			__m256i d = _mm256_loadu_si256((const __m256i *)(src[i] + pos));
			__m256i l = _mm256_and_si256(d, mask);
			__m256i h = _mm256_and_si256(_mm256_srli_epi16(d, 4), mask);
			size_t o = (size_t)i * GF8_NIB_BYTES;
			if (pf && (pos & 32))
				PREFETCH(src[i] + pos);

#define ACC32(a, t)                                                             \
	a = _mm256_xor_si256(a, _mm256_xor_si256(                              \
		_mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)((t) + o)), l), \
		_mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)((t) + o + 32)), h))); \
	IN_REG(a)
			ACC32(a0, t0);
			ACC32(a1, t1);
			ACC32(a2, t2);
			ACC32(a3, t3);
#undef ACC32
		}
		__m256i *o0 = (__m256i *)(d0 + pos), *o1 = (__m256i *)(d1 + pos);
		__m256i *o2 = (__m256i *)(d2 + pos), *o3 = (__m256i *)(d3 + pos);

		if (accumulate) {
			a0 = _mm256_xor_si256(a0, _mm256_loadu_si256((const __m256i *)o0));
			a1 = _mm256_xor_si256(a1, _mm256_loadu_si256((const __m256i *)o1));
			a2 = _mm256_xor_si256(a2, _mm256_loadu_si256((const __m256i *)o2));
			a3 = _mm256_xor_si256(a3, _mm256_loadu_si256((const __m256i *)o3));
		}
		_mm256_storeu_si256(o0, a0);
		_mm256_storeu_si256(o1, a1);
		_mm256_storeu_si256(o2, a2);
		_mm256_storeu_si256(o3, a3);
	}
	if (pos < end)
		gf8_dot_scalar(pos, end - pos, k, 4, rows, in, out, accumulate);
}

/* One group of n (1..4) outputs over k (1..FIXED_IN) inputs: the kernel
 * instantiated for that count. */
#define ONE_K(K)                                                                \
	case K:                                                                \
		if (n == 4 && pf)                                              \
			dot_group4x32(off, end, K, rows, in, out, accumulate, 1); \
		else if (n == 4)                                               \
			dot_group4x32(off, end, K, rows, in, out, accumulate, 0); \
		else if (n == 3)                                               \
			dot_group(off, end, K, 3, rows, in, out, accumulate, pf); \
		else if (n == 2 && pf)                                         \
			dot_group(off, end, K, 2, rows, in, out, accumulate, 1); \
		else if (n == 2)                                               \
			dot_group(off, end, K, 2, rows, in, out, accumulate, 0); \
		else                                                           \
			dot_group(off, end, K, 1, rows, in, out, accumulate, pf); \
		break

AVX2 static void dot_inputs(size_t off, size_t end, int k, int n,
                            const gf8_row *rows, const uint8_t *const *in,
                            uint8_t *const *out, int accumulate, int pf)
{
	switch (k) {
	ONE_K(1); ONE_K(2); ONE_K(3); ONE_K(4);
	ONE_K(5); ONE_K(6); ONE_K(7); ONE_K(8);
	ONE_K(9); ONE_K(10); ONE_K(11); ONE_K(12);
	ONE_K(13); ONE_K(14); ONE_K(15); ONE_K(16);
	default:
		break;
	}
}
#undef ONE_K

/* Columns of one slice when more than FIXED_IN inputs go in parts. */
#define WIDE_SLICE 2048

/* One group over any number of inputs: up to FIXED_IN in one walk, more
 * in parts of FIXED_IN over slices that stay in L1, each part after the
 * first added to the outputs. */
AVX2 static void dot_any(size_t off, size_t end, int k, int n,
                         const gf8_row *rows, const uint8_t *const *in,
                         uint8_t *const *out, int accumulate, int pf)
{
	if (k <= FIXED_IN) {
		dot_inputs(off, end, k, n, rows, in, out, accumulate, pf);
		return;
	}
	for (size_t s = off; s < end; s += WIDE_SLICE) {
		size_t e = end - s < WIDE_SLICE ? end : s + WIDE_SLICE;

		for (int i = 0; i < k; i += FIXED_IN) {
			int cnt = k - i < FIXED_IN ? k - i : FIXED_IN;
			gf8_row sub[4];

			for (int r = 0; r < n; r++) {
				sub[r].nib = rows[r].nib + (size_t)i * GF8_NIB_BYTES;
				sub[r].aff = rows[r].aff ? rows[r].aff + i : NULL;
			}
			dot_inputs(s, e, cnt, n, sub, in + i, out, accumulate || i > 0, pf);
		}
	}
}

AVX2 void gf8_dot_avx2(size_t off, size_t len, int k, int nout,
                       const gf8_row *rows, const uint8_t *const *in,
                       uint8_t *const *out, int accumulate)
{
	size_t end = off + len;
	int pf = end > PREFETCH_PAST;

	/* Groups of 3, the last of 1 to 4 (m = 4 in one pass, m = 5 as 3 + 2,
	 * m = 6 as 3 + 3). */
	for (int g = 0; g < nout;) {
		int n = nout - g == 4 ? 4 : nout - g < 3 ? nout - g : 3;

		dot_any(off, end, k, n, rows + g, in, out + g, accumulate, pf);
		g += n;
	}
	_mm256_zeroupper();
}

/* Multiply every byte by 2: shift left, and where the top bit was set
 * (signed compare with zero) reduce by the field polynomial 0x1d. */
INLINE_AVX2 __m256i mul2(__m256i x, __m256i poly)
{
	__m256i top = _mm256_cmpgt_epi8(_mm256_setzero_si256(), x);

	return _mm256_xor_si256(_mm256_add_epi8(x, x), _mm256_and_si256(top, poly));
}

AVX2 void gf8_pq_avx2(size_t off, size_t len, int k, const uint8_t *const *d,
                      uint8_t *p, uint8_t *q)
{
	const __m256i poly = _mm256_set1_epi8(0x1d);
	size_t pos = off, end = off + len;

	for (; pos + 64 <= end; pos += 64) {
		__m256i p0 = _mm256_loadu_si256((const __m256i *)(d[k - 1] + pos));
		__m256i p1 = _mm256_loadu_si256((const __m256i *)(d[k - 1] + pos + 32));
		__m256i q0 = p0, q1 = p1;

		for (int i = k - 2; i >= 0; i--) {
			__m256i x0 = _mm256_loadu_si256((const __m256i *)(d[i] + pos));
			__m256i x1 = _mm256_loadu_si256((const __m256i *)(d[i] + pos + 32));

			p0 = _mm256_xor_si256(p0, x0);
			p1 = _mm256_xor_si256(p1, x1);
			q0 = _mm256_xor_si256(mul2(q0, poly), x0);
			q1 = _mm256_xor_si256(mul2(q1, poly), x1);
		}
		_mm256_storeu_si256((__m256i *)(p + pos), p0);
		_mm256_storeu_si256((__m256i *)(p + pos + 32), p1);
		_mm256_storeu_si256((__m256i *)(q + pos), q0);
		_mm256_storeu_si256((__m256i *)(q + pos + 32), q1);
	}
	_mm256_zeroupper();
	if (pos < end)
		gf8_pq_scalar(pos, end - pos, k, d, p, q);
}
#endif
