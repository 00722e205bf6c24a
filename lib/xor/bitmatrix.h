/* SPDX-License-Identifier: MIT */
/*
 * Matrices over GF(2) and the generator bit matrices of the XOR codes.
 *
 * A bit-matrix code with k data and m parity blocks of w packets each is
 * an (m*w) x (k*w) matrix B over GF(2): parity packet r of parity block i
 * is the XOR of data packet c of data block j for every one at row i*w+r,
 * column j*w+c.  This module builds B for each family of ec.h (Cauchy
 * Reed-Solomon converted from GF(2^w), Liberation, Blaum-Roth, Liber8tion,
 * EVENODD, RDP, STAR), plus "helper" rows some codes compute once and share
 * (EVENODD's and STAR's adjusters S), and inverts survivor matrices for
 * decoding.  Rows are bitsets of 64-bit words.
 */
#ifndef EC_BITMATRIX_H
#define EC_BITMATRIX_H

#include "ec.h"

#include <stdint.h>

typedef struct bm {
	int rows;
	int cols;
	int words;      /* 64-bit words per row */
	uint64_t *bits; /* rows * words, zero padded */
} bm;

/* Allocates a zero rows x cols matrix (rows may be 0).  0 or EC_ENOMEM. */
int bm_init(bm *a, int rows, int cols);
void bm_free(bm *a);

static inline uint64_t *bm_row(const bm *a, int r)
{
	return a->bits + (size_t)r * (size_t)a->words;
}

static inline int bm_get(const bm *a, int r, int c)
{
	return (int)((bm_row(a, r)[c >> 6] >> (c & 63)) & 1u);
}

static inline void bm_flip(bm *a, int r, int c)
{
	bm_row(a, r)[c >> 6] ^= (uint64_t)1 << (c & 63);
}

static inline void bm_set(bm *a, int r, int c)
{
	bm_row(a, r)[c >> 6] |= (uint64_t)1 << (c & 63);
}

int bm_row_ones(const bm *a, int r);
/* Ones in rows [r0, r0+n). */
long bm_ones_rows(const bm *a, int r0, int n);

/* Inverts the square matrix a (left unchanged) into *inv (initialized
 * here).  0, EC_ESINGULAR or EC_ENOMEM. */
int bm_invert(const bm *a, bm *inv);

/* Writes the w x w bit matrix of multiplication by e in GF(2^w) at block
 * (row_block, col_block): column c holds the bits of e * x^c. */
void bm_put_gf_element(bm *a, int w, int row_block, int col_block, uint32_t e);
/* Ones in that w x w block. */
int bm_gf_element_ones(int w, uint32_t e);
/* Converts an m x k GF(2^w) matrix (row major) into *out, (m*w) x (k*w). */
int bm_from_gf_matrix(int w, const uint32_t *gfm, int m, int k, bm *out);

/* Checks the parameters of a bit-matrix code (kind, k, m, w, packet_size):
 * 0 or EC_EINVAL.  Needs k + m <= 64 so that erasure sets fit a mask. */
int bm_code_check(const ec_params *p);

/* Builds the coding matrix *coding ((m*w) x (k*w)) of a checked code and
 * *helpers (h x (k*w), possibly 0 rows): sums over data that the encoder
 * may compute once into scratch packets and reuse.  0 or EC_E*. */
int bm_code_build(const ec_params *p, bm *coding, bm *helpers);

/* The Liber8tion-style w = 8 table (see bitmatrix.c): exposed for tests. */
int bm_liber8tion_max_k(void);

#endif /* EC_BITMATRIX_H */
