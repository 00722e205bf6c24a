/* SPDX-License-Identifier: MIT */
/*
 * What the files of the ecfile module share (ecfile.c, ecfile_open.c,
 * ecfile_io.c): the open file itself, a chunk as an open finds it, and
 * the steps one file runs and another calls.  Not for use outside them.
 */
#ifndef ECFS_ECFILE_INTERNAL_H
#define ECFS_ECFILE_INTERNAL_H

#include "ecfile.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "chunk.h"
#include "committer.h"
#include "fdpool.h"
#include "stripe.h"

struct ecfile {
	volume *v;
	uint8_t id[16];
	int refs;          /* under the volume's files lock */
	pthread_mutex_t lock; /* the file's state; order: first; held across member calls */
	char *path;        /* the name it was first opened by, for messages */
	stripe_ctx c;
	uint64_t size;     /* logical size, buffered writes included */
	uint64_t disk_end; /* stripes from here on hold nothing stored */
	uint64_t gen;      /* last generation used */
	uint64_t gen_durable; /* header generation known to be on disk */
	bool hdr_dirty;
	bool extent_checked; /* written_end checked against the records (first_writes) */
	bool read_only;
	/* Stripes [room_from, room_to) a fallocate of this open set room aside
	 * for on the members (stripe_reserve): their first writes claim none. */
	uint64_t room_from, room_to;
	uint8_t *buf;      /* the stripe buffer: k strips */
	int64_t buf_stripe; /* stripe it holds, -1 for none */
	uint64_t lo, hi;   /* hull of its dirty bytes (lo == hi: clean) */
	bool loaded;       /* it holds the whole stripe, not just [lo, hi) */
	uint8_t *partial;  /* k strips of scratch for RMW and partial reads */
	/* Whole stripes on their way to the members (committer.h).  While it
	 * is busy, its thread owns the stripe context, gen and the header:
	 * everything that touches them but the write path drains it first. */
	cm_queue *cq;
	int cq_stripes;    /* stripes per batch; 0: not started, -1: none */
	/* Its descriptors in the volume's pool (ecfile_pool.c): while it is
	 * idle and the pool full, its chunks are parked (descriptors closed),
	 * and the next ecfile_lock reopens them. */
	fdpool_entry pool;
	uint64_t parked;   /* bit mb: member mb's chunk is parked; atomic, set under lock */
	struct parked_chunk *park; /* n, what each parked chunk must be */
	struct ecfile_log *log; /* the small-write log (ecfile_log.c), NULL until used */
};

static inline uint64_t stripe_data(const ecfile *f)
{
	return layout_stripe_data(&f->c.lay);
}

/* One member's chunk of a file being opened (ecfile_open.c). */
typedef struct probe_chunk {
	int fd;
	int err; /* open_chunks: what ecfile_open_chunk returned */
	enum chunk_state state;
	bool valid, empty, created;
	struct stat st; /* the chunk's, once opened */
	chunk_header h;
	uint8_t *head; /* the whole chunk, when the header read got all of it */
	size_t head_len;
} probe_chunk;

/* ---- ecfile_open.c ---- */
/* Opens (create: makes) member mb's chunk of path and reads its header
 * into *pc: an error makes it an erasure.  pc->valid if the header
 * decodes and fits the volume and member (volume_header_misfit); a sealed
 * header that does not is logged, with the member and why.  Returns 0, or
 * the member's negative errno when it does not hold the file. */
int ecfile_open_chunk(volume *v, int mb, const char *path, bool create, int flags, mode_t mode,
                      uid_t uid, gid_t gid, probe_chunk *pc);

/* ---- ecfile_io.c ---- */
/* Members that miss this file's writes: failed now, or without a current
 * chunk. */
uint64_t ecfile_missing_mask(ecfile *f);
/* Writes the headers with f->size; reserve raises the generation
 * reservation above the next commit's. */
int ecfile_write_headers(ecfile *f, bool reserve);
/* Under f->lock: truncate (or extend) to size, buffered data committed
 * first. */
int ecfile_truncate_locked(ecfile *f, uint64_t size);
/* Under f->lock, at open: rolls forward a journaled overwrite a crash cut
 * short and cuts what it left past the size; errors are logged. */
void ecfile_recover_locked(ecfile *f);

/* Under f->lock: stored stripe s into dst (k strips), what is queued
 * landed first; and a synchronous commit of whole stripes (the file's
 * size in their records), after what is queued. */
int ecfile_fetch_stripe(ecfile *f, uint64_t s, uint8_t *dst);
int ecfile_commit_stripes(ecfile *f, uint64_t s0, int cnt, const uint8_t *const *data);

/* ---- ecfile_log.c: the small-write log, all under f->lock ---- */
typedef struct ecfile_log ecfile_log;
/* True if the write of [pos, pos+len), within stripe s and not all of
 * it, goes to the log: the log is on, and it overwrites stored bytes of
 * a stripe other than the buffered one. */
bool ecfile_log_takes(ecfile *f, uint64_t s, uint64_t pos, uint64_t len);
/* Logs the write (answered once every copy holds it); -EAGAIN if the log
 * cannot take it (too few members): the caller writes it as before. */
int ecfile_log_write(ecfile *f, uint64_t pos, const uint8_t *src, uint64_t len);
/* Lays the logged bytes of [off, off+len) over dst, reading their
 * records back from the copies: 0, or -EIO if no copy holds one. */
int ecfile_log_overlay(ecfile *f, uint8_t *dst, uint64_t off, uint64_t len);
/* True if the log holds bytes of [from, to). */
bool ecfile_log_touches(ecfile *f, uint64_t from, uint64_t to);
/* Commits what the log holds to the stripes, syncs them, then empties
 * the log copies durably: before anything else writes where it did. */
int ecfile_log_apply(ecfile *f);
/* fsync's part: syncs the log copies; *chunks_clean if nothing was
 * written to the chunks since the last full fsync (ecfile_log_synced). */
int ecfile_log_sync(ecfile *f, bool *chunks_clean);
void ecfile_log_synced(ecfile *f);
/* At open, after journal recovery: the log's records on the members
 * (*records of them) are applied and the copies emptied (write), or only
 * counted. */
int ecfile_log_replay(ecfile *f, bool write, uint64_t *records);
/* Before member mb, made current by the heal, serves the file again:
 * removes its log copy, which is stale (it missed the file's writes, so
 * it cannot hold a live record, and records of its own that the others
 * lost must never be replayed over what was written since). */
void ecfile_log_forget(ecfile *f, int mb);
/* Frees the log's memory and closes its copies (after apply). */
void ecfile_log_free(ecfile *f);

/* ---- ecfile_pool.c ---- */
/* Takes f->lock for a use of its chunks: pins f in the pool (never
 * parked while held) and reopens its parked chunks, room made first. */
void ecfile_lock(ecfile *f);
/* Ends the use: f's descriptors counted again, f->lock released. */
void ecfile_unlock(ecfile *f);
/* Makes room in the pool for want more descriptors (fdpool_make_room),
 * parking idle files; with no file's lock held. */
void ecfile_make_room(volume *v, int want);
/* Enters a file just opened into the pool. */
void ecfile_pool_enter(ecfile *f);

/* ---- ecfile.c ---- */
/* Under f->lock, the committer drained: the journals of f made durable in
 * place and dropped (the last close, a parking), so that nothing is left
 * for the next open to judge. */
void ecfile_settle_journals(ecfile *f);
/* Frees an open file no one refers to: its commits drained, its chunks
 * closed. */
void ecfile_free(ecfile *f);

#endif
