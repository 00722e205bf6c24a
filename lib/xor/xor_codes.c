/* SPDX-License-Identifier: MIT */
/*
 * One ec_family implementation for all bit-matrix codes.
 *
 * Packets are numbered by block: packet p of block b (data blocks 0..k-1,
 * then parity blocks k..k+m-1) is id b*w + p, and scratch packets for
 * helper rows follow.  Encoding runs the precomputed smart schedule of the
 * coding matrix.  Decoding picks k survivors (data first, so a single
 * data loss uses P, the cheapest), inverts their rows of [I; B] over GF(2),
 * writes each wanted erased packet as a row over survivor packets, and
 * schedules those rows the same smart way; the schedule is cached per
 * (erased set, wanted set) under a mutex, and cached schedules are never
 * changed, so readers need no lock while running them.  The XOR kernel is
 * looked up at every call, so ec_set_kernel() takes effect at once.
 */
#include "xor_codes.h"

#include "bitmatrix.h"
#include "xor_schedule.h"

#include <stdlib.h>
#include <string.h>

#define CACHE_BUCKETS 256
#define CACHE_MAX 4096

typedef struct decode_entry {
	uint64_t erased, wanted;
	xor_schedule sched;
	struct decode_entry *next;
} decode_entry;

typedef struct xcode {
	bm coding;
	bm helpers;
	xor_schedule enc;
	long plain_xors;
	xor_schedule *upd; /* per data block: parity ^= B_j * delta */
	pthread_mutex_t lock;
	decode_entry *buckets[CACHE_BUCKETS];
	int n_cached;
} xcode;

static void xcode_free(xcode *x, int k)
{
	if (!x)
		return;
	bm_free(&x->coding);
	bm_free(&x->helpers);
	xor_schedule_free(&x->enc);
	if (x->upd)
		for (int j = 0; j < k; j++)
			xor_schedule_free(&x->upd[j]);
	free(x->upd);
	for (int b = 0; b < CACHE_BUCKETS; b++) {
		decode_entry *e = x->buckets[b];
		while (e) {
			decode_entry *n = e->next;
			xor_schedule_free(&e->sched);
			free(e);
			e = n;
		}
	}
	pthread_mutex_destroy(&x->lock);
	free(x);
}

/* Encode targets: the helper rows (into scratch ids) then every parity row. */
static int build_encode(const ec_params *p, xcode *x)
{
	int k = p->k, m = p->m, w = p->w, h = x->helpers.rows;
	int cols = k * w, n = h + m * w;
	bm rows;
	int rc = bm_init(&rows, n, cols);
	if (rc)
		return rc;
	uint32_t *src = malloc(sizeof(uint32_t) * (size_t)cols);
	uint32_t *dst = malloc(sizeof(uint32_t) * (size_t)n);
	if (!src || !dst) {
		rc = EC_ENOMEM;
		goto out;
	}
	for (int c = 0; c < cols; c++)
		src[c] = (uint32_t)c;
	for (int t = 0; t < h; t++) {
		memcpy(bm_row(&rows, t), bm_row(&x->helpers, t), sizeof(uint64_t) * (size_t)rows.words);
		dst[t] = (uint32_t)((k + m) * w + t);
	}
	for (int r = 0; r < m * w; r++) {
		memcpy(bm_row(&rows, h + r), bm_row(&x->coding, r), sizeof(uint64_t) * (size_t)rows.words);
		dst[h + r] = (uint32_t)(k * w + r);
	}
	rc = xor_schedule_build(&rows, src, dst, &x->enc);
	if (!rc)
		rc = xor_schedule_set_order(&x->enc, p->order);
	if (!rc) {
		/* The reference count without reuse (and without helpers). */
		xor_schedule plain;
		bm only = rows;
		only.rows = m * w;
		only.bits = bm_row(&rows, h);
		rc = xor_schedule_build_plain(&only, src, dst + h, &plain);
		if (!rc) {
			x->plain_xors = plain.n_xors;
			xor_schedule_free(&plain);
		}
	}
out:
	free(src);
	free(dst);
	bm_free(&rows);
	return rc;
}

/* Update schedules: for block j the run sees blocks [old, new, parity...]
 * and w scratch packets (ids (2+m)*w + c) that first receive old ^ new. */
static int build_update(const ec_params *p, xcode *x, int j, xor_schedule *out)
{
	int m = p->m, w = p->w;
	size_t cap = (size_t)(2 * w) + (size_t)m * (size_t)w * (size_t)w;
	xor_op *ops = malloc(cap * sizeof(*ops));
	if (!ops)
		return EC_ENOMEM;
	size_t n = 0;
	long xors = 0;
	uint32_t scratch = (uint32_t)((2 + m) * w);
	for (int c = 0; c < w; c++) {
		ops[n++] = (xor_op){ (uint32_t)c, scratch + (uint32_t)c, XOR_OP_COPY, 1 };
		ops[n++] = (xor_op){ (uint32_t)(w + c), scratch + (uint32_t)c, XOR_OP_XOR, 1 };
	}
	for (int r = 0; r < m * w; r++)
		for (int c = 0; c < w; c++)
			if (bm_get(&x->coding, r, j * w + c)) {
				ops[n++] = (xor_op){ scratch + (uint32_t)c, (uint32_t)(2 * w + r), XOR_OP_XOR, 1 };
				xors++;
			}
	xor_mark_runs(ops, n);
	out->ops = ops;
	out->n_ops = n;
	out->n_xors = xors;
	out->word_guided = 0;
	return 0;
}

static int xcode_create(ec_code *code)
{
	ec_params *p = &code->params;
	if (p->order == EC_ORDER_DEFAULT)
		p->order = XOR_DEFAULT_ORDER;
	xcode *x = calloc(1, sizeof(*x));
	if (!x)
		return EC_ENOMEM;
	pthread_mutex_init(&x->lock, NULL);
	int rc = bm_code_build(p, &x->coding, &x->helpers);
	if (rc) {
		pthread_mutex_destroy(&x->lock);
		free(x);
		return rc;
	}
	rc = build_encode(p, x);
	if (!rc) {
		x->upd = calloc((size_t)p->k, sizeof(*x->upd));
		if (!x->upd)
			rc = EC_ENOMEM;
		for (int j = 0; j < p->k && !rc; j++)
			rc = build_update(p, x, j, &x->upd[j]);
	}
	if (rc) {
		xcode_free(x, p->k);
		return rc;
	}
	code->priv = x;
	return 0;
}

static void xcode_destroy(ec_code *code)
{
	xcode_free(code->priv, code->params.k);
	code->priv = NULL;
}

static _Atomic(xor_exec_fn) forced_kernel;

void xor_codes_force_kernel(xor_exec_fn fn)
{
	forced_kernel = fn;
}

static xor_exec_fn current_kernel(void)
{
	xor_exec_fn forced = forced_kernel;
	return forced ? forced : xor_kernel_current()->exec;
}

/* Runs a schedule with a per-call table and scratch area. */
static int run(const ec_code *code, const xor_schedule *s, uint8_t *const *blocks,
               int n_blocks, int n_temps, size_t len)
{
	const ec_params *p = &code->params;
	xor_exec_fn fn = current_kernel();
	size_t n_table = (size_t)n_blocks * (size_t)p->w + (size_t)n_temps;
	uint8_t **table = malloc(n_table * sizeof(*table) + (size_t)n_temps * p->packet_size + 64);
	if (!table)
		return EC_ENOMEM;
	uintptr_t sp = (uintptr_t)(table + n_table);
	sp = (sp + 63) & ~(uintptr_t)63;
	xor_run r = {
		.fn = fn,
		.blocks = blocks,
		.n_blocks = n_blocks,
		.w = p->w,
		.packet_size = p->packet_size,
		.n_temps = n_temps,
		.table = table,
		.scratch = (uint8_t *)sp,
		.word_bytes = xor_word_bytes((int)n_table),
	};
	xor_schedule_run(s, &r, len);
	free(table);
	return 0;
}

static int xcode_encode(const ec_code *code, const uint8_t *const *data,
                        uint8_t *const *parity, size_t len)
{
	const xcode *x = code->priv;
	int k = code->params.k, m = code->params.m;
	uint8_t *blocks[64];
	for (int j = 0; j < k; j++)
		blocks[j] = (uint8_t *)(uintptr_t)data[j]; /* only read */
	for (int i = 0; i < m; i++)
		blocks[k + i] = parity[i];
	return run(code, &x->enc, blocks, k + m, x->helpers.rows, len);
}

/* Rows of one data block j over every packet of the stripe (column b*w+r),
 * recovered from parity block `pi` alone: X d_j = p_pi + B_pi[rest] d_rest
 * with X = B[pi][j], so d_j = X^-1 (p_pi + B_pi[rest] d_rest).  Returns
 * EC_ESINGULAR if X is not invertible. */
static int single_rows(const ec_code *code, int j, int pi, bm *rows)
{
	const xcode *x = code->priv;
	int k = code->params.k, m = code->params.m, w = code->params.w;
	bm xb, xinv, known;
	int rc = bm_init(&xb, w, w);
	if (rc)
		return rc;
	for (int r = 0; r < w; r++)
		for (int c = 0; c < w; c++)
			if (bm_get(&x->coding, pi * w + r, j * w + c))
				bm_set(&xb, r, c);
	rc = bm_invert(&xb, &xinv);
	bm_free(&xb);
	if (rc)
		return rc;
	rc = bm_init(&known, w, (k + m) * w);
	if (!rc)
		rc = bm_init(rows, w, (k + m) * w);
	if (rc) {
		bm_free(&xinv);
		bm_free(&known);
		return rc;
	}
	for (int r = 0; r < w; r++) {
		bm_set(&known, r, (k + pi) * w + r);
		for (int c = 0; c < k * w; c++)
			if (c / w != j && bm_get(&x->coding, pi * w + r, c))
				bm_set(&known, r, c);
	}
	for (int t = 0; t < w; t++)
		for (int u = 0; u < w; u++)
			if (bm_get(&xinv, t, u))
				for (int i = 0; i < rows->words; i++)
					bm_row(rows, t)[i] ^= bm_row(&known, u)[i];
	bm_free(&xinv);
	bm_free(&known);
	return 0;
}

static int union_ones(const bm *a, const bm *b, const char *use_b, int n)
{
	int ones = 0;
	for (int i = 0; i < a->words; i++) {
		uint64_t u = 0;
		for (int t = 0; t < n; t++)
			u |= use_b[t] ? bm_row(b, t)[i] : bm_row(a, t)[i];
		ones += __builtin_popcountll(u);
	}
	return ones;
}

/* Hybrid recovery of a single lost data block when two parities survive
 * (Xiang et al. for RDP, and the same idea for any m >= 2 code here): each
 * lost packet comes either from the first parity's equation or from the
 * second's, chosen greedily to minimize the number of distinct packets
 * read; the rows that share packets then also share XORs in the smart
 * schedule.  Returns 1 (not used) when the mix reads no less than the
 * first parity alone. */
static int build_single_hybrid(const ec_code *code, int j, xor_schedule *out)
{
	int k = code->params.k, m = code->params.m, w = code->params.w;
	bm a, b;
	if (single_rows(code, j, 0, &a) != 0)
		return 1;
	if (single_rows(code, j, 1, &b) != 0) {
		bm_free(&a);
		return 1;
	}
	char use_b[32] = { 0 };
	int best = union_ones(&a, &b, use_b, w), plain = best;
	for (int improved = 1; improved;) {
		improved = 0;
		for (int t = 0; t < w; t++) {
			use_b[t] ^= 1;
			int u = union_ones(&a, &b, use_b, w);
			if (u < best) {
				best = u;
				improved = 1;
			} else {
				use_b[t] ^= 1;
			}
		}
	}
	int rc = 1;
	if (best < plain) {
		/* Keep the mix only if it costs no more XORs than the first
		 * parity alone: in memory, XORs are the cost; fewer reads is
		 * the bonus (RDP gets both, Cauchy codes would pay ~40%). */
		uint32_t src[64 * 32], dst[32];
		xor_schedule only_a;
		for (int c = 0; c < (k + m) * w; c++)
			src[c] = (uint32_t)c;
		for (int t = 0; t < w; t++)
			dst[t] = (uint32_t)(j * w + t);
		rc = xor_schedule_build(&a, src, dst, &only_a);
		long limit = rc ? 0 : only_a.n_xors;
		if (!rc)
			xor_schedule_free(&only_a);
		for (int t = 0; t < w && !rc; t++)
			if (use_b[t])
				memcpy(bm_row(&a, t), bm_row(&b, t), sizeof(uint64_t) * (size_t)a.words);
		if (!rc)
			rc = xor_schedule_build(&a, src, dst, out);
		if (!rc && out->n_xors > limit) {
			xor_schedule_free(out);
			rc = 1;
		}
		if (!rc && (rc = xor_schedule_set_order(out, code->params.order)) != 0)
			xor_schedule_free(out);
	}
	bm_free(&a);
	bm_free(&b);
	return rc;
}

/* The k blocks a decode reads: the first k that survive (data first, so a
 * single data loss uses P, the cheapest).  EC_ETOOMANY if fewer survive. */
static int pick_survivors(const ec_params *p, uint64_t erased, int *surv)
{
	int ns = 0;
	for (int b = 0; b < p->k + p->m && ns < p->k; b++)
		if (!((erased >> b) & 1u))
			surv[ns++] = b;
	return ns < p->k ? EC_ETOOMANY : 0;
}

/* Only the erased data needs an inverse: with E the erased data blocks and
 * S the |E| chosen parity blocks, B[S][E] * d_E = p_S + B[S][rest] * d_rest,
 * so inverting the (|E|w)^2 block B[S][E] gives each erased data packet
 * over survivor packets.  Writes those rows into inv (see data_rows). */
static int solve_erased_data(const ec_code *code, uint64_t erased, const int *surv, bm *inv)
{
	const xcode *x = code->priv;
	int k = code->params.k, w = code->params.w, kw = k * w;
	int erased_data[64], ne = 0, par_pos[64], np = 0;
	for (int b = 0; b < k; b++)
		if ((erased >> b) & 1u)
			erased_data[ne++] = b;
	if (ne == 0)
		return 0;
	for (int s = 0; s < k; s++)
		if (surv[s] >= k)
			par_pos[np++] = s;
	int ew = ne * w;
	bm g, ginv, known;
	int rc = bm_init(&g, ew, ew);
	if (rc)
		return rc;
	for (int a = 0; a < ne; a++)
		for (int r = 0; r < w; r++)
			for (int e = 0; e < ne; e++)
				for (int c = 0; c < w; c++)
					if (bm_get(&x->coding, (surv[par_pos[a]] - k) * w + r,
					           erased_data[e] * w + c))
						bm_set(&g, a * w + r, e * w + c);
	rc = bm_invert(&g, &ginv);
	bm_free(&g);
	if (rc)
		return rc;
	/* known[u]: parity packet u of S plus its known-data terms, as a row
	 * over the sources; erased packet t = sum of known[u] over the ones of
	 * ginv row t. */
	rc = bm_init(&known, ew, kw);
	if (rc) {
		bm_free(&ginv);
		return rc;
	}
	for (int u = 0; u < ew; u++) {
		int a = u / w, r = u % w;
		const uint64_t *brow = bm_row(&x->coding, (surv[par_pos[a]] - k) * w + r);
		bm_set(&known, u, par_pos[a] * w + r);
		for (int s = 0; s < k; s++)
			for (int c = 0; c < w && surv[s] < k; c++)
				if ((brow[(surv[s] * w + c) >> 6] >> ((surv[s] * w + c) & 63)) & 1u)
					bm_set(&known, u, s * w + c);
	}
	for (int t = 0; t < ew; t++) {
		uint64_t *row = bm_row(inv, erased_data[t / w] * w + t % w);
		for (int u = 0; u < ew; u++) {
			if (!bm_get(&ginv, t, u))
				continue;
			const uint64_t *kr = bm_row(&known, u);
			for (int i = 0; i < inv->words; i++)
				row[i] ^= kr[i];
		}
	}
	bm_free(&known);
	bm_free(&ginv);
	return 0;
}

/* inv (k*w square): for every data packet, its row over the sources, where
 * source s*w + r is packet r of block surv[s] (a unit row for a surviving
 * packet). */
static int data_rows(const ec_code *code, uint64_t erased, const int *surv, bm *inv)
{
	int k = code->params.k, w = code->params.w;
	int rc = bm_init(inv, k * w, k * w);
	if (rc)
		return rc;
	for (int s = 0; s < k; s++)
		if (surv[s] < k)
			for (int r = 0; r < w; r++)
				bm_set(inv, surv[s] * w + r, s * w + r);
	rc = solve_erased_data(code, erased, surv, inv);
	if (rc)
		bm_free(inv);
	return rc;
}

/* Schedules every packet of the wanted blocks as its row over the sources:
 * a data packet's row of inv, a parity packet's coding row times inv. */
static int schedule_wanted(const ec_code *code, uint64_t wanted, const int *surv,
                           const bm *inv, xor_schedule *out)
{
	const xcode *x = code->priv;
	const ec_params *p = &code->params;
	int k = p->k, m = p->m, w = p->w, kw = k * w;
	int n_targets = __builtin_popcountll(wanted) * w;
	uint32_t *src = malloc(sizeof(uint32_t) * (size_t)kw);
	uint32_t *dst = malloc(sizeof(uint32_t) * (size_t)(n_targets ? n_targets : 1));
	bm rows = { 0 };
	int rc = 0;
	if (!src || !dst || bm_init(&rows, n_targets, kw)) {
		rc = EC_ENOMEM;
		goto out;
	}
	for (int s = 0; s < k; s++)
		for (int r = 0; r < w; r++)
			src[s * w + r] = (uint32_t)(surv[s] * w + r);
	int t = 0;
	for (int b = 0; b < k + m; b++) {
		if (!((wanted >> b) & 1u))
			continue;
		for (int r = 0; r < w; r++, t++) {
			uint64_t *row = bm_row(&rows, t);
			dst[t] = (uint32_t)(b * w + r);
			if (b < k) {
				memcpy(row, bm_row(inv, b * w + r), sizeof(uint64_t) * (size_t)rows.words);
				continue;
			}
			const uint64_t *brow = bm_row(&x->coding, (b - k) * w + r);
			for (int c = 0; c < kw; c++) {
				if (!((brow[c >> 6] >> (c & 63)) & 1u))
					continue;
				const uint64_t *irow = bm_row(inv, c);
				for (int i = 0; i < rows.words; i++)
					row[i] ^= irow[i];
			}
		}
	}
	rc = xor_schedule_build(&rows, src, dst, out);
	if (!rc && (rc = xor_schedule_set_order(out, p->order)) != 0)
		xor_schedule_free(out);
out:
	free(src);
	free(dst);
	bm_free(&rows);
	return rc;
}

/* Builds the decoding schedule for an erasure set (see the file comment). */
static int build_decode(const ec_code *code, uint64_t erased, uint64_t wanted,
                        xor_schedule *out)
{
	if (code->params.m >= 2 && erased == wanted && __builtin_popcountll(erased) == 1 &&
	    __builtin_ctzll(erased) < code->params.k) {
		int rc = build_single_hybrid(code, __builtin_ctzll(erased), out);
		if (rc <= 0)
			return rc;
	}
	int surv[64];
	bm inv;
	int rc = pick_survivors(&code->params, erased, surv);
	if (!rc)
		rc = data_rows(code, erased, surv, &inv);
	if (rc)
		return rc;
	rc = schedule_wanted(code, wanted, surv, &inv, out);
	bm_free(&inv);
	return rc;
}

static unsigned bucket_of(uint64_t erased, uint64_t wanted)
{
	uint64_t h = (erased * 0x9e3779b97f4a7c15ull) ^ (wanted * 0xc2b2ae3d27d4eb4full);
	return (unsigned)(h >> 56) % CACHE_BUCKETS;
}

static const decode_entry *cache_find(xcode *x, uint64_t erased, uint64_t wanted)
{
	const decode_entry *e = x->buckets[bucket_of(erased, wanted)];
	while (e && !(e->erased == erased && e->wanted == wanted))
		e = e->next;
	return e;
}

static int xcode_decode(const ec_code *code, uint8_t *const *blocks,
                        const int *erased, int n_erased, size_t len)
{
	xcode *x = code->priv;
	int k = code->params.k, m = code->params.m;
	uint64_t emask = 0, wmask = 0;
	for (int i = 0; i < n_erased; i++) {
		emask |= (uint64_t)1 << erased[i];
		if (blocks[erased[i]])
			wmask |= (uint64_t)1 << erased[i];
	}
	if (!wmask)
		return 0;
	pthread_mutex_lock(&x->lock);
	const decode_entry *hit = cache_find(x, emask, wmask);
	pthread_mutex_unlock(&x->lock);
	if (hit)
		return run(code, &hit->sched, blocks, k + m, 0, len);

	decode_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return EC_ENOMEM;
	int rc = build_decode(code, emask, wmask, &e->sched);
	if (rc) {
		free(e);
		return rc;
	}
	e->erased = emask;
	e->wanted = wmask;
	pthread_mutex_lock(&x->lock);
	hit = cache_find(x, emask, wmask);
	int keep = !hit && x->n_cached < CACHE_MAX;
	if (keep) {
		unsigned b = bucket_of(emask, wmask);
		e->next = x->buckets[b];
		x->buckets[b] = e;
		x->n_cached++;
	}
	pthread_mutex_unlock(&x->lock);
	/* Another thread may have inserted the same pattern meanwhile, or the
	 * cache is full: then ours is used once and dropped. */
	rc = run(code, &e->sched, blocks, k + m, 0, len);
	if (!keep) {
		xor_schedule_free(&e->sched);
		free(e);
	}
	return rc;
}

static int xcode_update(const ec_code *code, int index, const uint8_t *old_data,
                        const uint8_t *new_data, uint8_t *const *parity, size_t len)
{
	const xcode *x = code->priv;
	int m = code->params.m;
	uint8_t *blocks[66];
	blocks[0] = (uint8_t *)(uintptr_t)old_data; /* only read */
	blocks[1] = (uint8_t *)(uintptr_t)new_data;
	for (int i = 0; i < m; i++)
		blocks[2 + i] = parity[i];
	return run(code, &x->upd[index], blocks, 2 + m, code->params.w, len);
}

static uint32_t xcode_coefficient(const ec_code *code, int row, int col)
{
	return 0;
}

static long xcode_xor_count(const ec_code *code)
{
	const xcode *x = code->priv;
	return x->enc.n_xors;
}

static size_t xcode_block_align(const ec_code *code)
{
	return (size_t)code->params.w * code->params.packet_size;
}

long xor_code_plain_xor_count(const ec_code *code)
{
	const xcode *x = code->priv;
	return x->plain_xors;
}

long xor_code_matrix_ones(const ec_code *code, int parity_block)
{
	const xcode *x = code->priv;
	int w = code->params.w;
	return bm_ones_rows(&x->coding, parity_block * w, w);
}

/* A fresh (uncached) decoding schedule for an erasure list, all wanted. */
static int schedule_for_list(const ec_code *code, const int *erased, int n_erased,
                             uint64_t *mask, xor_schedule *s)
{
	*mask = 0;
	for (int i = 0; i < n_erased; i++)
		*mask |= (uint64_t)1 << erased[i];
	return build_decode(code, *mask, *mask, s);
}

long xor_code_decode_xor_count(const ec_code *code, const int *erased, int n_erased)
{
	uint64_t mask;
	xor_schedule s;
	int rc = schedule_for_list(code, erased, n_erased, &mask, &s);
	if (rc)
		return rc;
	long n = s.n_xors;
	xor_schedule_free(&s);
	return n;
}

long xor_code_decode_reads(const ec_code *code, const int *erased, int n_erased)
{
	uint64_t mask;
	xor_schedule s;
	int rc = schedule_for_list(code, erased, n_erased, &mask, &s);
	if (rc)
		return rc;
	int n_ids = (code->params.k + code->params.m) * code->params.w;
	char *read = calloc((size_t)n_ids, 1);
	long n = 0;
	for (size_t i = 0; read && i < s.n_ops; i++) {
		uint32_t id = s.ops[i].src;
		if (s.ops[i].kind != XOR_OP_ZERO && !((mask >> (id / (uint32_t)code->params.w)) & 1u) &&
		    !read[id]) {
			read[id] = 1;
			n++;
		}
	}
	free(read);
	xor_schedule_free(&s);
	return read ? n : EC_ENOMEM;
}

int xor_code_cached_patterns(const ec_code *code)
{
	xcode *x = code->priv;
	pthread_mutex_lock(&x->lock);
	int n = x->n_cached;
	pthread_mutex_unlock(&x->lock);
	return n;
}

#define XOR_FAMILY(var, kind_, name_)                   \
	const ec_family var = {                         \
		.kind = kind_,                          \
		.name = name_,                          \
		.bitmatrix = 1,                         \
		.check = bm_code_check,                 \
		.create = xcode_create,                 \
		.destroy = xcode_destroy,               \
		.encode = xcode_encode,                 \
		.decode = xcode_decode,                 \
		.update = xcode_update,                 \
		.coefficient = xcode_coefficient,       \
		.xor_count = xcode_xor_count,           \
		.block_align = xcode_block_align,       \
	}

XOR_FAMILY(ec_family_cauchy_orig, EC_CAUCHY_ORIG, "cauchy-orig");
XOR_FAMILY(ec_family_cauchy_good, EC_CAUCHY_GOOD, "cauchy-good");
XOR_FAMILY(ec_family_liberation, EC_LIBERATION, "liberation");
XOR_FAMILY(ec_family_blaum_roth, EC_BLAUM_ROTH, "blaum-roth");
XOR_FAMILY(ec_family_liber8tion, EC_LIBER8TION, "liber8tion");
XOR_FAMILY(ec_family_evenodd, EC_EVENODD, "evenodd");
XOR_FAMILY(ec_family_rdp, EC_RDP, "rdp");
XOR_FAMILY(ec_family_star, EC_STAR, "star");
