/* SPDX-License-Identifier: MIT */
/*
 * The lock of each member: .ecfs/lock, an open-file-description lock
 * held for the mount, with the owner's pid and host as its text, and
 * "closing" once its daemon has been unmounted and is closing the
 * volume.  The text is emptied at close: one left there at the next open
 * is the mark of an open that never closed (volume_settled.c).  The open
 * also marks healing the members the online heal had not finished.
 *
 * An unmount returns before its daemon has closed the volume (with
 * remote members that takes seconds), so `umount M && mount M` meets a
 * lock still held.  When the text says that a live process of this host
 * is closing the volume, the open waits for the lock up to the member
 * timeout instead of refusing at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_private.h"

#define LOCK_FILE "lock"
#define LOCK_CLOSING "closing"
#define LOCK_RETRY_US 20000

/* The text of this process's lock: "pid=P host=H[ closing]\n". */
static int lock_text(char *buf, size_t size, bool closing)
{
	char host[128] = "";
	gethostname(host, sizeof(host) - 1);
	return snprintf(buf, size, "pid=%ld host=%s%s\n", (long)getpid(), host,
	                closing ? " " LOCK_CLOSING : "");
}

/* Whoever holds the lock of fd, by its text. */
struct lock_owner {
	long pid;
	char host[200];
	bool closing;
};

static void read_owner(volume *v, int idx, int fd, struct lock_owner *o)
{
	char info[256], closing[16] = "";
	ssize_t len = mop_pread(v, idx, fd, info, sizeof(info) - 1, 0);

	*o = (struct lock_owner){ .host = "?" };
	if (len <= 0)
		return;
	info[len] = 0;
	sscanf(info, "pid=%ld host=%199s %15s", &o->pid, o->host, closing);
	o->closing = strcmp(closing, LOCK_CLOSING) == 0;
}

/* Whether the owner is a live process of this host closing the volume:
 * worth waiting for. */
static bool owner_closing_here(const struct lock_owner *o)
{
	char host[200] = "";
	gethostname(host, sizeof(host) - 1);
	return o->closing && o->pid > 0 && strcmp(o->host, host) == 0 &&
	       (kill((pid_t)o->pid, 0) == 0 || errno == EPERM);
}

/* Takes the lock on fd, waiting until wait_until_ms (mio_now_ms's clock,
 * 0: never) while its owner is closing the volume on this host. */
static int take_lock_fd(volume *v, int idx, int fd, int64_t wait_until_ms, char **message)
{
	member *mb = &v->mem[idx];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	bool said = false;

	/* An open-file-description lock: held for the life of the daemon and
	 * dropped by the kernel when it dies, so nothing stale is left. */
	while (MIO_CALL(fcntl(fd, F_OFD_SETLK, &fl)) < 0) {
		int e = errno;
		if (e != EAGAIN && e != EACCES) {
			*message = g_strdup_printf("cannot lock member %s: %s", mb->path, g_strerror(e));
			return -e;
		}
		struct lock_owner o;
		read_owner(v, idx, fd, &o);
		/* an empty text after "closing": its owner is between emptying
		 * it and letting go (volume_close) */
		bool closing = owner_closing_here(&o) || (said && o.pid == 0);
		if (closing && mio_now_ms() < wait_until_ms) {
			if (!said)
				ecfs_log(LOG_NOTICE, "member %s: pid %ld is still closing this volume; "
				         "waiting for it", mb->path, o.pid);
			said = true;
			usleep(LOCK_RETRY_US);
			continue;
		}
		*message = g_strdup_printf("volume is in use by pid %ld on %s%s (lock %s/"
		                           ECFS_META_DIR "/" LOCK_FILE ")", o.pid, o.host,
		                           closing ? ", which is still closing it" : "", mb->path);
		return -EBUSY;
	}
	if (said)
		ecfs_log(LOG_NOTICE, "member %s: the closing process let go of it", mb->path);
	return 0;
}

/* Locks member idx through its metadata directory metafd: *lockfd gets
 * the lock file's descriptor (-1 if it did not open). */
int vol_lock_member(volume *v, int idx, int metafd, int *lockfd, int64_t wait_until_ms,
                    char **message)
{
	member *mb = &v->mem[idx];
	char info[256];

	int fd = mop_openat(v, idx, metafd, LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	                    0600);
	*lockfd = fd < 0 ? -1 : fd;
	if (fd < 0) {
		*message = g_strdup_printf("cannot open the lock of member %s: %s", mb->path,
		                           g_strerror(-fd));
		return fd;
	}
	int rc = take_lock_fd(v, idx, fd, wait_until_ms, message);
	if (rc < 0)
		return rc;
	mb->locked = true;
	/* volume_close empties the text: one still there is the mark of an
	 * open that never closed (a crash, a power loss; volume_settled.c).
	 * It is synced, so that a power loss cannot take the mark away. */
	mb->left_open = mop_pread(v, idx, fd, info, 1, 0) > 0;
	int len = lock_text(info, sizeof(info), false);
	if (mop_ftruncate(v, idx, fd, 0) < 0 || mop_pwrite(v, idx, fd, info, (size_t)len, 0) != len ||
	    mop_fsync(v, idx, fd, true) < 0)
		ecfs_log(LOG_WARNING, "cannot record the lock owner on %s", mb->path);
	return 0;
}

/* fn on every member whose lock is ours and whose worker is not stuck. */
struct lock_call {
	volume *v;
	int idx;
};

static void on_locked_members(volume *v, int (*fn)(void *))
{
	for (int i = 0; i < v->n; i++) {
		struct lock_call c = { v, i };
		if (v->mem[i].locked && !(v->mio && memberio_lost(v->mio, i)))
			volume_on_member(v, i, fn, &c);
	}
}

/* The lock text of member idx, if the lock is ours, emptied: the volume
 * was closed, not cut short.  Also on a member failed meanwhile (unless
 * it hung): it may come back at the next open, and a failure is no crash.
 * Not synced: a power loss that undoes it only makes the next open take
 * the names for unsettled. */
static int clear_lock_text(void *arg)
{
	const struct lock_call *c = arg;
	return mop_ftruncate(c->v, c->idx, c->v->mem[c->idx].lockfd, 0);
}

void vol_clear_lock_texts(volume *v)
{
	on_locked_members(v, clear_lock_text);
}

/* The lock text of member idx says "closing" (volume_mark_closing). */
static int mark_closing(void *arg)
{
	const struct lock_call *c = arg;
	char info[256];
	int len = lock_text(info, sizeof(info), true);

	return mop_pwrite_dsync(c->v, c->idx, c->v->mem[c->idx].lockfd, info, (size_t)len, 0) ==
	       len ? 0 : -EIO;
}

void volume_mark_closing(volume *v)
{
	on_locked_members(v, mark_closing);
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

static int take_lock(volume *v, int idx, int64_t wait_until_ms, char **message)
{
	return vol_lock_member(v, idx, v->mem[idx].metafd, &v->mem[idx].lockfd, wait_until_ms,
	                       message);
}

/* Takes the lock of every member in service (unless read-only), and marks
 * healing the members whose online rebuild a stop cut short, then those
 * the others record as having missed changes (volume_missed_stale). */
int vol_lock_members(volume *v, bool read_only, unsigned timeout_ms, char **message)
{
	int64_t wait_until_ms = mio_deadline_ms(timeout_ms ? timeout_ms : VOLUME_DEFAULT_TIMEOUT_MS);
	int rc;

	if (!read_only)
		for (int i = 0; i < v->n; i++)
			if (!v->mem[i].failed && (rc = take_lock(v, i, wait_until_ms, message)) < 0)
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
