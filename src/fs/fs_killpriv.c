/* SPDX-License-Identifier: MIT */
/*
 * The setuid and setgid bits and file capabilities at a write, truncate or
 * chown, and FUSE_HANDLE_KILLPRIV_V2, which makes clearing them the
 * daemon's job.
 *
 * Why: a FUSE mount without KILLPRIV_V2 never gets SB_NOSEC, so the kernel
 * cannot mark an inode as holding no privileges (S_NOSEC): before every
 * write through the page cache, file_remove_privs asks the daemon for
 * security.capability, a round trip that costs about as much as a 4 KiB
 * write.  With KILLPRIV_V2 the kernel asks once per inode (again after it
 * fetches the attributes) and tells the daemon in each request what a
 * caller without CAP_FSETID changes: FUSE_WRITE_KILL_SUIDGID on a write,
 * FATTR_KILL_SUIDGID on a truncate and (always) on a chown,
 * FUSE_OPEN_KILL_SUIDGID on an open with O_TRUNC; the daemon also drops
 * security.capability at each write.  Where the kernel still strips a
 * file's setuid itself, before a write or a fallocate to a file whose mode
 * it knows to carry the bits, it sends a setattr that changes nothing.
 *
 * How: libfuse 3.14 can neither offer KILLPRIV_V2 nor pass those flags on
 * (newer ones offer it and still drop the flags), so the daemon reads the
 * requests and writes the replies through libfuse's custom I/O hooks
 * (fuse_session_custom_io).  The read hook notes the kill flag of each
 * request for the thread that read it: libfuse's loops serve a request on
 * the thread that read it, and without a splice hook libfuse reads every
 * request through read().  A handler takes the note only if it names its
 * own opcode and node; else it falls back to the caller's uid, root
 * standing for the capability.  The writev hook adds KILLPRIV_V2 to the
 * INIT reply if the kernel offered it.  If it did not, the kernel clears
 * the bits before a buffered write, truncate and chown as before, and the
 * daemon only where the kernel leaves it: a direct write, an open with
 * O_TRUNC (the kernel's own clear is lost with atomic O_TRUNC).
 */
#include "fs_killpriv.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <glib.h>

#include "ecfile.h"
#include "fs_ops.h"
#include "log.h"
#include "xattrs.h"

/* ---- the hooks ---- */

static bool killpriv_on;         /* the kernel took KILLPRIV_V2 */
static uint64_t init_unique;     /* the INIT request, while unanswered */
static bool init_offered;        /* it offered KILLPRIV_V2 */

/* The request this thread read last, as far as the handlers ask. */
struct request_note {
	uint32_t opcode; /* 0: none (or taken) */
	uint64_t nodeid;
	bool kill;       /* its kill flag */
};
static __thread struct request_note note;

/* The 32-bit field at offset off of a request's argument of len bytes;
 * 0 if the argument is shorter. */
static uint32_t field32(const char *arg, size_t len, size_t off)
{
	uint32_t v = 0;
	if (len >= off + sizeof(v))
		memcpy(&v, arg + off, sizeof(v));
	return v;
}

static void note_init(uint64_t unique, const char *arg, size_t len)
{
	uint32_t flags = field32(arg, len, offsetof(struct fuse_init_in, flags));
	__atomic_store_n(&init_offered, (flags & FUSE_HANDLE_KILLPRIV_V2) != 0, __ATOMIC_RELAXED);
	__atomic_store_n(&init_unique, unique, __ATOMIC_RELEASE);
}

/* The kill flag of a request, from its argument of len bytes. */
static bool kill_flag(uint32_t opcode, const char *arg, size_t len)
{
	switch (opcode) {
	case FUSE_WRITE:
		return field32(arg, len, offsetof(struct fuse_write_in, write_flags)) &
		       FUSE_WRITE_KILL_SUIDGID;
	case FUSE_OPEN:
		return field32(arg, len, offsetof(struct fuse_open_in, open_flags)) &
		       FUSE_OPEN_KILL_SUIDGID;
	case FUSE_SETATTR:
		return field32(arg, len, offsetof(struct fuse_setattr_in, valid)) & FATTR_KILL_SUIDGID;
	default:
		return false;
	}
}

static ssize_t hook_read(int fd, void *buf, size_t size, void *userdata)
{
	(void)userdata;
	ssize_t n = read(fd, buf, size);
	note.opcode = 0;
	if (n < (ssize_t)sizeof(struct fuse_in_header))
		return n; /* errno stays read's, for libfuse */
	struct fuse_in_header in;
	memcpy(&in, buf, sizeof(in));
	const char *arg = (const char *)buf + sizeof(in);
	size_t len = (size_t)n - sizeof(in);
	if (in.opcode == FUSE_INIT)
		note_init(in.unique, arg, len);
	note = (struct request_note){ in.opcode, in.nodeid, kill_flag(in.opcode, arg, len) };
	return n;
}

/* The reply to INIT (iov[1] its fuse_init_out) with KILLPRIV_V2 added. */
static ssize_t write_init(int fd, const struct iovec *iov)
{
	struct fuse_init_out out = { 0 };
	if (iov[1].iov_len > sizeof(out) ||
	    iov[1].iov_len < offsetof(struct fuse_init_out, flags) + sizeof(out.flags))
		return writev(fd, iov, 2);
	memcpy(&out, iov[1].iov_base, iov[1].iov_len);
	out.flags |= FUSE_HANDLE_KILLPRIV_V2;
	struct iovec with[2] = { iov[0], { &out, iov[1].iov_len } };
	/* before the kernel can send a request that relies on it */
	__atomic_store_n(&killpriv_on, true, __ATOMIC_RELEASE);
	return writev(fd, with, 2);
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	uint64_t unique = __atomic_load_n(&init_unique, __ATOMIC_ACQUIRE);
	if (unique && count == 2 && iov[0].iov_len >= sizeof(struct fuse_out_header)) {
		struct fuse_out_header h;
		memcpy(&h, iov[0].iov_base, sizeof(h));
		if (h.unique == unique && h.error == 0 &&
		    __atomic_exchange_n(&init_unique, 0, __ATOMIC_ACQ_REL) == unique &&
		    __atomic_load_n(&init_offered, __ATOMIC_RELAXED))
			return write_init(fd, iov);
	}
	return writev(fd, iov, count);
}

bool fs_killpriv_attach(struct fuse_session *se)
{
	static const struct fuse_custom_io io = { .read = hook_read, .writev = hook_writev };
	/* On the descriptor fuse_session_mount opened: the session keeps it,
	 * and closes it, as before. */
	return fuse_session_custom_io(se, &io, fuse_session_fd(se)) == 0;
}

bool fs_killpriv_on(void)
{
	return __atomic_load_n(&killpriv_on, __ATOMIC_ACQUIRE);
}

/* ---- what the daemon clears ---- */

static bool not_root(fuse_req_t req)
{
	return fuse_req_ctx(req)->uid != 0;
}

/* Whether the request this thread serves, opcode on node ino, asks to
 * clear setuid/setgid: its kill flag; a caller other than root if this
 * thread read another request last. */
static bool asked(fuse_req_t req, uint32_t opcode, fuse_ino_t ino)
{
	struct request_note n = note;
	note.opcode = 0;
	if (n.opcode == opcode && n.nodeid == ino)
		return n.kill;
	return not_root(req);
}

/* The bits a change by the caller of req of an object with attributes st
 * clears, as the kernel does for a local file (setattr_should_drop_suidgid,
 * chown_common): setuid; setgid if the file is group-executable or, but
 * at chown, if the caller is not in its group.  Only a regular file's, at
 * chown any but a directory's. */
static mode_t bits_to_clear(fuse_req_t req, const struct stat *st, bool chown)
{
	mode_t kill = st->st_mode & S_ISUID;
	if ((st->st_mode & S_ISGID) &&
	    ((st->st_mode & S_IXGRP) || (!chown && !fs_caller_in_group(req, st->st_gid))))
		kill |= S_ISGID;
	return (chown ? S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) ? 0 : kill;
}

/* Clears the bits kill of the object at path, whose mode was mode: 1 if
 * any, else 0 or a negative errno. */
static int clear_bits(const char *path, mode_t mode, mode_t kill)
{
	if (!kill)
		return 0;
	int rc = fs_chmod_path(path, mode & 07777 & ~kill);
	return rc < 0 ? rc : 1;
}

/* Drops the file capability of the object at path, on volumes where one
 * was ever set (the marker, xattrs.h): elsewhere there is none. */
static int drop_capability(const char *path)
{
	if (!volume_attr_marked(fs_volume(), VOLUME_ATTR_CAPS))
		return 0;
	int rc = xattrs_get(fs_volume(), path, XATTRS_CAPABILITY, NULL, 0);
	if (rc >= 0)
		rc = xattrs_remove(fs_volume(), path, XATTRS_CAPABILITY);
	return rc == -ENODATA ? 0 : rc;
}

/* What a write to or an open with O_TRUNC of node ino (open as f) by the
 * caller of req clears (kill: the kernel asks for setuid/setgid): by the
 * open file's attributes first, a path only if there is something to
 * clear.  The kernel is told of a new mode. */
static int clear_open(fuse_req_t req, fuse_ino_t ino, ecfile *f, bool kill, bool hold)
{
	struct stat st = { 0 };
	int rc = kill ? ecfile_fstat(f, &st) : 0;
	mode_t bits = rc == 0 && kill ? bits_to_clear(req, &st, false) : 0;
	if (rc < 0 || (!bits && !volume_attr_marked(fs_volume(), VOLUME_ATTR_CAPS)))
		return rc;
	char *path = NULL;
	if (hold)
		fs_nodes_hold(); /* a write holds no path: this does */
	rc = fs_nodes_path(ino, &path);
	if (rc == 0)
		rc = clear_bits(path, st.st_mode, bits);
	if (rc > 0)
		fs_nodes_inval(ino); /* the kernel holds the mode with the bits */
	if (rc >= 0)
		rc = drop_capability(path);
	if (hold)
		fs_nodes_unhold();
	g_free(path);
	return rc;
}

int fs_killpriv_write(fuse_req_t req, fuse_ino_t ino, ecfile *f, bool direct)
{
	bool on = fs_killpriv_on();
	if (!on && !direct)
		return 0; /* the kernel's, before it sent the write */
	return clear_open(req, ino, f, on ? asked(req, FUSE_WRITE, ino) : not_root(req), true);
}

int fs_killpriv_open_trunc(fuse_req_t req, fuse_ino_t ino, ecfile *f)
{
	bool kill = fs_killpriv_on() ? asked(req, FUSE_OPEN, ino) : not_root(req);
	return clear_open(req, ino, f, kill, false); /* an open holds its path */
}

int fs_killpriv_setattr(fuse_req_t req, fuse_ino_t ino, const char *path, int to_set)
{
	if (!fs_killpriv_on())
		return 0; /* the kernel sends the mode with the change */
	bool chown = to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID);
	bool kill;
	if (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		kill = asked(req, FUSE_SETATTR, ino);
	else if (!to_set)
		kill = not_root(req); /* the kernel's file_remove_privs */
	else
		return 0;
	struct stat st;
	int rc = kill ? fs_member_lstat(path, &st) : 0;
	if (rc == 0 && kill)
		rc = clear_bits(path, st.st_mode, bits_to_clear(req, &st, chown));
	if (rc >= 0 && ((to_set & FUSE_SET_ATTR_SIZE) || chown)) {
		int rc2 = drop_capability(path);
		rc = rc2 < 0 ? rc2 : rc;
	}
	return rc;
}
