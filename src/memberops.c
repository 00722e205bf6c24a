// SPDX-License-Identifier: MIT
/* Member operations (memberops.h): for now plain pass-throughs to the
 * system calls; fault injection and recording hook in here. */
#define _GNU_SOURCE
#include "memberops.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

ssize_t mop_pread(volume *v, int idx, int fd, void *buf, size_t len, off_t off)
{
	(void)v; (void)idx;
	return pread(fd, buf, len, off);
}

ssize_t mop_preadv(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	(void)v; (void)idx;
	return preadv(fd, iov, cnt, off);
}

int mop_openat(volume *v, int idx, int dirfd, const char *name, int flags, mode_t mode)
{
	(void)v; (void)idx;
	return openat(dirfd, name, flags, mode);
}

ssize_t mop_pwrite(volume *v, int idx, int fd, const void *buf, size_t len, off_t off)
{
	(void)v; (void)idx;
	return pwrite(fd, buf, len, off);
}

ssize_t mop_pwritev(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	(void)v; (void)idx;
	return pwritev(fd, iov, cnt, off);
}

int mop_ftruncate(volume *v, int idx, int fd, off_t len)
{
	(void)v; (void)idx;
	return ftruncate(fd, len);
}

int mop_fallocate(volume *v, int idx, int fd, int mode, off_t off, off_t len)
{
	(void)v; (void)idx;
	return fallocate(fd, mode, off, len);
}

int mop_fsync(volume *v, int idx, int fd, bool datasync)
{
	(void)v; (void)idx;
	return datasync ? fdatasync(fd) : fsync(fd);
}

int mop_mkdirat(volume *v, int idx, int dirfd, const char *name, mode_t mode)
{
	(void)v; (void)idx;
	return mkdirat(dirfd, name, mode);
}

int mop_mknodat(volume *v, int idx, int dirfd, const char *name, mode_t mode, dev_t dev)
{
	(void)v; (void)idx;
	return mknodat(dirfd, name, mode, dev);
}

int mop_symlinkat(volume *v, int idx, const char *target, int dirfd, const char *name)
{
	(void)v; (void)idx;
	return symlinkat(target, dirfd, name);
}

int mop_linkat(volume *v, int idx, int olddirfd, const char *oldname, int newdirfd,
               const char *newname, int flags)
{
	(void)v; (void)idx;
	return linkat(olddirfd, oldname, newdirfd, newname, flags);
}

int mop_unlinkat(volume *v, int idx, int dirfd, const char *name, int flags)
{
	(void)v; (void)idx;
	return unlinkat(dirfd, name, flags);
}

int mop_renameat2(volume *v, int idx, int olddirfd, const char *oldname, int newdirfd,
                  const char *newname, unsigned flags)
{
	(void)v; (void)idx;
	return renameat2(olddirfd, oldname, newdirfd, newname, flags);
}

int mop_fchmodat(volume *v, int idx, int dirfd, const char *name, mode_t mode, int flags)
{
	(void)v; (void)idx;
	return fchmodat(dirfd, name, mode, flags);
}

int mop_fchownat(volume *v, int idx, int dirfd, const char *name, uid_t uid, gid_t gid,
                 int flags)
{
	(void)v; (void)idx;
	return fchownat(dirfd, name, uid, gid, flags);
}

int mop_fchown(volume *v, int idx, int fd, uid_t uid, gid_t gid)
{
	(void)v; (void)idx;
	return fchown(fd, uid, gid);
}

int mop_utimensat(volume *v, int idx, int dirfd, const char *name,
                  const struct timespec ts[2], int flags)
{
	(void)v; (void)idx;
	return utimensat(dirfd, name, ts, flags);
}

int mop_fsetxattr(volume *v, int idx, int fd, const char *name, const void *value,
                  size_t size, int flags)
{
	(void)v; (void)idx;
	return fsetxattr(fd, name, value, size, flags);
}

int mop_fremovexattr(volume *v, int idx, int fd, const char *name)
{
	(void)v; (void)idx;
	return fremovexattr(fd, name);
}
