/* SPDX-License-Identifier: MIT */
/*
 * Directory operations.  Directories exist on every member (mkdir and rmdir
 * are mirrored); a listing is the union of the healthy members' entries, as
 * getattr finds a name on any member that has it, so a name one member has
 * lost (a deleted chunk file) is still listed.  The volume's own metadata
 * folder (/.ecfs) is never listed.  Asked for attributes too (readdirplus),
 * a listing gives those it has at no extra member call (attr_cache.h).
 */
#include "fs_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "ecfile.h"
#include "memberio.h"
#include "memberops.h"
#include "mirror.h"
#include "space.h"
#include "xattrs.h"

/* The inode number of a listed name whose node is not known (libfuse's
 * path API gives the same). */
#define FUSE_UNKNOWN_INO 0xffffffffu

/* One name of a listing. */
struct dir_entry {
	char *name;
	unsigned char type; /* DT_* */
	bool plus;          /* st is what getattr answers for it */
	struct stat st;
	uint64_t ident;     /* with st: its identity (ecfile_stat_ident) */
};

/* An open directory: the path it was opened with and, from the first
 * readdir at offset 0, the listing (the union of the members' entries);
 * offsets handed to the kernel are indices in it. */
struct dir_handle {
	char *path;       /* as opened, if the node has lost its name */
	bool is_root;     /* hide the metadata folder */
	GArray *entries;  /* struct dir_entry; NULL until listed */
	attr_stamp stamp; /* read before the listing */
};

static struct dir_handle *dir_of(const struct fuse_file_info *fi)
{
	return (struct dir_handle *)(uintptr_t)fi->fh;
}

static void free_entries(struct dir_handle *h)
{
	if (!h->entries)
		return;
	for (guint i = 0; i < h->entries->len; i++)
		g_free(g_array_index(h->entries, struct dir_entry, i).name);
	g_array_free(h->entries, TRUE);
	h->entries = NULL;
}

struct new_dir {
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t ident; /* its identity (ecfile.h), the same on every member */
};

static int mkdir_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_dir *nd = arg;
	int rc = mop_mkdirat(fs_volume(), member, dirfd, leaf, nd->mode);
	if (rc == 0)
		rc = fs_chown_new(member, dirfd, leaf, nd->uid, nd->gid);
	if (rc == 0)
		ecfile_store_object_ident(fs_volume(), member, dirfd, leaf, nd->ident);
	return rc;
}

static int make_dir(fuse_req_t req, const char *path, mode_t mode)
{
	if (volume_path_reserved(path))
		return -EPERM;
	/* A directory made in a setgid directory inherits S_ISGID from the
	 * member filesystem itself, since member directories carry the mode. */
	struct new_dir nd = { .mode = xattrs_create_mode(fs_volume(), path, mode & 07777,
	                                                 fuse_req_ctx(req)->umask),
	                      .ident = ecfile_new_ident() };
	int rc = fs_new_owner(req, path, &nd.uid, &nd.gid);
	if (rc == 0)
		rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST);
	if (rc < 0)
		return rc;
	intent_args a = { INTENT_MKDIR, .from = path, .mode = nd.mode, .uid = nd.uid, .gid = nd.gid };
	return mirror_apply_logged(fs_volume(), &a, mkdir_member, NULL, &nd, "mkdir");
}

void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	fs_reply_entry(req, parent, name, path, make_dir(req, path, mode));
	g_free(path);
}

static int rmdir_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_unlinkat(fs_volume(), member, dirfd, leaf, AT_REMOVEDIR);
}

void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc == 0 && volume_path_reserved(path))
		rc = -ENOENT;
	if (rc == 0) {
		intent_args a = { INTENT_RMDIR, .from = path };
		rc = mirror_apply_logged(fs_volume(), &a, rmdir_member, NULL, NULL, "rmdir");
	}
	if (rc == 0)
		fs_nodes_unlinked(parent, name);
	g_free(path);
	fs_reply_err(req, rc);
}

static int open_dir_at(int dirfd, const char *leaf)
{
	int fd = MIO_CALL(openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	return fd < 0 ? -errno : fd;
}

static int opendir_member(int member, int dirfd, const char *leaf, void *arg)
{
	int fd = open_dir_at(dirfd, leaf);
	if (fd >= 0)
		MIO_CALL(close(fd));
	return fd < 0 ? fd : 0;
}

void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	/* Checks that it is a directory the daemon can read; the listing is
	 * made by readdir. */
	if (rc == 0)
		rc = mirror_query(fs_volume(), path, opendir_member, NULL, "opendir");
	if (rc < 0) {
		g_free(path);
		fs_reply_err(req, rc);
		return;
	}
	struct dir_handle *h = g_new0(struct dir_handle, 1);
	h->path = path;
	h->is_root = ino == FUSE_ROOT_ID;
	fi->fh = (uintptr_t)h;
	if (fuse_reply_open(req, fi) != 0)
		fs_releasedir(NULL, ino, fi);
}

/* True for an entry of the root that names the volume's metadata. */
static bool hidden_entry(bool is_root, const char *name)
{
	if (!is_root)
		return false;
	char path[NAME_MAX + 2];
	path[0] = '/';
	strncpy(path + 1, name, NAME_MAX);
	path[NAME_MAX + 1] = '\0';
	return volume_path_reserved(path);
}

struct listing {
	struct dir_handle *h;
	GHashTable *seen; /* names already in h->entries */
	bool plus;        /* the kernel asked for attributes (readdirplus) */
	bool listed;      /* a member has listed the directory whole */
};

/* The entry's attributes as getattr answers them (e->plus), taken with
 * the listing from the first member that lists the directory and answers
 * namespace queries (not one being rebuilt), which is the member
 * ecfile_stat asks first for its names.  Not for . and ..: the member
 * root's .. lies outside the volume. */
static void entry_attrs(struct listing *l, int member, DIR *d, struct dir_entry *e)
{
	struct stat st;

	if (!l->plus || l->listed || !volume_member_answers(fs_volume(), member) ||
	    !strcmp(e->name, ".") || !strcmp(e->name, ".."))
		return;
	if (MIO_CALL(fstatat(dirfd(d), e->name, &st, AT_SYMLINK_NOFOLLOW)) < 0 ||
	    !ecfile_stat_from(fs_volume(), member, &st, &e->ident))
		return;
	if (S_ISDIR(st.st_mode))
		e->ident = ecfile_object_ident(dirfd(d), e->name, st.st_mode);
	e->st = st;
	e->plus = true;
}

/* Adds the member's entries that are not listed yet.  Runs on the
 * member's worker (volume_on_member) while the caller waits; entries are
 * added only between member calls, so one given up adds nothing more. */
static int list_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct listing *l = arg;
	int fd = open_dir_at(dirfd, leaf);
	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = errno;
		MIO_CALL(close(fd));
		return -err;
	}
	int rc = 0;
	guint first = l->h->entries->len;
	for (;;) {
		errno = 0;
		struct dirent *de = MIO_CALL(readdir(d));
		if (!de) {
			rc = -errno;
			break;
		}
		if (hidden_entry(l->h->is_root, de->d_name) ||
		    g_hash_table_contains(l->seen, de->d_name))
			continue;
		struct dir_entry e = { .name = g_strdup(de->d_name), .type = de->d_type };
		entry_attrs(l, member, d, &e);
		g_array_append_val(l->h->entries, e);
		g_hash_table_add(l->seen, e.name);
	}
	MIO_CALL(closedir(d));
	/* A listing cut short: the next member's answers count */
	for (guint i = first; rc < 0 && i < l->h->entries->len; i++)
		g_array_index(l->h->entries, struct dir_entry, i).plus = false;
	l->listed |= rc == 0 && volume_member_answers(fs_volume(), member);
	return rc;
}

/* The attributes the listing took go to attr_cache.h for the getattr that
 * follows (ls -l): a file's under the stamp read before the listing; a
 * directory's too, if nothing but this listing moved it (after). */
static void remember_attrs(struct dir_handle *h, const char *path, const attr_stamp *after)
{
	attr_stamp own = h->stamp;
	own.listings++;
	bool dirs = !memcmp(&own, after, sizeof(own));

	for (guint i = 0; i < h->entries->len; i++) {
		const struct dir_entry *e = &g_array_index(h->entries, struct dir_entry, i);
		if (!e->plus || (S_ISDIR(e->st.st_mode) && !dirs))
			continue;
		char *child = g_strconcat(strcmp(path, "/") ? path : "", "/", e->name, NULL);
		attr_cache_put(fs_attrs(), child, S_ISDIR(e->st.st_mode) ? after : &h->stamp, &e->st);
		g_free(child);
	}
}

/* Lists the directory: the union over the healthy members, so a name one
 * member lost (a deleted chunk) is still shown, as getattr still finds it.
 * plus: with each name's attributes where they come at no extra member
 * call. */
static int make_listing(struct dir_handle *h, const char *path, bool plus)
{
	free_entries(h);
	h->entries = g_array_new(FALSE, FALSE, sizeof(struct dir_entry));
	h->stamp = fs_stamp();
	struct listing l = { h, g_hash_table_new(g_str_hash, g_str_equal), plus, false };
	int rc = mirror_apply(fs_volume(), path, list_member, &l, "readdir");
	attr_cache_listed(fs_attrs()); /* the listing may have moved the directory's atime */
	g_hash_table_destroy(l.seen);
	if (rc == 0 && plus && volume_usable(fs_volume())) {
		attr_stamp after = fs_stamp();
		remember_attrs(h, path, &after);
	}
	return rc == -ENOENT ? 0 : rc; /* removed while open: empty */
}

/* True while what the listing took of its names' attributes still holds
 * (as in attr_cache.h, without the listings, which move only the listed
 * directory's atime). */
static bool attrs_stand(const struct dir_handle *h)
{
	attr_stamp now = fs_stamp();
	return now.changes == h->stamp.changes && now.reads == h->stamp.reads &&
	       now.sizes == h->stamp.sizes;
}

/* Adds entry i of the listing to the reply in buf (size bytes, used of
 * them); false if it does not fit.  plus: readdirplus, whose entries with
 * attributes count as lookups of their names. */
static bool add_entry(fuse_req_t req, fuse_ino_t ino, const struct dir_entry *e, bool plus,
                      char *buf, size_t size, size_t *used, off_t next)
{
	struct fuse_entry_param ep = { .attr.st_mode = (mode_t)DTTOIF(e->type) };
	ep.attr.st_ino = FUSE_UNKNOWN_INO;
	if (plus && e->plus)
		fs_entry_fill(&ep, fs_nodes_ino(ino, e->name, e->ident, &e->st), &e->st);
	else if ((ep.attr.st_ino = fs_nodes_lookup_name(ino, e->name)) == 0)
		ep.attr.st_ino = FUSE_UNKNOWN_INO;
	size_t n = plus ? fuse_add_direntry_plus(req, buf + *used, size - *used, e->name, &ep, next)
	                : fuse_add_direntry(req, buf + *used, size - *used, e->name, &ep.attr, next);
	if (n > size - *used)
		return false;
	*used += n;
	if (ep.ino)
		fs_nodes_add(ino, e->name, ep.ino, ep.attr.st_mode);
	return true;
}

static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                 struct fuse_file_info *fi, bool plus)
{
	struct dir_handle *h = dir_of(fi);
	if (off == 0 || !h->entries) {
		/* First call, or rewinddir: a fresh listing, by the
		 * directory's path now, else the one it was opened with. */
		char *path = NULL;
		int rc = fs_nodes_path(ino, &path);
		rc = make_listing(h, rc == 0 ? path : h->path, plus);
		g_free(path);
		if (rc < 0) {
			fs_reply_err(req, rc);
			return;
		}
	}
	/* readdirplus: the names come with what a lookup of each would
	 * answer, so the kernel need not look them up one by one. */
	bool with = plus && attrs_stand(h);
	char *buf = g_malloc(size);
	size_t used = 0;
	for (guint i = (guint)off; i < h->entries->len; i++) {
		const struct dir_entry *e = &g_array_index(h->entries, struct dir_entry, i);
		struct dir_entry copy = *e;
		copy.plus = with && e->plus;
		if (!add_entry(req, ino, &copy, plus, buf, size, &used, (off_t)i + 1))
			break; /* the reply is full: the kernel asks again from i */
	}
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
	free_entries(h);
	g_free(h->path);
	g_free(h);
	if (req)
		fuse_reply_err(req, 0);
}

static int fsync_member_dir(int member, int dirfd, const char *leaf, void *arg)
{
	int fd = open_dir_at(dirfd, leaf);
	if (fd < 0)
		return fd;
	int datasync = *(const int *)arg;
	int rc = mop_fsync(fs_volume(), member, fd, datasync);
	MIO_CALL(close(fd));
	return rc;
}

void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct dir_handle *h = dir_of(fi);
	/* By its current path, else the one it was opened with; a directory
	 * removed meanwhile has nothing left to sync. */
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	rc = mirror_apply(fs_volume(), rc == 0 ? path : h->path, fsync_member_dir, &datasync,
	                  "fsyncdir");
	g_free(path);
	fs_reply_err(req, rc == -ENOENT ? 0 : rc);
}
