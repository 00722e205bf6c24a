/* SPDX-License-Identifier: MIT */
/*
 * Encode/decode/update tests of every GF(2^w) code through the public API,
 * under every kernel this CPU can run (ec_set_kernel).
 *
 * Grid (each dimension covered, not every combination, to fit the time
 * budget):
 *  - codes: rs-vandermonde and rs-cauchy with w = 8 for [k,m] in
 *    {1,1} {2,1} {3,7} {6,2} {10,4} {10,6} {12,4} {14,2} {17,3} {200,56};
 *    raid6-pq for k in {1,2,3,6,14,17,200,255}; w = 16 for {3,7} {10,4}
 *    and {300,4} (n > 256); w = 32 for {6,2} {10,4};
 *  - patterns, at a short odd length: every erasure pattern of size 1..m
 *    when n <= 16, 300 random ones otherwise; some patterns ask for only
 *    part of the erased blocks (NULL pointers for the rest);
 *  - lengths 1, 15, 4095, 65536+13 (w-aligned) for every code except
 *    [200,56] (1 and 4095), and 1 MiB for [6,2], [10,4], [12,4], raid6 k=6
 *    and w=16 [10,4], each with unaligned buffers, three patterns (most data
 *    lost, data and parity mixed, parity only) and parity compared with the
 *    scalar kernel's byte for byte;
 *  - parity against an independent reference (coefficients times data with
 *    a bitwise multiply), and rs-cauchy's coefficients against 1/((k+i)^j);
 *  - ec_update against re-encoding; concurrent decoders sharing one code;
 *    the patterns a thread keeps, across destroyed and live codes.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ec.h"
#include "test_util.h"

typedef struct blockset {
	int n;
	size_t len;
	uint8_t **raw;
	uint8_t **pristine; /* the correct content of every block */
	uint8_t **work;     /* buffers decode writes into */
	uint8_t **raw_work;
} blockset;

static void blockset_init(blockset *b, int n, size_t len)
{
	b->n = n;
	b->len = len;
	b->raw = calloc((size_t)n, sizeof(*b->raw));
	b->raw_work = calloc((size_t)n, sizeof(*b->raw_work));
	b->pristine = calloc((size_t)n, sizeof(*b->pristine));
	b->work = calloc((size_t)n, sizeof(*b->work));
	assert_non_null(b->work);
	for (int i = 0; i < n; i++) {
		/* Misaligned on purpose: the API promises no alignment needs. */
		size_t mis = 1 + test_rand_below(63);

		b->raw[i] = malloc(len + 64);
		b->raw_work[i] = malloc(len + 64);
		assert_non_null(b->raw[i]);
		assert_non_null(b->raw_work[i]);
		b->pristine[i] = b->raw[i] + mis;
		b->work[i] = b->raw_work[i] + (mis ^ 7);
	}
}

static void blockset_free(blockset *b)
{
	for (int i = 0; i < b->n; i++) {
		free(b->raw[i]);
		free(b->raw_work[i]);
	}
	free(b->raw);
	free(b->raw_work);
	free(b->pristine);
	free(b->work);
}

static int encode_into(const ec_code *code, const blockset *b, int k,
                       uint8_t **parity)
{
	return ec_encode(code, (const uint8_t *const *)b->pristine, parity, b->len);
}

/* Erases `erased`, decodes, compares.  want_mask bit e (e < n_erased) clear
 * means erased[e] is passed as NULL (not wanted). */
static void decode_check(const ec_code *code, const blockset *b,
                         const int *erased, int n_erased, uint32_t want_mask)
{
	uint8_t *ptrs[512];

	for (int i = 0; i < b->n; i++)
		ptrs[i] = b->pristine[i];
	for (int e = 0; e < n_erased; e++) {
		int x = erased[e];

		if ((want_mask >> (e & 31)) & 1) {
			memset(b->work[x], 0x5a ^ e, b->len);
			ptrs[x] = b->work[x];
		} else {
			ptrs[x] = NULL;
		}
	}
	int rc = ec_decode(code, ptrs, erased, n_erased, b->len);

	if (rc != 0)
		fail_msg("decode failed: %s", ec_strerror(rc));
	for (int e = 0; e < n_erased; e++) {
		int x = erased[e];

		if (((want_mask >> (e & 31)) & 1) &&
		    memcmp(b->work[x], b->pristine[x], b->len) != 0) {
			const ec_params *p = ec_get_params(code);

			fail_msg("%s k=%d m=%d w=%d kernel %s len %zu: block %d wrong "
			         "after decoding %d erasures",
			         ec_kind_name(p->kind), p->k, p->m, p->w,
			         ec_kernel_name(), b->len, x, n_erased);
		}
	}
}

static ec_code *make_code(ec_kind kind, int k, int m, int w)
{
	ec_params p = { .kind = kind, .k = k, .m = m, .w = w };
	ec_code *code = NULL;
	int rc = ec_create(&p, &code);

	if (rc != 0)
		fail_msg("ec_create(%s, %d, %d, %d): %s", ec_kind_name(kind), k, m,
		         w, ec_strerror(rc));
	return code;
}

static void fill_and_encode(const ec_code *code, blockset *b)
{
	const ec_params *p = ec_get_params(code);

	for (int i = 0; i < p->k; i++)
		test_fill(b->pristine[i], b->len);
	assert_int_equal(encode_into(code, b, p->k, b->pristine + p->k), 0);
}

/* Parity against coefficients x data with the independent multiply. */
static void check_parity_reference(const ec_code *code, const blockset *b)
{
	const ec_params *p = ec_get_params(code);
	int w = p->w, bytes = w / 8;

	for (int j = 0; j < p->m; j++) {
		for (int i = 0; i < p->k; i++) {
			uint32_t c = ec_coefficient(code, j, i);

			if (p->kind == EC_RS_CAUCHY)
				assert_int_equal(c, ref_inv(w, (uint32_t)((p->k + j) ^ i)));
			if (p->kind == EC_RAID6_PQ) {
				uint32_t g = 1;

				for (int t = 0; t < i && j == 1; t++)
					g = ref_mul(8, g, 2);
				assert_int_equal(c, g);
			}
		}
		for (size_t pos = 0; pos < b->len; pos += (size_t)bytes) {
			uint32_t s = 0, v;

			for (int i = 0; i < p->k; i++) {
				v = 0;
				memcpy(&v, b->pristine[i] + pos, (size_t)bytes);
				s ^= ref_mul(w, ec_coefficient(code, j, i), v);
			}
			v = 0;
			memcpy(&v, b->pristine[p->k + j] + pos, (size_t)bytes);
			if (v != s)
				fail_msg("%s k=%d m=%d w=%d kernel %s: parity %d wrong at %zu",
				         ec_kind_name(p->kind), p->k, p->m, w,
				         ec_kernel_name(), j, pos);
		}
	}
}

static void random_pattern(int n, int m, int *erased, int *count)
{
	int c = 1 + (int)test_rand_below((uint32_t)m);

	for (int e = 0; e < c;) {
		int x = (int)test_rand_below((uint32_t)n), dup = 0;

		for (int t = 0; t < e; t++)
			dup |= erased[t] == x;
		if (!dup)
			erased[e++] = x;
	}
	*count = c;
}

static void check_patterns(const ec_code *code, const blockset *b)
{
	const ec_params *p = ec_get_params(code);
	int n = p->k + p->m, m = p->m;
	int erased[512];
	long count = 0;

	if (n <= 16) {
		/* Every subset of size 1..m, by bitmask. */
		for (uint32_t mask = 1; mask < (1u << n); mask++) {
			int c = __builtin_popcount(mask), t = 0;

			if (c > m)
				continue;
			for (int i = 0; i < n; i++)
				if ((mask >> i) & 1)
					erased[t++] = i;
			/* Every 5th pattern: ask for every other erased block only. */
			decode_check(code, b, erased, c, count++ % 5 == 4 ? 0x55555555u : ~0u);
		}
	} else {
		for (int s = 0; s < 300; s++) {
			int c;

			random_pattern(n, m, erased, &c);
			decode_check(code, b, erased, c, s % 5 == 4 ? 0x55555555u : ~0u);
		}
	}
}

/* Three patterns: as many data blocks as possible, mixed, parity only. */
static void check_three_patterns(const ec_code *code, const blockset *b)
{
	const ec_params *p = ec_get_params(code);
	int k = p->k, m = p->m, erased[512], c;

	c = m < k ? m : k;
	for (int e = 0; e < c; e++)
		erased[e] = e;
	decode_check(code, b, erased, c, ~0u);
	c = 0;
	for (int e = 0; e < m; e++)
		erased[c++] = (e % 2) ? k + e : (e * 7) % k;
	/* (e * 7) % k may repeat for tiny k: dedupe by falling back */
	for (int i = 0; i < c; i++)
		for (int j = i + 1; j < c; j++)
			if (erased[i] == erased[j])
				erased[j] = k + j;
	decode_check(code, b, erased, c, ~0u);
	for (int e = 0; e < m; e++)
		erased[e] = k + e;
	decode_check(code, b, erased, m, ~0u);
}

static void check_update(const ec_code *code, blockset *b)
{
	const ec_params *p = ec_get_params(code);
	int k = p->k, m = p->m;
	int idx = (int)test_rand_below((uint32_t)k);
	uint8_t *old = malloc(b->len), *parity[512];

	assert_non_null(old);
	memcpy(old, b->pristine[idx], b->len);
	for (int j = 0; j < m; j++) {
		parity[j] = b->work[k + j];
		memcpy(parity[j], b->pristine[k + j], b->len);
	}
	test_fill(b->pristine[idx], b->len);
	assert_int_equal(ec_update(code, idx, old, b->pristine[idx], parity, b->len), 0);
	assert_int_equal(encode_into(code, b, k, b->pristine + k), 0);
	for (int j = 0; j < m; j++)
		assert_memory_equal(parity[j], b->pristine[k + j], b->len);
	free(old);
}

/* Parity under the current kernel equals the scalar kernel's. */
static void check_against_scalar(const ec_code *code, blockset *b)
{
	const ec_params *p = ec_get_params(code);
	char kernel[32];

	snprintf(kernel, sizeof(kernel), "%s", ec_kernel_name());
	assert_int_equal(ec_set_kernel("scalar"), 0);
	assert_int_equal(encode_into(code, b, p->k, b->work + p->k), 0);
	assert_int_equal(ec_set_kernel(kernel), 0);
	for (int j = 0; j < p->m; j++)
		if (memcmp(b->work[p->k + j], b->pristine[p->k + j], b->len) != 0)
			fail_msg("%s k=%d m=%d: kernel %s parity %d differs from scalar (len %zu)",
			         ec_kind_name(p->kind), p->k, p->m, kernel, j, b->len);
}

typedef struct config {
	ec_kind kind;
	int k, m, w;
} config;

static void run_config(const config *cf)
{
	ec_code *code = make_code(cf->kind, cf->k, cf->m, cf->w);
	size_t unit = (size_t)cf->w / 8;
	int n = cf->k + cf->m;
	int huge = n > 200;
	int mib = (cf->w == 8 && ((cf->k == 6 && cf->m == 2) || (cf->k == 10 && cf->m == 4) ||
	                          (cf->k == 12 && cf->m == 4) || (cf->k == 14 && cf->m == 2))) ||
	          (cf->w == 16 && cf->k == 10 && cf->m == 4);
	size_t lens[6], nl = 0;
	blockset b;

	/* Patterns at a short length that is not a multiple of any vector. */
	blockset_init(&b, n, 77 * unit);
	fill_and_encode(code, &b);
	check_parity_reference(code, &b);
	check_patterns(code, &b);
	check_update(code, &b);
	blockset_free(&b);

	/* 1, 15, 4095 and 65536+13 bytes rounded up to whole words. */
	lens[nl++] = unit;
	lens[nl++] = 15 * unit;
	lens[nl++] = (4095 + unit - 1) / unit * unit;
	if (!huge)
		lens[nl++] = (65536 + 13 + unit - 1) / unit * unit;
	if (mib)
		lens[nl++] = (size_t)1 << 20;
	for (size_t li = 0; li < nl; li++) {
		size_t len = lens[li];

		blockset_init(&b, n, len);
		fill_and_encode(code, &b);
		check_against_scalar(code, &b);
		check_three_patterns(code, &b);
		if (li == 2)
			check_update(code, &b);
		blockset_free(&b);
	}
	ec_destroy(code);
}

static const config w8_configs[] = {
	{ 0, 1, 1, 8 }, { 0, 2, 1, 8 }, { 0, 3, 7, 8 }, { 0, 6, 2, 8 },
	{ 0, 10, 4, 8 }, { 0, 10, 6, 8 }, { 0, 12, 4, 8 }, { 0, 14, 2, 8 },
	{ 0, 17, 3, 8 }, { 0, 200, 56, 8 },
};

/* Runs fn under every kernel this CPU has. */
static void for_each_kernel(void (*fn)(void))
{
	const char *const *names = ec_kernel_names();
	char orig[32];

	snprintf(orig, sizeof(orig), "%s", ec_kernel_name());
	for (int i = 0; names[i]; i++) {
		if (!ec_kernel_available(names[i]))
			continue;
		assert_int_equal(ec_set_kernel(names[i]), 0);
		fn();
	}
	assert_int_equal(ec_set_kernel(orig), 0);
}

static ec_kind current_kind;

static void run_w8_configs(void)
{
	for (size_t i = 0; i < sizeof(w8_configs) / sizeof(w8_configs[0]); i++) {
		config cf = w8_configs[i];

		cf.kind = current_kind;
		run_config(&cf);
	}
}

static void test_rs_vandermonde_w8(void **state)
{
	(void)state;
	current_kind = EC_RS_VANDERMONDE;
	for_each_kernel(run_w8_configs);
}

static void test_rs_cauchy_w8(void **state)
{
	(void)state;
	current_kind = EC_RS_CAUCHY;
	for_each_kernel(run_w8_configs);
}

static void run_raid6(void)
{
	static const int ks[] = { 1, 2, 3, 6, 14, 17, 200, 255 };

	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		config cf = { EC_RAID6_PQ, ks[i], 2, 8 };

		run_config(&cf);
	}
}

static void test_raid6_pq(void **state)
{
	(void)state;
	for_each_kernel(run_raid6);
}

static void test_rs_wide(void **state)
{
	(void)state;
	static const config cfs[] = {
		{ EC_RS_VANDERMONDE, 3, 7, 16 }, { EC_RS_CAUCHY, 3, 7, 16 },
		{ EC_RS_VANDERMONDE, 10, 4, 16 }, { EC_RS_CAUCHY, 10, 4, 16 },
		{ EC_RS_CAUCHY, 300, 4, 16 }, { EC_RS_VANDERMONDE, 300, 4, 16 },
		{ EC_RS_VANDERMONDE, 6, 2, 32 }, { EC_RS_CAUCHY, 6, 2, 32 },
		{ EC_RS_VANDERMONDE, 10, 4, 32 }, { EC_RS_CAUCHY, 10, 4, 32 },
	};

	for (size_t i = 0; i < sizeof(cfs) / sizeof(cfs[0]); i++)
		run_config(&cfs[i]);
}

/* Many threads decode through one code (and its shared cache) at once. */
typedef struct thread_arg {
	const ec_code *code;
	const blockset *b;
	int seed;
	int failures;
} thread_arg;

static void *decoder_thread(void *p)
{
	thread_arg *a = p;
	const ec_params *par = ec_get_params(a->code);
	int n = par->k + par->m;
	uint8_t *work[64], *ptrs[64];
	uint32_t x = (uint32_t)a->seed * 2654435761u + 1;

	for (int i = 0; i < n; i++)
		work[i] = malloc(a->b->len);
	for (int it = 0; it < 400; it++) {
		int erased[8], c = 1 + (int)(x % (uint32_t)par->m), e = 0;

		while (e < c) {
			x = x * 1103515245u + 12345u;
			int v = (int)((x >> 8) % (uint32_t)n), dup = 0;

			for (int t = 0; t < e; t++)
				dup |= erased[t] == v;
			if (!dup)
				erased[e++] = v;
		}
		for (int i = 0; i < n; i++)
			ptrs[i] = a->b->pristine[i];
		for (e = 0; e < c; e++) {
			memset(work[erased[e]], 0, a->b->len);
			ptrs[erased[e]] = work[erased[e]];
		}
		if (ec_decode(a->code, ptrs, erased, c, a->b->len) != 0)
			a->failures++;
		for (e = 0; e < c; e++)
			if (memcmp(work[erased[e]], a->b->pristine[erased[e]], a->b->len))
				a->failures++;
	}
	for (int i = 0; i < n; i++)
		free(work[i]);
	return NULL;
}

static void test_concurrent_decode(void **state)
{
	(void)state;
	ec_code *code = make_code(EC_RS_CAUCHY, 10, 4, 8);
	blockset b;
	pthread_t th[4];
	thread_arg args[4];

	blockset_init(&b, 14, 4096 + 3);
	fill_and_encode(code, &b);
	for (int t = 0; t < 4; t++) {
		args[t] = (thread_arg){ code, &b, t, 0 };
		assert_int_equal(pthread_create(&th[t], NULL, decoder_thread, &args[t]), 0);
	}
	for (int t = 0; t < 4; t++) {
		pthread_join(th[t], NULL);
		assert_int_equal(args[t].failures, 0);
	}
	blockset_free(&b);
	ec_destroy(code);
}

/* Each thread keeps the patterns it decoded with last: a code created
 * where a destroyed one was (same kind of stripe, other coefficients) must
 * not get the old one's tables, and cycling through more patterns and codes
 * than a thread keeps must stay right. */
static void test_thread_patterns(void **state)
{
	(void)state;
	static const int pats[3][2] = { { 0, 1 }, { 4, 2 }, { 7, 3 } };
	ec_kind kinds[2] = { EC_RS_CAUCHY, EC_RS_VANDERMONDE };
	blockset b[3];
	ec_code *codes[3];

	for (int round = 0; round < 4; round++) {
		ec_code *code = make_code(kinds[round & 1], 6, 2, 8);

		blockset_init(&b[0], 8, 1000);
		fill_and_encode(code, &b[0]);
		decode_check(code, &b[0], pats[0], 2, ~0u);
		decode_check(code, &b[0], pats[1], 2, ~0u);
		blockset_free(&b[0]);
		ec_destroy(code);
	}
	for (int c = 0; c < 3; c++) {
		codes[c] = make_code(kinds[c & 1], 6, 2, 8);
		blockset_init(&b[c], 8, 333 + (size_t)c);
		fill_and_encode(codes[c], &b[c]);
	}
	for (int it = 0; it < 20; it++)
		for (int c = 0; c < 3; c++)
			decode_check(codes[c], &b[c], pats[(it + c) % 3], 1 + (it & 1),
			             it % 3 ? ~0u : 1u);
	for (int c = 0; c < 3; c++) {
		blockset_free(&b[c]);
		ec_destroy(codes[c]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rs_vandermonde_w8),
		cmocka_unit_test(test_rs_cauchy_w8),
		cmocka_unit_test(test_raid6_pq),
		cmocka_unit_test(test_rs_wide),
		cmocka_unit_test(test_concurrent_decode),
		cmocka_unit_test(test_thread_patterns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
