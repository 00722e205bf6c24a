/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the small-write log's bytes (src/core/format/smalllog.c):
 * header and record round trips, every header byte flip detected, every
 * header and record field out of range refused alone (the header with a
 * good sum), records that verify only for their own log, file, epoch,
 * place and data, and the scan of a copy that stops at a torn or
 * corrupted record and reports where the next append goes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "checksum.h"
#include "chunk.h"
#include "smalllog.h"

static smalllog_header sample_header(void)
{
	smalllog_header h = { .epoch = 0x1234567, .checksum = CHECKSUM_SHA256 };

	for (int i = 0; i < 16; i++) {
		h.volume_uuid[i] = (uint8_t)(0xa0 + i);
		h.file_id[i] = (uint8_t)(0x10 + 3 * i);
	}
	return h;
}

static checksum *sha(void)
{
	uint8_t key[CHECKSUM_KEY_SIZE] = { 0 };
	checksum *c = checksum_new(CHECKSUM_SHA256, key);
	assert_non_null(c);
	return c;
}

static void test_header_round_trip(void **state)
{
	uint8_t buf[SMALLLOG_HEADER_SIZE];
	smalllog_header h = sample_header(), d;
	const char *why = "x";

	(void)state;
	smalllog_header_encode(&h, buf);
	assert_memory_equal(buf, SMALLLOG_MAGIC, 8);
	assert_int_equal(smalllog_header_decode(buf, &d, &why), 0);
	assert_null(why);
	assert_memory_equal(d.volume_uuid, h.volume_uuid, 16);
	assert_memory_equal(d.file_id, h.file_id, 16);
	assert_true(d.epoch == h.epoch);
	assert_int_equal(d.checksum, CHECKSUM_SHA256);
	for (size_t i = 0; i < sizeof(buf); i++) {
		buf[i] ^= 0x01;
		assert_int_not_equal(smalllog_header_decode(buf, &d, &why), 0);
		assert_non_null(why);
		buf[i] ^= 0x01;
	}
}

/* Sets bytes [at, at+len) of an encoded header to v and seals it again. */
static int decode_patched(size_t at, uint64_t v, size_t len, const char **why)
{
	uint8_t buf[SMALLLOG_HEADER_SIZE];
	smalllog_header h = sample_header(), d;

	smalllog_header_encode(&h, buf);
	for (size_t i = 0; i < len; i++)
		buf[at + i] = (uint8_t)(v >> (8 * i));
	SHA256(buf, SMALLLOG_HEADER_SIZE - 32, buf + SMALLLOG_HEADER_SIZE - 32);
	return smalllog_header_decode(buf, &d, why);
}

static void test_header_fields_refused(void **state)
{
	const char *why;

	(void)state;
	assert_int_equal(decode_patched(8, 2, 4, &why), -EPROTO);      /* version */
	assert_int_equal(decode_patched(12, 4096, 4, &why), -EINVAL);  /* header size */
	assert_int_equal(decode_patched(48, 0, 8, &why), -EINVAL);     /* epoch 0 */
	assert_int_equal(decode_patched(48, UINT64_MAX, 8, &why), -EINVAL);
	assert_int_equal(decode_patched(56, 0, 2, &why), -EINVAL);     /* no algorithm */
	assert_int_equal(decode_patched(56, 99, 2, &why), -EINVAL);
	assert_int_equal(decode_patched(60, 1, 1, &why), -EINVAL);     /* reserved */
	assert_int_equal(decode_patched(48, CHUNK_GENERATION_MAX, 8, &why), 0);
	assert_null(why);
}

static smalllog_record sample_record(uint64_t seq)
{
	return (smalllog_record){ .length = 8, .epoch = 0x1234567, .seq = seq,
	                          .offset = 4096 * seq, .size = 1 << 20 };
}

static void test_record_round_trip_and_verify(void **state)
{
	checksum *c = sha();
	smalllog_header h = sample_header(), other = h;
	smalllog_record r = sample_record(3), d;
	uint8_t data[8] = "abcdefg", buf[SMALLLOG_RECORD_SIZE];

	(void)state;
	assert_int_equal(smalllog_record_encode(c, &h, &r, data, buf), 0);
	assert_int_equal(smalllog_record_decode(buf, &d, NULL), 0);
	assert_int_equal(d.length, 8);
	assert_true(d.epoch == r.epoch && d.seq == 3 && d.offset == 3 * 4096 && d.size == 1 << 20);
	assert_true(smalllog_record_verify(c, &h, &d, data));
	/* Another file, volume, epoch, data, or a field changed: no longer. */
	other.file_id[0] ^= 1;
	assert_false(smalllog_record_verify(c, &other, &d, data));
	other = h;
	other.volume_uuid[15] ^= 1;
	assert_false(smalllog_record_verify(c, &other, &d, data));
	other = h;
	other.epoch++;
	assert_false(smalllog_record_verify(c, &other, &d, data));
	data[7] ^= 1;
	assert_false(smalllog_record_verify(c, &h, &d, data));
	data[7] ^= 1;
	d.offset += 1;
	assert_false(smalllog_record_verify(c, &h, &d, data));
	d.offset -= 1;
	d.size -= 1;
	assert_false(smalllog_record_verify(c, &h, &d, data));
	d.size += 1;
	d.seq = 4;
	assert_false(smalllog_record_verify(c, &h, &d, data));
	checksum_free(c);
}

static int record_decode_with(smalllog_record r)
{
	uint8_t buf[SMALLLOG_RECORD_SIZE], data[8] = { 0 };
	checksum *c = sha();
	smalllog_header h = sample_header();
	smalllog_record d;
	const char *why = NULL;

	smalllog_record tmp = r; /* encoded with at most 8 bytes, then its length set */
	tmp.length = r.length > 8 ? 8 : r.length;
	assert_int_equal(smalllog_record_encode(c, &h, &tmp, data, buf), 0);
	buf[8] = (uint8_t)r.length;
	buf[9] = (uint8_t)(r.length >> 8);
	buf[10] = (uint8_t)(r.length >> 16);
	buf[11] = (uint8_t)(r.length >> 24);
	checksum_free(c);
	int rc = smalllog_record_decode(buf, &d, &why);
	assert_true((rc == 0) == (why == NULL));
	return rc;
}

static void test_record_fields_refused(void **state)
{
	smalllog_record r;
	uint8_t buf[SMALLLOG_RECORD_SIZE];

	(void)state;
	assert_int_equal(record_decode_with(sample_record(1)), 0);
	r = sample_record(1);
	r.length = 0;
	assert_int_equal(record_decode_with(r), -EINVAL);
	r.length = SMALLLOG_DATA_MAX + 1;
	assert_int_equal(record_decode_with(r), -EINVAL);
	r = sample_record(1);
	r.seq = 0;
	assert_int_equal(record_decode_with(r), -EINVAL);
	r = sample_record(1);
	r.epoch = 0;
	assert_int_equal(record_decode_with(r), -EINVAL);
	r = sample_record(1);
	r.size = CHUNK_SIZE_MAX + 1;
	assert_int_equal(record_decode_with(r), -EINVAL);
	r = sample_record(1);
	r.offset = r.size - 7; /* offset + length past the size */
	assert_int_equal(record_decode_with(r), -EINVAL);
	r.offset = UINT64_MAX - 2; /* no sum that wraps */
	r.size = CHUNK_SIZE_MAX;
	assert_int_equal(record_decode_with(r), -EINVAL);
	r = sample_record(1);
	r.offset = CHUNK_SIZE_MAX - 8;
	r.size = CHUNK_SIZE_MAX;
	assert_int_equal(record_decode_with(r), 0); /* the limits themselves */
	/* Reserved bytes and magic. */
	checksum *c = sha();
	smalllog_header h = sample_header();
	uint8_t data[8] = { 0 };
	r = sample_record(1);
	assert_int_equal(smalllog_record_encode(c, &h, &r, data, buf), 0);
	buf[13] = 1;
	assert_int_equal(smalllog_record_decode(buf, &r, NULL), -EINVAL);
	buf[13] = 0;
	buf[0] = 'X';
	assert_int_equal(smalllog_record_decode(buf, &r, NULL), -EINVAL);
	checksum_free(c);
}

/* A log copy: its header and records seq 1..count of 100 + seq bytes. */
static size_t build_copy(checksum *c, const smalllog_header *h, int count, uint8_t *out)
{
	size_t at = SMALLLOG_HEADER_SIZE;

	smalllog_header_encode(h, out);
	for (int i = 1; i <= count; i++) {
		smalllog_record r = { .length = 100u + (uint32_t)i, .epoch = h->epoch,
		                      .seq = (uint64_t)i, .offset = 1000u * (uint64_t)i,
		                      .size = 1u << 20 };
		memset(out + at + SMALLLOG_RECORD_SIZE, 'a' + i, r.length);
		assert_int_equal(smalllog_record_encode(c, h, &r, out + at + SMALLLOG_RECORD_SIZE,
		                                        out + at), 0);
		at += SMALLLOG_RECORD_SIZE + r.length;
	}
	return at;
}

typedef struct seen {
	int count;
	uint64_t seq[8];
} seen;

static void visit(void *ctx, const smalllog_record *r, const uint8_t *data)
{
	seen *s = ctx;

	assert_int_equal(data[0], 'a' + (int)r->seq);
	assert_int_equal(data[r->length - 1], 'a' + (int)r->seq);
	s->seq[s->count++] = r->seq;
}

static void test_scan(void **state)
{
	checksum *c = sha();
	smalllog_header h = sample_header(), other = h;
	uint8_t buf[4096];
	size_t len = build_copy(c, &h, 3, buf), end;
	size_t second = SMALLLOG_HEADER_SIZE + SMALLLOG_RECORD_SIZE + 101;
	uint64_t epoch = 0;
	seen s = { 0 };

	(void)state;
	assert_int_equal(smalllog_scan(c, &h, buf, len, visit, &s, &epoch, &end), 3);
	assert_int_equal(s.count, 3);
	assert_true(s.seq[0] == 1 && s.seq[1] == 2 && s.seq[2] == 3);
	assert_true(epoch == h.epoch);
	assert_int_equal(end, len);
	/* A torn last append: the copy ends before it. */
	assert_int_equal(smalllog_scan(c, &h, buf, len - 1, NULL, NULL, NULL, &end), 2);
	assert_int_equal(end, len - SMALLLOG_RECORD_SIZE - 103);
	assert_int_equal(smalllog_scan(c, &h, buf, len - 103 - 5, NULL, NULL, NULL, NULL), 2);
	/* A corrupted second record ends the copy after the first. */
	buf[second + SMALLLOG_RECORD_SIZE + 50] ^= 1;
	assert_int_equal(smalllog_scan(c, &h, buf, len, NULL, NULL, NULL, &end), 1);
	assert_int_equal(end, second);
	buf[second + SMALLLOG_RECORD_SIZE + 50] ^= 1;
	/* Only a header: no records; none, or another file's: no log. */
	assert_int_equal(smalllog_scan(c, &h, buf, SMALLLOG_HEADER_SIZE, NULL, NULL, NULL, &end),
	                 0);
	assert_int_equal(end, SMALLLOG_HEADER_SIZE);
	assert_int_equal(smalllog_scan(c, &h, buf, SMALLLOG_HEADER_SIZE - 1, NULL, NULL, NULL,
	                               NULL), -EINVAL);
	other.file_id[3] ^= 1;
	assert_int_equal(smalllog_scan(c, &other, buf, len, NULL, NULL, NULL, NULL), -EINVAL);
	/* Records of an older epoch behind a new header do not count. */
	other = h;
	other.epoch = h.epoch + 1;
	smalllog_header_encode(&other, buf);
	assert_int_equal(smalllog_scan(c, &h, buf, len, NULL, NULL, &epoch, NULL), 0);
	assert_true(epoch == h.epoch + 1);
	/* Another algorithm than the file's: no log. */
	uint8_t key[CHECKSUM_KEY_SIZE] = { 0 };
	checksum *b2 = checksum_new(CHECKSUM_BLAKE2S, key);
	assert_non_null(b2);
	assert_int_equal(smalllog_scan(b2, &h, buf, len, NULL, NULL, NULL, NULL), -EINVAL);
	checksum_free(b2);
	checksum_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_round_trip),
		cmocka_unit_test(test_header_fields_refused),
		cmocka_unit_test(test_record_round_trip_and_verify),
		cmocka_unit_test(test_record_fields_refused),
		cmocka_unit_test(test_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
