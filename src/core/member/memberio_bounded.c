/* SPDX-License-Identifier: MIT */
/*
 * Calls bounded by a timeout before there are member workers (memberio.h,
 * mio_bounded): each on a thread of its own, which the caller waits for
 * until its deadline.  One that has not returned by then is abandoned:
 * its thread frees the handle, and the caller's argument through late(),
 * once the call ever returns.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "memberio.h"

int64_t mio_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct mio_bounded {
	pthread_mutex_t lock; /* guards done, abandoned; order: a leaf */
	pthread_cond_t done_cond;
	void (*fn)(void *);
	void (*late)(void *);
	void *arg;
	bool done, abandoned;
};

static void bounded_free(mio_bounded *b)
{
	pthread_cond_destroy(&b->done_cond);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static void *bounded_main(void *p)
{
	mio_bounded *b = p;

	b->fn(b->arg);
	pthread_mutex_lock(&b->lock);
	bool abandoned = b->abandoned;
	b->done = true;
	pthread_cond_signal(&b->done_cond);
	pthread_mutex_unlock(&b->lock);
	if (abandoned) {
		/* its caller went on long ago: what arg holds is this thread's */
		if (b->late)
			b->late(b->arg);
		bounded_free(b);
	}
	return NULL;
}

mio_bounded *mio_bounded_start(void (*fn)(void *), void (*late)(void *), void *arg)
{
	mio_bounded *b = calloc(1, sizeof(*b));
	pthread_t t;

	if (b) {
		pthread_mutex_init(&b->lock, NULL);
		pthread_cond_init(&b->done_cond, NULL);
		b->fn = fn;
		b->late = late;
		b->arg = arg;
	}
	if (!b || pthread_create(&t, NULL, bounded_main, b) != 0) {
		if (b)
			bounded_free(b);
		fn(arg); /* no thread: inline, unbounded */
		return NULL;
	}
	pthread_detach(t);
	return b;
}

bool mio_bounded_wait(mio_bounded *b, int64_t deadline_ms)
{
	if (!b)
		return true;
	pthread_mutex_lock(&b->lock);
	while (!b->done) {
		if (!deadline_ms) {
			pthread_cond_wait(&b->done_cond, &b->lock);
			continue;
		}
		int64_t left = deadline_ms - mio_now_ms();
		if (left <= 0)
			break;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += left / 1000;
		until.tv_nsec += (left % 1000) * 1000000;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&b->done_cond, &b->lock, &until);
	}
	bool done = b->done;
	b->abandoned = !done;
	pthread_mutex_unlock(&b->lock);
	if (done)
		bounded_free(b);
	return done;
}

int64_t mio_deadline_ms(unsigned timeout_ms)
{
	return timeout_ms ? mio_now_ms() + timeout_ms : 0;
}
