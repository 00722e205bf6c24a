/* SPDX-License-Identifier: MIT */
/*
 * Regular-file operations: create, open, read, write, flush, release,
 * fsync, truncate and fallocate.  The data path belongs to ecfile.h; this
 * layer only maps FUSE requests onto it.  The open-file handle (fi->fh) is
 * the ecfile itself, so fd-based requests do not use the path and keep
 * working after unlink or rename.
 */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "ecfile.h"
#include "xattrs.h"

static ecfile *file_of(const struct fuse_file_info *fi)
{
	return (ecfile *)(uintptr_t)fi->fh;
}

/* A write-only open bypasses the page cache (direct I/O): the cache is
 * write-through here anyway, so its pages would only cost the writer an
 * allocation and a copy per page.  Such an fd can neither read nor mmap;
 * the kernel drops cached pages of the range from other opens on each
 * direct write, so they stay coherent.  (A write request carries its
 * open's flags, so write_only() also tells which writes came direct.) */
static bool write_only(const struct fuse_file_info *fi)
{
	return (fi->flags & O_ACCMODE) == O_WRONLY;
}

static void write_only_direct(struct fuse_file_info *fi)
{
	if (write_only(fi))
		fi->direct_io = 1;
}

bool fs_caller_in_group(gid_t gid)
{
	gid_t groups[256];

	if (fuse_get_context()->gid == gid)
		return true;
	int n = fuse_getgroups((int)(sizeof(groups) / sizeof(groups[0])), groups);
	for (int i = 0; i < n && i < (int)(sizeof(groups) / sizeof(groups[0])); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* A write by a user without CAP_FSETID clears the file's setuid bit, and
 * its setgid bit if the file is group-executable or the writer is not in
 * its group (the kernel's should_remove_suid and setattr_should_drop_sgid).
 * The kernel does that before a write through the page cache, but a direct
 * write reaches us with the bits set, so the daemon does it.  The request
 * tells the writer's ids, not its capabilities: anyone but root clears. */
static int remove_privs(const char *path, const struct fuse_file_info *fi)
{
	char buf[FS_ORPHAN_PATH_MAX];
	struct stat st;

	if (!write_only(fi) || fuse_get_context()->uid == 0)
		return 0;
	int rc = ecfile_stat(fs_volume(), fs_path(path, buf), &st);
	if (rc < 0)
		return rc;
	mode_t kill = st.st_mode & S_ISUID;
	if ((st.st_mode & S_ISGID) && ((st.st_mode & S_IXGRP) || !fs_caller_in_group(st.st_gid)))
		kill |= S_ISGID;
	if (!S_ISREG(st.st_mode) || !kill)
		return 0;
	return fs_chmod(path, st.st_mode & 07777 & ~kill, NULL);
}

int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	if (volume_path_reserved(path))
		return -EPERM;
	uid_t uid;
	gid_t gid;
	int rc = fs_new_owner(path, &uid, &gid);
	if (rc < 0)
		return rc;
	ecfile *f;
	mode = xattrs_create_mode(fs_volume(), path, mode & 07777, fuse_get_context()->umask);
	rc = ecfile_create(fs_volume(), path, fi->flags, mode, uid, gid, &f);
	if (rc < 0)
		return rc;
	fi->fh = (uintptr_t)f;
	write_only_direct(fi);
	return 0;
}

int fs_open(const char *path, struct fuse_file_info *fi)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	ecfile *f;
	int rc = ecfile_open(fs_volume(), path, fi->flags, &f);
	if (rc < 0)
		return rc;
	fi->fh = (uintptr_t)f;
	write_only_direct(fi);
	return 0;
}

int fs_read(const char *path, char *buf, size_t size, off_t off,
            struct fuse_file_info *fi)
{
	return (int)ecfile_read(file_of(fi), buf, size, off);
}

int fs_write(const char *path, const char *buf, size_t size, off_t off,
             struct fuse_file_info *fi)
{
	int rc = remove_privs(path, fi);
	if (rc < 0)
		return rc;
	return (int)ecfile_write(file_of(fi), buf, size, off);
}

int fs_flush(const char *path, struct fuse_file_info *fi)
{
	return ecfile_flush(file_of(fi));
}

int fs_release(const char *path, struct fuse_file_info *fi)
{
	return ecfile_release(file_of(fi));
}

int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	return ecfile_fsync(file_of(fi), datasync);
}

int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	if (fi)
		return ecfile_truncate(file_of(fi), size);
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	return ecfile_truncate_path(fs_volume(), fs_path(path, buf), size);
}

int fs_fallocate(const char *path, int mode, off_t off, off_t len,
                 struct fuse_file_info *fi)
{
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	return ecfile_fallocate(file_of(fi), mode, off, len);
}

int fs_flush_path(const char *path)
{
	ecfile *f;
	int rc = ecfile_open(fs_volume(), path, O_RDONLY, &f);
	if (rc < 0)
		return rc;
	rc = ecfile_flush(f);
	int rc2 = ecfile_release(f);
	return rc < 0 ? rc : rc2;
}
