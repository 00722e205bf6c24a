/* SPDX-License-Identifier: MIT */
/*
 * Buffers, verification and baselines of one ecfs-bench cell (see
 * bench_cell.h).  Blocks are laid out as ecfs lays out a stripe: the blocks
 * of one role (the data, a coder's parity, the rebuilt blocks) one after
 * another in one page-aligned allocation, a strip apart, so every coder
 * sees the same placement (each block at the same offset in a page) and
 * the cache sets that placement falls on.  Blocks are a strip rounded up
 * to 64 bytes apart, so they never share a cache line, and --unaligned
 * shifts every block by the same number of bytes.
 */
#include "bench_cell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int track(bench_cell *cell, void *p)
{
	if (cell->n_allocs == cell->cap_allocs) {
		int cap = cell->cap_allocs ? 2 * cell->cap_allocs : 32;
		void **a = realloc(cell->allocs, (size_t)cap * sizeof(*a));
		if (!a)
			return -1;
		cell->allocs = a;
		cell->cap_allocs = cap;
	}
	cell->allocs[cell->n_allocs++] = p;
	return 0;
}

void *bench_cell_calloc(bench_cell *cell, size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p && track(cell, p) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

/* n blocks, one after another in one page-aligned allocation. */
static uint8_t *blocks_alloc(bench_cell *cell, int n, size_t *stride)
{
	void *p = NULL;

	/* A strip apart (ecfs's strips are multiples of 64 bytes), or more so
	 * that no two blocks share a cache line. */
	*stride = (cell->len + cell->offset + 63) & ~(size_t)63;
	size_t size = *stride * (size_t)n;

	if (posix_memalign(&p, 4096, size) != 0)
		return NULL;
	if (track(cell, p) < 0) {
		free(p);
		return NULL;
	}
	memset(p, 0, size); /* fault the pages in before any timing */
	return p;
}

uint8_t *bench_cell_block(bench_cell *cell)
{
	size_t stride;
	uint8_t *p = blocks_alloc(cell, 1, &stride);

	return p ? p + cell->offset : NULL;
}

uint8_t **bench_cell_blocks(bench_cell *cell, int n)
{
	uint8_t **v = bench_cell_calloc(cell, (size_t)n, sizeof(*v));
	size_t stride;
	uint8_t *p = v && n > 0 ? blocks_alloc(cell, n, &stride) : NULL;

	if (!v || (n > 0 && !p))
		return NULL;
	for (int i = 0; i < n; i++)
		v[i] = p + (size_t)i * stride + cell->offset;
	return v;
}

/* xorshift64*: fast, and the same bytes for the same seed on every run. */
static void fill_random(uint8_t *p, size_t len, uint64_t *state)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t x = *state;
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		*state = x;
		x *= 0x2545F4914F6CDD1DULL;
		size_t n = len - i < 8 ? len - i : 8;
		memcpy(p + i, &x, n);
	}
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int bench_cell_init(bench_cell *cell, int k, int m, size_t len, size_t offset,
                    const int *erased, int n_erased, uint64_t seed)
{
	memset(cell, 0, sizeof(*cell));
	cell->k = k;
	cell->m = m;
	cell->len = len;
	cell->offset = offset;
	cell->n_erased = n_erased;
	cell->erased = bench_cell_calloc(cell, (size_t)n_erased, sizeof(int));
	if (!cell->erased)
		goto fail;
	memcpy(cell->erased, erased, (size_t)n_erased * sizeof(int));
	qsort(cell->erased, (size_t)n_erased, sizeof(int), cmp_int);

	cell->data = bench_cell_blocks(cell, k);
	cell->rebuilt = bench_cell_blocks(cell, n_erased);
	cell->copy_dst = bench_cell_blocks(cell, k);
	cell->xor_dst = bench_cell_block(cell);
	if (!cell->data || !cell->rebuilt || !cell->copy_dst || !cell->xor_dst)
		goto fail;
	uint64_t state = seed ? seed : 0x9E3779B97F4A7C15ULL;
	for (int i = 0; i < k; i++)
		fill_random(cell->data[i], len, &state);
	return 0;
fail:
	bench_cell_free(cell);
	return -1;
}

void bench_cell_free(bench_cell *cell)
{
	/* Blocks were shifted by offset after allocation; the tracked
	 * pointers are the original ones, so free those. */
	for (int i = 0; i < cell->n_allocs; i++)
		free(cell->allocs[i]);
	free(cell->allocs);
	memset(cell, 0, sizeof(*cell));
}

int bench_cell_erased_slot(const bench_cell *cell, int index)
{
	for (int i = 0; i < cell->n_erased; i++)
		if (cell->erased[i] == index)
			return i;
	return -1;
}

int bench_cell_set_reference(bench_cell *cell, const bench_coder *coder,
                             const ec_params *params, const uint32_t *matrix)
{
	cell->ref_parity = coder->parity;
	cell->ref_kind = params->kind;
	cell->ref_w = params->w;
	cell->ref_packet = params->packet_size;
	cell->ref_matrix = NULL;
	if (matrix) {
		size_t n = (size_t)cell->m * (size_t)cell->k;
		cell->ref_matrix = bench_cell_calloc(cell, n, sizeof(uint32_t));
		if (!cell->ref_matrix)
			return -1;
		memcpy(cell->ref_matrix, matrix, n * sizeof(uint32_t));
	}
	return 0;
}

/* Index of the first differing byte, or -1. */
static long first_difference(const uint8_t *a, const uint8_t *b, size_t len)
{
	if (memcmp(a, b, len) == 0)
		return -1;
	for (size_t i = 0; i < len; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

int bench_coder_verify(bench_coder *coder, char *err, size_t errlen)
{
	bench_cell *cell = coder->cell;
	long at;

	/* Poison the outputs so a coder that writes nothing cannot pass. */
	for (int j = 0; j < cell->m; j++)
		memset(coder->parity[j], 0xA5, cell->len);
	coder->failed = 0;
	coder->encode(coder);
	if (coder->failed) {
		snprintf(err, errlen, "%s %s: encode failed", coder->impl, coder->code);
		return -1;
	}
	coder->parity_matches = 1;
	for (int j = 0; j < cell->m && cell->ref_parity; j++)
		if (memcmp(coder->parity[j], cell->ref_parity[j], cell->len) != 0)
			coder->parity_matches = 0;
	if (coder->same_generator && cell->ref_parity && cell->ref_parity != coder->parity) {
		for (int j = 0; j < cell->m; j++) {
			at = first_difference(coder->parity[j], cell->ref_parity[j], cell->len);
			if (at >= 0) {
				snprintf(err, errlen,
				         "%s %s: parity block %d differs from ecfs's at byte %ld "
				         "(0x%02x, ecfs 0x%02x) although both use the same generator",
				         coder->impl, coder->code, j, at, coder->parity[j][at],
				         cell->ref_parity[j][at]);
				return -1;
			}
		}
	}

	for (int e = 0; e < cell->n_erased; e++)
		memset(cell->rebuilt[e], 0x5A, cell->len);
	coder->decode(coder);
	if (coder->failed) {
		snprintf(err, errlen, "%s %s: decode failed", coder->impl, coder->code);
		return -1;
	}
	for (int e = 0; e < cell->n_erased; e++) {
		int idx = cell->erased[e];
		const uint8_t *orig = idx < cell->k ? cell->data[idx] : coder->parity[idx - cell->k];
		at = first_difference(cell->rebuilt[e], orig, cell->len);
		if (at >= 0) {
			snprintf(err, errlen,
			         "%s %s: decode did not restore block %d (first wrong byte %ld)",
			         coder->impl, coder->code, idx, at);
			return -1;
		}
	}
	return 0;
}

void bench_baseline_memcpy(void *ctx)
{
	bench_cell *cell = ctx;

	for (int i = 0; i < cell->k; i++)
		memcpy(cell->copy_dst[i], cell->data[i], cell->len);
}

/* 16-byte vectors: the one width every x86-64 (and most other) CPU has, so
 * this is a plain reference rather than a tuned kernel. */
typedef uint64_t xor_vec __attribute__((vector_size(16), aligned(1)));

void bench_baseline_xor(void *ctx)
{
	bench_cell *cell = ctx;
	size_t len = cell->len, i = 0;
	uint8_t *dst = cell->xor_dst;

	for (; i + 64 <= len; i += 64) {
		xor_vec a0, a1, a2, a3;
		memcpy(&a0, cell->data[0] + i, 16);
		memcpy(&a1, cell->data[0] + i + 16, 16);
		memcpy(&a2, cell->data[0] + i + 32, 16);
		memcpy(&a3, cell->data[0] + i + 48, 16);
		for (int s = 1; s < cell->k; s++) {
			xor_vec b0, b1, b2, b3;
			const uint8_t *src = cell->data[s] + i;
			memcpy(&b0, src, 16);
			memcpy(&b1, src + 16, 16);
			memcpy(&b2, src + 32, 16);
			memcpy(&b3, src + 48, 16);
			a0 ^= b0;
			a1 ^= b1;
			a2 ^= b2;
			a3 ^= b3;
		}
		memcpy(dst + i, &a0, 16);
		memcpy(dst + i + 16, &a1, 16);
		memcpy(dst + i + 32, &a2, 16);
		memcpy(dst + i + 48, &a3, 16);
	}
	for (; i < len; i++) {
		uint8_t a = cell->data[0][i];
		for (int s = 1; s < cell->k; s++)
			a ^= cell->data[s][i];
		dst[i] = a;
	}
}
