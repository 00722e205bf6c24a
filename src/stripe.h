/* SPDX-License-Identifier: MIT */
/*
 * The stripe layer: commits runs of whole stripes to the members (encode,
 * checksum, write the strips and their records in parallel) and fetches
 * the data strips of a stripe, verifying each and decoding around any
 * erasure.  It knows the chunk format and the layout but not the file's
 * buffering or size; ecfile.c drives it.
 */
#ifndef ECFS_STRIPE_H
#define ECFS_STRIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "checksum.h"
#include "chunk.h"
#include "ec.h"
#include "layout.h"
#include "volume.h"

/* State of the chunk on one member, for one file. */
enum chunk_state {
	CHUNK_OK = 0,
	CHUNK_MISSING, /* no chunk file on the member */
	CHUNK_CORRUPT, /* unreadable or invalid header */
	CHUNK_STALE,   /* missed writes while the member was failed */
	CHUNK_FAILED,  /* the member is failed */
};

#define STRIPE_MAX_N 64
/* Stripes committed in one go (bounds the parity scratch). */
#define STRIPE_BATCH 8
/* Stripes fetched in one go by stripe_fetch_run. */
#define STRIPE_FETCH_RUN 16

typedef struct stripe_ctx {
	volume *v;
	const char *path;   /* for messages only */
	chunk_header hdr;   /* the file's header; position is per member */
	layout lay;
	const ec_code *code;
	const checksum *sum;
	int fd[STRIPE_MAX_N];                 /* chunk fd per member, -1 if none */
	enum chunk_state state[STRIPE_MAX_N];
	uint8_t *scratch;   /* n strips, for fetches that must decode */
	uint8_t *parity;    /* m * STRIPE_BATCH strips */
	uint8_t *run_parity; /* m * STRIPE_FETCH_RUN strips, for degraded runs */
} stripe_ctx;

/* Allocates the scratch buffers; 0 or -ENOMEM. */
int stripe_ctx_buffers(stripe_ctx *c);
void stripe_ctx_free_buffers(stripe_ctx *c);

/* Members whose chunk can take writes and serve reads. */
bool stripe_member_usable(stripe_ctx *c, int member);
int stripe_usable_count(stripe_ctx *c);

/* Commits stripes [s0, s0+cnt) (cnt <= STRIPE_BATCH): data[i*k + j] is
 * data strip j of stripe s0+i (strip_size bytes each, only read).  Every
 * usable member gets its strips and records, all members in parallel; the
 * records carry generation gen and logical size size.  This is the one
 * place strips reach the members (where a journal would slot in).
 * Returns 0, or -EIO if fewer than k members took the writes. */
int stripe_commit(stripe_ctx *c, uint64_t s0, int cnt, const uint8_t *const *data,
                  uint64_t gen, uint64_t size);

/* Writes one strip of stripe s to member's chunk, then its record with
 * generation gen and logical size size (gen 0: a blank record, a hole).
 * The one writer of single strips: repair, the online heal and the
 * self-healing read use it.  Returns 0 or a negative errno (the caller
 * reports it). */
int stripe_write_strip(stripe_ctx *c, int member, uint64_t s, const uint8_t *data,
                       uint64_t gen, uint64_t size);

/* Fills data[j] (strip_size bytes) for each data position j with bit j set
 * in want, with the content of stripe s: the stored strips if they verify
 * and agree, else decoded from any k good strips.  A stripe never written
 * reads as zeros.  -EIO if the stripe cannot be recovered.  A bad strip on
 * a member in service is rewritten with its decoded content (self-healing
 * read; not on a read-only volume). */
int stripe_fetch(stripe_ctx *c, uint64_t s, uint64_t want, uint8_t *const *data);

/* Fetches all data strips of stripes [s0, s0+cnt) (cnt <= STRIPE_FETCH_RUN,
 * all in one record group): data[i*k + j] receives strip j of stripe s0+i.
 * One read per member for the whole run; stripes that do not verify are
 * fetched again one by one through stripe_fetch, or, when a data member
 * is known to be failed, decoded from the run's read of every member. */
int stripe_fetch_run(stripe_ctx *c, uint64_t s0, int cnt, uint8_t *const *data);

/* Writes the chunk header (hdr with each member's position) to every
 * usable member.  Returns 0 or -EIO. */
int stripe_write_headers(stripe_ctx *c);
/* fdatasync of every usable chunk, in parallel. */
int stripe_sync(stripe_ctx *c, bool datasync);
/* Forgets stripes [from, ...): zeroes their records in the group that
 * holds stripe `from` and truncates the chunks after it. */
int stripe_truncate(stripe_ctx *c, uint64_t from);

#endif
