/* SPDX-License-Identifier: MIT */
/*
 * Parallel member I/O: one worker thread per member, each with its own
 * queue, so the n strips of a stripe are hashed and written (or read and
 * verified) at the same time on every member.  A caller groups its tasks
 * in a batch and waits for the whole batch; tasks of one member run in
 * submission order.
 */
#ifndef ECFS_MEMBERIO_H
#define ECFS_MEMBERIO_H

#include <pthread.h>

typedef struct memberio memberio;

typedef struct mio_batch {
	pthread_mutex_t lock;
	pthread_cond_t done;
	int pending;
} mio_batch;

memberio *memberio_new(int n);
void memberio_free(memberio *mio);

void mio_batch_init(mio_batch *b);
/* Queues fn(arg) on member idx's worker. */
void memberio_submit(memberio *mio, int idx, mio_batch *b, void (*fn)(void *), void *arg);
/* Waits until every task of the batch has run, then destroys the batch. */
void mio_batch_wait(mio_batch *b);

#endif
