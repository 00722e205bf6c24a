/* SPDX-License-Identifier: MIT */
/*
 * The online scrub's state (see scrub.h): the control commands, the
 * choice of the files a run checks, its progress and the record of when
 * each file was last verified, kept in .ecfs/scrub on the members (a text,
 * docs/FORMAT.md section 11), and its lines of the health report.  Times
 * are of the wall clock, in microseconds: a file verified at or after the
 * run's start is not read again when the run resumes.
 */
#include "scrub.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "log.h"

/* The state is saved at most this often (us) while a run goes on, and at
 * each pause, end and unmount. */
#define SAVE_EVERY_US 2000000
#define DAY_US (86400ll * 1000000)

enum scrub_state { SCRUB_IDLE, SCRUB_RUNNING, SCRUB_PAUSED };
static const char *const state_names[] = { "idle", "running", "paused" };

/* When a file was last verified, and at which path. */
struct verified {
	uint64_t at;
	char *path;
};

struct scrub {
	volume *v;
	/* held while the state is written, so the copies land in order;
	 * order: before lock */
	pthread_mutex_t save_lock;
	pthread_mutex_t lock; /* a leaf (the heal's lock may be held) */
	enum scrub_state state;
	/* the run: its start (us), what it was asked */
	uint64_t run;
	bool deep;
	unsigned percent, older_days;
	uint64_t target, threshold; /* percent: files to check, the latest time due */
	/* its progress */
	uint64_t files, bytes, found, repaired, unrepaired;
	uint64_t files_total, bytes_total;
	/* this pass's start: the counters then, and when (monotonic) */
	uint64_t base_files, base_bytes, base_found, base_repaired, base_unrepaired;
	int64_t pass_us;
	bool in_pass;
	/* the last run that ended */
	uint64_t last_end, last_files, last_found, last_repaired, last_unrepaired;
	GHashTable *verified; /* 32 hex digits of the file id -> struct verified */
	int64_t saved_us;
};

static void free_verified(gpointer p)
{
	struct verified *w = p;
	g_free(w->path);
	g_free(w);
}

static char *hex_id(const uint8_t *id)
{
	char *s = g_malloc(33);
	for (int i = 0; i < 16; i++)
		snprintf(s + 2 * i, 3, "%02x", id[i]);
	return s;
}

/* ---- the state file ---- */

#define FIELDS(X) X(run) X(target) X(threshold) X(files) X(bytes) X(found) X(repaired) \
	X(unrepaired) X(files_total) X(bytes_total) X(last_end) X(last_files) X(last_found) \
	X(last_repaired) X(last_unrepaired)

static char *state_text(scrub *s)
{
	GString *t = g_string_new("ecfs-scrub 1\n");
	GHashTableIter it;
	gpointer key, val;

	g_string_append_printf(t, "state=%s\ndeep=%d\npercent=%u\nolder_days=%u\n",
	                       state_names[s->state], s->deep, s->percent, s->older_days);
#define PUT(x) g_string_append_printf(t, #x "=%llu\n", (unsigned long long)s->x);
	FIELDS(PUT)
#undef PUT
	g_hash_table_iter_init(&it, s->verified);
	while (g_hash_table_iter_next(&it, &key, &val)) {
		struct verified *w = val;
		char *path = g_strescape(w->path ? w->path : "", NULL);
		g_string_append_printf(t, "file=%s %llu %s\n", (char *)key,
		                       (unsigned long long)w->at, path);
		g_free(path);
	}
	return g_string_free(t, FALSE);
}

/* Writes the state on the members (s->lock not held: the health report
 * does not wait for the members). */
static void save(scrub *s)
{
	pthread_mutex_lock(&s->save_lock);
	pthread_mutex_lock(&s->lock);
	char *text = state_text(s);
	s->saved_us = g_get_monotonic_time();
	pthread_mutex_unlock(&s->lock);
	if (volume_metafile_write(s->v, SCRUB_STATE_FILE, text) == 0)
		ecfs_log(LOG_WARNING, "scrub: its state could not be saved on any member");
	g_free(text);
	pthread_mutex_unlock(&s->save_lock);
}

/* One "file=<id> <at> <path>" value: a bad one is left out. */
static void parse_file(scrub *s, const char *val)
{
	char id[33];
	unsigned long long at;
	int used = 0;

	if (sscanf(val, "%32[0-9a-f] %llu %n", id, &at, &used) < 2 || strlen(id) != 32)
		return;
	struct verified *w = g_new0(struct verified, 1);
	w->at = at;
	w->path = g_strcompress(val + used);
	g_hash_table_replace(s->verified, g_strdup(id), w);
}

static void parse_line(scrub *s, const char *line)
{
	const char *eq = strchr(line, '=');
	if (!eq)
		return;
	size_t klen = (size_t)(eq - line);
	const char *val = eq + 1;
	unsigned long long x = strtoull(val, NULL, 10);

	if (klen == 4 && !strncmp(line, "file", 4)) {
		parse_file(s, val);
	} else if (klen == 5 && !strncmp(line, "state", 5)) {
		for (int i = 0; i < 3; i++)
			if (!strcmp(val, state_names[i]))
				s->state = (enum scrub_state)i;
	} else if (klen == 4 && !strncmp(line, "deep", 4)) {
		s->deep = x != 0;
	} else if (klen == 7 && !strncmp(line, "percent", 7)) {
		s->percent = (unsigned)MIN(x, 100);
	} else if (klen == 10 && !strncmp(line, "older_days", 10)) {
		s->older_days = (unsigned)MIN(x, 100000);
	}
#define GET(f) else if (klen == strlen(#f) && !strncmp(line, #f, klen)) s->f = x;
	FIELDS(GET)
#undef GET
}

static void load(scrub *s)
{
	char *text = volume_metafile_read(s->v, SCRUB_STATE_FILE);

	if (!text)
		return;
	if (!g_str_has_prefix(text, "ecfs-scrub 1\n")) {
		ecfs_log(LOG_WARNING, "scrub: .ecfs/scrub is not a scrub state: ignored");
		g_free(text);
		return;
	}
	gchar **lines = g_strsplit(text, "\n", -1);
	for (gchar **l = lines + 1; *l; l++)
		parse_line(s, *l);
	g_strfreev(lines);
	g_free(text);
	if (s->state != SCRUB_IDLE)
		ecfs_log(LOG_INFO, "scrub: a run is %s (%llu files checked so far)",
		         state_names[s->state], (unsigned long long)s->files);
}

scrub *scrub_new(volume *v)
{
	scrub *s = g_new0(scrub, 1);

	s->v = v;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->save_lock, NULL);
	s->verified = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, free_verified);
	load(s);
	return s;
}

void scrub_free(scrub *s)
{
	if (!s)
		return;
	if (s->state != SCRUB_IDLE)
		save(s);
	g_hash_table_destroy(s->verified);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->save_lock);
	g_free(s);
}

/* ---- control ---- */

/* "start [deep] [percent=P] [older=DAYS]" (s->lock held). */
static int start(scrub *s, gchar **words)
{
	bool deep = false;
	unsigned percent = 0, older = 0;

	for (gchar **w = words + 1; *w; w++) {
		char *end = NULL;
		if (!strcmp(*w, "deep"))
			deep = true;
		else if (g_str_has_prefix(*w, "percent="))
			percent = (unsigned)strtoul(*w + 8, &end, 10);
		else if (g_str_has_prefix(*w, "older="))
			older = (unsigned)strtoul(*w + 6, &end, 10);
		else if (**w)
			return -EINVAL;
		if (end && (*end || end == strchr(*w, '=') + 1 || percent > 100 || older > 100000))
			return -EINVAL;
	}
	if (s->state != SCRUB_IDLE)
		return -EBUSY;
	s->state = SCRUB_RUNNING;
	s->run = (uint64_t)g_get_real_time();
	s->deep = deep;
	s->percent = percent == 100 ? 0 : percent;
	s->older_days = older;
	s->target = s->threshold = 0;
	s->files = s->bytes = s->found = s->repaired = s->unrepaired = 0;
	s->files_total = s->bytes_total = 0;
	return 0;
}

int scrub_control(scrub *s, const char *cmd)
{
	gchar **words = g_strsplit(cmd, " ", -1);
	int rc = -EINVAL;

	pthread_mutex_lock(&s->lock);
	if (!words[0]) {
		rc = -EINVAL;
	} else if (!strcmp(words[0], "start")) {
		rc = start(s, words);
	} else if (!strcmp(words[0], "pause") && !words[1]) {
		rc = s->state == SCRUB_RUNNING ? 0 : -EALREADY;
		s->state = rc == 0 ? SCRUB_PAUSED : s->state;
	} else if (!strcmp(words[0], "resume") && !words[1]) {
		rc = s->state == SCRUB_PAUSED ? 0 : -EALREADY;
		s->state = rc == 0 ? SCRUB_RUNNING : s->state;
	}
	pthread_mutex_unlock(&s->lock);
	if (rc == 0) {
		ecfs_log(LOG_INFO, "scrub: %s", cmd);
		save(s);
	}
	g_strfreev(words);
	return rc;
}

bool scrub_wanted(scrub *s)
{
	pthread_mutex_lock(&s->lock);
	bool want = s->state == SCRUB_RUNNING;
	pthread_mutex_unlock(&s->lock);
	return want;
}

bool scrub_deep(scrub *s)
{
	pthread_mutex_lock(&s->lock);
	bool deep = s->deep;
	pthread_mutex_unlock(&s->lock);
	return deep;
}

/* ---- the run ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The share of the files a --percent run checks: the least recently
 * verified (never verified first), as many as percent of total (s->lock
 * held). */
static void choose_share(scrub *s, uint64_t total)
{
	uint64_t known = g_hash_table_size(s->verified);
	uint64_t n = MAX(total, known);
	uint64_t *at = g_new0(uint64_t, n ? n : 1);
	GHashTableIter it;
	gpointer val;
	uint64_t i = n - known; /* the files never verified: time 0 */

	g_hash_table_iter_init(&it, s->verified);
	while (g_hash_table_iter_next(&it, NULL, &val))
		at[i++] = ((struct verified *)val)->at;
	qsort(at, n, sizeof(*at), cmp_u64);
	s->target = MAX((total * s->percent + 99) / 100, 1);
	s->threshold = n ? at[MIN(s->target, n) - 1] : 0;
	g_free(at);
}

void scrub_pass_begin(scrub *s, const fsck *f)
{
	pthread_mutex_lock(&s->lock);
	if (s->percent && !s->target)
		choose_share(s, f->total_files);
	s->files_total = s->percent ? s->target : f->total_files;
	s->bytes_total = s->percent ? f->total_bytes * s->percent / 100 : f->total_bytes;
	s->bytes_total = MAX(s->bytes_total, s->bytes);
	s->base_files = s->files;
	s->base_bytes = s->bytes;
	s->base_found = s->found;
	s->base_repaired = s->repaired;
	s->base_unrepaired = s->unrepaired;
	s->pass_us = g_get_monotonic_time();
	s->in_pass = true;
	pthread_mutex_unlock(&s->lock);
}

bool scrub_skip(scrub *s, const uint8_t *id)
{
	if (!id)
		return false;
	char *key = hex_id(id);
	pthread_mutex_lock(&s->lock);
	struct verified *w = g_hash_table_lookup(s->verified, key);
	uint64_t at = w ? w->at : 0;
	bool skip = at >= s->run ||
	            (s->older_days && at + s->older_days * DAY_US > s->run) ||
	            (s->percent && (at > s->threshold || s->files >= s->target));
	pthread_mutex_unlock(&s->lock);
	g_free(key);
	return skip;
}

/* The run's counters from the pass's (s->lock held). */
static void take_counts(scrub *s, const fsck *f)
{
	s->bytes = s->base_bytes + f->bytes;
	s->repaired = s->base_repaired + f->repaired;
	s->unrepaired = s->base_unrepaired + f->unrepairable + f->failed;
	s->found = s->base_found + f->repaired + f->unrepairable + f->failed;
}

void scrub_file_done(scrub *s, const fsck *f, const uint8_t *id, const char *path)
{
	pthread_mutex_lock(&s->lock);
	s->files++;
	take_counts(s, f);
	if (id) {
		struct verified *w = g_new0(struct verified, 1);
		w->at = (uint64_t)g_get_real_time();
		w->path = g_strdup(path);
		g_hash_table_replace(s->verified, hex_id(id), w);
	}
	bool due = g_get_monotonic_time() - s->saved_us >= SAVE_EVERY_US;
	pthread_mutex_unlock(&s->lock);
	if (due)
		save(s);
}

/* Forgets the files a whole run did not meet: gone (s->lock held). */
static gboolean not_met(gpointer key, gpointer val, gpointer arg)
{
	(void)key;
	return ((struct verified *)val)->at < ((scrub *)arg)->run;
}

static const char *result_name(uint64_t found, uint64_t unrepaired)
{
	return unrepaired ? "damaged" : found ? "repaired" : "clean";
}

/* The run is over: its result becomes the last one (s->lock held). */
static void end_run(scrub *s)
{
	if (!s->percent && !s->older_days)
		g_hash_table_foreach_remove(s->verified, not_met, s);
	s->state = SCRUB_IDLE;
	s->last_end = (uint64_t)g_get_real_time();
	s->last_files = s->files;
	s->last_found = s->found;
	s->last_repaired = s->repaired;
	s->last_unrepaired = s->unrepaired;
}

void scrub_pass_end(scrub *s, const fsck *f, int rc)
{
	char *detail = NULL;

	pthread_mutex_lock(&s->lock);
	take_counts(s, f);
	s->in_pass = false;
	/* -ECANCELED: stopped (a pause, a member to rebuild, an unmount), a
	 * later pass goes on; another error ends the run, as one problem left
	 * (else every pass would meet it again) */
	if (rc != -ECANCELED && s->state == SCRUB_RUNNING) {
		if (rc < 0) {
			ecfs_log(LOG_WARNING, "scrub: the run ends early: %s", g_strerror(-rc));
			s->found++;
			s->unrepaired++;
		}
		end_run(s);
		detail = g_strdup_printf("%s: %llu files, %llu bytes checked, %llu errors found, "
		                         "%llu repaired, %llu not repaired",
		                         result_name(s->found, s->unrepaired),
		                         (unsigned long long)s->files, (unsigned long long)s->bytes,
		                         (unsigned long long)s->found, (unsigned long long)s->repaired,
		                         (unsigned long long)s->unrepaired);
	}
	pthread_mutex_unlock(&s->lock);
	save(s);
	if (detail) {
		ecfs_log(s->last_unrepaired ? LOG_WARNING : LOG_INFO, "scrub: done, %s", detail);
		volume_post_event(s->v, VOLUME_EVENT_SCRUB_DONE, -1, NULL, detail);
		g_free(detail);
	}
}

/* ---- the health report ---- */

static void run_lines(scrub *s, GString *t)
{
	g_string_append_printf(t, "scrub.deep=%d\nscrub.files=%llu\nscrub.files_total=%llu\n"
	                       "scrub.bytes=%llu\nscrub.bytes_total=%llu\nscrub.errors=%llu\n"
	                       "scrub.repaired=%llu\n", s->deep, (unsigned long long)s->files,
	                       (unsigned long long)MAX(s->files_total, s->files),
	                       (unsigned long long)s->bytes,
	                       (unsigned long long)MAX(s->bytes_total, s->bytes),
	                       (unsigned long long)s->found, (unsigned long long)s->repaired);
	if (!s->in_pass || s->state != SCRUB_RUNNING)
		return;
	double secs = (double)(g_get_monotonic_time() - s->pass_us) / 1e6;
	double rate = secs > 0 ? (double)(s->bytes - s->base_bytes) / secs : 0;
	g_string_append_printf(t, "scrub.rate_bytes=%.0f\n", rate);
	if (rate > 0 && s->bytes_total > s->bytes)
		g_string_append_printf(t, "scrub.eta_s=%.0f\n",
		                       (double)(s->bytes_total - s->bytes) / rate);
}

char *scrub_health_lines(scrub *s)
{
	GString *t = g_string_new(NULL);

	pthread_mutex_lock(&s->lock);
	g_string_append_printf(t, "scrub=%s\n", state_names[s->state]);
	if (s->state != SCRUB_IDLE)
		run_lines(s, t);
	if (s->last_end)
		g_string_append_printf(t, "scrub.last=%llu\nscrub.last_result=%s\n"
		                       "scrub.last_files=%llu\nscrub.last_errors=%llu\n"
		                       "scrub.last_repaired=%llu\n",
		                       (unsigned long long)(s->last_end / 1000000),
		                       result_name(s->last_found, s->last_unrepaired),
		                       (unsigned long long)s->last_files,
		                       (unsigned long long)s->last_found,
		                       (unsigned long long)s->last_repaired);
	pthread_mutex_unlock(&s->lock);
	return g_string_free(t, FALSE);
}
