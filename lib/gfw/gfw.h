/* SPDX-License-Identifier: MIT */
/*
 * GF(2^16) and GF(2^32) region coding for Reed-Solomon with w = 16 or 32.
 * Words are stored in blocks in host byte order (as Jerasure does).
 *
 * Each coefficient c gets split byte tables: for w = 16, T0[b] = c * b and
 * T1[b] = c * (b << 8) (1 KiB); for w = 32, Tj[b] = c * (b << 8j) for
 * j = 0..3 (4 KiB), so c * x is the XOR of one lookup per byte of x.
 */
#ifndef EC_GFW_H
#define EC_GFW_H

#include <stddef.h>
#include <stdint.h>

/* For w = 16 each coefficient's tables also hold, at this offset, the
 * eight 16-entry nibble tables of the AVX2 kernel (each pre-broadcast to
 * 32 bytes): for nibble position j = 0..3 of x, the low then the high byte
 * of c * (n << 4j). */
#define GFW16_NIB_OFFSET 1024

/* Bytes of one coefficient's tables (0 for an unsupported w). */
size_t gfw_table_bytes(int w);
void gfw_table_init(int w, uint32_t c, void *tab);

/* out[r] (=, or ^= if accumulate) XOR over i < k of c[r][i] * in[i], over
 * len bytes (a multiple of w / 8).  tabs[r] points to k consecutive tables,
 * one per input. */
void gfw_dot(int w, size_t len, int k, int nout, const uint8_t *const *tabs,
             const uint8_t *const *in, uint8_t *const *out, int accumulate);

/* The portable kernel over [off, off + len) (the reference of the tests). */
void gfw_dot_scalar_at(int w, size_t off, size_t len, int k, int nout,
                       const uint8_t *const *tabs, const uint8_t *const *in,
                       uint8_t *const *out, int accumulate);

/* The GF(2^16) kernels, one per SIMD level that has its own (GF(2^32) has
 * only the portable one), all with the contract of gfw_dot_scalar_at. */
typedef void gfw16_dot_fn(size_t off, size_t len, int k, int nout,
                          const uint8_t *const *tabs, const uint8_t *const *in,
                          uint8_t *const *out, int accumulate);
gfw16_dot_fn gfw16_dot_scalar, gfw16_dot_avx2;

/* An entry of the kernel table (see cpu.h: the name comes first). */
typedef struct gfw16_kernel {
	const char *name;
	gfw16_dot_fn *dot;
} gfw16_kernel;

/* The GF(2^16) kernel that runs at a level (cpu.h's rule), NULL outside
 * 0 .. EC_SIMD_COUNT - 1. */
const gfw16_kernel *gfw16_kernel_for(int level);

#endif /* EC_GFW_H */
