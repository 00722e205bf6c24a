/* SPDX-License-Identifier: MIT */
/*
 * The small-write log's bytes (smalllog.h, docs/FORMAT.md section 12):
 * the log header, the record header, the record checksum that binds
 * volume, file, epoch, sequence, place and size to the data, and the scan
 * of one copy.
 */
#include "smalllog.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <openssl/sha.h>

#include "chunk.h"
#include "le.h"

#define HEADER_SUM_OFFSET (SMALLLOG_HEADER_SIZE - 32)
#define RECORD_SUM_OFFSET 48u

_Static_assert(RECORD_SUM_OFFSET + CHECKSUM_MAX == SMALLLOG_RECORD_SIZE, "record layout");

void smalllog_header_encode(const smalllog_header *h, uint8_t out[SMALLLOG_HEADER_SIZE])
{
	memset(out, 0, SMALLLOG_HEADER_SIZE);
	memcpy(out, SMALLLOG_MAGIC, 8);
	le_put32(out + 8, SMALLLOG_VERSION);
	le_put32(out + 12, SMALLLOG_HEADER_SIZE);
	memcpy(out + 16, h->volume_uuid, 16);
	memcpy(out + 32, h->file_id, 16);
	le_put64(out + 48, h->epoch);
	le_put16(out + 56, h->checksum);
	SHA256(out, HEADER_SUM_OFFSET, out + HEADER_SUM_OFFSET);
}

static bool zeros(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

int smalllog_header_decode(const uint8_t in[SMALLLOG_HEADER_SIZE], smalllog_header *h,
                           const char **why)
{
	uint8_t sum[32];
	const char *dummy;

	if (!why)
		why = &dummy;
	*why = NULL;
	if (memcmp(in, SMALLLOG_MAGIC, 8) != 0) {
		*why = "not an ecfs log (bad magic)";
		return -EINVAL;
	}
	SHA256(in, HEADER_SUM_OFFSET, sum);
	if (memcmp(sum, in + HEADER_SUM_OFFSET, 32) != 0) {
		*why = "log header checksum mismatch";
		return -EINVAL;
	}
	if (le_get32(in + 8) != SMALLLOG_VERSION) {
		*why = "unsupported log version";
		return -EPROTO;
	}
	memset(h, 0, sizeof(*h));
	memcpy(h->volume_uuid, in + 16, 16);
	memcpy(h->file_id, in + 32, 16);
	h->epoch = le_get64(in + 48);
	h->checksum = le_get16(in + 56);
	if (le_get32(in + 12) != SMALLLOG_HEADER_SIZE)
		*why = "log header size not supported";
	else if (h->epoch == 0 || h->epoch > CHUNK_GENERATION_MAX)
		*why = "log epoch out of range";
	else if (checksum_alg_size((checksum_alg)h->checksum) == 0)
		*why = "log checksum algorithm unknown";
	else if (!zeros(in + 58, HEADER_SUM_OFFSET - 58))
		*why = "log header reserved bytes not zero";
	return *why ? -EINVAL : 0;
}

static void record_fields(const smalllog_record *r, uint8_t out[SMALLLOG_RECORD_SIZE])
{
	memset(out, 0, SMALLLOG_RECORD_SIZE);
	memcpy(out, SMALLLOG_RECORD_MAGIC, 8);
	le_put32(out + 8, r->length);
	le_put64(out + 16, r->epoch);
	le_put64(out + 24, r->seq);
	le_put64(out + 32, r->offset);
	le_put64(out + 40, r->size);
}

/* The record's checksum: volume and file identity, the record's fields
 * and its data, so a record copied to another file or log, or replayed at
 * another place, no longer verifies. */
static int record_sum(const checksum *c, const smalllog_header *h, const smalllog_record *r,
                      const uint8_t *data, uint8_t out[CHECKSUM_MAX])
{
	uint8_t rec[SMALLLOG_RECORD_SIZE];
	struct iovec iov[4];

	record_fields(r, rec);
	iov[0] = (struct iovec){ (void *)h->volume_uuid, 16 };
	iov[1] = (struct iovec){ (void *)h->file_id, 16 };
	iov[2] = (struct iovec){ rec, RECORD_SUM_OFFSET };
	iov[3] = (struct iovec){ (void *)data, r->length };
	return checksum_compute(c, iov, 4, out);
}

int smalllog_record_encode(const checksum *c, const smalllog_header *h, smalllog_record *r,
                           const uint8_t *data, uint8_t out[SMALLLOG_RECORD_SIZE])
{
	if (record_sum(c, h, r, data, r->sum) < 0)
		return -EIO;
	record_fields(r, out);
	memcpy(out + RECORD_SUM_OFFSET, r->sum, CHECKSUM_MAX);
	return 0;
}

int smalllog_record_decode(const uint8_t in[SMALLLOG_RECORD_SIZE], smalllog_record *r,
                           const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	*why = NULL;
	memset(r, 0, sizeof(*r));
	if (memcmp(in, SMALLLOG_RECORD_MAGIC, 8) != 0) {
		*why = "not a log record (bad magic)";
		return -EINVAL;
	}
	r->length = le_get32(in + 8);
	r->epoch = le_get64(in + 16);
	r->seq = le_get64(in + 24);
	r->offset = le_get64(in + 32);
	r->size = le_get64(in + 40);
	memcpy(r->sum, in + RECORD_SUM_OFFSET, CHECKSUM_MAX);
	if (!zeros(in + 12, 4))
		*why = "log record reserved bytes not zero";
	else if (r->length == 0 || r->length > SMALLLOG_DATA_MAX)
		*why = "log record length out of range";
	else if (r->epoch == 0 || r->epoch > CHUNK_GENERATION_MAX)
		*why = "log record epoch out of range";
	else if (r->seq == 0 || r->seq > CHUNK_GENERATION_MAX)
		*why = "log record sequence out of range";
	else if (r->size > CHUNK_SIZE_MAX || r->offset > r->size || r->length > r->size - r->offset)
		*why = "log record offset or size out of range";
	return *why ? -EINVAL : 0;
}

bool smalllog_record_verify(const checksum *c, const smalllog_header *h,
                            const smalllog_record *r, const uint8_t *data)
{
	uint8_t sum[CHECKSUM_MAX];

	if (r->epoch != h->epoch || record_sum(c, h, r, data, sum) < 0)
		return false;
	return memcmp(sum, r->sum, CHECKSUM_MAX) == 0;
}

int smalllog_scan(const checksum *c, const smalllog_header *want, const uint8_t *buf, size_t len,
                  smalllog_visit_fn visit, void *ctx, uint64_t *epoch, size_t *end)
{
	smalllog_header h;
	size_t at = SMALLLOG_HEADER_SIZE;
	int count = 0;

	if (len < SMALLLOG_HEADER_SIZE || smalllog_header_decode(buf, &h, NULL) < 0 ||
	    h.checksum != (uint16_t)checksum_get_alg(c) ||
	    memcmp(h.volume_uuid, want->volume_uuid, 16) != 0 ||
	    memcmp(h.file_id, want->file_id, 16) != 0)
		return -EINVAL;
	while (len - at >= SMALLLOG_RECORD_SIZE) {
		smalllog_record r;
		if (smalllog_record_decode(buf + at, &r, NULL) < 0 ||
		    r.length > len - at - SMALLLOG_RECORD_SIZE ||
		    !smalllog_record_verify(c, &h, &r, buf + at + SMALLLOG_RECORD_SIZE))
			break;
		if (visit)
			visit(ctx, &r, buf + at + SMALLLOG_RECORD_SIZE);
		at += SMALLLOG_RECORD_SIZE + r.length;
		count++;
	}
	if (epoch)
		*epoch = h.epoch;
	if (end)
		*end = at;
	return count;
}
