/* SPDX-License-Identifier: MIT */
/*
 * -o metrics=FILE: the health report turned into Prometheus text, and
 * the thread that writes it (metrics.h).
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "health_report.h"
#include "log.h"

/* A figure of the report as a metric: scale 0 takes it as it is. */
struct metric {
	const char *key, *name, *type, *help;
	double scale;
};

static const struct metric volume_metrics[] = {
	{ "n", "ecfs_members", "gauge", "members of the volume (k+m)", 0 },
	{ "members_failed", "ecfs_members_failed", "gauge", "members out of service", 0 },
	{ "strips_decoded", "ecfs_strips_decoded_total", "counter",
	  "stripes read by decoding around a member since mount", 0 },
	{ "reads_hedged", "ecfs_reads_hedged_total", "counter",
	  "reads that asked a spare member because the first answers were late", 0 },
	{ "checksum_failures", "ecfs_checksum_errors_total", "counter",
	  "bad strips read from any member since mount", 0 },
	{ "strips_healed", "ecfs_strips_healed_total", "counter",
	  "strips rewritten by self-healing reads since mount", 0 },
	{ "damaged_files", "ecfs_damaged_files", "gauge",
	  "files a bad strip was read from since mount (the first 32, 4 KiB of paths at most)", 0 },
	{ "lost_files", "ecfs_lost_files", "gauge",
	  "files with a stripe that could not be read since mount (the first 32, 4 KiB of paths at most)", 0 },
	{ "heals_completed", "ecfs_heals_completed_total", "counter",
	  "members rebuilt by the online heal since mount", 0 },
	{ "heal.bytes", "ecfs_heal_bytes_done", "gauge",
	  "bytes the running heal has rebuilt", 0 },
	{ "heal.bytes_total", "ecfs_heal_bytes_planned", "gauge",
	  "bytes the running heal rebuilds in all", 0 },
	{ "heal.eta_s", "ecfs_heal_eta_seconds", "gauge",
	  "seconds the running heal still needs at its rate so far", 0 },
	{ "scrub.files", "ecfs_scrub_files_done", "gauge",
	  "files the scrub run in progress (running or paused) has checked", 0 },
	{ "scrub.files_total", "ecfs_scrub_files_planned", "gauge",
	  "files the scrub run in progress checks in all", 0 },
	{ "scrub.bytes", "ecfs_scrub_bytes_done", "gauge",
	  "bytes the scrub run in progress has checked", 0 },
	{ "scrub.bytes_total", "ecfs_scrub_bytes_planned", "gauge",
	  "bytes the scrub run in progress checks in all", 0 },
	{ "scrub.errors", "ecfs_scrub_errors", "gauge",
	  "problems the scrub run in progress has found", 0 },
	{ "scrub.eta_s", "ecfs_scrub_eta_seconds", "gauge",
	  "seconds the running scrub still needs at its rate so far", 0 },
	{ "scrub.last", "ecfs_scrub_last_end_timestamp_seconds", "gauge",
	  "when the last scrub run ended (unix time)", 0 },
	{ "scrub.last_errors", "ecfs_scrub_last_errors", "gauge",
	  "problems the last scrub run found", 0 },
	{ "scrub.last_repaired", "ecfs_scrub_last_repaired", "gauge",
	  "problems the last scrub run repaired", 0 },
};

static const struct metric member_metrics[] = {
	{ "member.%d.read_errors", "ecfs_member_read_errors_total", "counter",
	  "errors of the member's chunk reads since mount", 0 },
	{ "member.%d.write_errors", "ecfs_member_write_errors_total", "counter",
	  "errors of the member's chunk writes since mount", 0 },
	{ "member.%d.checksum_errors", "ecfs_member_checksum_errors_total", "counter",
	  "bad strips read from the member since mount", 0 },
	{ "member.%d.latency_us", "ecfs_member_latency_seconds", "gauge",
	  "moving average of the member's recent call latency", 1e-6 },
};

/* Appends s as a label value: backslash, quote and newline escaped. */
static void append_label(GString *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			g_string_append_c(out, '\\');
		if (*s == '\n')
			g_string_append(out, "\\n");
		else
			g_string_append_c(out, *s);
	}
}

static void header(GString *out, const char *name, const char *type, const char *help)
{
	g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void value(GString *out, double v)
{
	g_string_append_printf(out, "} %.17g\n", v);
}

/* The labels' start: name{mountpoint="..." */
static void sample(GString *out, const char *name, const char *mnt)
{
	g_string_append_printf(out, "%s{mountpoint=\"", name);
	append_label(out, mnt);
	g_string_append_c(out, '"');
}

static void member_label(GString *out, GHashTable *r, int i)
{
	char *path = health_report_path(r, "member.%d.path", i);
	g_string_append_printf(out, ",member=\"%d\",dir=\"", i);
	append_label(out, path ? path : "");
	g_string_append_c(out, '"');
	g_free(path);
}

static void members_text(GString *out, GHashTable *r, const char *mnt, int n)
{
	header(out, "ecfs_member_state", "gauge", "0 up, 1 healing (being rebuilt), 2 failed");
	for (int i = 0; i < n; i++) {
		sample(out, "ecfs_member_state", mnt);
		member_label(out, r, i);
		value(out, health_report_member_code(r, i));
	}
	for (size_t m = 0; m < G_N_ELEMENTS(member_metrics); m++) {
		const struct metric *mt = &member_metrics[m];
		header(out, mt->name, mt->type, mt->help);
		for (int i = 0; i < n; i++) {
			uint64_t x;
			if (!health_report_u64(r, &x, mt->key, i))
				continue;
			sample(out, mt->name, mnt);
			member_label(out, r, i);
			value(out, mt->scale ? (double)x * mt->scale : (double)x);
		}
	}
}

char *metrics_text(const char *health, const char *mnt)
{
	GHashTable *r = health_report_parse(health);
	GString *out = g_string_new(NULL);
	const char *heal = health_report_get(r, "heal");
	const char *scrub = health_report_get(r, "scrub");
	uint64_t n = 0;

	header(out, "ecfs_volume_state", "gauge", "0 healthy, 1 degraded, 2 failed");
	sample(out, "ecfs_volume_state", mnt);
	value(out, health_report_state_code(r));
	header(out, "ecfs_heal_active", "gauge", "1 while the online heal rebuilds or verifies a member");
	sample(out, "ecfs_heal_active", mnt);
	value(out, heal && strcmp(heal, "idle") != 0);
	header(out, "ecfs_scrub_state", "gauge", "0 idle, 1 running, 2 paused");
	sample(out, "ecfs_scrub_state", mnt);
	value(out, !scrub || !strcmp(scrub, "idle") ? 0 : !strcmp(scrub, "running") ? 1 : 2);
	for (size_t m = 0; m < G_N_ELEMENTS(volume_metrics); m++) {
		const struct metric *mt = &volume_metrics[m];
		uint64_t x;
		if (!health_report_u64(r, &x, "%s", mt->key))
			continue;
		header(out, mt->name, mt->type, mt->help);
		sample(out, mt->name, mnt);
		value(out, (double)x);
	}
	health_report_u64(r, &n, "n");
	members_text(out, r, mnt, (int)MIN(n, 64));
	g_hash_table_destroy(r);
	return g_string_free(out, FALSE);
}

struct metrics {
	char *file, *tmp, *mountpoint;
	volume *v;
	pthread_t thread;
	pthread_mutex_t lock; /* a leaf: poked under any other lock */
	pthread_cond_t wake;
	bool poked, stop;
	bool joined;          /* metrics_stop joined the thread */
	bool warned;          /* a failed write was logged */
};

/* Writes the file through file.tmp; a failure is logged once. */
static void write_file(metrics *m)
{
	char *health = volume_health_text(m->v);
	char *text = metrics_text(health, m->mountpoint);
	g_free(health);
	/* not g_file_set_contents: the file keeps the mode the collector reads */
	int fd = open(m->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	size_t len = strlen(text);
	bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
	int e = errno;
	if (fd >= 0 && close(fd) < 0 && ok) {
		ok = false;
		e = errno;
	}
	if (ok && rename(m->tmp, m->file) < 0) {
		ok = false;
		e = errno;
	}
	if (!ok && !m->warned)
		ecfs_log(LOG_WARNING, "metrics: cannot write %s: %s", m->file, g_strerror(e));
	m->warned = !ok;
	g_free(text);
}

static void *metrics_thread(void *arg)
{
	metrics *m = arg;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		m->poked = false;
		pthread_mutex_unlock(&m->lock);
		write_file(m);
		pthread_mutex_lock(&m->lock);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += METRICS_PERIOD_S;
		while (!m->stop && !m->poked)
			if (pthread_cond_timedwait(&m->wake, &m->lock, &ts) == ETIMEDOUT)
				break;
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

metrics *metrics_start(const char *file, volume *v, const char *mountpoint)
{
	metrics *m = g_new0(metrics, 1);
	pthread_condattr_t ca;

	m->file = g_strdup(file);
	m->tmp = g_strconcat(file, ".tmp", NULL);
	m->mountpoint = g_strdup(mountpoint);
	m->v = v;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&m->thread, NULL, metrics_thread, m);
	if (rc != 0) {
		ecfs_log(LOG_ERR, "metrics: cannot start the thread: %s", g_strerror(rc));
		m->joined = true; /* no thread to stop, no file written */
		metrics_free(m);
		return NULL;
	}
	return m;
}

void metrics_poke(metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->poked = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
}

void metrics_stop(metrics *m)
{
	if (!m || m->joined)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	m->joined = true;
	unlink(m->file);
	unlink(m->tmp);
}

void metrics_free(metrics *m)
{
	if (!m)
		return;
	metrics_stop(m);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	g_free(m->file);
	g_free(m->tmp);
	g_free(m->mountpoint);
	g_free(m);
}
