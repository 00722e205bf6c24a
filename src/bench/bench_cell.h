/* SPDX-License-Identifier: MIT */
/*
 * One benchmark cell of ecfs-bench: the buffers for a [k,m] stripe of one
 * strip size, shared by every implementation measured in the cell, and the
 * "coder" interface each implementation (ecfs's libec, ISA-L, Jerasure)
 * fills in.  Sharing the source data and the erasure pattern is what makes
 * the comparison fair; each coder still writes its own parity, so its
 * decoder always reads parity that matches its own generator.
 *
 * Before a coder is timed it is verified: its parity must equal the
 * reference parity (from the first ecfs coder) whenever both use the same
 * generator matrix, and its decoder must restore every erased block.
 */
#ifndef BENCH_CELL_H
#define BENCH_CELL_H

#include "ec.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bench_cell {
	int k, m;
	size_t len;            /* strip (block) size in bytes */
	size_t offset;         /* bytes added to each page-aligned block */
	int n_erased;
	int *erased;           /* sorted block indices, data 0..k-1 then parity */
	uint8_t **data;        /* k blocks of random bytes */
	uint8_t **rebuilt;     /* n_erased blocks: decoders write here */
	uint8_t **copy_dst;    /* k blocks: memcpy baseline destination */
	uint8_t *xor_dst;      /* XOR baseline destination */
	/* Set by bench_cell_set_reference() from the first ecfs coder. */
	uint8_t *const *ref_parity; /* m blocks */
	ec_kind ref_kind;
	int ref_w;
	uint32_t *ref_matrix;  /* m x k coefficients (GF codes), or NULL */
	size_t ref_packet;     /* packet size of bit-matrix codes, else 0 */
	/* Every buffer allocated for the cell, freed together. */
	void **allocs;
	int n_allocs, cap_allocs;
} bench_cell;

typedef struct bench_coder bench_coder;
struct bench_coder {
	const char *impl;      /* "ecfs", "isal", "jerasure" */
	char code[32];         /* generator the coder runs, as printed */
	int w;
	bench_cell *cell;
	uint8_t **parity;      /* m blocks this coder's encode writes */
	int failed;            /* a timed call returned an error */
	int same_generator;    /* same matrix as the reference: parity must match */
	int parity_matches;    /* set by bench_coder_verify: parity == reference */
	void (*encode)(void *coder);
	void (*decode)(void *coder);
	void (*destroy)(bench_coder *coder);
};

/* Allocates the cell's buffers and fills the data with random bytes from
 * `seed`.  erased[] (n_erased entries, distinct, < k+m) is copied and
 * sorted.  Returns 0 or -1 (out of memory). */
int bench_cell_init(bench_cell *cell, int k, int m, size_t len, size_t offset,
                    const int *erased, int n_erased, uint64_t seed);
void bench_cell_free(bench_cell *cell);

/* A block of cell->len bytes, page-aligned plus cell->offset, owned by
 * the cell; NULL if out of memory. */
uint8_t *bench_cell_block(bench_cell *cell);
/* n such blocks in a new array (also owned by the cell), one after
 * another in one allocation (a stripe as ecfs lays it out), or NULL. */
uint8_t **bench_cell_blocks(bench_cell *cell, int n);
/* Memory owned by the cell, zeroed; NULL if out of memory. */
void *bench_cell_calloc(bench_cell *cell, size_t n, size_t size);

/* Position of block `index` in cell->erased (and so in cell->rebuilt), or -1. */
int bench_cell_erased_slot(const bench_cell *cell, int index);

/* Makes this coder's parity and generator the reference later coders are
 * compared with.  matrix is m x k (copied), or NULL for bit-matrix codes,
 * which give their packet size instead. */
int bench_cell_set_reference(bench_cell *cell, const bench_coder *coder,
                             const ec_params *params, const uint32_t *matrix);

/*
 * Encodes and decodes once and checks the results: parity equal to the
 * reference if coder->same_generator is set, every erased block restored.
 * Returns 0, or -1 with a message in err.
 */
int bench_coder_verify(bench_coder *coder, char *err, size_t errlen);

/* Baseline jobs (ctx is the cell): copy the k data blocks; XOR the k data
 * blocks into one. */
void bench_baseline_memcpy(void *cell);
void bench_baseline_xor(void *cell);

#endif /* BENCH_CELL_H */
