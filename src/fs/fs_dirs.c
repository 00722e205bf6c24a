/* SPDX-License-Identifier: MIT */
/*
 * Directory operations.  Directories exist on every member (mkdir and rmdir
 * are mirrored); a listing is the union of the entries of the members in
 * service, as getattr finds a name on any member that has it, so a name
 * some members have lost (a deleted chunk file) is still listed.  The volume's
 * own metadata folder (/.ecfs) is never listed.  Asked for attributes too
 * (readdirplus), a reply takes those of its names from one member, one
 * call for them all, and keeps them for getattr (attr_cache.h).
 */
#include "fs_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "dirstamps.h"
#include "ecfile.h"
#include "fs_dirsaved.h"
#include "listing.h"
#include "listing_batch.h"
#include "memberops.h"
#include "space.h"
#include "xattrs.h"

/* The inode number of a listed name whose node is not known (libfuse's
 * path API gives the same). */
#define FUSE_UNKNOWN_INO 0xffffffffu

/* An open directory: the path it was opened with and a window on its
 * listing (the union of the members' entries), tune.listing_batch names
 * at most (listing_batch.h).  The offsets handed to the kernel are the
 * names' keys, so a readdir at any offset is answered from the window or
 * from one read again after that offset: the window is only kept
 * between requests while all the handles' windows together hold
 * KEPT_BATCHES batches of names at most. */
struct dir_handle {
	char *path;            /* as opened, if the node has lost its name */
	bool is_root;          /* hide the metadata folder */
	listing_batch *batch;  /* NULL: none */
	bool counted;          /* batch counts in kept */
	guint total;           /* names in the listing the batch was taken from */
};

#define KEPT_BATCHES 16

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER; /* guards kept; a leaf */
static size_t kept; /* names in the windows kept by all handles */

static pthread_once_t seed_once = PTHREAD_ONCE_INIT;
static listing_key_seed seed; /* the keys' for this mount, set once */

static void make_seed(void)
{
	listing_key_seed_random(&seed);
}

static struct dir_handle *dir_of(const struct fuse_file_info *fi)
{
	return (struct dir_handle *)(uintptr_t)fi->fh;
}

static guint batch_max(void)
{
	unsigned max = volume_settings(fs_volume())->listing_batch;
	return max ? max : VOLUME_DEFAULT_LISTING_BATCH;
}

/* Names a member's listing is read whole up to (and may be held, within
 * DIRNAMES_MAX); past them, through a window. */
#define READ_WHOLE_BATCHES 16

static guint read_whole_max(void)
{
	return MIN(DIRNAMES_MAX, READ_WHOLE_BATCHES * batch_max());
}

static void free_batch(struct dir_handle *h)
{
	if (h->counted) {
		pthread_mutex_lock(&kept_lock);
		kept -= listing_batch_len(h->batch);
		pthread_mutex_unlock(&kept_lock);
	}
	listing_batch_free(h->batch);
	h->batch = NULL;
	h->counted = false;
}

/* After a reply: keeps h's window for its next readdir if the windows
 * kept stay within their bound, else frees it (the next reads it again). */
static void keep_batch(struct dir_handle *h)
{
	if (!h->batch || h->counted)
		return;
	size_t len = listing_batch_len(h->batch);
	pthread_mutex_lock(&kept_lock);
	bool room = kept + len <= (size_t)KEPT_BATCHES * batch_max();
	if (room)
		kept += len;
	pthread_mutex_unlock(&kept_lock);
	if (room)
		h->counted = true;
	else
		free_batch(h);
}

static int make_dir(fuse_req_t req, const char *path, mode_t mode, nsops_new_dir *nd)
{
	if (volume_path_reserved(path))
		return -EPERM;
	/* A directory made in a setgid directory inherits S_ISGID from the
	 * member filesystem itself, since member directories carry the mode. */
	*nd = (nsops_new_dir){ .mode = xattrs_create_mode(fs_volume(), path, mode & 07777,
	                                                  fuse_req_ctx(req)->umask),
	                       .ident = objects_new_ident() };
	fs_new_owner(req, &nd->owner);
	int rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST);
	if (rc < 0)
		return rc;
	return nsops_mkdir(fs_volume(), path, nd);
}

void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	char *path = NULL;
	nsops_new_dir nd;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	rc = make_dir(req, path, mode, &nd);
	/* The attributes taken as it was made, for a name the table does
	 * not know yet (else fs_entry keeps its node). */
	struct fuse_entry_param e;
	if (rc == 0 && nd.have_st && !fs_nodes_lookup_name(parent, name)) {
		fs_entry_fill(&e, fs_nodes_ino(parent, name, nd.ident, &nd.st), &nd.st);
		fs_nodes_add(parent, name, e.ino, &nd.st, nd.ident);
	} else if (rc == 0) {
		rc = fs_entry(parent, name, path, 0, &e);
	}
	g_free(path);
	/* Known whole before the kernel can make a name in it. */
	if (rc == 0)
		fs_dirnames_made(e.ino, &nd.on);
	fs_dirnames_changed(parent, name, S_IFDIR, rc);
	if (rc < 0)
		fs_reply_err(req, rc);
	else if (fuse_reply_entry(req, &e) != 0)
		fs_nodes_forget(e.ino, 1); /* the request was interrupted */
}

void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc == 0 && volume_path_reserved(path))
		rc = -ENOENT;
	if (rc == 0)
		rc = nsops_rmdir(fs_volume(), path);
	if (rc == 0) {
		fs_dirnames_drop(fs_nodes_lookup_name(parent, name));
		fs_dirnames_removed(parent, name);
		fs_nodes_unlinked(parent, name);
	} else {
		fs_dirnames_drop(parent);
	}
	g_free(path);
	fs_reply_err(req, rc);
}

/* ---- the kernel's cache of listings ---- */

/* When each directory was last listed whole, and the count of changes
 * (mop_changes) before: the kernel may keep a listing (FOPEN_CACHE_DIR)
 * and serve the next opendir from it while no change was made through the
 * daemon since, for entry_timeout at most, which bounds how long a change
 * behind the daemon's back goes unseen, as for a name.  The kernel drops
 * it itself on a change made through the mount in that directory. */
struct listed_at {
	int64_t when_us;
	uint64_t changes;
};

#define LISTED_MAX 16384

static pthread_mutex_t listed_lock = PTHREAD_MUTEX_INITIALIZER; /* guards listed; a leaf */
static GHashTable *listed; /* fuse_ino_t -> struct listed_at */

static void note_listed(fuse_ino_t ino, uint64_t changes)
{
	struct listed_at *at = g_new(struct listed_at, 1);
	*at = (struct listed_at){ g_get_monotonic_time(), changes };
	pthread_mutex_lock(&listed_lock);
	if (!listed || g_hash_table_size(listed) >= LISTED_MAX) {
		if (listed)
			g_hash_table_destroy(listed);
		listed = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
	}
	g_hash_table_replace(listed, g_memdup2(&(gint64){ (gint64)ino }, sizeof(gint64)), at);
	pthread_mutex_unlock(&listed_lock);
}

/* True if the kernel's listing of ino, made by the daemon's last listing
 * of it, still holds. */
static bool listing_stands(fuse_ino_t ino)
{
	gint64 key = (gint64)ino;
	bool stands = false;
	pthread_mutex_lock(&listed_lock);
	const struct listed_at *at = listed ? g_hash_table_lookup(listed, &key) : NULL;
	if (at)
		stands = at->changes == fs_stamp().changes &&
		         g_get_monotonic_time() - at->when_us < fs_timeouts()->entry * 1e6;
	pthread_mutex_unlock(&listed_lock);
	return stands;
}

void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	/* Checks that it is a directory the daemon can read; the listing is
	 * made by readdir. */
	if (rc == 0)
		rc = nsops_opendir(fs_volume(), path);
	if (rc < 0) {
		g_free(path);
		fs_reply_err(req, rc);
		return;
	}
	struct dir_handle *h = g_new0(struct dir_handle, 1);
	h->path = path;
	h->is_root = ino == FUSE_ROOT_ID;
	fi->fh = (uintptr_t)h;
	fi->cache_readdir = fs_timeouts()->entry > 0;
	fi->keep_cache = fi->cache_readdir && listing_stands(ino);
	if (fuse_reply_open(req, fi) != 0)
		fs_releasedir(NULL, ino, fi);
}

/* True for an entry of the root that names the volume's metadata. */
static bool hidden_in_root(const char *name)
{
	char path[NAME_MAX + 2];
	path[0] = '/';
	strncpy(path + 1, name, NAME_MAX);
	path[NAME_MAX + 1] = '\0';
	return volume_path_reserved(path);
}

/* The listing of ino saved by the last unmount (fs_dirsaved.h), if the
 * first `width` members that answer all show the stamps it was saved
 * with: their directories then hold exactly its names, and a listing of
 * them would give those.  Moves their atimes as a listing does.  Held
 * from then on (since: as fs_dirnames_listed). */
static listing *saved_listing(fuse_ino_t ino, const char *path, int width, uint64_t since)
{
	volume *v = fs_volume();
	saved_dir d;
	if (!fs_dirsaved_take(ino, &d))
		return NULL;
	nsops_dir_look looks[64] = { 0 };
	int err;
	uint64_t whole = nsops_touch_dir(v, path, looks, width, &err);
	attr_cache_listed(fs_attrs());
	bool same = __builtin_popcountll(whole) >= width;
	dir_members on = { .mask = whole };
	for (int i = 0; same && i < volume_n(v); i++) {
		if (!(whole >> i & 1))
			continue;
		same = d.members >> i & 1 && looks[i].seen && dirstamp_same(&looks[i].st, &d.stamps[i]);
		on.ino[i] = looks[i].st.ino;
	}
	if (!same) {
		listing_unref(d.names);
		return NULL;
	}
	for (int i = 0; i < volume_n(v); i++)
		if (whole >> i & 1)
			dirstamps_known(mop_dirstamps(v), i, &looks[i].st);
	fs_dirnames_listed(ino, d.names, since, &on);
	volume_count_listed_saved(v);
	return d.names;
}

/* If a member of whole went past what a held listing may take (its
 * names are in its window then), offers the names of every member of
 * whole to h's window and clears the parts: true.  Else false, the
 * parts as read. */
static bool windows_of_parts(struct dir_handle *h, nsops_dir_part *parts,
                             listing_batch **windows, uint64_t whole,
                             bool (*hidden)(const char *))
{
	int n = volume_n(fs_volume());
	bool spilled = false;
	for (int i = 0; i < n; i++)
		spilled |= (whole >> i & 1) && parts[i].part.overflowed;
	if (!spilled)
		return false;
	for (int i = 0; i < n; i++) {
		if ((whole >> i & 1) && parts[i].part.overflowed) {
			listing_batch_finish(windows[i]);
			listing_batch_offer_batch(h->batch, windows[i]);
		} else if (whole >> i & 1) {
			listing_batch_sink to = { h->batch, &seed };
			listing_part_offer(&parts[i].part, listing_batch_sink_offer, &to, hidden);
		}
		listing_part_clear(&parts[i].part);
	}
	return true;
}

/* Lists the directory ino at path: from what the daemon holds of its
 * names (fs_dirnames.h), else the union of the names the members that
 * answer hold (not one being rebuilt), read at once (nsops_list), so
 * that a name some members lost, or a create cut short made on a few
 * only, is listed (listing.h).  While the names are settled
 * (volume_names_settled), the first m + 1 of them hold every name that k
 * members hold; a member among them that cannot list it (broken, or
 * without the directory: also all of them, if the others still have it)
 * makes the listing read them all.  A listing of as many members as that
 * takes is held from then on.  The listing in *out (listing_unref it);
 * or, where a member holds more names than read_whole_max, NULL, and the
 * names of the members read offered to h's window, each
 * member's read through a window of its own, never whole. */
static int make_listing(struct dir_handle *h, fuse_ino_t ino, const char *path, listing **out)
{
	volume *v = fs_volume();
	nsops_dir_part parts[64];
	int err;
	bool settled = volume_names_settled(v);
	int width = settled ? volume_m(v) + 1 : volume_n(v), answering = 0;
	bool (*hidden)(const char *) = h->is_root ? hidden_in_root : NULL;

	uint64_t since = fs_dirnames_generation();
	if ((*out = fs_dirnames_listing(ino))) {
		nsops_touch_dir(v, path, NULL, width, &err);
		attr_cache_listed(fs_attrs());
		return 0;
	}
	if (settled && (*out = saved_listing(ino, path, width, since)))
		return 0;
	listing_batch *windows[64];
	listing_batch_sink sinks[64];
	for (int i = 0; i < volume_n(v); i++) {
		windows[i] = listing_batch_new(batch_max());
		listing_batch_start(windows[i], listing_batch_after(h->batch));
		sinks[i] = (listing_batch_sink){ windows[i], &seed };
		listing_part_init_sink(&parts[i].part, listing_batch_sink_offer, &sinks[i], hidden,
		                       read_whole_max());
		parts[i].stable = false;
		answering += volume_member_answers(v, i);
	}
	uint64_t whole = nsops_list(v, path, parts, width, &err);
	if (__builtin_popcountll(whole) < width && width < answering)
		whole = nsops_list(v, path, parts, volume_n(v), &err);
	attr_cache_listed(fs_attrs()); /* the listing may have moved the directory's atime */
	bool spilled = windows_of_parts(h, parts, windows, whole, hidden);
	for (int i = 0; i < volume_n(v); i++)
		listing_batch_free(windows[i]);
	if (spilled)
		return whole || err == -ENOENT ? 0 : err;
	/* The members whose directory holds exactly the listing's names: all
	 * that were read, if each holds as many names as their union. */
	guint counts[64];
	listing_part union_parts[64];
	for (int i = 0; i < volume_n(v); i++) {
		counts[i] = whole >> i & 1 ? listing_part_count(&parts[i].part, hidden) : 0;
		union_parts[i] = parts[i].part;
	}
	listing *l = *out = listing_union(union_parts, volume_n(v), whole, hidden);
	dir_members on = { 0 };
	for (int i = 0; i < volume_n(v); i++) {
		if (!(whole >> i & 1) || counts[i] != listing_len(l) || !parts[i].stable)
			continue;
		on.mask |= 1ull << i;
		on.ino[i] = parts[i].st.ino;
		dirstamps_known(mop_dirstamps(v), i, &parts[i].st);
	}
	if (__builtin_popcountll(whole) >= width)
		fs_dirnames_listed(ino, l, since, on.mask == whole ? &on : NULL);
	return whole || err == -ENOENT ? 0 : err; /* removed while open: empty */
}

/* What a readdirplus reply gives with its names: what a lookup of each
 * would answer, taken from one member for the names of one reply. */
struct reply_attrs {
	guint count;       /* the reply's names */
	struct stat *st;   /* count of them */
	uint64_t *ident;   /* their identities (objects_stat_ident) */
	bool *have;        /* st and ident hold */
};

/* True if the kernel was given the name with its attributes (given_us,
 * fs_nodes_lookup_names) so lately that it still holds both: the first
 * half of the shorter of the two timeouts.  A reply need not give them
 * again: `rm -r` reads each directory twice before it removes the
 * names, and `find` or `du` right after `ls -l` read it again. */
static bool kernel_holds(int64_t given_us, int64_t now_us)
{
	const struct fs_timeouts *t = fs_timeouts();
	double held = t->entry < t->attr ? t->entry : t->attr;
	return given_us > 0 && now_us - given_us < held * 5e5;
}

/* The attributes of the entries [first, first + count) of the window the
 * kernel does not hold (kernel_holds, by given_us), and each for
 * attr_cache.h's next getattr of its path (ls -l). */
static void take_attrs(struct dir_handle *h, const char *path, guint first,
                       const int64_t *given_us, struct reply_attrs *ra)
{
	ra->st = g_new(struct stat, ra->count);
	ra->ident = g_new(uint64_t, ra->count);
	ra->have = g_new0(bool, ra->count);
	struct listing_entry *asked_for = g_new(struct listing_entry, ra->count);
	guint *at = g_new(guint, ra->count), ask = 0;
	int64_t now = g_get_monotonic_time();
	for (guint i = 0; i < ra->count; i++) {
		const struct listing_entry *e = listing_batch_at(h->batch, first + i);
		/* . and .. never come with attributes (nsops_stat_names) */
		if (kernel_holds(given_us[i], now) || !strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		at[ask] = i;
		asked_for[ask++] = *e;
	}
	struct stat *st = g_new(struct stat, ask);
	uint64_t *ident = g_new(uint64_t, ask);
	bool *have = g_new0(bool, ask);
	attr_stamp asked = fs_stamp();
	if (ask && nsops_stat_names(fs_volume(), path, asked_for, ask, st, ident, have) < 0)
		memset(have, 0, ask * sizeof(*have));
	for (guint j = 0; j < ask; j++) {
		if (!have[j])
			continue;
		ra->st[at[j]] = st[j];
		ra->ident[at[j]] = ident[j];
		ra->have[at[j]] = true;
		char *child = g_strconcat(strcmp(path, "/") ? path : "", "/", asked_for[j].name,
		                          NULL);
		attr_cache_put(fs_attrs(), child, &asked, &st[j]);
		g_free(child);
	}
	g_free(asked_for);
	g_free(at);
	g_free(st);
	g_free(ident);
	g_free(have);
}

static void free_attrs(struct reply_attrs *ra)
{
	g_free(ra->st);
	g_free(ra->ident);
	g_free(ra->have);
}

/* How many entries of the window from first fill a reply of size bytes
 * (plus: readdirplus), ending after the last of names of one key if it
 * can (listing_batch.h). */
static guint reply_fit(fuse_req_t req, const struct dir_handle *h, guint first, size_t size,
                       bool plus)
{
	size_t used = 0;
	guint i = first;
	for (; i < listing_batch_len(h->batch); i++) {
		const char *name = listing_batch_at(h->batch, i)->name;
		used += plus ? fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0)
		             : fuse_add_direntry(req, NULL, 0, name, NULL, 0);
		if (used > size)
			break;
	}
	guint end = i;
	while (end > first && listing_batch_splits(h->batch, end))
		end--;
	return (end > first ? end : i) - first;
}

/* The node ids of entries [first, first + count) that the kernel knows,
 * 0 for the others, and when it was last given each with attributes
 * (given_us), all asked at once (fs_nodes_lookup_names). */
static fuse_ino_t *known_inos(fuse_ino_t ino, const struct dir_handle *h, guint first,
                              guint count, int64_t *given_us)
{
	const char **names = g_new(const char *, count);
	fuse_ino_t *inos = g_new(fuse_ino_t, count);
	for (guint i = 0; i < count; i++)
		names[i] = listing_batch_at(h->batch, first + i)->name;
	fs_nodes_lookup_names(ino, names, count, inos, given_us);
	g_free(names);
	return inos;
}

/* Adds an entry of the listing to the reply in buf (size bytes, used of
 * them); false if it does not fit.  plus: readdirplus, whose entries
 * with attributes (st not NULL) count as lookups of their names; known:
 * the node id of the name, if the kernel knows it (else 0). */
static bool add_entry(fuse_req_t req, fuse_ino_t ino, const struct listing_entry *e, bool plus,
                      const struct stat *st, uint64_t ident, fuse_ino_t known, char *buf,
                      size_t size, size_t *used, off_t next)
{
	struct fuse_entry_param ep = { .attr.st_mode = (mode_t)DTTOIF(e->type) };
	ep.attr.st_ino = known ? known : FUSE_UNKNOWN_INO;
	if (st) {
		fs_entry_fill(&ep, fs_entry_ino(ino, e->name, ident, st), st);
		if (!ep.ino) /* refused: a plain entry, whose lookup fails */
			ep.attr.st_ino = FUSE_UNKNOWN_INO;
	}
	size_t n = plus ? fuse_add_direntry_plus(req, buf + *used, size - *used, e->name, &ep, next)
	                : fuse_add_direntry(req, buf + *used, size - *used, e->name, &ep.attr, next);
	if (n > size - *used)
		return false;
	*used += n;
	if (ep.ino)
		fs_nodes_add(ino, e->name, ep.ino, st, ident);
	return true;
}

/* Takes h's window of the names after offset off from a listing of the
 * directory (make_listing): the listing itself is only held for this
 * request (or by fs_dirnames.h, within its bound), and one of a member
 * past read_whole_max names not even so. */
static int load_batch(struct dir_handle *h, fuse_ino_t ino, const char *path, uint64_t off)
{
	pthread_once(&seed_once, make_seed);
	free_batch(h);
	h->batch = listing_batch_new(batch_max());
	listing_batch_start(h->batch, off);
	listing *l = NULL;
	int rc = make_listing(h, ino, path, &l);
	if (l)
		listing_batch_offer_listing(h->batch, l, &seed);
	listing_batch_finish(h->batch);
	h->total = l ? listing_len(l) : G_MAXUINT; /* else larger than any held */
	listing_unref(l);
	if (rc < 0)
		free_batch(h);
	return rc;
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                 struct fuse_file_info *fi, bool plus)
{
	struct dir_handle *h = dir_of(fi);
	/* The directory's path now, else the one it was opened with. */
	char *path = NULL;
	const char *where = fs_nodes_path(ino, &path) == 0 ? path : h->path;
	guint first = 0;
	if (off == 0 || !h->batch || !listing_batch_find(h->batch, (uint64_t)off, &first)) {
		/* First call, rewinddir, or past the window: a fresh listing. */
		uint64_t changes = fs_stamp().changes;
		int rc = load_batch(h, ino, where, (uint64_t)off);
		if (rc < 0) {
			g_free(path);
			fs_reply_err(req, rc);
			return;
		}
		if (off == 0)
			note_listed(ino, changes);
		first = 0;
	}
	/* readdirplus: the names come with what a lookup of each would
	 * answer, so the kernel need not look them up one by one.  The
	 * kernel asks for them in the first reply of every listing, and in
	 * later ones only when names are being looked up: a first reply that
	 * holds less than half of the listing gives names only, since the
	 * lookups it would spare are few of those a tool that stats every
	 * name makes, and a tool that only lists pays for it.  Names the
	 * kernel holds with their attributes go without (kernel_holds). */
	guint fit = reply_fit(req, h, first, size, plus);
	bool with_attrs = plus && (off > 0 || 2 * (size_t)fit >= h->total);
	int64_t *given_us = g_new(int64_t, fit);
	fuse_ino_t *known = known_inos(ino, h, first, fit, given_us);
	struct reply_attrs ra = { .count = with_attrs ? fit : 0 };
	if (with_attrs)
		take_attrs(h, where, first, given_us, &ra);
	g_free(given_us);
	g_free(path);
	char *buf = g_malloc(size);
	size_t used = 0;
	for (guint r = 0; r < fit; r++) {
		guint i = first + r;
		bool with = r < ra.count && ra.have[r];
		if (!add_entry(req, ino, listing_batch_at(h->batch, i), plus,
		               with ? &ra.st[r] : NULL, with ? ra.ident[r] : 0, known[r], buf, size,
		               &used, (off_t)listing_batch_offset(h->batch, i)))
			break; /* the reply is full: the kernel asks again after i - 1 */
	}
	g_free(known);
	free_attrs(&ra);
	keep_batch(h);
	fuse_reply_buf(req, buf, used);
	g_free(buf);
}

void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, false);
}

void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	list(req, ino, size, off, fi, true);
}

void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir_handle *h = dir_of(fi);
	free_batch(h);
	g_free(h->path);
	g_free(h);
	if (req)
		fuse_reply_err(req, 0);
}

void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct dir_handle *h = dir_of(fi);
	/* By its current path, else the one it was opened with; a directory
	 * removed meanwhile has nothing left to sync. */
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	rc = nsops_fsyncdir(fs_volume(), rc == 0 ? path : h->path, datasync);
	g_free(path);
	fs_reply_err(req, rc == -ENOENT ? 0 : rc);
}
