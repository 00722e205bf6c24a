/* SPDX-License-Identifier: MIT */
/*
 * Arithmetic in GF(2^w) for w = 8, 16 and 32, and dense matrices over it.
 *
 * Field polynomials (the same as ISA-L and Jerasure, so parity can be
 * compared byte for byte with them):
 *   w = 8:  x^8 + x^4 + x^3 + x^2 + 1          (0x11d)
 *   w = 16: x^16 + x^12 + x^3 + x + 1          (0x1100b)
 *   w = 32: x^32 + x^22 + x^2 + x + 1          (0x400007, x^32 implied)
 * Elements are uint32_t; only the low w bits are used.  The scalar
 * functions here are for building matrices and tables, not for data.
 * Other w (up to 32) are supported by gf_mul/gf_inv for the bit-matrix
 * codes, with the primitive polynomials of Jerasure's galois.c table
 * (documented in gf.c).
 */
#ifndef EC_GF_H
#define EC_GF_H

#include <stdint.h>

/* The link-level names carry an ec_ prefix: ISA-L exports gf_mul and gf_inv
 * with other signatures, and a program that links both (ecfs-bench) would
 * otherwise have ISA-L's internal calls bound to ours. */
#define gf_supported_w ec_gf_supported_w
#define gf_mul ec_gf_mul
#define gf_inv ec_gf_inv
#define gf_div ec_gf_div
#define gf_pow ec_gf_pow
#define gf_row_addmul ec_gf_row_addmul
#define gf_matrix_new ec_gf_matrix_new
#define gf_matrix_invert ec_gf_matrix_invert
#define gf_matrix_mul ec_gf_matrix_mul
#define gf_coding_matrix_vandermonde ec_gf_coding_matrix_vandermonde
#define gf_coding_matrix_cauchy ec_gf_coding_matrix_cauchy

/* 1 if w is a field size these functions support (1..32). */
int gf_supported_w(int w);
uint32_t gf_mul(int w, uint32_t a, uint32_t b);
uint32_t gf_inv(int w, uint32_t a);             /* a != 0 */
uint32_t gf_div(int w, uint32_t a, uint32_t b); /* b != 0 */
uint32_t gf_pow(int w, uint32_t a, uint32_t e);

/* dst[j] ^= f * src[j] for j < n: the inner step of matrix work, with the
 * log of f taken once (added to the contract for speed; pure addition). */
void gf_row_addmul(int w, uint32_t *dst, const uint32_t *src, uint32_t f,
                   int n);

/* Row-major rows x cols matrices of elements. */
uint32_t *gf_matrix_new(int rows, int cols);   /* zeroed, NULL on ENOMEM */
/* Inverts the n x n matrix a into inv; a is clobbered.  0 or EC_ESINGULAR. */
int gf_matrix_invert(int w, uint32_t *a, uint32_t *inv, int n);
/* c (r x n) = a (r x k) * b (k x n) */
void gf_matrix_mul(int w, const uint32_t *a, const uint32_t *b, uint32_t *c,
                   int r, int k, int n);

/* Generators: the m x k coding part of a systematic (k+m) x k generator
 * whose every k x k submatrix of [I; C] is invertible.  0 or EC_E*. */
int gf_coding_matrix_vandermonde(int w, int k, int m, uint32_t *c);
int gf_coding_matrix_cauchy(int w, int k, int m, uint32_t *c); /* c[i][j] = 1/((k+i) ^ j), as ISA-L's cauchy1 */

#endif /* EC_GF_H */
