/* SPDX-License-Identifier: MIT */
/*
 * `ecfs status`: finding the ecfs mounts, reading their health reports
 * and showing them as text or JSON (status.h); and `ecfs scrub`, which
 * controls the online scrub through the root's user.ecfs.scrub and shows
 * its lines of the same report.
 */
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>

#include <glib.h>

#include "health_report.h"

#define HEALTH_XATTR "user.ecfs.health"
#define SCRUB_XATTR "user.ecfs.scrub"

/* The mount points of the ecfs mounts, from /proc/self/mountinfo. */
static GPtrArray *ecfs_mounts(void)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	char *text = NULL;

	if (!g_file_get_contents("/proc/self/mountinfo", &text, NULL, NULL))
		return out;
	gchar **lines = g_strsplit(text, "\n", -1);
	for (gchar **l = lines; *l; l++) {
		/* id parent maj:min root mountpoint options... - fstype source ... */
		gchar **f = g_strsplit(*l, " ", -1);
		const char *sep = strstr(*l, " - ");
		if (g_strv_length(f) > 5 && sep && g_str_has_prefix(sep + 3, "fuse.ecfs "))
			g_ptr_array_add(out, g_strcompress(f[4])); /* \040 and the like */
		g_strfreev(f);
	}
	g_strfreev(lines);
	g_free(text);
	return out;
}

/* The report of the volume mounted at mnt, g_malloc'd; NULL with errno. */
static char *read_report(const char *mnt)
{
	for (int tries = 0; tries < 4; tries++) {
		ssize_t len = getxattr(mnt, HEALTH_XATTR, NULL, 0);
		if (len < 0)
			return NULL;
		char *buf = g_malloc((size_t)len + 1);
		ssize_t got = getxattr(mnt, HEALTH_XATTR, buf, (size_t)len);
		if (got >= 0) {
			buf[got] = '\0';
			return buf;
		}
		g_free(buf);
		if (errno != ERANGE) /* ERANGE: it grew meanwhile */
			return NULL;
	}
	return NULL;
}

static void json_string(GString *out, const char *s)
{
	char *valid = s ? g_utf8_make_valid(s, -1) : NULL;

	if (!valid) {
		g_string_append(out, "null");
		return;
	}
	g_string_append_c(out, '"');
	for (const char *p = valid; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\')
			g_string_append_printf(out, "\\%c", c);
		else if (c < 0x20)
			g_string_append_printf(out, "\\u%04x", c);
		else
			g_string_append_c(out, (char)c);
	}
	g_string_append_c(out, '"');
	g_free(valid);
}

static const char *const state_names[] = { "healthy", "degraded", "failed" };

/* Why member i failed: the text after its path in member.<i>. */
static const char *member_why(GHashTable *r, int i, const char *path)
{
	const char *line = health_report_get(r, "member.%d", i);

	if (!line || !g_str_has_prefix(line, "failed "))
		return NULL;
	line += strlen("failed ");
	if (path && g_str_has_prefix(line, path) && g_str_has_prefix(line + strlen(path), ": "))
		return line + strlen(path) + 2;
	return line;
}

/* The list of damaged.<i> or lost.<i> paths as JSON. */
static void json_files(GString *out, GHashTable *r, const char *what)
{
	uint64_t n, more;

	health_report_u64(r, &n, "%s_files", what);
	health_report_u64(r, &more, "%s_unlisted", what);
	g_string_append_printf(out, ", \"%s_files\": %llu, \"%s\": [", what, (unsigned long long)n,
	                       what);
	for (uint64_t i = 0, shown = 0; i < n; i++) {
		char *p = health_report_path(r, "%s.%llu", what, (unsigned long long)i);
		if (p) /* absent: not shown to this user (docs/SECURITY.md) */
			g_string_append(out, shown++ ? ", " : "");
		if (p)
			json_string(out, p);
		g_free(p);
	}
	g_string_append_printf(out, "], \"%s_unlisted\": %llu", what, (unsigned long long)more);
}

static void json_heal(GString *out, GHashTable *r)
{
	const char *heal = health_report_get(r, "heal");
	static const char *const keys[] = { "bytes", "bytes_total", "files", "files_total",
	                                    "rate_bytes", "eta_s" };

	g_string_append(out, ", \"heal\": {\"state\": ");
	json_string(out, !heal ? "off" : !strcmp(heal, "idle") ? "idle" : "running");
	g_string_append(out, ", \"text\": ");
	json_string(out, heal);
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		uint64_t x;
		if (health_report_u64(r, &x, "heal.%s", keys[i]))
			g_string_append_printf(out, ", \"%s\": %llu", keys[i], (unsigned long long)x);
	}
	g_string_append(out, "}");
}

/* The scrub's figures: "scrub": {"state": ..., "last": unix time or null,
 * "result": ...}. */
static void json_scrub(GString *out, GHashTable *r)
{
	static const char *const keys[] = { "deep", "files", "files_total", "bytes",
	                                    "bytes_total", "errors", "repaired", "rate_bytes",
	                                    "eta_s", "last_files", "last_errors", "last_repaired" };
	uint64_t last;

	g_string_append(out, ", \"scrub\": {\"state\": ");
	json_string(out, health_report_get(r, "scrub") ? health_report_get(r, "scrub") : "off");
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		uint64_t x;
		if (health_report_u64(r, &x, "scrub.%s", keys[i]))
			g_string_append_printf(out, ", \"%s\": %llu", keys[i], (unsigned long long)x);
	}
	if (health_report_u64(r, &last, "scrub.last"))
		g_string_append_printf(out, ", \"last\": %llu", (unsigned long long)last);
	else
		g_string_append(out, ", \"last\": null");
	g_string_append(out, ", \"result\": ");
	json_string(out, health_report_get(r, "scrub.last_result"));
	g_string_append_c(out, '}');
}

static void json_volume(GString *out, const char *mnt, GHashTable *r)
{
	uint64_t k, m, n;

	health_report_u64(r, &k, "k");
	health_report_u64(r, &m, "m");
	health_report_u64(r, &n, "n");
	g_string_append(out, "{\"mountpoint\": ");
	json_string(out, mnt);
	g_string_append_printf(out, ", \"state\": \"%s\", \"k\": %llu, \"m\": %llu, \"n\": %llu, "
	                       "\"members\": [", state_names[health_report_state_code(r)],
	                       (unsigned long long)k, (unsigned long long)m, (unsigned long long)n);
	for (int i = 0; i < (int)MIN(n, 64); i++) {
		char *path = health_report_path(r, "member.%d.path", i);
		uint64_t re, we, ce, lat;
		health_report_u64(r, &re, "member.%d.read_errors", i);
		health_report_u64(r, &we, "member.%d.write_errors", i);
		health_report_u64(r, &ce, "member.%d.checksum_errors", i);
		health_report_u64(r, &lat, "member.%d.latency_us", i);
		g_string_append_printf(out, "%s{\"index\": %d, \"state\": ", i ? ", " : "", i);
		json_string(out, health_report_get(r, "member.%d.state", i));
		g_string_append(out, ", \"path\": ");
		json_string(out, path);
		g_string_append(out, ", \"why\": ");
		json_string(out, member_why(r, i, path));
		g_string_append_printf(out, ", \"read_errors\": %llu, \"write_errors\": %llu, "
		                       "\"checksum_errors\": %llu, \"latency_us\": %llu}",
		                       (unsigned long long)re, (unsigned long long)we,
		                       (unsigned long long)ce, (unsigned long long)lat);
		g_free(path);
	}
	g_string_append(out, "]");
	json_heal(out, r);
	json_files(out, r, "damaged");
	json_files(out, r, "lost");
	json_scrub(out, r);
	g_string_append_c(out, '}');
}

static void text_files(GString *out, GHashTable *r, const char *what, const char *title)
{
	uint64_t n, more;

	health_report_u64(r, &n, "%s_files", what);
	health_report_u64(r, &more, "%s_unlisted", what);
	g_string_append_printf(out, "%s: ", title);
	if (!n)
		g_string_append(out, "none\n");
	else
		g_string_append_printf(out, "%llu\n", (unsigned long long)n);
	for (uint64_t i = 0, hidden = 0; i < n; i++) {
		char *p = health_report_path(r, "%s.%llu", what, (unsigned long long)i);
		if (p)
			g_string_append_printf(out, "  %s\n", p);
		else if (!hidden++) /* not shown to this user (docs/SECURITY.md) */
			g_string_append(out, "  (their paths are shown to root and the user who "
			                "mounted only)\n");
		g_free(p);
	}
	if (more)
		g_string_append_printf(out, "  (%llu more reports of files not listed)\n",
		                       (unsigned long long)more);
}

static void text_heal(GString *out, GHashTable *r)
{
	const char *heal = health_report_get(r, "heal");
	uint64_t done, total, eta;

	if (!heal) {
		g_string_append(out, "heal: off (mounted read-only or with noheal)\n");
		return;
	}
	if (!health_report_u64(r, &total, "heal.bytes_total") || !total) {
		g_string_append_printf(out, "heal: %s\n", heal);
		return;
	}
	health_report_u64(r, &done, "heal.bytes");
	char *d = g_format_size(done), *t = g_format_size(total);
	/* "member 2 rebuilding files=..." : the words before the figures */
	const char *figures = strstr(heal, " files=");
	g_string_append_printf(out, "heal: %.*s, %.0f%% (%s of %s)", figures ? (int)(figures - heal)
	                       : (int)strlen(heal), heal, 100.0 * (double)done / (double)total, d, t);
	if (health_report_u64(r, &eta, "heal.eta_s"))
		g_string_append_printf(out, ", about %llu:%02llu left", (unsigned long long)eta / 60,
		                       (unsigned long long)eta % 60);
	g_string_append_c(out, '\n');
	g_free(d);
	g_free(t);
}

/* "scrub: ..." (a run) and "last scrub: ..." */
static void text_scrub(GString *out, GHashTable *r)
{
	const char *state = health_report_get(r, "scrub");
	uint64_t x[6] = { 0 }, last, eta, rate;

	health_report_u64(r, &x[0], "scrub.files");
	health_report_u64(r, &x[1], "scrub.files_total");
	health_report_u64(r, &x[2], "scrub.bytes");
	health_report_u64(r, &x[3], "scrub.bytes_total");
	health_report_u64(r, &x[4], "scrub.errors");
	health_report_u64(r, &x[5], "scrub.repaired");
	g_string_append_printf(out, "scrub: %s", state ? state : "off (mounted read-only or with "
	                       "noheal)");
	if (state && strcmp(state, "idle") != 0) {
		char *d = g_format_size(x[2]), *t = g_format_size(x[3]);
		g_string_append_printf(out, "%s, %.0f%% (%llu of %llu files, %s of %s)",
		                       health_report_u64(r, &last, "scrub.deep") && last ? " deep" : "",
		                       x[3] ? 100.0 * (double)x[2] / (double)x[3] : 0.0,
		                       (unsigned long long)x[0], (unsigned long long)x[1], d, t);
		if (health_report_u64(r, &rate, "scrub.rate_bytes"))
			g_string_append_printf(out, ", %.1f MB/s", (double)rate / 1e6);
		if (health_report_u64(r, &eta, "scrub.eta_s"))
			g_string_append_printf(out, ", about %llu:%02llu left",
			                       (unsigned long long)eta / 60, (unsigned long long)eta % 60);
		g_string_append_printf(out, ", %llu errors found, %llu repaired",
		                       (unsigned long long)x[4], (unsigned long long)x[5]);
		g_free(d);
		g_free(t);
	}
	g_string_append_c(out, '\n');
	if (!health_report_u64(r, &last, "scrub.last")) {
		g_string_append(out, "last scrub: never run\n");
		return;
	}
	char when[64];
	time_t tt = (time_t)last;
	struct tm tm;
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %Z", localtime_r(&tt, &tm));
	health_report_u64(r, &x[0], "scrub.last_files");
	health_report_u64(r, &x[4], "scrub.last_errors");
	health_report_u64(r, &x[5], "scrub.last_repaired");
	const char *result = health_report_get(r, "scrub.last_result");
	g_string_append_printf(out, "last scrub: %s, %s (%llu files checked, %llu errors found, "
	                       "%llu repaired)\n", when, result ? result : "?",
	                       (unsigned long long)x[0], (unsigned long long)x[4],
	                       (unsigned long long)x[5]);
}

static void text_volume(GString *out, const char *mnt, GHashTable *r)
{
	uint64_t k, m, n, failed;

	health_report_u64(r, &k, "k");
	health_report_u64(r, &m, "m");
	health_report_u64(r, &n, "n");
	health_report_u64(r, &failed, "members_failed");
	g_string_append_printf(out, "%s: %s, k=%llu m=%llu, %llu of %llu members failed\n", mnt,
	                       state_names[health_report_state_code(r)], (unsigned long long)k,
	                       (unsigned long long)m, (unsigned long long)failed,
	                       (unsigned long long)n);
	g_string_append(out, "  MEMBER STATE       READ  WRITE  CKSUM    LATENCY  DIRECTORY\n");
	for (int i = 0; i < (int)MIN(n, 64); i++) {
		char *path = health_report_path(r, "member.%d.path", i);
		const char *state = health_report_get(r, "member.%d.state", i);
		const char *why = member_why(r, i, path);
		uint64_t re, we, ce, lat;
		health_report_u64(r, &re, "member.%d.read_errors", i);
		health_report_u64(r, &we, "member.%d.write_errors", i);
		health_report_u64(r, &ce, "member.%d.checksum_errors", i);
		health_report_u64(r, &lat, "member.%d.latency_us", i);
		g_string_append_printf(out, "  %-6d %-8s %7llu %6llu %6llu %7.1f ms  %s%s%s%s\n", i,
		                       state ? state : "?", (unsigned long long)re,
		                       (unsigned long long)we, (unsigned long long)ce,
		                       (double)lat / 1000.0, path ? path : "?", why ? " (" : "",
		                       why ? why : "", why ? ")" : "");
		g_free(path);
	}
	text_heal(out, r);
	text_files(out, r, "damaged", "files with bad strips read since mount");
	text_files(out, r, "lost", "files with parts unreadable since mount");
	text_scrub(out, r);
}

/* Shows the volume at mnt (a mount point of an ecfs mount) into out:
 * its state's exit status, or STATUS_UNREADABLE after saying why. */
static int show(GString *out, const char *mnt, bool json)
{
	char *text = read_report(mnt);

	if (!text) {
		int e = errno;
		fprintf(stderr, "ecfs status: %s: cannot read the health report: %s%s\n", mnt,
		        g_strerror(e), e == EACCES ? " (a mount without -o allow_other shows "
		        "it only to the user who mounted it)" : "");
		return STATUS_UNREADABLE;
	}
	GHashTable *r = health_report_parse(text);
	int rc = health_report_state_code(r);
	if (json)
		json_volume(out, mnt, r);
	else
		text_volume(out, mnt, r);
	g_hash_table_destroy(r);
	g_free(text);
	return rc;
}

static void status_usage(FILE *f)
{
	fprintf(f, "usage: ecfs status [--json] [MOUNTPOINT]\n\n"
	        "Shows the state of a mounted ecfs volume (without MOUNTPOINT: of every one\n"
	        "mounted): each member's state, error counts and latency, the online heal's\n"
	        "progress, the files met damaged or lost since mount, the last scrub.\n\n"
	        "    --json     one JSON object (without MOUNTPOINT: an array of them)\n"
	        "    -h, --help this help\n\n"
	        "Exit status: 0 healthy, 1 degraded, 2 failed (the worst volume shown),\n"
	        "3 not an ecfs mount (or none mounted), 4 the report cannot be read,\n"
	        "5 a bad command line.\n");
}

/* The mount point of the ecfs mount named by arg, g_malloc'd, or NULL. */
static char *find_mount(GPtrArray *mounts, const char *arg)
{
	char *abs = g_canonicalize_filename(arg, NULL);
	char *real = realpath(arg, NULL);

	for (guint i = 0; i < mounts->len; i++)
		if (!strcmp(mounts->pdata[i], abs) || (real && !strcmp(mounts->pdata[i], real))) {
			g_free(abs);
			free(real);
			return g_strdup(mounts->pdata[i]);
		}
	g_free(abs);
	free(real);
	return NULL;
}

int status_main(int argc, char **argv)
{
	bool json = false;
	const char *arg = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			status_usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' || arg) {
			status_usage(stderr);
			return STATUS_USAGE;
		} else {
			arg = argv[i];
		}
	}
	GPtrArray *mounts = ecfs_mounts(), *shown = g_ptr_array_new_with_free_func(g_free);
	if (arg) {
		char *mnt = find_mount(mounts, arg);
		if (mnt)
			g_ptr_array_add(shown, mnt);
		else
			fprintf(stderr, "ecfs status: %s is not the mount point of an ecfs volume\n",
			        arg);
	} else if (!mounts->len) {
		fprintf(stderr, "ecfs status: no ecfs volume is mounted\n");
	}
	int rc = shown->len || (!arg && mounts->len) ? STATUS_HEALTHY : STATUS_NOT_ECFS;
	GPtrArray *list = arg ? shown : mounts;
	GString *out = g_string_new(!arg && json ? "[" : ""), *one = g_string_new(NULL);
	bool any = false;
	for (guint i = 0; i < list->len; i++) {
		g_string_truncate(one, 0);
		int one_rc = show(one, list->pdata[i], json);
		rc = MAX(rc, one_rc);
		if (one->len)
			g_string_append_printf(out, "%s%s", !any ? "" : json ? ", " : "\n", one->str);
		any = any || one->len;
	}
	g_string_free(one, TRUE);
	g_string_append(out, !arg && json ? "]\n" : json && any ? "\n" : "");
	fputs(out->str, stdout);
	g_string_free(out, TRUE);
	g_ptr_array_free(shown, TRUE);
	g_ptr_array_free(mounts, TRUE);
	return rc;
}

/* ---- ecfs scrub ---- */

static void scrub_usage(FILE *f)
{
	fprintf(f, "usage: ecfs scrub start [--deep] [--percent=P] [--older-than=DAYS] MOUNTPOINT\n"
	        "       ecfs scrub pause|resume MOUNTPOINT\n"
	        "       ecfs scrub status [--json] MOUNTPOINT\n\n"
	        "Controls the online scrub of a mounted ecfs volume (as root): it reads every\n"
	        "strip of every file, checks its checksum and rewrites bad strips from the\n"
	        "others, while the volume stays in use, at -o scrub_rate.  A run goes on\n"
	        "after a remount, paused if it was.\n\n"
	        "    --deep            also recompute the parity and compare it\n"
	        "    --percent=P       only P%% of the files, the least recently verified\n"
	        "    --older-than=DAYS only files not verified for DAYS days\n"
	        "    --json            status: the scrub's part of ecfs status --json\n"
	        "    -h, --help        this help\n\n"
	        "Exit status: 0 done, 1 refused (why is said), 3 not an ecfs mount, 4 the\n"
	        "report cannot be read, 5 a bad command line.\n");
}

/* A whole number from 1 (0 if zero) to most after prefix in o, or -1. */
static long number_after(const char *o, const char *prefix, bool zero, long most)
{
	char *end;
	long x = strtol(o + strlen(prefix), &end, 10);

	return *end || end == o + strlen(prefix) || x < (zero ? 0 : 1) || x > most ? -1 : x;
}

/* The command for user.ecfs.scrub from the options, or NULL if bad. */
static char *scrub_command(const char *verb, char **opts, int n, bool *json)
{
	GString *cmd = g_string_new(verb);
	bool start = !strcmp(verb, "start"), ok = true;

	for (int i = 0; ok && i < n; i++) {
		const char *o = opts[i];
		long x = -1;
		if (start && !strcmp(o, "--deep"))
			g_string_append(cmd, " deep");
		else if (start && g_str_has_prefix(o, "--percent=") &&
		         (x = number_after(o, "--percent=", false, 100)) >= 0)
			g_string_append_printf(cmd, " percent=%ld", x);
		else if (start && g_str_has_prefix(o, "--older-than=") &&
		         (x = number_after(o, "--older-than=", true, 100000)) >= 0)
			g_string_append_printf(cmd, " older=%ld", x);
		else if (!strcmp(verb, "status") && !strcmp(o, "--json"))
			*json = true;
		else
			ok = false;
	}
	return g_string_free(cmd, !ok);
}

static int scrub_show(const char *mnt, bool json)
{
	char *text = read_report(mnt);

	if (!text) {
		fprintf(stderr, "ecfs scrub: %s: cannot read the health report: %s\n", mnt,
		        g_strerror(errno));
		return STATUS_UNREADABLE;
	}
	GHashTable *r = health_report_parse(text);
	GString *out = g_string_new(NULL);
	if (json) {
		json_scrub(out, r);
		/* ", \"scrub\": {...}": the object alone */
		g_string_erase(out, 0, strlen(", \"scrub\": "));
		g_string_append_c(out, '\n');
	} else {
		text_scrub(out, r);
	}
	fputs(out->str, stdout);
	g_string_free(out, TRUE);
	g_hash_table_destroy(r);
	g_free(text);
	return 0;
}

static int scrub_send(const char *mnt, const char *cmd, const char *verb)
{
	if (setxattr(mnt, SCRUB_XATTR, cmd, strlen(cmd), 0) == 0)
		return 0;
	int e = errno;
	const char *why = e == EPERM || e == EACCES ? "only root may control the scrub"
	                  : e == EBUSY ? "a scrub is running or paused already (ecfs scrub status)"
	                  : e == EALREADY ? (!strcmp(verb, "pause") ? "no scrub is running"
	                                                            : "no scrub is paused")
	                  : e == ENOTSUP ? "this mount has no scrub (read-only, or -o noheal)"
	                                 : g_strerror(e);
	fprintf(stderr, "ecfs scrub %s: %s: %s\n", verb, mnt, why);
	return 1;
}

int scrub_main(int argc, char **argv)
{
	bool json = false;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			scrub_usage(stdout);
			return 0;
		}
	const char *verb = argc >= 3 ? argv[1] : "";
	if (strcmp(verb, "start") && strcmp(verb, "pause") && strcmp(verb, "resume") &&
	    strcmp(verb, "status")) {
		scrub_usage(stderr);
		return STATUS_USAGE;
	}
	char *cmd = scrub_command(verb, argv + 2, argc - 3, &json);
	if (!cmd) {
		scrub_usage(stderr);
		return STATUS_USAGE;
	}
	GPtrArray *mounts = ecfs_mounts();
	char *mnt = find_mount(mounts, argv[argc - 1]);
	int rc = STATUS_NOT_ECFS;
	if (!mnt)
		fprintf(stderr, "ecfs scrub: %s is not the mount point of an ecfs volume\n",
		        argv[argc - 1]);
	else if (!strcmp(verb, "status"))
		rc = scrub_show(mnt, json);
	else
		rc = scrub_send(mnt, cmd, verb);
	g_free(mnt);
	g_free(cmd);
	g_ptr_array_free(mounts, TRUE);
	return rc;
}
