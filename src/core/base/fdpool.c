/* SPDX-License-Identifier: MIT */
/*
 * The bounded pool of open files' descriptors (fdpool.h): a count and an
 * LRU list under one mutex, and the eviction loop that asks idle holders
 * to close theirs.
 */
#include "fdpool.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include <glib.h>

struct fdpool {
	pthread_mutex_t lock; /* all below and every entry's fields; order: a leaf */
	pthread_cond_t unpinned; /* an eviction ended (fdpool_remove waits) */
	fdpool_entry *oldest, *newest;
	int held, cap;
};

fdpool *fdpool_new(int cap)
{
	fdpool *p = g_new0(fdpool, 1);

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->unpinned, NULL);
	p->cap = cap < 1 ? 1 : cap;
	return p;
}

void fdpool_free(fdpool *p)
{
	if (!p)
		return;
	pthread_cond_destroy(&p->unpinned);
	pthread_mutex_destroy(&p->lock);
	g_free(p);
}

int fdpool_held(fdpool *p)
{
	pthread_mutex_lock(&p->lock);
	int held = p->held;
	pthread_mutex_unlock(&p->lock);
	return held;
}

int fdpool_cap_for_limit(rlim_t limit)
{
	if (limit == RLIM_INFINITY || limit > INT_MAX / 2)
		limit = INT_MAX / 2;
	rlim_t room = limit / 4 > 64 ? limit / 4 : 64;
	return limit > room ? (int)(limit - room) : 1;
}

/* Under p->lock. */
static void unlink_entry(fdpool *p, fdpool_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		p->oldest = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		p->newest = e->prev;
	e->prev = e->next = NULL;
}

/* Under p->lock: e becomes the most recently used. */
static void append_entry(fdpool *p, fdpool_entry *e)
{
	e->prev = p->newest;
	e->next = NULL;
	if (p->newest)
		p->newest->next = e;
	else
		p->oldest = e;
	p->newest = e;
}

void fdpool_add(fdpool *p, fdpool_entry *e, int held)
{
	pthread_mutex_lock(&p->lock);
	e->held = held;
	e->pins = 0;
	e->listed = true;
	p->held += held;
	append_entry(p, e);
	pthread_mutex_unlock(&p->lock);
}

void fdpool_remove(fdpool *p, fdpool_entry *e)
{
	pthread_mutex_lock(&p->lock);
	while (e->pins > 0)
		pthread_cond_wait(&p->unpinned, &p->lock);
	if (e->listed) {
		unlink_entry(p, e);
		p->held -= e->held;
		e->held = 0;
		e->listed = false;
	}
	pthread_mutex_unlock(&p->lock);
}

void fdpool_pin(fdpool *p, fdpool_entry *e)
{
	pthread_mutex_lock(&p->lock);
	e->pins++;
	if (e->listed) {
		unlink_entry(p, e);
		append_entry(p, e);
	}
	pthread_mutex_unlock(&p->lock);
}

void fdpool_unpin(fdpool *p, fdpool_entry *e, int held)
{
	pthread_mutex_lock(&p->lock);
	e->pins--;
	if (e->listed) {
		p->held += held - e->held;
		e->held = held;
	}
	pthread_cond_broadcast(&p->unpinned);
	pthread_mutex_unlock(&p->lock);
}

/* Under p->lock: the oldest entry that holds descriptors and is idle. */
static fdpool_entry *oldest_idle(fdpool *p)
{
	for (fdpool_entry *e = p->oldest; e; e = e->next)
		if (e->pins == 0 && e->held > 0)
			return e;
	return NULL;
}

int fdpool_make_room(fdpool *p, int want, fdpool_evict_fn evict, void *arg)
{
	int evicted = 0, tries = 0;

	pthread_mutex_lock(&p->lock);
	int entries = 0;
	for (fdpool_entry *e = p->oldest; e; e = e->next)
		entries++;
	while (p->held + want > p->cap && tries++ < entries) {
		fdpool_entry *e = oldest_idle(p);
		if (!e)
			break;
		e->pins++; /* fdpool_remove waits for the eviction to end */
		pthread_mutex_unlock(&p->lock);
		int rc = evict(e, arg);
		pthread_mutex_lock(&p->lock);
		e->pins--;
		if (rc == 0) {
			p->held -= e->held;
			e->held = 0;
			evicted++;
		}
		/* asked once per call: a busy one goes to the back */
		unlink_entry(p, e);
		append_entry(p, e);
		pthread_cond_broadcast(&p->unpinned);
	}
	pthread_mutex_unlock(&p->lock);
	return evicted;
}
