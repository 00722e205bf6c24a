/* SPDX-License-Identifier: MIT */
/*
 * Chunk header and strip record encoding.  Every field has a fixed offset
 * and is little-endian, so members move between machines.  The header
 * ends with a SHA-256 of the bytes before it: a header is written rarely,
 * and a fixed algorithm lets ecfs-fsck check it before knowing anything.
 */
#include "chunk.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "ec.h"
#include "le.h"

/* The header's length by version; it ends with its SHA-256. */
static uint32_t header_size(uint32_t version)
{
	return version == 1 ? CHUNK_HEADER_SIZE_V1 : CHUNK_HEADER_SIZE_V2;
}

size_t chunk_header_encode(const chunk_header *h, uint8_t out[CHUNK_HEADER_MAX])
{
	uint32_t len = header_size(h->version);

	memset(out, 0, len);
	memcpy(out, CHUNK_MAGIC, 8);
	le_put32(out + 8, h->version);
	le_put32(out + 12, len);
	memcpy(out + 16, h->volume_uuid, 16);
	memcpy(out + 32, h->file_id, 16);
	le_put32(out + 48, h->position);
	le_put32(out + 52, h->rotation);
	le_put32(out + 56, h->kind);
	le_put16(out + 60, h->k);
	le_put16(out + 62, h->m);
	le_put16(out + 64, h->w);
	le_put16(out + 66, h->checksum);
	le_put64(out + 72, h->packet_size);
	le_put64(out + 80, h->strip_size);
	le_put64(out + 88, h->size);
	le_put64(out + 96, h->generation);
	le_put64(out + 104, h->missed);
	le_put32(out + 112, CHUNK_RECORD_SIZE);
	le_put32(out + 116, CHUNK_GROUP_STRIPES);
	le_put64(out + 120, h->durable);
	SHA256(out, len - 32, out + len - 32);
	return len;
}

int chunk_header_decode(const uint8_t *in, size_t got, chunk_header *h, const char **why)
{
	uint8_t sum[32];
	const char *dummy;

	if (!why)
		why = &dummy;
	if (got < 16 || memcmp(in, CHUNK_MAGIC, 8) != 0) {
		*why = got < 16 ? "chunk shorter than its header" : "not an ecfs chunk (bad magic)";
		return -EINVAL;
	}
	/* The version is read before the checksum is known good: a version
	 * this build does not know is refused by name, never guessed at. */
	uint32_t version = le_get32(in + 8);
	if (version < 1 || version > CHUNK_FORMAT_VERSION) {
		memset(h, 0, sizeof(*h));
		h->version = version; /* for the message */
		*why = "unsupported chunk format version";
		return -EPROTO;
	}
	uint32_t len = header_size(version);
	if (got < len) {
		*why = "chunk shorter than its header";
		return -EINVAL;
	}
	SHA256(in, len - 32, sum);
	if (memcmp(sum, in + len - 32, 32) != 0) {
		*why = "chunk header checksum mismatch";
		return -EINVAL;
	}
	memset(h, 0, sizeof(*h));
	h->version = version;
	if (le_get32(in + 12) != len || le_get32(in + 112) != CHUNK_RECORD_SIZE ||
	    le_get32(in + 116) != CHUNK_GROUP_STRIPES) {
		*why = "chunk header geometry not supported";
		return -ERANGE;
	}
	memcpy(h->volume_uuid, in + 16, 16);
	memcpy(h->file_id, in + 32, 16);
	h->position = le_get32(in + 48);
	h->rotation = le_get32(in + 52);
	h->kind = le_get32(in + 56);
	h->k = le_get16(in + 60);
	h->m = le_get16(in + 62);
	h->w = le_get16(in + 64);
	h->checksum = le_get16(in + 66);
	h->packet_size = le_get64(in + 72);
	h->strip_size = le_get64(in + 80);
	h->size = le_get64(in + 88);
	h->generation = le_get64(in + 96);
	h->missed = le_get64(in + 104);
	h->durable = le_get64(in + 120);
	const char *bad = chunk_header_why(h);
	if (bad) {
		*why = bad;
		return -ERANGE;
	}
	return 0;
}

/* The code's parameters: 0 if libec would not make that code, else the
 * block alignment of its strips. */
static uint64_t code_align(const chunk_header *h)
{
	ec_params p = { .kind = (ec_kind)h->kind, .k = h->k, .m = h->m, .w = h->w,
	                .packet_size = (size_t)h->packet_size };

	if ((uint64_t)p.packet_size != h->packet_size)
		return 0; /* a size_t narrower than the field */
	return ec_params_block_align(&p);
}

const char *chunk_header_why(const chunk_header *h)
{
	uint32_t n = (uint32_t)h->k + h->m;

	if (h->k < 1 || h->m < 1 || n > CHUNK_MAX_MEMBERS)
		return "chunk header k or m out of range";
	if (h->position >= n || h->rotation >= n)
		return "chunk header position or rotation out of range";
	if (n < CHUNK_MAX_MEMBERS && h->missed >> n)
		return "chunk header names a missed member past k+m";
	if (checksum_alg_size(h->checksum) == 0)
		return "chunk header names an unknown checksum";
	if (!ec_kind_name((ec_kind)h->kind))
		return "chunk header names an unknown code";
	/* w, and a packet size for bit-matrix codes only, as libec takes them */
	uint64_t align = code_align(h);
	if (!align)
		return "chunk header code parameters (w, packet size) not valid";
	if (h->strip_size == 0 || h->strip_size > CHUNK_STRIP_MAX || h->strip_size % align)
		return "chunk header strip size out of range or not a multiple of the code's "
		       "block alignment";
	if (h->generation > CHUNK_GENERATION_MAX || h->durable > CHUNK_STRIPE_LIMIT)
		return "chunk header generation or durable mark out of range";
	layout l;
	chunk_layout(h, align, &l);
	if (!layout_size_fits(&l, h->size))
		return "chunk header size out of range";
	return NULL;
}

void chunk_record_encode(const chunk_record *r, uint8_t out[CHUNK_RECORD_SIZE])
{
	le_put64(out, r->stripe);
	le_put64(out + 8, r->generation);
	le_put32(out + 16, r->position);
	le_put32(out + 20, r->flags);
	le_put64(out + 24, r->size);
	memcpy(out + 32, r->sum, CHECKSUM_MAX);
}

int chunk_record_decode(const uint8_t in[CHUNK_RECORD_SIZE], chunk_record *r)
{
	r->stripe = le_get64(in);
	r->generation = le_get64(in + 8);
	r->position = le_get32(in + 16);
	r->flags = le_get32(in + 20);
	r->size = le_get64(in + 24);
	memcpy(r->sum, in + 32, CHECKSUM_MAX);
	if (r->flags != CHUNK_RECORD_WRITTEN || r->position >= CHUNK_MAX_MEMBERS ||
	    r->generation == 0 || r->generation > CHUNK_GENERATION_MAX ||
	    r->stripe >= CHUNK_STRIPE_LIMIT || r->size > CHUNK_SIZE_MAX)
		return -EINVAL;
	return 0;
}

bool chunk_record_is_blank(const uint8_t in[CHUNK_RECORD_SIZE])
{
	for (unsigned i = 0; i < CHUNK_RECORD_SIZE; i++)
		if (in[i])
			return false;
	return true;
}

/* True if the file holds no data in [off, end): SEEK_DATA finds the next
 * data past it, or none (ENXIO: past the last data or the end).  A file
 * system without SEEK_DATA reports all of a file as data: no page is
 * taken as lost there but those past the end. */
static bool file_lacks_data(int fd, off_t off, off_t end)
{
	off_t next = lseek(fd, off, SEEK_DATA);

	if (next < 0)
		return errno == ENXIO;
	return next >= end;
}

bool chunk_strip_has_lost_page(int fd, const uint8_t *data, uint64_t len, uint64_t off)
{
	for (uint64_t x = 0; x < len;) {
		uint64_t end = x + 4096 - (off + x) % 4096;
		if (end > len)
			end = len;
		bool zero = true;
		for (uint64_t i = x; i < end && zero; i++)
			zero = data[i] == 0;
		if (zero && file_lacks_data(fd, (off_t)(off + x), (off_t)(off + end)))
			return true;
		x = end;
	}
	return false;
}

uint64_t chunk_strip_blocks(uint64_t len)
{
	return (len + CHUNK_BLOCK_SIZE - 1) / CHUNK_BLOCK_SIZE;
}

/* The identity every sum of a strip starts with: volume, file, and the
 * record's first 32 bytes (stripe, generation, position, flags, size), so
 * a strip or block copied to another file, stripe or position, or paired
 * with another generation's record, no longer verifies. */
static void strip_prefix(const chunk_header *h, const chunk_record *r, uint8_t out[64])
{
	uint8_t rec[CHUNK_RECORD_SIZE];

	chunk_record_encode(r, rec);
	memcpy(out, h->volume_uuid, 16);
	memcpy(out + 16, h->file_id, 16);
	memcpy(out + 32, rec, 32);
}

int chunk_strip_tags(const checksum *c, const chunk_header *h, const chunk_record *r,
                     const uint8_t *data, uint64_t len, uint64_t first, uint64_t count,
                     uint8_t *tags)
{
	uint8_t pre[64];

	if (first > chunk_strip_blocks(len) || count > chunk_strip_blocks(len) - first)
		return -EINVAL;
	if (count == 0)
		return 0;
	uint64_t from = first * CHUNK_BLOCK_SIZE, end = (first + count) * CHUNK_BLOCK_SIZE;
	if (end > len)
		end = len;
	strip_prefix(h, r, pre);
	return checksum_blocks(c, pre, sizeof(pre), first, data, (size_t)(end - from),
	                       CHUNK_BLOCK_SIZE, CHUNK_TAG_SIZE, tags);
}

/* The record's checksum over what it covers: the strip's data (versions 1
 * and 2) or its tags (version 3), bytes of `len`. */
static int record_sum(const checksum *c, const chunk_header *h, const chunk_record *r,
                      const uint8_t *data, uint64_t len, uint8_t out[CHECKSUM_MAX])
{
	uint8_t pre[64];
	struct iovec iov[2] = { { pre, sizeof(pre) }, { (void *)data, len } };

	strip_prefix(h, r, pre);
	return checksum_compute(c, iov, 2, out);
}

/* Version 3: a strip's tags, in tags (the caller's, of
 * chunk_strip_blocks(len) tags) or in a buffer of the caller's to free. */
static uint8_t *tags_buffer(uint64_t len, uint8_t *own, size_t own_size, uint8_t **freeme)
{
	size_t need = (size_t)chunk_strip_blocks(len) * CHUNK_TAG_SIZE;

	*freeme = NULL;
	if (need <= own_size)
		return own;
	return *freeme = malloc(need);
}

/* The strip's record sum (in out) and, in version 3, its tags (in tags
 * if not NULL). */
static int strip_sum(const checksum *c, const chunk_header *h, const chunk_record *r,
                     const uint8_t *data, uint64_t len, uint8_t *tags, uint8_t out[CHECKSUM_MAX])
{
	uint8_t local[64 * CHUNK_TAG_SIZE], *freeme;

	if (h->version < 3)
		return record_sum(c, h, r, data, len, out);
	uint8_t *t = tags ? tags : tags_buffer(len, local, sizeof(local), &freeme);
	uint64_t nb = chunk_strip_blocks(len);
	int rc = t ? chunk_strip_tags(c, h, r, data, len, 0, nb, t) : -ENOMEM;
	if (rc == 0)
		rc = record_sum(c, h, r, t, nb * CHUNK_TAG_SIZE, out);
	if (!tags)
		free(freeme);
	return rc;
}

int chunk_strip_sum(const checksum *c, const chunk_header *h, chunk_record *r,
                    const uint8_t *data, uint64_t len, uint8_t *tags)
{
	return strip_sum(c, h, r, data, len, tags, r->sum);
}

/* The record is written and names (stripe, position). */
static bool record_names(const chunk_record *r, uint64_t stripe, uint32_t position)
{
	return (r->flags & CHUNK_RECORD_WRITTEN) && r->stripe == stripe && r->position == position;
}

bool chunk_strip_verify_tags(const checksum *c, const chunk_header *h,
                             const chunk_record *r, uint64_t stripe, uint32_t position,
                             const uint8_t *data, uint64_t len, const uint8_t *stored,
                             bool *stored_ok)
{
	uint8_t sum[CHECKSUM_MAX], local[64 * CHUNK_TAG_SIZE], *freeme = NULL, *tags = NULL;
	size_t used = (size_t)chunk_strip_blocks(len) * CHUNK_TAG_SIZE;
	bool ok = false;

	if (stored_ok)
		*stored_ok = true;
	if (!record_names(r, stripe, position))
		return false;
	if (stored && h->version >= 3 && !(tags = tags_buffer(len, local, sizeof(local), &freeme)))
		return false;
	if (strip_sum(c, h, r, data, len, tags, sum) == 0)
		ok = memcmp(sum, r->sum, CHECKSUM_MAX) == 0;
	if (ok && tags && stored_ok)
		*stored_ok = memcmp(tags, stored, used) == 0;
	free(freeme);
	return ok;
}

bool chunk_strip_verify(const checksum *c, const chunk_header *h,
                        const chunk_record *r, uint64_t stripe, uint32_t position,
                        const uint8_t *data, uint64_t len)
{
	return chunk_strip_verify_tags(c, h, r, stripe, position, data, len, NULL, NULL);
}

bool chunk_tags_verify(const checksum *c, const chunk_header *h, const chunk_record *r,
                       uint64_t stripe, uint32_t position, const uint8_t *tags, uint64_t len)
{
	uint8_t sum[CHECKSUM_MAX];

	if (h->version < 3 || !record_names(r, stripe, position))
		return false;
	if (record_sum(c, h, r, tags, chunk_strip_blocks(len) * CHUNK_TAG_SIZE, sum) < 0)
		return false;
	return memcmp(sum, r->sum, CHECKSUM_MAX) == 0;
}

bool chunk_blocks_verify(const checksum *c, const chunk_header *h, const chunk_record *r,
                         const uint8_t *tags, uint64_t len, uint64_t first, uint64_t count,
                         const uint8_t *data)
{
	uint8_t mine[CHUNK_TAG_SIZE];

	if (first + count > chunk_strip_blocks(len))
		return false;
	for (uint64_t b = first; b < first + count; b++) {
		const uint8_t *blk = data + (b - first) * CHUNK_BLOCK_SIZE;
		if (chunk_strip_tags(c, h, r, blk, len, b, 1, mine) < 0 ||
		    memcmp(mine, tags + b * CHUNK_TAG_SIZE, CHUNK_TAG_SIZE) != 0)
			return false;
	}
	return true;
}

void chunk_layout(const chunk_header *h, uint64_t block_align, layout *l)
{
	layout_init(l, h->k, h->m, h->strip_size, (int)h->rotation);
	layout_set_version(l, h->version, block_align);
}

uint64_t chunk_file_ident(const uint8_t file_id[16])
{
	uint64_t a, b;
	memcpy(&a, file_id, 8);
	memcpy(&b, file_id + 8, 8);
	return a ^ b;
}
