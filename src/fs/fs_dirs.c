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

/* One name of a listing. */
struct dir_entry {
	char *name;
	unsigned char type; /* DT_* */
	bool plus;          /* st is what getattr answers for it */
	struct stat st;
};

/* An open directory: the path it was opened with and, from the first
 * readdir at offset 0, the listing (the union of the members' entries);
 * offsets handed to the kernel are indices in it. */
struct dir_handle {
	char *path;       /* as opened, if libfuse has lost it */
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
};

static int mkdir_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_dir *nd = arg;
	int rc = mop_mkdirat(fs_volume(), member, dirfd, leaf, nd->mode);
	if (rc < 0)
		return rc;
	return fs_chown_new(member, dirfd, leaf, nd->uid, nd->gid);
}

int fs_mkdir(const char *path, mode_t mode)
{
	if (volume_path_reserved(path))
		return -EPERM;
	/* A directory made in a setgid directory inherits S_ISGID from the
	 * member filesystem itself, since member directories carry the mode. */
	struct new_dir nd = { .mode = xattrs_create_mode(fs_volume(), path, mode & 07777,
	                                                 fuse_get_context()->umask) };
	int rc = fs_new_owner(path, &nd.uid, &nd.gid);
	if (rc == 0)
		rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST);
	if (rc < 0)
		return rc;
	intent_args a = { INTENT_MKDIR, .from = path, .mode = nd.mode, .uid = nd.uid, .gid = nd.gid };
	return mirror_apply_logged(fs_volume(), &a, mkdir_member, NULL, &nd, "mkdir");
}

static int rmdir_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_unlinkat(fs_volume(), member, dirfd, leaf, AT_REMOVEDIR);
}

int fs_rmdir(const char *path)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	intent_args a = { INTENT_RMDIR, .from = path };
	return mirror_apply_logged(fs_volume(), &a, rmdir_member, NULL, NULL, "rmdir");
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

int fs_opendir(const char *path, struct fuse_file_info *fi)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	/* Checks that it is a directory the daemon can read; the listing is
	 * made by readdir. */
	int rc = mirror_query(fs_volume(), path, opendir_member, NULL, "opendir");
	if (rc < 0)
		return rc;
	struct dir_handle *h = calloc(1, sizeof *h);
	if (!h || !(h->path = strdup(path))) {
		free(h);
		return -ENOMEM;
	}
	h->is_root = strcmp(path, "/") == 0;
	fi->fh = (uintptr_t)h;
	return 0;
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
	    !ecfile_stat_from(fs_volume(), member, &st))
		return;
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

int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
               struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct dir_handle *h = dir_of(fi);
	bool plus = flags & FUSE_READDIR_PLUS;
	if (off == 0 || !h->entries) {
		/* First call, or rewinddir: a fresh listing. */
		int rc = make_listing(h, path ? path : h->path, plus);
		if (rc < 0)
			return rc;
	}
	/* readdirplus: the names come with what a lookup of each would
	 * answer, so the kernel need not look them up one by one. */
	plus = plus && attrs_stand(h);
	for (guint i = (guint)off; i < h->entries->len; i++) {
		const struct dir_entry *e = &g_array_index(h->entries, struct dir_entry, i);
		struct stat st = { .st_mode = (mode_t)DTTOIF(e->type) };
		bool with = plus && e->plus;
		if (filler(buf, e->name, with ? &e->st : &st, (off_t)i + 1,
		           with ? FUSE_FILL_DIR_PLUS : 0))
			break; /* the reply is full: the kernel asks again from i */
	}
	return 0;
}

int fs_releasedir(const char *path, struct fuse_file_info *fi)
{
	struct dir_handle *h = dir_of(fi);
	free_entries(h);
	free(h->path);
	free(h);
	return 0;
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

int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct dir_handle *h = dir_of(fi);
	/* By its current path (libfuse knows it), else the one it was opened
	 * with; a directory removed meanwhile has nothing left to sync. */
	int rc = mirror_apply(fs_volume(), path ? path : h->path, fsync_member_dir, &datasync, "fsyncdir");
	return rc == -ENOENT ? 0 : rc;
}
