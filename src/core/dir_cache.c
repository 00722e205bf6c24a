/* SPDX-License-Identifier: MIT */
/*
 * The attributes of directories (dir_cache.h).
 */
#include "dir_cache.h"

#include <glib.h>
#include <pthread.h>
#include <time.h>

typedef struct dir_entry {
	uint64_t changes;
	int64_t made_ms;
	struct stat st;
} dir_entry;

struct dir_cache {
	pthread_mutex_t lock;
	GHashTable *dirs; /* path -> dir_entry */
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

dir_cache *dir_cache_new(void)
{
	dir_cache *dc = g_new0(dir_cache, 1);

	pthread_mutex_init(&dc->lock, NULL);
	dc->dirs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	return dc;
}

void dir_cache_free(dir_cache *dc)
{
	if (!dc)
		return;
	g_hash_table_destroy(dc->dirs);
	pthread_mutex_destroy(&dc->lock);
	g_free(dc);
}

bool dir_cache_get(dir_cache *dc, const char *path, uint64_t changes, struct stat *st)
{
	bool hit = false;
	int64_t now = now_ms();

	pthread_mutex_lock(&dc->lock);
	const dir_entry *e = g_hash_table_lookup(dc->dirs, path);
	if (e && e->changes == changes && now - e->made_ms < DIR_CACHE_TTL_MS) {
		*st = e->st;
		hit = true;
	}
	pthread_mutex_unlock(&dc->lock);
	return hit;
}

void dir_cache_put(dir_cache *dc, const char *path, uint64_t changes, const struct stat *st)
{
	if (!S_ISDIR(st->st_mode))
		return;
	dir_entry *e = g_new(dir_entry, 1);
	char *key = g_strdup(path);

	/* the TTL runs from when the answer came */
	*e = (dir_entry){ .changes = changes, .made_ms = now_ms(), .st = *st };
	pthread_mutex_lock(&dc->lock);
	if (g_hash_table_size(dc->dirs) >= DIR_CACHE_MAX)
		g_hash_table_remove_all(dc->dirs);
	g_hash_table_replace(dc->dirs, key, e);
	pthread_mutex_unlock(&dc->lock);
}
