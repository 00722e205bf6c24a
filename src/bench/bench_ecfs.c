/* SPDX-License-Identifier: MIT */
/*
 * The ecfs coder of ecfs-bench: libec's ec_encode and ec_decode on a cell's
 * buffers.  ec_decode caches its decoding matrix per erasure pattern, so
 * after the first (warm-up) call a timed decode is pure data work, the
 * same footing the ISA-L coder gets by building its tables once.
 */
#include "bench_coders.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct ecfs_coder {
	bench_coder base;
	ec_code *code;
	uint8_t **blocks; /* k+m: survivors, and erased blocks -> cell->rebuilt */
} ecfs_coder;

static void ecfs_encode(void *self)
{
	ecfs_coder *c = self;
	bench_cell *cell = c->base.cell;

	if (ec_encode(c->code, (const uint8_t *const *)cell->data, c->base.parity, cell->len) != 0)
		c->base.failed = 1;
}

static void ecfs_decode(void *self)
{
	ecfs_coder *c = self;
	bench_cell *cell = c->base.cell;

	if (ec_decode(c->code, c->blocks, cell->erased, cell->n_erased, cell->len) != 0)
		c->base.failed = 1;
}

static void ecfs_destroy(bench_coder *base)
{
	ecfs_coder *c = (ecfs_coder *)base;

	ec_destroy(c->code);
	free(c);
}

static int is_gf_code(ec_kind kind)
{
	return kind == EC_RS_VANDERMONDE || kind == EC_RS_CAUCHY || kind == EC_RAID6_PQ;
}

int bench_ecfs_new(bench_cell *cell, const ec_params *params, bench_coder **out,
                   char *err, size_t errlen)
{
	ecfs_coder *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = ec_create(params, &c->code);
	if (rc != 0) {
		snprintf(err, errlen, "ecfs: cannot create %s k=%d m=%d w=%d%s: %s",
		         ec_kind_name(params->kind) ? ec_kind_name(params->kind) : "?",
		         params->k, params->m, params->w,
		         rc == EC_ENOKERNEL ? " (EC_SIMD names a kernel this CPU lacks?)" : "",
		         ec_strerror(rc));
		free(c);
		return -1;
	}
	size_t align = ec_block_align(c->code);
	if (align == 0 || cell->len % align != 0) {
		snprintf(err, errlen,
		         "strip %zu is not a multiple of the block alignment %zu of %s "
		         "(w x packet size for bit-matrix codes)",
		         cell->len, align, ec_kind_name(params->kind));
		ecfs_destroy(&c->base);
		return -1;
	}
	c->base.impl = "ecfs";
	snprintf(c->base.code, sizeof(c->base.code), "%s", ec_kind_name(params->kind));
	c->base.w = params->w;
	c->base.cell = cell;
	c->base.encode = ecfs_encode;
	c->base.decode = ecfs_decode;
	c->base.destroy = ecfs_destroy;
	c->base.same_generator = 1;
	c->base.parity = bench_cell_blocks(cell, cell->m);
	c->blocks = bench_cell_calloc(cell, (size_t)(cell->k + cell->m), sizeof(*c->blocks));
	if (!c->base.parity || !c->blocks) {
		snprintf(err, errlen, "out of memory");
		ecfs_destroy(&c->base);
		return -1;
	}
	for (int i = 0; i < cell->k + cell->m; i++) {
		int slot = bench_cell_erased_slot(cell, i);
		if (slot >= 0)
			c->blocks[i] = cell->rebuilt[slot];
		else
			c->blocks[i] = i < cell->k ? cell->data[i] : c->base.parity[i - cell->k];
	}
	*out = &c->base;
	return 0;
}

int bench_ecfs_make_reference(bench_coder *base)
{
	ecfs_coder *c = (ecfs_coder *)base;
	bench_cell *cell = base->cell;
	const ec_params *p = ec_get_params(c->code);
	uint32_t *matrix = NULL;

	if (is_gf_code(p->kind)) {
		matrix = calloc((size_t)cell->m * (size_t)cell->k, sizeof(*matrix));
		if (!matrix)
			return -1;
		for (int i = 0; i < cell->m; i++)
			for (int j = 0; j < cell->k; j++)
				matrix[i * cell->k + j] = ec_coefficient(c->code, i, j);
	}
	int rc = bench_cell_set_reference(cell, base, p, matrix);
	free(matrix);
	return rc;
}
