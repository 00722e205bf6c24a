/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the striped-layout arithmetic (src/core/layout.c): offsets to
 * stripes, positions to members under rotation, and where strips and
 * records sit in a chunk file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "layout.h"

static void test_stripe_math(void **state)
{
	layout l;

	(void)state;
	layout_init(&l, 4, 2, 65536, 0);
	assert_int_equal(l.n, 6);
	assert_int_equal(layout_stripe_data(&l), 262144);
	assert_int_equal(layout_stripe_of(&l, 0), 0);
	assert_int_equal(layout_stripe_of(&l, 262143), 0);
	assert_int_equal(layout_stripe_of(&l, 262144), 1);
	assert_int_equal(layout_stripe_count(&l, 0), 0);
	assert_int_equal(layout_stripe_count(&l, 1), 1);
	assert_int_equal(layout_stripe_count(&l, 262144), 1);
	assert_int_equal(layout_stripe_count(&l, 262145), 2);
}

static void test_rotation_is_a_permutation(void **state)
{
	(void)state;
	for (int n = 2; n <= 16; n++)
		for (int rot = 0; rot < n; rot++) {
			layout l;
			int seen[16] = { 0 };
			layout_init(&l, n - 1, 1, 4096, rot);
			for (int pos = 0; pos < n; pos++) {
				int mb = layout_member_of(&l, pos);
				assert_in_range(mb, 0, n - 1);
				assert_int_equal(layout_position_of(&l, mb), pos);
				seen[mb]++;
			}
			for (int mb = 0; mb < n; mb++)
				assert_int_equal(seen[mb], 1);
			/* Parity (the last position) lands on member rot-1. */
			assert_int_equal(layout_member_of(&l, n - 1), (rot + n - 1) % n);
		}
}

static void test_rotation_from_identity_spreads(void **state)
{
	int seen[7] = { 0 };

	(void)state;
	for (int i = 0; i < 700; i++) {
		uint8_t id[16] = { 0 };
		id[0] = (uint8_t)i;
		id[1] = (uint8_t)(i >> 8);
		int r = layout_rotation(id, 7);
		assert_in_range(r, 0, 6);
		seen[r]++;
	}
	for (int r = 0; r < 7; r++)
		assert_true(seen[r] > 50);
}

static void test_chunk_offsets(void **state)
{
	(void)state;
	const uint64_t sizes[] = { 4096, 65536, 1u << 20, 4104 };
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		layout l;
		uint64_t end = CHUNK_HEADER_SIZE;
		layout_init(&l, 3, 2, sizes[si], 1);
		for (uint64_t s = 0; s < 3 * CHUNK_GROUP_STRIPES + 5; s++) {
			uint64_t r = layout_record_offset(&l, s), st = layout_strip_offset(&l, s);
			if (s % CHUNK_GROUP_STRIPES == 0) {
				/* A record block opens every group, right after the
				 * previous group's last strip. */
				assert_int_equal(r, end);
				end = r + CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE;
			} else {
				assert_int_equal(r, layout_record_offset(&l, s - 1) + CHUNK_RECORD_SIZE);
			}
			assert_int_equal(st, end);
			if (sizes[si] % 4096 == 0)
				assert_int_equal(st % 4096, 0);
			end = st + sizes[si];
			assert_int_equal(layout_chunk_length(&l, s + 1), end);
		}
		assert_int_equal(layout_chunk_length(&l, 0), CHUNK_HEADER_SIZE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stripe_math),
		cmocka_unit_test(test_rotation_is_a_permutation),
		cmocka_unit_test(test_rotation_from_identity_spreads),
		cmocka_unit_test(test_chunk_offsets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
