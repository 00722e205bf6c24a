/* SPDX-License-Identifier: MIT */
/*
 * Member worker threads.  A worker runs tasks from its queue one after the
 * other and never waits for anything but its queue, so batches that span
 * members cannot deadlock.  A task allocates nothing here: the queue node
 * is malloc'd per submission (a few hundred per second at most, since one
 * task moves a whole run of strips).
 */
#include "memberio.h"

#include <stdbool.h>
#include <stdlib.h>

typedef struct mio_task {
	void (*fn)(void *);
	void *arg;
	mio_batch *batch;
	struct mio_task *next;
} mio_task;

typedef struct worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	mio_task *head, *tail;
	bool stop;
} worker;

struct memberio {
	int n;
	worker *w;
};

static void *worker_main(void *arg)
{
	worker *w = arg;

	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (!w->head && !w->stop)
			pthread_cond_wait(&w->wake, &w->lock);
		mio_task *t = w->head;
		if (!t) {
			pthread_mutex_unlock(&w->lock);
			return NULL;
		}
		w->head = t->next;
		if (!w->head)
			w->tail = NULL;
		pthread_mutex_unlock(&w->lock);

		t->fn(t->arg);
		mio_batch *b = t->batch;
		free(t);
		pthread_mutex_lock(&b->lock);
		if (--b->pending == 0)
			pthread_cond_signal(&b->done);
		pthread_mutex_unlock(&b->lock);
	}
}

memberio *memberio_new(int n)
{
	memberio *mio = calloc(1, sizeof(*mio));

	if (!mio)
		return NULL;
	mio->n = n;
	mio->w = calloc((size_t)n, sizeof(worker));
	if (!mio->w) {
		free(mio);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		pthread_mutex_init(&mio->w[i].lock, NULL);
		pthread_cond_init(&mio->w[i].wake, NULL);
		if (pthread_create(&mio->w[i].thread, NULL, worker_main, &mio->w[i]) != 0) {
			mio->n = i;
			memberio_free(mio);
			return NULL;
		}
	}
	return mio;
}

void memberio_free(memberio *mio)
{
	if (!mio)
		return;
	for (int i = 0; i < mio->n; i++) {
		pthread_mutex_lock(&mio->w[i].lock);
		mio->w[i].stop = true;
		pthread_cond_signal(&mio->w[i].wake);
		pthread_mutex_unlock(&mio->w[i].lock);
		pthread_join(mio->w[i].thread, NULL);
	}
	free(mio->w);
	free(mio);
}

void mio_batch_init(mio_batch *b)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->done, NULL);
	b->pending = 0;
}

void memberio_submit(memberio *mio, int idx, mio_batch *b, void (*fn)(void *), void *arg)
{
	mio_task *t = malloc(sizeof(*t));
	worker *w = &mio->w[idx];

	if (!t) {
		fn(arg); /* out of memory: run it here rather than lose it */
		return;
	}
	*t = (mio_task){ fn, arg, b, NULL };
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	pthread_mutex_lock(&w->lock);
	if (w->tail)
		w->tail->next = t;
	else
		w->head = t;
	w->tail = t;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void mio_batch_wait(mio_batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->pending > 0)
		pthread_cond_wait(&b->done, &b->lock);
	pthread_mutex_unlock(&b->lock);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->done);
}
