/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of lib/gf/gf.c: the field axioms (exhaustive for GF(2^8),
 * sampled for GF(2^16), GF(2^32) and the other w the bit-matrix codes use),
 * agreement with an independent bitwise multiply, matrix inversion, and the
 * MDS property of both generators (every k x k submatrix of [I; C]
 * invertible: exhaustive for small n, sampled for large).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ec.h"
#include "gf.h"
#include "gf8_kernels.h"
#include "test_util.h"

static void test_gf8_exhaustive(void **state)
{
	(void)state;
	for (uint32_t a = 0; a < 256; a++) {
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t p = gf_mul(8, a, b);

			assert_int_equal(p, ref_mul(8, a, b));
			assert_int_equal(p, gf_mul(8, b, a));
			if (b) {
				assert_int_equal(gf_div(8, p, b), a);
				assert_int_equal(gf_div(8, a, b), gf_mul(8, a, gf_inv(8, b)));
			}
		}
		if (a) {
			assert_int_equal(gf_mul(8, a, gf_inv(8, a)), 1);
			assert_int_equal(gf_pow(8, a, 255), 1);
		}
		assert_int_equal(gf_mul(8, a, 1), a);
		assert_int_equal(gf_mul(8, a, 0), 0);
	}
	/* Associativity and distributivity on sampled triples. */
	for (int n = 0; n < 200000; n++) {
		uint32_t a = test_rand_below(256), b = test_rand_below(256);
		uint32_t c = test_rand_below(256);

		assert_int_equal(gf_mul(8, a, b ^ c), gf_mul(8, a, b) ^ gf_mul(8, a, c));
		assert_int_equal(gf_mul(8, gf_mul(8, a, b), c), gf_mul(8, a, gf_mul(8, b, c)));
	}
}

static void check_field_sampled(int w, int samples, int with_ref)
{
	uint32_t mask = w == 32 ? 0xffffffffu : (1u << w) - 1;

	for (int n = 0; n < samples; n++) {
		uint32_t a = (uint32_t)test_rand() & mask, b = (uint32_t)test_rand() & mask;
		uint32_t c = (uint32_t)test_rand() & mask;

		if (with_ref)
			assert_int_equal(gf_mul(w, a, b), ref_mul(w, a, b));
		assert_int_equal(gf_mul(w, a, b), gf_mul(w, b, a));
		assert_int_equal(gf_mul(w, a, b ^ c), gf_mul(w, a, b) ^ gf_mul(w, a, c));
		assert_int_equal(gf_mul(w, gf_mul(w, a, b), c), gf_mul(w, a, gf_mul(w, b, c)));
		if (a) {
			assert_int_equal(gf_mul(w, a, gf_inv(w, a)), 1);
			if (b)
				assert_int_equal(gf_div(w, gf_mul(w, a, b), b), a);
		}
	}
}

static void test_gf16_gf32_sampled(void **state)
{
	(void)state;
	check_field_sampled(16, 100000, 1);
	check_field_sampled(32, 20000, 1);
	/* Spot check the w = 16 inverse against the independent one. */
	for (int n = 0; n < 200; n++) {
		uint32_t a = 1 + test_rand_below(65535);

		assert_int_equal(gf_inv(16, a), ref_inv(16, a));
	}
}

static void test_other_w(void **state)
{
	(void)state;
	assert_false(gf_supported_w(0));
	assert_false(gf_supported_w(33));
	for (int w = 2; w <= 32; w++) {
		assert_true(gf_supported_w(w));
		check_field_sampled(w, 300, 0);
	}
	/* The multiplicative group is cyclic of order 2^w - 1 with generator
	 * 2 (the polynomials are primitive); checked exhaustively up to 16. */
	for (int w = 2; w <= 16; w++) {
		uint32_t x = 1, order = 0;

		do {
			x = gf_mul(w, x, 2);
			order++;
		} while (x != 1 && order < (1u << w));
		assert_int_equal(order, (1u << w) - 1);
	}
}

static void test_affine_matrix(void **state)
{
	(void)state;
	/* The GFNI matrix of c, applied with GF2P8AFFINEQB's definition
	 * (result bit i = parity(A.byte[7 - i] & x)), multiplies by c. */
	for (uint32_t c = 0; c < 256; c++) {
		uint64_t a = gf8_affine_matrix((uint8_t)c);
		uint8_t nib[64];

		gf8_table_init((uint8_t)c, nib, NULL);
		for (uint32_t x = 0; x < 256; x++) {
			uint32_t r = 0;

			for (int i = 0; i < 8; i++) {
				uint8_t row = (uint8_t)(a >> (8 * (7 - i)));

				r |= (uint32_t)(__builtin_popcount(row & x) & 1) << i;
			}
			assert_int_equal(r, gf_mul(8, c, x));
			assert_int_equal(nib[x & 15] ^ nib[32 + (x >> 4)], gf_mul(8, c, x));
			assert_int_equal(nib[16 + (x & 15)] ^ nib[48 + (x >> 4)], gf_mul(8, c, x));
		}
	}
}

static void test_matrix_invert(void **state)
{
	(void)state;
	int ws[] = { 8, 16, 32 };

	for (int wi = 0; wi < 3; wi++) {
		int w = ws[wi];
		uint32_t mask = w == 32 ? 0xffffffffu : (1u << w) - 1;

		for (int trial = 0; trial < 60; trial++) {
			int n = 1 + (int)test_rand_below(24);
			uint32_t *a = gf_matrix_new(n, n), *copy = gf_matrix_new(n, n);
			uint32_t *inv = gf_matrix_new(n, n), *prod = gf_matrix_new(n, n);

			assert_non_null(a);
			for (int i = 0; i < n * n; i++)
				a[i] = (uint32_t)test_rand() & mask;
			if (trial % 3 == 0 && n > 1) {
				/* Singular: one row a multiple of another. */
				int r1 = (int)test_rand_below((uint32_t)n);
				int r2 = (r1 + 1) % n;
				uint32_t f = 1 + ((uint32_t)test_rand() & (mask - 1));

				for (int j = 0; j < n; j++)
					a[r2 * n + j] = gf_mul(w, a[r1 * n + j], f);
				assert_int_equal(gf_matrix_invert(w, a, inv, n), EC_ESINGULAR);
			} else {
				memcpy(copy, a, sizeof(*a) * (size_t)(n * n));
				int rc = gf_matrix_invert(w, a, inv, n);

				if (rc != 0)
					continue; /* random matrix happened to be singular */
				gf_matrix_mul(w, copy, inv, prod, n, n, n);
				for (int i = 0; i < n; i++)
					for (int j = 0; j < n; j++)
						assert_int_equal(prod[i * n + j], i == j);
			}
			free(a);
			free(copy);
			free(inv);
			free(prod);
		}
	}
}

/* Is the k x k matrix of generator rows rows[0..k-1] of [I; C] invertible? */
static int rows_invertible(int w, int k, const uint32_t *c, const int *rows)
{
	uint32_t *s = gf_matrix_new(k, k), *inv = gf_matrix_new(k, k);

	for (int i = 0; i < k; i++) {
		if (rows[i] < k)
			s[i * k + rows[i]] = 1;
		else
			memcpy(s + i * k, c + (rows[i] - k) * k, sizeof(*c) * (size_t)k);
	}
	int rc = gf_matrix_invert(w, s, inv, k);

	free(s);
	free(inv);
	return rc == 0;
}

/* Every k-subset of n rows, in lexicographic order; 0 when done. */
static int next_subset(int *idx, int k, int n)
{
	int i = k - 1;

	while (i >= 0 && idx[i] == n - k + i)
		i--;
	if (i < 0)
		return 0;
	idx[i]++;
	for (int j = i + 1; j < k; j++)
		idx[j] = idx[j - 1] + 1;
	return 1;
}

static void check_mds(int w, int k, int m, int vandermonde, int samples)
{
	int n = k + m;
	uint32_t *c = gf_matrix_new(m, k);
	int *idx = malloc(sizeof(int) * (size_t)n);

	assert_int_equal(vandermonde ? gf_coding_matrix_vandermonde(w, k, m, c)
	                             : gf_coding_matrix_cauchy(w, k, m, c), 0);
	if (!vandermonde)
		for (int i = 0; i < m; i++)
			for (int j = 0; j < k; j++)
				assert_int_equal(c[i * k + j], ref_inv(w, (uint32_t)((k + i) ^ j)));
	if (samples == 0) {
		for (int i = 0; i < k; i++)
			idx[i] = i;
		do
			assert_true(rows_invertible(w, k, c, idx));
		while (next_subset(idx, k, n));
	} else {
		for (int s = 0; s < samples; s++) {
			/* A random k-subset: partial Fisher-Yates. */
			int *perm = malloc(sizeof(int) * (size_t)n);

			for (int i = 0; i < n; i++)
				perm[i] = i;
			for (int i = 0; i < k; i++) {
				int j = i + (int)test_rand_below((uint32_t)(n - i));
				int t = perm[i];

				perm[i] = perm[j];
				perm[j] = t;
			}
			assert_true(rows_invertible(w, k, c, perm));
			free(perm);
		}
	}
	free(c);
	free(idx);
}

static void test_generators_mds(void **state)
{
	(void)state;
	/* Exhaustive for n <= 10 and for the common [10,4], [12,4]. */
	for (int v = 0; v < 2; v++) {
		for (int n = 2; n <= 10; n++)
			for (int k = 1; k < n; k++)
				check_mds(8, k, n - k, v, 0);
		check_mds(8, 10, 4, v, 0);
		check_mds(8, 12, 4, v, 0);
		check_mds(8, 10, 6, v, 400);
		check_mds(8, 200, 56, v, 3);
		check_mds(16, 6, 3, v, 0);
		check_mds(32, 5, 3, v, 0);
		check_mds(16, 40, 20, v, 20);
	}
	/* Parameters a field cannot hold. */
	uint32_t *c = gf_matrix_new(2, 255);

	assert_int_equal(gf_coding_matrix_vandermonde(8, 255, 2, c), EC_EINVAL);
	assert_int_equal(gf_coding_matrix_cauchy(8, 255, 2, c), EC_EINVAL);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gf8_exhaustive),
		cmocka_unit_test(test_gf16_gf32_sampled),
		cmocka_unit_test(test_other_w),
		cmocka_unit_test(test_affine_matrix),
		cmocka_unit_test(test_matrix_invert),
		cmocka_unit_test(test_generators_mds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
