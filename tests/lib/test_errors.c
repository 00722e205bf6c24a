/* SPDX-License-Identifier: MIT */
/*
 * Bad input to every public entry point: each must return the documented
 * EC_E* code with a message, must not crash, and must leave every output
 * buffer untouched (outputs are filled with a canary and checked).  Also
 * the kind names and queries (bit-matrix or not, default w), and that EC_SIMD naming a kernel the CPU lacks (or an
 * unknown one) makes ec_create fail with EC_ENOKERNEL (checked in a
 * re-executed child, since the variable is read once per process).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ec.h"
#include "test_util.h"

#define LEN 64
#define CANARY 0xc3

static int create(ec_kind kind, int k, int m, int w, ec_code **out)
{
	ec_params p = { .kind = kind, .k = k, .m = m, .w = w };

	return ec_create(&p, out);
}

static void expect_create_fails(ec_kind kind, int k, int m, int w, int want)
{
	ec_code *code = (ec_code *)&code; /* must be reset to NULL */
	int rc = create(kind, k, m, w, &code);

	if (rc != want)
		fail_msg("ec_create(%d, k=%d, m=%d, w=%d) = %d, want %d", kind, k, m,
		         w, rc, want);
	assert_null(code);
	assert_true(strlen(ec_strerror(rc)) > 0);
}

static void test_bad_create(void **state)
{
	(void)state;
	ec_code *code;
	ec_params p = { .kind = EC_RS_CAUCHY, .k = 4, .m = 2, .w = 8 };

	expect_create_fails(EC_RS_CAUCHY, 0, 2, 8, EC_EINVAL);
	expect_create_fails(EC_RS_CAUCHY, 4, 0, 8, EC_EINVAL);
	expect_create_fails(EC_RS_CAUCHY, -1, 2, 8, EC_EINVAL);
	expect_create_fails(EC_RS_VANDERMONDE, 250, 7, 8, EC_EINVAL); /* 257 > 2^8 */
	expect_create_fails(EC_RS_CAUCHY, 65530, 7, 16, EC_EINVAL);   /* > 2^16 */
	expect_create_fails(EC_RS_CAUCHY, 4, 2, 7, EC_EINVAL);
	expect_create_fails(EC_RS_CAUCHY, 4, 2, 0, EC_EINVAL);
	expect_create_fails(EC_RS_CAUCHY, 4, 2, 64, EC_EINVAL);
	expect_create_fails(EC_RAID6_PQ, 4, 3, 8, EC_EINVAL);
	expect_create_fails(EC_RAID6_PQ, 4, 2, 16, EC_EINVAL);
	expect_create_fails(EC_RAID6_PQ, 256, 2, 8, EC_EINVAL);
	expect_create_fails((ec_kind)99, 4, 2, 8, EC_EINVAL);
	assert_int_equal(ec_create(NULL, &code), EC_ENULL);
	assert_int_equal(ec_create(&p, NULL), EC_ENULL);
	p.packet_size = 8;
	assert_int_equal(ec_create(&p, &code), EC_EINVAL);
	/* The largest codes each field holds are accepted. */
	assert_int_equal(create(EC_RS_CAUCHY, 250, 6, 8, &code), 0);
	ec_destroy(code);
	assert_int_equal(create(EC_RAID6_PQ, 255, 2, 8, &code), 0);
	ec_destroy(code);
	ec_destroy(NULL);
}

typedef struct fixture {
	ec_code *code;
	int k, m;
	uint8_t *blk[16];
} fixture;

static void fixture_init(fixture *f, ec_kind kind, int k, int m, int w)
{
	assert_int_equal(create(kind, k, m, w, &f->code), 0);
	f->k = k;
	f->m = m;
	for (int i = 0; i < k + m; i++) {
		f->blk[i] = malloc(LEN);
		test_fill(f->blk[i], LEN);
	}
	assert_int_equal(ec_encode(f->code, (const uint8_t *const *)f->blk,
	                           f->blk + k, LEN), 0);
}

static void fixture_free(fixture *f)
{
	for (int i = 0; i < f->k + f->m; i++)
		free(f->blk[i]);
	ec_destroy(f->code);
}

static void fill_canary(uint8_t **bufs, int n)
{
	for (int i = 0; i < n; i++)
		if (bufs[i])
			memset(bufs[i], CANARY, LEN);
}

static void assert_canary(uint8_t **bufs, int n)
{
	for (int i = 0; i < n; i++)
		if (bufs[i])
			for (int j = 0; j < LEN; j++)
				assert_int_equal(bufs[i][j], CANARY);
}

static void check_bad_encode(ec_kind kind, int w)
{
	fixture f;
	uint8_t *parity[4];
	const uint8_t *data[8];

	fixture_init(&f, kind, 4, 2, w);
	for (int j = 0; j < 2; j++)
		parity[j] = f.blk[4 + j];
	for (int i = 0; i < 4; i++)
		data[i] = f.blk[i];
	fill_canary(parity, 2);
	assert_int_equal(ec_encode(NULL, data, parity, LEN), EC_EINVAL);
	assert_int_equal(ec_encode(f.code, NULL, parity, LEN), EC_ENULL);
	assert_int_equal(ec_encode(f.code, data, NULL, LEN), EC_ENULL);
	assert_int_equal(ec_encode(f.code, data, parity, 0), EC_ELENGTH);
	if (w > 8)
		assert_int_equal(ec_encode(f.code, data, parity, LEN - 1), EC_ELENGTH);
	data[2] = NULL;
	assert_int_equal(ec_encode(f.code, data, parity, LEN), EC_ENULL);
	data[2] = f.blk[2];
	uint8_t *p1 = parity[1];

	parity[1] = NULL;
	assert_int_equal(ec_encode(f.code, data, parity, LEN), EC_ENULL);
	parity[1] = p1;
	assert_canary(parity, 2);

	/* update: bad index, NULLs, length */
	uint8_t *newd = malloc(LEN);

	test_fill(newd, LEN);
	assert_int_equal(ec_update(f.code, -1, f.blk[0], newd, parity, LEN), EC_EINVAL);
	assert_int_equal(ec_update(f.code, 4, f.blk[0], newd, parity, LEN), EC_EINVAL);
	assert_int_equal(ec_update(f.code, 0, NULL, newd, parity, LEN), EC_ENULL);
	assert_int_equal(ec_update(f.code, 0, f.blk[0], NULL, parity, LEN), EC_ENULL);
	assert_int_equal(ec_update(f.code, 0, f.blk[0], newd, NULL, LEN), EC_ENULL);
	assert_int_equal(ec_update(f.code, 0, f.blk[0], newd, parity, 0), EC_ELENGTH);
	if (w > 8)
		assert_int_equal(ec_update(f.code, 0, f.blk[0], newd, parity, 3), EC_ELENGTH);
	assert_canary(parity, 2);
	free(newd);
	fixture_free(&f);
}

static void test_bad_encode_update(void **state)
{
	(void)state;
	check_bad_encode(EC_RS_CAUCHY, 8);
	check_bad_encode(EC_RS_VANDERMONDE, 16);
	check_bad_encode(EC_RS_CAUCHY, 32);
	check_bad_encode(EC_RAID6_PQ, 8);
}

static void expect_decode(fixture *f, const int *erased, int n, size_t len,
                          int want)
{
	uint8_t *ptrs[16];

	for (int i = 0; i < f->k + f->m; i++)
		ptrs[i] = f->blk[i];
	/* Whatever the call says is erased gets a canary buffer. */
	for (int e = 0; e < n; e++)
		if (erased && erased[e] >= 0 && erased[e] < f->k + f->m)
			ptrs[erased[e]] = f->blk[erased[e]];
	fill_canary(f->blk, f->k + f->m);
	int rc = ec_decode(f->code, ptrs, erased, n, len);

	if (rc != want)
		fail_msg("ec_decode(n=%d, len=%zu) = %d (%s), want %d", n, len, rc,
		         ec_strerror(rc), want);
	assert_canary(f->blk, f->k + f->m);
}

static void check_bad_decode(ec_kind kind, int w)
{
	fixture f;
	int three[3] = { 0, 1, 2 }, dup[2] = { 1, 1 }, range[2] = { 0, 6 };
	int neg[1] = { -1 }, ok[2] = { 0, 5 };
	uint8_t *ptrs[8];

	fixture_init(&f, kind, 4, 2, w);
	expect_decode(&f, three, 3, LEN, EC_ETOOMANY);
	expect_decode(&f, dup, 2, LEN, EC_EERASURE);
	expect_decode(&f, range, 2, LEN, EC_EERASURE);
	expect_decode(&f, neg, 1, LEN, EC_EERASURE);
	expect_decode(&f, ok, -1, LEN, EC_EINVAL);
	expect_decode(&f, NULL, 1, LEN, EC_ENULL);
	expect_decode(&f, ok, 2, 0, EC_ELENGTH);
	if (w > 8)
		expect_decode(&f, ok, 2, LEN - 1, EC_ELENGTH);
	assert_int_equal(ec_decode(NULL, f.blk, ok, 2, LEN), EC_EINVAL);
	assert_int_equal(ec_decode(f.code, NULL, ok, 2, LEN), EC_ENULL);
	/* A survivor that is NULL cannot be read. */
	for (int i = 0; i < 6; i++)
		ptrs[i] = f.blk[i];
	ptrs[3] = NULL;
	fill_canary(f.blk, 6);
	assert_int_equal(ec_decode(f.code, ptrs, ok, 2, LEN), EC_ENULL);
	assert_canary(f.blk, 6);
	/* Nothing erased: a no-op that succeeds. */
	assert_int_equal(ec_decode(f.code, f.blk, NULL, 0, LEN), 0);
	assert_canary(f.blk, 6);
	fixture_free(&f);
}

static void test_bad_decode(void **state)
{
	(void)state;
	check_bad_decode(EC_RS_CAUCHY, 8);
	check_bad_decode(EC_RS_VANDERMONDE, 16);
	check_bad_decode(EC_RS_VANDERMONDE, 32);
	check_bad_decode(EC_RAID6_PQ, 8);
}

/* Every kind of ec.h; the GF(2^w) codes first, the bit-matrix ones after. */
static const char *const kind_names[] = {
	"rs-vandermonde", "rs-cauchy", "raid6-pq", "cauchy-orig",
	"cauchy-good", "liberation", "blaum-roth", "liber8tion",
	"evenodd", "rdp", "star",
};
#define N_KINDS (sizeof(kind_names) / sizeof(kind_names[0]))
#define N_GF_KINDS 3

static void test_names_and_messages(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_KINDS; i++) {
		ec_kind k = ec_kind_from_name(kind_names[i]);

		assert_int_not_equal(k, 0);
		assert_string_equal(ec_kind_name(k), kind_names[i]);
	}
	assert_int_equal(ec_kind_from_name("nope"), 0);
	assert_int_equal(ec_kind_from_name(NULL), 0);
	assert_null(ec_kind_name((ec_kind)99));
	for (int e = EC_ESINGULAR; e <= EC_OK; e++)
		assert_string_not_equal(ec_strerror(e), ec_strerror(-100));
	assert_non_null(strstr(ec_strerror(EC_ENOKERNEL), "CPU"));

	ec_code *code;

	assert_int_equal(create(EC_RS_CAUCHY, 3, 2, 16, &code), 0);
	assert_int_equal(ec_block_align(code), 2);
	assert_int_equal(ec_get_params(code)->k, 3);
	assert_int_equal(ec_coefficient(code, 2, 0), 0); /* out of range */
	assert_int_equal(ec_xor_count(code), 0);
	ec_destroy(code);
}

static void test_kind_is_bitmatrix(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_KINDS; i++)
		assert_int_equal(ec_kind_is_bitmatrix(ec_kind_from_name(kind_names[i])),
		                 i >= N_GF_KINDS);
	assert_int_equal(ec_kind_is_bitmatrix((ec_kind)0), 0);
	assert_int_equal(ec_kind_is_bitmatrix((ec_kind)4), 0);
	assert_int_equal(ec_kind_is_bitmatrix((ec_kind)99), 0);
}

/* 0 if ec_create accepts kind, k, m and w (any packet size will do). */
static int try_w(ec_kind kind, int k, int m, int w)
{
	ec_params p = { .kind = kind, .k = k, .m = m, .w = w,
	                .packet_size = ec_kind_is_bitmatrix(kind) ? 8 : 0 };
	ec_code *code;
	int rc = ec_create(&p, &code);

	ec_destroy(code);
	return rc;
}

static void test_kind_default_w(void **state)
{
	(void)state;
	static const struct {
		ec_kind kind;
		int k, m, w;
	} cases[] = {
		{ EC_RS_CAUCHY, 10, 4, 8 }, { EC_RS_VANDERMONDE, 300, 4, 16 },
		{ EC_RAID6_PQ, 6, 2, 8 }, { EC_RAID6_PQ, 6, 3, EC_EINVAL },
		{ EC_CAUCHY_GOOD, 6, 2, 8 }, { EC_LIBER8TION, 6, 2, 8 },
		{ EC_LIBERATION, 6, 2, 7 }, { EC_LIBERATION, 2, 2, 3 },
		{ EC_LIBERATION, 6, 3, EC_EINVAL }, { EC_LIBERATION, 40, 2, EC_EINVAL },
		{ EC_BLAUM_ROTH, 2, 2, 2 }, { EC_BLAUM_ROTH, 7, 2, 10 },
		{ EC_EVENODD, 5, 2, 4 }, { EC_EVENODD, 6, 2, 6 }, { EC_RDP, 6, 2, 6 },
		{ EC_STAR, 3, 3, 4 }, { EC_STAR, 7, 3, 6 }, { EC_STAR, 6, 2, EC_EINVAL },
		{ (ec_kind)99, 6, 2, EC_EINVAL }, { EC_RS_CAUCHY, 0, 2, EC_EINVAL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (ec_kind_default_w(cases[i].kind, cases[i].k, cases[i].m) != cases[i].w)
			fail_msg("default w of %s k=%d m=%d: %d, want %d",
			         ec_kind_name(cases[i].kind), cases[i].k, cases[i].m,
			         ec_kind_default_w(cases[i].kind, cases[i].k, cases[i].m),
			         cases[i].w);
	/* The rule itself: ec_create accepts the default, which is 8 if 8
	 * works, else no smaller w works; with no default, no w works. */
	for (size_t i = 0; i < N_KINDS; i++) {
		ec_kind kind = ec_kind_from_name(kind_names[i]);

		for (int k = 1; k <= 16; k++) {
			for (int m = 1; m <= 4; m++) {
				int w = ec_kind_default_w(kind, k, m);
				int refused_below = w == EC_EINVAL ? 33 : w == 8 ? 1 : w;

				assert_true(w > 0 || w == EC_EINVAL);
				if (w > 0)
					assert_int_equal(try_w(kind, k, m, w), 0);
				if (w > 0 && w != 8)
					assert_int_not_equal(try_w(kind, k, m, 8), 0);
				for (int v = 1; v < refused_below; v++)
					assert_int_not_equal(try_w(kind, k, m, v), 0);
			}
		}
	}
}

/* Child mode: create a code and print the result code. */
static int child_main(void)
{
	ec_code *code = NULL;
	int rc = create(EC_RS_CAUCHY, 4, 2, 8, &code);

	printf("%d\n", rc);
	ec_destroy(code);
	return 0;
}

static int run_child_with_simd(const char *simd)
{
	int fds[2];
	char buf[32] = { 0 };
	int status;

	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		setenv("EC_SIMD", simd, 1);
		execl("/proc/self/exe", "test-lib-errors", "--child", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], buf, sizeof(buf) - 1);

	close(fds[0]);
	waitpid(pid, &status, 0);
	assert_true(n > 0);
	return atoi(buf);
}

/* The code chosen for a caller that names none: P+Q for m = 2 below the
 * GFNI kernel, Reed-Solomon (Cauchy) with it and for any other m; every
 * kernel this CPU runs is tried (the others cannot be put in force). */
static void test_default_kind(void **state)
{
	(void)state;
	const char *const *names = ec_kernel_names();
	const char *was = ec_kernel_name();
	int tried = 0;

	for (int i = 0; names[i]; i++) {
		if (!ec_kernel_available(names[i]))
			continue;
		assert_int_equal(ec_set_kernel(names[i]), 0);
		bool gfni = strcmp(names[i], "gfni") == 0;
		assert_int_equal(ec_default_kind(6, 2), gfni ? EC_RS_CAUCHY : EC_RAID6_PQ);
		assert_int_equal(ec_default_kind(14, 2), gfni ? EC_RS_CAUCHY : EC_RAID6_PQ);
		assert_int_equal(ec_default_kind(300, 2), EC_RS_CAUCHY); /* P+Q takes fewer */
		assert_int_equal(ec_default_kind(6, 3), EC_RS_CAUCHY);
		assert_int_equal(ec_default_kind(10, 4), EC_RS_CAUCHY);
		tried++;
	}
	assert_true(tried >= 2); /* scalar and at least one SIMD kernel */
	assert_int_equal(ec_set_kernel(was), 0);
}

static void test_ec_simd_env(void **state)
{
	(void)state;
	const char *const *names = ec_kernel_names();

	assert_int_equal(run_child_with_simd("bogus"), EC_ENOKERNEL);
	assert_int_equal(run_child_with_simd("scalar"), 0);
	for (int i = 0; names[i]; i++)
		assert_int_equal(run_child_with_simd(names[i]),
		                 ec_kernel_available(names[i]) ? 0 : EC_ENOKERNEL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return child_main();

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_create),
		cmocka_unit_test(test_bad_encode_update),
		cmocka_unit_test(test_bad_decode),
		cmocka_unit_test(test_names_and_messages),
		cmocka_unit_test(test_kind_is_bitmatrix),
		cmocka_unit_test(test_kind_default_w),
		cmocka_unit_test(test_default_kind),
		cmocka_unit_test(test_ec_simd_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
