/* SPDX-License-Identifier: MIT */
/*
 * Internal shape of a code handle.  ec.c owns the public entry points: it
 * validates every argument (so families never see bad input and a failing
 * call writes nothing), then calls the family's operations below.  Each
 * family (GF(2^w) Reed-Solomon in rs.c, RAID-6 P+Q in pq.c, the bit-matrix
 * codes in bitmatrix*.c) fills one ec_family in registry.c.
 */
#ifndef EC_INTERNAL_H
#define EC_INTERNAL_H

#include "ec.h"

#include <pthread.h>

typedef struct ec_family {
	ec_kind kind;
	const char *name;
	/* 1 for a bit-matrix code: a block is w packets of packet_size bytes. */
	int bitmatrix;
	/* Checks params beyond what ec.c checks (k>=1, m>=1, k+m fit, the
	 * order), building nothing.  Returns 0 or EC_E*. */
	int (*check)(const ec_params *p);
	/* Builds code->priv for checked params.  Returns 0 or EC_E*. */
	int (*create)(ec_code *code);
	void (*destroy)(ec_code *code);
	int (*encode)(const ec_code *code, const uint8_t *const *data,
	              uint8_t *const *parity, size_t len);
	/* erased is sorted ascending, validated, n_erased in 1..m. */
	int (*decode)(const ec_code *code, uint8_t *const *blocks,
	              const int *erased, int n_erased, size_t len);
	/* NULL if the family has no delta update (ec.c then re-encodes is not
	 * possible, so it returns EC_EINVAL). */
	int (*update)(const ec_code *code, int index, const uint8_t *old_data,
	              const uint8_t *new_data, uint8_t *const *parity, size_t len);
	uint32_t (*coefficient)(const ec_code *code, int row, int col);
	long (*xor_count)(const ec_code *code);
	size_t (*block_align)(const ec_code *code);
} ec_family;

struct ec_code {
	ec_params params;
	const ec_family *family;
	size_t align; /* family->block_align, kept: every call checks it */
	void *priv;   /* family state: generator, schedules, decode cache */
};

/* registry.c: the family for a kind, or for a name, or NULL. */
const ec_family *ec_family_for(ec_kind kind);
const ec_family *ec_family_named(const char *name);

#endif /* EC_INTERNAL_H */
