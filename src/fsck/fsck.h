/* SPDX-License-Identifier: MIT */
/*
 * Shared state of one check or repair run: the options, the open volume,
 * the counters behind the summary and the exit status, and the sink its
 * problems and progress go to.  The library (fsck_tree.c, the mirrored
 * namespace, with fsck_view.c reading the members, fsck_pending.c what a
 * crash leaves outside it and fsck_totals.c the progress totals; repair.c
 * and repair_pass.c, chunks and strips of one regular file; fsck_sink.c,
 * the way to the sink) is run by ecfs-fsck (fsck_main.c: command line,
 * members and superblocks, output) and by the daemon's online heal.
 */
#ifndef ECFS_FSCK_H
#define ECFS_FSCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <glib.h>

#include "volume.h"

/* fsck(8) exit status bits. */
enum {
	FSCK_EXIT_CLEAN = 0,
	FSCK_EXIT_CORRECTED = 1,
	FSCK_EXIT_UNCORRECTED = 4,
	FSCK_EXIT_OPERATIONAL = 8,
	FSCK_EXIT_USAGE = 16,
};

/* What became of one problem. */
enum fsck_status {
	FSCK_REPAIRED,     /* fixed in this run */
	FSCK_REPAIRABLE,   /* would be fixed by --repair (dry run) */
	FSCK_UNREPAIRABLE, /* cannot be fixed (more than m erasures, ...) */
	FSCK_FAILED,       /* a repair was tried and failed */
};

typedef struct fsck_options {
	bool repair, json, quiet, progress, deep;
	bool rebuild; /* repair only what is known lost, reading k strips (--rebuild) */
	unsigned timeout_ms; /* the member I/O timeout (--timeout); 0: none */
	volume_runtime tune; /* the daemon's defaults, and --tune switches */
} fsck_options;

struct fsck;

/* What the daemon's online heal (heal.c) adds to a run; NULL in ecfs-fsck. */
typedef struct fsck_hooks {
	/* Before a regular file's chunks are opened: keeps the daemon's own
	 * users of the file out until file_end (a token for it, or NULL). */
	void *(*file_begin)(struct fsck *f, const char *path);
	void (*file_end)(struct fsck *f, const char *path, void *token);
	/* After file_begin: true leaves the file's chunks unread this run (a
	 * partial scrub); NULL: every file is checked. */
	bool (*skip)(struct fsck *f, const char *path, void *token);
	/* After each run of stripes, with the file bytes it covered: paces the
	 * run; false stops it (the daemon is unmounting). */
	bool (*pace)(struct fsck *f, uint64_t bytes);
	void *arg;
} fsck_hooks;

/* One problem, as fsck_problem() hands it to the sink. */
typedef struct fsck_report {
	const char *kind;   /* a short fixed word (documented in ecfs-fsck(8)) */
	const char *path;   /* the volume path, or NULL */
	int member;         /* the member index, or -1 */
	uint64_t off, len;  /* a byte range of the file; len 0 for none */
	enum fsck_status st;
	const char *detail;
} fsck_report;

/* Where a run reports, supplied by the program that runs it: ecfs-fsck
 * prints (fsck_main.c), the daemon's heal logs (heal.c).  Called from the
 * file threads too (fsck_tree.c), so both must be thread-safe. */
typedef struct fsck_sink {
	/* A problem, already counted. */
	void (*problem)(void *arg, struct fsck *f, const fsck_report *r);
	/* Redraws the progress line; NULL for none. */
	void (*progress)(void *arg, struct fsck *f, bool force);
	void *arg;
} fsck_sink;

typedef struct fsck {
	volume *v;
	fsck_options o;
	const fsck_sink *sink;
	const fsck_hooks *hooks;
	uint64_t heal_mask; /* members being rebuilt: they follow, never vote */
	bool quick;         /* skip the strips of files whose chunks all look current */
	int k, m, n;
	uint64_t walk_mask; /* members whose namespace is read (healthy; atomic) */
	uint64_t lost;      /* members given up after the I/O timeout in this run (atomic) */
	/* members walked whose small-write log folder was empty or missing
	 * when the walk began, while no log was replayed since (atomic):
	 * they hold no file's log copy to remove */
	uint64_t no_logs;
	/* problems by outcome */
	uint64_t repaired, repairable, unrepairable, failed;
	/* what was looked at */
	uint64_t files, dirs, others, stripes, bytes, strips_rebuilt;
	uint64_t reads_hedged; /* --rebuild runs that asked a spare chunk (repair.c) */
	int64_t run_strip_ns;  /* how long a --rebuild run's reads take per strip (repair_pass.c) */
	GHashTable *links;  /* file id (16 bytes) -> first path, for files with links */
	struct repair_pool *repair_pool; /* repair.c: buffers not in use, kept for the next file */
	GThreadPool *file_pool; /* fsck_tree.c's file threads (ecfs-fsck only) */
	/* progress */
	uint64_t total_bytes, total_files;
	int64_t start_us;
} fsck;

/* Adds to one of the counters above: files are checked on several
 * threads at once (fsck_tree.c). */
static inline void fsck_count(uint64_t *counter, uint64_t n)
{
	__atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

/* Runs fn(arg) on member mb's I/O worker (volume_on_member), so that a
 * member that does not answer within the I/O timeout is given up rather
 * than waited for; fn follows volume_on_member's rules (its system calls
 * bracketed, MIO_CALL, their results in its own locals first).  A member
 * given up is reported once (fsck_member_lost) and the call returns
 * -ETIMEDOUT, as every later one on it does at once. */
int fsck_on_member(fsck *f, int mb, int (*fn)(void *), void *arg);
/* The same on the members in mask at once, each with its own argument:
 * rcs[mb] = fn(args[mb]) (volume_on_members). */
void fsck_on_members(fsck *f, uint64_t mask, int (*fn)(void *), void *const *args, int *rcs);
/* The same, each call on its member's own worker in parallel, never one
 * after the other on a relay (volume_on_members_apart): for long calls. */
void fsck_on_members_apart(fsck *f, uint64_t mask, int (*fn)(void *), void *const *args,
                           int *rcs);
/* Member mb was given up after the I/O timeout: reports it once (kind
 * member, unrepairable: the run is incomplete) and takes it out of the
 * walk.  Its strips are erasures from then on, and nothing is written to
 * it.  Thread-safe. */
void fsck_member_lost(fsck *f, int mb);
/* True if member mb was given up in this run. */
static inline bool fsck_gone(const fsck *f, int mb)
{
	return __atomic_load_n(&f->lost, __ATOMIC_RELAXED) >> mb & 1;
}
/* Closes fd on member mb, on its worker (a close may ask the member: a
 * flush), and not at all on a member given up. */
void fsck_close(fsck *f, int mb, int fd);
/* fsck_close of fds[mb] (-1: none) on every member at once. */
void fsck_close_all(fsck *f, const int *fds);

/* Records a problem: counts it by status and hands it to f->sink (the
 * arguments are those of fsck_report).  Thread-safe, as is fsck_progress. */
void fsck_problem(fsck *f, const char *kind, const char *path, int member,
                  uint64_t off, uint64_t len, enum fsck_status st, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));
/* The status a repairable problem gets: repaired if repairing (and ok),
 * repairable in a dry run, failed if the repair returned an error. */
enum fsck_status fsck_outcome(const fsck *f, int rc);
/* Has the sink redraw the progress line (at most a few times a second
 * unless forced). */
void fsck_progress(fsck *f, bool force);

/* What a crash leaves outside the namespace (fsck_pending.c): operations
 * whose intent records remain (reported; finished with --repair, before
 * the namespace is judged) and files unlinked while open, left in the
 * orphan folders (reported; removed with --repair).  Not to be run on a
 * mounted volume, where both are in use. */
void fsck_pending(fsck *f);
/* As the daemon at mount (journal_census), on the members' workers: with
 * no journal on any member walked, no file's check looks for one.  The
 * repairs write no journal.  The members with no log copy at all go to
 * f->no_logs (repair.c: forget_stale_logs). */
void fsck_journal_census(fsck *f);

/* Totals for the progress line (files, and bytes of file data;
 * fsck_totals.c). */
void fsck_count_totals(fsck *f);

/* Walks the namespace of every healthy member from the root, compares and
 * repairs it, and checks every regular file through repair_file(). */
int fsck_tree(fsck *f);

#endif
