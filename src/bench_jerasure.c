/* SPDX-License-Identifier: MIT */
/*
 * The Jerasure coder of ecfs-bench (built only when meson finds Jerasure
 * and gf-complete).  It encodes with jerasure_matrix_encode and a
 * reed_sol_vandermonde_coding_matrix: a dense [k,m] GF(2^w) generator, so
 * the same amount of arithmetic as any of ecfs's RS generators.  Decoding
 * is jerasure_matrix_decode, which by its API inverts the surviving
 * submatrix again on every call; that cost is part of what a Jerasure user
 * pays, so it is measured as is.
 */
#include "bench_coders.h"

#include <jerasure.h>
#include <limits.h>
#include <stdio.h>
#include <reed_sol.h>
#include <stdlib.h>

typedef struct jerasure_coder {
	bench_coder base;
	int k, m, w;
	int *matrix;       /* m x k, from Jerasure (malloc'd by it) */
	int *erasures;     /* cell->erased, -1 terminated as Jerasure wants */
	char **dec_data;   /* k: survivors, erased data -> cell->rebuilt */
	char **dec_coding; /* m: this coder's parity, erased parity -> cell->rebuilt */
} jerasure_coder;

static void jerasure_encode(void *self)
{
	jerasure_coder *c = self;
	bench_cell *cell = c->base.cell;

	jerasure_matrix_encode(c->k, c->m, c->w, c->matrix, (char **)cell->data,
	                       (char **)c->base.parity, (int)cell->len);
}

static void jerasure_decode(void *self)
{
	jerasure_coder *c = self;
	bench_cell *cell = c->base.cell;

	/* row_k_ones = 1: the first row of Jerasure's Vandermonde coding
	 * matrix is all ones, which lets it rebuild one data block by XOR. */
	if (jerasure_matrix_decode(c->k, c->m, c->w, c->matrix, 1, c->erasures, c->dec_data,
	                           c->dec_coding, (int)cell->len) != 0)
		c->base.failed = 1;
}

static void jerasure_destroy(bench_coder *base)
{
	jerasure_coder *c = (jerasure_coder *)base;

	free(c->matrix); /* allocated by Jerasure with malloc */
	free(c);
}

int bench_jerasure_new(bench_cell *cell, bench_coder **out, char *err, size_t errlen)
{
	int k = cell->k, m = cell->m, w = cell->ref_w;

	*out = NULL;
	if (!cell->ref_matrix || (w != 8 && w != 16 && w != 32)) {
		snprintf(err, errlen, "Jerasure's matrix coder runs GF(2^w) codes with w = 8, 16, 32");
		return 1;
	}
	if (cell->len > INT_MAX || cell->len % sizeof(long) != 0) {
		snprintf(err, errlen, "Jerasure needs a block size that is a multiple of %zu",
		         sizeof(long));
		return 1;
	}
	jerasure_coder *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->k = k;
	c->m = m;
	c->w = w;
	c->base.impl = "jerasure";
	snprintf(c->base.code, sizeof(c->base.code), "rs-vandermonde");
	c->base.w = w;
	c->base.cell = cell;
	c->base.encode = jerasure_encode;
	c->base.decode = jerasure_decode;
	c->base.destroy = jerasure_destroy;
	c->matrix = reed_sol_vandermonde_coding_matrix(k, m, w);
	c->base.parity = bench_cell_blocks(cell, m);
	c->erasures = bench_cell_calloc(cell, (size_t)cell->n_erased + 1, sizeof(int));
	c->dec_data = bench_cell_calloc(cell, (size_t)k, sizeof(char *));
	c->dec_coding = bench_cell_calloc(cell, (size_t)m, sizeof(char *));
	if (!c->matrix || !c->base.parity || !c->erasures || !c->dec_data || !c->dec_coding) {
		snprintf(err, errlen, "Jerasure: cannot build a [%d,%d] w=%d coding matrix", k, m, w);
		jerasure_destroy(&c->base);
		return -1;
	}
	c->base.same_generator = 1;
	for (int i = 0; i < m * k; i++)
		if ((uint32_t)c->matrix[i] != cell->ref_matrix[i])
			c->base.same_generator = 0;

	for (int e = 0; e < cell->n_erased; e++)
		c->erasures[e] = cell->erased[e];
	c->erasures[cell->n_erased] = -1;
	for (int i = 0; i < k + m; i++) {
		int slot = bench_cell_erased_slot(cell, i);
		char *p = slot >= 0 ? (char *)cell->rebuilt[slot]
		                    : i < k ? (char *)cell->data[i] : (char *)c->base.parity[i - k];
		if (i < k)
			c->dec_data[i] = p;
		else
			c->dec_coding[i - k] = p;
	}
	*out = &c->base;
	return 0;
}

