/* SPDX-License-Identifier: MIT */
/*
 * Building, ordering and running XOR schedules (see xor_schedule.h).
 */
#include "xor_schedule.h"

#include "ec.h"

#include <stdlib.h>
#include <string.h>

typedef struct op_list {
	xor_op *ops;
	size_t n, cap;
	long n_xors;
} op_list;

static int push(op_list *l, uint32_t src, uint32_t dst, uint32_t kind)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		xor_op *ops = realloc(l->ops, cap * sizeof(*ops));
		if (!ops)
			return EC_ENOMEM;
		l->ops = ops;
		l->cap = cap;
	}
	l->ops[l->n++] = (xor_op){ src, dst, kind, 1 };
	if (kind == XOR_OP_XOR)
		l->n_xors++;
	return 0;
}

/* Emits dst = (base ? packet base : nothing) ^ sum of the sources whose
 * bits are set in bits[0..words). */
static int emit_row(op_list *l, const uint64_t *bits, int words,
                    const uint32_t *src_id, int has_base, uint32_t base,
                    uint32_t dst)
{
	int first = !has_base;
	if (has_base && push(l, base, dst, XOR_OP_COPY))
		return EC_ENOMEM;
	for (int i = 0; i < words; i++) {
		uint64_t x = bits[i];
		while (x) {
			int c = i * 64 + __builtin_ctzll(x);
			x &= x - 1;
			if (push(l, src_id[c], dst, first ? XOR_OP_COPY : XOR_OP_XOR))
				return EC_ENOMEM;
			first = 0;
		}
	}
	if (first && push(l, dst, dst, XOR_OP_ZERO))
		return EC_ENOMEM;
	return 0;
}

static void finish(op_list *l, xor_schedule *out)
{
	xor_mark_runs(l->ops, l->n);
	out->ops = l->ops;
	out->n_ops = l->n;
	out->n_xors = l->n_xors;
	out->word_guided = 0;
}

int xor_schedule_build_plain(const bm *rows, const uint32_t *src_id,
                             const uint32_t *dst_id, xor_schedule *out)
{
	op_list l = { 0 };
	for (int t = 0; t < rows->rows; t++) {
		if (emit_row(&l, bm_row(rows, t), rows->words, src_id, 0, 0, dst_id[t])) {
			free(l.ops);
			return EC_ENOMEM;
		}
	}
	finish(&l, out);
	return 0;
}

static int diff_ones(const uint64_t *a, const uint64_t *b, int words)
{
	int n = 0;
	for (int i = 0; i < words; i++)
		n += __builtin_popcountll(a[i] ^ b[i]);
	return n;
}

int xor_schedule_build(const bm *rows, const uint32_t *src_id,
                       const uint32_t *dst_id, xor_schedule *out)
{
	int n = rows->rows, words = rows->words;
	op_list l = { 0 };
	int *cost = malloc(sizeof(int) * (size_t)(n ? n : 1));
	int *base = malloc(sizeof(int) * (size_t)(n ? n : 1));
	char *done = calloc((size_t)(n ? n : 1), 1);
	uint64_t *tmp = malloc(sizeof(uint64_t) * (size_t)words);
	int rc = (cost && base && done && tmp) ? 0 : EC_ENOMEM;
	/* Cost of a row = XORs to compute it: ones - 1 from scratch, or the
	 * size of the difference from a computed row (one copy plus XORs). */
	for (int t = 0; t < n && !rc; t++) {
		int ones = bm_row_ones(rows, t);
		cost[t] = ones > 0 ? ones - 1 : 0;
		base[t] = -1;
	}
	for (int step = 0; step < n && !rc; step++) {
		int best = -1;
		for (int t = 0; t < n; t++)
			if (!done[t] && (best < 0 || cost[t] < cost[best]))
				best = t;
		const uint64_t *row = bm_row(rows, best);
		if (base[best] < 0) {
			rc = emit_row(&l, row, words, src_id, 0, 0, dst_id[best]);
		} else {
			const uint64_t *b = bm_row(rows, base[best]);
			for (int i = 0; i < words; i++)
				tmp[i] = row[i] ^ b[i];
			rc = emit_row(&l, tmp, words, src_id, 1, dst_id[base[best]],
			              dst_id[best]);
		}
		done[best] = 1;
		for (int t = 0; t < n && !rc; t++) {
			if (done[t])
				continue;
			int d = diff_ones(bm_row(rows, t), row, words);
			if (d < cost[t]) {
				cost[t] = d;
				base[t] = best;
			}
		}
	}
	free(cost);
	free(base);
	free(done);
	free(tmp);
	if (rc) {
		free(l.ops);
		return rc;
	}
	finish(&l, out);
	return 0;
}

int xor_schedule_set_order(xor_schedule *s, int order)
{
	if (order < EC_ORDER_PPG || order > EC_ORDER_DWG)
		return EC_EINVAL;
	s->word_guided = order == EC_ORDER_PWG || order == EC_ORDER_DWG;
	if (order == EC_ORDER_PPG || order == EC_ORDER_PWG)
		return 0; /* as built */
	size_t n = s->n_ops;
	if (n == 0)
		return 0;
	uint32_t max_id = 0;
	for (size_t i = 0; i < n; i++) {
		if (s->ops[i].src > max_id)
			max_id = s->ops[i].src;
		if (s->ops[i].dst > max_id)
			max_id = s->ops[i].dst;
	}
	/* rank[id]: a plain source ranks by its id; a computed packet ranks
	 * after every plain source, by the position of its last write in the
	 * parity-guided list (which is a valid dependency order).  Zeroing
	 * ranks first.  A counting sort by rank keeps equal ranks in their
	 * original order. */
	size_t n_ranks = (size_t)max_id + 2 + n;
	size_t *rank = malloc(sizeof(size_t) * ((size_t)max_id + 1));
	size_t *start = calloc(n_ranks + 1, sizeof(size_t));
	xor_op *sorted = malloc(sizeof(xor_op) * n);
	char *seen = calloc((size_t)max_id + 1, 1);
	if (!rank || !start || !sorted || !seen) {
		free(rank);
		free(start);
		free(sorted);
		free(seen);
		return EC_ENOMEM;
	}
	for (uint32_t id = 0; id <= max_id; id++)
		rank[id] = (size_t)id + 1;
	for (size_t i = 0; i < n; i++)
		rank[s->ops[i].dst] = (size_t)max_id + 2 + i;
#define OP_RANK(op) ((op).kind == XOR_OP_ZERO ? 0 : rank[(op).src])
	for (size_t i = 0; i < n; i++)
		start[OP_RANK(s->ops[i]) + 1]++;
	for (size_t r = 1; r <= n_ranks; r++)
		start[r] += start[r - 1];
	for (size_t i = 0; i < n; i++)
		sorted[start[OP_RANK(s->ops[i])]++] = s->ops[i];
#undef OP_RANK
	/* The first write to a packet must overwrite it. */
	for (size_t i = 0; i < n; i++) {
		xor_op op = sorted[i];
		if (op.kind != XOR_OP_ZERO) {
			op.kind = seen[op.dst] ? XOR_OP_XOR : XOR_OP_COPY;
			seen[op.dst] = 1;
		}
		s->ops[i] = op;
	}
	xor_mark_runs(s->ops, n);
	free(rank);
	free(start);
	free(sorted);
	free(seen);
	return 0;
}

void xor_schedule_free(xor_schedule *s)
{
	free(s->ops);
	s->ops = NULL;
	s->n_ops = 0;
}

size_t xor_word_bytes(int n_packets)
{
	/* Measured (docs/xor-codes.md): below ~1 KiB per slice the per-slice
	 * cost of walking the list dominates, so slices are sized to the L2
	 * share of one core rather than to L1. */
	size_t wb = 256;
	while (wb < 4096 && wb * 2 * (size_t)n_packets <= 256 * 1024)
		wb *= 2;
	return wb;
}

void xor_schedule_run(const xor_schedule *s, const xor_run *run, size_t len)
{
	int w = run->w;
	size_t ps = run->packet_size, group = (size_t)w * ps;
	int n_ids = run->n_blocks * w;
	for (int t = 0; t < run->n_temps; t++)
		run->table[n_ids + t] = run->scratch + (size_t)t * ps;
	for (size_t g = 0; g < len; g += group) {
		for (int b = 0; b < run->n_blocks; b++) {
			uint8_t *base = run->blocks[b];
			for (int p = 0; p < w; p++)
				run->table[b * w + p] = base ? base + g + (size_t)p * ps : NULL;
		}
		if (!s->word_guided || run->word_bytes >= ps) {
			run->fn(s->ops, s->n_ops, run->table, 0, ps);
			continue;
		}
		for (size_t off = 0; off < ps; off += run->word_bytes) {
			size_t n = ps - off < run->word_bytes ? ps - off : run->word_bytes;
			run->fn(s->ops, s->n_ops, run->table, off, n);
		}
	}
}
