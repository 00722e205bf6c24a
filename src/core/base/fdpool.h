/* SPDX-License-Identifier: MIT */
/*
 * A bounded pool of descriptors held by open files (docs/DESIGN.md
 * section 4, "Descriptors of open files").  Each holder (an open file)
 * embeds an entry that counts the descriptors it holds; the pool keeps
 * the entries in least-recently-used order.  Before a holder opens more
 * descriptors it makes room: the idle entries, least recently used first,
 * are asked to close theirs until the pool holds at most its cap.  An
 * entry in use is pinned and never asked; an entry may also decline (it
 * is busy).  The cap is soft: when every entry is pinned or declines, the
 * pool goes past it rather than fail an open.  Thread-safe.
 */
#ifndef ECFS_FDPOOL_H
#define ECFS_FDPOOL_H

#include <stdbool.h>
#include <sys/resource.h>

typedef struct fdpool fdpool;

/* Embedded in the holder; zeroed before fdpool_add. */
typedef struct fdpool_entry {
	struct fdpool_entry *prev, *next; /* the LRU list, oldest first */
	int held;   /* descriptors it holds */
	int pins;   /* users now (and an eviction being tried) */
	bool listed;
} fdpool_entry;

/* Asked, with no lock of the pool held, to close the descriptors of e:
 * returns 0 once it holds none, or -1 if it cannot now (busy).  It must
 * not wait for a lock that a thread making room may hold (a trylock). */
typedef int (*fdpool_evict_fn)(fdpool_entry *e, void *arg);

/* A pool of at most cap descriptors (at least 1). */
fdpool *fdpool_new(int cap);
void fdpool_free(fdpool *p);
/* Descriptors the entries hold now. */
int fdpool_held(fdpool *p);

/* The cap for a process whose open-file limit is `limit`: the limit less
 * the headroom the rest of the process needs (a quarter of it, at least
 * 64), at least 1. */
int fdpool_cap_for_limit(rlim_t limit);

/* Enters e, holding `held` descriptors, as the most recently used. */
void fdpool_add(fdpool *p, fdpool_entry *e, int held);
/* Takes e out, once no eviction of it is under way (waits for one). */
void fdpool_remove(fdpool *p, fdpool_entry *e);
/* e is in use: not evicted until unpinned; it becomes the most recently
 * used. */
void fdpool_pin(fdpool *p, fdpool_entry *e);
/* e's use ended; it now holds `held` descriptors. */
void fdpool_unpin(fdpool *p, fdpool_entry *e, int held);
/* Evicts idle entries, oldest first, until the pool holds at most its
 * cap less `want`, or every entry was asked.  Returns how many were
 * evicted. */
int fdpool_make_room(fdpool *p, int want, fdpool_evict_fn evict, void *arg);

#endif
