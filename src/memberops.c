// SPDX-License-Identifier: MIT
/* Member operations (memberops.h): the system calls, each behind the
 * fault rules of its volume (fault.h, ECFS_FAULT) in test builds. */
#include "memberops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fault.h"
#include "volume_internal.h"

/* Consults the fault rules (test builds): an operation hit with an errno
 * returns -1 with it, a write or sync hit with errno 0 returns `done`
 * (success) without being made.  v is NULL while a volume is being
 * created: never faulted. */
#ifdef ECFS_FAULT_INJECTION
#define FAULT_GATE(kind, done)                                                  \
	do {                                                                    \
		int err_;                                                       \
		if (v && fault_check(volume_fault_rules(v), idx, (kind), &err_)) { \
			if (!err_)                                              \
				return (done);                                  \
			errno = err_;                                           \
			return -1;                                              \
		}                                                               \
	} while (0)
#else
#define FAULT_GATE(kind, done) do { (void)v; (void)idx; } while (0)
#endif

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
	FAULT_GATE(FAULT_READ, 0);
	return pread(fd, buf, len, off);
}

ssize_t mop_preadv(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	FAULT_GATE(FAULT_READ, 0);
	return preadv(fd, iov, cnt, off);
}

int mop_openat(volume *v, int idx, int dirfd, const char *name, int flags, mode_t mode)
{
	/* creating or truncating changes the member; other opens read it */
	FAULT_GATE(flags & (O_CREAT | O_TRUNC) ? FAULT_META : FAULT_READ, 0);
	return openat(dirfd, name, flags, mode);
}

ssize_t mop_pwrite(volume *v, int idx, int fd, const void *buf, size_t len, off_t off)
{
	FAULT_GATE(FAULT_WRITE, (ssize_t)len);
	return pwrite(fd, buf, len, off);
}

ssize_t mop_pwritev(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	FAULT_GATE(FAULT_WRITE, (ssize_t)iov_total(iov, cnt));
	return pwritev(fd, iov, cnt, off);
}

int mop_ftruncate(volume *v, int idx, int fd, off_t len)
{
	FAULT_GATE(FAULT_WRITE, 0);
	return ftruncate(fd, len);
}

int mop_fallocate(volume *v, int idx, int fd, int mode, off_t off, off_t len)
{
	FAULT_GATE(FAULT_WRITE, 0);
	return fallocate(fd, mode, off, len);
}

int mop_fsync(volume *v, int idx, int fd, bool datasync)
{
	FAULT_GATE(FAULT_SYNC, 0);
	return datasync ? fdatasync(fd) : fsync(fd);
}

int mop_mkdirat(volume *v, int idx, int dirfd, const char *name, mode_t mode)
{
	FAULT_GATE(FAULT_META, 0);
	return mkdirat(dirfd, name, mode);
}

int mop_mknodat(volume *v, int idx, int dirfd, const char *name, mode_t mode, dev_t dev)
{
	FAULT_GATE(FAULT_META, 0);
	return mknodat(dirfd, name, mode, dev);
}

int mop_symlinkat(volume *v, int idx, const char *target, int dirfd, const char *name)
{
	FAULT_GATE(FAULT_META, 0);
	return symlinkat(target, dirfd, name);
}

int mop_linkat(volume *v, int idx, int olddirfd, const char *oldname, int newdirfd,
               const char *newname, int flags)
{
	FAULT_GATE(FAULT_META, 0);
	return linkat(olddirfd, oldname, newdirfd, newname, flags);
}

int mop_unlinkat(volume *v, int idx, int dirfd, const char *name, int flags)
{
	FAULT_GATE(FAULT_META, 0);
	return unlinkat(dirfd, name, flags);
}

int mop_renameat2(volume *v, int idx, int olddirfd, const char *oldname, int newdirfd,
                  const char *newname, unsigned flags)
{
	FAULT_GATE(FAULT_META, 0);
	return renameat2(olddirfd, oldname, newdirfd, newname, flags);
}

int mop_fchmodat(volume *v, int idx, int dirfd, const char *name, mode_t mode, int flags)
{
	FAULT_GATE(FAULT_META, 0);
	return fchmodat(dirfd, name, mode, flags);
}

int mop_fchownat(volume *v, int idx, int dirfd, const char *name, uid_t uid, gid_t gid,
                 int flags)
{
	FAULT_GATE(FAULT_META, 0);
	return fchownat(dirfd, name, uid, gid, flags);
}

int mop_fchown(volume *v, int idx, int fd, uid_t uid, gid_t gid)
{
	FAULT_GATE(FAULT_META, 0);
	return fchown(fd, uid, gid);
}

int mop_utimensat(volume *v, int idx, int dirfd, const char *name,
                  const struct timespec ts[2], int flags)
{
	FAULT_GATE(FAULT_META, 0);
	return utimensat(dirfd, name, ts, flags);
}

int mop_fsetxattr(volume *v, int idx, int fd, const char *name, const void *value,
                  size_t size, int flags)
{
	char path[40];
	FAULT_GATE(FAULT_META, 0);
	return setxattr(proc_path(fd, path), name, value, size, flags);
}

int mop_fremovexattr(volume *v, int idx, int fd, const char *name)
{
	char path[40];
	FAULT_GATE(FAULT_META, 0);
	return removexattr(proc_path(fd, path), name);
}
