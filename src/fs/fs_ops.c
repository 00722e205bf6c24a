/* SPDX-License-Identifier: MIT */
/*
 * The operations table of the ecfs daemon, filled in one place, the
 * connection setup (init), and the small helpers the operation families
 * share: the volume of the request, and who owns a newly created object.
 */
#include "fs_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ecfile.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "mirror.h"
#include "xattrs.h"

#define ECFS_MAX_REQUEST (1u << 20) /* 1 MiB writes and read-ahead */

/* The mounted filesystem, for threads with no FUSE context: the member
 * workers run the mirror fns (volume_on_member). */
static struct ecfs_fs *mounted;

static struct ecfs_fs *fs_state(void)
{
	struct fuse_context *ctx = fuse_get_context();
	return ctx && ctx->private_data ? ctx->private_data : mounted;
}

volume *fs_volume(void)
{
	return fs_state()->vol;
}

attr_cache *fs_attrs(void)
{
	return fs_state()->attrs;
}

attr_stamp fs_stamp(void)
{
	volume *v = fs_volume();
	return (attr_stamp){ mop_changes(v), attr_cache_listings(fs_attrs()), mop_reads(v),
	                     ecfile_stat_epoch(v) };
}

/* The mirror fns run on member workers: a stat lands in a local first
 * (volume_on_member). */
static int stat_parent(int member, int dirfd, const char *leaf, void *arg)
{
	struct stat st;
	int rc = mirror_errno(MIO_CALL(fstat(dirfd, &st)));
	if (rc == 0)
		*(struct stat *)arg = st;
	return rc;
}

int fs_new_owner(const char *path, uid_t *uid, gid_t *gid)
{
	if (!fs_state()->chown_new) {
		/* Not root: objects can only belong to the daemon's user, and
		 * (uid_t)-1 tells every chown below to leave them as made. */
		*uid = (uid_t)-1;
		*gid = (gid_t)-1;
		return 0;
	}
	struct fuse_context *ctx = fuse_get_context();
	struct stat parent;
	int rc = mirror_query(fs_volume(), path, stat_parent, &parent, "stat parent");
	if (rc < 0)
		return rc;
	*uid = ctx->uid;
	*gid = (parent.st_mode & S_ISGID) ? parent.st_gid : ctx->gid;
	return 0;
}

int fs_chown_new(int member, int dirfd, const char *leaf, uid_t uid, gid_t gid)
{
	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return 0;
	return mop_fchownat(fs_volume(), member, dirfd, leaf, uid, gid, AT_SYMLINK_NOFOLLOW);
}

static int lstat_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct stat st;
	int rc = mirror_errno(MIO_CALL(fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW)));
	if (rc == 0)
		*(struct stat *)arg = st;
	return rc;
}

int fs_member_lstat(const char *path, struct stat *st)
{
	return mirror_query(fs_volume(), path, lstat_member, st, "stat");
}

/* True for the names libfuse hides open files under: the prefix and
 * exactly 16 lowercase hex digits (its node id and a counter). */
static bool hidden_name(const char *leaf)
{
	size_t plen = strlen(FS_HIDDEN_PREFIX);
	if (strncmp(leaf, FS_HIDDEN_PREFIX, plen) != 0 || strlen(leaf) != plen + 16)
		return false;
	for (const char *c = leaf + plen; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			return false;
	return true;
}

const char *fs_path(const char *path, char *buf)
{
	if (!path)
		return NULL;
	const char *leaf = strrchr(path, '/');
	leaf = leaf ? leaf + 1 : path;
	if (!hidden_name(leaf))
		return path;
	snprintf(buf, FS_ORPHAN_PATH_MAX, "%s/%s", FS_ORPHAN_DIR, leaf);
	return buf;
}

static int orphans_member(int member, int dirfd, const char *leaf, void *arg)
{
	volume *v = arg; /* before mounting: no FUSE context to ask */
	int rc = mop_mkdirat(v, member, dirfd, leaf, 0700);

	if (rc < 0 && rc != -EEXIST)
		return rc;
	int fd = MIO_CALL(openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	if (fd < 0)
		return -errno;
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

void fs_orphans_prepare(volume *v)
{
	int rc = mirror_apply(v, FS_ORPHAN_DIR, orphans_member, v, "orphan folder");
	if (rc < 0)
		ecfs_log(LOG_WARNING, "cannot prepare the orphan folder %s: %s; files unlinked "
		         "while open may fail", FS_ORPHAN_DIR, strerror(-rc));
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* An unlinked open file is renamed to a hidden name (see fs_path)
	 * rather than removed: libfuse only gives paths, and a removed file
	 * would lose fstat and fchmod (read and write would work, through the
	 * ecfile's fds).  Requests made with a file handle still get their
	 * path: ftruncate of a setuid file by another user comes with a chmod
	 * that clears the bit, and ecfile.h has no fchmod to do it by handle. */
	cfg->hard_remove = 0;
	cfg->nullpath_ok = 0;
	/* Member inode numbers change when a member fails: let libfuse
	 * number the inodes. */
	cfg->use_ino = 0;

	conn->max_write = ECFS_MAX_REQUEST;
	conn->max_readahead = ECFS_MAX_REQUEST;
	/* The kernel clears setuid/setgid on write and chown (the daemon
	 * writes as root, which would not), and caches writes through: every
	 * write reaches an ecfile at once, so reads through the page cache
	 * stay coherent. */
	conn->want &= ~(unsigned)(FUSE_CAP_DONT_MASK | FUSE_CAP_HANDLE_KILLPRIV |
	                          FUSE_CAP_WRITEBACK_CACHE);
	/* POSIX ACLs, enforced by the kernel, when every member keeps them
	 * (xattrs.h).  The umask is then the daemon's to apply, as a default
	 * ACL replaces it (xattrs_create_mode); otherwise the kernel applies
	 * it before the daemon sees the mode. */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && xattrs_acl_supported(fs_state()->vol))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
	mounted = fs_state();
	return mounted;
}

static const struct fuse_operations operations = {
	.init = fs_init,
	/* files */
	.create = fs_create,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.release = fs_release,
	.fsync = fs_fsync,
	.truncate = fs_truncate,
	.fallocate = fs_fallocate,
	/* directories */
	.mkdir = fs_mkdir,
	.rmdir = fs_rmdir,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	/* attributes */
	.getattr = fs_getattr,
	.chmod = fs_chmod,
	.chown = fs_chown,
	.utimens = fs_utimens,
	.statfs = fs_statfs,
	.access = fs_access,
	/* names and links */
	.unlink = fs_unlink,
	.rename = fs_rename,
	.symlink = fs_symlink,
	.readlink = fs_readlink,
	.link = fs_link,
	.mknod = fs_mknod,
	/* extended attributes */
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
};

const struct fuse_operations *ecfs_fs_operations(void)
{
	return &operations;
}
