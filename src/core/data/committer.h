/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous stripe commits: a write hands its whole stripes to a
 * per-file queue and is answered at once, while a small pool of committer
 * threads encodes them and writes them to the members behind it.  So the
 * next request's trip through the kernel overlaps the commit of the last.
 *
 * A queue belongs to one owner (an open file) and shares the owner's
 * mutex: every function here is called with that mutex held, and the
 * owner's run callback is called with it held too (it may drop it around
 * its slow part, as long as it re-takes it before returning).  Batches of
 * one queue run one at a time, in submission order, so the generations
 * they are given stay ordered.  At most CM_DEPTH batches are queued per
 * file; a writer that finds them all taken waits.  Files whose queues
 * stay full take turns of CM_TURN runs on the pool's threads.  The first
 * error of a run is latched until the owner takes it (as the kernel keeps
 * writeback errors for the next fsync or close).
 */
#ifndef ECFS_COMMITTER_H
#define ECFS_COMMITTER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Batches in flight per file (queued or being committed). */
#define CM_DEPTH 3

/* Runs a committer thread gives one file in a row before it hands the
 * file back to the pool for another that waits.  More than one: the
 * batches a writer queues while its file's runs go on are committed while
 * their bytes are still in the cache.  With one run a turn the threads go
 * round every writer's file between runs, and each batch is encoded,
 * checksummed and written out long after its copy.  A file that waits
 * waits for at most CM_TURN runs (of up to STRIPE_BATCH stripes) of
 * another. */
#define CM_TURN 4

typedef struct cm_batch {
	uint64_t s0;           /* first stripe */
	int cnt;               /* whole stripes in data */
	uint64_t size;         /* the file's logical size when it was queued */
	uint8_t *data;         /* cnt stripes of data, one after the other */
	struct cm_batch *next; /* queue order */
} cm_batch;

typedef struct cm_queue cm_queue;

/* Commits batch b, and with it as many of the batches queued right
 * behind it (b->next, ...) as it chooses; called by a committer thread
 * with the owner's lock held.  Returns the number of batches committed
 * (0 counts as 1), or a negative errno, which is latched, for b alone. */
typedef int (*cm_run_fn)(void *owner, cm_batch *b);

/* A queue of CM_DEPTH batches of batch_bytes each, each allocated at its
 * first use.  NULL if out of memory (the owner then commits
 * synchronously). */
cm_queue *cm_queue_new(pthread_mutex_t *owner_lock, size_t batch_bytes, cm_run_fn run,
                       void *owner);
/* Frees an idle queue (drain it first).  Its batches' data is kept if
 * lent to a member call given up (mio_free_or_keep). */
void cm_queue_free(cm_queue *q, bool lent);

/* Batches not in flight. */
int cm_free_slots(const cm_queue *q);
/* Waits until at least need (<= CM_DEPTH) batches are free.  The lock is
 * released meanwhile, so the caller re-checks its state afterwards; it
 * never is by cm_reserve and cm_submit. */
void cm_wait_slots(cm_queue *q, int need);
/* A free batch to fill: NULL if all are in flight (wait first), or if
 * its memory cannot be had (commit synchronously). */
cm_batch *cm_reserve(cm_queue *q);
/* Queues a batch from cm_reserve, filled in. */
void cm_submit(cm_queue *q, cm_batch *b);

/* True while a batch is queued or being committed: then the run callback
 * may be using the owner's state outside the lock. */
bool cm_busy(const cm_queue *q);
/* Waits until no batch is queued or running (the lock released
 * meanwhile, unless it is idle already). */
void cm_drain(cm_queue *q);
/* The latched error (0 if none), cleared. */
int cm_take_error(cm_queue *q);

#endif
