/* SPDX-License-Identifier: MIT */
/*
 * The attributes of directories and regular files (attr_cache.h).
 */
#include "attr_cache.h"

#include <glib.h>
#include <pthread.h>
#include <time.h>

typedef struct attr_entry {
	attr_stamp stamp;
	int64_t made_ms;
	struct stat st;
} attr_entry;

struct attr_cache {
	pthread_mutex_t lock; /* guards paths; order: a leaf */
	GHashTable *paths; /* path -> attr_entry */
	uint64_t listings; /* atomic */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

attr_cache *attr_cache_new(void)
{
	attr_cache *ac = g_new0(attr_cache, 1);

	pthread_mutex_init(&ac->lock, NULL);
	ac->paths = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	return ac;
}

void attr_cache_free(attr_cache *ac)
{
	if (!ac)
		return;
	g_hash_table_destroy(ac->paths);
	pthread_mutex_destroy(&ac->lock);
	g_free(ac);
}

uint64_t attr_cache_listings(attr_cache *ac)
{
	return __atomic_load_n(&ac->listings, __ATOMIC_ACQUIRE);
}

void attr_cache_listed(attr_cache *ac)
{
	__atomic_add_fetch(&ac->listings, 1, __ATOMIC_ACQ_REL);
}

/* A directory's attributes move with the members' changes and listings
 * (atime); a file's with changes, reads (atime) and sizes in memory. */
static bool stands(const attr_entry *e, const attr_stamp *now)
{
	if (e->stamp.changes != now->changes)
		return false;
	if (S_ISDIR(e->st.st_mode))
		return e->stamp.listings == now->listings;
	return e->stamp.reads == now->reads && e->stamp.sizes == now->sizes;
}

bool attr_cache_get(attr_cache *ac, const char *path, const attr_stamp *now, struct stat *st)
{
	bool hit = false;
	int64_t t = now_ms();

	pthread_mutex_lock(&ac->lock);
	const attr_entry *e = g_hash_table_lookup(ac->paths, path);
	if (e && stands(e, now) && t - e->made_ms < ATTR_CACHE_TTL_MS) {
		*st = e->st;
		hit = true;
	}
	pthread_mutex_unlock(&ac->lock);
	return hit;
}

void attr_cache_put(attr_cache *ac, const char *path, const attr_stamp *asked,
                    const struct stat *st)
{
	if (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode))
		return;
	attr_entry *e = g_new(attr_entry, 1);
	char *key = g_strdup(path);

	/* the TTL runs from when the answer came */
	*e = (attr_entry){ .stamp = *asked, .made_ms = now_ms(), .st = *st };
	pthread_mutex_lock(&ac->lock);
	if (g_hash_table_size(ac->paths) >= ATTR_CACHE_MAX)
		g_hash_table_remove_all(ac->paths);
	g_hash_table_replace(ac->paths, key, e);
	pthread_mutex_unlock(&ac->lock);
}
