/* SPDX-License-Identifier: MIT */
/*
 * The Jerasure coder of ecfs-bench (built only when meson finds Jerasure
 * and gf-complete).
 *
 * GF(2^w) codes (w = 8, 16, 32) run jerasure_matrix_encode with a
 * reed_sol_vandermonde_coding_matrix: a dense [k,m] generator, so the same
 * amount of arithmetic as any of libec's RS generators.  Decoding is
 * jerasure_matrix_decode, which by its API inverts the surviving submatrix
 * again on every call; that cost is part of what a Jerasure user pays, so
 * it is measured as is.
 *
 * Bit-matrix codes that Jerasure also has (cauchy-orig, cauchy-good,
 * liberation, blaum-roth, liber8tion) run Jerasure's own construction of
 * the same family with the same w and packet size: a "smart" XOR schedule
 * built once for encoding, and for decoding the schedule cache Jerasure
 * offers for m = 2 (built once, like libec's per-pattern cache) or, for
 * larger m, jerasure_schedule_decode_lazy, which derives a schedule per
 * call.  Whether Jerasure's parity equals libec's then depends on the two
 * constructions agreeing, so it is reported, not required.
 */
#include "bench_coders.h"

#include <cauchy.h>
#include <jerasure.h>
#include <liberation.h>
#include <limits.h>
#include <reed_sol.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jerasure_coder {
	bench_coder base;
	int k, m, w;
	int packet;        /* bit-matrix codes: bytes per packet */
	int *matrix;       /* m x k GF(2^w) matrix, or NULL (malloc'd by Jerasure) */
	int *bitmatrix;    /* (m*w) x (k*w) bit matrix, or NULL */
	int **schedule;    /* encoding schedule of the bit matrix */
	int ***cache;      /* m = 2: decoding schedules for every pattern */
	int *erasures;     /* cell->erased, -1 terminated as Jerasure wants */
	char **dec_data;   /* k: survivors, erased data -> cell->rebuilt */
	char **dec_coding; /* m: this coder's parity, erased parity -> cell->rebuilt */
} jerasure_coder;

static void matrix_encode(void *self)
{
	jerasure_coder *c = self;
	bench_cell *cell = c->base.cell;

	jerasure_matrix_encode(c->k, c->m, c->w, c->matrix, (char **)cell->data,
	                       (char **)c->base.parity, (int)cell->len);
}

static void matrix_decode(void *self)
{
	jerasure_coder *c = self;
	bench_cell *cell = c->base.cell;

	/* row_k_ones = 1: the first row of Jerasure's Vandermonde coding
	 * matrix is all ones, which lets it rebuild one data block by XOR. */
	if (jerasure_matrix_decode(c->k, c->m, c->w, c->matrix, 1, c->erasures, c->dec_data,
	                           c->dec_coding, (int)cell->len) != 0)
		c->base.failed = 1;
}

static void schedule_encode(void *self)
{
	jerasure_coder *c = self;
	bench_cell *cell = c->base.cell;

	jerasure_schedule_encode(c->k, c->m, c->w, c->schedule, (char **)cell->data,
	                         (char **)c->base.parity, (int)cell->len, c->packet);
}

static void schedule_decode(void *self)
{
	jerasure_coder *c = self;
	bench_cell *cell = c->base.cell;
	int rc;

	if (c->cache)
		rc = jerasure_schedule_decode_cache(c->k, c->m, c->w, c->cache, c->erasures,
		                                    c->dec_data, c->dec_coding, (int)cell->len,
		                                    c->packet);
	else
		rc = jerasure_schedule_decode_lazy(c->k, c->m, c->w, c->bitmatrix, c->erasures,
		                                   c->dec_data, c->dec_coding, (int)cell->len,
		                                   c->packet, 1);
	if (rc != 0)
		c->base.failed = 1;
}

static void jerasure_destroy(bench_coder *base)
{
	jerasure_coder *c = (jerasure_coder *)base;

	/* All allocated by Jerasure with malloc. */
	if (c->cache)
		jerasure_free_schedule_cache(c->k, c->m, c->cache);
	if (c->schedule)
		jerasure_free_schedule(c->schedule);
	free(c->bitmatrix);
	free(c->matrix);
	free(c);
}

/* Jerasure's bit matrix for the cell's bit-matrix code, or NULL with err
 * set if Jerasure has no such construction. */
static int *family_bitmatrix(jerasure_coder *c, ec_kind kind, char *err, size_t errlen)
{
	int k = c->k, m = c->m, w = c->w;

	switch (kind) {
	case EC_CAUCHY_ORIG:
	case EC_CAUCHY_GOOD:
		c->matrix = kind == EC_CAUCHY_ORIG ? cauchy_original_coding_matrix(k, m, w)
		                                   : cauchy_good_general_coding_matrix(k, m, w);
		return c->matrix ? jerasure_matrix_to_bitmatrix(k, m, w, c->matrix) : NULL;
	case EC_LIBERATION:
		if (m == 2)
			return liberation_coding_bitmatrix(k, w);
		break;
	case EC_BLAUM_ROTH:
		if (m == 2)
			return blaum_roth_coding_bitmatrix(k, w);
		break;
	case EC_LIBER8TION:
		if (m == 2 && w == 8)
			return liber8tion_coding_bitmatrix(k);
		break;
	default:
		break;
	}
	snprintf(err, errlen, "Jerasure has no %s with k=%d m=%d w=%d", ec_kind_name(kind), k, m,
	         w);
	return NULL;
}

/* Fills the decoding pointers: survivors in place, erased blocks into the
 * cell's rebuild buffers. */
static void wire_decode(jerasure_coder *c)
{
	bench_cell *cell = c->base.cell;

	for (int e = 0; e < cell->n_erased; e++)
		c->erasures[e] = cell->erased[e];
	c->erasures[cell->n_erased] = -1;
	for (int i = 0; i < c->k + c->m; i++) {
		int slot = bench_cell_erased_slot(cell, i);
		char *p = slot >= 0 ? (char *)cell->rebuilt[slot]
		          : i < c->k ? (char *)cell->data[i]
		                     : (char *)c->base.parity[i - c->k];
		if (i < c->k)
			c->dec_data[i] = p;
		else
			c->dec_coding[i - c->k] = p;
	}
}

/* Sets up the GF(2^w) matrix coder; 0, 1 (not applicable) or -1. */
static int setup_matrix(jerasure_coder *c, char *err, size_t errlen)
{
	bench_cell *cell = c->base.cell;

	if (c->w != 8 && c->w != 16 && c->w != 32) {
		snprintf(err, errlen, "Jerasure's matrix coder runs GF(2^w) codes with w = 8, 16, 32");
		return 1;
	}
	if (cell->offset % (size_t)(c->w / 8) != 0) {
		/* gf-complete asserts on such buffers rather than failing. */
		snprintf(err, errlen, "gf-complete needs blocks aligned to w/8 = %d bytes", c->w / 8);
		return 1;
	}
	snprintf(c->base.code, sizeof(c->base.code), "rs-vandermonde");
	c->base.encode = matrix_encode;
	c->base.decode = matrix_decode;
	c->matrix = reed_sol_vandermonde_coding_matrix(c->k, c->m, c->w);
	if (!c->matrix) {
		snprintf(err, errlen, "Jerasure: no [%d,%d] w=%d Vandermonde matrix", c->k, c->m,
		         c->w);
		return -1;
	}
	c->base.same_generator = 1;
	for (int i = 0; i < c->m * c->k; i++)
		if ((uint32_t)c->matrix[i] != cell->ref_matrix[i])
			c->base.same_generator = 0;
	return 0;
}

/* Sets up the bit-matrix coder; 0, 1 (not applicable) or -1. */
static int setup_bitmatrix(jerasure_coder *c, char *err, size_t errlen)
{
	bench_cell *cell = c->base.cell;

	if (cell->ref_packet == 0 || cell->ref_packet > INT_MAX ||
	    cell->ref_packet % sizeof(long) != 0 || cell->offset % sizeof(long) != 0) {
		snprintf(err, errlen, "Jerasure needs packets and blocks aligned to %zu bytes",
		         sizeof(long));
		return 1;
	}
	c->packet = (int)cell->ref_packet;
	snprintf(c->base.code, sizeof(c->base.code), "%s", ec_kind_name(cell->ref_kind));
	c->base.encode = schedule_encode;
	c->base.decode = schedule_decode;
	c->bitmatrix = family_bitmatrix(c, cell->ref_kind, err, errlen);
	if (!c->bitmatrix)
		return 1;
	c->schedule = jerasure_smart_bitmatrix_to_schedule(c->k, c->m, c->w, c->bitmatrix);
	if (c->m == 2)
		c->cache = jerasure_generate_schedule_cache(c->k, c->m, c->w, c->bitmatrix, 1);
	if (!c->schedule || (c->m == 2 && !c->cache)) {
		snprintf(err, errlen, "Jerasure: cannot build the schedules");
		return -1;
	}
	c->base.same_generator = 0; /* another construction: compared, not required */
	return 0;
}

int bench_jerasure_new(bench_cell *cell, bench_coder **out, char *err, size_t errlen)
{
	int k = cell->k, m = cell->m;

	*out = NULL;
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
	c->w = cell->ref_w;
	c->base.impl = "jerasure";
	c->base.w = c->w;
	c->base.cell = cell;
	c->base.destroy = jerasure_destroy;
	int rc = cell->ref_matrix ? setup_matrix(c, err, errlen) : setup_bitmatrix(c, err, errlen);
	c->base.parity = rc == 0 ? bench_cell_blocks(cell, m) : NULL;
	c->erasures = bench_cell_calloc(cell, (size_t)cell->n_erased + 1, sizeof(int));
	c->dec_data = bench_cell_calloc(cell, (size_t)k, sizeof(char *));
	c->dec_coding = bench_cell_calloc(cell, (size_t)m, sizeof(char *));
	if (rc == 0 && (!c->base.parity || !c->erasures || !c->dec_data || !c->dec_coding)) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	if (rc != 0) {
		jerasure_destroy(&c->base);
		return rc;
	}
	wire_decode(c);
	*out = &c->base;
	return 0;
}
