/* SPDX-License-Identifier: MIT */
/*
 * Member health: which members are in service, failing one for the rest
 * of the mount, the check that a member root is still the directory
 * opened, which errors mean a broken member and which are answers, the
 * counters, the files met damaged or lost, the events told to the daemon,
 * and the volume-health report (volume_health_text).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
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

uint64_t volume_query_members(volume *v)
{
	uint64_t answer = 0, now = 0;

	for (int i = 0; i < v->n; i++) {
		if (!volume_member_answers(v, i))
			continue;
		answer |= 1ull << i;
		if (!memberio_stalled(v->mio, i))
			now |= 1ull << i;
	}
	return now ? now : answer;
}
/* ---- member health ---- */

void vol_fail_member(volume *v, int idx, const char *why)
{
	member *mb = &v->mem[idx];
	bool first;

	pthread_mutex_lock(&v->lock);
	first = !mb->failed;
	if (first) {
		mb->why = g_strdup(why);
		__atomic_store_n(&mb->failed, true, __ATOMIC_RELEASE);
		dirstamps_forget_member(v->mops.dirstamps, idx); /* it misses what is made now */
		ecfs_log(LOG_ERR, "member %d (%s) failed: %s; %d of %d members failed%s", idx,
		         mb->path, why, volume_failed_count(v), v->n,
		         volume_usable(v) ? "" : ", more than m: the volume is unusable");
	}
	pthread_mutex_unlock(&v->lock);
	if (first)
		vol_event(v, VOLUME_EVENT_MEMBER_FAILED, idx, NULL, why);
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

/* The checks of one volume_check_roots, in memory of their own: with a
 * member timeout, a read waits for them no longer than the members'
 * bound (memberio_bound_ms), and a check left behind a member's hung
 * call finishes on its own. */
struct root_round {
	mio_batch batch;
	struct root_check rc[64];
};

static void root_round_free(void *arg)
{
	g_free(arg);
}

void volume_check_roots(volume *v)
{
	struct root_round *r;
	struct timespec ts;
	int64_t last;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	last = __atomic_load_n(&v->roots_checked, __ATOMIC_RELAXED);
	if (ts.tv_sec == last ||
	    !__atomic_compare_exchange_n(&v->roots_checked, &last, (int64_t)ts.tv_sec, false,
	                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	r = g_new(struct root_round, 1);
	mio_batch_init_caller(v->mio, &r->batch);
	mio_batch_bound(&r->batch);
	mio_batch_by_release(&r->batch);
	for (int i = 0; i < v->n; i++) {
		r->rc[i] = (struct root_check){ v, i };
		/* one stuck in a call is the watchdog's: its check would only
		 * queue behind that call, and the read wait the bound for it */
		if (volume_member_ok(v, i) && !memberio_stalled(v->mio, i))
			memberio_submit(v->mio, i, &r->batch, check_root, &r->rc[i]);
	}
	/* a lost member was failed by the watchdog */
	mio_batch_wait_bounded(v->mio, &r->batch);
	mio_batch_release(&r->batch, root_round_free, r);
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

/* volume_member_error, counting the error as a chunk read's or write's
 * (io, enum volume_io) unless io is -1 or the error is an answer. */
static bool member_error(volume *v, int idx, int err, const char *what, int io)
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
	if (io >= 0) {
		pthread_mutex_lock(&v->lock);
		v->mem[idx].io_errors[io]++;
		pthread_mutex_unlock(&v->lock);
	}
	msg = why ? g_strdup_printf("%s (%s: %s)", why, what, g_strerror(err))
	          : g_strdup_printf("%s: %s", what, g_strerror(err));
	if (why)
		__atomic_store_n(&v->mem[idx].root_lost, true, __ATOMIC_RELAXED);
	vol_fail_member(v, idx, msg);
	g_free(msg);
	return true;
}

bool volume_member_error(volume *v, int idx, int err, const char *what)
{
	return member_error(v, idx, err, what, -1);
}

bool volume_member_io_error(volume *v, int idx, int err, const char *what, enum volume_io io)
{
	return member_error(v, idx, err, what, (int)io);
}

/* ---- files met damaged or lost, and events ---- */

/* The paths listed in the health report: each list at most this many,
 * of at most this many bytes in all (escaped, at most 4 times as many),
 * as the report is an xattr value of at most 64 KiB. */
#define FILES_LISTED 32
#define FILES_LISTED_BYTES 4096

/* Lists path in *list unless it is there, or counts it in *unlisted once
 * the list is full (v->lock held). */
static void note_file(GPtrArray **list, uint64_t *unlisted, const char *path)
{
	size_t bytes = strlen(path);

	if (!*list)
		*list = g_ptr_array_new_with_free_func(g_free);
	for (guint i = 0; i < (*list)->len; i++) {
		if (strcmp((*list)->pdata[i], path) == 0)
			return;
		bytes += strlen((*list)->pdata[i]);
	}
	if ((*list)->len < FILES_LISTED && bytes <= FILES_LISTED_BYTES)
		g_ptr_array_add(*list, g_strdup(path));
	else
		(*unlisted)++;
}

void volume_file_lost(volume *v, const char *path)
{
	pthread_mutex_lock(&v->lock);
	note_file(&v->lost, &v->lost_unlisted, path);
	pthread_mutex_unlock(&v->lock);
}

void vol_event(volume *v, volume_event e, int idx, const char *path, const char *detail)
{
	if (v->event_hook)
		v->event_hook(v->event_arg, e, idx, path, detail);
}

void volume_set_event_hook(volume *v, volume_event_fn fn, void *arg)
{
	v->event_arg = arg;
	v->event_hook = fn;
}

void volume_post_event(volume *v, volume_event e, int idx, const char *path,
                       const char *detail)
{
	vol_event(v, e, idx, path, detail);
}

const char *volume_event_name(volume_event e)
{
	static const char *const names[VOLUME_EVENTS] = {
		[VOLUME_EVENT_MEMBER_FAILED] = "member_failed",
		[VOLUME_EVENT_MEMBER_BACK] = "member_back",
		[VOLUME_EVENT_MEMBER_HEALED] = "member_healed",
		[VOLUME_EVENT_CHECKSUM_ERROR] = "checksum_error",
		[VOLUME_EVENT_VOLUME_FULL] = "volume_full",
		[VOLUME_EVENT_SCRUB_DONE] = "scrub_done",
	};
	return (unsigned)e < VOLUME_EVENTS ? names[e] : "unknown";
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
	note_file(&v->damaged, &v->damaged_unlisted, path);
	pthread_mutex_unlock(&v->lock);
	ecfs_log(first ? LOG_WARNING : LOG_DEBUG,
	         "member %d (%s): %s, stripe %llu: %s; decoding around it%s", idx, mb->path,
	         path, (unsigned long long)stripe, why,
	         first ? " (further bad strips on this member are logged at debug level)" : "");
	if (v->event_hook) {
		char *detail = g_strdup_printf("stripe %llu: %s", (unsigned long long)stripe, why);
		vol_event(v, VOLUME_EVENT_CHECKSUM_ERROR, idx, path, detail);
		g_free(detail);
	}
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

/* Appends p escaped as in C (volume.h: the report's paths), so that a
 * path is one line whatever bytes it holds. */
static void append_escaped(GString *s, const char *p)
{
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\\')
			g_string_append(s, "\\\\");
		else if (c < 0x20 || c == 0x7f)
			g_string_append_printf(s, "\\%03o", c);
		else
			g_string_append_c(s, (char)c);
	}
}

/* The members' lines of the report (v->lock held). */
static void members_text(volume *v, GString *s)
{
	for (int i = 0; i < v->n; i++) {
		member *mb = &v->mem[i];
		const char *state = mb->failed ? "failed"
		                    : __atomic_load_n(&mb->healing, __ATOMIC_ACQUIRE) ? "healing"
		                                                                       : "up";
		if (mb->failed)
			g_string_append_printf(s, "member.%d=failed %s: %s\n", i, mb->path, mb->why);
		else
			g_string_append_printf(s, "member.%d=%s %s\n", i, state, mb->path);
		g_string_append_printf(s, "member.%d.state=%s\nmember.%d.path=", i, state, i);
		append_escaped(s, mb->path);
		g_string_append_printf(s, "\nmember.%d.read_errors=%llu\nmember.%d.write_errors=%llu\n"
		                       "member.%d.checksum_errors=%llu\n", i,
		                       (unsigned long long)mb->io_errors[VOLUME_IO_READ], i,
		                       (unsigned long long)mb->io_errors[VOLUME_IO_WRITE], i,
		                       (unsigned long long)mb->strip_failures);
	}
}

/* The damaged or lost files' lines (v->lock held). */
static void files_text(GString *s, const char *what, const GPtrArray *list, uint64_t unlisted)
{
	guint n = list ? list->len : 0;

	g_string_append_printf(s, "%s_files=%u\n", what, n);
	for (guint i = 0; i < n; i++) {
		g_string_append_printf(s, "%s.%u=", what, i);
		append_escaped(s, list->pdata[i]);
		g_string_append_c(s, '\n');
	}
	g_string_append_printf(s, "%s_unlisted=%llu\n", what, (unsigned long long)unlisted);
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
	members_text(v, s);
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
	pthread_mutex_lock(&v->lock);
	files_text(s, "damaged", v->damaged, v->damaged_unlisted);
	files_text(s, "lost", v->lost, v->lost_unlisted);
	pthread_mutex_unlock(&v->lock);
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
