/* SPDX-License-Identifier: MIT */
/*
 * The node table (fs_nodes.h): nodes by id, and the names they are known
 * by, under one lock.  A name is (parent node, name); an orphan's parent
 * is ORPHAN_PARENT, which stands for the orphan folder.
 */
#include "fs_nodes.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "fs_names.h"

/* The parent of orphans' names: no node has id 0. */
#define ORPHAN_PARENT 0
/* The deepest path the table builds. */
#define MAX_DEPTH 4096

typedef struct node {
	fuse_ino_t ino;
	uint64_t nlookup;
	int opens;
	mode_t type;
	off_t size;              /* at the last open (auto_cache) */
	struct timespec mtime;
	dev_t seen_dev;          /* the member object last seen as it (0, 0: none) */
	ino_t seen_ino;
	bool unidentified;       /* its id stands for no identity */
	GPtrArray *names; /* name_key *, owned by the names index */
} node;

/* The names held (fs_nodes_hold): shared by requests that build paths,
 * alone by renames; order: outermost, before every other lock of the
 * daemon and the core (docs/DESIGN.md, section 13). */
static pthread_rwlock_t names_held;

void fs_nodes_hold(void)
{
	pthread_rwlock_rdlock(&names_held);
}

void fs_nodes_unhold(void)
{
	pthread_rwlock_unlock(&names_held);
}

void fs_nodes_hold_alone(void)
{
	pthread_rwlock_wrlock(&names_held);
}

void fs_nodes_unhold_alone(void)
{
	pthread_rwlock_unlock(&names_held);
}

static struct {
	GMutex lock; /* guards the table; order: a leaf */
	GHashTable *nodes; /* &node->ino -> node */
	name_index names;
	unsigned orphans;  /* orphan names given */
} table;

static void node_free(gpointer p)
{
	node *n = p;
	g_ptr_array_free(n->names, TRUE);
	g_free(n);
}

static node *node_get(fuse_ino_t ino)
{
	return g_hash_table_lookup(table.nodes, &ino);
}

/* For assert(): the table's lock is held (by some thread: a mutex does
 * not say which); the table's functions below run under it. */
#define TABLE_HELD() (!g_mutex_trylock(&table.lock))

static node *node_make(fuse_ino_t ino, mode_t type)
{
	assert(TABLE_HELD());
	node *n = node_get(ino);
	if (n)
		return n;
	n = g_new0(node, 1);
	n->ino = ino;
	n->type = type;
	n->size = -1;
	n->names = g_ptr_array_new();
	g_hash_table_insert(table.nodes, &n->ino, n);
	return n;
}

static name_key *name_get(fuse_ino_t parent, const char *name)
{
	return names_find(&table.names, parent, name);
}

/* Drops a name from its node and the table. */
static void name_drop(name_key *k)
{
	assert(TABLE_HELD());
	gboolean had = g_ptr_array_remove(k->node->names, k);
	assert(had); /* a name of the index is one of its node's */
	(void)had;
	names_remove(&table.names, k);
}

static name_key *name_bind(fuse_ino_t parent, const char *name, node *n)
{
	assert(TABLE_HELD());
	name_key *k = name_get(parent, name);
	if (k && k->node == n)
		return k;
	if (k)
		name_drop(k);
	k = name_key_new(parent, name, n, n->ino);
	names_add(&table.names, k);
	g_ptr_array_add(n->names, k);
	return k;
}

/* Frees a node the kernel no longer holds and nobody has open. */
static void node_maybe_free(node *n)
{
	assert(TABLE_HELD() && n->opens >= 0);
	if (n->nlookup || n->opens || n->ino == FUSE_ROOT_ID)
		return;
	while (n->names->len)
		name_drop(n->names->pdata[0]);
	g_hash_table_remove(table.nodes, &n->ino);
}

void fs_nodes_init(void)
{
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&names_held, &attr);
	pthread_rwlockattr_destroy(&attr);
	g_mutex_init(&table.lock);
	table.nodes = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, node_free);
	names_init(&table.names);
	g_mutex_lock(&table.lock);
	node_make(FUSE_ROOT_ID, S_IFDIR)->nlookup = 1;
	g_mutex_unlock(&table.lock);
}

void fs_nodes_free(void)
{
	if (!table.nodes)
		return;
	names_free(&table.names);
	g_hash_table_destroy(table.nodes);
	table.nodes = NULL;
	g_mutex_clear(&table.lock);
	pthread_rwlock_destroy(&names_held);
}

/* The path of n (table lock held). */
static int build_path(node *n, char **path)
{
	const char *parts[MAX_DEPTH];
	int depth = 0;
	const char *top = "";

	assert(TABLE_HELD());
	while (n->ino != FUSE_ROOT_ID) {
		if (!n->names->len)
			return -ENOENT;
		if (depth == MAX_DEPTH)
			return -ELOOP;
		const name_key *k = n->names->pdata[0];
		parts[depth++] = k->name;
		if (k->parent == ORPHAN_PARENT) {
			top = FS_ORPHAN_DIR;
			break;
		}
		n = node_get(k->parent);
		if (!n)
			return -ESTALE;
	}
	if (depth == 0) {
		*path = g_strdup("/");
		return 0;
	}
	GString *s = g_string_new(top);
	while (depth)
		g_string_append_printf(s, "/%s", parts[--depth]);
	*path = g_string_free(s, FALSE);
	return 0;
}

int fs_nodes_path(fuse_ino_t ino, char **path)
{
	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	int rc = n ? build_path(n, path) : -ESTALE;
	g_mutex_unlock(&table.lock);
	return rc;
}

int fs_nodes_child(fuse_ino_t parent, const char *name, char **path)
{
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	char *dir;
	int rc = fs_nodes_path(parent, &dir);
	if (rc < 0)
		return rc;
	*path = g_strconcat(strcmp(dir, "/") ? dir : "", "/", name, NULL);
	g_free(dir);
	return 0;
}

/* A 64-bit mix (splitmix64's finaliser). */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

fuse_ino_t fs_nodes_ino(fuse_ino_t parent, const char *name, uint64_t ident,
                        const struct stat *st)
{
	if (!ident) {
		/* No identity: the node the name has, if of the same type;
		 * else one from the answering member's inode. */
		fuse_ino_t known = 0;
		g_mutex_lock(&table.lock);
		const name_key *k = name_get(parent, name);
		if (k && k->node->type == (st->st_mode & S_IFMT))
			known = k->node->ino;
		g_mutex_unlock(&table.lock);
		if (known)
			return known;
		ident = mix((uint64_t)st->st_ino ^ mix((uint64_t)st->st_dev));
	}
	return fs_nodes_ident_ino(ident);
}

fuse_ino_t fs_nodes_ident_ino(uint64_t ident)
{
	return ident > FUSE_ROOT_ID ? ident : ident + 2;
}

void fs_nodes_add(fuse_ino_t parent, const char *name, fuse_ino_t ino, const struct stat *st,
                  uint64_t ident)
{
	mode_t type = st->st_mode & S_IFMT;
	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	if (!n) {
		n = node_make(ino, type);
		n->unidentified = !ident || fs_nodes_ident_ino(ident) != ino;
	}
	n->type = type;
	n->seen_dev = st->st_dev;
	n->seen_ino = st->st_ino;
	n->nlookup++;
	if (node_get(parent))
		name_bind(parent, name, n)->given_us = g_get_monotonic_time();
	g_mutex_unlock(&table.lock);
}

bool fs_nodes_identified(fuse_ino_t ino)
{
	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	bool identified = n && !n->unidentified;
	g_mutex_unlock(&table.lock);
	return identified;
}

bool fs_nodes_seen_other(fuse_ino_t ino, const struct stat *st, char **path)
{
	bool other = false;

	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	if (n && n->names->len && (n->seen_dev || n->seen_ino) &&
	    (n->seen_dev != st->st_dev || n->seen_ino != st->st_ino))
		other = build_path(n, path) == 0;
	g_mutex_unlock(&table.lock);
	return other;
}

void fs_nodes_forget(fuse_ino_t ino, uint64_t count)
{
	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	if (n) {
		n->nlookup = count < n->nlookup ? n->nlookup - count : 0;
		node_maybe_free(n);
	}
	g_mutex_unlock(&table.lock);
}

void fs_nodes_unlinked(fuse_ino_t parent, const char *name)
{
	g_mutex_lock(&table.lock);
	name_key *k = name_get(parent, name);
	if (k)
		name_drop(k);
	g_mutex_unlock(&table.lock);
}

void fs_nodes_renamed(fuse_ino_t p1, const char *n1, fuse_ino_t p2, const char *n2,
                      unsigned flags)
{
	g_mutex_lock(&table.lock);
	name_key *k1 = name_get(p1, n1), *k2 = name_get(p2, n2);
	if (k1 && k1 == k2) {
		g_mutex_unlock(&table.lock);
		return;
	}
	node *from = k1 ? k1->node : NULL, *to = k2 ? k2->node : NULL;
	if (k1)
		name_drop(k1);
	if (k2)
		name_drop(k2);
	if (from)
		name_bind(p2, n2, from);
	if (to && (flags & RENAME_EXCHANGE))
		name_bind(p1, n1, to);
	g_mutex_unlock(&table.lock);
}

void fs_nodes_opened(fuse_ino_t ino)
{
	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	if (n)
		n->opens++;
	g_mutex_unlock(&table.lock);
}

bool fs_nodes_open(fuse_ino_t ino)
{
	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	bool open = n && n->opens > 0;
	g_mutex_unlock(&table.lock);
	return open;
}

char *fs_nodes_closed(fuse_ino_t ino)
{
	char *orphan = NULL;

	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	if (n && n->opens > 0 && --n->opens == 0) {
		for (guint i = 0; i < n->names->len; i++) {
			name_key *k = n->names->pdata[i];
			if (k->parent != ORPHAN_PARENT)
				continue;
			orphan = g_strconcat(FS_ORPHAN_DIR "/", k->name, NULL);
			name_drop(k);
			break;
		}
		node_maybe_free(n);
	}
	g_mutex_unlock(&table.lock);
	return orphan;
}

bool fs_nodes_orphan(fuse_ino_t ino)
{
	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	bool orphan = n && n->names->len &&
	              ((const name_key *)n->names->pdata[0])->parent == ORPHAN_PARENT;
	g_mutex_unlock(&table.lock);
	return orphan;
}

char *fs_nodes_orphan_for(fuse_ino_t parent, const char *name)
{
	char *orphan = NULL;

	g_mutex_lock(&table.lock);
	const name_key *k = name_get(parent, name);
	if (k && k->node->opens > 0 && k->node->type != S_IFDIR && k->node->names->len == 1)
		orphan = g_strdup_printf(FS_ORPHAN_DIR "/" FS_ORPHAN_PREFIX "%08x%08x",
		                         (unsigned)k->node->ino, ++table.orphans);
	g_mutex_unlock(&table.lock);
	return orphan;
}

void fs_nodes_orphaned(fuse_ino_t parent, const char *name, const char *orphan)
{
	g_mutex_lock(&table.lock);
	name_key *k = name_get(parent, name);
	if (k) {
		node *n = k->node;
		name_drop(k);
		name_bind(ORPHAN_PARENT, strrchr(orphan, '/') + 1, n);
	}
	g_mutex_unlock(&table.lock);
}

fuse_ino_t fs_nodes_lookup_name(fuse_ino_t parent, const char *name)
{
	g_mutex_lock(&table.lock);
	const name_key *k = name_get(parent, name);
	fuse_ino_t ino = k ? k->node->ino : 0;
	g_mutex_unlock(&table.lock);
	return ino;
}

void fs_nodes_lookup_names(fuse_ino_t parent, const char *const *names, size_t count,
                           fuse_ino_t *inos, int64_t *given_us)
{
	name_key **keys = g_new(name_key *, count);
	g_mutex_lock(&table.lock);
	names_find_many(&table.names, parent, names, count, keys);
	for (size_t i = 0; i < count; i++) {
		inos[i] = keys[i] ? keys[i]->ino : 0;
		given_us[i] = keys[i] ? keys[i]->given_us : 0;
	}
	g_mutex_unlock(&table.lock);
	g_free(keys);
}

bool fs_nodes_same_version(fuse_ino_t ino, const struct stat *st)
{
	bool same = false;

	g_mutex_lock(&table.lock);
	node *n = node_get(ino);
	if (n) {
		same = n->size == st->st_size && n->mtime.tv_sec == st->st_mtim.tv_sec &&
		       n->mtime.tv_nsec == st->st_mtim.tv_nsec;
		n->size = st->st_size;
		n->mtime = st->st_mtim;
	}
	g_mutex_unlock(&table.lock);
	return same;
}

/* ---- notifications ---- */

enum inval_kind { INVAL_INODE, INVAL_ENTRY, INVAL_STOP };

/* A caller that waits until its notification is sent. */
typedef struct waiter {
	GMutex lock; /* guards done; order: a leaf */
	GCond sent;
	bool done;
} waiter;

typedef struct inval {
	enum inval_kind kind;
	fuse_ino_t ino;  /* the node, or the parent of the name */
	char *name;
	waiter *w;       /* or NULL */
} inval;

/* How often the thread polls the watch, in microseconds. */
#define WATCH_US 100000

static struct {
	struct fuse_session *se;
	GAsyncQueue *queue; /* inval * */
	GThread *thread;
	uint64_t (*watch)(void *);
	void *arg;
} notify;

static void send_all(void)
{
	g_mutex_lock(&table.lock);
	GList *ids = g_hash_table_get_keys(table.nodes);
	GArray *inos = g_array_new(FALSE, FALSE, sizeof(fuse_ino_t));
	for (GList *l = ids; l; l = l->next)
		g_array_append_val(inos, *(fuse_ino_t *)l->data);
	g_list_free(ids);
	g_mutex_unlock(&table.lock);
	for (guint i = 0; i < inos->len; i++)
		fuse_lowlevel_notify_inval_inode(notify.se, g_array_index(inos, fuse_ino_t, i), -1, 0);
	g_array_free(inos, TRUE);
}

static void *notify_thread(void *arg)
{
	(void)arg;
	uint64_t seen = notify.watch(notify.arg);
	for (;;) {
		inval *iv = g_async_queue_timeout_pop(notify.queue, WATCH_US);
		uint64_t now = notify.watch(notify.arg);
		if (now != seen) {
			seen = now;
			send_all();
		}
		if (!iv)
			continue;
		enum inval_kind kind = iv->kind;
		if (kind == INVAL_INODE)
			fuse_lowlevel_notify_inval_inode(notify.se, iv->ino, -1, 0);
		else if (kind == INVAL_ENTRY)
			fuse_lowlevel_notify_inval_entry(notify.se, iv->ino, iv->name, strlen(iv->name));
		if (iv->w) {
			g_mutex_lock(&iv->w->lock);
			iv->w->done = true;
			g_cond_signal(&iv->w->sent);
			g_mutex_unlock(&iv->w->lock);
		}
		g_free(iv->name);
		g_free(iv);
		if (kind == INVAL_STOP)
			return NULL;
	}
}

static void enqueue(enum inval_kind kind, fuse_ino_t ino, const char *name, waiter *w)
{
	if (!notify.queue)
		return;
	inval *iv = g_new(inval, 1);
	*iv = (inval){ kind, ino, g_strdup(name), w };
	g_async_queue_push(notify.queue, iv);
}

void fs_nodes_notify_start(struct fuse_session *se, uint64_t (*watch)(void *), void *arg)
{
	notify.se = se;
	notify.watch = watch;
	notify.arg = arg;
	notify.queue = g_async_queue_new();
	notify.thread = g_thread_new("ecfs-notify", notify_thread, NULL);
}

void fs_nodes_notify_stop(void)
{
	if (!notify.thread)
		return;
	enqueue(INVAL_STOP, 0, NULL, NULL);
	g_thread_join(notify.thread);
	notify.thread = NULL;
	g_async_queue_unref(notify.queue);
	notify.queue = NULL;
}

void fs_nodes_inval(fuse_ino_t ino)
{
	enqueue(INVAL_INODE, ino, NULL, NULL);
}

void fs_nodes_inval_wait(fuse_ino_t ino)
{
	waiter w = { .done = false };
	if (!notify.queue)
		return;
	g_mutex_init(&w.lock);
	g_cond_init(&w.sent);
	enqueue(INVAL_INODE, ino, NULL, &w);
	g_mutex_lock(&w.lock);
	while (!w.done)
		g_cond_wait(&w.sent, &w.lock);
	g_mutex_unlock(&w.lock);
	g_cond_clear(&w.sent);
	g_mutex_clear(&w.lock);
}

void fs_nodes_inval_path(const char *path)
{
	gchar **parts = g_strsplit(path, "/", -1);
	fuse_ino_t parent = FUSE_ROOT_ID, ino = FUSE_ROOT_ID;
	const char *last = NULL;

	g_mutex_lock(&table.lock);
	for (gchar **p = parts; *p && ino; p++) {
		if (!**p)
			continue;
		parent = ino;
		last = *p;
		const name_key *k = name_get(parent, last);
		ino = k ? k->node->ino : 0;
	}
	g_mutex_unlock(&table.lock);
	if (last && parent)
		enqueue(INVAL_ENTRY, parent, last, NULL);
	if (ino)
		enqueue(INVAL_INODE, ino, NULL, NULL);
	g_strfreev(parts);
}
