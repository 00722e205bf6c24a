/* SPDX-License-Identifier: MIT */
/*
 * The volume's side of the online heal (src/fs/heal.c): a failed member
 * revived when its directory is back (or replaced by an empty one, which
 * gets the superblock), marked healing and then healed, the changes a
 * failed member may have missed, and the hook that tells the heal of
 * files written past slow members.  A revive's calls on the member run
 * on its worker, so one that hangs never holds the heal thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "mounts.h"
#include "superblock.h"
#include "volume_private.h"

void volume_set_left_out_hook(volume *v,
                              void (*fn)(void *, const char *, const uint8_t *, uint64_t),
                              void *arg)
{
	__atomic_store_n(&v->left_out_arg, arg, __ATOMIC_RELEASE);
	__atomic_store_n(&v->left_out_hook, fn, __ATOMIC_RELEASE);
}

void volume_left_out(volume *v, const char *path, const uint8_t file_id[16], uint64_t members)
{
	void (*fn)(void *, const char *, const uint8_t *, uint64_t) =
		__atomic_load_n(&v->left_out_hook, __ATOMIC_ACQUIRE);

	if (fn)
		fn(__atomic_load_n(&v->left_out_arg, __ATOMIC_ACQUIRE), path, file_id, members);
}

uint64_t volume_missed_changes(volume *v)
{
	/* Since the open, not since the failure: a change the member missed
	 * may have been made on the others before its own call failed (or
	 * hung until the timeout). */
	if (__atomic_load_n(&v->mops.made, __ATOMIC_RELAXED) == v->changes_at_open)
		return 0;
	return volume_failed_mask(v);
}

/* A member, for a call on its worker (volume_on_member). */
typedef struct member_arg {
	volume *v;
	int idx;
} member_arg;

static int unlink_heal_file(void *arg)
{
	const member_arg *a = arg;
	return mop_unlinkat(a->v, a->idx, a->v->mem[a->idx].metafd, HEAL_FILE, 0);
}

void volume_member_healed(volume *v, int idx)
{
	member_arg a = { v, idx };
	/* on the member's worker: the heal thread never waits on a member */
	int rc = volume_on_member(v, idx, unlink_heal_file, &a);
	if (rc < 0 && rc != -ENOENT)
		ecfs_log(LOG_WARNING, "member %d (%s): cannot remove " ECFS_META_DIR "/" HEAL_FILE
		         ": %s", idx, v->mem[idx].path, g_strerror(-rc));
	__atomic_store_n(&v->mem[idx].healing, false, __ATOMIC_RELEASE);
	vol_event(v, VOLUME_EVENT_MEMBER_HEALED, idx, NULL, "its rebuild is complete");
}

/* The superblock a majority of the other members in service carry (read
 * on the caller's worker, each as one member call), never one member's
 * word: 0, or -EIO if none has a majority. */
static int majority_superblock(volume *v, int idx, superblock *out)
{
	superblock got[64];
	const superblock *sb[64];

	for (int j = 0; j < v->n; j++) {
		char *why = NULL;
		sb[j] = NULL;
		if (j == idx || !volume_member_ok(v, j))
			continue;
		mio_io_begin();
		int rc = superblock_read(v->mem[j].metafd, &got[j], &why);
		mio_io_end();
		if (rc == 0)
			sb[j] = &got[j];
		g_free(why);
	}
	int best = superblock_majority(sb, v->n);
	const superblock *r = best < 0 ? NULL : sb[best];
	/* and it is still the one the volume was opened with */
	if (!r || memcmp(r->uuid, v->uuid, 16) || memcmp(r->key, v->key, sizeof(v->key)) ||
	    r->k != v->k || r->m != v->m || r->version != v->format)
		return -EIO;
	*out = *r;
	return 0;
}

/* Gives an empty directory the volume's superblock with index idx (the
 * one the members in service carry).  Returns the .ecfs fd or a negative
 * errno. */
static int format_member(volume *v, int idx, int rootfd)
{
	superblock sb;
	int rc = majority_superblock(v, idx, &sb), metafd;

	if (rc < 0)
		return rc;
	sb.index = idx;
	rc = mop_mkdirat(v, idx, rootfd, ECFS_META_DIR, 0700);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	metafd = MIO_CALL(openat(rootfd, ECFS_META_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                                                O_CLOEXEC));
	if (metafd < 0)
		return -errno;
	rc = superblock_write(v, idx, metafd, &sb);
	if (rc < 0) {
		close(metafd);
		return rc;
	}
	return metafd;
}

/* A directory that is not a mount point where the other members are is
 * never taken (its disk did not mount: the rebuild would fill the
 * filesystem beneath); said once until it is a mount point again. */
static bool revive_unmounted(volume *v, int idx, const probe *p)
{
	member *mb = &v->mem[idx];
	mount_info mi[64];

	for (int j = 0; j < v->n; j++)
		mi[j] = volume_member_ok(v, j) ? v->mem[j].mi : (mount_info){ 0 };
	mi[idx] = p->mi;
	int j = mounts_unmounted_beside(mi, v->n, idx);
	if (j >= 0 && !mb->warned_unmounted) {
		char *why = g_strdup_printf("not a mount point while %s is: its disk may not have "
		                            "mounted", v->mem[j].path);
		ecfs_log(LOG_WARNING, "member %d (%s) is %s; not taken back until it is a mount "
		         "point", idx, mb->path, why);
		pthread_mutex_lock(&v->lock);
		g_free(mb->why);
		mb->why = why; /* what the health report says */
		pthread_mutex_unlock(&v->lock);
	}
	mb->warned_unmounted = j >= 0;
	return j >= 0;
}

/* A revive's calls on the member run on its worker (volume_on_member):
 * one that hangs is given up after the I/O timeout, rather than holding
 * the heal thread and the unmount that joins it. */
typedef struct revive_call {
	volume *v;
	int idx;
	probe p;
	struct stat st;
	int st_rc;
	int old_lockfd, lockfd, heal_rc; /* revive_lock */
	char *msg;
	superblock ref; /* revive_probe: the members in service's, if ref_rc is 0 */
	int ref_rc;
} revive_call;

/* A directory whose superblock differs from the one the members in
 * service carry is never taken (said once while it stays so). */
static bool revive_differs(volume *v, int idx, const revive_call *r)
{
	member *mb = &v->mem[idx];
	char *diff = r->ref_rc < 0 ? g_strdup("no majority among the others")
	             : superblock_differs(&r->p.sb, &r->ref);

	if (!diff)
		return false;
	char *why = g_strdup_printf("its superblock differs from the one the members in service "
	                            "carry (%s): not taken back", diff);
	pthread_mutex_lock(&v->lock);
	bool told = mb->why && !strcmp(mb->why, why);
	if (!told) {
		g_free(mb->why);
		mb->why = g_strdup(why); /* what the health report says */
	}
	pthread_mutex_unlock(&v->lock);
	if (!told)
		ecfs_log(LOG_WARNING, "member %d (%s): %s", idx, mb->path, why);
	g_free(why);
	g_free(diff);
	return true;
}

static int revive_probe(void *arg)
{
	revive_call *r = arg;
	probe p = r->p;
	struct stat st = { 0 };

	mio_io_begin(); /* the probe's few calls, as one member call */
	vol_probe_member(&p);
	int st_rc = p.rootfd >= 0 ? fstat(p.rootfd, &st) : -1;
	mio_io_end();
	if (p.state == P_OK)
		r->ref_rc = majority_superblock(r->v, r->idx, &r->ref);
	r->p = p;
	r->st = st;
	r->st_rc = st_rc;
	return 0;
}

static int revive_format(void *arg)
{
	revive_call *r = arg;
	struct stat st;
	int fd = format_member(r->v, r->idx, r->p.rootfd);
	int st_rc = fd >= 0 ? MIO_CALL(fstat(r->p.rootfd, &st)) : -1;

	if (st_rc == 0)
		r->st = st;
	r->st_rc = st_rc;
	return fd;
}

/* Takes the lock of the member's new directory (the old lock goes first:
 * it would conflict with the new one if the directory is the same) and
 * leaves the heal marker there. */
static int revive_lock(void *arg)
{
	revive_call *r = arg;

	if (r->old_lockfd >= 0)
		MIO_CALL(close(r->old_lockfd));
	int rc = vol_lock_member(r->v, r->idx, r->p.metafd, &r->lockfd, 0, &r->msg);
	r->heal_rc = rc == 0 ? mop_touchat(r->v, r->idx, r->p.metafd, HEAL_FILE, false) : 0;
	/* a new directory is the daemon's alone before anything is rebuilt in it */
	struct stat was;
	if (rc == 0 && volume_member_root_guard(r->v, r->idx, r->p.rootfd, true, &was) > 0)
		ecfs_log(LOG_NOTICE, "member %d (%s): its root made %04o and the daemon's "
		         "(was %04o)", r->idx, r->v->mem[r->idx].path, VOLUME_MEMBER_ROOT_MODE,
		         (unsigned)(was.st_mode & 07777));
	return rc;
}

/* A member given up while a revive asked it: already failed, so said here. */
static int revive_lost(volume *v, int idx)
{
	ecfs_log(LOG_WARNING, "member %d (%s): no answer while probed for the online heal; it "
	         "stays failed until the next mount", idx, v->mem[idx].path);
	return 0;
}

/* Under v->lock: member idx takes the revived directory's root and
 * metadata fds (p's, p left without them) and its lock.  The old root,
 * metadata and intent log fds stay open until the end: a thread that read
 * them before the member failed must not find them reused.  The new
 * directory's log is opened (or made) by the next logged operation
 * (intent.c). */
static void take_new_fds(volume *v, int idx, probe *p, int lockfd)
{
	member *mb = &v->mem[idx];

	vol_keep_old_fd(v, idx, mb->rootfd);
	vol_keep_old_fd(v, idx, mb->metafd);
	vol_keep_old_fd(v, idx, mb->logfd);
	__atomic_store_n(&mb->logfd, -1, __ATOMIC_RELEASE);
	mb->rootfd = p->rootfd;
	mb->metafd = p->metafd;
	mb->lockfd = lockfd;
	p->rootfd = p->metafd = -1;
}

int volume_member_revive(volume *v, int idx)
{
	volume_set_journals_none(v, false); /* it may bring journals back */
	member *mb = &v->mem[idx];
	probe p = { .path = mb->path };
	struct stat st;
	char *msg = NULL;
	int rc = 0;

	/* A member given up after the I/O timeout is not probed: that would
	 * hang this thread too. */
	if (volume_member_ok(v, idx) || v->read_only || memberio_lost(v->mio, idx))
		return 0;
	revive_call r = { .v = v, .idx = idx, .p = p, .st_rc = -1, .old_lockfd = -1, .lockfd = -1 };
	if (volume_on_member(v, idx, revive_probe, &r) < 0)
		return revive_lost(v, idx); /* its fds are the stuck worker's */
	p = r.p;
	if (p.state == P_OK && (memcmp(p.sb.uuid, v->uuid, 16) || p.sb.index != idx))
		goto out; /* another volume's or another member's: never ours to take */
	if (p.state == P_OK && revive_differs(v, idx, &r))
		goto out;
	if (revive_unmounted(v, idx, &p))
		goto out;
	if (p.state == P_OK) {
		/* The same directory that failed by an I/O error stays failed;
		 * one that went away and is back (or a new one) is taken. */
		st = r.st;
		if (r.st_rc < 0 ||
		    (!__atomic_load_n(&mb->root_lost, __ATOMIC_RELAXED) && st.st_dev == mb->dev &&
		     st.st_ino == mb->ino))
			goto out;
	} else if (p.state == P_EMPTY) {
		p.metafd = volume_on_member(v, idx, revive_format, &r);
		if (p.metafd == -ETIMEDOUT && memberio_lost(v->mio, idx)) {
			p.rootfd = -1; /* the stuck worker's */
			revive_lost(v, idx);
			goto out;
		}
		if (p.metafd < 0) {
			ecfs_log(LOG_WARNING, "member %d (%s): cannot format the replacement: %s", idx,
			         mb->path, g_strerror(-p.metafd));
			goto out;
		}
	} else {
		goto out;
	}
	if (r.st_rc < 0)
		goto out;
	st = r.st;
	/* The lock on the member's worker too, before v->lock is taken: a
	 * member that hangs there is given up, rather than the heal thread
	 * holding v->lock for ever. */
	pthread_mutex_lock(&v->lock);
	r.old_lockfd = mb->lockfd;
	mb->lockfd = -1;
	pthread_mutex_unlock(&v->lock);
	r.p = p;
	rc = volume_on_member(v, idx, revive_lock, &r);
	msg = r.msg;
	if (rc == -ETIMEDOUT && memberio_lost(v->mio, idx)) {
		p.rootfd = p.metafd = -1; /* the stuck worker's */
		rc = revive_lost(v, idx);
		goto out;
	}
	if (r.heal_rc < 0)
		ecfs_log(LOG_WARNING, "member %d (%s): cannot create " ECFS_META_DIR "/" HEAL_FILE
		         " (a rebuild cut short is not resumed at the next mount): %s", idx,
		         mb->path, g_strerror(-r.heal_rc));
	pthread_mutex_lock(&v->lock);
	take_new_fds(v, idx, &p, r.lockfd);
	if (rc == 0) {
		mb->dev = st.st_dev;
		mb->ino = st.st_ino;
		mb->mi = p.mi;
		vol_note_memory_only(v, idx);
		__atomic_store_n(&mb->root_lost, false, __ATOMIC_RELAXED);
		mb->warned_strip = false;
		__atomic_store_n(&mb->healing, true, __ATOMIC_RELEASE);
		g_clear_pointer(&mb->why, g_free);
		__atomic_store_n(&mb->failed, false, __ATOMIC_RELEASE);
		rc = 1;
	}
	pthread_mutex_unlock(&v->lock);
	if (rc == 1) {
		vol_watch_root(v, idx);
		ecfs_log(LOG_WARNING, "member %d (%s) is back in service: rebuilding it online", idx,
		         mb->path);
		vol_event(v, VOLUME_EVENT_MEMBER_BACK, idx, NULL, "back in service: rebuilding it online");
	} else {
		ecfs_log(LOG_WARNING, "member %d (%s): %s", idx, mb->path, msg);
	}
	g_free(msg);
out:
	vol_probe_free(&p);
	return rc;
}
