/* SPDX-License-Identifier: MIT */
/*
 * The GFNI GF(2^8) dot kernel (AVX-512 + GF2P8AFFINEQB).
 *
 * One GF2P8AFFINEQB multiplies 64 bytes by a coefficient (its 8x8 bit
 * matrix, gf8_affine_matrix), one per (input, output, 64 bytes), and on the
 * AMD Zen 4 measured it issues one per cycle at 512 bits: that is the
 * bound, and everything else is kept out of its way:
 *   - the main loop uses whole unmasked vectors; only the last partial step
 *     uses masked loads and stores;
 *   - two inputs are taken at a time and their two products folded into an
 *     output's accumulator by one VPTERNLOGQ (a three-way XOR), so there is
 *     one XOR-class instruction per two products rather than one per
 *     product, and these compete less for the pipes the affine runs on;
 *   - each coefficient matrix is broadcast straight from memory (a load,
 *     no shuffle);
 *   - the outputs of a group (up to GFNI_GROUP: every m of the benchmark
 *     grid in one pass) stay in registers over one walk of the inputs, and
 *     a step covers 128 bytes (256 for one or two outputs), so the
 *     per-input work (pointer load, loop) is shared by more products.
 *     Measured on the grid, 128 bytes per step ran 2-15% faster than 64;
 *     with the blocks placed as ecfs places them, 256 bytes ran 2-10%
 *     faster than 128 for one or two outputs (a decode of one lost block:
 *     [6,2] 4K 127 -> 143 GB/s, [10,4] 1M 72 -> 78) and gained nothing
 *     for more.
 *   - regions of GF8_STREAM_MIN bytes and more (whose outputs do not fit
 *     in L2 anyway) store the outputs with non-temporal stores when they are
 *     64-byte aligned: no read for ownership of each output line, and the
 *     outputs do not evict the inputs still to be read.  Measured with
 *     blocks as ecfs places them (page-aligned, a strip apart, so that the
 *     k + m streams fall on the same cache sets), 1 MiB strips ran 10-35%
 *     faster at m = 4 and 6; at 256 and 512 KiB it made no difference, at
 *     64 KiB it cost 13-18%.
 *   - in those streamed regions each input is also prefetched 2 KiB
 *     ahead: the hardware prefetchers fell behind on a stripe's many
 *     streams, and on the Zen 5 measured 1 MiB strips ran 1.2-1.5x faster
 *     ([10,6] encode 35-40 -> 50-63 GB/s, [10,4] 45-54 -> 60-76; 1 and
 *     4 KiB ahead did no better).  On shorter regions, prefetching 256
 *     bytes to 1 KiB ahead made 64 KiB strips 2-20% slower (on the Zen 4
 *     measured), and is left out.
 *
 * Compiled a second time by the tests with EC_SIMD_EMULATE (see
 * gf8_avx512.c), as gf8_dot_gfni_emul.
 */
#if defined(__x86_64__) || defined(__i386__) || defined(EC_SIMD_EMULATE)
#include "gf8_kernels.h"

#ifdef EC_SIMD_EMULATE
#define KERNEL(name) name##_emul
#define TARGET_GFNI
#else
#include <immintrin.h>
#define KERNEL(name) name
#define TARGET_GFNI __attribute__((target("avx512f,avx512bw,gfni")))
#endif
#define INLINE_GFNI TARGET_GFNI __attribute__((always_inline)) static inline
/* Makes v opaque to the compiler, which would otherwise load a vector
 * again for each use rather than keep it in a register. */
#ifdef EC_SIMD_EMULATE
#define OPAQUE(v) ((void)0)
#else
#define OPAQUE(v) __asm__("" : "+v"(v))
#endif

#define GFNI_GROUP 8
#define GFNI_WIDE 4 /* vectors per step for one or two outputs */
/* The inputs and outputs the unrolled walk (see fixed) is instantiated
 * for at most: every shape of the benchmark grid.  The tests' emulated copy
 * and sanitized builds, which take minutes to compile all of them, hold
 * the smallest shapes (the same code with other constants). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GFNI_SANITIZED
#endif
#endif
#if defined(EC_SIMD_EMULATE) || defined(__SANITIZE_ADDRESS__) || defined(GFNI_SANITIZED)
#define FIXED_IN 3
#else
#define FIXED_IN 16
#endif
#define FIXED_OUT 6
#define WIDTH(n) ((n) <= 2 ? GFNI_WIDE : 2) /* vectors per step, n outputs */
/* Past the end of an input it touches whatever follows: a hint only. */
#define PREFETCH(p) _mm_prefetch((const char *)(p) + 2048, _MM_HINT_T0)
#define XOR3 0x96 /* VPTERNLOGQ truth table of a ^ b ^ c */

static inline __mmask64 tail_mask(size_t rem)
{
	return rem >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << rem) - 1);
}

/* 64 bytes of input i at pos: whole, or the low bytes of the mask. */
INLINE_GFNI __m512i load_in(const uint8_t *p, const int masked, __mmask64 km)
{
	__m512i v = masked ? _mm512_maskz_loadu_epi8(km, p)
	                   : _mm512_loadu_si512((const void *)p);

	OPAQUE(v);
	return v;
}

/* The product of 64 bytes with the coefficient whose matrix is at m. */
INLINE_GFNI __m512i mul(__m512i d, const uint64_t *m)
{
	return _mm512_gf2p8affine_epi64_epi8(d, _mm512_set1_epi64((long long)*m), 0);
}

/*
 * One step: n outputs (a constant after inlining) of W vectors of 64 bytes
 * at pos, over all k inputs.  masked: one vector, of the bytes of km.
 * nt: the outputs take non-temporal stores and the inputs are prefetched.
 */
INLINE_GFNI void step(size_t pos, int k, const int n, const int W,
                      const uint64_t *const *aff, const uint8_t *const *in,
                      uint8_t *const *out, int accumulate, const int masked,
                      __mmask64 km, const int nt)
{
	__m512i acc[GFNI_GROUP][GFNI_WIDE];
	int i;

	if (k & 1) {
		__m512i d[GFNI_WIDE];

		_Pragma("GCC unroll 4")
		for (int w = 0; w < W; w++) {
			d[w] = load_in(in[0] + pos + 64 * w, masked, km);
			if (nt)
				PREFETCH(in[0] + pos + 64 * w);
		}
		_Pragma("GCC unroll 8")
		for (int r = 0; r < n; r++)
			_Pragma("GCC unroll 4")
			for (int w = 0; w < W; w++)
				acc[r][w] = mul(d[w], aff[r]);
		i = 1;
	} else {
		__m512i d[GFNI_WIDE], e[GFNI_WIDE];

		_Pragma("GCC unroll 4")
		for (int w = 0; w < W; w++) {
			d[w] = load_in(in[0] + pos + 64 * w, masked, km);
			e[w] = load_in(in[1] + pos + 64 * w, masked, km);
			if (nt) {
				PREFETCH(in[0] + pos + 64 * w);
				PREFETCH(in[1] + pos + 64 * w);
			}
		}
		_Pragma("GCC unroll 8")
		for (int r = 0; r < n; r++)
			_Pragma("GCC unroll 4")
			for (int w = 0; w < W; w++)
				acc[r][w] = _mm512_xor_si512(mul(d[w], aff[r]),
				                             mul(e[w], aff[r] + 1));
		i = 2;
	}
	_Pragma("GCC unroll 8")
	for (; i < k; i += 2) {
		__m512i d[GFNI_WIDE], e[GFNI_WIDE];

		_Pragma("GCC unroll 4")
		for (int w = 0; w < W; w++) {
			d[w] = load_in(in[i] + pos + 64 * w, masked, km);
			e[w] = load_in(in[i + 1] + pos + 64 * w, masked, km);
			if (nt) {
				PREFETCH(in[i] + pos + 64 * w);
				PREFETCH(in[i + 1] + pos + 64 * w);
			}
		}
		_Pragma("GCC unroll 8")
		for (int r = 0; r < n; r++)
			_Pragma("GCC unroll 4")
			for (int w = 0; w < W; w++)
				acc[r][w] = _mm512_ternarylogic_epi64(acc[r][w],
					mul(d[w], aff[r] + i), mul(e[w], aff[r] + i + 1), XOR3);
	}
	_Pragma("GCC unroll 8")
	for (int r = 0; r < n; r++) {
		_Pragma("GCC unroll 4")
		for (int w = 0; w < W; w++) {
			uint8_t *o = out[r] + pos + 64 * w;

			if (masked) {
				if (accumulate)
					acc[r][w] = _mm512_xor_si512(acc[r][w],
						_mm512_maskz_loadu_epi8(km, o));
				_mm512_mask_storeu_epi8(o, km, acc[r][w]);
			} else {
				if (accumulate)
					acc[r][w] = _mm512_xor_si512(acc[r][w],
						_mm512_loadu_si512((const void *)o));
				if (nt)
					_mm512_stream_si512((void *)o, acc[r][w]);
				else
					_mm512_storeu_si512((void *)o, acc[r][w]);
			}
		}
	}
}

/* A group of n outputs over [pos, end): W-vector steps (with
 * non-temporal stores if nt), then 64-byte steps, then one masked step. */
INLINE_GFNI void group(size_t pos, size_t end, int k, const int n, const int W,
                       const gf8_row *rows, const uint8_t *const *in,
                       uint8_t *const *out, int accumulate, int nt)
{
	const uint64_t *aff[GFNI_GROUP];

	_Pragma("GCC unroll 8")
	for (int r = 0; r < n; r++)
		aff[r] = rows[r].aff;
	if (W > 1 && nt)
		for (; pos + 64 * W <= end; pos += 64 * W)
			step(pos, k, n, W, aff, in, out, accumulate, 0, 0, 1);
	if (W > 1)
		for (; pos + 64 * W <= end; pos += 64 * W)
			step(pos, k, n, W, aff, in, out, accumulate, 0, 0, 0);
	for (; pos + 64 <= end; pos += 64)
		step(pos, k, n, 1, aff, in, out, accumulate, 0, 0, 0);
	if (pos < end)
		step(pos, k, n, 1, aff, in, out, accumulate, 1, tail_mask(end - pos), 0);
}

/*
 * The W-vector steps of a group for k (1..FIXED_IN) and n (1..FIXED_OUT)
 * compile-time constants, each pair its own function: the walk over the
 * inputs unrolled, the input and output pointers in registers (read from
 * the caller's arrays, they are reloaded after every store, which may
 * alias them) and the matrices copied to the stack, where each is
 * broadcast from a fixed offset with no pointer to keep.  Returns where it
 * stopped; group() does the rest.  On the Zen 5 measured, the walk over a
 * run-time k ran a decode of [6,2] 64K, whose inputs come from two
 * allocations (data and parity), at 100 GB/s whenever the inputs differed
 * in address bit 12 and at 165 when they did not; unrolled, at 150-165
 * either way.  Unrolled, the walk also runs [10,4] and [12,4] 64K faster
 * in one pass than in parts (gf8.c's dot_split: 93 against 81 GB/s).
 */
INLINE_GFNI size_t fixed(size_t pos, size_t end, const int k, const int n,
                         const gf8_row *rows, const uint8_t *const *in,
                         uint8_t *const *out, int accumulate, int nt)
{
	const int W = WIDTH(n);
	uint64_t mat[FIXED_OUT * FIXED_IN];
	const uint64_t *aff[FIXED_OUT];
	const uint8_t *src[FIXED_IN];
	uint8_t *dst[FIXED_OUT];

	_Pragma("GCC unroll 16")
	for (int i = 0; i < k; i++)
		src[i] = in[i];
	_Pragma("GCC unroll 8")
	for (int r = 0; r < n; r++) {
		_Pragma("GCC unroll 16")
		for (int i = 0; i < k; i++)
			mat[r * k + i] = rows[r].aff[i];
		aff[r] = mat + r * k;
		dst[r] = out[r];
	}
	/* The barrier makes each step broadcast its matrices again: hoisted
	 * out of the loop, they take more registers than there are, and the
	 * compiler's spills (whole vectors) cost more than the broadcasts. */
	if (nt)
		for (; pos + 64 * W <= end; pos += 64 * W) {
			__asm__ volatile("" ::: "memory");
			step(pos, k, n, W, aff, src, dst, accumulate, 0, 0, 1);
		}
	for (; pos + 64 * W <= end; pos += 64 * W) {
		__asm__ volatile("" ::: "memory");
		step(pos, k, n, W, aff, src, dst, accumulate, 0, 0, 0);
	}
	return pos;
}

typedef size_t fixed_fn(size_t pos, size_t end, const gf8_row *rows,
                        const uint8_t *const *in, uint8_t *const *out,
                        int accumulate, int nt);

#define FIXED_FN(K, N)                                                         \
	TARGET_GFNI __attribute__((noinline)) static size_t                    \
	fixed_##K##_##N(size_t pos, size_t end, const gf8_row *rows,           \
	                const uint8_t *const *in, uint8_t *const *out,         \
	                int accumulate, int nt)                                \
	{                                                                      \
		return fixed(pos, end, K, N, rows, in, out, accumulate, nt);   \
	}
#if FIXED_IN == 16
#define FIXED_ROW(N)                                                           \
	FIXED_FN(1, N) FIXED_FN(2, N) FIXED_FN(3, N) FIXED_FN(4, N)            \
	FIXED_FN(5, N) FIXED_FN(6, N) FIXED_FN(7, N) FIXED_FN(8, N)            \
	FIXED_FN(9, N) FIXED_FN(10, N) FIXED_FN(11, N) FIXED_FN(12, N)         \
	FIXED_FN(13, N) FIXED_FN(14, N) FIXED_FN(15, N) FIXED_FN(16, N)
#define FIXED_ENTRY(N)                                                         \
	{ fixed_1_##N, fixed_2_##N, fixed_3_##N, fixed_4_##N, fixed_5_##N,     \
	  fixed_6_##N, fixed_7_##N, fixed_8_##N, fixed_9_##N, fixed_10_##N,    \
	  fixed_11_##N, fixed_12_##N, fixed_13_##N, fixed_14_##N,              \
	  fixed_15_##N, fixed_16_##N }
#else
#define FIXED_ROW(N) FIXED_FN(1, N) FIXED_FN(2, N) FIXED_FN(3, N)
#define FIXED_ENTRY(N) { fixed_1_##N, fixed_2_##N, fixed_3_##N }
#endif
FIXED_ROW(1) FIXED_ROW(2) FIXED_ROW(3) FIXED_ROW(4) FIXED_ROW(5) FIXED_ROW(6)

/* fixed_fns[n - 1][k - 1] */
static fixed_fn *const fixed_fns[FIXED_OUT][FIXED_IN] = {
	FIXED_ENTRY(1), FIXED_ENTRY(2), FIXED_ENTRY(3),
	FIXED_ENTRY(4), FIXED_ENTRY(5), FIXED_ENTRY(6),
};
#undef FIXED_ENTRY
#undef FIXED_ROW
#undef FIXED_FN

/* One group of n (1..GFNI_GROUP) outputs: the fixed walk for up to
 * FIXED_IN inputs, then the rest of the region (or all of it, for more
 * inputs) by group(). */
TARGET_GFNI static void dot_group(size_t off, size_t end, int k, int n,
                                  const gf8_row *rows, const uint8_t *const *in,
                                  uint8_t *const *out, int accumulate, int nt)
{
	size_t pos = off;

	if (k <= FIXED_IN && n <= FIXED_OUT)
		pos = fixed_fns[n - 1][k - 1](off, end, rows, in, out, accumulate, nt);
	switch (n) {
	case 1: group(pos, end, k, 1, WIDTH(1), rows, in, out, accumulate, nt); break;
	case 2: group(pos, end, k, 2, WIDTH(2), rows, in, out, accumulate, nt); break;
	case 3: group(pos, end, k, 3, WIDTH(3), rows, in, out, accumulate, nt); break;
	case 4: group(pos, end, k, 4, WIDTH(4), rows, in, out, accumulate, nt); break;
	case 5: group(pos, end, k, 5, WIDTH(5), rows, in, out, accumulate, nt); break;
	case 6: group(pos, end, k, 6, WIDTH(6), rows, in, out, accumulate, nt); break;
	case 7: group(pos, end, k, 7, WIDTH(7), rows, in, out, accumulate, nt); break;
	default: group(pos, end, k, 8, WIDTH(8), rows, in, out, accumulate, nt); break;
	}
}

/* Whether the outputs of [off, off + len) take non-temporal stores: a long
 * region, written (not accumulated), every output 64-byte aligned there. */
static int streaming(size_t off, size_t len, int nout, uint8_t *const *out,
                     int accumulate)
{
	uintptr_t bits = 0;

	if (len < GF8_STREAM_MIN || accumulate)
		return 0;
	for (int r = 0; r < nout; r++)
		bits |= (uintptr_t)(out[r] + off);
	return (bits & 63) == 0;
}

TARGET_GFNI void KERNEL(gf8_dot_gfni)(size_t off, size_t len, int k, int nout,
                                      const gf8_row *rows,
                                      const uint8_t *const *in,
                                      uint8_t *const *out, int accumulate)
{
	size_t end = off + len;
	int nt = streaming(off, len, nout, out, accumulate);

	for (int g = 0; g < nout;) {
		int n = nout - g < GFNI_GROUP ? nout - g : GFNI_GROUP;
		const gf8_row *rg = rows + g;
		uint8_t *const *og = out + g;

		dot_group(off, end, k, n, rg, in, og, accumulate, nt);
		g += n;
	}
	if (nt)
		_mm_sfence(); /* the streamed stores ordered before any later store */
	_mm256_zeroupper();
}
#endif
