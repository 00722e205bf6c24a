/* SPDX-License-Identifier: MIT */
/*
 * What the two halves of the repair of one file share: the file's state
 * (file_check), the run slots and member tasks of the stripe pass, and
 * the calls between repair.c (opening, headers, reporting) and
 * repair_pass.c (reading, judging and rewriting the stripes).
 */
#ifndef ECFS_REPAIR_INTERNAL_H
#define ECFS_REPAIR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "chunk.h"
#include "fsck.h"
#include "memberio.h"
#include "reader_rules.h"
#include "repair.h"
#include "stripe.h"

/* Stripes read per member in one go: up to a record group, and about
 * RUN_BYTES of strips per member (fewer round trips through the member
 * workers; bounded memory for large strips). */
#define RUN CHUNK_GROUP_STRIPES
#define RUN_BYTES (1u << 20)

struct file_check;

/* One member's share of a run of stripes: read and judged, then the
 * erased strips of it written back. */
typedef struct member_task {
	struct file_check *fc;
	int member, pos, cnt;
	uint64_t s0;
	uint8_t *buf; /* cnt strips */
	strip_judgment st[RUN];
	uint64_t wmask; /* strips of the run to write back */
	uint64_t wgen[RUN], wsize[RUN];
	int err;
	bool done; /* its read has run (atomic; hedged_wait) */
} member_task;

/* One run of stripes on its way through the pass: read and judged, then
 * its repairs written while the next run is read (two slots take turns). */
typedef struct run_slot {
	member_task task[STRIPE_MAX_N]; /* by position */
	uint8_t *bufs;                  /* n * run strips, position-major */
	mio_batch reads, writes;        /* in flight */
	uint64_t unread;                /* positions not read (rebuild: not needed) */
	uint64_t sources;               /* positions read first (run_sources) */
	uint64_t late;                  /* asked, but the run went on without them */
	int64_t asked_us;               /* when the reads were asked (monotonic) */
	bool reading, writing;
	bool hedged;                    /* its reads may go on without the last */
	uint64_t s0;
	int cnt;
} run_slot;

/* What repair_file keeps from file to file: fresh buffers for every file
 * would be faulted in again every time.  One per file in flight, on the
 * list fsck.repair_pool while unused. */
struct repair_pool {
	/* A read given up inside its member call may still write mem (the
	 * strips are read straight into it), a write still read it: the
	 * pool is then never reused or freed (memberio.h, mio_batch_stuck). */
	bool lent;
	run_slot slot[2];
	uint8_t *mem;
	size_t size;
	struct repair_pool *next;
};

typedef struct file_check {
	fsck *f;
	const char *path;
	stripe_ctx c;
	int n, k, m;
	int run;       /* stripes per run, <= RUN */
	struct repair_pool *pool;
	run_slot *slot; /* [2], in the pool */
	uint8_t *spare; /* m strips: recomputed parity (--deep) */
	uint64_t chunk_bad;  /* members whose chunk as a whole is rebuilt */
	uint64_t quiet;      /* members whose erasures are reported elsewhere */
	uint64_t unwritable; /* members that cannot take repairs */
	uint64_t written;    /* members this repair wrote to (to sync) */
	uint64_t fresh;      /* members whose chunk this repair created: empty */
	uint64_t readable;   /* positions with something to read (not fresh) */
	uint64_t sources;    /* positions read first (readable, or k for --rebuild) */
	uint64_t good;       /* --rebuild reading k: the good chunks' positions, else 0 */
	uint64_t found_missed; /* the `missed` mask of the header found */
	const char *chunk_why[STRIPE_MAX_N];
	const char *chunk_kind[STRIPE_MAX_N];
	uint64_t bad[STRIPE_MAX_N], first_bad[STRIPE_MAX_N], last_bad[STRIPE_MAX_N];
	const char *bad_why[STRIPE_MAX_N];
	uint64_t rebuilt[STRIPE_MAX_N];
	int write_err[STRIPE_MAX_N];
	uint64_t parity_bad, parity_first, parity_last;
	uint64_t lost_first, lost_last, lost_total;
	bool lost_open;
	bool hopeless; /* fewer than k good chunks: report, never write */
	uint64_t log_records; /* in its small-write log, replayed once it is checked */
	uint64_t max_gen; /* highest generation in a verified record */
	const char *link_from; /* another path of this file (hard links) */
	const int *dfd;        /* repair_file_at: the parent's fd per member, or NULL */
	const char *name;      /* and the file's name in it */
	const repair_seen *seen; /* and what it found of each member's chunk, or NULL */
	/* The first CHUNK_HEADER_MAX bytes of each chunk as open_chunks read
	 * them (head_got[mb] bytes; fewer: the chunk ends there, -1: none). */
	uint8_t *head;
	ssize_t head_got[STRIPE_MAX_N];
} file_check;

/* Full-length pread: bytes read (short only at end of file) or -errno.
 * lent: straight into buf (mop_pread_lent), which must be in the pool. */
ssize_t repair_read_all(volume *v, int idx, int fd, void *buf, size_t len, off_t off, bool lent);

/* ---- repair_pass.c ---- */

/* Sets the positions a run reads (fc->readable, fc->sources, fc->good). */
void repair_choose_sources(file_check *fc);
/* The stripe pass over stripes [0, count), count > 0, in fc's buffers:
 * 0, or -ECANCELED if the pace hook stopped it. */
int repair_stripe_pass(file_check *fc, uint64_t count);

#endif
