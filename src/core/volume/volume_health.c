/* SPDX-License-Identifier: MIT */
/*
 * Member health: which members are in service, failing one for the rest
 * of the mount, the check that a member root is still the directory
 * opened, which errors mean a broken member and which are answers, the
 * counters, and the volume-health report (volume_health_text).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include <glib.h>

#include "dirstamps.h"
#include "log.h"
#include "memberio.h"
#include "mounts.h"
#include "root_watch.h"
#include "superblock.h"
#include "volume_private.h"

/* ---- members in service ---- */

bool volume_member_ok(const volume *v, int idx)
{
	return !__atomic_load_n(&v->mem[idx].failed, __ATOMIC_ACQUIRE);
}

int volume_failed_count(const volume *v)
{
	int c = 0;
	for (int i = 0; i < v->n; i++)
		c += !volume_member_ok(v, i);
	return c;
}

uint64_t volume_failed_mask(volume *v)
{
	uint64_t mask = 0;
	for (int i = 0; i < v->n; i++)
		if (!volume_member_ok(v, i))
			mask |= 1ull << i;
	return mask;
}

bool volume_usable(const volume *v)
{
	return volume_failed_count(v) <= v->m;
}

uint64_t volume_healing_mask(volume *v)
{
	uint64_t mask = 0;

	pthread_mutex_lock(&v->lock);
	for (int i = 0; i < v->n; i++)
		if (__atomic_load_n(&v->mem[i].healing, __ATOMIC_ACQUIRE) && !v->mem[i].failed)
			mask |= 1ull << i;
	pthread_mutex_unlock(&v->lock);
	return mask;
}

bool volume_member_answers(volume *v, int idx)
{
	return volume_member_ok(v, idx) && !__atomic_load_n(&v->mem[idx].healing, __ATOMIC_ACQUIRE);
}
/* ---- member health ---- */

void vol_fail_member(volume *v, int idx, const char *why)
{
	member *mb = &v->mem[idx];

	pthread_mutex_lock(&v->lock);
	if (!mb->failed) {
		mb->why = g_strdup(why);
		__atomic_store_n(&mb->failed, true, __ATOMIC_RELEASE);
		dirstamps_forget_member(v->mops.dirstamps, idx); /* it misses what is made now */
		ecfs_log(LOG_ERR, "member %d (%s) failed: %s; %d of %d members failed%s", idx,
		         mb->path, why, volume_failed_count(v), v->n,
		         volume_usable(v) ? "" : ", more than m: the volume is unusable");
	}
	pthread_mutex_unlock(&v->lock);
}

/* The member root still the directory we opened, and still ours?  Asked
 * of the member unless its watch saw nothing since it last was (a
 * local member: root_watch.h). */
static const char *root_changed(volume *v, int idx)
{
	member *mb = &v->mem[idx];
	struct stat st, now;
	uint64_t epoch;

	if (root_watch_quiet(v->watch, idx, &epoch))
		return NULL;
	if (fstat(mb->rootfd, &st) < 0) /* a dead mount: not a removal */
		return "the member directory does not answer";
	if (st.st_nlink == 0)
		return "the member directory was removed";
	if (stat(mb->path, &now) < 0 || now.st_dev != mb->dev || now.st_ino != mb->ino)
		return "the member directory was replaced";
	if (fstatat(mb->rootfd, ECFS_META_DIR "/" SUPERBLOCK_FILE, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return "the member's superblock vanished";
	root_watch_verified(v->watch, idx, epoch);
	return NULL;
}

/* The root check of one member, on its worker: the calls are timed
 * (memberio.h), so a member that stopped answering is failed by the
 * watchdog instead of holding the thread that asked. */
static void check_root(void *arg)
{
	struct root_check *rc = arg;
	member *mb = &rc->v->mem[rc->idx];
	struct stat st;

	mio_io_begin();
	int err = fstat(mb->rootfd, &st) < 0 ? errno : 0;
	bool removed = !err && st.st_nlink == 0;
	bool replaced = !err && !removed && stat(mb->path, &st) == 0 &&
	                (st.st_dev != mb->dev || st.st_ino != mb->ino);
	mio_io_end();
	/* A root that cannot be asked (ENOTCONN: the member's FUSE or network
	 * mount died) fails the member with that error, idle or not. */
	if (err) {
		volume_member_error(rc->v, rc->idx, err, "the member directory");
		return;
	}
	/* Open chunks keep working in a deleted tree, so without this a
	 * member removed under us would be noticed only by path lookups.
	 * Another directory at the member's path is a disk swapped in (the
	 * online heal takes the new one). */
	if (removed || replaced) {
		__atomic_store_n(&mb->root_lost, true, __ATOMIC_RELAXED);
		vol_fail_member(rc->v, rc->idx, removed ? "the member directory was removed"
		                                    : "the member directory was replaced");
	}
}

void volume_check_roots(volume *v)
{
	struct root_check rc[64];
	struct timespec ts;
	int64_t last;
	mio_batch batch;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	last = __atomic_load_n(&v->roots_checked, __ATOMIC_RELAXED);
	if (ts.tv_sec == last ||
	    !__atomic_compare_exchange_n(&v->roots_checked, &last, (int64_t)ts.tv_sec, false,
	                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	mio_batch_init_caller(v->mio, &batch);
	for (int i = 0; i < v->n; i++) {
		rc[i] = (struct root_check){ v, i };
		if (volume_member_ok(v, i))
			memberio_submit(v->mio, i, &batch, check_root, &rc[i]);
	}
	mio_batch_wait(&batch); /* a lost member was failed by the watchdog */
}

/* A full member is not a broken one (space.h): said once per mount. */
static void member_full(volume *v, int idx, int err, const char *what)
{
	member *mb = &v->mem[idx];

	pthread_mutex_lock(&v->lock);
	bool first = !mb->warned_full;
	mb->warned_full = true;
	pthread_mutex_unlock(&v->lock);
	if (first)
		ecfs_log(LOG_WARNING, "member %d (%s) is out of space (%s: %s): the operation gets "
		         "that error and the member stays in service", idx, mb->path, what,
		         g_strerror(err));
}

bool volume_member_error(volume *v, int idx, int err, const char *what)
{
	const char *why = NULL;
	char *msg;

	if (err < 0)
		err = -err;
	if (!volume_member_ok(v, idx))
		return true;
	switch (err) {
	case ENOSPC: case EDQUOT:
		member_full(v, idx, err, what);
		return false;
	case EIO: case EROFS: case ENOTCONN: case ESTALE:
	case ENXIO: case ENODEV: case EBADF: case ETIMEDOUT: case ENOMEM:
	/* a network member's link or server gone (CIFS, 9p, FUSE clients) */
	case ECONNABORTED: case ECONNRESET: case EHOSTDOWN: case EHOSTUNREACH:
	case ENETDOWN: case ENETUNREACH: case ENOLINK:
		break;
	default:
		/* An answer (ENOENT, EEXIST, ...) unless the root itself is gone. */
		why = root_changed(v, idx);
		if (!why)
			return false;
	}
	msg = why ? g_strdup_printf("%s (%s: %s)", why, what, g_strerror(err))
	          : g_strdup_printf("%s: %s", what, g_strerror(err));
	if (why)
		__atomic_store_n(&v->mem[idx].root_lost, true, __ATOMIC_RELAXED);
	vol_fail_member(v, idx, msg);
	g_free(msg);
	return true;
}

void volume_strip_failure(volume *v, int idx, const char *path, uint64_t stripe,
                          const char *why)
{
	member *mb = &v->mem[idx];
	bool first;

	__atomic_add_fetch(&v->strip_failures, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&v->lock);
	mb->strip_failures++;
	first = !mb->warned_strip;
	mb->warned_strip = true;
	pthread_mutex_unlock(&v->lock);
	ecfs_log(first ? LOG_WARNING : LOG_DEBUG,
	         "member %d (%s): %s, stripe %llu: %s; decoding around it%s", idx, mb->path,
	         path, (unsigned long long)stripe, why,
	         first ? " (further bad strips on this member are logged at debug level)" : "");
}

void volume_count_decoded(volume *v, uint64_t stripes)
{
	__atomic_add_fetch(&v->decoded, stripes, __ATOMIC_RELAXED);
}

void volume_count_hedged(volume *v)
{
	__atomic_add_fetch(&v->hedged, 1, __ATOMIC_RELAXED);
}

void volume_count_listed_saved(volume *v)
{
	__atomic_add_fetch(&v->listed_saved, 1, __ATOMIC_RELAXED);
}

void volume_count_checksum_failure(volume *v, int idx)
{
	__atomic_add_fetch(&v->strip_failures, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&v->lock);
	v->mem[idx].strip_failures++;
	pthread_mutex_unlock(&v->lock);
}

void volume_count_healed(volume *v, uint64_t strips)
{
	__atomic_add_fetch(&v->strips_healed, strips, __ATOMIC_RELAXED);
}

/* ---- the health report ---- */

char *volume_same_filesystem(volume *v)
{
	uint64_t ok = ~volume_failed_mask(v);

	pthread_mutex_lock(&v->lock);
	mount_info mi[64];
	for (int i = 0; i < v->n; i++)
		mi[i] = v->mem[i].mi;
	pthread_mutex_unlock(&v->lock);
	return mounts_same_filesystem(mi, v->n, ok, NULL);
}

char *volume_health_text(volume *v)
{
	GString *s = g_string_new(NULL);
	int failed = volume_failed_count(v);
	bool healing = volume_healing_mask(v) != 0; /* not whole yet either */

	g_string_append_printf(s, "state=%s\n", failed == 0 && !healing ? "healthy"
	                       : failed <= v->m ? "degraded" : "failed");
	g_string_append_printf(s, "k=%d\nm=%d\nn=%d\nmembers_failed=%d\n", v->k, v->m, v->n, failed);
	pthread_mutex_lock(&v->lock);
	for (int i = 0; i < v->n; i++) {
		if (v->mem[i].failed)
			g_string_append_printf(s, "member.%d=failed %s: %s\n", i, v->mem[i].path,
			                       v->mem[i].why);
		else
			g_string_append_printf(s, "member.%d=%s %s\n", i,
			                       __atomic_load_n(&v->mem[i].healing, __ATOMIC_ACQUIRE)
			                       ? "healing" : "up", v->mem[i].path);
	}
	pthread_mutex_unlock(&v->lock);
	uint64_t up = 0;
	for (int i = 0; i < v->n; i++)
		if (volume_member_ok(v, i))
			up |= 1ull << i;
	int spare = __builtin_popcountll(up) - v->k;
	uint64_t slow = volume_settings(v)->no_read_around ? 0
	                : memberio_slow_of(v->mio, MIO_READ, up, spare);
	int quorum = volume_settings(v)->write_quorum;
	uint64_t wslow = quorum ? memberio_slow_of(v->mio, MIO_WRITE, up,
	                                        __builtin_popcountll(up) - quorum) : 0;
	for (int i = 0; i < v->n; i++)
		g_string_append_printf(s, "member.%d.latency_us=%llu\nmember.%d.read_us=%llu%s\n"
		                       "member.%d.write_us=%llu%s\n",
		                       i, (unsigned long long)memberio_latency_us(v->mio, i), i,
		                       (unsigned long long)memberio_cost_us(v->mio, i, MIO_READ),
		                       slow >> i & 1 ? " slow" : "", i,
		                       (unsigned long long)memberio_cost_us(v->mio, i, MIO_WRITE),
		                       wslow >> i & 1 ? " slow" : "");
	g_string_append_printf(s, "strips_decoded=%llu\nreads_hedged=%llu\nchecksum_failures=%llu\n",
	                       (unsigned long long)__atomic_load_n(&v->decoded, __ATOMIC_RELAXED),
	                       (unsigned long long)__atomic_load_n(&v->hedged, __ATOMIC_RELAXED),
	                       (unsigned long long)__atomic_load_n(&v->strip_failures,
	                                                            __ATOMIC_RELAXED));
	g_string_append_printf(s, "strips_healed=%llu\nlistings_from_last_mount=%llu\n",
	                       (unsigned long long)__atomic_load_n(&v->strips_healed,
	                                                            __ATOMIC_RELAXED),
	                       (unsigned long long)__atomic_load_n(&v->listed_saved,
	                                                            __ATOMIC_RELAXED));
	char *shared = volume_same_filesystem(v);
	if (shared)
		g_string_append_printf(s, "same_filesystem=%s\n", shared);
	g_free(shared);
	if (v->health_hook) {
		char *extra = v->health_hook(v->health_arg);
		g_string_append(s, extra);
		g_free(extra);
	}
	return g_string_free(s, FALSE);
}

void volume_set_health_hook(volume *v, char *(*fn)(void *), void *arg)
{
	v->health_arg = arg;
	v->health_hook = fn;
}
