/* SPDX-License-Identifier: MIT */
/*
 * The logical sizes of closed files (size_cache.h).
 */
#include "size_cache.h"

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
} size_entry;

struct size_cache {
	pthread_mutex_t lock;
	uint64_t epoch; /* atomic */
	GHashTable *sizes; /* chunk_key -> size_entry */
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
	return sc;
}

void size_cache_free(size_cache *sc)
{
	if (!sc)
		return;
	g_hash_table_destroy(sc->sizes);
	pthread_mutex_destroy(&sc->lock);
	g_free(sc);
}

uint64_t size_cache_epoch(size_cache *sc)
{
	return __atomic_load_n(&sc->epoch, __ATOMIC_ACQUIRE);
}

void size_cache_headers_changed(size_cache *sc)
{
	__atomic_add_fetch(&sc->epoch, 1, __ATOMIC_ACQ_REL);
}

bool size_cache_get(size_cache *sc, int mb, const struct stat *st, uint64_t *size,
                    uint64_t *ident)
{
	chunk_key k = key_of(mb, st);
	uint64_t now = size_cache_epoch(sc);
	bool hit = false;

	pthread_mutex_lock(&sc->lock);
	const size_entry *e = g_hash_table_lookup(sc->sizes, &k);
	if (e && e->epoch == now && e->ctime_ns == ctime_ns(st)) {
		*size = e->size;
		if (ident)
			*ident = e->ident;
		hit = true;
	}
	pthread_mutex_unlock(&sc->lock);
	return hit;
}

void size_cache_put(size_cache *sc, int mb, const struct stat *st, uint64_t epoch,
                    uint64_t size, uint64_t ident)
{
	chunk_key *k = g_new(chunk_key, 1);
	size_entry *e = g_new(size_entry, 1);

	*k = key_of(mb, st);
	*e = (size_entry){ .epoch = epoch, .ctime_ns = ctime_ns(st), .size = size,
	                   .ident = ident };
	pthread_mutex_lock(&sc->lock);
	if (g_hash_table_size(sc->sizes) >= SIZE_CACHE_MAX)
		g_hash_table_remove_all(sc->sizes);
	g_hash_table_replace(sc->sizes, k, e);
	pthread_mutex_unlock(&sc->lock);
}
