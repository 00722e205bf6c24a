/* SPDX-License-Identifier: MIT */
/*
 * Bit-matrix codes end to end through the public API: for every code and
 * every legal w <= 32 of [6,2], [14,2], [12,4] and [10,6] (and STAR at
 * m = 3), parity equals the reference computed from the code's definition
 * and every erasure pattern of size <= m decodes byte for byte.  The grid
 * runs under the library's kernel with the four XOR orders in rotation;
 * test_xor_kernels_orders covers every kernel x every order on a subset
 * (all patterns, larger packets) to keep the suite within its budget.
 */
#include "xor_test_util.h"

#include "ec.h"
#include "emul_kernels.h"
#include "xor_codes.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>


static const ec_kind xor_kinds[] = {
	EC_CAUCHY_ORIG, EC_CAUCHY_GOOD, EC_LIBERATION, EC_BLAUM_ROTH,
	EC_LIBER8TION, EC_EVENODD, EC_RDP, EC_STAR,
};
#define N_KINDS (int)(sizeof(xor_kinds) / sizeof(xor_kinds[0]))

static const int grid[][2] = { { 6, 2 }, { 14, 2 }, { 12, 4 }, { 10, 6 } };

/* Encodes, checks against the reference, then decodes every erasure
 * pattern of size 1..m, except that patterns of more than 2 erasures are
 * decoded only one in `stride` (1: all).  Returns the number decoded. */
static long check_code(const ec_params *p, int stride, uint64_t seed)
{
	ec_code *code = NULL;
	int rc = ec_create(p, &code);
	if (rc != 0)
		fail_msg("ec_create(%s k=%d m=%d w=%d) failed: %s", ec_kind_name(p->kind),
		         p->k, p->m, p->w, ec_strerror(rc));
	int k = p->k, m = p->m, n = k + m;
	size_t len = 2 * ec_block_align(code);
	uint8_t **blocks = xt_blocks(n, len), **ref = xt_blocks(m, len);
	uint8_t **work = xt_blocks(n, len);
	for (int j = 0; j < k; j++)
		xt_fill(blocks[j], len, &seed);
	assert_int_equal(ec_encode(code, (const uint8_t *const *)blocks, blocks + k, len), 0);
	xt_reference_encode(p, blocks, ref, len);
	for (int i = 0; i < m; i++)
		if (memcmp(blocks[k + i], ref[i], len) != 0)
			fail_msg("%s k=%d m=%d w=%d order=%d: parity %d differs from the reference",
			         ec_kind_name(p->kind), k, m, p->w, p->order, i);
	long patterns = 0, seen = 0;
	for (int e = 1; e <= m; e++) {
		int idx[64];
		for (int i = 0; i < e; i++)
			idx[i] = i;
		do {
			uint8_t *ptrs[64];
			if (e > 2 && seen++ % stride != 0)
				continue;
			memcpy(work[0], blocks[0], (size_t)n * len);
			for (int b = 0; b < n; b++)
				ptrs[b] = work[b];
			/* Every other pattern leaves erased parity NULL: only the
			 * data is asked for. */
			int data_only = patterns & 1;
			for (int i = 0; i < e; i++) {
				memset(work[idx[i]], 0xa5, len);
				if (data_only && idx[i] >= k)
					ptrs[idx[i]] = NULL;
			}
			rc = ec_decode(code, ptrs, idx, e, len);
			if (rc != 0)
				fail_msg("%s k=%d m=%d w=%d: decode of %d erasures failed: %s",
				         ec_kind_name(p->kind), k, m, p->w, e, ec_strerror(rc));
			for (int b = 0; b < n; b++)
				if (ptrs[b] && memcmp(work[b], blocks[b], len) != 0)
					fail_msg("%s k=%d m=%d w=%d order=%d: block %d wrong after "
					         "erasing %d blocks starting at %d",
					         ec_kind_name(p->kind), k, m, p->w, p->order, b, e, idx[0]);
			patterns++;
		} while (xt_next_combination(idx, e, n));
	}
	xt_free_blocks(blocks);
	xt_free_blocks(ref);
	xt_free_blocks(work);
	ec_destroy(code);
	return patterns;
}

static int legal(const ec_params *p)
{
	ec_code *code = NULL;
	int rc = ec_create(p, &code);
	ec_destroy(code);
	return rc == 0;
}

/* [12,4] and [10,6] have thousands of patterns per code and big
 * matrices: every pattern is decoded for w <= 8 and w = 16; the other w
 * get every single and double erasure and one in 17 of the larger ones. */
static int pattern_stride(const ec_params *p)
{
	return (p->m <= 2 || p->w <= 8 || p->w == 16) ? 1 : 17;
}

static int grid_only = -1;     /* -1: every [k,m] of the grid */
static ec_kind grid_kind_only; /* 0: every code */

static void test_grid(void **state)
{
	long codes = 0, patterns = 0;
	for (int g = 0; g < 4; g++)
		for (int t = 0; t < N_KINDS; t++) {
			if ((grid_only >= 0 && g != grid_only) ||
			    (grid_kind_only && xor_kinds[t] != grid_kind_only))
				continue;
			for (int w = 1; w <= 32; w++) {
				ec_params p = {
					.kind = xor_kinds[t], .k = grid[g][0], .m = grid[g][1], .w = w,
					.packet_size = 8, .order = (ec_order)(1 + (w % 4)),
				};
				if (!legal(&p))
					continue;
				patterns += check_code(&p, pattern_stride(&p),
				                       0x9e3779b9u + (uint64_t)w * 131 + (uint64_t)t);
				codes++;
			}
		}
	printf("grid: %ld codes, %ld erasure patterns decoded\n", codes, patterns);
	/* Per [k,m]: cauchy x2 x ~29 w, plus the RAID-6 codes: a guard that
	 * the grid is not silently empty. */
	assert_true(codes > (grid_kind_only ? 25 : grid_only >= 0 ? 50 : 250));
}

/* STAR (m = 3) for p = 5, 7, 11, 13 at several k, up to the full k = p,
 * every pattern; p = 17 every pattern of <= 2 and one in 5 triples. */
static void test_star(void **state)
{
	const int ws[] = { 4, 6, 10, 12, 16 };
	long codes = 0;
	for (size_t i = 0; i < sizeof(ws) / sizeof(ws[0]); i++) {
		int w = ws[i];
		const int ks[] = { 1, 2, 3, w / 2, w, w + 1 };
		for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++) {
			ec_params p = { .kind = EC_STAR, .k = ks[j], .m = 3, .w = w,
			                .packet_size = 8, .order = (ec_order)(1 + j % 4) };
			assert_true(legal(&p));
			check_code(&p, w == 16 ? 5 : 1, 77 + (uint64_t)w);
			codes++;
		}
	}
	assert_int_equal(codes, 30);
}

static void test_kernels_orders(void **state)
{
	/* Every kernel this CPU runs, and the emulated AVX-512 one. */
	xor_exec_fn kernels[EC_SIMD_COUNT + 1];
	int n_kernels = xt_cpu_kernels(kernels);
	kernels[n_kernels++] = xor_exec_avx512_emul;
	const struct {
		ec_kind kind;
		int k, m, w;
	} subset[] = {
		{ EC_CAUCHY_GOOD, 6, 2, 8 }, { EC_CAUCHY_ORIG, 5, 4, 4 },
		{ EC_CAUCHY_GOOD, 12, 4, 4 }, { EC_LIBERATION, 6, 2, 7 },
		{ EC_BLAUM_ROTH, 6, 2, 6 }, { EC_LIBER8TION, 6, 2, 8 },
		{ EC_EVENODD, 6, 2, 6 }, { EC_RDP, 6, 2, 6 }, { EC_STAR, 5, 3, 4 },
	};
	for (int kn = 0; kn < n_kernels; kn++) {
		xor_codes_force_kernel(kernels[kn]);
		for (size_t s = 0; s < sizeof(subset) / sizeof(subset[0]); s++)
			for (int order = EC_ORDER_PPG; order <= EC_ORDER_DWG; order++) {
				/* 264-byte packets: vector loops, their tails and
				 * several word-guided slices all run. */
				ec_params p = {
					.kind = subset[s].kind, .k = subset[s].k, .m = subset[s].m,
					.w = subset[s].w, .packet_size = 264, .order = (ec_order)order,
				};
				check_code(&p, p.m, 1000 + s * 7 + (uint64_t)order);
			}
	}
	xor_codes_force_kernel(NULL);
	assert_true(n_kernels >= 2); /* at least scalar and the emulated AVX-512 */
}

/* With no argument every group runs; meson runs "kernels", "star" and
 * "grid N [CODE]" (N = 0..3, the [k,m] of the grid; CODE one code only)
 * as separate tests so that they spread over the cores. */
int main(int argc, char **argv)
{
	const struct CMUnitTest kernels[] = { cmocka_unit_test(test_kernels_orders) };
	const struct CMUnitTest star[] = { cmocka_unit_test(test_star) };
	const struct CMUnitTest grids[] = { cmocka_unit_test(test_grid) };
	const char *what = argc > 1 ? argv[1] : "all";
	int rc = 0;
	if (!strcmp(what, "kernels") || !strcmp(what, "all"))
		rc |= cmocka_run_group_tests_name("kernels x orders", kernels, NULL, NULL);
	if (!strcmp(what, "star") || !strcmp(what, "all"))
		rc |= cmocka_run_group_tests_name("star", star, NULL, NULL);
	if (!strcmp(what, "grid") || !strcmp(what, "all")) {
		if (argc > 2)
			grid_only = atoi(argv[2]);
		if (argc > 3)
			grid_kind_only = ec_kind_from_name(argv[3]);
		rc |= cmocka_run_group_tests_name("grid", grids, NULL, NULL);
	}
	return rc;
}
