/* SPDX-License-Identifier: MIT */
/*
 * The byte format of the small-write log (docs/FORMAT.md section 12): a
 * per-file member file `.ecfs/log/<file id hex>`, mirrored on m+1
 * members, that takes overwrites smaller than a stripe before they are
 * applied to the stripes.  A log file is a header followed by records
 * appended one after the other; each record is a fixed header and the
 * bytes written.  Encoding, decoding with range checks, verification and
 * the scan of a whole copy; no I/O.
 */
#ifndef ECFS_SMALLLOG_H
#define ECFS_SMALLLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checksum.h"

#define SMALLLOG_MAGIC "ECFSSLOG"
#define SMALLLOG_RECORD_MAGIC "ECFSSREC"
#define SMALLLOG_VERSION 1u
/* The log header: fields in bytes 0..63, SHA-256 of them at 64. */
#define SMALLLOG_HEADER_SIZE 96u
/* A record's header: fields in bytes 0..47, its checksum at 48. */
#define SMALLLOG_RECORD_SIZE 80u
/* The most bytes one record carries. */
#define SMALLLOG_DATA_MAX (UINT32_C(1) << 20)
#define SMALLLOG_DIR ".ecfs/log"

typedef struct smalllog_header {
	uint8_t volume_uuid[16];
	uint8_t file_id[16];
	/* The file's chunk-header generation when this log was started:
	 * a log is retired only after its records were committed at newer
	 * generations, so no two logs of a file share an epoch. */
	uint64_t epoch;
	uint16_t checksum; /* checksum_alg of the records: the file's */
} smalllog_header;

typedef struct smalllog_record {
	uint32_t length;   /* data bytes, 1..SMALLLOG_DATA_MAX */
	uint64_t epoch;    /* the log's epoch */
	uint64_t seq;      /* 1, 2, ... within the epoch */
	uint64_t offset;   /* where the data goes in the file */
	uint64_t size;     /* the file's size after this write */
	uint8_t sum[CHECKSUM_MAX];
} smalllog_record;

void smalllog_header_encode(const smalllog_header *h, uint8_t out[SMALLLOG_HEADER_SIZE]);
/* 0, or -EINVAL (bad magic, sum or fields out of range) / -EPROTO
 * (unknown version) with a static reason in *why (may be NULL). */
int smalllog_header_decode(const uint8_t in[SMALLLOG_HEADER_SIZE], smalllog_header *h,
                           const char **why);

/* Fills r->sum for data (r->length bytes) under the log h, and encodes
 * the record's header into out.  0 or -EIO. */
int smalllog_record_encode(const checksum *c, const smalllog_header *h, smalllog_record *r,
                           const uint8_t *data, uint8_t out[SMALLLOG_RECORD_SIZE]);
/* Decodes a record header: 0 if its magic is right and every field in
 * range (length 1..SMALLLOG_DATA_MAX, seq >= 1, epoch
 * 1..CHUNK_GENERATION_MAX, offset + length <= size <= CHUNK_SIZE_MAX),
 * else -EINVAL with a static reason in *why (may be NULL). */
int smalllog_record_decode(const uint8_t in[SMALLLOG_RECORD_SIZE], smalllog_record *r,
                           const char **why);
/* True if r (decoded) belongs to log h (its epoch) and its checksum
 * matches data (r->length bytes). */
bool smalllog_record_verify(const checksum *c, const smalllog_header *h,
                            const smalllog_record *r, const uint8_t *data);

/* Called for each record of a copy that verifies, in file order; data
 * points into the scanned buffer. */
typedef void (*smalllog_visit_fn)(void *ctx, const smalllog_record *r, const uint8_t *data);
/* Scans one copy of a log (len bytes from offset 0): its header must
 * decode, use c's algorithm and name the volume and file of want; then
 * each record that decodes and verifies is visited, up to the first that
 * does not (a torn append ends a copy).  Returns the records visited, or
 * -EINVAL if the header does not count; *epoch (may be NULL) takes the
 * header's epoch and *end (may be NULL) the offset past the last good
 * record (where the next append goes). */
int smalllog_scan(const checksum *c, const smalllog_header *want, const uint8_t *buf, size_t len,
                  smalllog_visit_fn visit, void *ctx, uint64_t *epoch, size_t *end);

#endif
