/* SPDX-License-Identifier: MIT */
/*
 * GF(2) matrices and the constructions of the bit-matrix codes.  Every
 * construction here is checked by tests/lib/xor, which decodes every erasure
 * pattern up to m: a matrix that is not MDS fails there.
 */
#include "bitmatrix.h"

#include "gf.h"

#include <stdlib.h>
#include <string.h>

int bm_init(bm *a, int rows, int cols)
{
	a->rows = rows;
	a->cols = cols;
	a->words = (cols + 63) / 64;
	if (a->words == 0)
		a->words = 1;
	size_t n = (size_t)(rows > 0 ? rows : 1) * (size_t)a->words;
	a->bits = calloc(n, sizeof(uint64_t));
	return a->bits ? 0 : EC_ENOMEM;
}

void bm_free(bm *a)
{
	free(a->bits);
	a->bits = NULL;
	a->rows = a->cols = 0;
}

int bm_row_ones(const bm *a, int r)
{
	const uint64_t *row = bm_row(a, r);
	int n = 0;
	for (int i = 0; i < a->words; i++)
		n += __builtin_popcountll(row[i]);
	return n;
}

long bm_ones_rows(const bm *a, int r0, int n)
{
	long t = 0;
	for (int r = r0; r < r0 + n; r++)
		t += bm_row_ones(a, r);
	return t;
}

int bm_invert(const bm *a, bm *inv)
{
	int n = a->rows;
	bm work;
	int rc = bm_init(&work, n, n);
	if (rc)
		return rc;
	rc = bm_init(inv, n, n);
	if (rc) {
		bm_free(&work);
		return rc;
	}
	memcpy(work.bits, a->bits, sizeof(uint64_t) * (size_t)n * (size_t)a->words);
	for (int i = 0; i < n; i++)
		bm_set(inv, i, i);
	/* Gauss-Jordan: rows are bitsets, so each elimination step is a few
	 * word XORs; inv takes the same row operations. */
	int words = work.words;
	for (int c = 0; c < n; c++) {
		int p = c;
		while (p < n && !bm_get(&work, p, c))
			p++;
		if (p == n) {
			bm_free(&work);
			bm_free(inv);
			return EC_ESINGULAR;
		}
		if (p != c) {
			uint64_t *x = bm_row(&work, p), *y = bm_row(&work, c);
			uint64_t *u = bm_row(inv, p), *v = bm_row(inv, c);
			for (int i = 0; i < words; i++) {
				uint64_t t = x[i];
				x[i] = y[i];
				y[i] = t;
				t = u[i];
				u[i] = v[i];
				v[i] = t;
			}
		}
		const uint64_t *pc = bm_row(&work, c), *pi = bm_row(inv, c);
		for (int r = 0; r < n; r++) {
			if (r == c || !bm_get(&work, r, c))
				continue;
			uint64_t *x = bm_row(&work, r), *u = bm_row(inv, r);
			for (int i = 0; i < words; i++) {
				x[i] ^= pc[i];
				u[i] ^= pi[i];
			}
		}
	}
	bm_free(&work);
	return 0;
}

/* x^w reduced, i.e. the primitive polynomial without its top term: found
 * through gf_mul so that this module needs no copy of gf.c's table. */
static uint32_t gf_reduction(int w)
{
	if (w == 1)
		return 1;
	return gf_mul(w, (uint32_t)1 << (w - 1), 2);
}

static uint32_t wmask(int w)
{
	return w == 32 ? 0xffffffffu : (((uint32_t)1 << w) - 1);
}

/* Column c of the bit matrix of e is e * x^c: shift and reduce. */
static uint32_t times_x(int w, uint32_t v, uint32_t red)
{
	uint32_t top = (v >> (w - 1)) & 1u;
	v = (v << 1) & wmask(w);
	return top ? v ^ red : v;
}

void bm_put_gf_element(bm *a, int w, int row_block, int col_block, uint32_t e)
{
	uint32_t red = gf_reduction(w), v = e;
	for (int c = 0; c < w; c++) {
		for (int r = 0; r < w; r++)
			if ((v >> r) & 1u)
				bm_set(a, row_block * w + r, col_block * w + c);
		v = times_x(w, v, red);
	}
}

int bm_gf_element_ones(int w, uint32_t e)
{
	uint32_t red = gf_reduction(w), v = e;
	int n = 0;
	for (int c = 0; c < w; c++) {
		n += __builtin_popcount(v);
		v = times_x(w, v, red);
	}
	return n;
}

int bm_from_gf_matrix(int w, const uint32_t *gfm, int m, int k, bm *out)
{
	int rc = bm_init(out, m * w, k * w);
	if (rc)
		return rc;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < k; j++)
			bm_put_gf_element(out, w, i, j, gfm[i * k + j]);
	return 0;
}

/* ---- parameter checks ---- */

static int is_prime(int n)
{
	if (n < 2)
		return 0;
	for (int d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

int bm_code_check(const ec_params *p)
{
	if (p->k < 1 || p->m < 1 || p->k + p->m > 64)
		return EC_EINVAL;
	if (p->w < 1 || p->w > 32)
		return EC_EINVAL;
	/* Kernels move 64-bit words; a group of w packets must stay small
	 * enough that offsets never overflow. */
	if (p->packet_size == 0 || p->packet_size % 8 != 0 ||
	    p->packet_size > ((size_t)1 << 26))
		return EC_EINVAL;
	if (p->order < EC_ORDER_DEFAULT || p->order > EC_ORDER_DWG)
		return EC_EINVAL;
	int k = p->k, m = p->m, w = p->w;
	switch (p->kind) {
	case EC_CAUCHY_ORIG:
	case EC_CAUCHY_GOOD:
		/* A Cauchy matrix needs k + m distinct field elements. */
		if (!gf_supported_w(w) || (w < 32 && (uint64_t)(k + m) > ((uint64_t)1 << w)))
			return EC_EINVAL;
		return 0;
	case EC_LIBERATION:
		return (m == 2 && w > 2 && is_prime(w) && k <= w) ? 0 : EC_EINVAL;
	case EC_BLAUM_ROTH:
		return (m == 2 && w >= 2 && is_prime(w + 1) && k <= w) ? 0 : EC_EINVAL;
	case EC_LIBER8TION:
		return (m == 2 && w == 8 && k <= bm_liber8tion_max_k()) ? 0 : EC_EINVAL;
	case EC_EVENODD:
		return (m == 2 && w >= 2 && is_prime(w + 1) && k <= w + 1) ? 0 : EC_EINVAL;
	case EC_RDP:
		return (m == 2 && w >= 2 && is_prime(w + 1) && k <= w) ? 0 : EC_EINVAL;
	case EC_STAR:
		return (m == 3 && w >= 4 && is_prime(w + 1) && k <= w + 1) ? 0 : EC_EINVAL;
	default:
		return EC_EINVAL;
	}
}

/* ---- Cauchy Reed-Solomon ---- */

/* Plank's original Cauchy matrix: X = {0..m-1}, Y = {m..m+k-1},
 * a[i][j] = 1 / (x_i + y_j). */
static void cauchy_original(int w, int k, int m, uint32_t *a)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < k; j++)
			a[i * k + j] = gf_inv(w, (uint32_t)i ^ (uint32_t)(m + j));
}

typedef struct weighted {
	int ones;
	uint32_t e;
} weighted;

static int by_ones(const void *x, const void *y)
{
	const weighted *a = x, *b = y;
	if (a->ones != b->ones)
		return a->ones - b->ones;
	return a->e < b->e ? -1 : a->e > b->e;
}

/* The k field elements whose bit matrices have the fewest ones.  With a
 * first row of ones, any k distinct nonzero elements make an MDS [k,2]
 * code (each 2x2 minor is a_i + a_j != 0), so for m = 2 these are the best
 * Cauchy-class matrices.  Small fields are searched exhaustively; for
 * w > 16 the sparse candidates are elements of weight <= 2 and the powers
 * x^-i, whose bit matrices are shifted identities plus the polynomial. */
static int sparsest_elements(int w, int k, uint32_t *out)
{
	size_t cap = w <= 16 ? ((size_t)1 << w) : (size_t)(w + w * (w - 1) / 2 + w);
	weighted *c = malloc(cap * sizeof(*c));
	if (!c)
		return EC_ENOMEM;
	size_t n = 0;
	if (w <= 16) {
		for (uint32_t e = 1; e < ((uint32_t)1 << w); e++)
			c[n++] = (weighted){ bm_gf_element_ones(w, e), e };
	} else {
		for (int i = 0; i < w; i++)
			for (int j = i; j < w; j++) {
				uint32_t e = ((uint32_t)1 << i) | ((uint32_t)1 << j);
				c[n++] = (weighted){ bm_gf_element_ones(w, e), e };
			}
		uint32_t xi = gf_inv(w, 2);
		for (int i = 1; i <= w; i++) {
			uint32_t e = gf_pow(w, xi, (uint32_t)i);
			int dup = 0;
			for (size_t t = 0; t < n && !dup; t++)
				dup = c[t].e == e;
			if (!dup)
				c[n++] = (weighted){ bm_gf_element_ones(w, e), e };
		}
	}
	if (n < (size_t)k) {
		free(c);
		return EC_EINVAL;
	}
	qsort(c, n, sizeof(*c), by_ones);
	for (int j = 0; j < k; j++)
		out[j] = c[j].e;
	free(c);
	return 0;
}

/* Plank, "Optimizing Cauchy Reed-Solomon codes" (NCA 2006): scale the
 * columns so that row 0 is all ones (a row of identities is free of XORs
 * beyond the sum itself), then scale each other row by the divisor that
 * leaves it with the fewest ones.  Scaling rows and columns of a Cauchy
 * matrix keeps every square submatrix invertible. */
static int cauchy_good(int w, int k, int m, uint32_t *a)
{
	if (m == 2) {
		for (int j = 0; j < k; j++)
			a[j] = 1;
		return sparsest_elements(w, k, a + k);
	}
	cauchy_original(w, k, m, a);
	for (int j = 0; j < k; j++) {
		uint32_t d = a[j];
		for (int i = 0; i < m; i++)
			a[i * k + j] = gf_div(w, a[i * k + j], d);
	}
	for (int i = 1; i < m; i++) {
		uint32_t *row = a + i * k;
		long best = -1;
		uint32_t best_d = 1;
		for (int t = 0; t < k; t++) {
			long ones = 0;
			for (int j = 0; j < k; j++)
				ones += bm_gf_element_ones(w, gf_div(w, row[j], row[t]));
			if (best < 0 || ones < best) {
				best = ones;
				best_d = row[t];
			}
		}
		for (int j = 0; j < k; j++)
			row[j] = gf_div(w, row[j], best_d);
	}
	return 0;
}

static int build_cauchy(const ec_params *p, bm *coding)
{
	uint32_t *a = gf_matrix_new(p->m, p->k);
	if (!a)
		return EC_ENOMEM;
	int rc = 0;
	if (p->kind == EC_CAUCHY_ORIG)
		cauchy_original(p->w, p->k, p->m, a);
	else
		rc = cauchy_good(p->w, p->k, p->m, a);
	if (!rc)
		rc = bm_from_gf_matrix(p->w, a, p->m, p->k, coding);
	free(a);
	return rc;
}

/* ---- minimum density RAID-6 codes: P = sum of identities, Q = sum X_j ---- */

static void put_p_row_block(bm *b, int k, int w)
{
	for (int r = 0; r < w; r++)
		for (int j = 0; j < k; j++)
			bm_set(b, r, j * w + r);
}

/* Liberation (Plank, FAST'08), w prime: X_j has ones at (r, r + j mod w)
 * (the identity cyclically shifted by j), plus for j > 0 one extra one at
 * row y = j(w-1)/2 mod w, column y + j - 1 mod w. */
static void build_liberation(int k, int w, bm *b)
{
	put_p_row_block(b, k, w);
	for (int j = 0; j < k; j++) {
		for (int i = 0; i < w; i++)
			bm_set(b, w + i, j * w + (i + j) % w);
		if (j > 0) {
			int y = (j * ((w - 1) / 2)) % w;
			bm_set(b, w + y, j * w + (y + j - 1) % w);
		}
	}
}

/* Blaum-Roth lowest-density code (w + 1 = p prime) in bit-matrix form:
 * with 1-based row l and column c, X_j has a one at c = (l + j) mod p for
 * every row except l = p - j, whose row holds ones at c = j and at
 * c = j / 2 mod p (j times the inverse of 2).  X_0 is the identity. */
static void build_blaum_roth(int k, int w, bm *b)
{
	int p = w + 1;
	put_p_row_block(b, k, w);
	for (int j = 0; j < k; j++) {
		for (int l = 1; l <= w; l++) {
			int row = w + l - 1;
			if (j == 0) {
				bm_set(b, row, l - 1);
			} else if (l != p - j) {
				bm_set(b, row, j * w + (l + j) % p - 1);
			} else {
				int half = (j % 2 == 0) ? j / 2 : (j + p) / 2;
				bm_set(b, row, j * w + j - 1);
				bm_flip(b, row, j * w + half - 1);
			}
		}
	}
}

/* Liber8tion-class w = 8 code.  Plank's published Liber8tion matrices were
 * not available to us, so this table was found by our own search (see
 * docs/xor-codes.md): X_0 = I and X_1..X_7 each a permutation matrix plus
 * one extra one, such that every X_j and every X_i + X_j is invertible,
 * which is exactly the MDS condition for [I..I; X_0..X_7].  Same density
 * as Liber8tion: k*w + k - 1 ones in the Q rows.  perm[r] is the column of
 * row r's one; (er, ec) the extra one. */
static const struct {
	uint8_t perm[8];
	uint8_t er, ec;
} liber8_table[7] = {
	{ { 6, 0, 4, 2, 5, 1, 7, 3 }, 7, 2 },
	{ { 2, 4, 7, 5, 3, 0, 1, 6 }, 5, 7 },
	{ { 1, 5, 6, 2, 7, 3, 4, 0 }, 3, 4 },
	{ { 5, 6, 0, 4, 1, 7, 2, 3 }, 0, 3 },
	{ { 7, 3, 5, 6, 2, 0, 4, 1 }, 6, 0 },
	{ { 3, 2, 7, 1, 6, 4, 0, 5 }, 2, 6 },
	{ { 5, 7, 1, 0, 6, 2, 3, 4 }, 4, 5 },
};

int bm_liber8tion_max_k(void)
{
	return 1 + (int)(sizeof(liber8_table) / sizeof(liber8_table[0]));
}

static void build_liber8tion(int k, bm *b)
{
	const int w = 8;
	put_p_row_block(b, k, w);
	for (int r = 0; r < w; r++)
		bm_set(b, w + r, r);
	for (int j = 1; j < k; j++) {
		for (int r = 0; r < w; r++)
			bm_set(b, w + r, j * w + liber8_table[j - 1].perm[r]);
		bm_set(b, w + liber8_table[j - 1].er, j * w + liber8_table[j - 1].ec);
	}
}

/* ---- array codes over a (p-1) x p grid: EVENODD, RDP, STAR ----
 * Data block j is array column j, packet r is array row r; row p-1 is an
 * imaginary row of zeros.  A code shortened to k < p columns keeps the
 * missing columns as zeros. */

/* Toggles into row `row` of `b` the diagonal {(c, r) : r - s*c = d mod p}
 * over data columns 0..k-1 (s = +1 or -1 slope sign), skipping row p-1. */
static void add_diagonal(bm *b, int row, int k, int w, int d, int s)
{
	int p = w + 1;
	for (int c = 0; c < k; c++) {
		int r = ((d + s * c) % p + p) % p;
		if (r != p - 1)
			bm_flip(b, row, c * w + r);
	}
}

/* EVENODD (Blaum et al. 1995): Q_d = S + diagonal d, with the adjuster S
 * the diagonal p-1.  STAR (Huang and Xu) adds R_d = S' + anti-diagonal d.
 * The adjusters are also returned as helper rows so the schedule computes
 * them once. */
static int build_evenodd_star(int k, int m, int w, bm *b, bm *helpers)
{
	int rc = bm_init(helpers, m - 1, k * w);
	if (rc)
		return rc;
	put_p_row_block(b, k, w);
	for (int t = 1; t < m; t++) {
		int s = t == 1 ? -1 : 1; /* Q: r = d - c; R: r = d + c */
		add_diagonal(helpers, t - 1, k, w, w, s);
		for (int d = 0; d < w; d++) {
			int row = t * w + d;
			add_diagonal(b, row, k, w, d, s);
			uint64_t *x = bm_row(b, row);
			const uint64_t *h = bm_row(helpers, t - 1);
			for (int i = 0; i < b->words; i++)
				x[i] ^= h[i];
		}
	}
	return 0;
}

/* RDP (Corbett et al., FAST'04): P is the row parity; Q_d is the diagonal
 * d over the p-1 data columns and the P column (column p-1).  A shortened
 * code drops the *first* data columns: that keeps the optimal k-1 XORs per
 * parity word for k = p-2 too (dropping the last one costs one XOR more). */
static void build_rdp(int k, int w, bm *b)
{
	int p = w + 1, first = (p - 1) - k;
	put_p_row_block(b, k, w);
	for (int d = 0; d < w; d++) {
		int row = w + d;
		for (int c = 0; c < p; c++) {
			int r = ((d - c) % p + p) % p;
			if (r == p - 1)
				continue;
			if (c == p - 1) {
				for (int j = 0; j < k; j++)
					bm_flip(b, row, j * w + r);
			} else if (c >= first) {
				bm_flip(b, row, (c - first) * w + r);
			}
		}
	}
}

int bm_code_build(const ec_params *p, bm *coding, bm *helpers)
{
	int rc = bm_code_check(p);
	if (rc)
		return rc;
	int k = p->k, m = p->m, w = p->w;
	helpers->bits = NULL;
	if (p->kind == EC_CAUCHY_ORIG || p->kind == EC_CAUCHY_GOOD) {
		rc = build_cauchy(p, coding);
		if (!rc)
			rc = bm_init(helpers, 0, k * w);
		if (rc)
			bm_free(coding);
		return rc;
	}
	rc = bm_init(coding, m * w, k * w);
	if (rc)
		return rc;
	switch (p->kind) {
	case EC_LIBERATION:
		build_liberation(k, w, coding);
		break;
	case EC_BLAUM_ROTH:
		build_blaum_roth(k, w, coding);
		break;
	case EC_LIBER8TION:
		build_liber8tion(k, coding);
		break;
	case EC_RDP:
		build_rdp(k, w, coding);
		break;
	case EC_EVENODD:
	case EC_STAR:
		rc = build_evenodd_star(k, m, w, coding, helpers);
		if (rc) {
			bm_free(coding);
			return rc;
		}
		return 0;
	default:
		bm_free(coding);
		return EC_EINVAL;
	}
	rc = bm_init(helpers, 0, k * w);
	if (rc)
		bm_free(coding);
	return rc;
}
