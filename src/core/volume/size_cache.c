/* SPDX-License-Identifier: MIT */
/*
 * The logical sizes of closed files (size_cache.h).
 */
#include "size_cache.h"

#include <assert.h>
#include <errno.h>
#include <glib.h>
#include <pthread.h>
#include <string.h>

typedef struct chunk_key {
	uint64_t ino, dev;
	int32_t mb, pad;
} chunk_key;

typedef struct size_entry {
	uint64_t epoch;
	int64_t ctime_ns;
	uint64_t size;
	uint64_t ident;
	bool none; /* the chunk was made at epoch: nothing known of it */
} size_entry;

struct size_cache {
	pthread_mutex_t lock; /* guards floor and the tables; order: a leaf */
	uint64_t epoch; /* atomic */
	uint64_t floor; /* entries made before it are stale (under lock) */
	GHashTable *sizes; /* chunk_key -> size_entry */
	GHashTable *changed; /* file identity -> the epoch of its last change */
};

static guint key_hash(gconstpointer p)
{
	const chunk_key *k = p;
	return (guint)(k->ino * 0x9e3779b97f4a7c15ull >> 32) ^ (guint)k->dev ^ (guint)k->mb;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, sizeof(chunk_key)) == 0;
}

static chunk_key key_of(int mb, const struct stat *st)
{
	return (chunk_key){ .ino = st->st_ino, .dev = st->st_dev, .mb = mb };
}

static int64_t ctime_ns(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

size_cache *size_cache_new(void)
{
	size_cache *sc = g_new0(size_cache, 1);

	pthread_mutex_init(&sc->lock, NULL);
	sc->sizes = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
	sc->changed = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	return sc;
}

void size_cache_free(size_cache *sc)
{
	if (!sc)
		return;
	g_hash_table_destroy(sc->sizes);
	g_hash_table_destroy(sc->changed);
	pthread_mutex_destroy(&sc->lock);
	g_free(sc);
}

uint64_t size_cache_epoch(size_cache *sc)
{
	return __atomic_load_n(&sc->epoch, __ATOMIC_ACQUIRE);
}

void size_cache_file_changed(size_cache *sc, uint64_t ident)
{
	pthread_mutex_lock(&sc->lock);
	uint64_t now = __atomic_add_fetch(&sc->epoch, 1, __ATOMIC_ACQ_REL);
	if (g_hash_table_size(sc->changed) >= SIZE_CACHE_MAX) {
		/* forgetting whose change it was makes every entry stale */
		sc->floor = now;
		g_hash_table_remove_all(sc->changed);
	} else {
		g_hash_table_replace(sc->changed, g_memdup2(&ident, sizeof(ident)),
		                     g_memdup2(&now, sizeof(now)));
	}
	pthread_mutex_unlock(&sc->lock);
}

/* Under sc->lock: no change of e's file since the epoch e was made at. */
static bool still_current(size_cache *sc, const size_entry *e)
{
	assert(pthread_mutex_trylock(&sc->lock) == EBUSY); /* held, by some thread */
	if (e->epoch < sc->floor)
		return false;
	const uint64_t *last = g_hash_table_lookup(sc->changed, &e->ident);
	return !last || *last <= e->epoch;
}

bool size_cache_get(size_cache *sc, int mb, const struct stat *st, uint64_t *size,
                    uint64_t *ident)
{
	chunk_key k = key_of(mb, st);
	bool hit = false;

	pthread_mutex_lock(&sc->lock);
	const size_entry *e = g_hash_table_lookup(sc->sizes, &k);
	if (e && !e->none && still_current(sc, e) && e->ctime_ns == ctime_ns(st)) {
		*size = e->size;
		if (ident)
			*ident = e->ident;
		hit = true;
	}
	pthread_mutex_unlock(&sc->lock);
	return hit;
}

/* Under sc->lock: e for key k, unless the entry there was made later. */
static void store(size_cache *sc, const chunk_key *k, const size_entry *e)
{
	assert(pthread_mutex_trylock(&sc->lock) == EBUSY);
	/* an epoch is one size_cache_epoch gave (or one just made) */
	assert(e->epoch <= __atomic_load_n(&sc->epoch, __ATOMIC_ACQUIRE));
	const size_entry *old = g_hash_table_lookup(sc->sizes, k);
	if (old && old->epoch > e->epoch)
		return;
	if (!old && g_hash_table_size(sc->sizes) >= SIZE_CACHE_MAX) {
		/* What was forgotten may be a chunk made since e was read. */
		g_hash_table_remove_all(sc->sizes);
		sc->floor = __atomic_load_n(&sc->epoch, __ATOMIC_ACQUIRE);
	}
	if (e->epoch < sc->floor)
		return;
	g_hash_table_replace(sc->sizes, g_memdup2(k, sizeof(*k)), g_memdup2(e, sizeof(*e)));
}

void size_cache_chunk_made(size_cache *sc, int mb, const struct stat *st)
{
	chunk_key k = key_of(mb, st);

	pthread_mutex_lock(&sc->lock);
	size_entry e = { .epoch = __atomic_add_fetch(&sc->epoch, 1, __ATOMIC_ACQ_REL),
	                 .none = true };
	store(sc, &k, &e);
	pthread_mutex_unlock(&sc->lock);
}

void size_cache_put(size_cache *sc, int mb, const struct stat *st, uint64_t epoch,
                    uint64_t size, uint64_t ident)
{
	chunk_key k = key_of(mb, st);
	size_entry e = { .epoch = epoch, .ctime_ns = ctime_ns(st), .size = size,
	                 .ident = ident };

	pthread_mutex_lock(&sc->lock);
	store(sc, &k, &e);
	pthread_mutex_unlock(&sc->lock);
}
