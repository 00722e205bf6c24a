/* SPDX-License-Identifier: MIT */
/*
 * The stripe layer: commits runs of whole stripes to the members (encode,
 * checksum, write the strips and their records in parallel) and fetches
 * the data strips of a stripe, verifying each and decoding around any
 * erasure.  It knows the chunk format and the layout but not the file's
 * buffering or size; the open file (ecfile.h) drives it.
 */
#ifndef ECFS_STRIPE_H
#define ECFS_STRIPE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "checksum.h"
#include "chunk.h"
#include "ec.h"
#include "journal.h"
#include "layout.h"
#include "reader_rules.h"
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
	uint8_t *tags;      /* version 3: n * STRIPE_BATCH strips' tags (a commit's) */
	/* Version 3: the part of a strip the fetch in progress asks for
	 * (stripe_fetch_part), taken by its tasks; 0 length: whole strips. */
	uint64_t part_off, part_len;
	uint8_t *run_parity; /* m * STRIPE_FETCH_RUN strips, for degraded runs */
	uint8_t *pack_in;   /* k strips: a short stripe fetched, unpacked (layout.h) */
	uint8_t *pack_out;  /* k strips: a short stripe packed for a commit */
	/* Per member, the whole chunk when the header read at open got all
	 * of it (a small version-2 file): the first read of stripe 0 and the
	 * end scan take it instead of asking the member.  Any write through
	 * this context drops them all. */
	uint8_t *head[STRIPE_MAX_N];
	size_t head_len[STRIPE_MAX_N];
	/* The write-hole journal (journal.h).  Stripes from written_end on
	 * hold no committed content: a commit there goes straight in place
	 * (a first write); below it a commit is an overwrite and journaled. */
	uint64_t written_end;
	bool inplace_unsynced; /* a journaled commit's in-place writes are not synced yet */
	/* A write of this file's was given up inside its member call, which
	 * may still read the buffers it was lent: they are never freed
	 * (memberio.h, mio_batch_stuck). */
	bool buffers_lent;
	journal_files jf;      /* the journals open for writing */
	/* Hedged reads with an answer still to come, and one ended for
	 * reuse (stripe_hedge.c). */
	struct stripe_hedge *late, *spare_hedge;
	/* Each chunk's lstat right after the last header round wrote it (bit
	 * mb of header_stats, atomic), for stripe_remember_size. */
	struct stat header_stat[STRIPE_MAX_N];
	uint64_t header_stats;
} stripe_ctx;

/* The file closes with its headers holding its size (hdr.size): that
 * size is remembered (size_cache.h) for every chunk stat'ed after the last
 * header round, so a stat, chmod or utimens of the closed file need not
 * read the headers again.  A chunk written since has another ctime, and
 * its entry never matches. */
void stripe_remember_size(stripe_ctx *c);

/* Allocates the scratch buffers; 0 or -ENOMEM. */
int stripe_ctx_buffers(stripe_ctx *c);
/* Frees them and closes the journal descriptors, once the hedged reads
 * have had their last answers (stripe_wait_late_reads). */
void stripe_ctx_free_buffers(stripe_ctx *c);
/* Waits for the answers still to come to hedged reads (a read around a
 * slow member asks one member more than it needs and goes on with the
 * first answers): before a chunk's descriptor is closed or replaced. */
void stripe_wait_late_reads(stripe_ctx *c);

/* Hands the context the bytes read from offset 0 of member's chunk (a
 * g_malloc'd buffer it now owns; NULL: none). */
void stripe_keep_head(stripe_ctx *c, int member, uint8_t *head, size_t len);

/* Removes the file's journals on the usable members (once the in-place
 * strips they protect are durable) and closes their descriptors. */
void stripe_remove_journals(stripe_ctx *c);

/* Members whose chunk can take writes and serve reads. */
bool stripe_member_usable(stripe_ctx *c, int member);
int stripe_usable_count(stripe_ctx *c);
/* Writes past a slow member (-o write_quorum=N): the usable members
 * judged slow for writes now (memberio_slow_of), at most as many as leave N
 * usable, are out of this file's writes from here on, as a failed member
 * is (CHUNK_STALE: the caller's missed mask names them before the next
 * commit, readers decode around them, the heal catches them up).  Returns
 * the members left out (0 under write_quorum=all). */
uint64_t stripe_leave_out_slow(stripe_ctx *c);

/* Commits stripes [s0, s0+cnt) (cnt <= STRIPE_BATCH): data[i*k + j] is
 * data strip j of stripe s0+i (strip_size bytes each, only read).  Every
 * usable member gets its strips and records, all members in parallel; the
 * records carry generation gen and logical size size.  This is the one
 * place strips reach the members.  A run below written_end (an overwrite)
 * is journaled first: the in-place writes of the previous journaled commit
 * are synced if they are not yet, every member's journal is written and
 * synced, and only then are the strips written in place.  Raises
 * written_end.  Returns 0, or -EIO if fewer than k members took the
 * writes (a journaled commit that fails before its in-place stage changed
 * nothing in place). */
int stripe_commit(stripe_ctx *c, uint64_t s0, int cnt, const uint8_t *const *data,
                  uint64_t gen, uint64_t size);
/* The in-place stage of a commit alone, never journaled (journal recovery
 * rewriting a stripe at its journaled generation). */
int stripe_commit_inplace(stripe_ctx *c, uint64_t s0, int cnt, const uint8_t *const *data,
                          uint64_t gen, uint64_t size);
/* Reads every usable position of stripe s (into bufs, n strips) and says
 * what each holds, for journal recovery.  0 or -EIO (fewer than k read). */
int stripe_probe(stripe_ctx *c, uint64_t s, uint8_t *bufs, strip_judgment p[STRIPE_MAX_N]);
/* Sets *dirty if the usable chunks hold anything past a file of size
 * bytes: a chunk longer than its stripes, a written record of a stripe
 * past the end, or a last stripe committed when the file was longer (its
 * bytes past size may not be zeros).  Left by a truncate or an extending
 * write that a crash cut short; the caller cuts again. */
int stripe_scan_end(stripe_ctx *c, uint64_t size, bool *dirty);

/* The first stripe in [s, end) that the usable chunks' records show
 * written (want true) or never written (want false), else end.  A stripe
 * counts as written if any usable member's record of it is not blank, or
 * if a member's records could not be read, or no member is usable: data
 * is never taken for a hole (SEEK_DATA, SEEK_HOLE).  A record block the
 * member's chunk file holds as a hole is blank without a read. */
uint64_t stripe_find_written(stripe_ctx *c, uint64_t s, uint64_t end, bool want);

/* One past the last stripe below end that any member's records show
 * written: stripes from there to end hold nothing, on any member (a
 * record that could not be read counts as written).  end itself unless
 * every member of the file is usable: a member out of reach may hold the
 * only records of a stripe. */
uint64_t stripe_written_extent(stripe_ctx *c, uint64_t end);

/* Writes one strip of stripe s to member's chunk, then its record with
 * generation gen and logical size size (gen 0: a blank record, a hole).
 * The one writer of single strips: repair, the online heal and the
 * self-healing read use it.  Returns 0 or a negative errno (the caller
 * reports it). */
int stripe_write_strip(stripe_ctx *c, int member, uint64_t s, const uint8_t *data,
                       uint64_t gen, uint64_t size);
/* The same for cnt consecutive stripes s0.. of one record group: the cnt
 * strips at data, with generations gen[] and sizes size[], in one write,
 * then their records in another. */
int stripe_write_strips(stripe_ctx *c, int member, uint64_t s0, int cnt, const uint8_t *data,
                        const uint64_t *gen, const uint64_t *size);

/* Fills data[j] (strip_size bytes) for each data position j with bit j set
 * in want, with the content of stripe s: the stored strips if they verify
 * and agree, else decoded from any k good strips.  A stripe never written
 * reads as zeros.  -EIO if the stripe cannot be recovered.  A bad strip on
 * a member in service is rewritten with its decoded content (self-healing
 * read; not on a read-only volume). */
int stripe_fetch(stripe_ctx *c, uint64_t s, uint64_t want, uint8_t *const *data);
/* stripe_fetch for bytes [in, in + len) of the stripe only: in version 3,
 * when they lie in one data strip (want has that strip alone), a healthy
 * read takes that strip's record, its tags and the 4 KiB blocks of the
 * range, which land at their places in data[j], and verifies those; the
 * rest of data[j] is then undefined.  Anything else is stripe_fetch. */
int stripe_fetch_part(stripe_ctx *c, uint64_t s, uint64_t want, uint8_t *const *data,
                      uint64_t in, uint64_t len);

/* Fetches all data strips of stripes [s0, s0+cnt) (cnt <= STRIPE_FETCH_RUN,
 * all in one record group): data[i*k + j] receives strip j of stripe s0+i.
 * One read per member for the whole run; stripes that do not verify are
 * fetched again one by one through stripe_fetch, or, when a data member
 * is known to be failed, decoded from the run's read of every member. */
int stripe_fetch_run(stripe_ctx *c, uint64_t s0, int cnt, uint8_t *const *data);

/* Writes the chunk header (hdr with each member's position) to every
 * usable member.  Returns 0 or -EIO. */
int stripe_write_headers(stripe_ctx *c);
/* The same, each header synced (fdatasync) on its member before the call
 * returns, and with sync_first the chunk synced before its header is
 * written: one round trip to the member workers instead of two or three. */
int stripe_write_headers_durable(stripe_ctx *c, bool sync_first);
/* fdatasync of every usable chunk, in parallel.  Clears inplace_unsynced. */
int stripe_sync(stripe_ctx *c, bool datasync);
/* Sets aside on every usable member the chunk bytes that the stripes of
 * file bytes [pos, end) take (fallocate, FALLOC_FL_KEEP_SIZE: no chunk
 * grows, no byte changes), so their writes do not fail for space.  A
 * member that cannot set space aside is passed over; a full one fails the
 * call with ENOSPC or EDQUOT and stays in (space.h).  Returns 0 or -errno. */
int stripe_reserve(stripe_ctx *c, uint64_t pos, uint64_t end);
/* Forgets stripes [from, ...): zeroes their records in the group that
 * holds stripe `from` and truncates the chunks after it, space set aside
 * past their end included. */
int stripe_truncate(stripe_ctx *c, uint64_t from);

#endif
