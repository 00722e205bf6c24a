/* SPDX-License-Identifier: MIT */
/*
 * Member operations: every system call that reads or changes something
 * stored on a member goes through one of these wrappers, so there is one
 * place where test builds inject faults (-Dfault_injection, ECFS_FAULT),
 * record the operations for crash simulation (ECFS_RECORD), and count
 * them (abort after the Nth write).  Each wrapper takes the arguments of
 * the system call it wraps, plus the volume and the member index the
 * descriptor belongs to (v may be NULL while a volume is being created:
 * such calls are plain system calls), and returns what it returns on
 * success (0, a byte count or a descriptor) but a negative errno on
 * failure, as the rest of the core does (errno is left unspecified).  The
 * xattr wrappers also accept O_PATH descriptors.
 *
 * Only the wrappers' plumbing lives here: what a failed member means is
 * still decided by volume_member_error().
 */
#ifndef ECFS_MEMBEROPS_H
#define ECFS_MEMBEROPS_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

typedef struct volume volume;
struct fault_rules;

/* What the member operations keep per volume: the first field of every
 * volume (volume_private.h), so that the volume a wrapper is given leads to it
 * while this layer stays below the volume and knows nothing else of it. */
typedef struct mop_state {
	struct fault_rules *faults; /* ECFS_FAULT (test builds), or NULL */
	uint64_t changes;           /* mop_changes (atomic) */
	uint64_t reads;             /* mop_reads (atomic) */
	uint64_t made;              /* changes that succeeded (atomic): what a member
	                             * failed meanwhile missed (volume_missed.c) */
	uint64_t memory_only;       /* members on tmpfs or ramfs (atomic): mop_fsync,
	                             * mop_reads_here, mop_writes_here */
	struct dirstamps *dirstamps; /* the daemon's, else NULL (dirstamps.h) */
} mop_state;

/* Has v keep the stamps of its member directories (dirstamps.h), which
 * the namespace changes below then take: the daemon's, before its
 * requests start.  mop_dirstamps is the set, NULL if v keeps none. */
void mop_keep_dirstamps(volume *v);
struct dirstamps *mop_dirstamps(volume *v);

/* A count that every mutating wrapper below raises once its call has
 * returned (made, failed or faked), so that what was read of the members
 * while it stood still is still true (attr_cache.h).  v must not be NULL. */
uint64_t mop_changes(volume *v);
/* The same for the reads (mop_pread, mop_preadv), which may move the
 * atime of what they read. */
uint64_t mop_reads(volume *v);

/* Reads (faults only; never recorded). */
ssize_t mop_pread(volume *v, int idx, int fd, void *buf, size_t len, off_t off);
ssize_t mop_preadv(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off);
/* mop_pread straight into buf, also on a worker (no bounce buffer, no
 * copy): the caller lends buf, and keeps it for good if the read is given
 * up inside its call (mio_batch_stuck, mio_free_or_keep), as for a large
 * write (memberio.h). */
ssize_t mop_pread_lent(volume *v, int idx, int fd, void *buf, size_t len, off_t off);
/* True if member idx's reads may be made on the calling thread rather
 * than on its worker (stripe_fetch.c): its filesystem is tmpfs or ramfs,
 * where a read is a copy from memory and cannot wait on a device or a
 * link, so no bound is needed to keep a read from hanging on it.  In
 * test builds, not while a fault rule delays or hangs its reads. */
bool mop_reads_here(volume *v, int idx);
/* The same for small writes and syncs (the small-write log's appends):
 * on tmpfs or ramfs a write is a copy into memory; in test builds, not
 * while a fault rule delays or hangs its writes or syncs. */
bool mop_writes_here(volume *v, int idx);
/* statx beneath dirfd, the result in *stx (the caller's own: on a worker
 * the call may be given up, memberio.h); a read for the faults, not
 * counted in mop_reads (it moves no atime). */
int mop_statx(volume *v, int idx, int dirfd, const char *name, int flags, unsigned mask,
              struct statx *stx);

/* Opens: recorded when flags include O_CREAT (and the file was created). */
int mop_openat(volume *v, int idx, int dirfd, const char *name, int flags, mode_t mode);
/* The same for path beneath rootfd, resolved in one call with no symlink
 * followed and nothing outside it (openat2 with MOP_RESOLVE); -ENOSYS
 * where the kernel has no openat2. */
#define MOP_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
/* The bare openat2 of path beneath dirfd as MOP_RESOLVE says: the fd, or
 * -1 with errno (no wrapper's faults or record; the caller brackets it
 * with MIO_CALL when it is a member call of its own). */
int mop_openat2_beneath(int dirfd, const char *path, int flags, mode_t mode);
int mop_openat_beneath(volume *v, int idx, int rootfd, const char *path, int flags,
                       mode_t mode);
/* An empty marker file (dirfd, name), mode 0600, made if missing; with
 * sync_dir, dirfd is synced after, so the marker outlives a power cut. */
int mop_touchat(volume *v, int idx, int dirfd, const char *name, bool sync_dir);

/* Data writes and barriers. */
ssize_t mop_pwrite(volume *v, int idx, int fd, const void *buf, size_t len, off_t off);
ssize_t mop_pwritev(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off);
int mop_ftruncate(volume *v, int idx, int fd, off_t len);
int mop_fallocate(volume *v, int idx, int fd, int mode, off_t off, off_t len);
int mop_fsync(volume *v, int idx, int fd, bool datasync);
/* False if mop_fsync makes no call on member idx: its filesystem keeps
 * nothing across a power loss (tmpfs, ramfs), so there is no order of
 * writes to keep against one (a recorded run syncs as a disk would). */
bool mop_syncs(volume *v, int idx);
/* mop_pwrite and then mop_fsync(datasync) in one member call (pwritev2
 * with RWF_DSYNC; the two calls where the kernel refuses it): the same
 * faults (a sync fault after the write made) and the same record, a
 * write then a sync.  Returns the bytes written or a negative errno. */
ssize_t mop_pwrite_dsync(volume *v, int idx, int fd, const void *buf, size_t len, off_t off);

/* Namespace changes.  Each also takes the stamps of the directories it
 * changes before and after, where the volume keeps them (dirstamps.h). */
int mop_mkdirat(volume *v, int idx, int dirfd, const char *name, mode_t mode);
int mop_mknodat(volume *v, int idx, int dirfd, const char *name, mode_t mode, dev_t dev);
int mop_symlinkat(volume *v, int idx, const char *target, int dirfd, const char *name);
int mop_linkat(volume *v, int idx, int olddirfd, const char *oldname, int newdirfd,
               const char *newname, int flags);
int mop_unlinkat(volume *v, int idx, int dirfd, const char *name, int flags);
int mop_renameat2(volume *v, int idx, int olddirfd, const char *oldname, int newdirfd,
                  const char *newname, unsigned flags);
/* The fstat the last of the changes above made on this thread took of
 * its directory fd (not one at a path beneath it) right after making it,
 * for its stamp (made only where the volume keeps the directory's): true
 * with *st, false if that change took none.  So a caller that wants the
 * directory's attributes after its change need not stat it again. */
bool mop_dir_after(int fd, struct stat *st);

/* Metadata changes.  Of a directory, each but mop_fchown (which is for
 * chunk files) also takes its stamps before and after (dirstamps.h): its
 * names stay as they were. */
int mop_fchmodat(volume *v, int idx, int dirfd, const char *name, mode_t mode, int flags);
int mop_fchownat(volume *v, int idx, int dirfd, const char *name, uid_t uid, gid_t gid,
                 int flags);
int mop_fchown(volume *v, int idx, int fd, uid_t uid, gid_t gid);
/* The group of a new object made beneath the directory parent_fd for a
 * caller of group gid, as a local filesystem gives it: the directory's
 * group if it is setgid, else gid ((gid_t)-1, "as made", stays). */
gid_t mop_new_object_gid(int parent_fd, gid_t gid);
int mop_utimensat(volume *v, int idx, int dirfd, const char *name,
                  const struct timespec ts[2], int flags);
int mop_fsetxattr(volume *v, int idx, int fd, const char *name, const void *value,
                  size_t size, int flags);
/* setxattr of dirfd/leaf itself, a symlink at leaf not followed: one call. */
int mop_lsetxattrat(volume *v, int idx, int dirfd, const char *leaf, const char *name,
                    const void *value, size_t size, int flags);
int mop_fremovexattr(volume *v, int idx, int fd, const char *name);

/* Positioned I/O of a whole iovec through the wrappers above (iov is
 * used up), resuming after short transfers and EINTR: bytes moved (fewer
 * only at end of file on reads) or a negative errno. */
ssize_t mop_transfer(volume *v, int idx, int fd, struct iovec *iov, int cnt, off_t off,
                     bool write);

#endif
