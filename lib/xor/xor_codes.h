/* SPDX-License-Identifier: MIT */
/*
 * The bit-matrix (XOR) code families for registry.c: Cauchy RS as bit
 * matrix (original and optimized), Liberation, Blaum-Roth, Liber8tion,
 * EVENODD, RDP and STAR.  They share one implementation (xor_codes.c) and
 * differ only in the matrix bitmatrix.c builds.
 */
#ifndef EC_XOR_CODES_H
#define EC_XOR_CODES_H

#include "families.h" /* declares the ec_family_* objects defined here */
#include "xor_kernels.h"

/* The order EC_ORDER_DEFAULT resolves to (chosen by measurement, see
 * docs/xor-codes.md). */
#define XOR_DEFAULT_ORDER EC_ORDER_PPG

/* For tests and the bench: the XOR count of the plain (no reuse) encode
 * schedule and the ones in the coding matrix of a code. */
long xor_code_plain_xor_count(const ec_code *code);
long xor_code_matrix_ones(const ec_code *code, int parity_block);
/* Tests: run every bit-matrix code with this kernel instead of the one
 * ec_simd_level() selects (NULL restores the normal choice).  This is how
 * the emulated AVX-512 kernel is exercised on CPUs without AVX-512. */
void xor_codes_force_kernel(xor_exec_fn fn);

/* XORs of the decoding schedule for an erasure list (sorted, every
 * erased block wanted), or a negative EC_E* code.  For the figures. */
long xor_code_decode_xor_count(const ec_code *code, const int *erased, int n_erased);

/* Distinct surviving packets the decoding schedule of an erasure list
 * reads, per group of w packets (tests, figures), or a negative EC_E*. */
long xor_code_decode_reads(const ec_code *code, const int *erased, int n_erased);

/* Number of decoding schedules in the cache (tests). */
int xor_code_cached_patterns(const ec_code *code);

#endif /* EC_XOR_CODES_H */
