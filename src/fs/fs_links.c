/* SPDX-License-Identifier: MIT */
/*
 * Name operations: lookup and forget (fs_nodes.h), and unlink, rename
 * (with RENAME_NOREPLACE and RENAME_EXCHANGE, passed to the members'
 * renameat2), symlink, readlink, hard links and mknod, which the
 * namespace layer mirrors on every healthy member (nsops.h).  A regular
 * file's names are its chunk files' names, so unlink, rename and link of
 * a file are the same *at() call on each member; an open file is not
 * disturbed, its ecfile holds an fd per member.  An open file unlinked or
 * renamed over is kept as an orphan (fs_nodes.h).
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
#include "nsops.h"
#include "space.h"
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

/* A file open by its last known name is moved to the orphan folder
 * rather than removed (fs_nodes.h).  Returns 1 if (parent, name) at path
 * is now an orphan, 0 if it is not open, or a negative errno. */
static int keep_orphan(fuse_ino_t parent, const char *name, const char *path)
{
	char *orphan = fs_nodes_orphan_for(parent, name);
	if (!orphan)
		return 0;
	int rc = nsops_rename(fs_volume(), path, orphan, 0);
	if (rc == 0)
		fs_nodes_orphaned(parent, name, orphan);
	g_free(orphan);
	return rc < 0 ? rc : 1;
}

void fs_remove_orphan(const char *orphan)
{
	int rc = nsops_unlink(fs_volume(), orphan);
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
		rc = nsops_unlink(fs_volume(), path);
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
	int rc = orphan ? nsops_rename(fs_volume(), to, orphan, 0) : 0;
	if (rc < 0) {
		g_free(orphan);
		return rc;
	}
	rc = nsops_rename(fs_volume(), from, to, flags);
	if (orphan && rc < 0)
		nsops_rename(fs_volume(), orphan, to, 0);
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

void fs_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	nsops_owner owner;
	if (volume_path_reserved(path))
		rc = -EPERM;
	fs_new_owner(req, &owner);
	if (rc == 0)
		rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST + strlen(target));
	if (rc == 0)
		rc = nsops_symlink(fs_volume(), path, target, &owner);
	fs_dirnames_changed(parent, name, S_IFLNK, rc);
	fs_reply_entry(req, parent, name, path, rc);
	g_free(path);
}

void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char target[PATH_MAX + 1];
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	if (rc == 0)
		rc = nsops_readlink(fs_volume(), path, target, sizeof target);
	g_free(path);
	if (rc < 0)
		fs_reply_err(req, rc);
	else
		fuse_reply_readlink(req, target);
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
	nsops_kept kept = { 0 };
	uint64_t epoch = objects_stat_epoch(fs_volume());
	if (rc == 0)
		rc = nsops_link(fs_volume(), from, to, &kept);
	/* The new name is a name of the same node: its attributes as taken
	 * around the link, with the size remembered or the open file's, else
	 * looked up. */
	struct fuse_entry_param e;
	struct stat st;
	if (rc == 0 && (nsops_kept_carry(fs_volume(), &kept, epoch, &st) ||
	                fs_kept_open(&kept, ino, &st))) {
		fs_entry_fill(&e, ino, &st);
		fs_nodes_add(newparent, newname, ino, &st, 0);
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

static int make_node(fuse_req_t req, const char *path, mode_t mode, dev_t rdev)
{
	if (volume_path_reserved(path))
		return -EPERM;
	mode = (mode & S_IFMT) |
	       xattrs_create_mode(fs_volume(), path, mode & 07777, fuse_req_ctx(req)->umask);
	nsops_owner owner;
	fs_new_owner(req, &owner);
	if (S_ISREG(mode)) {
		/* A regular file is an ecfile even when made by mknod(2). */
		ecfile *f;
		int rc = ecfile_create(fs_volume(), path, O_CREAT | O_EXCL | O_WRONLY,
		                       mode & 07777, owner.uid, owner.gid, &f);
		return rc < 0 ? rc : ecfile_release(f);
	}
	int rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST);
	if (rc < 0)
		return rc;
	return nsops_mknod(fs_volume(), path, mode, rdev, &owner);
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
