/* SPDX-License-Identifier: MIT */
/*
 * The online heal (see heal.h).  Once a second the heal thread looks at
 * the failed members; one that can be brought back is put in service by
 * volume_member_revive() and marked healing: from then on it takes every
 * write (files already rebuilt stay current on it; the others record it in
 * their headers' missed mask), but it answers no namespace query until it
 * is whole.  The rebuild is a run of ecfs-fsck's repair over the mounted
 * volume (fsck_tree + repair_file) with the healing members following the
 * others, never voting.  Each regular file is rebuilt through its ecfile
 * (ecfile_heal_begin/end): its users wait while its chunks are rebuilt,
 * and an open file takes the rebuilt chunks back.  A second, quick pass
 * catches what changed in the namespace meanwhile; then the members are
 * healed.  Problems found go to the log (what fsck would print).  The
 * thread also records on the others each failed member that missed a
 * change (volume_missed.c), so that a later mount it comes back to with
 * its old copy marks it healing and this rebuild runs.
 *
 * Files written past a slow member (-o write_quorum, stripe.h) are caught
 * up one by one: the write path tells the heal (volume_left_out), and a
 * file is rebuilt on the members it left out once it is closed (or has
 * waited CATCHUP_MAX_S), through the same repair, at the same rate.  A
 * file not found again under its name (renamed, removed) costs a verify
 * pass of the volume for those members; files still waiting at unmount
 * are recorded as missed changes, for the next mount to rebuild.
 */
#include "heal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "ecfile.h"
#include "memberio.h"
#include "fs_dirnames.h"
#include "fs_nodes.h"
#include "fsck.h"
#include "repair.h"
#include "scrub.h"
#include "stripe.h"
#include "log.h"
#include "volume.h"

/* Quick passes after the full one, at most (each one that repaired
 * something is followed by another). */
#define QUICK_PASSES 3
/* Seconds to wait before trying again a heal that left repairs failed. */
#define RETRY_SECONDS 30
/* How far (us) the rebuild of one locked file may run ahead of the rate. */
#define PACE_BURST 2000000
/* A file written past a slow member is caught up once nobody had it open
 * for CATCHUP_DELAY_S, or, kept open, CATCHUP_MAX_S after it was left out:
 * its users wait while it is caught up (the repair holds the file, as a
 * rebuild does), and a file is often read again right after it is written. */
#define CATCHUP_DELAY_S 5
#define CATCHUP_MAX_S 600

struct heal {
	volume *v;
	uint64_t rate;       /* the pass's: the heal's or the scrub's */
	uint64_t heal_rate, scrub_rate;
	scrub *scrub;        /* NULL: none */
	pthread_t thread;
	/* guards what is marked under lock; order: after an ecfile's lock,
	 * before the volume's files_lock */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	/* progress, under lock: a copy of the pass's counters */
	uint64_t members;  /* being rebuilt now */
	bool running, quick;
	uint64_t files, total_files, bytes, total_bytes;
	int64_t start_us;
	uint64_t completed;
	int64_t paced_since_us;
	uint64_t paced_bytes;
	bool file_locked;  /* a file's users wait for the run in progress */
	/* the heal thread's (heal_stop's once it has ended) */
	uint64_t recorded; /* failed members recorded on the others */
	uint64_t seq;      /* the last time stamp given (us) */
	/* files written past slow members: path -> struct catchup, under lock */
	GHashTable *catchup;
	uint64_t sweep;    /* members to verify the volume for: a file was not found */
	const uint8_t *want_id; /* the heal thread's: the file catch_up_file expects */
	bool found;
	bool scrubbing;    /* the heal thread's: the pass is the scrub's */
	bool skipped;      /* the scrub left the file in hand unread */
	bool halted;       /* the scrub's pace hook stopped the pass */
};

struct catchup {
	uint8_t id[16];
	uint64_t members;
	int64_t first_us; /* when it was left out */
	int64_t since_us; /* when it was last seen open (or left out, or due) */
};

/* ---- what fsck_tree and repair_file report, in the daemon ---- */

/* The problems of a pass go to the log; there is no progress line (the
 * health report reads the counters when asked). */
static void log_problem(void *arg, fsck *f, const fsck_report *r)
{
	(void)arg;
	(void)f;
	GString *line = g_string_new(NULL);
	g_string_append_printf(line, "heal: %s: %s", r->kind, r->path ? r->path : "volume");
	if (r->member >= 0)
		g_string_append_printf(line, ": member %d", r->member);
	if (r->len)
		g_string_append_printf(line, ": bytes %llu-%llu", (unsigned long long)r->off,
		                       (unsigned long long)(r->off + r->len - 1));
	/* What the kernel keeps of a name repaired goes (fs_nodes.h), and
	 * the names the daemon holds whole, since a repair may remove one. */
	if (r->st == FSCK_REPAIRED) {
		if (r->path)
			fs_nodes_inval_path(r->path);
		fs_dirnames_drop_all();
	}
	/* Rebuilding a member repairs every file on it: those are expected. */
	ecfs_log(r->st == FSCK_REPAIRED ? LOG_DEBUG : LOG_WARNING, "%s: %s [%s]", line->str,
	         r->detail, r->st == FSCK_REPAIRED ? "repaired"
	                    : r->st == FSCK_UNREPAIRABLE ? "unrepairable"
	                                                 : "repair failed");
	g_string_free(line, TRUE);
}

static const fsck_sink log_sink = { log_problem, NULL, NULL };

/* ---- hooks ---- */

/* Sleeps until the bytes rebuilt so far are due at the rate, less slack
 * microseconds, in slices, so a stop is quick (h->lock held). */
static void pay_debt(heal *h, int64_t slack)
{
	while (!h->stop && h->rate) {
		int64_t due = h->paced_since_us + (int64_t)(h->paced_bytes * 1000000.0 / (double)h->rate);
		int64_t now = g_get_monotonic_time();
		if (now + slack >= due)
			break;
		int64_t wait = MIN(due - now, 100000);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t ns = ts.tv_nsec + wait * 1000;
		ts.tv_sec += ns / 1000000000;
		ts.tv_nsec = ns % 1000000000;
		pthread_cond_timedwait(&h->wake, &h->lock, &ts);
	}
}

/* Copies the pass's counters for the health report (h->lock held). */
static void snapshot(heal *h, const fsck *f)
{
	h->files = f->files;
	h->total_files = f->total_files;
	h->bytes = f->bytes;
	h->total_bytes = MAX(f->total_bytes, f->bytes);
}

static void *file_begin(fsck *f, const char *path)
{
	heal *h = f->hooks->arg;

	pthread_mutex_lock(&h->lock);
	pay_debt(h, 0);
	pthread_mutex_unlock(&h->lock);
	ecfile *ef = ecfile_heal_begin(f->v, path);
	if (h->want_id)
		h->found = ef && !memcmp(ecfile_file_id(ef), h->want_id, 16);
	pthread_mutex_lock(&h->lock);
	h->file_locked = ef != NULL;
	pthread_mutex_unlock(&h->lock);
	return ef;
}

/* The scrub leaves a file unread if it is not due (scrub_skip). */
static bool skip_file(fsck *f, const char *path, void *token)
{
	heal *h = f->hooks->arg;

	(void)path;
	h->skipped = h->scrubbing &&
	             (h->halted || scrub_skip(h->scrub, token ? ecfile_file_id(token) : NULL));
	return h->skipped;
}

static void file_end(fsck *f, const char *path, void *token)
{
	heal *h = f->hooks->arg;

	if (h->scrubbing && !h->skipped && !h->halted) /* a file cut short is not verified */
		scrub_file_done(h->scrub, f, token ? ecfile_file_id(token) : NULL, path);
	h->skipped = false;
	if (token)
		ecfile_heal_end(token, path, f->heal_mask);
	pthread_mutex_lock(&h->lock);
	h->file_locked = false;
	snapshot(h, f);
	pthread_mutex_unlock(&h->lock);
}

/* The rate is kept between files where it can: the users of a file wait
 * while it is rebuilt, so a file is rebuilt at full speed unless it runs
 * PACE_BURST ahead of the rate. */
static bool pace(fsck *f, uint64_t bytes)
{
	heal *h = f->hooks->arg;
	bool stop;

	pthread_mutex_lock(&h->lock);
	snapshot(h, f);
	h->paced_bytes += bytes;
	pay_debt(h, h->file_locked ? PACE_BURST : 0);
	stop = h->stop;
	pthread_mutex_unlock(&h->lock);
	/* a scrub gives way to a pause and to a member to rebuild */
	if (h->scrubbing && (stop || !scrub_wanted(h->scrub) || volume_healing_mask(f->v)))
		stop = h->halted = true;
	return !stop;
}

/* ---- the health report ---- */

static char *health_lines(void *arg)
{
	heal *h = arg;
	GString *s = g_string_new("heal=");
	long left = -1;

	pthread_mutex_lock(&h->lock);
	if (!h->members) {
		g_string_append(s, "idle");
	} else {
		g_string_append(s, "member");
		for (int i = 0; i < 64; i++)
			if (h->members >> i & 1)
				g_string_append_printf(s, " %d", i);
		g_string_append(s, h->quick ? " verifying" : " rebuilding");
		if (h->running) {
			double secs = (double)(g_get_monotonic_time() - h->start_us) / 1e6;
			double rate = secs > 0 ? (double)h->bytes / secs : 0;
			g_string_append_printf(s, " files=%llu/%llu bytes=%llu/%llu rate=%.1fMB/s",
			                       (unsigned long long)h->files,
			                       (unsigned long long)h->total_files,
			                       (unsigned long long)h->bytes,
			                       (unsigned long long)h->total_bytes, rate / 1e6);
			if (rate > 0 && h->total_bytes > h->bytes) {
				left = (long)((double)(h->total_bytes - h->bytes) / rate);
				g_string_append_printf(s, " eta=%ld:%02ld", left / 60, left % 60);
			}
			/* the same for programs (ecfs status, -o metrics) */
			g_string_append_printf(s, "\nheal.bytes=%llu\nheal.bytes_total=%llu\n"
			                       "heal.files=%llu\nheal.files_total=%llu\n"
			                       "heal.rate_bytes=%.0f",
			                       (unsigned long long)h->bytes,
			                       (unsigned long long)h->total_bytes,
			                       (unsigned long long)h->files,
			                       (unsigned long long)h->total_files, rate);
			if (left >= 0)
				g_string_append_printf(s, "\nheal.eta_s=%ld", left);
		}
	}
	g_string_append_printf(s, "\nheals_completed=%llu\nheal_catchup=%u\n",
	                       (unsigned long long)h->completed, g_hash_table_size(h->catchup));
	pthread_mutex_unlock(&h->lock);
	if (h->scrub) {
		char *lines = scrub_health_lines(h->scrub);
		g_string_append(s, lines);
		g_free(lines);
	}
	return g_string_free(s, FALSE);
}

/* ---- the rebuild ---- */

static guint id_hash(gconstpointer p)
{
	const uint8_t *b = p;
	return (guint)b[0] | (guint)b[1] << 8 | (guint)b[2] << 16 | (guint)b[3] << 24;
}

static gboolean id_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, 16) == 0;
}

/* A run of fsck's repair on the mounted volume, rebuilding members (none
 * for a scrub), through the hooks above: f and hooks are the caller's. */
static void pass_init(heal *h, fsck *f, fsck_hooks *hooks, uint64_t members)
{
	volume *v = h->v;

	*hooks = (fsck_hooks){ .file_begin = file_begin, .file_end = file_end,
	                       .skip = skip_file, .pace = pace, .arg = h };
	*f = (fsck){ .v = v, .o = { .repair = true, .quiet = true }, .sink = &log_sink,
	             .hooks = hooks, .heal_mask = members, .k = volume_k(v), .m = volume_m(v),
	             .n = volume_n(v), .links = g_hash_table_new_full(id_hash, id_equal, g_free,
	                                                               g_free),
	             .start_us = g_get_monotonic_time() };
	f->walk_mask = ~volume_failed_mask(v) & (f->n == 64 ? ~0ull : (1ull << f->n) - 1);
}

/* Counts the pass's totals and starts its pace and progress. */
static void pass_start(heal *h, fsck *f, bool quick, uint64_t rate)
{
	fsck_count_totals(f);
	pthread_mutex_lock(&h->lock);
	h->running = !h->scrubbing;
	h->quick = quick;
	h->start_us = f->start_us;
	snapshot(h, f);
	h->rate = rate;
	h->paced_since_us = f->start_us;
	h->paced_bytes = 0;
	pthread_mutex_unlock(&h->lock);
}

/* One pass of fsck's repair over the mounted volume.  Returns 0 if it ran
 * to the end with no repair left failed (*repaired: it changed something). */
static int run_pass(heal *h, uint64_t members, bool quick, bool *repaired)
{
	volume *v = h->v;
	fsck_hooks hooks;
	fsck f;

	pass_init(h, &f, &hooks, members);
	f.quick = quick;
	pass_start(h, &f, quick, h->heal_rate);

	int rc = fsck_tree(&f);

	pthread_mutex_lock(&h->lock);
	h->running = false;
	pthread_mutex_unlock(&h->lock);
	double secs = (double)(g_get_monotonic_time() - f.start_us) / 1e6;
	ecfs_log(LOG_INFO, "heal: %s pass %s: %llu files, %llu bytes in %.1f s (%.1f MB/s), "
	         "%llu strips rebuilt, %llu repairs, %llu failed, %llu unrepairable",
	         quick ? "verify" : "rebuild", rc < 0 ? "stopped" : "done",
	         (unsigned long long)f.files, (unsigned long long)f.bytes, secs,
	         secs > 0 ? (double)f.bytes / secs / 1e6 : 0.0,
	         (unsigned long long)f.strips_rebuilt, (unsigned long long)f.repaired,
	         (unsigned long long)f.failed, (unsigned long long)f.unrepairable);
	*repaired = f.repaired != 0;
	bool ok = rc == 0 && f.failed == 0 && (volume_failed_mask(v) & members) == 0;
	g_hash_table_destroy(f.links);
	return ok ? 0 : rc < 0 ? rc : -EIO;
}

/* ---- what the members remember of failures (volume_missed.c) ---- */

/* A time stamp above the last one given. */
static uint64_t next_seq(heal *h)
{
	h->seq = MAX((uint64_t)g_get_real_time(), h->seq + 1);
	return h->seq;
}

/* Records on the others each failed member that may have missed a
 * change, so a later mount knows it is stale should it come back with its
 * old copy. */
static void record_failed(heal *h)
{
	uint64_t failed = volume_missed_changes(h->v) & ~h->recorded;

	for (int i = 0; i < volume_n(h->v); i++)
		if (failed >> i & 1 && volume_missed_record(h->v, i, next_seq(h)) > 0)
			h->recorded |= 1ull << i;
}

static bool stopping(heal *h)
{
	pthread_mutex_lock(&h->lock);
	bool stop = h->stop;
	pthread_mutex_unlock(&h->lock);
	return stop;
}

static int rebuild(heal *h, uint64_t members)
{
	bool repaired = true;

	pthread_mutex_lock(&h->lock);
	h->members = members;
	pthread_mutex_unlock(&h->lock);
	int rc = run_pass(h, members, false, &repaired);
	for (int i = 0; rc == 0 && repaired && i < QUICK_PASSES && !stopping(h); i++)
		rc = run_pass(h, members, true, &repaired);
	if (rc == 0 && repaired)
		rc = -EAGAIN; /* still changing: again later */
	for (int i = 0; rc == 0 && i < volume_n(h->v); i++)
		if (members >> i & 1) {
			volume_member_healed(h->v, i);
			h->seq = volume_missed_healed(h->v, i, next_seq(h));
			h->recorded &= ~(1ull << i);
			ecfs_log(LOG_WARNING, "heal: member %d (%s) is rebuilt and fully in service",
			         i, volume_member_path(h->v, i));
		}
	pthread_mutex_lock(&h->lock);
	if (rc == 0)
		h->completed += (uint64_t)__builtin_popcountll(members);
	h->members = 0;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* ---- files written past slow members ---- */

/* volume_left_out's hook, on a writer's thread (the file's lock held). */
static void left_out(void *arg, const char *path, const uint8_t *id, uint64_t members)
{
	heal *h = arg;

	pthread_mutex_lock(&h->lock);
	struct catchup *c = g_hash_table_lookup(h->catchup, path);
	if (!c) {
		c = g_new0(struct catchup, 1);
		g_hash_table_insert(h->catchup, g_strdup(path), c);
	} else if (memcmp(c->id, id, 16)) {
		h->sweep |= c->members; /* the file of that entry is elsewhere now */
		c->members = 0;
	}
	memcpy(c->id, id, 16);
	if (!c->members)
		c->first_us = g_get_monotonic_time();
	c->members |= members;
	c->since_us = g_get_monotonic_time();
	pthread_mutex_unlock(&h->lock);
}

/* A regular file at path on each member in service that answers so. */
static int regular_run(void *arg)
{
	const member_at *p = arg;
	const char *leaf;
	struct stat st;
	int pfd = volume_parent_fd(p->v, p->mb, p->path, &leaf);

	if (pfd < 0)
		return pfd;
	int r = MIO_CALL(fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW));
	int err = errno;
	MIO_CALL(close(pfd));
	return r < 0 ? -err : S_ISREG(st.st_mode);
}

static uint64_t regular_on(volume *v, const char *path)
{
	return volume_members_where(v, path, regular_run);
}

/* Rebuilds the chunks of the file at path (file id c->id) on the members
 * c left out, as a rebuild would.  1: caught up; 0: not found under that
 * name; -1: the repair did not finish. */
static int catch_up_file(heal *h, const char *path, const struct catchup *c)
{
	volume *v = h->v;
	fsck_hooks hooks;
	fsck f;
	uint64_t created;

	pass_init(h, &f, &hooks, c->members);
	h->rate = h->heal_rate;
	h->want_id = c->id;
	h->found = false;
	int rc = repair_file(&f, path, regular_on(v, path), 0, &created);
	h->want_id = NULL;
	repair_release(&f);
	g_hash_table_destroy(f.links);
	if (!h->found)
		return 0;
	bool ok = rc == 0 && f.failed == 0 && f.unrepairable == 0;
	ecfs_log(ok ? LOG_INFO : LOG_WARNING, "heal: %s %s on members 0x%llx (%llu strips)", path,
	         ok ? "caught up" : "not caught up", (unsigned long long)c->members,
	         (unsigned long long)f.strips_rebuilt);
	return ok ? 1 : -1;
}

/* The entries due now, taken out of the table (path -> struct catchup). */
static GHashTable *due_catchups(heal *h)
{
	GHashTable *due = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	int64_t now = g_get_monotonic_time();
	GHashTableIter it;
	gpointer key, val;

	pthread_mutex_lock(&h->lock);
	g_hash_table_iter_init(&it, h->catchup);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		struct catchup *c = val;
		bool open = volume_file_is_open(h->v, c->id);
		if (open)
			c->since_us = MAX(c->since_us, now);
		if ((open || now - c->since_us < CATCHUP_DELAY_S * 1000000ll) &&
		    now - c->first_us < CATCHUP_MAX_S * 1000000ll)
			continue;
		g_hash_table_iter_steal(&it);
		g_hash_table_insert(due, key, val);
	}
	h->paced_since_us = now;
	h->paced_bytes = 0;
	pthread_mutex_unlock(&h->lock);
	return due;
}

/* Puts entry c of path back in the table, due at since_us (h->lock held;
 * both are taken over). */
static void requeue(heal *h, char *path, struct catchup *c, int64_t since_us)
{
	struct catchup *now = g_hash_table_lookup(h->catchup, path);

	if (now) { /* left out again meanwhile */
		if (!memcmp(now->id, c->id, 16))
			now->members |= c->members;
		g_free(path);
		g_free(c);
		return;
	}
	c->since_us = since_us;
	c->first_us = since_us;
	g_hash_table_insert(h->catchup, path, c);
}

/* A verify pass for members (the health report shows it). */
static int verify(heal *h, uint64_t members)
{
	bool repaired;

	pthread_mutex_lock(&h->lock);
	h->members = members;
	pthread_mutex_unlock(&h->lock);
	int rc = run_pass(h, members, true, &repaired);
	pthread_mutex_lock(&h->lock);
	h->members = 0;
	pthread_mutex_unlock(&h->lock);
	return rc;
}

/* Catches up the files due, then verifies the volume for the members of
 * files that were not found under their names. */
static void catch_up(heal *h)
{
	GHashTable *due = due_catchups(h);
	GHashTableIter it;
	gpointer key, val;

	g_hash_table_iter_init(&it, due);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		struct catchup *c = val;
		c->members &= ~volume_failed_mask(h->v); /* failed: recorded and rebuilt as such */
		int rc = !c->members ? 1 : stopping(h) ? -2 : catch_up_file(h, key, c);
		g_hash_table_iter_steal(&it);
		pthread_mutex_lock(&h->lock);
		if (rc == 0)
			h->sweep |= c->members;
		if (rc < 0) /* again later; at once after a stop (heal_stop records it) */
			requeue(h, key, c, g_get_monotonic_time() +
			        (rc == -1 ? RETRY_SECONDS * 1000000ll : 0));
		else {
			g_free(key);
			g_free(c);
		}
		pthread_mutex_unlock(&h->lock);
	}
	g_hash_table_destroy(due);
	pthread_mutex_lock(&h->lock);
	uint64_t sweep = h->sweep & ~volume_failed_mask(h->v);
	pthread_mutex_unlock(&h->lock);
	if (sweep && !stopping(h) && verify(h, sweep) == 0) {
		pthread_mutex_lock(&h->lock);
		h->sweep &= ~sweep;
		pthread_mutex_unlock(&h->lock);
	}
}

/* Records the members that files still waiting left out, as missed
 * changes: the next mount rebuilds them (heal_stop). */
static void record_catchups(heal *h)
{
	GHashTableIter it;
	gpointer val;
	uint64_t members = h->sweep;

	g_hash_table_iter_init(&it, h->catchup);
	while (g_hash_table_iter_next(&it, NULL, &val))
		members |= ((struct catchup *)val)->members;
	members &= ~h->recorded;
	for (int i = 0; i < volume_n(h->v); i++)
		if (members >> i & 1 && volume_member_ok(h->v, i) &&
		    volume_missed_record(h->v, i, next_seq(h)) > 0)
			ecfs_log(LOG_WARNING, "heal: member %d is not caught up on files written past it: "
			         "the next mount rebuilds it", i);
}

/* ---- the scrub ---- */

/* A pass of the scrub's run (scrub.h): every file not verified yet in the
 * run and due, read whole and repaired as a rebuild would, at the scrub's
 * rate; a pause, a member to rebuild or an unmount stops it, and a later
 * pass goes on with the files left. */
static void scrub_pass(heal *h)
{
	fsck_hooks hooks;
	fsck f;

	pass_init(h, &f, &hooks, 0);
	f.o.deep = scrub_deep(h->scrub);
	h->scrubbing = true;
	h->halted = false;
	pass_start(h, &f, false, h->scrub_rate);
	scrub_pass_begin(h->scrub, &f);
	int rc = fsck_tree(&f);
	scrub_pass_end(h->scrub, &f, rc);
	h->scrubbing = false;
	g_hash_table_destroy(f.links);
}

static void *heal_main(void *arg)
{
	heal *h = arg;
	volume *v = h->v;
	int64_t retry_at = 0;

	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&h->wake, &h->lock, &ts);
		if (h->stop)
			break;
		pthread_mutex_unlock(&h->lock);
		/* A member whose directory was removed is noticed even if no
		 * I/O touches it. */
		volume_check_roots(v);
		record_failed(h);
		for (int i = 0; i < volume_n(v); i++)
			if (!volume_member_ok(v, i))
				volume_member_revive(v, i);
		uint64_t members = volume_healing_mask(v);
		if (members && g_get_monotonic_time() >= retry_at && volume_usable(v)) {
			int rc = rebuild(h, members);
			if (rc < 0 && rc != -ECANCELED) {
				ecfs_log(LOG_WARNING, "heal: the rebuild is not complete (%s): trying again "
				         "in %d s", g_strerror(-rc), RETRY_SECONDS);
				retry_at = g_get_monotonic_time() + RETRY_SECONDS * 1000000ll;
			}
		} else if (!members && volume_usable(v)) {
			catch_up(h);
			if (h->scrub && scrub_wanted(h->scrub) && !stopping(h))
				scrub_pass(h);
		}
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

heal *heal_start(volume *v, uint64_t rate, uint64_t scrub_rate, scrub *s)
{
	heal *h = g_new0(heal, 1);

	h->v = v;
	h->rate = h->heal_rate = rate;
	h->scrub_rate = scrub_rate;
	h->scrub = s;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->wake, NULL);
	h->catchup = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	volume_set_health_hook(v, health_lines, h);
	volume_set_left_out_hook(v, left_out, h);
	if (pthread_create(&h->thread, NULL, heal_main, h) != 0) {
		volume_set_left_out_hook(v, NULL, NULL);
		volume_set_health_hook(v, NULL, NULL);
		g_hash_table_destroy(h->catchup);
		pthread_cond_destroy(&h->wake);
		pthread_mutex_destroy(&h->lock);
		g_free(h);
		return NULL;
	}
	return h;
}

void heal_stop(heal *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_broadcast(&h->wake);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	record_failed(h); /* those failed within the last second */
	volume_set_left_out_hook(h->v, NULL, NULL);
	record_catchups(h);
	volume_set_health_hook(h->v, NULL, NULL);
	g_hash_table_destroy(h->catchup);
	pthread_cond_destroy(&h->wake);
	pthread_mutex_destroy(&h->lock);
	g_free(h);
}
