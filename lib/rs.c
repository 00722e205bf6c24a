/* SPDX-License-Identifier: MIT */
/*
 * Reed-Solomon over GF(2^8), GF(2^16) and GF(2^32): the "rs-vandermonde"
 * and "rs-cauchy" families.
 *
 * A code keeps its m x k coding matrix C (parity = C * data) and, built
 * once at creation, the per-coefficient tables the region kernels use, so
 * encoding does no setup work.  Decoding reads the first k surviving blocks
 * and derives one row of coefficients over them per erased block (see
 * decoding_rows: only the erased-data part of the matrix is inverted).
 * Those rows and their tables are cached per erasure pattern in a bounded,
 * direct-mapped table under a read-write lock: a hit costs a hash, a short
 * read-locked lookup and an atomic reference count, with no allocation, and
 * the coding itself runs outside the lock, so a thread publishing a new
 * pattern never waits behind long decodes.  A miss builds the entry outside
 * the lock, uses it, and then publishes it (evicting whatever pattern had
 * that slot; an evicted entry is freed by its last user).  In front of that,
 * each thread holds references to the last few patterns it used (of any
 * code, told apart by a number no other code gets): a decode that repeats
 * one, the usual case while a member is missing, takes no lock and does no
 * atomic operation, which at 4 KiB strips costs as much as a tenth of the
 * coding.
 */
#include "ec_internal.h"
#include "families.h"
#include "gf.h"
#include "gf8_kernels.h"
#include "gfw.h"

#include <stdlib.h>
#include <string.h>

/* Coefficient tables for `rows` rows of k coefficients. */
typedef struct rs_tables {
	int rows;
	void *mem;
	gf8_row *gf8;         /* w = 8: one kernel row per matrix row */
	const uint8_t **wtab; /* w = 16, 32: k tables per matrix row */
} rs_tables;

typedef struct rs_pattern {
	int refs; /* the cache's reference plus one per decode using it */
	uint64_t hash;
	int n_erased;
	int *erased; /* sorted erased blocks */
	int *surv;   /* the k surviving blocks decoding reads */
	rs_tables tab;
} rs_pattern;

typedef struct rs_code {
	uint64_t id; /* unique among the codes of this process */
	int w, k, m;
	uint32_t *c; /* m x k coding matrix */
	rs_tables enc;
	pthread_rwlock_t lock;
	size_t nslots;
	rs_pattern **slots;
} rs_code;

/* Bytes of decode tables the cache may hold per code, and its slot bounds. */
#define CACHE_BUDGET ((size_t)64 << 20)
#define CACHE_MIN_SLOTS 8
#define CACHE_MAX_SLOTS 1024
/* Pointer arrays up to this size live on the stack. */
#define STACK_PTRS 256

static size_t coef_bytes(int w)
{
	return w == 8 ? GF8_NIB_BYTES + sizeof(uint64_t) : gfw_table_bytes(w);
}

static void tables_free(rs_tables *t)
{
	free(t->mem);
	free(t->gf8);
	free(t->wtab);
	memset(t, 0, sizeof(*t));
}

/* Builds the tables of a rows x k matrix. */
static int tables_build(int w, int k, int rows, const uint32_t *mat,
                        rs_tables *t)
{
	size_t n = (size_t)rows * (size_t)k;
	size_t bytes = n * coef_bytes(w);

	memset(t, 0, sizeof(*t));
	t->rows = rows;
	/* 64-byte alignment lets the kernels use aligned table loads. */
	t->mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	if (!t->mem)
		return EC_ENOMEM;
	if (w == 8) {
		uint8_t *nib = t->mem;
		uint64_t *aff = (uint64_t *)(nib + n * GF8_NIB_BYTES);

		t->gf8 = calloc((size_t)rows, sizeof(*t->gf8));
		if (!t->gf8)
			goto nomem;
		for (size_t i = 0; i < n; i++)
			gf8_table_init((uint8_t)mat[i], nib + i * GF8_NIB_BYTES, aff + i);
		for (int r = 0; r < rows; r++) {
			t->gf8[r].nib = nib + (size_t)r * (size_t)k * GF8_NIB_BYTES;
			t->gf8[r].aff = aff + (size_t)r * (size_t)k;
		}
	} else {
		size_t tb = gfw_table_bytes(w);
		uint8_t *base = t->mem;

		t->wtab = calloc((size_t)rows, sizeof(*t->wtab));
		if (!t->wtab)
			goto nomem;
		for (size_t i = 0; i < n; i++)
			gfw_table_init(w, mat[i], base + i * tb);
		for (int r = 0; r < rows; r++)
			t->wtab[r] = base + (size_t)r * (size_t)k * tb;
	}
	return 0;
nomem:
	tables_free(t);
	return EC_ENOMEM;
}

static void pattern_release(rs_pattern *p);

static void rs_destroy(ec_code *code)
{
	rs_code *rs = code->priv;

	if (!rs)
		return;
	/* The cache's references: a thread may still hold a pattern (it
	 * frees it when it lets it go). */
	for (size_t i = 0; i < rs->nslots; i++)
		pattern_release(rs->slots[i]);
	free(rs->slots);
	pthread_rwlock_destroy(&rs->lock);
	tables_free(&rs->enc);
	free(rs->c);
	free(rs);
	code->priv = NULL;
}

static int rs_check(const ec_params *p)
{
	int w = p->w;

	if ((w != 8 && w != 16 && w != 32) || p->packet_size != 0)
		return EC_EINVAL;
	/* A generator needs k + m distinct field elements. */
	if ((uint64_t)p->k + (uint64_t)p->m > ((uint64_t)1 << w))
		return EC_EINVAL;
	return 0;
}

static uint64_t next_code_id;

static int rs_create(ec_code *code)
{
	const ec_params *p = &code->params;
	int w = p->w, k = p->k, m = p->m;
	rs_code *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return EC_ENOMEM;
	code->priv = rs;
	rs->id = __atomic_add_fetch(&next_code_id, 1, __ATOMIC_RELAXED);
	rs->w = w;
	rs->k = k;
	rs->m = m;
	if (pthread_rwlock_init(&rs->lock, NULL) != 0) {
		free(rs);
		code->priv = NULL;
		return EC_ENOMEM;
	}
	rs->c = gf_matrix_new(m, k);
	if (!rs->c)
		goto nomem;

	int rc = p->kind == EC_RS_CAUCHY ? gf_coding_matrix_cauchy(w, k, m, rs->c)
	                                 : gf_coding_matrix_vandermonde(w, k, m, rs->c);
	if (rc == 0)
		rc = tables_build(w, k, m, rs->c, &rs->enc);
	if (rc != 0) {
		rs_destroy(code);
		return rc;
	}

	size_t per = (size_t)m * (size_t)k * coef_bytes(w) + 1;
	size_t slots = CACHE_BUDGET / per;

	if (slots < CACHE_MIN_SLOTS)
		slots = CACHE_MIN_SLOTS;
	if (slots > CACHE_MAX_SLOTS)
		slots = CACHE_MAX_SLOTS;
	rs->nslots = slots;
	rs->slots = calloc(slots, sizeof(*rs->slots));
	if (!rs->slots)
		goto nomem;
	return 0;
nomem:
	rs_destroy(code);
	return EC_ENOMEM;
}

/* Runs one dot product (rows of `tab` selected by `sel`) over the region. */
static void run_dot(const rs_code *rs, const rs_tables *tab, const int *sel,
                    int nout, const uint8_t *const *in, uint8_t *const *out,
                    size_t len, int accumulate)
{
	if (rs->w == 8) {
		gf8_row rows_stack[STACK_PTRS];
		gf8_row *rows = rows_stack;

		if (!sel) {
			gf8_dot(len, rs->k, nout, tab->gf8, in, out, accumulate);
			return;
		}
		/* nout <= m < 2^8 = STACK_PTRS for w = 8 */
		for (int r = 0; r < nout; r++)
			rows[r] = tab->gf8[sel[r]];
		gf8_dot(len, rs->k, nout, rows, in, out, accumulate);
		return;
	}

	if (!sel) {
		gfw_dot(rs->w, len, rs->k, nout, tab->wtab, in, out, accumulate);
		return;
	}
	/* A subset of rows (some erased blocks are not wanted): one pass per
	 * row, which for these table-driven fields costs little extra. */
	for (int r = 0; r < nout; r++)
		gfw_dot(rs->w, len, rs->k, 1, &tab->wtab[sel[r]], in, &out[r],
		        accumulate);
}

static int rs_encode(const ec_code *code, const uint8_t *const *data,
                     uint8_t *const *parity, size_t len)
{
	const rs_code *rs = code->priv;

	run_dot(rs, &rs->enc, NULL, rs->m, data, parity, len, 0);
	return 0;
}

static uint64_t pattern_hash(const int *erased, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < n; i++) {
		h ^= (uint64_t)(uint32_t)erased[i];
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

static int pattern_matches(const rs_pattern *p, uint64_t h, const int *erased,
                           int n)
{
	return p && p->hash == h && p->n_erased == n &&
	       memcmp(p->erased, erased, (size_t)n * sizeof(*erased)) == 0;
}

static void pattern_free(rs_pattern *p)
{
	if (p) {
		tables_free(&p->tab);
		free(p->erased);
		free(p);
	}
}

/*
 * The decoding rows of an erasure pattern, over the survivors surv[] (the
 * first k blocks not erased: the surviving data, then the first e_d
 * surviving parities, where e_d is the number of erased data blocks).
 * Rather than inverting the k x k survivor matrix, solve only for the
 * erased data: with E the erased data, S the surviving data and R the
 * parities used,  C[R][E] d_E = p_R + C[R][S] d_S,  so with M = C[R][E]:
 *   d_E = M^-1 p_R + M^-1 C[R][S] d_S        (an e_d x e_d inversion)
 * and an erased parity j is C[j][S] d_S + C[j][E] d_E.
 */
static int decoding_rows(const rs_code *rs, const rs_pattern *p,
                         uint32_t *rows)
{
	int k = rs->k, w = rs->w, n = p->n_erased;
	size_t kk = (size_t)k;
	int ed = 0;

	while (ed < n && p->erased[ed] < k)
		ed++;
	int ks = k - ed; /* surv[0..ks-1] are the surviving data blocks */
	/* surv[ks .. k-1] are the parities R used for the erased data. */
	const int *r = p->surv + ks;
	uint32_t *m = ed ? gf_matrix_new(ed, ed) : NULL;
	uint32_t *minv = ed ? gf_matrix_new(ed, ed) : NULL;
	/* sv: C[R][S], the used parities over the surviving data */
	uint32_t *sv = ed && ks ? gf_matrix_new(ed, ks) : NULL;
	int rc = EC_ENOMEM;

	if (ed && (!m || !minv || (ks && !sv)))
		goto out;
	for (int t = 0; t < ed; t++) {
		const uint32_t *ct = rs->c + (size_t)(r[t] - k) * kk;

		for (int j = 0; j < ed; j++)
			m[t * ed + j] = ct[p->erased[j]];
		for (int i = 0; i < ks; i++)
			sv[(size_t)t * (size_t)ks + (size_t)i] = ct[p->surv[i]];
	}
	if (ed) {
		rc = gf_matrix_invert(w, m, minv, ed);
		if (rc != 0)
			goto out;
	}
	/* Erased data j: sum over t of Minv[j][t] (p_R[t] + C[R_t][S] d_S). */
	for (int j = 0; j < ed; j++) {
		uint32_t *row = rows + (size_t)j * kk;

		memset(row, 0, kk * sizeof(*row));
		for (int t = 0; t < ed; t++) {
			uint32_t f = minv[j * ed + t];

			row[ks + t] ^= f;
			if (ks)
				gf_row_addmul(w, row, sv + (size_t)t * (size_t)ks, f, ks);
		}
	}
	/* Erased parity: C[j][S] d_S + sum over erased data x of C[j][x] d_x. */
	for (int e = ed; e < n; e++) {
		uint32_t *row = rows + (size_t)e * kk;
		const uint32_t *cj = rs->c + (size_t)(p->erased[e] - k) * kk;

		memset(row, 0, kk * sizeof(*row));
		for (int i = 0; i < ks; i++)
			row[i] = cj[p->surv[i]];
		for (int j = 0; j < ed; j++)
			gf_row_addmul(w, row, rows + (size_t)j * kk, cj[p->erased[j]], k);
	}
	rc = 0;
out:
	free(m);
	free(minv);
	free(sv);
	return rc;
}

static int pattern_build(const rs_code *rs, uint64_t h, const int *erased,
                         int n, rs_pattern **out)
{
	int k = rs->k;
	rs_pattern *p = calloc(1, sizeof(*p));
	uint32_t *rows = gf_matrix_new(n, k);
	int rc = EC_ENOMEM;

	if (!p || !rows)
		goto out;
	p->erased = malloc(((size_t)n + (size_t)k) * sizeof(int));
	if (!p->erased)
		goto out;
	p->surv = p->erased + n;
	p->hash = h;
	p->n_erased = n;
	memcpy(p->erased, erased, (size_t)n * sizeof(int));
	for (int b = 0, e = 0, j = 0; j < k; b++) {
		if (e < n && erased[e] == b) {
			e++;
			continue;
		}
		p->surv[j++] = b;
	}
	rc = decoding_rows(rs, p, rows);
	if (rc == 0)
		rc = tables_build(rs->w, k, n, rows, &p->tab);
out:
	free(rows);
	if (rc != 0) {
		pattern_free(p);
		p = NULL;
	}
	*out = p;
	return rc;
}

static int decode_with(const rs_code *rs, const rs_pattern *p,
                       uint8_t *const *blocks, size_t len)
{
	const uint8_t *in_stack[STACK_PTRS];
	uint8_t *out_stack[STACK_PTRS];
	int sel_stack[STACK_PTRS];
	const uint8_t **in = in_stack;
	uint8_t **out = out_stack;
	int *sel = sel_stack;
	int k = rs->k, nout = 0;
	void *heap = NULL;

	if (k > STACK_PTRS || p->n_erased > STACK_PTRS) {
		/* Only GF(2^16)/(2^32) codes are this wide. */
		size_t n = (size_t)k + (size_t)p->n_erased;

		heap = malloc(n * (sizeof(*in) + sizeof(*out) + sizeof(*sel)));
		if (!heap)
			return EC_ENOMEM;
		in = heap;
		out = (uint8_t **)(in + k);
		sel = (int *)(out + p->n_erased);
	}
	for (int i = 0; i < k; i++)
		in[i] = blocks[p->surv[i]];
	for (int e = 0; e < p->n_erased; e++) {
		if (blocks[p->erased[e]]) {
			out[nout] = blocks[p->erased[e]];
			sel[nout++] = e;
		}
	}
	if (nout > 0)
		run_dot(rs, &p->tab, nout == p->n_erased ? NULL : sel, nout, in,
		        out, len, 0);
	if (heap)
		free(heap);
	return 0;
}

static void pattern_release(rs_pattern *p)
{
	if (p && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0)
		pattern_free(p);
}

/*
 * The patterns a thread used last: (code id, pattern) pairs, each holding a
 * reference to its pattern, released when the entry is reused or the
 * thread exits (the key's destructor).  An entry of a destroyed code is
 * never matched again (ids are not reused) and goes the same way.
 */
#define THREAD_PATTERNS 4

typedef struct thread_pattern {
	uint64_t code_id;
	rs_pattern *p;
} thread_pattern;

/* libec is a static library (no shared object of this project links it):
 * its thread-locals are the executable's, so the cheapest model, a fixed
 * offset with no call, is valid, and the PIC objects do not call
 * __tls_get_addr on every decode. */
#define THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))

static THREAD_LOCAL thread_pattern thread_patterns[THREAD_PATTERNS];
static THREAD_LOCAL unsigned thread_next;
static THREAD_LOCAL int thread_state; /* 0 unset, 1 in use, -1 unavailable */
static pthread_key_t thread_key;
static int thread_key_ok;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

static void thread_patterns_release(void *unused)
{
	(void)unused;
	for (int i = 0; i < THREAD_PATTERNS; i++) {
		pattern_release(thread_patterns[i].p);
		thread_patterns[i] = (thread_pattern){ 0, NULL };
	}
}

static void thread_key_init(void)
{
	thread_key_ok = pthread_key_create(&thread_key, thread_patterns_release) == 0;
}

static const rs_pattern *thread_find(uint64_t id, const int *erased, int n)
{
	for (int i = 0; i < THREAD_PATTERNS; i++) {
		const rs_pattern *p = thread_patterns[i].p;
		int e = 0;

		if (thread_patterns[i].code_id != id || p->n_erased != n)
			continue;
		while (e < n && p->erased[e] == erased[e])
			e++;
		if (e == n)
			return p;
	}
	return NULL;
}

/* Hands this thread the reference the caller holds on p; 0 if the thread
 * cannot keep it (the caller then releases it). */
static int thread_keep(uint64_t id, rs_pattern *p)
{
	if (thread_state == 0) {
		pthread_once(&thread_key_once, thread_key_init);
		/* The destructor runs only for a non-NULL value. */
		thread_state = thread_key_ok && pthread_setspecific(thread_key, &thread_state) == 0
		               ? 1 : -1;
	}
	if (thread_state < 0)
		return 0;

	thread_pattern *t = &thread_patterns[thread_next++ % THREAD_PATTERNS];

	pattern_release(t->p);
	*t = (thread_pattern){ id, p };
	return 1;
}

/* A decode that found no pattern of its own: the shared cache's, or a new
 * one, built and published.  Its reference goes to the thread if it can
 * keep it.  Not inlined, so that the usual decode does not pay for its
 * stack frame. */
__attribute__((noinline)) static int
decode_shared(rs_code *rs, uint8_t *const *blocks, const int *erased,
              int n_erased, size_t len)
{
	uint64_t h = pattern_hash(erased, n_erased);
	size_t slot = (size_t)(h % rs->nslots);
	rs_pattern *p;
	int rc;

	pthread_rwlock_rdlock(&rs->lock);
	p = rs->slots[slot];
	if (pattern_matches(p, h, erased, n_erased))
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	else
		p = NULL;
	pthread_rwlock_unlock(&rs->lock);
	if (p) {
		rc = decode_with(rs, p, blocks, len);
		if (!thread_keep(rs->id, p))
			pattern_release(p);
		return rc;
	}

	rc = pattern_build(rs, h, erased, n_erased, &p);
	if (rc != 0)
		return rc;
	p->refs = 2; /* this decode's and the cache's */
	rc = decode_with(rs, p, blocks, len);

	/* Publish; another thread may have done the same meanwhile. */
	rs_pattern *old = p;

	pthread_rwlock_wrlock(&rs->lock);
	if (!pattern_matches(rs->slots[slot], h, erased, n_erased)) {
		old = rs->slots[slot];
		rs->slots[slot] = p;
	}
	pthread_rwlock_unlock(&rs->lock);
	pattern_release(old);
	if (!thread_keep(rs->id, p))
		pattern_release(p);
	return rc;
}

static int rs_decode(const ec_code *code, uint8_t *const *blocks,
                     const int *erased, int n_erased, size_t len)
{
	rs_code *rs = code->priv;
	const rs_pattern *p = thread_find(rs->id, erased, n_erased);

	if (p)
		return decode_with(rs, p, blocks, len);
	return decode_shared(rs, blocks, erased, n_erased, len);
}

#define UPDATE_SLICE 4096

static int rs_update(const ec_code *code, int index, const uint8_t *old_data,
                     const uint8_t *new_data, uint8_t *const *parity,
                     size_t len)
{
	const rs_code *rs = code->priv;
	int m = rs->m;
	_Alignas(64) uint8_t delta[UPDATE_SLICE];
	const uint8_t *in[1] = { delta };
	uint8_t *out_stack[STACK_PTRS];
	uint8_t **out = out_stack;
	void *heap = NULL;
	rs_tables col;

	/* The tables of column `index`, one row per parity: a view into the
	 * encoding tables with k = 1. */
	gf8_row rows8[STACK_PTRS];
	const uint8_t *wrows_stack[STACK_PTRS];
	const uint8_t **wrows = wrows_stack;

	if (m > STACK_PTRS) {
		heap = malloc((size_t)m * (sizeof(*out) + sizeof(*wrows)));
		if (!heap)
			return EC_ENOMEM;
		out = heap;
		wrows = (const uint8_t **)(out + m);
	}
	memset(&col, 0, sizeof(col));
	col.rows = m;
	if (rs->w == 8) {
		for (int j = 0; j < m; j++) {
			rows8[j].nib = rs->enc.gf8[j].nib + (size_t)index * GF8_NIB_BYTES;
			rows8[j].aff = rs->enc.gf8[j].aff + index;
		}
		col.gf8 = rows8;
	} else {
		for (int j = 0; j < m; j++)
			wrows[j] = rs->enc.wtab[j] + (size_t)index * gfw_table_bytes(rs->w);
		col.wtab = wrows;
	}

	rs_code one = *rs;

	one.k = 1;
	for (size_t off = 0; off < len; off += UPDATE_SLICE) {
		size_t n = len - off < UPDATE_SLICE ? len - off : UPDATE_SLICE;

		for (size_t i = 0; i < n; i++)
			delta[i] = old_data[off + i] ^ new_data[off + i];
		for (int j = 0; j < m; j++)
			out[j] = parity[j] + off;
		run_dot(&one, &col, NULL, m, in, out, n, 1);
	}
	free(heap);
	return 0;
}

static uint32_t rs_coefficient(const ec_code *code, int row, int col)
{
	const rs_code *rs = code->priv;

	return rs->c[(size_t)row * (size_t)rs->k + (size_t)col];
}

static long rs_xor_count(const ec_code *code)
{
	return 0;
}

static size_t rs_block_align(const ec_code *code)
{
	return (size_t)code->params.w / 8;
}

/* The two families differ only in the generator rs_create builds. */
#define RS_FAMILY(KIND, NAME)                                                  \
	{                                                                      \
		.kind = KIND, .name = NAME, .check = rs_check,                 \
		.create = rs_create,                                           \
		.destroy = rs_destroy, .encode = rs_encode,                    \
		.decode = rs_decode, .update = rs_update,                      \
		.coefficient = rs_coefficient, .xor_count = rs_xor_count,      \
		.block_align = rs_block_align,                                 \
	}

const ec_family ec_family_rs_vandermonde = RS_FAMILY(EC_RS_VANDERMONDE, "rs-vandermonde");
const ec_family ec_family_rs_cauchy = RS_FAMILY(EC_RS_CAUCHY, "rs-cauchy");
