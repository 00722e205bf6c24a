/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the small-write log (src/core/format/smalllog.c): smalllog_scan
 * on a whole copy of a member's .ecfs/log/<id>, as given and again with
 * the header's sum and every record's checksum made right (with the
 * algorithm the header names, keyed with zeros), so that the fuzzer
 * reaches the record checks and the visits behind the sums.
 */
#include <assert.h>

#include "checksum.h"
#include "fuzz.h"
#include "smalllog.h"

static checksum *algs[8];

static const checksum *alg_of(const uint8_t *b, size_t len)
{
	uint8_t key[CHECKSUM_KEY_SIZE] = { 0 };
	unsigned a = len >= 58 ? (unsigned)(b[56] | b[57] << 8) : 0;

	if (a >= 8 || checksum_alg_size((checksum_alg)a) == 0)
		a = CHECKSUM_SHA256;
	if (!algs[a])
		algs[a] = checksum_new((checksum_alg)a, key);
	if (!algs[a])
		abort();
	return algs[a];
}

static void visit(void *ctx, const smalllog_record *r, const uint8_t *data)
{
	int *count = ctx;

	assert(r->length >= 1 && r->length <= SMALLLOG_DATA_MAX);
	assert(r->offset + r->length <= r->size);
	(void)data;
	(*count)++;
}

static int scan(const checksum *c, const uint8_t *b, size_t len)
{
	smalllog_header want;
	uint64_t epoch;
	size_t end = 0;
	int count = 0;

	memset(&want, 0, sizeof(want));
	if (len >= 48) {
		memcpy(want.volume_uuid, b + 16, 16);
		memcpy(want.file_id, b + 32, 16);
	}
	int rc = smalllog_scan(c, &want, b, len, visit, &count, &epoch, &end);
	if (rc >= 0) {
		assert(rc == count);
		assert(end >= SMALLLOG_HEADER_SIZE && end <= len);
	}
	return rc;
}

/* Seals the header and every record that decodes and fits, in place;
 * returns how many records it sealed before the first it could not. */
static int reseal(const checksum *c, uint8_t *b, size_t len)
{
	smalllog_header h;
	size_t at = SMALLLOG_HEADER_SIZE;
	int sealed = 0;

	if (len < SMALLLOG_HEADER_SIZE)
		return -1;
	SHA256(b, SMALLLOG_HEADER_SIZE - 32, b + SMALLLOG_HEADER_SIZE - 32);
	if (smalllog_header_decode(b, &h, NULL) < 0)
		return -1;
	while (len - at >= SMALLLOG_RECORD_SIZE) {
		smalllog_record r;
		if (smalllog_record_decode(b + at, &r, NULL) < 0 ||
		    r.length > len - at - SMALLLOG_RECORD_SIZE || r.epoch != h.epoch)
			break;
		if (smalllog_record_encode(c, &h, &r, b + at + SMALLLOG_RECORD_SIZE, b + at) < 0)
			break;
		at += SMALLLOG_RECORD_SIZE + r.length;
		sealed++;
	}
	return sealed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const checksum *c = alg_of(data, size);
	uint8_t *b = malloc(size ? size : 1);

	if (!b)
		abort();
	scan(c, data, size); /* as given */
	memcpy(b, data, size);
	int sealed = reseal(c, b, size);
	int rc = scan(c, b, size); /* with its sums made right */
	if (sealed >= 0)
		assert(rc == sealed);
	free(b);
	return 0;
}
