/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the striped-layout arithmetic (src/core/format/layout.c): offsets to
 * stripes, positions to members under rotation, and where strips and
 * records sit in a chunk file; which sizes fit a layout, against a
 * 128-bit reference, and stripe counts of sizes near 2^64.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

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

/* layout_chunk_length of a size's stripe count, in 128 bits (FORMAT.md 4). */
static unsigned __int128 chunk_length_ref(const layout *l, uint64_t size)
{
	unsigned __int128 S = l->strip_size, sd = S * (unsigned)l->k;
	/* version 3: 16 bytes of tags per 4 KiB of strip, a group's padded */
	unsigned __int128 T = l->version >= 3 ? (S + 4095) / 4096 * 16 : 0;
	unsigned __int128 TB = (64 * T + 4095) / 4096 * 4096;
	unsigned __int128 count = (size + sd - 1) / sd, grp = 4096 + TB + 64 * S;

	if (count == 0)
		return l->version == 1 ? 4096 : 192;
	unsigned __int128 s = count - 1, base = 4096;
	if (l->version != 1) {
		if (s == 0)
			return 192 + 64 + T + S;
		base = (192 + 64 + T + S + 4095) / 4096 * 4096;
		s--;
	}
	return base + s / 64 * grp + 4096 + TB + (s % 64 + 1) * S;
}

static void test_stripe_count_huge(void **state)
{
	layout l;

	(void)state;
	layout_init(&l, 4, 2, 65536, 0);
	/* (size + sd - 1) would wrap: the count of UINT64_MAX bytes */
	assert_true(layout_stripe_count(&l, UINT64_MAX) == UINT64_MAX / 262144 + 1);
	assert_true(layout_stripe_count(&l, UINT64_MAX - 262143) == UINT64_MAX / 262144);
	layout_init(&l, 63, 1, UINT64_C(1) << 30, 0);
	assert_true(layout_stripe_count(&l, UINT64_MAX) == UINT64_MAX / (63ull << 30) + 1);
}

/* layout_size_fits is true exactly up to the largest size whose chunk
 * length (128-bit reference) is at most INT64_MAX, for either version,
 * small and large strips, and never for a size above INT64_MAX. */
static void test_size_fits(void **state)
{
	static const struct { int k; uint64_t strip; } shapes[] = {
		{ 1, 64 }, { 1, 1 }, { 4, 65536 }, { 63, UINT64_C(1) << 30 }, { 2, 4097 * 8 },
	};

	(void)state;
	for (unsigned v = 1; v <= 3; v++)
		for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
			layout l;
			layout_init(&l, shapes[i].k, 1, shapes[i].strip, 0);
			layout_set_version(&l, v, 1);
			uint64_t lo = 0, hi = INT64_MAX; /* lo fits; find the last that does */
			if (chunk_length_ref(&l, hi) <= INT64_MAX)
				lo = hi;
			while (lo < hi) {
				uint64_t mid = lo + (hi - lo + 1) / 2;
				if (chunk_length_ref(&l, mid) <= INT64_MAX)
					lo = mid;
				else
					hi = mid - 1;
			}
			assert_true(layout_size_fits(&l, 0));
			assert_true(layout_size_fits(&l, lo));
			if (lo < INT64_MAX)
				assert_false(layout_size_fits(&l, lo + 1));
			assert_false(layout_size_fits(&l, (uint64_t)INT64_MAX + 1));
			assert_false(layout_size_fits(&l, UINT64_MAX));
			/* where it fits, the layout's own length agrees */
			assert_true(layout_chunk_length(&l, layout_stripe_count(&l, lo)) ==
			            (uint64_t)chunk_length_ref(&l, lo));
		}
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

static void test_chunk_offsets_v1(void **state)
{
	(void)state;
	const uint64_t sizes[] = { 4096, 65536, 1u << 20, 4104 };
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		layout l;
		uint64_t end = CHUNK_HEADER_SIZE_V1;
		layout_init(&l, 3, 2, sizes[si], 1);
		for (uint64_t s = 0; s < 3 * CHUNK_GROUP_STRIPES + 5; s++) {
			uint64_t r = layout_record_offset(&l, s), st = layout_strip_offset(&l, s);
			if (s % CHUNK_GROUP_STRIPES == 0) {
				/* A record block opens every group, right after the
				 * previous group's last strip. */
				assert_int_equal(r, end);
				assert_int_equal(layout_group_start(&l, s), s);
				end = r + CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE;
			} else {
				assert_int_equal(r, layout_record_offset(&l, s - 1) + CHUNK_RECORD_SIZE);
			}
			assert_int_equal(layout_group_end(&l, s),
			                 s - s % CHUNK_GROUP_STRIPES + CHUNK_GROUP_STRIPES);
			assert_int_equal(st, end);
			if (sizes[si] % 4096 == 0)
				assert_int_equal(st % 4096, 0);
			end = st + sizes[si];
			assert_int_equal(layout_chunk_length(&l, s + 1), end);
			assert_int_equal(layout_strip_len(&l, s, 1), sizes[si]);
		}
		assert_int_equal(layout_chunk_length(&l, 0), CHUNK_HEADER_SIZE_V1);
	}
}

/* Version 2: header, stripe 0's record and strip in one run of bytes,
 * then 4 KiB-aligned groups; nothing overlaps and every stripe of a group
 * follows the previous one. */
static void test_chunk_offsets_v2(void **state)
{
	(void)state;
	const uint64_t sizes[] = { 64, 4096, 65536, 4160 };
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		layout l;
		uint64_t S = sizes[si];
		layout_init(&l, 3, 2, S, 1);
		layout_set_version(&l, 2, 1);
		assert_int_equal(layout_header_size(&l), CHUNK_HEADER_SIZE_V2);
		assert_int_equal(layout_record_offset(&l, 0), CHUNK_HEADER_SIZE_V2);
		assert_int_equal(layout_strip_offset(&l, 0), CHUNK_HEADER_SIZE_V2 + CHUNK_RECORD_SIZE);
		assert_int_equal(layout_group_end(&l, 0), 1);
		uint64_t end = layout_strip_offset(&l, 0) + S;
		for (uint64_t s = 1; s < 3 * CHUNK_GROUP_STRIPES + 5; s++) {
			uint64_t r = layout_record_offset(&l, s), st = layout_strip_offset(&l, s);
			if ((s - 1) % CHUNK_GROUP_STRIPES == 0) {
				assert_true(r >= end);
				assert_int_equal(r % 4096, 0);
				assert_int_equal(layout_group_start(&l, s), s);
				end = r + CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE;
			}
			assert_int_equal(layout_group_end(&l, s), layout_group_start(&l, s) + CHUNK_GROUP_STRIPES);
			assert_int_equal(st, end);
			end = st + S;
			assert_int_equal(layout_chunk_length(&l, s + 1), end);
		}
	}
}

/* Version 3: version 2 with each stripe's tags (16 bytes per 4 KiB of
 * strip) after stripe 0's record and in a tag block after each record
 * block, padded so the strips stay 4 KiB aligned. */
static void test_chunk_offsets_v3(void **state)
{
	(void)state;
	const uint64_t sizes[] = { 64, 4096, 65536, 4160, 1 << 20 };
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		layout l;
		uint64_t S = sizes[si], T = (S + 4095) / 4096 * 16;
		uint64_t TB = (64 * T + 4095) / 4096 * 4096;
		layout_init(&l, 3, 2, S, 1);
		layout_set_version(&l, 3, 1);
		assert_int_equal(layout_tags_size(&l), T);
		assert_int_equal(layout_header_size(&l), CHUNK_HEADER_SIZE_V2);
		assert_int_equal(layout_record_offset(&l, 0), 192);
		assert_int_equal(layout_tags_offset(&l, 0), 256);
		assert_int_equal(layout_strip_offset(&l, 0), 256 + T);
		uint64_t base = (256 + T + S + 4095) / 4096 * 4096;
		for (uint64_t s = 1; s < 3 * CHUNK_GROUP_STRIPES + 5; s++) {
			uint64_t g = (s - 1) / 64, i = (s - 1) % 64, grp = base + g * (4096 + TB + 64 * S);
			assert_int_equal(layout_record_offset(&l, s), grp + i * 64);
			assert_int_equal(layout_tags_offset(&l, s), grp + 4096 + i * T);
			assert_int_equal(layout_strip_offset(&l, s), grp + 4096 + TB + i * S);
			if (S % 4096 == 0)
				assert_int_equal(layout_strip_offset(&l, s) % 4096, 0);
			assert_int_equal(layout_chunk_length(&l, s + 1), layout_strip_offset(&l, s) + S);
			assert_int_equal(layout_group_start(&l, s), 1 + g * 64);
		}
	}
	layout l;
	layout_init(&l, 3, 2, 65536, 1);
	layout_set_version(&l, 2, 1);
	assert_int_equal(layout_tags_size(&l), 0); /* none before version 3 */
}

/* The last stripe's strips shrink to what its bytes need. */
static void test_strip_len(void **state)
{
	(void)state;
	layout l;
	layout_init(&l, 4, 2, 65536, 0);
	layout_set_version(&l, 2, 1);
	uint64_t sd = 4 * 65536;
	assert_int_equal(layout_strip_len(&l, 0, 0), 64);
	assert_int_equal(layout_strip_len(&l, 0, 1), 64);
	assert_int_equal(layout_strip_len(&l, 0, 256), 64);
	assert_int_equal(layout_strip_len(&l, 0, 257), 128);
	assert_int_equal(layout_strip_len(&l, 0, sd - 1), 65536);
	assert_int_equal(layout_strip_len(&l, 0, sd), 65536);
	assert_int_equal(layout_strip_len(&l, 0, sd + 1), 65536);
	assert_int_equal(layout_strip_len(&l, 1, sd + 1), 64);
	assert_int_equal(layout_strip_len(&l, 2, sd + 1), 64); /* past the end */
	/* A bit-matrix code's block alignment is kept. */
	layout_set_version(&l, 2, 8 * 1024);
	assert_int_equal(layout_strip_len(&l, 0, 1), 8192);
	assert_int_equal(layout_strip_len(&l, 0, 4 * 8192 + 1), 16384);
}

/* Packing a short stripe and unpacking it give the stripe back, zeros
 * past its bytes, for every length a stripe can have. */
static void test_pack_round_trip(void **state)
{
	(void)state;
	enum { K = 3, S = 256 };
	layout l;
	uint8_t in[K][S], packed[K][S], out[K][S];
	const uint8_t *ip[K], *pp[K];
	uint8_t *pw[K], *op[K];

	layout_init(&l, K, 1, S, 0);
	layout_set_version(&l, 2, 1);
	for (int j = 0; j < K; j++) {
		ip[j] = in[j];
		pp[j] = pw[j] = packed[j];
		op[j] = out[j];
	}
	for (uint64_t size = 1; size < (uint64_t)K * S; size += 7) {
		uint64_t len = layout_strip_len(&l, 0, size);
		memset(in, 0, sizeof(in));
		for (uint64_t b = 0; b < size; b++)
			in[b / S][b % S] = (uint8_t)(b * 31 + 7);
		memset(packed, 0xee, sizeof(packed));
		memset(out, 0xdd, sizeof(out));
		layout_pack_short(&l, len, ip, pw);
		for (uint64_t b = 0; b < size; b++)
			assert_int_equal(packed[b / len][b % len], in[b / S][b % S]);
		layout_unpack_short(&l, len, pp, (1u << K) - 1, op);
		assert_memory_equal(out, in, sizeof(in));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stripe_math),
		cmocka_unit_test(test_stripe_count_huge),
		cmocka_unit_test(test_size_fits),
		cmocka_unit_test(test_rotation_is_a_permutation),
		cmocka_unit_test(test_rotation_from_identity_spreads),
		cmocka_unit_test(test_chunk_offsets_v1),
		cmocka_unit_test(test_chunk_offsets_v2),
		cmocka_unit_test(test_chunk_offsets_v3),
		cmocka_unit_test(test_strip_len),
		cmocka_unit_test(test_pack_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
