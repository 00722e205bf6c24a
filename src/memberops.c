// SPDX-License-Identifier: MIT
/* Member operations (memberops.h): pass-throughs to the system calls; for
 * now only the data reads and writes consult the fault rule
 * (volume_fault, ECFS_FAULT).  Recording hooks in here too. */
#include "memberops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "volume_internal.h"

/* True if this operation is to be failed (-1, errno set) or, for a
 * write with errno 0, skipped while reporting success. v is NULL while a
 * volume is being created: never faulted. */
static bool faulted(volume *v, int idx, bool write, int *rc)
{
	int err;

	if (!v || !volume_fault(v, idx, write, &err) || (!write && err == 0))
		return false;
	errno = err;
	*rc = err ? -1 : 0;
	return true;
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* The xattr calls go through /proc/self/fd/N so that they also work on
 * an O_PATH descriptor, which is how symlinks and special files are
 * reached without following them (fs_xattr.c). */
static const char *proc_path(int fd, char buf[40])
{
	snprintf(buf, 40, "/proc/self/fd/%d", fd);
	return buf;
}

ssize_t mop_pread(volume *v, int idx, int fd, void *buf, size_t len, off_t off)
{
	int rc;

	if (faulted(v, idx, false, &rc))
		return rc < 0 ? rc : 0;
	return pread(fd, buf, len, off);
}

ssize_t mop_preadv(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	int rc;

	if (faulted(v, idx, false, &rc))
		return rc < 0 ? rc : 0;
	return preadv(fd, iov, cnt, off);
}

int mop_openat(volume *v, int idx, int dirfd, const char *name, int flags, mode_t mode)
{
	(void)v; (void)idx;
	return openat(dirfd, name, flags, mode);
}

ssize_t mop_pwrite(volume *v, int idx, int fd, const void *buf, size_t len, off_t off)
{
	int rc;

	if (faulted(v, idx, true, &rc))
		return rc < 0 ? rc : (ssize_t)len;
	return pwrite(fd, buf, len, off);
}

ssize_t mop_pwritev(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	int rc;

	if (faulted(v, idx, true, &rc))
		return rc < 0 ? rc : (ssize_t)iov_total(iov, cnt);
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
	char path[40];
	(void)v; (void)idx;
	return setxattr(proc_path(fd, path), name, value, size, flags);
}

int mop_fremovexattr(volume *v, int idx, int fd, const char *name)
{
	char path[40];
	(void)v; (void)idx;
	return removexattr(proc_path(fd, path), name);
}
