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

int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	if (fi)
		return ecfile_fstat((ecfile *)(uintptr_t)fi->fh, st);
	if (volume_path_reserved(path))
		return -ENOENT;
	/* The kernel asks for every directory of a path at each walk, and
	 * for a file right after its lookup: those answers come from
	 * attr_cache.h while nothing changed. */
	volume *v = fs_volume();
	attr_stamp stamp = fs_stamp();
	if (volume_usable(v) && attr_cache_get(fs_attrs(), path, &stamp, st))
		return 0;
	char buf[FS_ORPHAN_PATH_MAX];
	/* ecfile_stat answers for every type: the lstat of the first healthy
	 * member that has the name (another may have lost a chunk), with a
	 * regular file's logical size. */
	int rc = strcmp(path, "/") == 0 ? root_getattr(st)
	                                : ecfile_stat(v, fs_path(path, buf), st);
	if (rc == 0 && volume_usable(v))
		attr_cache_put(fs_attrs(), path, &stamp, st);
	return rc;
}

static int chmod_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_fchmodat(fs_volume(), member, dirfd, leaf, *(const mode_t *)arg,
	                    AT_SYMLINK_NOFOLLOW);
}

int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	/* No path: libfuse lost the file's name (ecfile.h has no fchmod). */
	if (!path)
		return -EOPNOTSUPP;
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
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

int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	if (!path)
		return -EOPNOTSUPP;
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
	struct owner o = { uid, gid };
	return mirror_apply(fs_volume(), path, chown_member, &o, "chown");
}

static int utimens_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_utimensat(fs_volume(), member, dirfd, leaf, arg, AT_SYMLINK_NOFOLLOW);
}

int fs_utimens(const char *path, const struct timespec tv[2],
               struct fuse_file_info *fi)
{
	if (!path)
		return -EOPNOTSUPP;
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
	/* One clock reading for UTIME_NOW, so that every member stores the
	 * same time and any of them can answer getattr. */
	struct timespec ts[2] = { tv[0], tv[1] };
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	for (int i = 0; i < 2; i++)
		if (ts[i].tv_nsec == UTIME_NOW)
			ts[i] = now;
	struct stat st;
	int rc = fs_member_lstat(path, &st);
	if (rc < 0)
		return rc;
	/* Data still buffered in an open ecfile would reach the chunk files
	 * later and move their mtime past the one set here (cp -p, tar). */
	if (S_ISREG(st.st_mode) && ts[1].tv_nsec != UTIME_OMIT) {
		rc = fs_flush_path(path);
		if (rc < 0)
			return rc;
	}
	return mirror_apply(fs_volume(), path, utimens_member, ts, "utimens");
}

int fs_statfs(const char *path, struct statvfs *st)
{
	return volume_statfs(fs_volume(), st);
}

int fs_access(const char *path, int mask)
{
	/* Reached only without default_permissions, which the daemon always
	 * sets: the kernel checks permissions, this checks existence. */
	if (volume_path_reserved(path))
		return -ENOENT;
	struct stat st;
	return fs_member_lstat(path, &st);
}
