/* SPDX-License-Identifier: MIT */
/*
 * Properties of the XOR codes beyond decoding: XOR counts against theory
 * (RDP's k-1 XORs per coding word, EVENODD's shared S, the minimum density
 * of Liberation, Blaum-Roth and the Liber8tion-class code), parameter
 * errors, delta updates, the decode cache under concurrent callers, and
 * the emulated AVX-512 kernel against the scalar one on random schedules.
 */
#include "xor_test_util.h"

#include "ec.h"
#include "emul_kernels.h"
#include "xor_codes.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>


static ec_code *make(ec_kind kind, int k, int m, int w, size_t ps)
{
	ec_params p = { .kind = kind, .k = k, .m = m, .w = w, .packet_size = ps };
	ec_code *c = NULL;
	int rc = ec_create(&p, &c);
	if (rc != 0)
		fail_msg("ec_create(%s, k=%d, m=%d, w=%d): %s", ec_kind_name(kind), k, m, w,
		         ec_strerror(rc));
	return c;
}

/* RDP reaches k-1 XORs per coding word when k = w (p-1 data disks) and
 * when k + 1 = w (shortened by one). */
static void test_rdp_optimal(void **state)
{
	const int ws[] = { 4, 6, 10, 12, 16, 18, 22, 28, 30 };
	for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
		int w = ws[i];
		for (int k = w - 1; k <= w; k++) {
			ec_code *c = make(EC_RDP, k, 2, w, 8);
			assert_int_equal(ec_xor_count(c), (long)(k - 1) * 2 * w);
			ec_destroy(c);
		}
	}
}

/* Hybrid single-failure recovery (Xiang et al.): RDP rebuilds a lost data
 * block reading fewer than the k*w packets of P alone, for the same k-1
 * XORs per word; and no code's single-failure decode costs more XORs than
 * decoding from P alone (w(k-1)). */
static void test_rdp_hybrid_single(void **state)
{
	const int ws[] = { 4, 6, 10, 12, 16 };
	for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
		int w = ws[i], k = w;
		ec_code *c = make(EC_RDP, k, 2, w, 8);
		for (int j = 0; j < k; j++) {
			long reads = xor_code_decode_reads(c, &j, 1);
			assert_true(reads > 0 && reads < (long)k * w);
			assert_int_equal(xor_code_decode_xor_count(c, &j, 1), (long)w * (k - 1));
		}
		ec_destroy(c);
	}
	const ec_kind others[] = { EC_EVENODD, EC_LIBERATION, EC_CAUCHY_GOOD };
	const int ow[] = { 6, 7, 5 };
	for (int t = 0; t < 3; t++) {
		ec_code *c = make(others[t], 6, 2, ow[t], 8);
		for (int j = 0; j < 6; j++)
			assert_true(xor_code_decode_xor_count(c, &j, 1) <= (long)ow[t] * 5);
		ec_destroy(c);
	}
}

/* EVENODD: P costs k-1 per word, S costs k-2 once, each Q word k-1 from S. */
static void test_evenodd_common_s(void **state)
{
	const int ws[] = { 4, 6, 10, 12, 16 };
	for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
		int w = ws[i], k = w + 1;
		ec_code *c = make(EC_EVENODD, k, 2, w, 8);
		assert_int_equal(ec_xor_count(c), (long)(k - 1) * 2 * w + (k - 2));
		/* Without the shared S every Q word would pay for it again. */
		assert_true(xor_code_plain_xor_count(c) > ec_xor_count(c) + (long)(w - 1) * (k - 3));
		ec_destroy(c);
	}
}

/* Minimum density: k*w + k - 1 ones in the Q rows, w*k in the P rows. */
static void test_minimum_density(void **state)
{
	long checked = 0;
	for (int w = 2; w <= 32; w++)
		for (int k = 2; k <= w; k++) {
			const ec_kind kinds[] = { EC_LIBERATION, EC_BLAUM_ROTH, EC_LIBER8TION };
			for (int t = 0; t < 3; t++) {
				ec_params p = { .kind = kinds[t], .k = k, .m = 2, .w = w, .packet_size = 8 };
				ec_code *c = NULL;
				if (ec_create(&p, &c) != 0)
					continue;
				assert_int_equal(xor_code_matrix_ones(c, 0), (long)k * w);
				assert_int_equal(xor_code_matrix_ones(c, 1), (long)k * w + k - 1);
				ec_destroy(c);
				checked++;
			}
		}
	assert_true(checked > 150);
}

/* The smart schedule never costs more than the plain one, and Cauchy-good
 * needs fewer XORs than the original Cauchy matrix. */
static void test_smart_beats_plain(void **state)
{
	for (int w = 4; w <= 12; w++) {
		ec_code *orig = make(EC_CAUCHY_ORIG, 6, 2, w, 8);
		ec_code *good = make(EC_CAUCHY_GOOD, 6, 2, w, 8);
		assert_true(ec_xor_count(orig) <= xor_code_plain_xor_count(orig));
		assert_true(ec_xor_count(good) < ec_xor_count(orig));
		ec_destroy(orig);
		ec_destroy(good);
	}
}

static void expect_einval(ec_kind kind, int k, int m, int w, size_t ps)
{
	ec_params p = { .kind = kind, .k = k, .m = m, .w = w, .packet_size = ps };
	ec_code *c = (ec_code *)&p; /* must be overwritten with NULL */
	int rc = ec_create(&p, &c);
	if (rc != EC_EINVAL)
		fail_msg("%s k=%d m=%d w=%d ps=%zu: expected EC_EINVAL, got %d", ec_kind_name(kind), k,
		         m, w, ps, rc);
	assert_null(c);
}

static void test_bad_parameters(void **state)
{
	expect_einval(EC_LIBERATION, 4, 2, 8, 8);   /* w not prime */
	expect_einval(EC_LIBERATION, 8, 2, 7, 8);   /* k > w */
	expect_einval(EC_LIBERATION, 4, 3, 7, 8);   /* m != 2 */
	expect_einval(EC_BLAUM_ROTH, 4, 2, 7, 8);   /* w + 1 not prime */
	expect_einval(EC_BLAUM_ROTH, 7, 2, 6, 8);   /* k > w */
	expect_einval(EC_LIBER8TION, 4, 2, 7, 8);   /* w != 8 */
	expect_einval(EC_LIBER8TION, 9, 2, 8, 8);   /* k > 8 */
	expect_einval(EC_LIBER8TION, 4, 1, 8, 8);   /* m != 2 */
	expect_einval(EC_EVENODD, 8, 2, 6, 8);      /* k > w + 1 */
	expect_einval(EC_EVENODD, 4, 2, 8, 8);      /* w + 1 not prime */
	expect_einval(EC_RDP, 7, 2, 6, 8);          /* k > w */
	expect_einval(EC_RDP, 4, 3, 6, 8);          /* m != 2 */
	expect_einval(EC_STAR, 4, 2, 6, 8);         /* m != 3 */
	expect_einval(EC_STAR, 8, 3, 6, 8);         /* k > w + 1 */
	expect_einval(EC_CAUCHY_GOOD, 6, 3, 3, 8);  /* k + m > 2^w */
	expect_einval(EC_CAUCHY_ORIG, 6, 2, 33, 8); /* w > 32 */
	expect_einval(EC_CAUCHY_ORIG, 6, 2, 0, 8);  /* w = 0 */
	expect_einval(EC_RDP, 6, 2, 6, 0);          /* packet size 0 */
	expect_einval(EC_RDP, 6, 2, 6, 12);         /* not a multiple of 8 */
	expect_einval(EC_CAUCHY_GOOD, 6, 2, 8, 4);
}

static void test_block_align_and_length(void **state)
{
	ec_code *c = make(EC_LIBERATION, 5, 2, 7, 32);
	assert_int_equal(ec_block_align(c), 7 * 32);
	assert_int_equal(ec_coefficient(c, 0, 0), 0);
	uint8_t **b = xt_blocks(7, 7 * 32 * 2);
	assert_int_equal(ec_encode(c, (const uint8_t *const *)b, b + 5, 7 * 32 + 8), EC_ELENGTH);
	assert_int_equal(ec_encode(c, (const uint8_t *const *)b, b + 5, 7 * 32 * 2), 0);
	xt_free_blocks(b);
	ec_destroy(c);
}

/* ec_update after changing one data block equals a full re-encode. */
static void test_update(void **state)
{
	const struct {
		ec_kind kind;
		int k, m, w;
	} cases[] = { { EC_CAUCHY_GOOD, 10, 6, 5 }, { EC_RDP, 6, 2, 6 },
		      { EC_EVENODD, 7, 2, 6 }, { EC_STAR, 5, 3, 4 } };
	uint64_t seed = 99;
	for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
		ec_code *c = make(cases[t].kind, cases[t].k, cases[t].m, cases[t].w, 40);
		int k = cases[t].k, m = cases[t].m;
		size_t len = 3 * ec_block_align(c);
		uint8_t **b = xt_blocks(k + m, len), **ref = xt_blocks(m, len);
		uint8_t *old = malloc(len);
		xt_fill(b[0], (size_t)k * len, &seed);
		assert_int_equal(ec_encode(c, (const uint8_t *const *)b, b + k, len), 0);
		for (int j = 0; j < k; j += 2) {
			memcpy(old, b[j], len);
			xt_fill(b[j], len, &seed);
			assert_int_equal(ec_update(c, j, old, b[j], b + k, len), 0);
			assert_int_equal(ec_encode(c, (const uint8_t *const *)b, ref, len), 0);
			for (int i = 0; i < m; i++)
				assert_memory_equal(b[k + i], ref[i], len);
		}
		free(old);
		xt_free_blocks(b);
		xt_free_blocks(ref);
		ec_destroy(c);
	}
}

typedef struct worker {
	ec_code *code;
	uint8_t **blocks; /* shared, read only */
	int k, m;
	size_t len;
	int failures;
} worker;

/* Each thread decodes every double erasure many times over: the cache is
 * filled and read concurrently. */
static void *decode_worker(void *arg)
{
	worker *wk = arg;
	int n = wk->k + wk->m;
	uint8_t **work = xt_blocks(n, wk->len);
	for (int rep = 0; rep < 4; rep++)
		for (int a = 0; a < n; a++)
			for (int b = a + 1; b < n; b++) {
				uint8_t *ptrs[64];
				for (int i = 0; i < n; i++) {
					ptrs[i] = work[i];
					memcpy(work[i], wk->blocks[i], wk->len);
				}
				memset(work[a], 0, wk->len);
				memset(work[b], 0, wk->len);
				int er[2] = { a, b };
				if (ec_decode(wk->code, ptrs, er, 2, wk->len) != 0 ||
				    memcmp(work[a], wk->blocks[a], wk->len) != 0 ||
				    memcmp(work[b], wk->blocks[b], wk->len) != 0)
					wk->failures++;
			}
	xt_free_blocks(work);
	return NULL;
}

static void test_cache_threads(void **state)
{
	ec_code *c = make(EC_BLAUM_ROTH, 8, 2, 10, 16);
	int k = 8, m = 2, n = 10;
	size_t len = ec_block_align(c) * 2;
	uint8_t **b = xt_blocks(n, len);
	uint64_t seed = 5;
	xt_fill(b[0], (size_t)k * len, &seed);
	assert_int_equal(ec_encode(c, (const uint8_t *const *)b, b + k, len), 0);
	worker wk[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		wk[i] = (worker){ c, b, k, m, len, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, decode_worker, &wk[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(wk[i].failures, 0);
	}
	/* One schedule per pattern, however many threads asked. */
	assert_int_equal(xor_code_cached_patterns(c), n * (n - 1) / 2);
	xt_free_blocks(b);
	ec_destroy(c);
}

/* Random schedules: every kernel (and the emulated AVX-512 one) against
 * the scalar kernel, over odd lengths and offsets, every op kind, runs. */
static void test_kernels_random(void **state)
{
	/* Every kernel this CPU runs and the emulated AVX-512 one; fns[0] is
	 * the scalar reference. */
	xor_exec_fn fns[EC_SIMD_COUNT + 1];
	int n_fns = xt_cpu_kernels(fns);
	fns[n_fns++] = xor_exec_avx512_emul;
	uint64_t seed = 1234;
	enum { N_PACKETS = 12, SIZE = 1000 };
	uint8_t *ref = malloc(N_PACKETS * SIZE), *got = malloc(N_PACKETS * SIZE);
	for (int iter = 0; iter < 300; iter++) {
		xor_op ops[40];
		size_t n = 1 + xt_rand(&seed) % 40;
		for (size_t i = 0; i < n; i++) {
			uint32_t src = (uint32_t)(xt_rand(&seed) % N_PACKETS);
			uint32_t dst = (uint32_t)(xt_rand(&seed) % N_PACKETS);
			if (dst == src)
				dst = (dst + 1) % N_PACKETS;
			/* Runs into one packet half of the time. */
			if (i > 0 && xt_rand(&seed) % 2)
				dst = ops[i - 1].dst, src = (dst + 1 + (uint32_t)(xt_rand(&seed) % (N_PACKETS - 1))) % N_PACKETS;
			ops[i] = (xor_op){ src, dst, (uint32_t)(xt_rand(&seed) % 3), 1 };
		}
		xor_mark_runs(ops, n);
		size_t off = 8 * (xt_rand(&seed) % 8), len = 8 * (xt_rand(&seed) % 110);
		xt_fill(ref, N_PACKETS * SIZE, &seed);
		memcpy(got, ref, N_PACKETS * SIZE);
		uint8_t *pr[N_PACKETS], *pg[N_PACKETS];
		for (int p = 0; p < N_PACKETS; p++) {
			pr[p] = ref + p * SIZE;
			pg[p] = got + p * SIZE;
		}
		uint8_t *base = malloc(N_PACKETS * SIZE);
		memcpy(base, ref, N_PACKETS * SIZE);
		xor_exec_scalar(ops, n, pr, off, len);
		for (int f = 1; f < n_fns; f++) {
			memcpy(got, base, N_PACKETS * SIZE);
			fns[f](ops, n, pg, off, len);
			assert_memory_equal(got, ref, N_PACKETS * SIZE);
		}
		free(base);
	}
	free(ref);
	free(got);
}

/* A run of ops with the same dst, applied by hand, equals the scalar
 * kernel's fused result (guards the run bookkeeping itself). */
static void test_fused_run_semantics(void **state)
{
	uint8_t mem[4][64];
	uint64_t seed = 7;
	xt_fill(mem[0], sizeof(mem), &seed);
	uint8_t expect[64];
	for (int i = 0; i < 64; i++)
		expect[i] = mem[1][i] ^ mem[2][i] ^ mem[3][i];
	xor_op ops[3] = { { 1, 0, XOR_OP_COPY, 1 }, { 2, 0, XOR_OP_XOR, 1 }, { 3, 0, XOR_OP_XOR, 1 } };
	xor_mark_runs(ops, 3);
	assert_int_equal(ops[0].run, 3);
	uint8_t *p[4] = { mem[0], mem[1], mem[2], mem[3] };
	xor_exec_scalar(ops, 3, p, 0, 64);
	assert_memory_equal(mem[0], expect, 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rdp_optimal),
		cmocka_unit_test(test_evenodd_common_s),
		cmocka_unit_test(test_rdp_hybrid_single),
		cmocka_unit_test(test_minimum_density),
		cmocka_unit_test(test_smart_beats_plain),
		cmocka_unit_test(test_bad_parameters),
		cmocka_unit_test(test_block_align_and_length),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_cache_threads),
		cmocka_unit_test(test_kernels_random),
		cmocka_unit_test(test_fused_run_semantics),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
