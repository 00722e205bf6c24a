/* SPDX-License-Identifier: MIT */
/*
 * RAID-6 P+Q ("raid6-pq"), after H. Peter Anvin, "The mathematics of
 * RAID-6": P is the XOR of the k data blocks and Q = sum 2^i d_i over
 * GF(2^8) (0x11d), computed by Horner's rule with a vector multiply-by-2.
 *
 * Decoding works slice by slice (so its temporaries fit on the stack and in
 * L1): it first computes the syndromes P' and Q' of the surviving data
 * (erased data read as zeros), then solves for what is missing:
 *   one data block x (P present)      d_x = P + P'
 *   one data block x and P            d_x = 2^-x (Q + Q')
 *   two data blocks x < y             with Pxy = P + P', Qxy = Q + Q':
 *       d_x = (Qxy + 2^y Pxy) / (2^x + 2^y),  d_y = Pxy + d_x
 * and recomputes erased parity from the (restored) data.  One data block
 * or P alone, with Q not wanted, is the XOR of the others (pq_decode_xor).
 */
#include "ec_internal.h"
#include "families.h"
#include "gf.h"
#include "gf8_kernels.h"
#include "xor_kernels.h"

#include <string.h>

#define PQ_SLICE 4096
#define PQ_MAX_K 255 /* 2^i must be distinct for i < k */

static _Alignas(64) const uint8_t zeros[PQ_SLICE];

static int pq_check(const ec_params *p)
{
	if (p->m != 2 || p->w != 8 || p->k > PQ_MAX_K || p->packet_size != 0)
		return EC_EINVAL;
	return 0;
}

static int pq_create(ec_code *code)
{
	return 0; /* no state beyond the parameters */
}

static void pq_destroy(ec_code *code)
{
}

static int pq_encode(const ec_code *code, const uint8_t *const *data,
                     uint8_t *const *parity, size_t len)
{
	gf8_kernel_current()->pq(0, len, code->params.k, data, parity[0],
	                         parity[1]);
	return 0;
}

/* A linear combination of up to four slices with fixed coefficients,
 * its tables built once per decode call. */
typedef struct pq_comb {
	_Alignas(64) uint8_t nib[4 * GF8_NIB_BYTES];
	uint64_t aff[4];
	int n;
} pq_comb;

static void comb_init(pq_comb *cb, int n, uint32_t c0, uint32_t c1,
                      uint32_t c2, uint32_t c3)
{
	uint32_t c[4] = { c0, c1, c2, c3 };

	cb->n = n;
	for (int i = 0; i < n; i++)
		gf8_table_init((uint8_t)c[i], cb->nib + i * GF8_NIB_BYTES, cb->aff + i);
}

/* out = XOR over i < cb->n of c[i] * in[i], over len bytes. */
static void comb_run(const gf8_kernel *kern, const pq_comb *cb,
                     const uint8_t *in0, const uint8_t *in1,
                     const uint8_t *in2, const uint8_t *in3, uint8_t *out,
                     size_t len)
{
	const uint8_t *in[4] = { in0, in1, in2, in3 };
	gf8_row row = { cb->nib, cb->aff };

	kern->dot(0, len, cb->n, 1, &row, in, &out, 0);
}

/* Block t (a data block or P) as the XOR of the others of data and P, in
 * one pass: one data block lost with P there, or P lost, and Q not wanted
 * (a rebuild's usual cases), without the Q syndrome and the multiplies of
 * the general path. */
static void pq_decode_xor(const ec_code *code, uint8_t *const *blocks, int t,
                          size_t len)
{
	int k = code->params.k, n = 0;
	xor_op ops[PQ_MAX_K + 1];
	size_t body = len & ~(size_t)7; /* the kernels' unit: 8 bytes */

	for (int i = 0; i <= k; i++) {
		if (i == t)
			continue;
		ops[n] = (xor_op){ .src = (uint32_t)i, .dst = (uint32_t)t,
		                   .kind = n ? XOR_OP_XOR : XOR_OP_COPY };
		n++;
	}
	xor_mark_runs(ops, (size_t)n);
	if (body)
		xor_kernel_current()->exec(ops, (size_t)n, blocks, 0, body);
	for (size_t b = body; b < len; b++) {
		uint8_t v = 0;

		for (int i = 0; i <= k; i++)
			if (i != t)
				v ^= blocks[i][b];
		blocks[t][b] = v;
	}
}

static int pq_decode(const ec_code *code, uint8_t *const *blocks,
                     const int *erased, int n_erased, size_t len)
{
	const gf8_kernel *kern = gf8_kernel_current();
	int k = code->params.k;
	int x = -1, y = -1, lost_p = 0, lost_q = 0;
	_Alignas(64) uint8_t tp[PQ_SLICE], tq[PQ_SLICE], tx[PQ_SLICE];
	const uint8_t *d[PQ_MAX_K];
	pq_comb first, second;

	for (int e = 0; e < n_erased; e++) {
		if (erased[e] == k)
			lost_p = 1;
		else if (erased[e] == k + 1)
			lost_q = 1;
		else if (x < 0)
			x = erased[e];
		else
			y = erased[e];
	}
	uint8_t *P = blocks[k], *Q = blocks[k + 1];
	uint8_t *X = x >= 0 ? blocks[x] : NULL, *Y = y >= 0 ? blocks[y] : NULL;
	int want_p = lost_p && P, want_q = lost_q && Q;

	if (!X && !Y && !want_p && !want_q)
		return 0; /* every erased block is unwanted */
	if (!want_q && (X ? y < 0 && !lost_p : x < 0 && want_p)) {
		pq_decode_xor(code, blocks, X ? x : k, len);
		return 0;
	}
	if (x >= 0) {
		uint32_t gx = gf_pow(8, 2, (uint32_t)x);

		if (y >= 0) {
			uint32_t gy = gf_pow(8, 2, (uint32_t)y);
			uint32_t den = gf_inv(8, gx ^ gy);
			uint32_t a = gf_mul(8, gy, den);

			comb_init(&first, 4, a, a, den, den); /* P, P', Q, Q' */
			comb_init(&second, 3, 1, 1, 1, 0);    /* P, P', d_x */
		} else if (!lost_p) {
			comb_init(&first, 2, 1, 1, 0, 0);     /* P, P' */
			comb_init(&second, 2, 1, gx, 0, 0);   /* Q', d_x */
		} else {
			uint32_t gi = gf_inv(8, gx);

			comb_init(&first, 2, gi, gi, 0, 0);   /* Q, Q' */
			comb_init(&second, 2, 1, 1, 0, 0);    /* P', d_x */
		}
	}

	for (size_t off = 0; off < len; off += PQ_SLICE) {
		size_t n = len - off < PQ_SLICE ? len - off : PQ_SLICE;
		/* Write syndromes straight to P/Q when those are the outputs. */
		uint8_t *sp = (x < 0 && want_p) ? P + off : tp;
		uint8_t *sq = (x < 0 && want_q) ? Q + off : tq;
		uint8_t *dx = X ? X + off : tx;

		for (int i = 0; i < k; i++)
			d[i] = (i == x || i == y) ? zeros : blocks[i] + off;
		kern->pq(0, n, k, d, sp, sq);
		if (x < 0)
			continue;
		if (y >= 0) {
			comb_run(kern, &first, P + off, tp, Q + off, tq, dx, n);
			if (Y)
				comb_run(kern, &second, P + off, tp, dx, NULL, Y + off, n);
		} else if (!lost_p) {
			comb_run(kern, &first, P + off, tp, NULL, NULL, dx, n);
			if (want_q)
				comb_run(kern, &second, tq, dx, NULL, NULL, Q + off, n);
		} else {
			comb_run(kern, &first, Q + off, tq, NULL, NULL, dx, n);
			if (want_p)
				comb_run(kern, &second, tp, dx, NULL, NULL, P + off, n);
		}
	}
	return 0;
}

static int pq_update(const ec_code *code, int index, const uint8_t *old_data,
                     const uint8_t *new_data, uint8_t *const *parity,
                     size_t len)
{
	/* P += old + new;  Q += 2^index (old + new). */
	_Alignas(64) uint8_t nib[4 * GF8_NIB_BYTES];
	uint64_t aff[4];
	gf8_row rows[2] = { { nib, aff }, { nib + 2 * GF8_NIB_BYTES, aff + 2 } };
	uint8_t g = (uint8_t)gf_pow(8, 2, (uint32_t)index);
	const uint8_t *in[2] = { old_data, new_data };

	gf8_table_init(1, nib, aff);
	gf8_table_init(1, nib + GF8_NIB_BYTES, aff + 1);
	gf8_table_init(g, nib + 2 * GF8_NIB_BYTES, aff + 2);
	gf8_table_init(g, nib + 3 * GF8_NIB_BYTES, aff + 3);
	gf8_dot(len, 2, 2, rows, in, parity, 1);
	return 0;
}

static uint32_t pq_coefficient(const ec_code *code, int row, int col)
{
	return row == 0 ? 1 : gf_pow(8, 2, (uint32_t)col);
}

static long pq_xor_count(const ec_code *code)
{
	return 0;
}

static size_t pq_block_align(const ec_code *code)
{
	return 1;
}

const ec_family ec_family_raid6_pq = {
	.kind = EC_RAID6_PQ,
	.name = "raid6-pq",
	.check = pq_check,
	.create = pq_create,
	.destroy = pq_destroy,
	.encode = pq_encode,
	.decode = pq_decode,
	.update = pq_update,
	.coefficient = pq_coefficient,
	.xor_count = pq_xor_count,
	.block_align = pq_block_align,
};
