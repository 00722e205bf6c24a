/* SPDX-License-Identifier: MIT */
#include "dirstamps.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <glib.h>

/* Directories known on all members at most: past it a member's are
 * forgotten (they come back as they are listed). */
#define DIRSTAMPS_MAX (256 * 1024)
#define MEMBERS_MAX 64

struct dirstamps {
	pthread_mutex_t lock; /* guards the tables and count; order: a leaf, under the
	                      * volume's health lock and the daemon's names lock */
	GHashTable *known[MEMBERS_MAX]; /* per member: uint64_t ino -> dirstamp */
	guint count;                    /* in all of them */
};

void dirstamp_of(const struct stat *st, dirstamp *out)
{
	*out = (dirstamp){ .ino = st->st_ino,
		           .size = (uint64_t)st->st_size,
		           .nlink = st->st_nlink,
		           .ctime_sec = st->st_ctim.tv_sec,
		           .ctime_nsec = st->st_ctim.tv_nsec,
		           .mtime_sec = st->st_mtim.tv_sec,
		           .mtime_nsec = st->st_mtim.tv_nsec };
}

bool dirstamp_same(const dirstamp *a, const dirstamp *b)
{
	return a->ino == b->ino && a->size == b->size && a->nlink == b->nlink &&
	       a->ctime_sec == b->ctime_sec && a->ctime_nsec == b->ctime_nsec &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec;
}

/* a's ctime is before b's. */
static bool older(const dirstamp *a, const dirstamp *b)
{
	return a->ctime_sec < b->ctime_sec ||
	       (a->ctime_sec == b->ctime_sec && a->ctime_nsec < b->ctime_nsec);
}

dirstamps *dirstamps_new(void)
{
	dirstamps *s = g_new0(dirstamps, 1);
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void dirstamps_free(dirstamps *s)
{
	if (!s)
		return;
	for (int i = 0; i < MEMBERS_MAX; i++)
		if (s->known[i])
			g_hash_table_destroy(s->known[i]);
	pthread_mutex_destroy(&s->lock);
	g_free(s);
}

bool dirstamps_watching(dirstamps *s, int idx)
{
	return s && idx >= 0 && idx < MEMBERS_MAX &&
	       __atomic_load_n(&s->known[idx], __ATOMIC_ACQUIRE) != NULL;
}

/* Under s->lock (the asserts see it held, by some thread: a mutex does
 * not say which). */
static void forget(struct dirstamps *s, int idx)
{
	assert(pthread_mutex_trylock(&s->lock) == EBUSY && idx >= 0 && idx < MEMBERS_MAX);
	if (!s->known[idx])
		return;
	assert(s->count >= g_hash_table_size(s->known[idx]));
	s->count -= g_hash_table_size(s->known[idx]);
	g_hash_table_destroy(s->known[idx]);
	__atomic_store_n(&s->known[idx], NULL, __ATOMIC_RELEASE);
}

/* Member idx's stamp of s->ino is now st (known) or none (NULL).  A
 * stamp in whole seconds is none: a filesystem that keeps no finer time
 * (sshfs, whose SFTP has no ctime either) gives the same stamp to changes
 * within a second.  Under s->lock. */
static void set(struct dirstamps *s, int idx, uint64_t ino, const dirstamp *st)
{
	assert(pthread_mutex_trylock(&s->lock) == EBUSY && idx >= 0 && idx < MEMBERS_MAX);
	GHashTable *t = s->known[idx];
	if (st && st->ctime_nsec == 0 && st->mtime_nsec == 0)
		st = NULL;
	if (!st) {
		if (t && g_hash_table_remove(t, &ino)) {
			assert(s->count > 0);
			s->count--;
		}
		return;
	}
	if (!t) {
		t = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
		__atomic_store_n(&s->known[idx], t, __ATOMIC_RELEASE);
	}
	dirstamp *copy = g_memdup2(st, sizeof *st);
	if (!g_hash_table_lookup(t, &ino))
		s->count++;
	/* the key lies in the value, which it lives and dies with */
	g_hash_table_replace(t, &copy->ino, copy);
	if (s->count > DIRSTAMPS_MAX)
		forget(s, idx);
}

void dirstamps_known(dirstamps *s, int idx, const dirstamp *st)
{
	if (!s || idx < 0 || idx >= MEMBERS_MAX)
		return;
	pthread_mutex_lock(&s->lock);
	/* A listing that read the member before a change that was told first
	 * knows an older stamp: the newer stands. */
	const dirstamp *have = s->known[idx] ? g_hash_table_lookup(s->known[idx], &st->ino) : NULL;
	if (!have || !older(st, have))
		set(s, idx, st->ino, st);
	pthread_mutex_unlock(&s->lock);
}

void dirstamps_changed(dirstamps *s, int idx, const dirstamp *before, const dirstamp *after,
                       bool made)
{
	if (!s || idx < 0 || idx >= MEMBERS_MAX)
		return;
	pthread_mutex_lock(&s->lock);
	const dirstamp *have =
		s->known[idx] ? g_hash_table_lookup(s->known[idx], &before->ino) : NULL;
	if (have) {
		bool follows = made && before->ino == after->ino && dirstamp_same(have, before);
		set(s, idx, before->ino, follows ? after : NULL);
	}
	pthread_mutex_unlock(&s->lock);
}

void dirstamps_forget_member(dirstamps *s, int idx)
{
	if (!s || idx < 0 || idx >= MEMBERS_MAX)
		return;
	pthread_mutex_lock(&s->lock);
	forget(s, idx);
	pthread_mutex_unlock(&s->lock);
}

bool dirstamps_knows(dirstamps *s, int idx, uint64_t ino)
{
	dirstamp unused;
	return dirstamps_last(s, idx, ino, &unused);
}

bool dirstamps_last(dirstamps *s, int idx, uint64_t ino, dirstamp *out)
{
	if (!s || idx < 0 || idx >= MEMBERS_MAX)
		return false;
	pthread_mutex_lock(&s->lock);
	const dirstamp *have = s->known[idx] ? g_hash_table_lookup(s->known[idx], &ino) : NULL;
	if (have)
		*out = *have;
	pthread_mutex_unlock(&s->lock);
	return have != NULL;
}
