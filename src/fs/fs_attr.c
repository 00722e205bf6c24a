/* SPDX-License-Identifier: MIT */
/*
 * Attribute operations: getattr, chmod, chown, utimens, statfs, access.
 * A regular file's attributes come from ecfile (its logical size, not the
 * chunk's); everything else is read from the first healthy member.  Mode,
 * owner and times are set on every member (on the chunk files of a regular
 * file), so any member can answer after another fails.
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
#include "memberops.h"
#include "mirror.h"

/* The root's last known attributes: when more than m members have failed
 * every request fails with EIO, but the root must still answer getattr, or
 * the kernel would not even ask for its user.ecfs.health report. */
static pthread_mutex_t root_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stat root_stat;
static bool root_known;

static int root_getattr(struct stat *st)
{
	int rc = ecfile_stat(fs_volume(), "/", st);
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
	/* ecfile_stat answers for every type: the lstat of the first healthy
	 * member that has the name (another may have lost a chunk), with a
	 * regular file's logical size. */
	int rc = strcmp(path, "/") == 0 ? root_getattr(st) : ecfile_stat(v, path, st);
	if (rc == 0 && volume_usable(v))
		attr_cache_put(fs_attrs(), path, &stamp, st);
	return rc;
}

void fs_refresh_dir(const char *dir)
{
	struct stat st;
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

void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int rc = node_stat(ino, fi, &st);
	if (rc < 0)
		fs_reply_err(req, rc);
	else
		fuse_reply_attr(req, &st, fs_timeouts()->attr);
}

static int chmod_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_fchmodat(fs_volume(), member, dirfd, leaf, *(const mode_t *)arg,
	                    AT_SYMLINK_NOFOLLOW);
}

int fs_chmod_path(const char *path, mode_t mode)
{
	mode &= 07777;
	return mirror_apply(fs_volume(), path, chmod_member, &mode, "chmod");
}

struct owner {
	uid_t uid;
	gid_t gid;
};

static int chown_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct owner *o = arg;
	return mop_fchownat(fs_volume(), member, dirfd, leaf, o->uid, o->gid, AT_SYMLINK_NOFOLLOW);
}

static int utimens_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_utimensat(fs_volume(), member, dirfd, leaf, arg, AT_SYMLINK_NOFOLLOW);
}

static int set_times(fuse_ino_t ino, const char *path, const struct timespec tv[2],
                     struct fuse_file_info *fi)
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
	return mirror_apply(fs_volume(), path, utimens_member, ts, "utimens");
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

/* chmod, chown, truncate and utimens, in that order (as libfuse's path
 * API does them). */
static int set_attrs(fuse_ino_t ino, const char *path, const struct stat *attr, int to_set,
                     struct fuse_file_info *fi)
{
	int rc = 0;
	if (to_set & FUSE_SET_ATTR_MODE)
		rc = fs_chmod_path(path, attr->st_mode);
	if (rc == 0 && (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
		struct owner o = { (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
		                   (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1 };
		rc = mirror_apply(fs_volume(), path, chown_member, &o, "chown");
	}
	if (rc == 0 && (to_set & FUSE_SET_ATTR_SIZE))
		rc = fi ? ecfile_truncate(fs_file_of(fi), attr->st_size)
		        : ecfile_truncate_path(fs_volume(), path, attr->st_size);
	if (rc == 0 && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
	                          FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW))) {
		struct timespec tv[2];
		wanted_times(attr, to_set, tv);
		rc = set_times(ino, path, tv, fi);
	}
	return rc;
}

void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                struct fuse_file_info *fi)
{
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	if (rc == 0)
		rc = set_attrs(ino, path, attr, to_set, fi);
	g_free(path);
	struct stat st;
	if (rc == 0)
		rc = node_stat(ino, fi, &st);
	if (rc < 0)
		fs_reply_err(req, rc);
	else
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
