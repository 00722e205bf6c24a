/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the XOR-code tests: a seeded generator, block sets,
 * a reference encoder that walks the coding bit matrix bit by bit (no
 * schedule, no kernel), and the enumeration of erasure patterns.
 */
#ifndef XOR_TEST_UTIL_H
#define XOR_TEST_UTIL_H

#include "bitmatrix.h"
#include "cpu.h"
#include "ec.h"
#include "xor_kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t xt_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline void xt_fill(uint8_t *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)xt_rand(seed);
}

/* n blocks of len bytes in one allocation; free with free(set[0]) and
 * free(set). */
static inline uint8_t **xt_blocks(int n, size_t len)
{
	uint8_t **b = malloc(sizeof(*b) * (size_t)n);
	uint8_t *mem = malloc((size_t)n * len);
	if (!b || !mem)
		abort();
	for (int i = 0; i < n; i++)
		b[i] = mem + (size_t)i * len;
	return b;
}

static inline void xt_free_blocks(uint8_t **b)
{
	free(b[0]);
	free(b);
}

/* Parity straight from the definition of a bit-matrix code. */
static inline void xt_reference_encode(const ec_params *p, uint8_t *const *data,
                                       uint8_t **parity, size_t len)
{
	bm coding, helpers;
	if (bm_code_build(p, &coding, &helpers) != 0)
		abort();
	int w = p->w;
	size_t ps = p->packet_size, group = (size_t)w * ps;
	for (int i = 0; i < p->m; i++)
		memset(parity[i], 0, len);
	for (size_t g = 0; g < len; g += group)
		for (int r = 0; r < p->m * w; r++)
			for (int c = 0; c < p->k * w; c++) {
				if (!bm_get(&coding, r, c))
					continue;
				uint8_t *d = parity[r / w] + g + (size_t)(r % w) * ps;
				const uint8_t *s = data[c / w] + g + (size_t)(c % w) * ps;
				for (size_t b = 0; b < ps; b++)
					d[b] ^= s[b];
			}
	bm_free(&coding);
	bm_free(&helpers);
}

/* The distinct XOR kernels of the table that this CPU runs, scalar first,
 * into fns[EC_SIMD_COUNT]; returns their number. */
static inline int xt_cpu_kernels(xor_exec_fn *fns)
{
	int n = 0;
	for (int l = EC_SIMD_SCALAR; l < EC_SIMD_COUNT; l++)
		if (ec_cpu_supports((ec_simd)l) &&
		    (l == EC_SIMD_SCALAR || xor_kernel_for(l) != xor_kernel_for(l - 1)))
			fns[n++] = xor_kernel_for(l)->exec;
	return n;
}

/* Next combination of size e from {0..n-1} in idx[]; 0 when done. */
static inline int xt_next_combination(int *idx, int e, int n)
{
	int i = e - 1;
	while (i >= 0 && idx[i] == n - e + i)
		i--;
	if (i < 0)
		return 0;
	idx[i]++;
	for (int j = i + 1; j < e; j++)
		idx[j] = idx[j - 1] + 1;
	return 1;
}

#endif /* XOR_TEST_UTIL_H */
