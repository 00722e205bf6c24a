/* SPDX-License-Identifier: MIT */
/*
 * Kernel equivalence: every GF(2^8) region kernel this CPU can run, plus
 * the AVX-512 and GFNI kernels built against simd_emul.h (always
 * run, so they are checked on CPUs without AVX-512), must produce the
 * scalar kernel's output byte for byte, and the scalar kernel must match an
 * independent bitwise reference.  Covered: input counts 1..17 and 255
 * (pq), output groups 1..13 (so every group size and a remainder group),
 * lengths around every vector width and tail (1 .. 65536+13), regions past
 * GF8_STREAM_MIN with outputs 64-byte aligned (the GFNI kernel's
 * non-temporal stores) and not, start offsets and misaligned buffers, assign and accumulate modes, and that no byte
 * outside the region is written.  The GF(2^16) kernels are held to the
 * portable one the same way, and the three kernel tables (GF(2^8),
 * GF(2^16), XOR) to the level rule of cpu.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpu.h"
#include "ec.h"
#include "emul_kernels.h"
#include "gf.h"
#include "gf8_kernels.h"
#include "gfw.h"
#include "test_util.h"
#include "xor_kernels.h"

typedef struct kernel_case {
	const char *name;
	gf8_dot_fn *dot;
	gf8_pq_fn *pq;
} kernel_case;

static kernel_case cases[EC_SIMD_COUNT + 2];
static int n_cases;

static void collect_kernels(void)
{
	n_cases = 0;
	for (int l = EC_SIMD_SCALAR + 1; l < EC_SIMD_COUNT; l++) {
		const gf8_kernel *k = gf8_kernel_for(l);

		if (k && ec_cpu_supports((ec_simd)l))
			cases[n_cases++] = (kernel_case){ k->name, k->dot, k->pq };
	}
	cases[n_cases++] = (kernel_case){ "avx512-emulated", gf8_dot_avx512_emul,
	                                  gf8_pq_avx512_emul };
	cases[n_cases++] = (kernel_case){ "gfni-emulated", gf8_dot_gfni_emul,
	                                  gf8_pq_avx512_emul };
}

#define GUARD 64
#define MAXK 36
#define MAXOUT 13

/* Buffers with GUARD canary bytes on both sides, at a chosen misalignment. */
typedef struct region {
	uint8_t *raw;
	uint8_t *p;
	size_t len;
} region;

static region region_new(size_t len, size_t misalign)
{
	region r;

	/* 64-byte aligned, so that misalign is the offset from alignment. */
	r.raw = aligned_alloc(64, (len + 2 * GUARD + 64 + 63) & ~(size_t)63);
	assert_non_null(r.raw);
	memset(r.raw, 0xa5, len + 2 * GUARD + 64);
	r.p = r.raw + GUARD + misalign;
	r.len = len;
	return r;
}

static void check_guards(const region *r, size_t misalign)
{
	for (size_t i = 0; i < GUARD + misalign; i++)
		assert_int_equal(r->raw[i], 0xa5);
	for (size_t i = GUARD + misalign + r->len; i < r->len + 2 * GUARD + 64; i++)
		assert_int_equal(r->raw[i], 0xa5);
}

/* Outputs at a random misalignment, or at this one when >= 0. */
static int out_misalign = -1;

static void run_dot_case(const kernel_case *kc, size_t len, int k, int nout,
                         int accumulate, size_t off)
{
	_Alignas(64) static uint8_t nib[MAXOUT][MAXK][GF8_NIB_BYTES];
	static uint64_t aff[MAXOUT][MAXK];
	gf8_row rows[MAXOUT];
	region in[MAXK], want[MAXOUT], got[MAXOUT];
	const uint8_t *inp[MAXK];
	uint8_t *wantp[MAXOUT], *gotp[MAXOUT];
	size_t total = off + len;

	for (int r = 0; r < nout; r++) {
		for (int i = 0; i < k; i++) {
			/* 0 and 1 are the coefficients most likely mishandled. */
			uint8_t c = (uint8_t)(test_rand() % 5 == 0 ? test_rand() % 2
			                                           : test_rand());

			gf8_table_init(c, nib[r][i], &aff[r][i]);
		}
		rows[r].nib = nib[r][0];
		rows[r].aff = aff[r];
	}
	for (int i = 0; i < k; i++) {
		in[i] = region_new(total, test_rand_below(64));
		test_fill(in[i].p, total);
		inp[i] = in[i].p;
	}
	size_t mis = out_misalign >= 0 ? (size_t)out_misalign : test_rand_below(64);

	for (int r = 0; r < nout; r++) {
		want[r] = region_new(total, mis);
		got[r] = region_new(total, mis);
		test_fill(want[r].p, total);
		memcpy(got[r].p, want[r].p, total);
		wantp[r] = want[r].p;
		gotp[r] = got[r].p;
	}
	gf8_dot_scalar(off, len, k, nout, rows, inp, wantp, accumulate);
	kc->dot(off, len, k, nout, rows, inp, gotp, accumulate);
	for (int r = 0; r < nout; r++) {
		if (memcmp(want[r].p, got[r].p, total) != 0)
			fail_msg("%s: dot differs from scalar (len %zu off %zu k %d nout %d acc %d, output %d)",
			         kc->name, len, off, k, nout, accumulate, r);
		check_guards(&got[r], mis);
		free(want[r].raw);
		free(got[r].raw);
	}
	for (int i = 0; i < k; i++)
		free(in[i].raw);
}

static const size_t lengths[] = { 1, 15, 16, 31, 32, 33, 63, 64, 65, 100, 127,
                                  128, 129, 255, 4095, 4096, 65536 + 13 };

static void test_dot_kernels(void **state)
{
	(void)state;
	collect_kernels();
	for (int c = 0; c < n_cases; c++) {
		const kernel_case *kc = &cases[c];

		for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) {
			size_t len = lengths[li];
			int big = len > 5000;

			/* Every group size (1..13 outputs) on short lengths; a few
			 * shapes on long ones to keep the emulated runs quick. */
			for (int nout = 1; nout <= MAXOUT; nout += big ? 6 : 1) {
				int k = 1 + (int)test_rand_below(big ? 6 : MAXK);

				run_dot_case(kc, len, k, nout, (int)(test_rand() & 1),
				             test_rand_below(4) == 0 ? test_rand_below(40) : 0);
			}
			run_dot_case(kc, len, MAXK, 4, 0, 0);
			run_dot_case(kc, len, MAXK, 4, 1, 7);
		}
	}
}

/* Every number of inputs from 1 to past twice the most a kernel walks at
 * once (the AVX2 and GFNI kernels are instantiated per count up to 16 and
 * take more in parts or in a loop), with every group shape of up to 9
 * outputs (a second GFNI group), on a length of two of the widest GFNI
 * steps (4 x 64 bytes), a 64-byte step and a tail; then more inputs than
 * that over several of the parts' slices. */
static void test_dot_every_shape(void **state)
{
	(void)state;
	collect_kernels();
	for (int c = 0; c < n_cases; c++) {
		for (int k = 1; k <= MAXK; k++)
			for (int nout = 1; nout <= 9; nout++)
				run_dot_case(&cases[c], 2 * 256 + 64 + 37, k, nout, (k + nout) & 1,
				             (size_t)(k % 3) * 32);
		for (int nout = 1; nout <= 4; nout++) {
			run_dot_case(&cases[c], 3 * 2048 + 100, 17, nout, 0, 0);
			run_dot_case(&cases[c], 2 * 2048 + 33, MAXK, nout, 1, 64);
		}
	}
}

/* Regions long enough for the GFNI kernel's non-temporal stores and the
 * AVX2 kernel's prefetches: outputs 64-byte aligned (the streamed path,
 * every group size class of both, and a second group), and not (the
 * cached path), each with a tail. */
static void test_dot_streaming(void **state)
{
	static const int nouts[] = { 1, 2, 4, 9 };

	(void)state;
	collect_kernels();
	for (int c = 0; c < n_cases; c++) {
		for (int a = 0; a < 2; a++) {
			out_misalign = a ? 8 : 0;
			for (size_t n = 0; n < sizeof(nouts) / sizeof(nouts[0]); n++)
				run_dot_case(&cases[c], GF8_STREAM_MIN + 3 * 64 + 13, 3,
				             nouts[n], 0, 64 * (size_t)a);
			/* Accumulating never streams. */
			run_dot_case(&cases[c], GF8_STREAM_MIN + 5, 2, 2, 1, 0);
		}
		out_misalign = -1;
	}
}

/* gf8_dot over blocks placed as ecfs places them (page-aligned, a strip
 * apart), where the GFNI and AVX2 kernels run many inputs to a few outputs
 * in parts (gf8.c's dot_split), against the scalar kernel: under every
 * kernel this CPU has, 10 and 14 inputs (two and three parts), 1 to 6
 * outputs, both modes, at lengths that end inside a slice; the last length
 * puts the blocks 64 KiB apart. */
static void crowded_case(int k, int nout, size_t len, const gf8_row *rows)
{
	size_t stride = (len + 4095) & ~(size_t)4095;
	uint8_t *buf = aligned_alloc(4096, stride * (size_t)(k + 12));
	const uint8_t *in[MAXK];
	uint8_t *want[6], *got[6];

	assert_non_null(buf);
	test_fill(buf, stride * (size_t)(k + 12));
	for (int i = 0; i < k; i++)
		in[i] = buf + (size_t)i * stride;
	for (int r = 0; r < nout; r++) {
		want[r] = buf + (size_t)(k + r) * stride;
		got[r] = buf + (size_t)(k + 6 + r) * stride;
		memcpy(got[r], want[r], len);
	}
	for (int acc = 0; acc < 2; acc++) {
		gf8_dot_scalar(0, len, k, nout, rows, in, want, acc);
		gf8_dot(len, k, nout, rows, in, got, acc);
		for (int r = 0; r < nout; r++)
			if (memcmp(want[r], got[r], len) != 0)
				fail_msg("%s: gf8_dot differs from scalar (crowded, k %d nout %d len %zu acc %d)",
				         gf8_kernel_current()->name, k, nout, len, acc);
	}
	free(buf);
}

static void test_dot_crowded(void **state)
{
	static const size_t lens[] = { 64, 4096, 3 * 4096 + 3 * 64 + 5,
	                                65536 - 2 * 64 + 5 };
	_Alignas(64) static uint8_t nib[6][MAXK][GF8_NIB_BYTES];
	static uint64_t aff[6][MAXK];
	const char *const *names = ec_kernel_names();
	char orig[32];
	gf8_row rows[6];

	(void)state;
	snprintf(orig, sizeof(orig), "%s", ec_kernel_name());
	for (int r = 0; r < 6; r++) {
		for (int i = 0; i < 14; i++)
			gf8_table_init((uint8_t)test_rand(), nib[r][i], &aff[r][i]);
		rows[r].nib = nib[r][0];
		rows[r].aff = aff[r];
	}
	for (int l = 0; names[l]; l++) {
		if (!ec_kernel_available(names[l]))
			continue;
		assert_int_equal(ec_set_kernel(names[l]), 0);
		for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
			for (int nout = 1; nout <= 6; nout++) {
				crowded_case(10, nout, lens[li], rows);
				crowded_case(14, nout, lens[li], rows);
			}
	}
	assert_int_equal(ec_set_kernel(orig), 0);
}

static void test_scalar_dot_reference(void **state)
{
	(void)state;
	/* The scalar kernel against the independent bitwise multiply. */
	enum { K = 5, N = 3, LEN = 333 };
	_Alignas(64) static uint8_t nib[N][K][GF8_NIB_BYTES];
	uint64_t aff[N][K];
	uint8_t c[N][K], in[K][LEN], out[N][LEN];
	gf8_row rows[N];
	const uint8_t *inp[K];
	uint8_t *outp[N];

	for (int i = 0; i < K; i++) {
		test_fill(in[i], LEN);
		inp[i] = in[i];
	}
	for (int r = 0; r < N; r++) {
		for (int i = 0; i < K; i++) {
			c[r][i] = (uint8_t)test_rand();
			gf8_table_init(c[r][i], nib[r][i], &aff[r][i]);
		}
		rows[r] = (gf8_row){ nib[r][0], aff[r] };
		outp[r] = out[r];
	}
	gf8_dot_scalar(0, LEN, K, N, rows, inp, outp, 0);
	for (int r = 0; r < N; r++) {
		for (int p = 0; p < LEN; p++) {
			uint32_t s = 0;

			for (int i = 0; i < K; i++)
				s ^= ref_mul(8, c[r][i], in[i][p]);
			assert_int_equal(out[r][p], s);
		}
	}
}

static void run_pq_case(const kernel_case *kc, size_t len, int k)
{
	region d[255], wp, wq, gp, gq;
	const uint8_t *dp[255];
	size_t mis = out_misalign >= 0 ? (size_t)out_misalign : test_rand_below(64);

	for (int i = 0; i < k; i++) {
		d[i] = region_new(len, test_rand_below(64));
		test_fill(d[i].p, len);
		dp[i] = d[i].p;
	}
	wp = region_new(len, mis);
	wq = region_new(len, mis);
	gp = region_new(len, mis);
	gq = region_new(len, mis);
	gf8_pq_scalar(0, len, k, dp, wp.p, wq.p);
	kc->pq(0, len, k, dp, gp.p, gq.p);
	if (memcmp(wp.p, gp.p, len) || memcmp(wq.p, gq.p, len))
		fail_msg("%s: pq differs from scalar (len %zu k %d)", kc->name, len, k);
	check_guards(&gp, mis);
	check_guards(&gq, mis);
	/* Scalar against the definition on a few positions. */
	for (size_t p = 0; p < len; p += 1 + len / 7) {
		uint32_t pp = 0, qq = 0, g = 1;

		for (int i = 0; i < k; i++) {
			pp ^= d[i].p[p];
			qq ^= ref_mul(8, g, d[i].p[p]);
			g = ref_mul(8, g, 2);
		}
		assert_int_equal(wp.p[p], pp);
		assert_int_equal(wq.p[p], qq);
	}
	for (int i = 0; i < k; i++)
		free(d[i].raw);
	free(wp.raw);
	free(wq.raw);
	free(gp.raw);
	free(gq.raw);
}

static void test_pq_kernels(void **state)
{
	(void)state;
	static const int ks[] = { 1, 2, 3, 7, 20, 255 };

	collect_kernels();
	for (int c = 0; c < n_cases; c++)
		for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++)
			for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
				if (lengths[li] < 5000 || ks[ki] <= 20)
					run_pq_case(&cases[c], lengths[li], ks[ki]);
}

/* One GF(2^16) kernel against the portable one. */
static void check_gfw16_kernel(const gfw16_kernel *kern)
{
	enum { MAXW = 7, KW = 9 };
	size_t tb = gfw_table_bytes(16);
	uint8_t *tables = aligned_alloc(64, tb * MAXW * KW);
	static const size_t lens[] = { 2, 30, 62, 64, 66, 128, 190, 4094, 65536 + 14 };

	assert_non_null(tables);
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (int nout = 1; nout <= MAXW; nout++) {
			int k = 1 + (int)test_rand_below(KW);
			int acc = (int)(test_rand() & 1);
			size_t len = lens[li], off = 2 * test_rand_below(8);
			const uint8_t *tabs[MAXW], *inp[KW];
			uint8_t *wantp[MAXW], *gotp[MAXW];
			region in[KW], want[MAXW], got[MAXW];
			size_t mis = out_misalign >= 0 ? (size_t)out_misalign : test_rand_below(64);

			for (int r = 0; r < nout; r++) {
				for (int i = 0; i < k; i++)
					gfw_table_init(16, (uint32_t)test_rand() & 0xffff,
					               tables + (size_t)(r * KW + i) * tb);
				tabs[r] = tables + (size_t)(r * KW) * tb;
				want[r] = region_new(off + len, mis);
				got[r] = region_new(off + len, mis);
				test_fill(want[r].p, off + len);
				memcpy(got[r].p, want[r].p, off + len);
				wantp[r] = want[r].p;
				gotp[r] = got[r].p;
			}
			for (int i = 0; i < k; i++) {
				in[i] = region_new(off + len, test_rand_below(64));
				test_fill(in[i].p, off + len);
				inp[i] = in[i].p;
			}
			gfw_dot_scalar_at(16, off, len, k, nout, tabs, inp, wantp, acc);
			kern->dot(off, len, k, nout, tabs, inp, gotp, acc);
			for (int r = 0; r < nout; r++) {
				if (memcmp(want[r].p, got[r].p, off + len) != 0)
					fail_msg("gfw16 %s differs (len %zu off %zu k %d nout %d acc %d)",
					         kern->name, len, off, k, nout, acc);
				check_guards(&got[r], mis);
				free(want[r].raw);
				free(got[r].raw);
			}
			for (int i = 0; i < k; i++)
				free(in[i].raw);
		}
	}
	free(tables);
}

/* Every GF(2^16) kernel this CPU runs, but the portable one, against it. */
static void test_gfw16_kernels(void **state)
{
	int ran = 0;

	(void)state;
	for (int l = EC_SIMD_SCALAR + 1; l < EC_SIMD_COUNT; l++) {
		const gfw16_kernel *kern = gfw16_kernel_for(l);

		if (ec_cpu_supports((ec_simd)l) && kern != gfw16_kernel_for(l - 1)) {
			check_gfw16_kernel(kern);
			ran++;
		}
	}
	if (!ran)
		skip();
}

/* The three kernel tables follow cpu.h's rule: every level runs a kernel
 * (its own or the nearest lower level's), levels outside the table none. */
static void test_kernel_tables(void **state)
{
	(void)state;
	for (int l = EC_SIMD_SCALAR; l < EC_SIMD_COUNT; l++) {
		assert_non_null(gf8_kernel_for(l));
		assert_non_null(gfw16_kernel_for(l));
		assert_non_null(xor_kernel_for(l));
	}
	assert_string_equal(gf8_kernel_for(EC_SIMD_SCALAR)->name, "scalar");
	assert_string_equal(gfw16_kernel_for(EC_SIMD_SCALAR)->name, "scalar");
	assert_string_equal(xor_kernel_for(EC_SIMD_SCALAR)->name, "scalar");
	assert_null(gf8_kernel_for(-1));
	assert_null(gfw16_kernel_for(EC_SIMD_COUNT));
	assert_null(xor_kernel_for(-1));
#if defined(__x86_64__) || defined(__i386__)
	/* Levels without a kernel of their own take the one below. */
	assert_ptr_equal(gfw16_kernel_for(EC_SIMD_SSSE3), gfw16_kernel_for(EC_SIMD_SCALAR));
	assert_ptr_equal(gfw16_kernel_for(EC_SIMD_GFNI), gfw16_kernel_for(EC_SIMD_AVX2));
	assert_ptr_equal(xor_kernel_for(EC_SIMD_GFNI), xor_kernel_for(EC_SIMD_AVX512));
	assert_string_equal(xor_kernel_for(EC_SIMD_AVX512)->name, "avx512");
	assert_string_equal(gf8_kernel_for(EC_SIMD_GFNI)->name, "gfni");
#endif
}

static void test_kernel_dispatch(void **state)
{
	(void)state;
	const char *const *names = ec_kernel_names();

	assert_string_equal(names[0], "scalar");
	assert_true(ec_kernel_available("scalar"));
	assert_false(ec_kernel_available("bogus"));
	assert_false(ec_kernel_available(NULL));
	assert_int_equal(ec_set_kernel("bogus"), EC_ENOKERNEL);
	for (int i = 0; names[i]; i++) {
		if (ec_kernel_available(names[i])) {
			assert_int_equal(ec_set_kernel(names[i]), 0);
			assert_string_equal(ec_kernel_name(), names[i]);
			assert_string_equal(gf8_kernel_current()->name, names[i]);
			assert_ptr_equal(xor_kernel_current(), xor_kernel_for(i));
		} else {
			assert_int_equal(ec_set_kernel(names[i]), EC_ENOKERNEL);
		}
	}
	printf("kernels available here:");
	for (int i = 0; names[i]; i++)
		if (ec_kernel_available(names[i]))
			printf(" %s", names[i]);
	printf("\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalar_dot_reference),
		cmocka_unit_test(test_dot_kernels),
		cmocka_unit_test(test_dot_every_shape),
		cmocka_unit_test(test_dot_streaming),
		cmocka_unit_test(test_dot_crowded),
		cmocka_unit_test(test_pq_kernels),
		cmocka_unit_test(test_gfw16_kernels),
		cmocka_unit_test(test_kernel_tables),
		cmocka_unit_test(test_kernel_dispatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
