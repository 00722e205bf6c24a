/* SPDX-License-Identifier: MIT */
/*
 * The namespace operations (nsops.h): each one's body on one member,
 * handed to mirror.h, which runs it on every healthy member.  A body runs
 * on the member's I/O worker (volume_on_member), on several members at
 * once: it changes what it shares with the others with atomics only, and
 * reads into a local first what it hands back, so that a call given up
 * finds nothing of the caller's to write into when it returns.
 */
#include "nsops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dirstamps.h"
#include "intent.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "mirror.h"
#include "objects.h"
#include "size_cache.h"
#include "volume_internal.h"

/* ---- sizes kept across a change ---- */

/* Before the change on member, of (fd, leaf): true if this member takes
 * the lstats; then kept_after once its change is made. */
static bool kept_before(volume *v, nsops_kept *k, int member, int fd, const char *leaf,
                        struct stat *before)
{
	return volume_member_answers(v, member) &&
	       !__atomic_load_n(&k->claimed, __ATOMIC_ACQUIRE) &&
	       MIO_CALL(fstatat(fd, leaf, before, AT_SYMLINK_NOFOLLOW)) == 0;
}

static void kept_after(nsops_kept *k, int member, int fd, const char *leaf,
                       const struct stat *before)
{
	/* into a local first: a call given up must find nothing of the
	 * caller's to write into when it returns (volume_on_member) */
	struct stat after;
	if (__atomic_exchange_n(&k->claimed, true, __ATOMIC_ACQ_REL) ||
	    MIO_CALL(fstatat(fd, leaf, &after, AT_SYMLINK_NOFOLLOW)) != 0 ||
	    after.st_ino != before->st_ino || after.st_dev != before->st_dev)
		return;
	k->after = after;
	k->before = *before;
	k->member = member;
	k->have = true;
}

bool nsops_kept_carry(volume *v, const nsops_kept *k, uint64_t epoch, struct stat *st)
{
	struct stat sized = k->before;
	uint64_t ident;
	if (!k->have || (sized.st_mode & S_IFMT) != (k->after.st_mode & S_IFMT) ||
	    !objects_stat_from(v, k->member, &sized, &ident))
		return false;
	*st = k->after;
	if (S_ISREG(st->st_mode)) {
		st->st_size = sized.st_size;
		st->st_blocks = sized.st_blocks;
		size_cache_put(volume_sizes(v), k->member, &k->after, epoch,
		               (uint64_t)sized.st_size, ident);
	}
	return true;
}

/* A change with its lstats kept (nsops_kept): a rename or link of
 * (fd1, leaf1) to (fd2, leaf2) (op2), or chmod, chown or utimens of
 * (dirfd, leaf) (op, with arg). */
struct kept_change {
	volume *v;
	nsops_kept *kept;
	unsigned flags; /* rename's */
	int (*op2)(volume *v, int member, int fd1, const char *leaf1, int fd2, const char *leaf2,
	           unsigned flags);
	int (*op)(volume *v, int member, int dirfd, const char *leaf, const void *arg);
	const void *arg;
};

static int kept_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct kept_change *c = arg;
	struct stat before;
	bool take = kept_before(c->v, c->kept, member, dirfd, leaf, &before);
	int rc = c->op(c->v, member, dirfd, leaf, c->arg);
	if (rc == 0 && take)
		kept_after(c->kept, member, dirfd, leaf, &before);
	return rc;
}

/* The object moves from (fd1, leaf1) to (fd2, leaf2), or (exchange) takes
 * the place of another, whose size nothing keeps. */
static int kept_member2(int member, int fd1, const char *leaf1, int fd2, const char *leaf2,
                        void *arg)
{
	const struct kept_change *c = arg;
	struct stat before;
	bool take = !(c->flags & RENAME_EXCHANGE) &&
	            kept_before(c->v, c->kept, member, fd1, leaf1, &before);
	int rc = c->op2(c->v, member, fd1, leaf1, fd2, leaf2, c->flags);
	if (rc == 0 && take)
		kept_after(c->kept, member, fd2, leaf2, &before);
	return rc;
}

/* ---- names ---- */

static int unlink_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_unlinkat(arg, member, dirfd, leaf, 0);
}

int nsops_unlink(volume *v, const char *path)
{
	intent_args a = { INTENT_UNLINK, .from = path };
	return mirror_apply_logged(v, &a, unlink_member, NULL, v, "unlink");
}

int nsops_rename(volume *v, const char *from, const char *to, unsigned flags)
{
	intent_args a = { INTENT_RENAME, .from = from, .to = to, .flags = flags };
	nsops_kept kept = { 0 };
	struct kept_change c = { .v = v, .kept = &kept, .flags = flags, .op2 = mop_renameat2 };
	struct stat st;
	uint64_t epoch = objects_stat_epoch(v);
	int rc = mirror_apply_logged(v, &a, NULL, kept_member2, &c, "rename");
	if (rc == 0)
		nsops_kept_carry(v, &kept, epoch, &st);
	return rc;
}

static int link_at(volume *v, int member, int fd1, const char *leaf1, int fd2,
                   const char *leaf2, unsigned flags)
{
	return mop_linkat(v, member, fd1, leaf1, fd2, leaf2, (int)flags);
}

int nsops_link(volume *v, const char *from, const char *to, nsops_kept *kept)
{
	intent_args a = { INTENT_LINK, .from = from, .to = to };
	struct kept_change c = { .v = v, .kept = kept, .op2 = link_at };
	return mirror_apply_logged(v, &a, NULL, kept_member2, &c, "link");
}

/* Gives the object just created at (dirfd, leaf) on member to its owner
 * (nsops_owner). */
static int chown_new(volume *v, int member, int dirfd, const char *leaf, const nsops_owner *o)
{
	if (o->as_made)
		return 0;
	return mop_fchownat(v, member, dirfd, leaf, o->uid, mop_new_object_gid(dirfd, o->gid),
	                    AT_SYMLINK_NOFOLLOW);
}

/* A symlink (target) or another node (mode, rdev) to make. */
struct new_node {
	volume *v;
	const nsops_owner *owner;
	const char *target;
	mode_t mode;
	dev_t rdev;
};

static int new_node_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_node *nn = arg;
	int rc = nn->target ? mop_symlinkat(nn->v, member, nn->target, dirfd, leaf)
	                    : mop_mknodat(nn->v, member, dirfd, leaf, nn->mode, nn->rdev);
	if (rc < 0)
		return rc;
	return chown_new(nn->v, member, dirfd, leaf, nn->owner);
}

int nsops_symlink(volume *v, const char *path, const char *target, const nsops_owner *o)
{
	struct new_node nn = { .v = v, .owner = o, .target = target };
	return mirror_apply(v, path, new_node_member, &nn, "symlink");
}

int nsops_mknod(volume *v, const char *path, mode_t mode, dev_t rdev, const nsops_owner *o)
{
	struct new_node nn = { .v = v, .owner = o, .mode = mode, .rdev = rdev };
	return mirror_apply(v, path, new_node_member, &nn, "mknod");
}

struct link_buffer {
	char *buf;
	size_t size;
};

static int readlink_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct link_buffer *lb = arg;
	char target[PATH_MAX]; /* a local first (volume_on_member) */
	size_t want = lb->size - 1 < sizeof(target) ? lb->size - 1 : sizeof(target);
	ssize_t n = MIO_CALL(readlinkat(dirfd, leaf, target, want));
	if (n < 0)
		return -errno;
	memcpy(lb->buf, target, (size_t)n);
	lb->buf[n] = '\0'; /* FUSE wants it terminated, truncated if need be */
	return 0;
}

int nsops_readlink(volume *v, const char *path, char *buf, size_t size)
{
	struct link_buffer lb = { buf, size };
	return mirror_query(v, path, readlink_member, &lb, "readlink");
}

static int lstat_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct stat st;
	int rc = mirror_errno(MIO_CALL(fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW)));
	if (rc == 0)
		*(struct stat *)arg = st;
	return rc;
}

int nsops_lstat(volume *v, const char *path, struct stat *st)
{
	return mirror_query(v, path, lstat_member, st, "stat");
}

/* ---- attributes ---- */

static int apply_attr(volume *v, const char *path,
                      int (*op)(volume *, int, int, const char *, const void *),
                      const void *arg, const char *what, nsops_kept *kept)
{
	struct kept_change c = { .v = v, .kept = kept, .op = op, .arg = arg };
	/* the stand-in's lstat is not the root's answer: getattr asks */
	if (strcmp(path, "/" VOLUME_ROOT_STANDIN) == 0)
		kept->claimed = true;
	return mirror_apply(v, path, kept_member, &c, what);
}

static int chmod_member(volume *v, int member, int dirfd, const char *leaf, const void *arg)
{
	return mop_fchmodat(v, member, dirfd, leaf, *(const mode_t *)arg, AT_SYMLINK_NOFOLLOW);
}

int nsops_chmod(volume *v, const char *path, mode_t mode, nsops_kept *kept)
{
	return apply_attr(v, volume_attrs_path(v, path), chmod_member, &mode, "chmod", kept);
}

struct owner {
	uid_t uid;
	gid_t gid;
};

static int chown_member(volume *v, int member, int dirfd, const char *leaf, const void *arg)
{
	const struct owner *o = arg;
	return mop_fchownat(v, member, dirfd, leaf, o->uid, o->gid, AT_SYMLINK_NOFOLLOW);
}

int nsops_chown(volume *v, const char *path, uid_t uid, gid_t gid, nsops_kept *kept)
{
	struct owner o = { uid, gid };
	return apply_attr(v, volume_attrs_path(v, path), chown_member, &o, "chown", kept);
}

static int utimens_member(volume *v, int member, int dirfd, const char *leaf, const void *arg)
{
	return mop_utimensat(v, member, dirfd, leaf, arg, AT_SYMLINK_NOFOLLOW);
}

int nsops_utimens(volume *v, const char *path, const struct timespec ts[2], nsops_kept *kept)
{
	return apply_attr(v, path, utimens_member, ts, "utimens", kept);
}

/* ---- directories ---- */

int nsops_open_dir(int dirfd, const char *leaf)
{
	int fd = MIO_CALL(openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	return fd < 0 ? -errno : fd;
}

struct new_dir {
	volume *v;
	nsops_new_dir *nd;
};

/* The new directory's attributes on member for the reply, if no member
 * before it took them (nsops_new_dir). */
static void take_attributes(volume *v, nsops_new_dir *nd, int member, const struct stat *st)
{
	if (!volume_member_answers(v, member) ||
	    __atomic_exchange_n(&nd->claimed, true, __ATOMIC_ACQ_REL))
		return;
	nd->st = *st;
	nd->have_st = true;
}

static int mkdir_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_dir *m = arg;
	nsops_new_dir *nd = m->nd;
	int rc = mop_mkdirat(m->v, member, dirfd, leaf, nd->mode);
	if (rc == 0)
		rc = chown_new(m->v, member, dirfd, leaf, &nd->owner);
	if (rc < 0)
		return rc;
	objects_store_dir_ident(m->v, member, dirfd, leaf, nd->ident);
	/* Made and given its attributes: it holds . and .. only, at the
	 * stamp it has now (dirstamps.h). */
	struct stat st;
	if (MIO_CALL(fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW)) == 0 && S_ISDIR(st.st_mode)) {
		dirstamp stamp;
		dirstamp_of(&st, &stamp);
		dirstamps_known(mop_dirstamps(m->v), member, &stamp);
		__atomic_store_n(&nd->on.ino[member], (uint64_t)st.st_ino, __ATOMIC_RELAXED);
		__atomic_or_fetch(&nd->on.mask, 1ull << member, __ATOMIC_RELEASE);
		take_attributes(m->v, nd, member, &st);
	}
	return 0;
}

int nsops_mkdir(volume *v, const char *path, nsops_new_dir *nd)
{
	intent_args a = { INTENT_MKDIR, .from = path, .mode = nd->mode, .uid = nd->owner.uid,
	                  .gid = nd->owner.gid };
	struct new_dir m = { v, nd };
	return mirror_apply_logged(v, &a, mkdir_member, NULL, &m, "mkdir");
}

static int rmdir_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_unlinkat(arg, member, dirfd, leaf, AT_REMOVEDIR);
}

int nsops_rmdir(volume *v, const char *path)
{
	intent_args a = { INTENT_RMDIR, .from = path };
	return mirror_apply_logged(v, &a, rmdir_member, NULL, v, "rmdir");
}

struct dir_sync {
	volume *v;
	int datasync;
};

static int fsync_member_dir(int member, int dirfd, const char *leaf, void *arg)
{
	const struct dir_sync *ds = arg;
	int fd = nsops_open_dir(dirfd, leaf);
	if (fd < 0)
		return fd;
	int rc = mop_fsync(ds->v, member, fd, ds->datasync);
	MIO_CALL(close(fd));
	return rc;
}

int nsops_fsyncdir(volume *v, const char *path, int datasync)
{
	struct dir_sync ds = { v, datasync };
	return mirror_apply(v, path, fsync_member_dir, &ds, "fsyncdir");
}

static int orphans_member(int member, int dirfd, const char *leaf, void *arg)
{
	volume *v = arg;
	int rc = mop_mkdirat(v, member, dirfd, leaf, 0700);

	if (rc < 0 && rc != -EEXIST)
		return rc;
	int fd = nsops_open_dir(dirfd, leaf);
	if (fd < 0)
		return fd;
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = errno;
		MIO_CALL(close(fd));
		return -err;
	}
	/* Files that were open and unlinked when the daemon stopped. */
	for (struct dirent *de; (de = MIO_CALL(readdir(d))) != NULL;) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		rc = mop_unlinkat(v, member, fd, de->d_name, 0);
		if (rc < 0)
			ecfs_log(LOG_WARNING, "cannot remove orphan %s on member %d: %s",
			         de->d_name, member, strerror(-rc));
	}
	MIO_CALL(closedir(d));
	return 0;
}

int nsops_orphans_prepare(volume *v, const char *dir)
{
	return mirror_apply(v, dir, orphans_member, v, "orphan folder");
}

/* ---- reading directories ---- */

static int opendir_member(int member, int dirfd, const char *leaf, void *arg)
{
	int fd = nsops_open_dir(dirfd, leaf);
	if (fd >= 0)
		MIO_CALL(close(fd));
	return fd < 0 ? fd : 0;
}

int nsops_opendir(volume *v, const char *path)
{
	return mirror_query(v, path, opendir_member, NULL, "opendir");
}

/* Reads the member's directory into its part of the listing. */
static int list_member(int member, int dirfd, const char *leaf, void *arg)
{
	nsops_dir_part *mp = arg;
	int fd = nsops_open_dir(dirfd, leaf);
	if (fd < 0)
		return fd;
	struct stat before, after;
	bool seen = MIO_CALL(fstat(fd, &before)) == 0;
	int rc = listing_part_read(&mp->part, fd);
	seen = seen && MIO_CALL(fstat(fd, &after)) == 0;
	MIO_CALL(close(fd));
	mp->stable = false;
	if (rc == 0 && seen) {
		dirstamp at_start;
		dirstamp_of(&before, &at_start);
		dirstamp_of(&after, &mp->st);
		mp->stable = dirstamp_same(&at_start, &mp->st);
	}
	return rc;
}

uint64_t nsops_list(volume *v, const char *path, nsops_dir_part *parts, int most, int *err)
{
	void *args[64];
	for (int i = 0; i < volume_n(v); i++)
		args[i] = &parts[i];
	return mirror_gather(v, path, list_member, args, most, err, "readdir");
}

/* Reads the start of the member's directory, and takes its stamp (arg: a
 * nsops_dir_look, or NULL). */
static int touch_member(int member, int dirfd, const char *leaf, void *arg)
{
	char buf[256];
	int fd = nsops_open_dir(dirfd, leaf);
	if (fd < 0)
		return fd;
	struct stat st;
	bool seen = arg && MIO_CALL(fstat(fd, &st)) == 0;
	long got = MIO_CALL(syscall(SYS_getdents64, fd, buf, sizeof buf));
	int rc = got < 0 ? -errno : 0;
	MIO_CALL(close(fd));
	if (seen) {
		nsops_dir_look *look = arg;
		dirstamp_of(&st, &look->st);
		look->seen = true;
	}
	return rc;
}

uint64_t nsops_touch_dir(volume *v, const char *path, nsops_dir_look *looks, int most,
                         int *err)
{
	void *args[64];
	for (int i = 0; i < volume_n(v); i++)
		args[i] = looks ? &looks[i] : NULL;
	return mirror_gather(v, path, touch_member, args, most, err, "readdir");
}

/* The names whose attributes a listing's reply gives (nsops_stat_names):
 * have[i] once the member's lstat of name i is in st[i], whole[i] once
 * st[i] and ident[i] are all a lookup would answer (objects_stat_from:
 * not a regular file, or its size known). */
struct names_attrs {
	volume *v;
	const struct listing_entry *entries;
	guint count;
	struct stat *st;
	uint64_t *ident;
	bool *have, *whole;
};

static int stat_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct names_attrs *ra = arg;
	int fd = nsops_open_dir(dirfd, leaf);
	if (fd < 0)
		return fd;
	memset(ra->have, 0, ra->count * sizeof(*ra->have));
	memset(ra->whole, 0, ra->count * sizeof(*ra->whole));
	for (guint i = 0; i < ra->count; i++) {
		const char *name = ra->entries[i].name;
		struct stat st, sized;
		uint64_t ident = 0;
		if (!strcmp(name, ".") || !strcmp(name, "..") ||
		    MIO_CALL(fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW)) < 0)
			continue;
		sized = st;
		bool whole = objects_stat_from(ra->v, member, &sized, &ident);
		if (whole && S_ISDIR(st.st_mode))
			ident = objects_dir_ident(fd, name, st.st_mode);
		ra->st[i] = whole ? sized : st;
		ra->ident[i] = ident;
		ra->have[i] = true;
		ra->whole[i] = whole;
	}
	MIO_CALL(close(fd));
	return 0;
}

/* Whether two members' answers for a name agree on what the kernel checks
 * permissions by. */
static bool same_access(const struct stat *a, const struct stat *b)
{
	return a->st_mode == b->st_mode && a->st_uid == b->st_uid && a->st_gid == b->st_gid;
}

/* The names the two members did not settle (a regular file whose size
 * takes its headers, names they disagree on): what a lookup of each
 * would answer (objects_stat_many), all at once, so that the kernel need
 * not look them up one by one. */
static void stat_rest(volume *v, const char *path, const struct listing_entry *entries,
                      guint count, struct stat *st, uint64_t *ident, bool *have)
{
	const char **paths = g_new(const char *, count);
	guint *at = g_new(guint, count), left = 0;

	for (guint i = 0; i < count; i++) {
		const char *name = entries[i].name;
		if (have[i] || !strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		at[left] = i;
		paths[left++] = g_strconcat(strcmp(path, "/") ? path : "", "/", name, NULL);
	}
	struct stat *sts = g_new(struct stat, left);
	uint64_t *idents = g_new(uint64_t, left);
	int *rcs = g_new(int, left);
	if (left)
		objects_stat_many(v, paths, left, sts, idents, rcs);
	for (guint j = 0; j < left; j++) {
		if (rcs[j] == 0) {
			st[at[j]] = sts[j];
			ident[at[j]] = idents[j];
			have[at[j]] = true;
		}
		g_free((char *)paths[j]);
	}
	g_free(paths);
	g_free(at);
	g_free(sts);
	g_free(idents);
	g_free(rcs);
}

int nsops_stat_names(volume *v, const char *path, const struct listing_entry *entries,
                     guint count, struct stat *st, uint64_t *ident, bool *have)
{
	int n = volume_n(v), err = 0;
	struct names_attrs ra[64];
	void *args[64];
	struct stat *sts = g_new(struct stat, (size_t)n * count);
	uint64_t *idents = g_new(uint64_t, (size_t)n * count);
	bool *haves = g_new0(bool, (size_t)n * count), *wholes = g_new0(bool, (size_t)n * count);

	/* Two members, at once: a name's attributes are given only where
	 * both agree on them.  So one member alone cannot make a name look
	 * open to users its owner did not open it to; a name they disagree
	 * on goes out without attributes, and the kernel's lookup of it then
	 * settles them by majority (objects_stat_ident).  With one member
	 * answering, its word is all there is.  A regular file's size needs
	 * one of the two to know it (its size remembered for its chunk): as
	 * in a lookup, the other's lstat is for the mode and owner only. */
	for (int i = 0; i < n; i++) {
		size_t at = (size_t)i * count;
		ra[i] = (struct names_attrs){ v, entries, count, sts + at, idents + at, haves + at,
		                              wholes + at };
		args[i] = &ra[i];
	}
	uint64_t answered = mirror_gather(v, path, stat_member, args, 2, &err, "readdir");
	memset(have, 0, count * sizeof(*have));
	if (answered) {
		int a = __builtin_ctzll(answered);
		uint64_t rest = answered & (answered - 1);
		const struct names_attrs *other = rest ? &ra[__builtin_ctzll(rest)] : NULL;
		for (guint i = 0; i < count; i++) {
			const struct names_attrs *from = ra[a].whole[i] ? &ra[a]
			                                 : other && other->whole[i] ? other : NULL;
			const struct names_attrs *second = from == other ? &ra[a] : other;
			if (!from || (second && !(second->have[i] &&
			                          same_access(&from->st[i], &second->st[i]))))
				continue;
			st[i] = from->st[i];
			ident[i] = from->ident[i];
			have[i] = true;
		}
	}
	g_free(sts);
	g_free(idents);
	g_free(haves);
	g_free(wholes);
	if (answered)
		stat_rest(v, path, entries, count, st, ident, have);
	return answered ? 0 : err;
}
