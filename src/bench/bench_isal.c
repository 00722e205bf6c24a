/* SPDX-License-Identifier: MIT */
/*
 * The ISA-L coder of ecfs-bench (built only when meson finds libisal).
 * Encoding is ec_init_tables once, outside the timing, then ec_encode_data
 * per call.  Decoding follows ISA-L's own recipe: invert the k x k
 * submatrix of the surviving rows once per erasure pattern, turn the rows
 * that produce the erased blocks into tables once, then each timed call is
 * one ec_encode_data over the survivors.  That matches libec, which caches
 * its decoding matrix per pattern, so neither side pays setup per call.
 *
 * ECFS_BENCH_ISAL_KERNEL=avx2 calls ISA-L's AVX2 kernel (and its plain
 * table builder) directly instead of its dispatcher, so that a CPU with
 * AVX-512 and GFNI can stand in for one with AVX2 alone, beside libec's
 * EC_SIMD=avx2.  The two are looked up at run time: not every release
 * exports them.
 */
#include "bench_coders.h"

#include <dlfcn.h>
#include <isa-l/erasure_code.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct isal_coder {
	bench_coder base;
	int k, m;
	unsigned char *gen;        /* (k+m) x k, identity on top */
	unsigned char *enc_tables; /* 32 * k * m */
	unsigned char *dec_tables; /* 32 * k * n_erased */
	unsigned char **dec_src;   /* k surviving blocks */
	unsigned char **dec_dst;   /* n_erased outputs: cell->rebuilt */
} isal_coder;

typedef void isal_tables_fn(int k, int rows, unsigned char *a, unsigned char *tables);
typedef void isal_code_fn(int len, int k, int rows, unsigned char *tables,
                          unsigned char **data, unsigned char **coding);

/* ISA-L's dispatcher, or the kernel ECFS_BENCH_ISAL_KERNEL names. */
static isal_tables_fn *isal_init_tables = ec_init_tables;
static isal_code_fn *isal_encode_data = ec_encode_data;

static int pick_kernel(char *err, size_t errlen)
{
	const char *want = getenv("ECFS_BENCH_ISAL_KERNEL");
	void *tables, *code;

	if (!want || !*want)
		return 0;
	if (strcmp(want, "avx2") != 0) {
		snprintf(err, errlen, "ECFS_BENCH_ISAL_KERNEL=%s: only avx2 is known", want);
		return -1;
	}
	tables = dlsym(RTLD_DEFAULT, "ec_init_tables_base");
	code = dlsym(RTLD_DEFAULT, "ec_encode_data_avx2");
	if (!tables || !code || !__builtin_cpu_supports("avx2")) {
		snprintf(err, errlen, "ECFS_BENCH_ISAL_KERNEL=avx2: %s",
		         tables && code ? "this CPU has no AVX2"
		                        : "this ISA-L exports no ec_init_tables_base or "
		                          "ec_encode_data_avx2");
		return -1;
	}
	isal_init_tables = (isal_tables_fn *)tables;
	isal_encode_data = (isal_code_fn *)code;
	return 0;
}

static void isal_encode(void *self)
{
	isal_coder *c = self;
	bench_cell *cell = c->base.cell;

	isal_encode_data((int)cell->len, c->k, c->m, c->enc_tables, cell->data, c->base.parity);
}

static void isal_decode(void *self)
{
	isal_coder *c = self;
	bench_cell *cell = c->base.cell;

	isal_encode_data((int)cell->len, c->k, cell->n_erased, c->dec_tables, c->dec_src,
	                 c->dec_dst);
}

static void isal_destroy(bench_coder *base)
{
	isal_coder *c = (isal_coder *)base;

	free(c->gen);
	free(c->enc_tables);
	free(c->dec_tables);
	free(c);
}

/* Product in GF(2^8) with ISA-L's polynomial 0x11d.  Written here rather
 * than calling ISA-L's gf_mul because libec once exported a gf_mul of its
 * own with another signature, and in one executable the static library's
 * definition wins the link; this file should not depend on that. */
static unsigned char mul8(unsigned char a, unsigned char b)
{
	unsigned p = 0, x = a;

	for (; b; b >>= 1) {
		if (b & 1)
			p ^= x;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	return (unsigned char)p;
}

/* The generator: ISA-L's own Cauchy matrix for rs-cauchy (cross-checked
 * against ecfs's coefficients), ecfs's coefficients for other GF(2^8)
 * codes so both libraries do exactly the same arithmetic. */
static int build_generator(isal_coder *c, char *err, size_t errlen)
{
	bench_cell *cell = c->base.cell;
	int k = c->k, m = c->m;

	if (cell->ref_kind == EC_RS_CAUCHY) {
		gf_gen_cauchy1_matrix(c->gen, k + m, k);
		for (int i = 0; i < m; i++)
			for (int j = 0; j < k; j++)
				if (c->gen[(k + i) * k + j] != cell->ref_matrix[i * k + j]) {
					snprintf(err, errlen,
					         "ISA-L's gf_gen_cauchy1_matrix differs from ecfs rs-cauchy "
					         "at parity row %d, column %d (ISA-L 0x%02x, ecfs 0x%02x)",
					         i, j, c->gen[(k + i) * k + j],
					         (unsigned)cell->ref_matrix[i * k + j]);
					return -1;
				}
		return 0;
	}
	memset(c->gen, 0, (size_t)(k + m) * (size_t)k);
	for (int i = 0; i < k; i++)
		c->gen[i * k + i] = 1;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < k; j++)
			c->gen[(k + i) * k + j] = (unsigned char)cell->ref_matrix[i * k + j];
	return 0;
}

/* Decoding tables for the cell's erasure pattern. */
static int build_decoder(isal_coder *c, char *err, size_t errlen)
{
	bench_cell *cell = c->base.cell;
	int k = c->k, n_erased = cell->n_erased;
	unsigned char *sub = malloc((size_t)k * (size_t)k);
	unsigned char *inv = malloc((size_t)k * (size_t)k);
	unsigned char *rows = calloc((size_t)n_erased * (size_t)k + 1, 1);
	int rc = -1;

	if (!sub || !inv || !rows) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0, r = 0; r < k; i++) {
		if (bench_cell_erased_slot(cell, i) >= 0)
			continue;
		memcpy(sub + r * k, c->gen + i * k, (size_t)k);
		c->dec_src[r++] = i < k ? cell->data[i] : c->base.parity[i - k];
	}
	if (gf_invert_matrix(sub, inv, k) != 0) {
		snprintf(err, errlen, "ISA-L: the surviving submatrix is singular");
		goto out;
	}
	for (int e = 0; e < n_erased; e++) {
		int idx = cell->erased[e];
		unsigned char *row = rows + e * k;
		if (idx < k) {
			memcpy(row, inv + idx * k, (size_t)k);
			continue;
		}
		/* A lost parity block: its generator row times the inverse
		 * expresses it in terms of the survivors. */
		for (int col = 0; col < k; col++) {
			unsigned char s = 0;
			for (int j = 0; j < k; j++)
				s ^= mul8(c->gen[idx * k + j], inv[j * k + col]);
			row[col] = s;
		}
	}
	isal_init_tables(k, n_erased, rows, c->dec_tables);
	for (int e = 0; e < n_erased; e++)
		c->dec_dst[e] = cell->rebuilt[e];
	rc = 0;
out:
	free(sub);
	free(inv);
	free(rows);
	return rc;
}

int bench_isal_new(bench_cell *cell, bench_coder **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!cell->ref_matrix || cell->ref_w != 8) {
		snprintf(err, errlen, "ISA-L runs GF(2^8) matrix codes only");
		return 1;
	}
	if (cell->len > INT_MAX || cell->k + cell->m > 255) {
		snprintf(err, errlen, "ISA-L: block or stripe too large");
		return 1;
	}
	if (pick_kernel(err, errlen) < 0)
		return -1;
	isal_coder *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int k = cell->k, m = cell->m;
	c->k = k;
	c->m = m;
	c->base.impl = "isal";
	snprintf(c->base.code, sizeof(c->base.code), "%s", ec_kind_name(cell->ref_kind));
	c->base.w = 8;
	c->base.cell = cell;
	c->base.encode = isal_encode;
	c->base.decode = isal_decode;
	c->base.destroy = isal_destroy;
	c->base.same_generator = 1;
	c->base.parity = bench_cell_blocks(cell, m);
	c->gen = malloc((size_t)(k + m) * (size_t)k);
	c->enc_tables = malloc((size_t)32 * (size_t)k * (size_t)m);
	c->dec_tables = malloc((size_t)32 * (size_t)k * (size_t)(cell->n_erased + 1));
	c->dec_src = bench_cell_calloc(cell, (size_t)k, sizeof(*c->dec_src));
	c->dec_dst = bench_cell_calloc(cell, (size_t)cell->n_erased + 1, sizeof(*c->dec_dst));
	if (!c->base.parity || !c->gen || !c->enc_tables || !c->dec_tables || !c->dec_src ||
	    !c->dec_dst) {
		snprintf(err, errlen, "out of memory");
		isal_destroy(&c->base);
		return -1;
	}
	if (build_generator(c, err, errlen) < 0) {
		isal_destroy(&c->base);
		return -1;
	}
	isal_init_tables(k, m, c->gen + k * k, c->enc_tables);
	if (build_decoder(c, err, errlen) < 0) {
		isal_destroy(&c->base);
		return -1;
	}
	*out = &c->base;
	return 0;
}

