/* SPDX-License-Identifier: MIT */
/*
 * Scalar arithmetic in GF(2^w), w = 1..32, and dense matrices over it.
 *
 * These functions build generator and decoding matrices and the per
 * coefficient tables of the region kernels; they never touch block data, so
 * they favour clarity over speed.  GF(2^8) and GF(2^16) use log/antilog
 * tables (built once, thread-safely); every other w multiplies by shift and
 * reduce.  The primitive polynomials are the classic table also used by
 * Jerasure (and, for w = 8/16/32, by ISA-L and gf-complete), given here with
 * the x^w term included except for w = 32:
 *
 *   w:  1 0x3        2 0x7        3 0xb        4 0x13       5 0x25
 *       6 0x43       7 0x89       8 0x11d      9 0x211     10 0x409
 *      11 0x805     12 0x1053    13 0x201b    14 0x4443    15 0x8003
 *      16 0x1100b   17 0x20009   18 0x40081   19 0x80027   20 0x100009
 *      21 0x200005  22 0x400003  23 0x800021  24 0x1000087 25 0x2000009
 *      26 0x4000047 27 0x8000027 28 0x10000009 29 0x20000005
 *      30 0x40800007 31 0x80000009 32 (x^32 +) 0x400007
 */
#include "gf.h"

#include "ec.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t prim_poly[33] = {
	0,          0x3,        0x7,        0xb,        0x13,       0x25,
	0x43,       0x89,       0x11d,      0x211,      0x409,      0x805,
	0x1053,     0x201b,     0x4443,     0x8003,     0x1100b,    0x20009,
	0x40081,    0x80027,    0x100009,   0x200005,   0x400003,   0x800021,
	0x1000087,  0x2000009,  0x4000047,  0x8000027,  0x10000009, 0x20000005,
	0x40800007, 0x80000009, 0x400007,
};

int gf_supported_w(int w)
{
	return w >= 1 && w <= 32;
}

static uint32_t field_mask(int w)
{
	return w == 32 ? 0xffffffffu : (1u << w) - 1;
}

/* Shift-and-add multiplication, reducing as we go: works for every w. */
static uint32_t mul_slow(int w, uint32_t a, uint32_t b)
{
	uint32_t mask = field_mask(w);
	uint32_t top = 1u << (w - 1);
	uint32_t poly = prim_poly[w] & mask; /* without the x^w term */
	uint32_t r = 0;

	a &= mask;
	b &= mask;
	while (b) {
		if (b & 1)
			r ^= a;
		b >>= 1;
		a = (a & top) ? (((a << 1) & mask) ^ poly) : (a << 1);
	}
	return r;
}

/* Log tables for w = 8 and w = 16.  exp[] is doubled so that
 * exp[log a + log b] needs no modulo. */
static uint8_t gf8_exp[510];
static uint8_t gf8_log[256];
static uint16_t *gf16_exp; /* 2 * 65535 entries */
static uint16_t *gf16_log; /* 65536 entries */
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static int tables_ready; /* set (release) once the tables are built */

static void build_tables(void)
{
	uint32_t x = 1;

	for (int i = 0; i < 255; i++) {
		gf8_exp[i] = gf8_exp[i + 255] = (uint8_t)x;
		gf8_log[x] = (uint8_t)i;
		x = mul_slow(8, x, 2);
	}
	gf16_exp = malloc(2 * 65535 * sizeof(*gf16_exp));
	gf16_log = malloc(65536 * sizeof(*gf16_log));
	if (!gf16_exp || !gf16_log) {
		/* Fall back to shift-and-add for w = 16 (still correct). */
		free(gf16_exp);
		free(gf16_log);
		gf16_exp = NULL;
		gf16_log = NULL;
		__atomic_store_n(&tables_ready, 1, __ATOMIC_RELEASE);
		return;
	}
	x = 1;
	for (int i = 0; i < 65535; i++) {
		gf16_exp[i] = gf16_exp[i + 65535] = (uint16_t)x;
		gf16_log[x] = (uint16_t)i;
		x = mul_slow(16, x, 2);
	}
	__atomic_store_n(&tables_ready, 1, __ATOMIC_RELEASE);
}

static void ensure_tables(void)
{
	/* The flag spares the hot matrix loops a pthread_once call each. */
	if (!__atomic_load_n(&tables_ready, __ATOMIC_ACQUIRE))
		pthread_once(&tables_once, build_tables);
}

uint32_t gf_mul(int w, uint32_t a, uint32_t b)
{
	if (w == 8) {
		a &= 0xff;
		b &= 0xff;
		if (!a || !b)
			return 0;
		ensure_tables();
		return gf8_exp[gf8_log[a] + gf8_log[b]];
	}
	if (w == 16) {
		a &= 0xffff;
		b &= 0xffff;
		if (!a || !b)
			return 0;
		ensure_tables();
		if (gf16_log)
			return gf16_exp[gf16_log[a] + gf16_log[b]];
	}
	if (w == 1)
		return a & b & 1;
	return mul_slow(w, a, b);
}

uint32_t gf_pow(int w, uint32_t a, uint32_t e)
{
	uint32_t r = 1;

	while (e) {
		if (e & 1)
			r = gf_mul(w, r, a);
		a = gf_mul(w, a, a);
		e >>= 1;
	}
	return r;
}

uint32_t gf_inv(int w, uint32_t a)
{
	if (w == 8 && (a & 0xff)) {
		ensure_tables();
		return gf8_exp[255 - gf8_log[a & 0xff]];
	}
	if (w == 16 && (a & 0xffff)) {
		ensure_tables();
		if (gf16_log)
			return gf16_exp[65535 - gf16_log[a & 0xffff]];
	}
	/* The multiplicative group has order 2^w - 1, so a^-1 = a^(2^w - 2). */
	return gf_pow(w, a, field_mask(w) - 1);
}

uint32_t gf_div(int w, uint32_t a, uint32_t b)
{
	return gf_mul(w, a, gf_inv(w, b));
}

void gf_row_addmul(int w, uint32_t *dst, const uint32_t *src, uint32_t f,
                   int n)
{
	if (f == 0)
		return;
	if (f == 1) {
		for (int j = 0; j < n; j++)
			dst[j] ^= src[j];
		return;
	}
	ensure_tables();
	if (w == 8) {
		unsigned lf = gf8_log[f & 0xff];

		for (int j = 0; j < n; j++)
			if (src[j] & 0xff)
				dst[j] ^= gf8_exp[lf + gf8_log[src[j] & 0xff]];
		return;
	}
	if (w == 16 && gf16_log) {
		unsigned lf = gf16_log[f & 0xffff];

		for (int j = 0; j < n; j++)
			if (src[j] & 0xffff)
				dst[j] ^= gf16_exp[lf + gf16_log[src[j] & 0xffff]];
		return;
	}
	for (int j = 0; j < n; j++)
		dst[j] ^= gf_mul(w, f, src[j]);
}

uint32_t *gf_matrix_new(int rows, int cols)
{
	if (rows <= 0 || cols <= 0)
		return NULL;
	return calloc((size_t)rows * (size_t)cols, sizeof(uint32_t));
}

int gf_matrix_invert(int w, uint32_t *a, uint32_t *inv, int n)
{
	size_t nn = (size_t)n;

	memset(inv, 0, nn * nn * sizeof(*inv));
	for (int i = 0; i < n; i++)
		inv[(size_t)i * nn + (size_t)i] = 1;

	for (int col = 0; col < n; col++) {
		int piv = col;

		while (piv < n && a[(size_t)piv * nn + (size_t)col] == 0)
			piv++;
		if (piv == n)
			return EC_ESINGULAR;
		if (piv != col) {
			for (int j = 0; j < n; j++) {
				size_t p = (size_t)piv * nn + (size_t)j;
				size_t c = (size_t)col * nn + (size_t)j;
				uint32_t t = a[p];

				a[p] = a[c];
				a[c] = t;
				t = inv[p];
				inv[p] = inv[c];
				inv[c] = t;
			}
		}
		uint32_t *arow = a + (size_t)col * nn;
		uint32_t *irow = inv + (size_t)col * nn;
		uint32_t s = gf_inv(w, arow[col]);

		for (int j = 0; j < n; j++) {
			arow[j] = gf_mul(w, arow[j], s);
			irow[j] = gf_mul(w, irow[j], s);
		}
		for (int r = 0; r < n; r++) {
			uint32_t *ar = a + (size_t)r * nn;
			uint32_t *ir = inv + (size_t)r * nn;
			uint32_t f = ar[col];

			if (r == col || f == 0)
				continue;
			gf_row_addmul(w, ar, arow, f, n);
			gf_row_addmul(w, ir, irow, f, n);
		}
	}
	return 0;
}

void gf_matrix_mul(int w, const uint32_t *a, const uint32_t *b, uint32_t *c,
                   int r, int k, int n)
{
	/* Row i of c is the sum over t of a[i][t] times row t of b. */
	for (int i = 0; i < r; i++) {
		uint32_t *ci = c + (size_t)i * (size_t)n;

		for (int j = 0; j < n; j++)
			ci[j] = 0;
		for (int t = 0; t < k; t++)
			gf_row_addmul(w, ci, b + (size_t)t * (size_t)n,
			              a[(size_t)i * (size_t)k + (size_t)t], n);
	}
}

/* k + m must not exceed the number of field elements. */
static int fits(int w, int k, int m)
{
	if (!gf_supported_w(w) || k < 1 || m < 1)
		return 0;
	return (uint64_t)k + (uint64_t)m <= ((uint64_t)1 << w);
}

int gf_coding_matrix_vandermonde(int w, int k, int m, uint32_t *c)
{
	/* V[i][j] = i^j over the points 0..k+m-1 (0^0 = 1).  Any k rows of V
	 * are a square Vandermonde matrix on distinct points, so invertible;
	 * right-multiplying by the inverse of the top k x k block makes the
	 * top the identity and keeps that property.  The bottom m rows are
	 * the coding matrix. */
	if (!fits(w, k, m))
		return EC_EINVAL;
	int n = k + m;
	uint32_t *v = gf_matrix_new(n, k);
	uint32_t *top = gf_matrix_new(k, k);
	uint32_t *inv = gf_matrix_new(k, k);
	int rc = EC_ENOMEM;

	if (!v || !top || !inv)
		goto out;
	for (int i = 0; i < n; i++) {
		uint32_t x = 1;

		for (int j = 0; j < k; j++) {
			v[(size_t)i * (size_t)k + (size_t)j] = x;
			x = gf_mul(w, x, (uint32_t)i);
		}
	}
	memcpy(top, v, (size_t)k * (size_t)k * sizeof(*top));
	rc = gf_matrix_invert(w, top, inv, k);
	if (rc == 0)
		gf_matrix_mul(w, v + (size_t)k * (size_t)k, inv, c, m, k, k);
out:
	free(v);
	free(top);
	free(inv);
	return rc;
}

int gf_coding_matrix_cauchy(int w, int k, int m, uint32_t *c)
{
	/* x_i = k + i and y_j = j are all distinct, so every square
	 * submatrix of this Cauchy matrix, and of [I; C], is invertible. */
	if (!fits(w, k, m))
		return EC_EINVAL;
	for (int i = 0; i < m; i++)
		for (int j = 0; j < k; j++)
			c[(size_t)i * (size_t)k + (size_t)j] =
				gf_inv(w, (uint32_t)(k + i) ^ (uint32_t)j);
	return 0;
}
