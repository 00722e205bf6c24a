/* SPDX-License-Identifier: MIT */
/*
 * The committer pool and the per-file batch queues (committer.h).
 *
 * One process-wide pool of CM_THREADS threads serves every queue: a queue
 * with work is put on the pool's list once (its `scheduled` flag), and the
 * thread that takes it runs its batches until the queue is empty, so a
 * file's batches never run on two threads at once; but while another
 * queue waits on the list, the thread hands the queue back to the end of
 * the list after CM_TURN runs, so files that keep their queues full take
 * turns instead of keeping the others waiting until they drain.  Two
 * threads let two files commit at the same time; more would only compete
 * for the member workers (memberio.c), which do the I/O.  The pool is
 * started on first use and lives as long as the process.
 */
#include "committer.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "memberio.h"

#define CM_THREADS 2

/* For assert(): m is held, by this thread or another (a default mutex
 * cannot say which).  Every function on a queue runs under its owner's
 * lock (committer.h). */
#define HELD(m) (pthread_mutex_trylock(m) == EBUSY)

struct cm_queue {
	pthread_mutex_t *lock; /* the owner's (an ecfile's lock): guards everything below */
	pthread_cond_t changed; /* a batch finished or the queue went idle */
	cm_batch slot[CM_DEPTH];
	bool used[CM_DEPTH];
	cm_batch *head, *tail; /* queued, oldest first; head runs first */
	bool scheduled;        /* on the pool's list or being run */
	int err;               /* latched */
	size_t batch_bytes;
	cm_run_fn run;
	void *owner;
	cm_queue *next_ready;  /* the pool's list (under the pool's lock) */
};

static struct {
	pthread_once_t once;
	pthread_mutex_t lock; /* guards head, tail; order: a leaf, taken under an ecfile's
	                       * lock (cm_submit, run_queue handing a queue back) */
	pthread_cond_t wake;
	cm_queue *head, *tail;
	int threads;
} pool = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER,
           .wake = PTHREAD_COND_INITIALIZER };

/* Puts q at the end of the pool's list; under the pool's lock. */
static void pool_append(cm_queue *q)
{
	q->next_ready = NULL;
	if (pool.tail)
		pool.tail->next_ready = q;
	else
		pool.head = q;
	pool.tail = q;
	pthread_cond_signal(&pool.wake);
}

/* Runs the batches of q in order until it is idle, then marks it so; or,
 * while other files wait for a thread, one turn (CM_TURN runs) and q goes
 * back to the end of the pool's list: a writer that keeps its queue full
 * does not keep a thread from the others. */
static void run_queue(cm_queue *q)
{
	int turn = 0;

	pthread_mutex_lock(q->lock);
	assert(q->scheduled);
	while (q->head) {
		cm_batch *b = q->head;
		assert(b >= q->slot && b < q->slot + CM_DEPTH && q->used[b - q->slot]);
		/* b stays at the head while it runs: writers append behind it. */
		int rc = q->run(q->owner, b);
		int done = rc > 0 ? rc : 1;
		if (rc < 0 && !q->err)
			q->err = rc;
		for (; done > 0; done--) {
			assert(b && q->used[b - q->slot]);
			q->head = b->next;
			q->used[b - q->slot] = false;
			b = b->next;
		}
		if (!q->head)
			q->tail = NULL;
		pthread_cond_broadcast(&q->changed);
		if (q->head) {
			pthread_mutex_lock(&pool.lock);
			bool others = ++turn >= CM_TURN && pool.head != NULL;
			if (others)
				pool_append(q);
			pthread_mutex_unlock(&pool.lock);
			if (others) {
				pthread_mutex_unlock(q->lock);
				return;
			}
		}
	}
	q->scheduled = false;
	pthread_cond_broadcast(&q->changed);
	/* Nothing of q is touched after this: a drained queue may be freed. */
	pthread_mutex_unlock(q->lock);
}

static void *pool_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&pool.lock);
		while (!pool.head)
			pthread_cond_wait(&pool.wake, &pool.lock);
		cm_queue *q = pool.head;
		pool.head = q->next_ready;
		if (!pool.head)
			pool.tail = NULL;
		pthread_mutex_unlock(&pool.lock);
		run_queue(q);
	}
	return NULL;
}

static void pool_start(void)
{
	for (int i = 0; i < CM_THREADS; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, pool_main, NULL) == 0) {
			pthread_detach(t);
			pool.threads++;
		}
	}
}

cm_queue *cm_queue_new(pthread_mutex_t *owner_lock, size_t batch_bytes, cm_run_fn run,
                       void *owner)
{
	pthread_once(&pool.once, pool_start);
	if (pool.threads == 0)
		return NULL;
	cm_queue *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->lock = owner_lock;
	pthread_cond_init(&q->changed, NULL);
	q->batch_bytes = batch_bytes;
	q->run = run;
	q->owner = owner;
	return q;
}

void cm_queue_free(cm_queue *q, bool lent)
{
	if (!q)
		return;
	assert(!q->scheduled && !q->head);
	for (int i = 0; i < CM_DEPTH; i++)
		mio_free_or_keep(q->slot[i].data, lent);
	pthread_cond_destroy(&q->changed);
	free(q);
}

int cm_free_slots(const cm_queue *q)
{
	int n = 0;
	for (int i = 0; i < CM_DEPTH; i++)
		n += !q->used[i];
	return n;
}

void cm_wait_slots(cm_queue *q, int need)
{
	assert(HELD(q->lock) && need >= 0 && need <= CM_DEPTH);
	while (cm_free_slots(q) < need)
		pthread_cond_wait(&q->changed, q->lock);
}

cm_batch *cm_reserve(cm_queue *q)
{
	assert(HELD(q->lock));
	for (int i = 0; i < CM_DEPTH; i++)
		if (!q->used[i]) {
			/* Memory at a batch's first use: most files never fill one
			 * (a small file's data stays in its partial stripe). */
			if (!q->slot[i].data &&
			    posix_memalign((void **)&q->slot[i].data, 4096, q->batch_bytes)) {
				q->slot[i].data = NULL;
				return NULL;
			}
			q->used[i] = true;
			q->slot[i].next = NULL;
			return &q->slot[i];
		}
	return NULL;
}

void cm_submit(cm_queue *q, cm_batch *b)
{
	assert(HELD(q->lock));
	assert(b >= q->slot && b < q->slot + CM_DEPTH && q->used[b - q->slot] && !b->next);
	if (q->tail)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
	if (q->scheduled)
		return; /* its thread will get to b */
	q->scheduled = true;
	pthread_mutex_lock(&pool.lock);
	pool_append(q);
	pthread_mutex_unlock(&pool.lock);
}

bool cm_busy(const cm_queue *q)
{
	return q && q->scheduled;
}

void cm_drain(cm_queue *q)
{
	assert(!q || HELD(q->lock));
	while (q && q->scheduled)
		pthread_cond_wait(&q->changed, q->lock);
}

int cm_take_error(cm_queue *q)
{
	assert(!q || HELD(q->lock));
	int e = q ? q->err : 0;
	if (q)
		q->err = 0;
	return e;
}
