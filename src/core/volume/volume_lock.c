/* SPDX-License-Identifier: MIT */
/*
 * The lock of each member: .ecfs/lock, an open-file-description lock
 * held for the mount, with the owner's pid and host as its text.  The
 * text is emptied at close: one left there at the next open is the mark
 * of an open that never closed (volume_settled.c).  The open also marks
 * healing the members the online heal had not finished.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_private.h"

#define LOCK_FILE "lock"

/* Locks member idx through its metadata directory metafd: *lockfd gets
 * the lock file's descriptor (-1 if it did not open). */
int vol_lock_member(volume *v, int idx, int metafd, int *lockfd, char **message)
{
	member *mb = &v->mem[idx];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char info[256];

	int fd = mop_openat(v, idx, metafd, LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	                    0600);
	*lockfd = fd < 0 ? -1 : fd;
	if (fd < 0) {
		*message = g_strdup_printf("cannot open the lock of member %s: %s", mb->path,
		                           g_strerror(-fd));
		return fd;
	}
	/* An open-file-description lock: held for the life of the daemon and
	 * dropped by the kernel when it dies, so nothing stale is left. */
	if (MIO_CALL(fcntl(fd, F_OFD_SETLK, &fl)) < 0) {
		int e = errno;
		ssize_t len = mop_pread(v, idx, fd, info, sizeof(info) - 1, 0);
		long pid = 0;
		char host[200] = "?";
		if (len > 0) {
			info[len] = 0;
			sscanf(info, "pid=%ld host=%199s", &pid, host);
		}
		if (e == EAGAIN || e == EACCES) {
			*message = g_strdup_printf("volume is in use by pid %ld on %s (lock %s/"
			                           ECFS_META_DIR "/" LOCK_FILE ")", pid, host, mb->path);
			return -EBUSY;
		}
		*message = g_strdup_printf("cannot lock member %s: %s", mb->path, g_strerror(e));
		return -e;
	}
	mb->locked = true;
	/* volume_close empties the text: one still there is the mark of an
	 * open that never closed (a crash, a power loss; volume_settled.c).
	 * It is synced, so that a power loss cannot take the mark away. */
	mb->left_open = mop_pread(v, idx, fd, info, 1, 0) > 0;
	char host[128] = "";
	gethostname(host, sizeof(host) - 1);
	int len = snprintf(info, sizeof(info), "pid=%ld host=%s\n", (long)getpid(), host);
	if (mop_ftruncate(v, idx, fd, 0) < 0 || mop_pwrite(v, idx, fd, info, (size_t)len, 0) != len ||
	    mop_fsync(v, idx, fd, true) < 0)
		ecfs_log(LOG_WARNING, "cannot record the lock owner on %s", mb->path);
	return 0;
}

/* The lock text of member idx, if the lock is ours, emptied: the volume
 * was closed, not cut short.  Also on a member failed meanwhile (unless
 * it hung): it may come back at the next open, and a failure is no crash.
 * Not synced: a power loss that undoes it only makes the next open take
 * the names for unsettled. */
struct lock_call {
	volume *v;
	int idx;
};

static int clear_lock_text(void *arg)
{
	const struct lock_call *c = arg;
	return mop_ftruncate(c->v, c->idx, c->v->mem[c->idx].lockfd, 0);
}

void vol_clear_lock_texts(volume *v)
{
	for (int i = 0; i < v->n; i++) {
		struct lock_call c = { v, i };
		if (v->mem[i].locked && !(v->mio && memberio_lost(v->mio, i)))
			volume_on_member(v, i, clear_lock_text, &c);
	}
}

/* A read-only open takes no lock: whether a lock text is there (an open
 * that never closed, or one in use now). */
static bool lock_text_left(volume *v, int idx)
{
	char c;
	int fd = openat(v->mem[idx].metafd, LOCK_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	bool left = fd >= 0 && mop_pread(v, idx, fd, &c, 1, 0) > 0;
	if (fd >= 0)
		close(fd);
	return left;
}

static int take_lock(volume *v, int idx, char **message)
{
	return vol_lock_member(v, idx, v->mem[idx].metafd, &v->mem[idx].lockfd, message);
}

/* Takes the lock of every member in service (unless read-only), and marks
 * healing the members whose online rebuild a stop cut short, then those
 * the others record as having missed changes (volume_missed_stale). */
int vol_lock_members(volume *v, bool read_only, char **message)
{
	int rc;

	if (!read_only)
		for (int i = 0; i < v->n; i++)
			if (!v->mem[i].failed && (rc = take_lock(v, i, message)) < 0)
				return rc;
	bool left_open = false;
	for (int i = 0; i < v->n; i++)
		if (!v->mem[i].failed)
			left_open |= read_only ? lock_text_left(v, i) : v->mem[i].left_open;
	volume_settle_open(v, left_open, read_only);
	for (int i = 0; i < v->n; i++) {
		struct stat st;
		if (!v->mem[i].failed &&
		    fstatat(v->mem[i].metafd, HEAL_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			v->mem[i].healing = true;
			ecfs_log(LOG_WARNING, "member %d (%s): its online rebuild was cut short; it "
			         "answers no lookup until the rebuild is done", i, v->mem[i].path);
		}
	}
	int by[64];
	uint64_t stale = volume_missed_stale(v, by); /* counts those healing already */
	v->changes_at_open = v->mops.made; /* the locks are no change to miss */
	for (int i = 0; i < v->n; i++)
		if (stale >> i & 1) {
			v->mem[i].healing = true;
			ecfs_log(LOG_WARNING, "member %d (%s) is back with an older copy (member %d "
			         "saw it fail): it answers no lookup until the online heal has "
			         "rebuilt it", i, v->mem[i].path, by[i]);
		}
	return 0;
}
