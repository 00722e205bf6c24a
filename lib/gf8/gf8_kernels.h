/* SPDX-License-Identifier: MIT */
/*
 * GF(2^8) region kernels: the inner loops of Reed-Solomon (w = 8) and
 * RAID-6 coding, one implementation per SIMD level, all with the same
 * contract so tests can check each against the scalar one byte for byte.
 *
 * A dot kernel computes, for every output r < nout and every byte position
 * p in [off, off + len):
 *     out[r][p]  = XOR over i < k of  c[r][i] * in[i][p]     (accumulate 0)
 *     out[r][p] ^= XOR over i < k of  c[r][i] * in[i][p]     (accumulate 1)
 * where the coefficient c[r][i] is given in the two forms the kernels use
 * (built once per coefficient by gf8_table_init):
 *   - nib: 64 bytes, 64-byte aligned: bytes 0..31 hold c * x for x = 0..15
 *     twice (low-nibble table, already broadcast to both 128-bit lanes so the
 *     AVX2 loop needs no lane shuffle), bytes 32..63 hold c * (x << 4) for
 *     x = 0..15 twice (high-nibble table).
 *   - aff: the 8x8 bit matrix of "multiply by c" in GF2P8AFFINEQB form.
 * Outputs must not overlap inputs.  Kernels that process several outputs
 * walk all k inputs once per group of outputs (Data-Words-Guided order); the
 * caller (gf8_dot) slices long regions so a group's inputs stay in L1.
 *
 * The pq kernels compute RAID-6 syndromes: p = XOR d[i], q = sum 2^i d[i]
 * by Horner's rule with multiply-by-2 (Anvin).
 */
#ifndef EC_GF8_KERNELS_H
#define EC_GF8_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define GF8_NIB_BYTES 64

typedef struct gf8_row {
	const uint8_t *nib;  /* k tables of GF8_NIB_BYTES, one per input */
	const uint64_t *aff; /* k affine matrices, one per input */
} gf8_row;

typedef void gf8_dot_fn(size_t off, size_t len, int k, int nout,
                        const gf8_row *rows, const uint8_t *const *in,
                        uint8_t *const *out, int accumulate);

typedef void gf8_pq_fn(size_t off, size_t len, int k,
                       const uint8_t *const *d, uint8_t *p, uint8_t *q);

/* Regions from this length on are long enough that the GFNI kernel stores
 * its outputs with non-temporal stores, when they are 64-byte aligned. */
#define GF8_STREAM_MIN ((size_t)1 << 20)

/* An entry of the kernel table (see cpu.h: the name comes first). */
typedef struct gf8_kernel {
	const char *name;
	gf8_dot_fn *dot;
	gf8_pq_fn *pq;
	/* Outputs dot computes in one walk of the inputs: gf8_dot cuts a
	 * region into L1-sized slices only for more outputs than that. */
	int group;
	/* With at most split_out outputs (0: never) and more than 8 inputs,
	 * over regions shorter than split_below, when the streams crowd the
	 * same cache sets, gf8_dot runs the inputs in parts of at most
	 * split_per over L1-sized slices, each part after the first added to
	 * the outputs (gf8.c's dot_split). */
	int split_out, split_per;
	size_t split_below;
} gf8_kernel;

/* The most outputs any kernel splits for. */
#define GF8_SPLIT_OUT 6

/* Fills the nibble table (64 bytes) and affine matrix of coefficient c. */
void gf8_table_init(uint8_t c, uint8_t *nib, uint64_t *aff);
/* The GF2P8AFFINEQB matrix that multiplies a byte by c. */
uint64_t gf8_affine_matrix(uint8_t c);

/* The kernels of the SIMD level in force (see cpu.h). */
const gf8_kernel *gf8_kernel_current(void);
/* The kernels that run at one level (cpu.h's rule), NULL outside 0 ..
 * EC_SIMD_COUNT - 1. */
const gf8_kernel *gf8_kernel_for(int level);

/* Slices and groups a whole dot product over [0, len) with the current
 * kernel; the entry point the codes call. */
void gf8_dot(size_t len, int k, int nout, const gf8_row *rows,
             const uint8_t *const *in, uint8_t *const *out, int accumulate);

/* Per-level implementations. */
gf8_dot_fn gf8_dot_scalar, gf8_dot_ssse3, gf8_dot_avx2, gf8_dot_avx512,
	gf8_dot_gfni;
gf8_pq_fn gf8_pq_scalar, gf8_pq_ssse3, gf8_pq_avx2, gf8_pq_avx512;

#endif /* EC_GF8_KERNELS_H */
