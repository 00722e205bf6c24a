/* SPDX-License-Identifier: MIT */
/*
 * GF(2^8) region coding: per-coefficient tables, the portable scalar
 * kernels, the table of kernels per SIMD level, and gf8_dot(), which cuts a
 * long region into L1-sized slices so that every group of outputs re-reads
 * its inputs from L1 rather than memory (one pass over the data for all
 * outputs; Luo et al.'s Data-Words-Guided order).
 */
#include "gf8_kernels.h"

#include "cpu.h"
#include <stdint.h>
#include <string.h>

/* c * 2^j for j = 0..7: everything else is XORs of these. */
static void powers_times(uint8_t c, uint8_t cp[8])
{
	uint32_t x = c;

	for (int j = 0; j < 8; j++) {
		cp[j] = (uint8_t)x;
		x = (x << 1) ^ ((x & 0x80) ? 0x11d : 0);
	}
}

void gf8_table_init(uint8_t c, uint8_t *nib, uint64_t *aff)
{
	uint8_t cp[8];

	powers_times(c, cp);
	for (int x = 0; x < 16; x++) {
		uint8_t lo = 0, hi = 0;

		for (int j = 0; j < 4; j++) {
			if (x & (1 << j)) {
				lo ^= cp[j];
				hi ^= cp[j + 4];
			}
		}
		nib[x] = nib[16 + x] = lo;
		nib[32 + x] = nib[48 + x] = hi;
	}
	if (aff)
		*aff = gf8_affine_matrix(c);
}

uint64_t gf8_affine_matrix(uint8_t c)
{
	/* GF2P8AFFINEQB computes result bit i as the parity of
	 * (matrix byte 7 - i) AND x.  Bit i of c * x is the XOR over the set
	 * bits j of x of bit i of c * 2^j, so matrix byte 7 - i has bit j
	 * equal to bit i of c * 2^j. */
	uint8_t cp[8];
	uint64_t a = 0;

	powers_times(c, cp);
	for (int i = 0; i < 8; i++) {
		uint64_t row = 0;

		for (int j = 0; j < 8; j++)
			row |= (uint64_t)((cp[j] >> i) & 1) << j;
		a |= row << (8 * (7 - i));
	}
	return a;
}

void gf8_dot_scalar(size_t off, size_t len, int k, int nout,
                    const gf8_row *rows, const uint8_t *const *in,
                    uint8_t *const *out, int accumulate)
{
	for (int r = 0; r < nout; r++) {
		uint8_t *o = out[r] + off;

		for (int i = 0; i < k; i++) {
			const uint8_t *t = rows[r].nib + (size_t)i * GF8_NIB_BYTES;
			const uint8_t *s = in[i] + off;

			if (i == 0 && !accumulate) {
				for (size_t p = 0; p < len; p++)
					o[p] = t[s[p] & 15] ^ t[32 + (s[p] >> 4)];
			} else {
				for (size_t p = 0; p < len; p++)
					o[p] ^= t[s[p] & 15] ^ t[32 + (s[p] >> 4)];
			}
		}
	}
}

/* Multiplies each byte of a 64-bit word by 2 in GF(2^8). */
static uint64_t mul2_swar(uint64_t x)
{
	uint64_t hi = (x >> 7) & 0x0101010101010101ull;

	return ((x & 0x7f7f7f7f7f7f7f7full) << 1) ^ (hi * 0x1d);
}

void gf8_pq_scalar(size_t off, size_t len, int k, const uint8_t *const *d,
                   uint8_t *p, uint8_t *q)
{
	size_t pos = off, end = off + len;

	for (; pos + 8 <= end; pos += 8) {
		uint64_t pp, qq, x;

		memcpy(&pp, d[k - 1] + pos, 8);
		qq = pp;
		for (int i = k - 2; i >= 0; i--) {
			memcpy(&x, d[i] + pos, 8);
			pp ^= x;
			qq = mul2_swar(qq) ^ x;
		}
		memcpy(p + pos, &pp, 8);
		memcpy(q + pos, &qq, 8);
	}
	for (; pos < end; pos++) {
		uint8_t pp = d[k - 1][pos], qq = pp;

		for (int i = k - 2; i >= 0; i--) {
			pp ^= d[i][pos];
			qq = (uint8_t)((qq << 1) ^ ((qq & 0x80) ? 0x1d : 0)) ^ d[i][pos];
		}
		p[pos] = pp;
		q[pos] = qq;
	}
}

/* The split of gf8_dot, measured with the blocks placed as ecfs places
 * them: GFNI, halves of up to 7 inputs for one or two outputs below 1 MiB
 * (where it streams instead), [14,2] 4K 55 -> 79 GB/s; for more outputs
 * its unrolled walks (gf8_gfni.c's fixed) ran faster in one pass.  AVX2,
 * parts of up to 5 inputs for up to 6 outputs at every length: [14,2]
 * 27 -> 33 GB/s, [10,4] and [12,4] 11 -> 14 at 4K and 64K, [10,4] 1M
 * 11 -> 12, [10,6] 9-10 -> 11 at 4K and 64K (no change at 1M). */
#define GFNI_SPLIT 2, 7, GF8_STREAM_MIN
#define AVX2_SPLIT GF8_SPLIT_OUT, 5, SIZE_MAX
#define NO_SPLIT 0, 0, 0

static const gf8_kernel kernels[EC_SIMD_COUNT] = {
	[EC_SIMD_SCALAR] = { "scalar", gf8_dot_scalar, gf8_pq_scalar, 4, NO_SPLIT },
#if defined(__x86_64__) || defined(__i386__)
	[EC_SIMD_SSSE3] = { "ssse3", gf8_dot_ssse3, gf8_pq_ssse3, 4, NO_SPLIT },
	[EC_SIMD_AVX2] = { "avx2", gf8_dot_avx2, gf8_pq_avx2, 4, AVX2_SPLIT },
	[EC_SIMD_AVX512] = { "avx512", gf8_dot_avx512, gf8_pq_avx512, 8, NO_SPLIT },
	[EC_SIMD_GFNI] = { "gfni", gf8_dot_gfni, gf8_pq_avx512, 8, GFNI_SPLIT },
#endif
};

const gf8_kernel *gf8_kernel_for(int level)
{
	return EC_SIMD_ENTRY(kernels, level);
}

const gf8_kernel *gf8_kernel_current(void)
{
	return EC_SIMD_CURRENT(kernels);
}

/* Bytes of L1 we let one slice of inputs plus one output group occupy. */
#define GF8_SLICE_BUDGET (24 * 1024)
/* Columns of one slice of a split dot product. */
#define GF8_SPLIT_SLICE 4096

/*
 * Whether more than 8 of the streams (the k inputs, then the nout outputs)
 * fall within 1 KiB of each other modulo 1 << period_bits bytes.  Modulo
 * a page, they then fall on the same L1 sets at each step of a walk: the
 * blocks of an ecfs stripe (a strip apart, each page-aligned) do; blocks
 * allocated one by one, at scattered offsets in their pages, mostly do
 * not, and there the split cost 5-10%.
 */
static int crowded(int period_bits, int k, int nout, const uint8_t *const *in,
                   uint8_t *const *out)
{
	int n[128] = { 0 };
	int nb = 1 << (period_bits - 9);

	for (int i = 0; i < k; i++)
		n[((uintptr_t)in[i] >> 9) & (nb - 1)]++;
	for (int r = 0; r < nout; r++)
		n[((uintptr_t)out[r] >> 9) & (nb - 1)]++;
	for (int b = 0; b < nb; b++)
		if (n[b] + n[(b + 1) & (nb - 1)] > 8)
			return 1;
	return 0;
}

/*
 * Many inputs and few outputs, in parts: over each slice of
 * GF8_SPLIT_SLICE bytes, the first part of the inputs into the outputs,
 * then each further part added to them while they are still in L1.  When
 * the blocks are a strip apart and page-aligned, as ecfs places them, the
 * k + nout streams of one walk all fall on the same L1 sets (and L2 sets
 * for strips of 128 KiB and more), more lines than a set has ways; a part
 * of the inputs at a time fits.  The kernel table says for how many
 * outputs and with how many inputs a part (see gf8_kernel), as measured.
 */
static void dot_split(const gf8_kernel *kern, int per, size_t len, int k,
                      int nout, const gf8_row *rows, const uint8_t *const *in,
                      uint8_t *const *out, int accumulate)
{
	int parts = (k + per - 1) / per;

	for (size_t off = 0; off < len; off += GF8_SPLIT_SLICE) {
		size_t n = len - off < GF8_SPLIT_SLICE ? len - off : GF8_SPLIT_SLICE;

		for (int p = 0, i = 0; p < parts; p++) {
			int cnt = (k - i + (parts - p) - 1) / (parts - p);
			gf8_row sub[GF8_SPLIT_OUT];

			for (int r = 0; r < nout; r++) {
				sub[r].nib = rows[r].nib + (size_t)i * GF8_NIB_BYTES;
				sub[r].aff = rows[r].aff + i;
			}
			kern->dot(off, n, cnt, nout, sub, in + i, out, accumulate || p > 0);
			i += cnt;
		}
	}
}

void gf8_dot(size_t len, int k, int nout, const gf8_row *rows,
             const uint8_t *const *in, uint8_t *const *out, int accumulate)
{
	const gf8_kernel *kern = gf8_kernel_current();

	/* Not for 8 inputs or fewer: [8,2] in halves ran 10-20% slower. */
	if (k > 8 && len < kern->split_below) {
		int per = 0;

		if (nout <= kern->split_out && crowded(12, k, nout, in, out))
			per = kern->split_per;
		if (per) {
			dot_split(kern, per, len, k, nout, rows, in, out, accumulate);
			return;
		}
	}
	if (nout <= kern->group) {
		/* One group: a single pass, nothing to re-read. */
		kern->dot(0, len, k, nout, rows, in, out, accumulate);
		return;
	}
	size_t slice = GF8_SLICE_BUDGET / (size_t)(k + kern->group);

	slice = slice < 256 ? 256 : slice & ~(size_t)63;
	for (size_t off = 0; off < len; off += slice) {
		size_t n = len - off < slice ? len - off : slice;

		kern->dot(off, n, k, nout, rows, in, out, accumulate);
	}
}
