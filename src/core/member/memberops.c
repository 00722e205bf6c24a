// SPDX-License-Identifier: MIT
/* Member operations (memberops.h): the system calls, each behind the
 * fault rules of its volume (fault.h, ECFS_FAULT) in test builds, the
 * mutating ones counted and recorded there too (record.h, ECFS_RECORD).
 * A mutating operation that a fault fails or fakes is neither. */
#include "memberops.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dirstamps.h"
#include "fault.h"
#include "memberio.h"
#include "record.h"

/* Counts a write or namespace change made on a member (mop_state.made:
 * what a member failed meanwhile missed, volume_missed.c). */
static inline void count_made(volume *v, bool made)
{
	if (v && made)
		__atomic_add_fetch(&((mop_state *)(void *)v)->made, 1, __ATOMIC_RELAXED);
}

/* Consults the fault rules (test builds): an operation hit with an errno
 * returns it negated, a write or sync hit with errno 0 returns `done`
 * (success) without being made.  v is NULL while a volume is being
 * created: never faulted. */
#ifdef ECFS_FAULT_INJECTION
/* A volume begins with our state (mop_state, memberops.h). */
static fault_rules *volume_faults(volume *v)
{
	return ((mop_state *)(void *)v)->faults;
}

#define FAULT_GATE(kind, done)                                                  \
	do {                                                                    \
		int err_;                                                       \
		if (v && fault_check(volume_faults(v), idx, (kind), &err_)) {   \
			if (!err_)                                              \
				return (done);                                  \
			return -err_;                                           \
		}                                                               \
	} while (0)
#define RECORDING 1
#define FAULT_MAY_BLOCK(kind) (v && fault_may_block(volume_faults(v), idx, (kind)))
#else
/* (sizeof: done is not evaluated, only its helpers count as used) */
#define FAULT_GATE(kind, done) do { (void)v; (void)idx; (void)sizeof(done); } while (0)
#define RECORDING 0
#define FAULT_MAY_BLOCK(kind) false
#endif

/* Every wrapper is one member call for the I/O timeout (memberio.h): the
 * bracket opens before the fault gate, so an injected hang is timed like
 * a real one, and closes at return, where a call given up stops. */
static void io_scope_end(int *unused)
{
	(void)unused;
	mio_io_end();
}
#define IO_SCOPE() \
	int io_scope_ __attribute__((cleanup(io_scope_end), unused)) = (mio_io_begin(), 0)

void mop_keep_dirstamps(volume *v)
{
	assert(!mop_dirstamps(v)); /* once per volume: a second set would lose the first */
	__atomic_store_n(&((mop_state *)(void *)v)->dirstamps, dirstamps_new(), __ATOMIC_RELEASE);
}

dirstamps *mop_dirstamps(volume *v)
{
	return v ? __atomic_load_n(&((mop_state *)(void *)v)->dirstamps, __ATOMIC_ACQUIRE) : NULL;
}

uint64_t mop_changes(volume *v)
{
	return __atomic_load_n(&((mop_state *)(void *)v)->changes, __ATOMIC_ACQUIRE);
}

uint64_t mop_reads(volume *v)
{
	return __atomic_load_n(&((mop_state *)(void *)v)->reads, __ATOMIC_ACQUIRE);
}

/* In every mutating wrapper, after IO_SCOPE: the change count goes up at
 * return, once the call is over whatever it did; the call is one that
 * changes the member for the watchdog (mio_io_changes). */
static void change_scope_end(volume **v)
{
	if (*v)
		__atomic_add_fetch(&((mop_state *)(void *)*v)->changes, 1, __ATOMIC_ACQ_REL);
}
static volume *change_scope_begin(volume *v)
{
	mio_io_changes();
	return v;
}
#define CHANGE_SCOPE()                                                              \
	volume *change_scope_ __attribute__((cleanup(change_scope_end), unused)) = \
		change_scope_begin(v)

/* The stamp of the directory a change is made in (dirstamps.h), taken
 * before the change where the volume keeps stamps of the member; at the
 * wrapper's return, with the stamp after and whether the change was
 * made as asked (`made`, set by the wrapper: a change a fault failed or
 * faked is not), it tells the volume's stamps.  The directory is fd, or
 * the one at path `at` beneath it (not NULL: a create by path, or the
 * object whose attributes change, if it is a directory: its names stay
 * as known).  Declared after IO_SCOPE, so both stats are part of the
 * member call. */
struct dir_watch {
	volume *v;
	int idx, fd;
	const char *at;
	bool on, made;
	dirstamp before;
};

/* The fstat of its directory the last change on this thread took after
 * it (mop_dir_after), fd = -1: none. */
static __thread struct {
	int fd;
	struct stat st;
} dir_after = { .fd = -1 };

static bool stat_dir(const struct dir_watch *w, dirstamp *out, struct stat *st)
{
	int at_flags = AT_SYMLINK_NOFOLLOW | (w->at && !*w->at ? AT_EMPTY_PATH : 0);
	if ((w->at ? fstatat(w->fd, w->at, st, at_flags) : fstat(w->fd, st)) < 0 ||
	    !S_ISDIR(st->st_mode))
		return false;
	dirstamp_of(st, out);
	return true;
}

static struct dir_watch watch_begin(volume *v, int idx, int fd, const char *at,
                                    const struct dir_watch *other)
{
	struct dir_watch w = { v, idx, fd, at, false, false, { 0 } };
	dirstamps *known = mop_dirstamps(v);
	struct stat st;
	dir_after.fd = -1;
	/* a directory not known (a new one, whose owner and identity are
	 * being set) needs no stat after */
	if (fd == AT_FDCWD || !dirstamps_watching(known, idx) || !stat_dir(&w, &w.before, &st) ||
	    !dirstamps_knows(known, idx, w.before.ino))
		return w;
	/* a rename or link within one directory changes it once */
	w.on = !(other && other->on && other->before.ino == w.before.ino);
	return w;
}

static void watch_end(struct dir_watch *w)
{
	if (!w->on)
		return;
	dirstamp after = w->before;
	struct stat st;
	bool seen = stat_dir(w, &after, &st);
	dirstamps_changed(mop_dirstamps(w->v), w->idx, &w->before, &after, w->made && seen);
	if (seen && w->made && !w->at) {
		dir_after.fd = w->fd;
		dir_after.st = st;
	}
}

bool mop_dir_after(int fd, struct stat *st)
{
	if (fd < 0 || dir_after.fd != fd)
		return false;
	*st = dir_after.st;
	return true;
}
#define DIR_WATCH(name, fd, at, other) \
	struct dir_watch name __attribute__((cleanup(watch_end))) = watch_begin(v, idx, fd, at, other)

/* The directory a create by path beneath a member root makes its name
 * in (a path relative to that root), into buf (PATH_MAX bytes): the path
 * up to its last '/', or "." if it has none.  NULL for an open that
 * creates nothing. */
static const char *created_in(const char *path, int flags, char *buf)
{
	const char *slash = strrchr(path, '/');
	if (!(flags & O_CREAT) || (slash && (size_t)(slash - path) >= PATH_MAX))
		return NULL;
	if (!slash || slash == path)
		return ".";
	memcpy(buf, path, (size_t)(slash - path));
	buf[slash - path] = '\0';
	return buf;
}

/* Around a mutating system call (record.h): begin() and record_end()
 * serialise it with its record while recording or abort_after is set. */
static bool begin(void)
{
	return RECORDING && record_begin();
}

/* A system call's result in our convention: -errno on failure, taken
 * before anything else can change errno. */
static ssize_t neg_errno(ssize_t rc)
{
	return rc < 0 ? -errno : rc;
}

enum { ST_MODE, ST_TYPE_MODE, ST_OWNER, ST_TIMES };

/* The fields of what the object at dirfd/name (name "": dirfd itself) has
 * after the operation. */
static void rec_stat(rec_line *l, int dirfd, const char *name, int what)
{
	struct stat st;

	if (!l || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH)) < 0)
		return;
	switch (what) {
	case ST_MODE:
		record_int(l, "mode", st.st_mode & 07777);
		break;
	case ST_TYPE_MODE:
		record_int(l, "mode", st.st_mode);
		break;
	case ST_OWNER:
		record_int(l, "uid", st.st_uid);
		record_int(l, "gid", st.st_gid);
		break;
	default:
		record_int(l, "atime_ns", st.st_atim.tv_sec * 1000000000LL + st.st_atim.tv_nsec);
		record_int(l, "mtime_ns", st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
	}
}

/* A line about the object of descriptor fd, with its stat fields. */
static void rec_fd(const char *op, int idx, int fd, int what)
{
	rec_line *l = record_line(op, idx);
	record_path_fd(l, "path", fd);
	if (what >= 0)
		rec_stat(l, fd, "", what);
	record_done(l);
}

/* A line about dirfd/name, with its stat fields. */
static void rec_at(const char *op, int idx, int dirfd, const char *name, int what)
{
	rec_line *l = record_line(op, idx);
	record_path_at(l, "path", dirfd, name);
	if (what >= 0)
		rec_stat(l, dirfd, name, what);
	record_done(l);
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
 * reached without following them (fs_xattr.c); /proc/self/fd/N/leaf
 * reaches an entry of directory N in the same call. */
static const char *proc_path(int fd, const char *leaf, char buf[PATH_MAX])
{
	snprintf(buf, PATH_MAX, "/proc/self/fd/%d%s%s", fd, *leaf ? "/" : "", leaf);
	return buf;
}

static ssize_t gated_preadv(volume *v, int idx, int fd, const struct iovec *iov, int cnt,
                            off_t off)
{
	FAULT_GATE(FAULT_READ | FAULT_DATA, 0);
	return neg_errno(preadv(fd, iov, cnt, off));
}

/* On a worker the bytes come through its bounce buffer (memberio.h): a
 * read given up must not land in memory its caller has moved on from;
 * unless lent, when the caller keeps the memory for such a read. */
static ssize_t read_iov(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off,
                        bool lent)
{
	size_t len = iov_total(iov, cnt);
	/* a read into the bounce buffer itself (a bounded read's) lands there */
	bool direct = lent || (cnt == 1 && mio_bounce_holds(iov->iov_base, len));
	uint8_t *bounce = direct ? NULL : mio_bounce(len);
	struct iovec biov = { bounce, len };
	ssize_t r;

	mio_io_begin();
	r = bounce ? gated_preadv(v, idx, fd, &biov, 1, off) : gated_preadv(v, idx, fd, iov, cnt, off);
	if (v)
		__atomic_add_fetch(&((mop_state *)(void *)v)->reads, 1, __ATOMIC_ACQ_REL);
	mio_io_end();
	assert(!bounce || r <= (ssize_t)len); /* the copy below stays in the bounce */
	for (ssize_t done = 0; bounce && done < r; iov++) {
		size_t part = (size_t)(r - done) < iov->iov_len ? (size_t)(r - done) : iov->iov_len;
		memcpy(iov->iov_base, bounce + done, part);
		done += (ssize_t)part;
	}
	return r;
}

ssize_t mop_pread(volume *v, int idx, int fd, void *buf, size_t len, off_t off)
{
	struct iovec iov = { buf, len };
	return read_iov(v, idx, fd, &iov, 1, off, false);
}

ssize_t mop_pread_lent(volume *v, int idx, int fd, void *buf, size_t len, off_t off)
{
	struct iovec iov = { buf, len };
	return read_iov(v, idx, fd, &iov, 1, off, true);
}

ssize_t mop_preadv(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	return read_iov(v, idx, fd, iov, cnt, off, false);
}

/* Member idx's calls of kinds cannot wait: its filesystem is in memory
 * and no fault rule delays or hangs them (mop_reads_here, mop_writes_here). */
static bool calls_here(volume *v, int idx, int kinds)
{
	const mop_state *s = (const mop_state *)(const void *)v;
	assert(idx >= 0 && idx < 64); /* a bit of memory_only */
	(void)kinds; /* without fault injection */
	return v && (__atomic_load_n(&s->memory_only, __ATOMIC_RELAXED) >> idx & 1) &&
	       !FAULT_MAY_BLOCK(kinds);
}

bool mop_reads_here(volume *v, int idx)
{
	return calls_here(v, idx, FAULT_READ | FAULT_DATA);
}

bool mop_writes_here(volume *v, int idx)
{
	return calls_here(v, idx, FAULT_WRITE | FAULT_SYNC);
}

int mop_statx(volume *v, int idx, int dirfd, const char *name, int flags, unsigned mask,
              struct statx *stx)
{
	IO_SCOPE();
	FAULT_GATE(FAULT_READ, -EIO);
	return (int)neg_errno(statx(dirfd, name, flags, mask, stx));
}

int mop_openat2_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = { .flags = (uint64_t)flags, .resolve = MOP_RESOLVE,
	                        .mode = flags & O_CREAT ? mode : 0 };
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* openat, or with beneath openat2 resolving as MOP_RESOLVE says. */
static int open_from(int dirfd, const char *name, int flags, mode_t mode, bool beneath)
{
	return beneath ? mop_openat2_beneath(dirfd, name, flags, mode)
	               : openat(dirfd, name, flags, mode);
}

static int open_recorded(volume *v, int idx, int dirfd, const char *name, int flags,
                         mode_t mode, bool beneath)
{
	bool changes = flags & (O_CREAT | O_TRUNC);
	struct stat st;

	/* creating or truncating changes the member; other opens read it */
	IO_SCOPE();
	volume *change_scope_ __attribute__((cleanup(change_scope_end), unused)) =
		changes ? change_scope_begin(v) : NULL;
	char parent[PATH_MAX];
	const char *in = beneath ? created_in(name, flags, parent) : NULL;
	DIR_WATCH(dir, (flags & O_CREAT) && (!beneath || in) ? dirfd : AT_FDCWD, in, NULL);
	FAULT_GATE(changes ? FAULT_META : FAULT_READ, 0);
	if (!changes)
		return (int)neg_errno(open_from(dirfd, name, flags, mode, beneath));
	/* Under the record's lock nothing else of ours creates it meanwhile.
	 * An open that finds the file there changes nothing: not counted, or
	 * a member failed meanwhile would be recorded as having missed it
	 * (volume_missed.c), in every build alike. */
	bool locked = begin();
	bool existed = !(flags & O_CREAT) ||
	               (!(flags & O_EXCL) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0);
	int fd = (int)neg_errno(open_from(dirfd, name, flags, mode, beneath));
	if (RECORDING && fd >= 0 && !existed)
		rec_fd("create", idx, fd, ST_MODE);
	else if (RECORDING && fd >= 0 && (flags & O_TRUNC)) {
		rec_line *l = record_line("truncate", idx);
		record_path_fd(l, "path", fd);
		record_int(l, "len", 0);
		record_done(l);
	}
	record_end(locked);
	count_made(v, fd >= 0 && (!existed || (flags & O_TRUNC)));
	/* a create that found the name (O_EXCL) left the directory as it was */
	dir.made = fd >= 0 || fd == -EEXIST;
	return fd;
}

int mop_openat(volume *v, int idx, int dirfd, const char *name, int flags, mode_t mode)
{
	return open_recorded(v, idx, dirfd, name, flags, mode, false);
}

int mop_openat_beneath(volume *v, int idx, int rootfd, const char *path, int flags,
                       mode_t mode)
{
	return open_recorded(v, idx, rootfd, path, flags, mode, true);
}

int mop_touchat(volume *v, int idx, int dirfd, const char *name, bool sync_dir)
{
	int fd = mop_openat(v, idx, dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	                    0600);
	if (fd < 0)
		return fd;
	MIO_CALL(close(fd));
	return sync_dir ? mop_fsync(v, idx, dirfd, false) : 0;
}

/* On a worker, a small write goes out of its bounce buffer (memberio.h):
 * should the call be given up and come back later, the kernel copies
 * from memory that is the worker's, not from the caller's, which may be
 * freed by then.  *one takes the bounce's iovec; returns the iovec to
 * write. */
static const struct iovec *write_source(const struct iovec *iov, int *cnt, size_t len,
                                        struct iovec *one)
{
	uint8_t *bounce = len <= MIO_BOUNCE_WRITE_MAX ? mio_bounce(len) : NULL;

	if (!bounce)
		return iov;
	for (size_t done = 0; done < len; iov++) {
		memcpy(bounce + done, iov->iov_base, iov->iov_len);
		done += iov->iov_len;
	}
	*one = (struct iovec){ bounce, len };
	*cnt = 1;
	return one;
}

static ssize_t write_iov(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	struct iovec bounced;
	iov = write_source(iov, &cnt, iov_total(iov, cnt), &bounced);
	IO_SCOPE();
	CHANGE_SCOPE();
	FAULT_GATE(FAULT_WRITE, (ssize_t)iov_total(iov, cnt));
	bool locked = begin();
	ssize_t rc = neg_errno(pwritev(fd, iov, cnt, off));
	if (RECORDING && rc >= 0) {
		rec_line *l = record_line("write", idx);
		record_path_fd(l, "path", fd);
		record_data(l, iov, cnt, (size_t)rc, off);
		record_done(l);
	}
	record_end(locked);
	count_made(v, rc >= 0);
	return rc;
}

ssize_t mop_pwrite(volume *v, int idx, int fd, const void *buf, size_t len, off_t off)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	return write_iov(v, idx, fd, &iov, 1, off);
}

ssize_t mop_pwritev(volume *v, int idx, int fd, const struct iovec *iov, int cnt, off_t off)
{
	return write_iov(v, idx, fd, iov, cnt, off);
}

int mop_ftruncate(volume *v, int idx, int fd, off_t len)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	FAULT_GATE(FAULT_WRITE, 0);
	bool locked = begin();
	int rc = (int)neg_errno(ftruncate(fd, len));
	if (RECORDING && rc == 0) {
		rec_line *l = record_line("truncate", idx);
		record_path_fd(l, "path", fd);
		record_int(l, "len", len);
		record_done(l);
	}
	record_end(locked);
	count_made(v, rc >= 0);
	return rc;
}

int mop_fallocate(volume *v, int idx, int fd, int mode, off_t off, off_t len)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	FAULT_GATE(FAULT_WRITE, 0);
	bool locked = begin();
	int rc = (int)neg_errno(fallocate(fd, mode, off, len));
	if (RECORDING && rc == 0) {
		rec_line *l = record_line("fallocate", idx);
		record_path_fd(l, "path", fd);
		record_int(l, "mode", mode);
		record_int(l, "off", off);
		record_int(l, "len", len);
		record_done(l);
	}
	record_end(locked);
	count_made(v, rc >= 0);
	return rc;
}

/* A member whose filesystem keeps nothing across a power loss (tmpfs,
 * ramfs) has no order of writes to keep against one, and the daemon's
 * own crash loses nothing the kernel holds: its syncs are not made.  A
 * recorded run (RECORD.md) stands for disks and makes them all. */
bool mop_syncs(volume *v, int idx)
{
	const mop_state *s = (const mop_state *)(const void *)v;
	assert(idx >= 0 && idx < 64); /* a bit of memory_only */
	return !v || !(__atomic_load_n(&s->memory_only, __ATOMIC_RELAXED) >> idx & 1) ||
	       (RECORDING && record_active());
}

int mop_fsync(volume *v, int idx, int fd, bool datasync)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	FAULT_GATE(FAULT_SYNC, 0);
	if (!mop_syncs(v, idx))
		return 0;
	bool locked = begin();
	int rc = (int)neg_errno(datasync ? fdatasync(fd) : fsync(fd));
	if (RECORDING && rc == 0) {
		rec_line *l = record_line("fsync", idx);
		record_path_fd(l, "path", fd);
		record_bool(l, "datasync", datasync);
		record_done(l);
	}
	record_end(locked);
	return rc;
}

/* The record of mop_pwrite_dsync: the write, then the sync if made. */
static void record_write_sync(int idx, int fd, const struct iovec *iov, size_t done, off_t off,
                              bool synced)
{
	rec_line *l = record_line("write", idx);
	record_path_fd(l, "path", fd);
	record_data(l, iov, 1, done, off);
	record_done(l);
	if (!synced)
		return;
	l = record_line("fsync", idx);
	record_path_fd(l, "path", fd);
	record_bool(l, "datasync", true);
	record_done(l);
}

ssize_t mop_pwrite_dsync(volume *v, int idx, int fd, const void *buf, size_t len, off_t off)
{
	struct iovec bounced, one = { .iov_base = (void *)buf, .iov_len = len };
	int cnt = 1;
	struct iovec iov = *write_source(&one, &cnt, len, &bounced);
	bool dsync = mop_syncs(v, idx);
	int sync_err = 0;
	IO_SCOPE();
	CHANGE_SCOPE();
	FAULT_GATE(FAULT_WRITE, (ssize_t)len);
#ifdef ECFS_FAULT_INJECTION
	/* a sync fault: the write made, its sync not (failed, or lost: errno 0) */
	if (v && fault_check(volume_faults(v), idx, FAULT_SYNC, &sync_err))
		dsync = false;
#endif
	bool locked = begin();
	ssize_t rc = dsync ? neg_errno(pwritev2(fd, &iov, 1, off, RWF_DSYNC)) : -EOPNOTSUPP;
	bool synced = dsync && rc >= 0;
	if (rc == -EOPNOTSUPP || rc == -EINVAL) { /* no RWF_DSYNC here, or a sync fault */
		rc = neg_errno(pwritev(fd, &iov, 1, off));
		if (rc >= 0 && dsync) {
			synced = fdatasync(fd) == 0;
			sync_err = synced ? 0 : errno;
		}
	}
	if (RECORDING && rc >= 0)
		record_write_sync(idx, fd, &iov, (size_t)rc, off, synced);
	record_end(locked);
	count_made(v, rc >= 0);
	return rc >= 0 && sync_err ? -sync_err : rc;
}

int mop_mkdirat(volume *v, int idx, int dirfd, const char *name, mode_t mode)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, dirfd, NULL, NULL);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(mkdirat(dirfd, name, mode));
	if (RECORDING && rc == 0)
		rec_at("mkdir", idx, dirfd, name, ST_MODE);
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

int mop_mknodat(volume *v, int idx, int dirfd, const char *name, mode_t mode, dev_t dev)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, dirfd, NULL, NULL);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(mknodat(dirfd, name, mode, dev));
	if (RECORDING && rc == 0) {
		rec_line *l = record_line("mknod", idx);
		record_path_at(l, "path", dirfd, name);
		rec_stat(l, dirfd, name, ST_TYPE_MODE);
		record_int(l, "rdev", (long long)dev);
		record_done(l);
	}
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

int mop_symlinkat(volume *v, int idx, const char *target, int dirfd, const char *name)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, dirfd, NULL, NULL);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(symlinkat(target, dirfd, name));
	if (RECORDING && rc == 0) {
		rec_line *l = record_line("symlink", idx);
		record_path_at(l, "path", dirfd, name);
		record_str(l, "target", target);
		record_done(l);
	}
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

/* A link (rename false) or a rename of oldname to newname: a change of
 * the entries of two directories, both watched. */
static int link_or_rename(volume *v, int idx, bool rename, int olddirfd, const char *oldname,
                          int newdirfd, const char *newname, unsigned flags)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(from, olddirfd, NULL, NULL);
	DIR_WATCH(to, newdirfd, NULL, &from);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(rename ? renameat2(olddirfd, oldname, newdirfd, newname, flags)
	                               : linkat(olddirfd, oldname, newdirfd, newname, (int)flags));
	if (RECORDING && rc == 0) {
		rec_line *l = record_line(rename ? "rename" : "link", idx);
		record_path_at(l, "path", olddirfd, oldname);
		record_path_at(l, "to", newdirfd, newname);
		if (rename)
			record_int(l, "flags", flags);
		record_done(l);
	}
	record_end(locked);
	count_made(v, rc >= 0);
	from.made = to.made = rc >= 0;
	return rc;
}

int mop_linkat(volume *v, int idx, int olddirfd, const char *oldname, int newdirfd,
               const char *newname, int flags)
{
	return link_or_rename(v, idx, false, olddirfd, oldname, newdirfd, newname, (unsigned)flags);
}

int mop_unlinkat(volume *v, int idx, int dirfd, const char *name, int flags)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, dirfd, NULL, NULL);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(unlinkat(dirfd, name, flags));
	if (RECORDING && rc == 0)
		rec_at(flags & AT_REMOVEDIR ? "rmdir" : "unlink", idx, dirfd, name, -1);
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

int mop_renameat2(volume *v, int idx, int olddirfd, const char *oldname, int newdirfd,
                  const char *newname, unsigned flags)
{
	return link_or_rename(v, idx, true, olddirfd, oldname, newdirfd, newname, flags);
}

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

/* fchmodat; with AT_SYMLINK_NOFOLLOW through the kernel's fchmodat2
 * (Linux 6.6) when it has it: one call, where glibc before 2.39 makes
 * four (an O_PATH open, fstat, chmod of /proc/self/fd/N, close).  Any
 * refusal is asked again the old way, so a filter that refuses the new
 * call costs calls, never an answer. */
static int chmod_at(int dirfd, const char *name, mode_t mode, int flags)
{
	static bool no_fchmodat2;

	if (flags && !__atomic_load_n(&no_fchmodat2, __ATOMIC_RELAXED)) {
		if (syscall(SYS_fchmodat2, dirfd, name, mode, flags) == 0)
			return 0;
		if (errno == ENOSYS)
			__atomic_store_n(&no_fchmodat2, true, __ATOMIC_RELAXED);
		else if (errno != EPERM)
			return -1;
	}
	return fchmodat(dirfd, name, mode, flags);
}

int mop_fchmodat(volume *v, int idx, int dirfd, const char *name, mode_t mode, int flags)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, dirfd, name, NULL);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(chmod_at(dirfd, name, mode, flags));
	if (RECORDING && rc == 0)
		rec_at("chmod", idx, dirfd, name, ST_MODE);
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

int mop_fchownat(volume *v, int idx, int dirfd, const char *name, uid_t uid, gid_t gid,
                 int flags)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, dirfd, name, NULL);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(fchownat(dirfd, name, uid, gid, flags));
	if (RECORDING && rc == 0)
		rec_at("chown", idx, dirfd, name, ST_OWNER);
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

gid_t mop_new_object_gid(int parent_fd, gid_t gid)
{
	struct stat parent;
	if (gid == (gid_t)-1 || MIO_CALL(fstat(parent_fd, &parent)) < 0)
		return gid;
	return parent.st_mode & S_ISGID ? parent.st_gid : gid;
}

int mop_fchown(volume *v, int idx, int fd, uid_t uid, gid_t gid)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(fchown(fd, uid, gid));
	if (RECORDING && rc == 0)
		rec_fd("chown", idx, fd, ST_OWNER);
	record_end(locked);
	count_made(v, rc >= 0);
	return rc;
}

int mop_utimensat(volume *v, int idx, int dirfd, const char *name,
                  const struct timespec ts[2], int flags)
{
	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, dirfd, name, NULL);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(utimensat(dirfd, name, ts, flags));
	if (RECORDING && rc == 0)
		rec_at("utimens", idx, dirfd, name, ST_TIMES);
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

/* setxattr of the object at dirfd/leaf (leaf "": dirfd's own object),
 * through /proc/self/fd, without following a symlink at leaf. */
static int set_xattr(volume *v, int idx, int dirfd, const char *leaf, const char *name,
                     const void *value, size_t size, int flags)
{
	char path[PATH_MAX];

	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, dirfd, leaf, NULL);
	FAULT_GATE(FAULT_META, 0);
	proc_path(dirfd, leaf, path);
	bool locked = begin();
	int rc = (int)neg_errno(*leaf ? lsetxattr(path, name, value, size, flags)
	                              : setxattr(path, name, value, size, flags));
	if (RECORDING && rc == 0) {
		rec_line *l = record_line("setxattr", idx);
		record_path_at(l, "path", dirfd, leaf);
		record_str(l, "name", name);
		record_hex(l, "hex", value, size);
		record_done(l);
	}
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

int mop_fsetxattr(volume *v, int idx, int fd, const char *name, const void *value,
                  size_t size, int flags)
{
	return set_xattr(v, idx, fd, "", name, value, size, flags);
}

int mop_lsetxattrat(volume *v, int idx, int dirfd, const char *leaf, const char *name,
                    const void *value, size_t size, int flags)
{
	return set_xattr(v, idx, dirfd, leaf, name, value, size, flags);
}

int mop_fremovexattr(volume *v, int idx, int fd, const char *name)
{
	char path[PATH_MAX];

	IO_SCOPE();
	CHANGE_SCOPE();
	DIR_WATCH(dir, fd, NULL, NULL);
	FAULT_GATE(FAULT_META, 0);
	bool locked = begin();
	int rc = (int)neg_errno(removexattr(proc_path(fd, "", path), name));
	if (RECORDING && rc == 0) {
		rec_line *l = record_line("removexattr", idx);
		record_path_fd(l, "path", fd);
		record_str(l, "name", name);
		record_done(l);
	}
	record_end(locked);
	count_made(v, rc >= 0);
	dir.made = rc >= 0;
	return rc;
}

ssize_t mop_transfer(volume *v, int idx, int fd, struct iovec *iov, int cnt, off_t off,
                     bool write)
{
	ssize_t total = 0;

	while (cnt > 0) {
		int part = cnt > IOV_MAX ? IOV_MAX : cnt;
		ssize_t r = write ? mop_pwritev(v, idx, fd, iov, part, off)
		                  : mop_preadv(v, idx, fd, iov, part, off);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0) {
			if (write)
				return -EIO;
			break;
		}
		total += r;
		off += r;
		while (cnt > 0 && (size_t)r >= iov->iov_len) {
			r -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + r;
			iov->iov_len -= (size_t)r;
		}
	}
	return total;
}
