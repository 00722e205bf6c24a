/* SPDX-License-Identifier: MIT */
/*
 * Attribute operations: getattr, chmod, chown, utimens, statfs, access.
 * A regular file's attributes come from ecfile (its logical size, not the
 * chunk's); everything else is read from the first healthy member, but the
 * mode and owner, which are the majority's (objects.h).  Mode, owner and
 * times are set on every member (on the chunk files of a regular file),
 * so any member can answer after another fails; the volume root's mode
 * and owner on its stand-in (volume_attrs_path).
 */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "ecfile.h"
#include "fs_killpriv.h"
#include "nsops.h"

/* The root's last known attributes: when more than m members have failed
 * every request fails with EIO, but the root must still answer getattr, or
 * the kernel would not even ask for its user.ecfs.health report. */
static pthread_mutex_t root_lock = PTHREAD_MUTEX_INITIALIZER; /* guards both below; a leaf */
static struct stat root_stat;
static bool root_known;

static int root_getattr(struct stat *st)
{
	int rc = objects_stat(fs_volume(), "/", st);
	pthread_mutex_lock(&root_lock);
	if (rc == 0) {
		root_stat = *st;
		root_known = true;
	} else if (root_known) {
		*st = root_stat;
		rc = 0;
	}
	pthread_mutex_unlock(&root_lock);
	return rc;
}

int fs_stat(const char *path, struct stat *st)
{
	/* The kernel asks for every directory of a path at each walk, and
	 * for a file right after its lookup: those answers come from
	 * attr_cache.h while nothing changed. */
	volume *v = fs_volume();
	attr_stamp stamp = fs_stamp();
	if (volume_usable(v) && attr_cache_get(fs_attrs(), path, &stamp, st))
		return 0;
	/* objects_stat answers for every type: the lstat of the first healthy
	 * member that has the name (another may have lost a chunk), with a
	 * regular file's logical size and the majority's mode and owner. */
	int rc = strcmp(path, "/") == 0 ? root_getattr(st) : objects_stat(v, path, st);
	if (rc == 0 && volume_usable(v))
		attr_cache_put(fs_attrs(), path, &stamp, st);
	return rc;
}

void fs_refresh_dir(const char *dir, const volume_dir_at *at)
{
	struct stat st;
	/* By what the chain holds, the fstat taken after its change or an
	 * fstat a member, rather than a walk of the path on each; the stamp
	 * read before, as fs_stat. */
	attr_stamp stamp = fs_stamp();
	if (at && objects_dir_stat_at(fs_volume(), dir, at, &st) == 0) {
		attr_cache_put(fs_attrs(), dir, &stamp, &st);
		return;
	}
	fs_stat(dir, &st);
}

/* getattr's answer for node ino: by its open file if fi, else its path. */
static int node_stat(fuse_ino_t ino, struct fuse_file_info *fi, struct stat *st)
{
	int rc;

	if (fi) {
		rc = ecfile_fstat(fs_file_of(fi), st);
	} else {
		char *path;
		rc = fs_nodes_path(ino, &path);
		if (rc == 0)
			rc = fs_stat(path, st);
		g_free(path);
	}
	st->st_ino = ino;
	return rc;
}

/* An orphan (fs_nodes.h) still has its orphan name on the members: the
 * links the namespace shows are one fewer (0 for a file unlinked while
 * open, as fstat reports it). */
static void shown_links(fuse_ino_t ino, struct stat *st)
{
	if (st->st_nlink > 0 && fs_nodes_orphan(ino))
		st->st_nlink--;
}

void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = node_stat(ino, fi, &st);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	shown_links(ino, &st);
	fuse_reply_attr(req, &st, fs_timeouts()->attr);
}

bool fs_kept_open(const nsops_kept *k, fuse_ino_t ino, struct stat *st)
{
	if (!k->have || !S_ISREG(k->after.st_mode))
		return false;
	struct stat opened = k->after;
	if (!fs_node_stat_open(ino, &opened))
		return false;
	*st = opened;
	return true;
}

/* What setattr answers, when the change itself told it (attr_changed). */
struct attr_reply {
	fuse_ino_t ino;
	bool have;
	struct stat st;
};

/* The answer of a change made on every member (rc), the size of a
 * regular file kept remembered across it (kept, epoch: nsops_kept).  With
 * out, the attributes after it: the first member's lstat taken around the
 * change, with the size remembered or the open file's, when either is
 * known (else out->have is false). */
static int attr_changed(int rc, const nsops_kept *kept, uint64_t epoch, struct attr_reply *out)
{
	struct stat st;
	bool carried = rc == 0 && nsops_kept_carry(fs_volume(), kept, epoch, &st);
	if (out && rc == 0) {
		out->have = carried || fs_kept_open(kept, out->ino, &st);
		out->st = st;
	}
	return rc;
}

static int chmod_with(const char *path, mode_t mode, struct attr_reply *out)
{
	nsops_kept kept = { 0 };
	uint64_t epoch = objects_stat_epoch(fs_volume());
	int rc = nsops_chmod(fs_volume(), path, mode & 07777, &kept);
	return attr_changed(rc, &kept, epoch, out);
}

int fs_chmod_path(const char *path, mode_t mode)
{
	return chmod_with(path, mode, NULL);
}

static int set_times(fuse_ino_t ino, const char *path, const struct timespec tv[2],
                     struct fuse_file_info *fi, struct attr_reply *out)
{
	/* One clock reading for UTIME_NOW, so that every member stores the
	 * same time and any of them can answer getattr. */
	struct timespec ts[2] = { tv[0], tv[1] };
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	for (int i = 0; i < 2; i++)
		if (ts[i].tv_nsec == UTIME_NOW)
			ts[i] = now;
	/* Data still buffered in an open ecfile would reach the chunk files
	 * later and move their mtime past the one set here (cp -p, tar, which
	 * sets it right after its close: the kernel's release may not have
	 * come yet).  A file not open holds none: its last release flushed.
	 * Through an open file (futimens) that file is the one to flush. */
	if (ts[1].tv_nsec != UTIME_OMIT && fi) {
		int rc = ecfile_flush(fs_file_of(fi));
		if (rc < 0)
			return rc;
	} else if (ts[1].tv_nsec != UTIME_OMIT && fs_nodes_open(ino)) {
		int rc = fs_flush_node(ino);
		if (rc < 0)
			return rc;
	}
	nsops_kept kept = { 0 };
	uint64_t epoch = objects_stat_epoch(fs_volume());
	int rc = nsops_utimens(fs_volume(), path, ts, &kept);
	return attr_changed(rc, &kept, epoch, out);
}

/* The times setattr asks for (UTIME_OMIT for those it leaves). */
static void wanted_times(const struct stat *attr, int to_set, struct timespec tv[2])
{
	tv[0].tv_nsec = tv[1].tv_nsec = UTIME_OMIT;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		tv[0].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME)
		tv[0] = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		tv[1].tv_nsec = UTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME)
		tv[1] = attr->st_mtim;
}

/* truncate of node ino, by its open file if fi, else by its path (the
 * file there checked to be the node's). */
static int truncate_node(fuse_ino_t ino, off_t size, struct fuse_file_info *fi)
{
	if (fi)
		return ecfile_truncate(fs_file_of(fi), size);
	ecfile *f;
	int rc = fs_open_node(ino, 0, &f);
	if (rc < 0)
		return rc;
	rc = ecfile_truncate(f, size);
	int rc2 = ecfile_release(f);
	return rc < 0 ? rc : rc2;
}

/* chmod, chown, truncate and utimens, in that order (as libfuse's path
 * API does them); out says what the last change told of the attributes
 * after them all. */
static int set_attrs(const char *path, const struct stat *attr, int to_set,
                     struct fuse_file_info *fi, struct attr_reply *out)
{
	int rc = 0;
	if (to_set & FUSE_SET_ATTR_MODE)
		rc = chmod_with(path, attr->st_mode, out);
	if (rc == 0 && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
		nsops_kept kept = { 0 };
		uint64_t epoch = objects_stat_epoch(fs_volume());
		rc = nsops_chown(fs_volume(), path,
		                 (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
		                 (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1, &kept);
		rc = attr_changed(rc, &kept, epoch, out);
	}
	if (rc == 0 && (to_set & FUSE_SET_ATTR_SIZE)) {
		rc = truncate_node(out->ino, attr->st_size, fi);
		out->have = false;
	}
	if (rc == 0 && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
	                          FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW))) {
		struct timespec tv[2];
		wanted_times(attr, to_set, tv);
		rc = set_times(out->ino, path, tv, fi, out);
	}
	return rc;
}

void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                struct fuse_file_info *fi)
{
	char *path = NULL;
	struct attr_reply out = { .ino = ino };
	int rc = fs_nodes_path(ino, &path);
	if (rc == 0)
		rc = set_attrs(path, attr, to_set, fi, &out);
	int cleared = rc == 0 ? fs_killpriv_setattr(req, ino, path, to_set) : 0;
	if (cleared != 0) {
		rc = cleared < 0 ? cleared : 0;
		out.have = false; /* the mode changed since */
	}
	g_free(path);
	/* The attributes after the change, as the change itself saw them, or
	 * asked for as getattr asks. */
	struct stat st = out.st;
	if (rc == 0 && out.have)
		st.st_ino = ino;
	else if (rc == 0)
		rc = node_stat(ino, fi, &st);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	shown_links(ino, &st);
	fuse_reply_attr(req, &st, fs_timeouts()->attr);
}

void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int rc = volume_statfs(fs_volume(), &st);
	if (rc < 0)
		fs_reply_err(req, rc);
	else
		fuse_reply_statfs(req, &st);
}

void fs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	/* Reached only without default_permissions, which the daemon always
	 * sets: the kernel checks permissions, this checks existence. */
	char *path = NULL;
	struct stat st;
	int rc = fs_nodes_path(ino, &path);
	if (rc == 0)
		rc = fs_member_lstat(path, &st);
	g_free(path);
	fs_reply_err(req, rc);
}
