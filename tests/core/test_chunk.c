/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the chunk format (src/core/format/chunk.c, src/core/format/checksum.c): header and
 * record round trips field by field, and detection of every corrupted
 * byte, of strips moved to another stripe, position or file, for every
 * checksum algorithm; what counts as a page a power cut lost; every
 * header and record field out of range refused alone (with a good
 * checksum), a huge size without overflow, and the limits accepted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "checksum.h"
#include "chunk.h"
#include "core_test_util.h"
#include "ec.h"

static chunk_header sample_header(void)
{
	chunk_header h = {
		.version = CHUNK_FORMAT_VERSION, .position = 5, .rotation = 3, .kind = EC_RS_CAUCHY,
		.k = 4, .m = 3, .w = 16, .checksum = CHECKSUM_GMAC, .packet_size = 0,
		.strip_size = 65536, .size = 0x123456789abcull, .generation = 0xfedcba987654ull,
		.missed = 0x41,
	};
	for (int i = 0; i < 16; i++) {
		h.volume_uuid[i] = (uint8_t)(0xa0 + i);
		h.file_id[i] = (uint8_t)(0x10 + 3 * i);
	}
	return h;
}

static void test_header_round_trip(void **state)
{
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h = sample_header(), d;

	(void)state;
	chunk_header_encode(&h, buf);
	assert_memory_equal(buf, CHUNK_MAGIC, 8);
	assert_int_equal(chunk_header_decode(buf, sizeof(buf), &d, NULL), 0);
	assert_int_equal(d.version, CHUNK_FORMAT_VERSION);
	assert_memory_equal(d.volume_uuid, h.volume_uuid, 16);
	assert_memory_equal(d.file_id, h.file_id, 16);
	assert_int_equal(d.position, 5);
	assert_int_equal(d.rotation, 3);
	assert_int_equal(d.kind, EC_RS_CAUCHY);
	assert_int_equal(d.k, 4);
	assert_int_equal(d.m, 3);
	assert_int_equal(d.w, 16);
	assert_int_equal(d.checksum, CHECKSUM_GMAC);
	assert_int_equal(d.packet_size, 0);
	assert_int_equal(d.strip_size, 65536);
	assert_int_equal(d.size, 0x123456789abcull);
	assert_int_equal(d.generation, 0xfedcba987654ull);
	assert_int_equal(d.missed, 0x41);
	/* Little-endian at the documented offsets (docs/FORMAT.md). */
	assert_int_equal(buf[48], 5);
	assert_int_equal(buf[88], 0xbc);
	assert_int_equal(buf[89], 0x9a);
}

static void test_header_every_byte_flip_detected(void **state)
{
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h = sample_header(), d;

	(void)state;
	size_t len = chunk_header_encode(&h, buf);
	assert_int_equal(len, CHUNK_HEADER_SIZE_V2);
	for (unsigned i = 0; i < len; i++) {
		const char *why = NULL;
		buf[i] ^= 0x01;
		assert_int_not_equal(chunk_header_decode(buf, sizeof(buf), &d, &why), 0);
		assert_non_null(why);
		buf[i] ^= 0x01;
	}
	assert_int_equal(chunk_header_decode(buf, sizeof(buf), &d, NULL), 0);
}

/* A header with a good checksum but a bad field must still be refused. */
static void reseal(uint8_t *buf)
{
	SHA256(buf, CHUNK_HEADER_SIZE_V2 - 32, buf + CHUNK_HEADER_SIZE_V2 - 32);
}

/* The sample header with byte off set to val (and byte off + 1 to hi),
 * sealed again, decoded: its return. */
static int byte_set_sealed(unsigned off, uint8_t val, uint8_t hi, const char **why)
{
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h = sample_header(), d;

	chunk_header_encode(&h, buf);
	buf[off] = val;
	buf[off + 1] = hi;
	reseal(buf);
	return chunk_header_decode(buf, sizeof(buf), &d, why);
}

static void test_header_bad_fields(void **state)
{
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h = sample_header(), d;
	const char *why;

	(void)state;
	assert_int_equal(byte_set_sealed(8, CHUNK_FORMAT_VERSION + 1, 0, &why), -EPROTO); /* version */
	assert_non_null(strstr(why, "version"));
	assert_int_equal(byte_set_sealed(48, 7, 0, &why), -ERANGE);  /* position >= k+m */
	assert_int_equal(byte_set_sealed(66, 99, 0, &why), -ERANGE); /* checksum algorithm */
	assert_int_equal(byte_set_sealed(56, 77, 0, &why), -ERANGE); /* code kind */
	assert_int_equal(byte_set_sealed(12, 0, 1, &why), -ERANGE);  /* header size 256 */
	assert_int_equal(byte_set_sealed(112, 32, 0, &why), -ERANGE); /* record size */
	assert_int_equal(byte_set_sealed(116, 32, 0, &why), -ERANGE); /* group size */

	/* A bad checksum is damage, not a sealed header out of range. */
	chunk_header_encode(&h, buf);
	buf[60] ^= 1;
	assert_int_equal(chunk_header_decode(buf, sizeof(buf), &d, &why), -EINVAL);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(chunk_header_decode(buf, sizeof(buf), &d, &why), -EINVAL);
}

/* Encodes h (sealed: a good checksum) and decodes it: 0 or -ERANGE. */
static int sealed_decode(const chunk_header *h)
{
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header d;
	const char *why = NULL;

	size_t len = chunk_header_encode(h, buf);
	int rc = chunk_header_decode(buf, len, &d, &why);
	assert_true(rc == 0 || (rc == -ERANGE && why));
	if (rc == 0)
		assert_memory_equal(&d, h, sizeof(d));
	return rc;
}

/* Each field out of range alone, with a valid checksum: refused. */
static void test_header_fields_refused(void **state)
{
	const chunk_header base = sample_header();
	chunk_header h;

	(void)state;
	assert_int_equal(sealed_decode(&base), 0);
#define REFUSED(...) \
	do { \
		h = base; \
		__VA_ARGS__; \
		assert_int_equal(sealed_decode(&h), -ERANGE); \
	} while (0)
	REFUSED(h.k = 0);
	REFUSED(h.m = 0);
	REFUSED(h.k = 1; h.m = 64);                  /* n = 65 */
	REFUSED(h.k = 60; h.m = 5);
	REFUSED(h.k = 0xffff; h.m = 0xffff);         /* no 16-bit wrap */
	REFUSED(h.position = 7);                     /* n = 7 */
	REFUSED(h.rotation = 7);
	REFUSED(h.rotation = UINT32_MAX);
	REFUSED(h.missed = 1ull << 7);               /* a member past n */
	REFUSED(h.missed = ~0ull);
	REFUSED(h.checksum = 0);
	REFUSED(h.checksum = 99);
	REFUSED(h.kind = 0);
	REFUSED(h.kind = 77);
	REFUSED(h.w = 7);                            /* RS: 8, 16 or 32 */
	REFUSED(h.w = 0);
	REFUSED(h.w = 64);
	REFUSED(h.packet_size = 1024);               /* packets: bit-matrix codes only */
	REFUSED(h.kind = EC_RAID6_PQ);               /* m = 2 and w = 8 only */
	REFUSED(h.kind = EC_CAUCHY_GOOD; h.w = 8);   /* a bit-matrix code needs packets */
	REFUSED(h.kind = EC_CAUCHY_GOOD; h.w = 8; h.packet_size = 12);
	REFUSED(h.kind = EC_CAUCHY_GOOD; h.w = 8; h.packet_size = UINT64_MAX);
	REFUSED(h.kind = EC_CAUCHY_GOOD; h.w = 8; h.packet_size = 1ull << 32);
	/* liberation: m = 2, w prime, k <= w */
	REFUSED(h.kind = EC_LIBERATION; h.m = 2; h.missed = 1; h.w = 8; h.packet_size = 8;
	        h.strip_size = 8 * 8 * 64);
	REFUSED(h.strip_size = 0);
	REFUSED(h.strip_size = 65537);               /* not a multiple of w/8 = 2 */
	REFUSED(h.strip_size = CHUNK_STRIP_MAX + 2);
	REFUSED(h.strip_size = UINT64_MAX - 1);
	/* bit-matrix: strips of whole w * packet_size blocks (8 * 64 = 512) */
	REFUSED(h.kind = EC_CAUCHY_GOOD; h.w = 8; h.packet_size = 64; h.strip_size = 65536 + 64);
	REFUSED(h.generation = CHUNK_GENERATION_MAX + 1);
	REFUSED(h.generation = UINT64_MAX);
	REFUSED(h.durable = UINT64_MAX);
	REFUSED(h.size = UINT64_C(1) << 63);
	REFUSED(h.size = UINT64_MAX);
	/* the chunk offsets of the last stripe pass INT64_MAX: 64-byte strips
	 * take twice the file's size in the chunk */
	REFUSED(h.k = 1; h.m = 6; h.strip_size = 64; h.size = UINT64_C(1) << 62);
#undef REFUSED
}

/* The largest and smallest values each field may take: accepted. */
static void test_header_boundaries_accepted(void **state)
{
	const chunk_header base = sample_header();
	chunk_header h;

	(void)state;
#define ACCEPTED(...) \
	do { \
		h = base; \
		__VA_ARGS__; \
		assert_int_equal(sealed_decode(&h), 0); \
	} while (0)
	ACCEPTED(h.k = 1; h.m = 63; h.position = 63; h.rotation = 63; h.missed = 1ull << 63);
	ACCEPTED(h.k = 63; h.m = 1; h.missed = ~0ull);
	ACCEPTED(h.k = 1; h.m = 1; h.position = 1; h.rotation = 1; h.missed = 3);
	ACCEPTED(h.w = 8; h.strip_size = 1);
	ACCEPTED(h.w = 32; h.strip_size = 4);
	ACCEPTED(h.strip_size = CHUNK_STRIP_MAX);
	ACCEPTED(h.generation = CHUNK_GENERATION_MAX);
	ACCEPTED(h.generation = 0);
	ACCEPTED(h.durable = CHUNK_STRIPE_LIMIT);
	ACCEPTED(h.size = 0);
	ACCEPTED(h.kind = EC_RAID6_PQ; h.k = 5; h.m = 2; h.w = 8; h.position = 6; h.rotation = 6;
	         h.missed = 0x7f);
	ACCEPTED(h.kind = EC_CAUCHY_GOOD; h.w = 8; h.packet_size = 64; h.strip_size = 65536);
	ACCEPTED(h.kind = EC_LIBERATION; h.m = 2; h.missed = 1; h.w = 7; h.packet_size = 8;
	         h.strip_size = 7 * 8 * 1024);
	ACCEPTED(h.kind = EC_CAUCHY_GOOD; h.w = 8; h.packet_size = 1 << 26;
	         h.strip_size = 8u << 26);
	/* the largest size: strips of 1 GiB take a chunk about k times smaller */
	ACCEPTED(h.strip_size = CHUNK_STRIP_MAX; h.size = CHUNK_SIZE_MAX);
	ACCEPTED(h.version = 1; h.strip_size = CHUNK_STRIP_MAX; h.size = CHUNK_SIZE_MAX);
	ACCEPTED(h.k = 1; h.m = 6; h.strip_size = 64; h.size = UINT64_C(1) << 61);
#undef ACCEPTED
}

static void test_record_round_trip(void **state)
{
	chunk_record r = { .stripe = 0x0122334455667788ull, .generation = 0x79aabbccddeeff00ull,
	                   .position = 63, .flags = CHUNK_RECORD_WRITTEN,
	                   .size = 0xabcdef0123ull }, d;
	uint8_t buf[CHUNK_RECORD_SIZE];

	(void)state;
	for (int i = 0; i < CHECKSUM_MAX; i++)
		r.sum[i] = (uint8_t)(i * 7 + 1);
	chunk_record_encode(&r, buf);
	assert_false(chunk_record_is_blank(buf));
	assert_int_equal(chunk_record_decode(buf, &d), 0);
	assert_int_equal(d.stripe, r.stripe);
	assert_int_equal(d.generation, r.generation);
	assert_int_equal(d.position, r.position);
	assert_int_equal(d.flags, r.flags);
	assert_int_equal(d.size, r.size);
	assert_memory_equal(d.sum, r.sum, CHECKSUM_MAX);
	memset(buf, 0, sizeof(buf));
	assert_true(chunk_record_is_blank(buf));
	assert_int_equal(chunk_record_decode(buf, &d), -EINVAL); /* not written */
}

/* Each record field out of range alone: refused; the limits: accepted. */
static void test_record_fields(void **state)
{
	const chunk_record base = { .stripe = 5, .generation = 9, .position = 2,
	                            .flags = CHUNK_RECORD_WRITTEN, .size = 1000 };
	uint8_t buf[CHUNK_RECORD_SIZE];
	chunk_record r, d;

	(void)state;
#define RECORD(rc, ...) \
	do { \
		r = base; \
		__VA_ARGS__; \
		chunk_record_encode(&r, buf); \
		assert_int_equal(chunk_record_decode(buf, &d), rc); \
	} while (0)
	RECORD(0);
	RECORD(-EINVAL, r.flags = 0);
	RECORD(-EINVAL, r.flags = CHUNK_RECORD_WRITTEN | 2);
	RECORD(-EINVAL, r.position = CHUNK_MAX_MEMBERS);
	RECORD(-EINVAL, r.position = UINT32_MAX);
	RECORD(-EINVAL, r.generation = 0);
	RECORD(-EINVAL, r.generation = CHUNK_GENERATION_MAX + 1);
	RECORD(-EINVAL, r.stripe = CHUNK_STRIPE_LIMIT);
	RECORD(-EINVAL, r.stripe = UINT64_MAX);
	RECORD(-EINVAL, r.size = CHUNK_SIZE_MAX + 1);
	RECORD(0, r.position = CHUNK_MAX_MEMBERS - 1);
	RECORD(0, r.generation = CHUNK_GENERATION_MAX);
	RECORD(0, r.stripe = CHUNK_STRIPE_LIMIT - 1);
	RECORD(0, r.size = CHUNK_SIZE_MAX);
	RECORD(0, r.stripe = 0; r.size = 0);
#undef RECORD
}

static void check_strip_detection(checksum_alg alg)
{
	uint8_t key[CHECKSUM_KEY_SIZE];
	uint8_t data[4096];
	chunk_header h = sample_header();
	chunk_record r = { .stripe = 9, .generation = 42, .position = 2,
	                   .flags = CHUNK_RECORD_WRITTEN, .size = 1000 };
	checksum *c;

	fill_random(key, sizeof(key), 7);
	fill_random(data, sizeof(data), alg);
	c = checksum_new(alg, key);
	assert_non_null(c);
	h.checksum = (uint16_t)alg;
	assert_int_equal(chunk_strip_sum(c, &h, &r, data, sizeof(data), NULL), 0);
	assert_true(chunk_strip_verify(c, &h, &r, 9, 2, data, sizeof(data)));

	/* Every byte of the strip. */
	for (size_t i = 0; i < sizeof(data); i++) {
		data[i] ^= 0x80;
		assert_false(chunk_strip_verify(c, &h, &r, 9, 2, data, sizeof(data)));
		data[i] ^= 0x80;
	}
	/* Every byte of the encoded record. */
	uint8_t rb[CHUNK_RECORD_SIZE];
	chunk_record_encode(&r, rb);
	for (unsigned i = 0; i < CHUNK_RECORD_SIZE; i++) {
		chunk_record bad;
		rb[i] ^= 0x04;
		chunk_record_decode(rb, &bad);
		assert_false(chunk_strip_verify(c, &h, &bad, 9, 2, data, sizeof(data)));
		rb[i] ^= 0x04;
	}
	/* Moved to another stripe or position, or copied to another file or
	 * volume: no longer verifies. */
	assert_false(chunk_strip_verify(c, &h, &r, 10, 2, data, sizeof(data)));
	assert_false(chunk_strip_verify(c, &h, &r, 9, 3, data, sizeof(data)));
	chunk_header other = h;
	other.file_id[15] ^= 1;
	assert_false(chunk_strip_verify(c, &other, &r, 9, 2, data, sizeof(data)));
	other = h;
	other.volume_uuid[0] ^= 1;
	assert_false(chunk_strip_verify(c, &other, &r, 9, 2, data, sizeof(data)));
	/* A record without the written flag never verifies. */
	chunk_record unwritten = r;
	unwritten.flags = 0;
	assert_false(chunk_strip_verify(c, &h, &unwritten, 9, 2, data, sizeof(data)));
	checksum_free(c);
}

static void test_strip_detection_every_algorithm(void **state)
{
	(void)state;
	const char *names[] = { "sha256", "blake2b", "blake2s", "gmac", "poly1305" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		checksum_alg alg = checksum_alg_from_name(names[i]);
		assert_int_not_equal(alg, 0);
		assert_string_equal(checksum_alg_name(alg), names[i]);
		assert_true(checksum_alg_size(alg) >= 16);
		check_strip_detection(alg);
	}
	assert_int_equal(checksum_alg_from_name("crc32"), 0);
}

/* Version 3, one algorithm: a strip of 4 blocks (the last short) gets a
 * tag per block and a record sum over the tags; a byte flipped in a block
 * is caught by that block's tag only, a tag flipped by the record sum. */
static void check_tags(checksum_alg alg)
{
	enum { LEN = 3 * 4096 + 100, NB = 4 };
	uint8_t key[CHECKSUM_KEY_SIZE], data[LEN], tags[NB * CHUNK_TAG_SIZE];
	uint8_t mine[NB * CHUNK_TAG_SIZE];
	chunk_header h = sample_header();
	chunk_record r = { .stripe = 9, .generation = 42, .position = 2,
	                   .flags = CHUNK_RECORD_WRITTEN, .size = 1000 };

	fill_random(key, sizeof(key), 8);
	fill_random(data, sizeof(data), alg + 10);
	checksum *c = checksum_new(alg, key);
	assert_non_null(c);
	h.version = 3;
	h.checksum = (uint16_t)alg;
	assert_int_equal(chunk_strip_blocks(LEN), NB);
	assert_int_equal(chunk_strip_sum(c, &h, &r, data, LEN, tags), 0);
	assert_true(chunk_strip_verify(c, &h, &r, 9, 2, data, LEN));
	assert_true(chunk_tags_verify(c, &h, &r, 9, 2, tags, LEN));
	assert_false(chunk_tags_verify(c, &h, &r, 9, 3, tags, LEN));
	/* each tag is checksum_compute of its input, cut (checksum_blocks
	 * does the prefix once: the same bits) */
	for (unsigned b = 0; b < NB; b++) {
		uint8_t pre[64], rb[CHUNK_RECORD_SIZE], num[16] = { (uint8_t)b };
		uint8_t full[CHECKSUM_MAX];
		memcpy(pre, h.volume_uuid, 16);
		memcpy(pre + 16, h.file_id, 16);
		chunk_record_encode(&r, rb);
		memcpy(pre + 32, rb, 32);
		struct iovec iov[3] = { { pre, 64 }, { num, 16 },
		                        { data + b * 4096, b == NB - 1 ? 100 : 4096 } };
		assert_int_equal(checksum_compute(c, iov, 3, full), 0);
		assert_memory_equal(tags + b * CHUNK_TAG_SIZE, full, CHUNK_TAG_SIZE);
	}
	/* the tags of a run of blocks are those of the whole strip */
	assert_int_equal(chunk_strip_tags(c, &h, &r, data + 4096, LEN, 1, 3, mine), 0);
	assert_memory_equal(mine, tags + CHUNK_TAG_SIZE, 3 * CHUNK_TAG_SIZE);
	assert_true(chunk_blocks_verify(c, &h, &r, tags, LEN, 0, NB, data));
	assert_false(chunk_blocks_verify(c, &h, &r, tags, LEN, 1, NB, data + 4096));
	for (unsigned b = 0; b < NB; b++) {
		size_t at = b * 4096 + (b == NB - 1 ? 99 : 1234);
		data[at] ^= 0x10;
		for (unsigned o = 0; o < NB; o++)
			assert_true(chunk_blocks_verify(c, &h, &r, tags, LEN, o, 1,
			                                data + o * 4096) == (o != b));
		assert_false(chunk_strip_verify(c, &h, &r, 9, 2, data, LEN));
		data[at] ^= 0x10;
	}
	for (unsigned i = 0; i < sizeof(tags); i++) {
		tags[i] ^= 0x01;
		assert_false(chunk_tags_verify(c, &h, &r, 9, 2, tags, LEN));
		tags[i] ^= 0x01;
	}
	/* a tag binds the record: another generation's does not verify */
	chunk_record other = r;
	other.generation++;
	assert_false(chunk_blocks_verify(c, &h, &other, tags, LEN, 0, 1, data));
	/* before version 3 there are no tags: the record sums the data */
	h.version = 2;
	assert_false(chunk_tags_verify(c, &h, &r, 9, 2, tags, LEN));
	assert_false(chunk_strip_verify(c, &h, &r, 9, 2, data, LEN));
	checksum_free(c);
}

static void test_tags_every_algorithm(void **state)
{
	(void)state;
	for (checksum_alg alg = CHECKSUM_SHA256; alg <= CHECKSUM_POLY1305; alg++)
		check_tags(alg);
}

/* The tag and the record sum of version 3 as docs/FORMAT.md 4.2 spells
 * them, with SHA-256. */
static void test_tags_as_documented(void **state)
{
	uint8_t data[5000], tags[2 * CHUNK_TAG_SIZE], in[80 + 4096], sum[32];
	chunk_header h = sample_header();
	chunk_record r = { .stripe = 3, .generation = 8, .position = 5,
	                   .flags = CHUNK_RECORD_WRITTEN, .size = 77 };
	checksum *c = checksum_new(CHECKSUM_SHA256, NULL);

	(void)state;
	h.version = 3;
	h.checksum = CHECKSUM_SHA256;
	fill_random(data, sizeof(data), 3);
	assert_int_equal(chunk_strip_sum(c, &h, &r, data, sizeof(data), tags), 0);
	memcpy(in, h.volume_uuid, 16);
	memcpy(in + 16, h.file_id, 16);
	chunk_record_encode(&r, in + 32); /* its first 32 bytes count */
	for (uint64_t b = 0; b < 2; b++) {
		size_t n = b ? sizeof(data) - 4096 : 4096;
		memset(in + 64, 0, 16); /* le64(b) and 8 zero bytes */
		for (int i = 0; i < 8; i++)
			in[64 + i] = (uint8_t)(b >> (8 * i));
		memcpy(in + 80, data + b * 4096, n);
		SHA256(in, 80 + n, sum);
		assert_memory_equal(tags + b * CHUNK_TAG_SIZE, sum, CHUNK_TAG_SIZE);
	}
	memcpy(in + 64, tags, sizeof(tags));
	SHA256(in, 64 + sizeof(tags), sum);
	assert_memory_equal(r.sum, sum, 32);
	checksum_free(c);
}

static void test_checksum_known_answer(void **state)
{
	/* SHA-256 of "abc" (FIPS 180-2): the EVP plumbing is the real thing. */
	static const uint8_t expect[8] = { 0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea };
	uint8_t out[CHECKSUM_MAX];
	struct iovec iov[2] = { { (void *)"a", 1 }, { (void *)"bc", 2 } };
	checksum *c = checksum_new(CHECKSUM_SHA256, NULL);

	(void)state;
	assert_non_null(c);
	assert_int_equal(checksum_compute(c, iov, 2, out), 0);
	assert_memory_equal(out, expect, sizeof(expect));
	checksum_free(c);
	/* Keyed MACs depend on the key. */
	uint8_t k1[CHECKSUM_KEY_SIZE] = { 1 }, k2[CHECKSUM_KEY_SIZE] = { 2 }, o2[CHECKSUM_MAX];
	checksum *g1 = checksum_new(CHECKSUM_GMAC, k1), *g2 = checksum_new(CHECKSUM_GMAC, k2);
	assert_int_equal(checksum_compute(g1, iov, 2, out), 0);
	assert_int_equal(checksum_compute(g2, iov, 2, o2), 0);
	assert_memory_not_equal(out, o2, 16);
	checksum_free(g1);
	checksum_free(g2);
}

/* A strip of 3 pages at file offset 8192: a page of zeros is lost only
 * where the chunk file holds no data (a hole, or past its end), never
 * where zeros were written (a sparse strip, damaged elsewhere). */
static void test_lost_page_needs_a_hole(void **state)
{
	(void)state;
	char path[] = "/tmp/ecfs-test-chunk-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	uint8_t strip[3 * 4096], page[4096];
	memset(strip, 0, sizeof(strip));
	memset(page, 0x5a, sizeof(page));

	/* All three pages written (zeros in the middle one): nothing lost. */
	assert_int_equal(pwrite(fd, page, 4096, 8192), 4096);
	assert_int_equal(pwrite(fd, strip, 4096, 12288), 4096);
	assert_int_equal(pwrite(fd, page, 4096, 16384), 4096);
	memcpy(strip, page, 4096);
	memcpy(strip + 8192, page, 4096);
	assert_false(chunk_strip_has_lost_page(fd, strip, sizeof(strip), 8192));
	/* A written page with content is never lost, zero or not elsewhere. */
	memset(strip, 0, sizeof(strip));
	assert_false(chunk_strip_has_lost_page(fd, strip, 4096, 8192));

	/* The middle page punched out (a hole): lost. */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, page, 4096, 8192), 4096);
	assert_int_equal(pwrite(fd, page, 4096, 16384), 4096);
	memcpy(strip, page, 4096);
	memset(strip + 4096, 0, 4096);
	memcpy(strip + 8192, page, 4096);
	assert_true(chunk_strip_has_lost_page(fd, strip, sizeof(strip), 8192));

	/* The last page past the end of the file: lost. */
	assert_int_equal(ftruncate(fd, 12288), 0);
	assert_int_equal(pwrite(fd, page, 4096, 8192), 4096);
	memset(strip + 4096, 0x5a, 4096);
	memset(strip + 8192, 0, 4096);
	assert_true(chunk_strip_has_lost_page(fd, strip, sizeof(strip), 8192));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_round_trip),
		cmocka_unit_test(test_header_every_byte_flip_detected),
		cmocka_unit_test(test_header_bad_fields),
		cmocka_unit_test(test_header_fields_refused),
		cmocka_unit_test(test_header_boundaries_accepted),
		cmocka_unit_test(test_record_round_trip),
		cmocka_unit_test(test_record_fields),
		cmocka_unit_test(test_strip_detection_every_algorithm),
		cmocka_unit_test(test_tags_every_algorithm),
		cmocka_unit_test(test_tags_as_documented),
		cmocka_unit_test(test_checksum_known_answer),
		cmocka_unit_test(test_lost_page_needs_a_hole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
