/* SPDX-License-Identifier: MIT */
#include "fs_dirnames.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* The names of one directory, as a table (name -> its DT_* type + 1),
 * made at the first change, and as a listing, made at the first listing
 * after one: a directory listed from the members and not changed since
 * costs no copy of its names, and one listed again none either. */
struct held_dir {
	GHashTable *names; /* NULL until a change */
	listing *snapshot; /* NULL from a change to the next listing */
	size_t bytes;      /* of the names with their NULs, while names */
	uint64_t on_mask;  /* dir_members, its inode numbers in bit order */
	uint64_t *on_ino;
};

/* guards the four below; order: before a volume's dirstamps lock and
 * log_lock only */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static GHashTable *dirs; /* uint64_t dir -> struct held_dir */
static size_t held;      /* names in all of them, and one for each */
static uint64_t generation;

/* For assert(): lock is held (by some thread: a mutex does not say
 * which); every function below that reaches dirs runs under it. */
#define HELD() (pthread_mutex_trylock(&lock) == EBUSY)

static GHashTable *names_new(void)
{
	return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

static void held_free(gpointer p)
{
	struct held_dir *d = p;
	if (d->names)
		g_hash_table_destroy(d->names);
	listing_unref(d->snapshot);
	g_free(d->on_ino);
	g_free(d);
}

static struct held_dir *held_new(const dir_members *on)
{
	struct held_dir *d = g_new0(struct held_dir, 1);
	if (!on || !on->mask)
		return d;
	d->on_mask = on->mask;
	d->on_ino = g_new(uint64_t, __builtin_popcountll(on->mask));
	for (int i = 0, at = 0; i < 64; i++)
		if (on->mask >> i & 1)
			d->on_ino[at++] = on->ino[i];
	return d;
}

static void clear_all(void)
{
	assert(HELD());
	if (dirs)
		g_hash_table_destroy(dirs);
	dirs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, held_free);
	held = 0;
}

/* How many names d holds (counted in held). */
static guint names_in(const struct held_dir *d)
{
	return d->names ? g_hash_table_size(d->names) : listing_len(d->snapshot);
}

static struct held_dir *held_of(uint64_t dir)
{
	return dirs ? g_hash_table_lookup(dirs, &dir) : NULL;
}

static void drop(uint64_t dir)
{
	assert(HELD());
	struct held_dir *d = held_of(dir);
	if (!d)
		return;
	assert(held >= names_in(d) + 1);
	held -= names_in(d) + 1;
	g_hash_table_remove(dirs, &dir);
}

/* Holds d for dir, in place of what was held of it. */
static void hold(uint64_t dir, struct held_dir *d)
{
	if (!dirs)
		clear_all();
	drop(dir);
	held += names_in(d) + 1;
	g_hash_table_replace(dirs, g_memdup2(&dir, sizeof dir), d);
}

/* d's names as a table. */
static GHashTable *table_of(struct held_dir *d)
{
	if (!d->names) {
		d->names = names_new();
		for (guint i = 0; i < listing_len(d->snapshot); i++) {
			const struct listing_entry *e = listing_at(d->snapshot, i);
			g_hash_table_replace(d->names, g_strdup(e->name), GINT_TO_POINTER(e->type + 1));
			d->bytes += strlen(e->name) + 1;
		}
	}
	return d->names;
}

/* d's names as a table, to change: the listing made of them goes. */
static GHashTable *names_to_change(struct held_dir *d)
{
	table_of(d);
	listing_unref(d->snapshot);
	d->snapshot = NULL;
	return d->names;
}

/* The type of name in dir, or -1 if dir is not held or has no name. */
static int type_in(uint64_t dir, const char *name)
{
	struct held_dir *d = held_of(dir);
	gpointer value;
	if (!d || !g_hash_table_lookup_extended(table_of(d), name, NULL, &value))
		return -1;
	return GPOINTER_TO_INT(value) - 1;
}

/* name of type in dir, if dir is held and the type known. */
static void put_in(uint64_t dir, const char *name, int type)
{
	assert(HELD());
	struct held_dir *d = held_of(dir);
	if (!d || type < 0)
		return;
	char *key = g_strdup(name);
	if (!g_hash_table_replace(names_to_change(d), key, GINT_TO_POINTER(type + 1)))
		return;
	d->bytes += strlen(key) + 1;
	if (++held > DIRNAMES_MAX)
		clear_all();
}

static void take_out(uint64_t dir, const char *name)
{
	assert(HELD());
	struct held_dir *d = held_of(dir);
	if (d && g_hash_table_remove(names_to_change(d), name)) {
		assert(d->bytes >= strlen(name) + 1 && held > 0);
		d->bytes -= strlen(name) + 1;
		held--;
	}
}

uint64_t fs_dirnames_generation(void)
{
	pthread_mutex_lock(&lock);
	uint64_t g = generation;
	pthread_mutex_unlock(&lock);
	return g;
}

void fs_dirnames_listed(uint64_t dir, listing *l, uint64_t since, const dir_members *on)
{
	pthread_mutex_lock(&lock);
	if (since == generation && held + listing_len(l) + 1 <= DIRNAMES_MAX) {
		struct held_dir *d = held_new(on);
		d->snapshot = listing_ref(l);
		hold(dir, d);
	}
	pthread_mutex_unlock(&lock);
}

void fs_dirnames_made(uint64_t dir, const dir_members *on)
{
	pthread_mutex_lock(&lock);
	generation++;
	struct held_dir *d = held_new(on);
	d->names = names_new();
	/* what a listing of the members gives of a new directory */
	for (const char *const *dot = (const char *const[]){ ".", "..", NULL }; *dot; dot++) {
		g_hash_table_replace(d->names, g_strdup(*dot), GINT_TO_POINTER(DT_DIR + 1));
		d->bytes += strlen(*dot) + 1;
	}
	hold(dir, d);
	pthread_mutex_unlock(&lock);
}

void fs_dirnames_added(uint64_t dir, const char *name, mode_t mode)
{
	pthread_mutex_lock(&lock);
	generation++;
	put_in(dir, name, IFTODT(mode));
	pthread_mutex_unlock(&lock);
}

void fs_dirnames_changed(uint64_t dir, const char *name, mode_t mode, int rc)
{
	if (rc == 0)
		fs_dirnames_added(dir, name, mode);
	else
		fs_dirnames_drop(dir);
}

void fs_dirnames_removed(uint64_t dir, const char *name)
{
	pthread_mutex_lock(&lock);
	generation++;
	take_out(dir, name);
	pthread_mutex_unlock(&lock);
}

void fs_dirnames_renamed(uint64_t p1, const char *n1, uint64_t p2, const char *n2,
                         unsigned flags)
{
	pthread_mutex_lock(&lock);
	generation++;
	int t1 = type_in(p1, n1), t2 = type_in(p2, n2);
	bool exchange = flags & RENAME_EXCHANGE;
	/* A name that comes from a directory not held here is of a type not
	 * known: the directory it comes to is no longer known whole. */
	if (t1 < 0)
		drop(p2);
	if (exchange && t2 < 0)
		drop(p1);
	if (exchange)
		put_in(p1, n1, t2);
	else
		take_out(p1, n1);
	put_in(p2, n2, t1);
	pthread_mutex_unlock(&lock);
}

void fs_dirnames_drop(uint64_t dir)
{
	pthread_mutex_lock(&lock);
	generation++;
	drop(dir);
	pthread_mutex_unlock(&lock);
}

void fs_dirnames_drop_all(void)
{
	pthread_mutex_lock(&lock);
	generation++;
	clear_all();
	pthread_mutex_unlock(&lock);
}

bool fs_dirnames_absent(uint64_t dir, const char *name)
{
	pthread_mutex_lock(&lock);
	struct held_dir *d = held_of(dir);
	bool absent = d && !g_hash_table_contains(table_of(d), name);
	pthread_mutex_unlock(&lock);
	return absent;
}

/* d's names as a listing, made from the table if it changed since the
 * last one. */
static listing *snapshot_of(struct held_dir *d)
{
	if (!d->snapshot) {
		d->snapshot = listing_new(names_in(d), d->bytes);
		GHashTableIter it;
		gpointer name, value;
		g_hash_table_iter_init(&it, d->names);
		while (g_hash_table_iter_next(&it, &name, &value))
			listing_append(d->snapshot, name, (unsigned char)(GPOINTER_TO_INT(value) - 1));
	}
	return d->snapshot;
}

listing *fs_dirnames_listing(uint64_t dir)
{
	listing *l = NULL;
	pthread_mutex_lock(&lock);
	struct held_dir *d = held_of(dir);
	if (d)
		l = listing_ref(snapshot_of(d));
	pthread_mutex_unlock(&lock);
	return l;
}

void fs_dirnames_each(void (*fn)(uint64_t dir, const listing *names, const dir_members *on,
                                 void *ctx),
                      void *ctx)
{
	GHashTableIter it;
	gpointer key, value;
	pthread_mutex_lock(&lock);
	if (dirs)
		g_hash_table_iter_init(&it, dirs);
	while (dirs && g_hash_table_iter_next(&it, &key, &value)) {
		struct held_dir *d = value;
		if (!d->on_mask)
			continue;
		dir_members on = { .mask = d->on_mask };
		for (int i = 0, at = 0; i < 64; i++)
			if (d->on_mask >> i & 1)
				on.ino[i] = d->on_ino[at++];
		fn(*(const uint64_t *)key, snapshot_of(d), &on, ctx);
	}
	pthread_mutex_unlock(&lock);
}
