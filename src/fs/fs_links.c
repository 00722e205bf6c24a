/* SPDX-License-Identifier: MIT */
/*
 * Name operations: lookup and forget (fs_nodes.h), and, mirrored on
 * every healthy member, unlink, rename
 * (with RENAME_NOREPLACE and RENAME_EXCHANGE, passed to the members'
 * renameat2), symlink, readlink, hard links and mknod.  A regular file's
 * names are its chunk files' names, so unlink, rename and link of a file
 * are the same *at() call on each member; an open file is not disturbed,
 * its ecfile holds an fd per member.
 */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "ecfile.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "mirror.h"
#include "size_cache.h"
#include "space.h"
#include "volume_internal.h"
#include "xattrs.h"

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc == 0 && (volume_path_reserved(path) || fs_dirnames_absent(parent, name)))
		rc = -ENOENT;
	if (rc == 0)
		rc = fs_entry(parent, name, path, 0, &e);
	g_free(path);
	if (rc == -ENOENT && fs_timeouts()->negative > 0) {
		/* A negative entry the kernel may keep. */
		memset(&e, 0, sizeof e);
		e.entry_timeout = fs_timeouts()->negative;
		rc = 0;
	}
	if (rc < 0)
		fs_reply_err(req, rc);
	else if (fuse_reply_entry(req, &e) != 0 && e.ino)
		fs_nodes_forget(e.ino, 1);
}

void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_nodes_forget(ino, nlookup);
	fuse_reply_none(req);
}

void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		fs_nodes_forget(forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static int unlink_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_unlinkat(fs_volume(), member, dirfd, leaf, 0);
}

static int unlink_path(const char *path)
{
	intent_args a = { INTENT_UNLINK, .from = path };
	return mirror_apply_logged(fs_volume(), &a, unlink_member, NULL, NULL, "unlink");
}

static int rename_member(int member, int fd1, const char *leaf1, int fd2,
                         const char *leaf2, void *arg)
{
	struct kept_size *kept = arg;
	struct stat before;
	bool take = !(kept->flags & RENAME_EXCHANGE) && fs_kept_before(kept, member, fd1, leaf1, &before);
	int rc = mop_renameat2(fs_volume(), member, fd1, leaf1, fd2, leaf2, kept->flags);
	if (rc == 0 && take)
		fs_kept_after(kept, member, fd2, leaf2, &before);
	return rc;
}

static int rename_path(const char *from, const char *to, unsigned flags)
{
	intent_args a = { INTENT_RENAME, .from = from, .to = to, .flags = flags };
	struct kept_size kept = { .flags = flags };
	struct stat st;
	uint64_t epoch = objects_stat_epoch(fs_volume());
	int rc = mirror_apply_logged(fs_volume(), &a, NULL, rename_member, &kept, "rename");
	if (rc == 0)
		fs_kept_carry(&kept, epoch, &st);
	return rc;
}

/* A file open by its last known name is moved to the orphan folder
 * rather than removed (fs_nodes.h).  Returns 1 if (parent, name) at path
 * is now an orphan, 0 if it is not open, or a negative errno. */
static int keep_orphan(fuse_ino_t parent, const char *name, const char *path)
{
	char *orphan = fs_nodes_orphan_for(parent, name);
	if (!orphan)
		return 0;
	int rc = rename_path(path, orphan, 0);
	if (rc == 0)
		fs_nodes_orphaned(parent, name, orphan);
	g_free(orphan);
	return rc < 0 ? rc : 1;
}

void fs_remove_orphan(const char *orphan)
{
	int rc = unlink_path(orphan);
	if (rc < 0)
		ecfs_log(LOG_WARNING, "cannot remove the orphan %s: %s", orphan, strerror(-rc));
}

void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc == 0 && volume_path_reserved(path))
		rc = -ENOENT;
	if (rc == 0)
		rc = keep_orphan(parent, name, path);
	if (rc == 0)
		rc = unlink_path(path);
	if (rc >= 0) {
		fs_dirnames_removed(parent, name);
		fs_nodes_unlinked(parent, name);
	} else {
		fs_dirnames_drop(parent);
	}
	g_free(path);
	fs_reply_err(req, rc < 0 ? rc : 0);
}

/* The rename of from to to: an open file renamed over is kept as an
 * orphan first (and put back if the rename fails). */
static int rename_over(fuse_ino_t newparent, const char *newname, const char *from,
                       const char *to, unsigned flags)
{
	char *orphan = NULL;
	if (!(flags & (RENAME_NOREPLACE | RENAME_EXCHANGE)))
		orphan = fs_nodes_orphan_for(newparent, newname);
	int rc = orphan ? rename_path(to, orphan, 0) : 0;
	if (rc < 0) {
		g_free(orphan);
		return rc;
	}
	rc = rename_path(from, to, flags);
	if (orphan && rc < 0)
		rename_path(orphan, to, 0);
	else if (orphan)
		fs_nodes_orphaned(newparent, newname, orphan);
	g_free(orphan);
	return rc;
}

void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
               const char *newname, unsigned int flags)
{
	char *from = NULL, *to = NULL;
	int rc = flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE) ? -EINVAL : 0;
	if (rc == 0)
		rc = fs_nodes_child(parent, name, &from);
	if (rc == 0)
		rc = fs_nodes_child(newparent, newname, &to);
	if (rc == 0 && volume_path_reserved(from))
		rc = -ENOENT;
	if (rc == 0 && volume_path_reserved(to))
		rc = -EPERM;
	/* A directory renamed over is gone, and what was held of it. */
	fuse_ino_t over = flags & RENAME_EXCHANGE ? 0 : fs_nodes_lookup_name(newparent, newname);
	if (rc == 0)
		rc = rename_over(newparent, newname, from, to, flags);
	if (rc == 0) {
		if (over)
			fs_dirnames_drop(over);
		fs_dirnames_renamed(parent, name, newparent, newname, flags);
		fs_nodes_renamed(parent, name, newparent, newname, flags);
	} else {
		fs_dirnames_drop(parent);
		fs_dirnames_drop(newparent);
	}
	g_free(from);
	g_free(to);
	fs_reply_err(req, rc);
}

struct new_link {
	const char *target;
	uid_t uid;
	gid_t gid;
};

static int symlink_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_link *nl = arg;
	int rc = mop_symlinkat(fs_volume(), member, nl->target, dirfd, leaf);
	if (rc < 0)
		return rc;
	return fs_chown_new(member, dirfd, leaf, nl->uid, nl->gid);
}

void fs_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	struct new_link nl = { .target = target };
	if (volume_path_reserved(path))
		rc = -EPERM;
	fs_new_owner(req, &nl.uid, &nl.gid);
	if (rc == 0)
		rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST + strlen(target));
	if (rc == 0)
		rc = mirror_apply(fs_volume(), path, symlink_member, &nl, "symlink");
	fs_dirnames_changed(parent, name, S_IFLNK, rc);
	fs_reply_entry(req, parent, name, path, rc);
	g_free(path);
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

void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char target[PATH_MAX + 1];
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	struct link_buffer lb = { target, sizeof target };
	if (rc == 0)
		rc = mirror_query(fs_volume(), path, readlink_member, &lb, "readlink");
	g_free(path);
	if (rc < 0)
		fs_reply_err(req, rc);
	else
		fuse_reply_readlink(req, target);
}

static int link_member(int member, int fd1, const char *leaf1, int fd2,
                       const char *leaf2, void *arg)
{
	struct stat before;
	bool take = fs_kept_before(arg, member, fd1, leaf1, &before);
	int rc = mop_linkat(fs_volume(), member, fd1, leaf1, fd2, leaf2, 0);
	if (rc == 0 && take)
		fs_kept_after(arg, member, fd2, leaf2, &before);
	return rc;
}

void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	char *from = NULL, *to = NULL;
	int rc = fs_nodes_path(ino, &from);
	if (rc == 0)
		rc = fs_nodes_child(newparent, newname, &to);
	if (rc == 0 && volume_path_reserved(to))
		rc = -EPERM;
	if (rc == 0)
		rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST);
	struct kept_size kept = { 0 };
	uint64_t epoch = objects_stat_epoch(fs_volume());
	if (rc == 0) {
		intent_args a = { INTENT_LINK, .from = from, .to = to };
		rc = mirror_apply_logged(fs_volume(), &a, NULL, link_member, &kept, "link");
	}
	/* The new name is a name of the same node: its attributes as taken
	 * around the link, with the size remembered or the open file's, else
	 * looked up. */
	struct fuse_entry_param e;
	struct stat st;
	if (rc == 0 && (fs_kept_carry(&kept, epoch, &st) || fs_kept_open(&kept, ino, &st))) {
		fs_entry_fill(&e, ino, &st);
		fs_nodes_add(newparent, newname, ino, st.st_mode);
	} else if (rc == 0) {
		rc = fs_entry(newparent, newname, to, ino, &e);
	}
	fs_dirnames_changed(newparent, newname, rc == 0 ? e.attr.st_mode : 0, rc);
	if (rc < 0)
		fs_reply_err(req, rc);
	else if (fuse_reply_entry(req, &e) != 0)
		fs_nodes_forget(e.ino, 1);
	g_free(from);
	g_free(to);
}

struct new_node {
	mode_t mode;
	dev_t rdev;
	uid_t uid;
	gid_t gid;
};

static int mknod_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_node *nn = arg;
	int rc = mop_mknodat(fs_volume(), member, dirfd, leaf, nn->mode, nn->rdev);
	if (rc < 0)
		return rc;
	return fs_chown_new(member, dirfd, leaf, nn->uid, nn->gid);
}

static int make_node(fuse_req_t req, const char *path, mode_t mode, dev_t rdev)
{
	if (volume_path_reserved(path))
		return -EPERM;
	mode = (mode & S_IFMT) |
	       xattrs_create_mode(fs_volume(), path, mode & 07777, fuse_req_ctx(req)->umask);
	struct new_node nn = { .mode = mode, .rdev = rdev };
	fs_new_owner(req, &nn.uid, &nn.gid);
	if (S_ISREG(mode)) {
		/* A regular file is an ecfile even when made by mknod(2). */
		ecfile *f;
		int rc = ecfile_create(fs_volume(), path, O_CREAT | O_EXCL | O_WRONLY,
		                       mode & 07777, nn.uid, nn.gid, &f);
		return rc < 0 ? rc : ecfile_release(f);
	}
	int rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST);
	if (rc < 0)
		return rc;
	return mirror_apply(fs_volume(), path, mknod_member, &nn, "mknod");
}

void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	rc = make_node(req, path, mode, rdev);
	fs_dirnames_changed(parent, name, mode, rc);
	fs_reply_entry(req, parent, name, path, rc);
	g_free(path);
}
