/* SPDX-License-Identifier: MIT */
/*
 * The on-member chunk format (docs/FORMAT.md): the chunk header (192 bytes
 * in version 2, the first 4 KiB page in version 1) and the 64-byte strip
 * record, their byte encodings (little-endian), and the strip checksum
 * that binds a strip to its volume, file, stripe, generation and
 * position.  Encoding and decoding only; no I/O.
 */
#ifndef ECFS_CHUNK_H
#define ECFS_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checksum.h"
#include "layout.h"

#define CHUNK_MAGIC "ECFSCHNK"
/* The newest chunk format this build reads and writes (layout.h). */
#define CHUNK_FORMAT_VERSION 3u
#define CHUNK_RECORD_WRITTEN 1u /* record flag: the slot holds a strip */

/* The format's limits (docs/FORMAT.md section 7): what no volume can
 * hold is refused where a header or record is decoded. */
#define CHUNK_MAX_MEMBERS 64
/* The largest strip size a header may name. */
#define CHUNK_STRIP_MAX (UINT64_C(1) << 30)
/* File sizes, chunk offsets and generations fit in an off_t (int64_t):
 * a generation so bounded leaves room for the header's reservation
 * (RULES_GEN_RESERVE) above it. */
#define CHUNK_SIZE_MAX ((uint64_t)INT64_MAX)
#define CHUNK_GENERATION_MAX ((uint64_t)INT64_MAX)
/* Every stripe has a 64-byte record in the chunk: no stripe index
 * reaches this in a chunk of at most CHUNK_SIZE_MAX bytes. */
#define CHUNK_STRIPE_LIMIT (CHUNK_SIZE_MAX / CHUNK_RECORD_SIZE)

typedef struct chunk_header {
	uint32_t version;
	uint8_t volume_uuid[16];
	uint8_t file_id[16];
	uint32_t position;   /* strip position j held by this chunk */
	uint32_t rotation;   /* member index of position 0 */
	uint32_t kind;       /* ec_kind */
	uint16_t k, m, w;
	uint16_t checksum;   /* checksum_alg of the strip records */
	uint64_t packet_size;
	uint64_t strip_size;
	uint64_t size;       /* logical file size */
	uint64_t generation; /* >= every generation used by this file's records */
	uint64_t missed;     /* bit i: member i missed writes (degraded write) */
	uint64_t durable;    /* stripes [0, durable) were synced by an fsync (0: unknown) */
} chunk_header;

typedef struct chunk_record {
	uint64_t stripe;
	uint64_t generation;
	uint32_t position;
	uint32_t flags;
	uint64_t size;       /* logical file size when the stripe was committed */
	uint8_t sum[CHECKSUM_MAX];
} chunk_record;

/* Encodes the header of h->version; returns its length in bytes. */
size_t chunk_header_encode(const chunk_header *h, uint8_t out[CHUNK_HEADER_MAX]);
/* Decodes a header from the first got bytes of a chunk.  Returns 0, or a
 * negative errno (-EINVAL short, bad magic or checksum; -ERANGE sealed by
 * its checksum but with fields out of range; -EPROTO unknown version,
 * then in h->version) and a static reason in *why.
 * Every field is checked alone and against the others (chunk_header_why):
 * what no volume could hold is refused here, so no later arithmetic on a
 * decoded header overflows.  Whether it fits this volume is
 * rules_header_misfit's (reader_rules.h). */
int chunk_header_decode(const uint8_t *in, size_t got, chunk_header *h, const char **why);
/* The 64-bit identity of a file id (its two halves folded): the inode
 * number a file shows (ecfile_ident) and the size cache's key for it. */
uint64_t chunk_file_ident(const uint8_t file_id[16]);
/* The layout a chunk header describes, for a code of that block alignment. */
void chunk_layout(const chunk_header *h, uint64_t block_align, layout *l);

/* Why the fields of h do not make a header any volume could hold, or
 * NULL if they do: the checks of chunk_header_decode past the bytes. */
const char *chunk_header_why(const chunk_header *h);

void chunk_record_encode(const chunk_record *r, uint8_t out[CHUNK_RECORD_SIZE]);
/* Decodes a record; 0 if it is a written record whose fields are in range
 * (flags exactly CHUNK_RECORD_WRITTEN, position < CHUNK_MAX_MEMBERS,
 * generation 1..CHUNK_GENERATION_MAX, stripe < CHUNK_STRIPE_LIMIT, size
 * <= CHUNK_SIZE_MAX), else -EINVAL (a blank record too); r is filled
 * either way. */
int chunk_record_decode(const uint8_t in[CHUNK_RECORD_SIZE], chunk_record *r);
bool chunk_record_is_blank(const uint8_t in[CHUNK_RECORD_SIZE]);

/* True if some 4 KiB page of the strip (data, len bytes read from file
 * offset off of the chunk open as fd) is all zeros and the file holds no
 * data there (a hole, or past its end): what a power cut leaves of a
 * strip write whose pages did not all reach the disk.  A page of zeros
 * that the file does hold (a sparse strip written whole, then damaged
 * elsewhere) is not such a loss. */
bool chunk_strip_has_lost_page(int fd, const uint8_t *data, uint64_t len, uint64_t off);

/* Version 3: the blocks of a strip of len bytes (CHUNK_BLOCK_SIZE each,
 * the last one short), each with a tag of CHUNK_TAG_SIZE bytes. */
uint64_t chunk_strip_blocks(uint64_t len);
/* Version 3: the tags of blocks [first, first + count) of a strip of len
 * bytes whose block `first` starts at data, into tags (count tags): the
 * file's algorithm over volume uuid, file id, the record's first 32
 * bytes, le64(block) and the block, cut to CHUNK_TAG_SIZE bytes.  -EINVAL
 * for blocks past the strip, -EIO if the checksum failed. */
int chunk_strip_tags(const checksum *c, const chunk_header *h, const chunk_record *r,
                     const uint8_t *data, uint64_t len, uint64_t first, uint64_t count,
                     uint8_t *tags);

/* Fills r->sum for strip data (len bytes) of the file described by h
 * (volume uuid and file id bound in).  r's other fields must be set.
 * Version 3: the sum covers the strip's tags, computed here, and put in
 * tags (chunk_strip_blocks(len) tags) unless it is NULL. */
int chunk_strip_sum(const checksum *c, const chunk_header *h, chunk_record *r,
                    const uint8_t *data, uint64_t len, uint8_t *tags);
/* True if the record is written, names (stripe, position) and its
 * checksum matches data (version 3: the tags computed from data, so the
 * stored tags play no part in a whole strip's verdict). */
bool chunk_strip_verify(const checksum *c, const chunk_header *h,
                        const chunk_record *r, uint64_t stripe, uint32_t position,
                        const uint8_t *data, uint64_t len);
/* chunk_strip_verify, and in version 3 with the strip's stored tags
 * (stored, not NULL) checked too: *stored_ok false if the strip verifies
 * but its stored tags are not those of its bytes (true otherwise). */
bool chunk_strip_verify_tags(const checksum *c, const chunk_header *h,
                             const chunk_record *r, uint64_t stripe, uint32_t position,
                             const uint8_t *data, uint64_t len, const uint8_t *stored,
                             bool *stored_ok);
/* Version 3, a read of part of a strip: true if the record is written,
 * names (stripe, position) and its checksum matches the stored tags of
 * a strip of len bytes (chunk_tags_verify), and if blocks [first, first +
 * count), read into data, match their tags (chunk_blocks_verify). */
bool chunk_tags_verify(const checksum *c, const chunk_header *h, const chunk_record *r,
                       uint64_t stripe, uint32_t position, const uint8_t *tags, uint64_t len);
bool chunk_blocks_verify(const checksum *c, const chunk_header *h, const chunk_record *r,
                         const uint8_t *tags, uint64_t len, uint64_t first, uint64_t count,
                         const uint8_t *data);

#endif
