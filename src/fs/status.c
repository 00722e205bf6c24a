/* SPDX-License-Identifier: MIT */
/*
 * `ecfs status`: finding the ecfs mounts, reading their health reports
 * and showing them as text or JSON (status.h).
 */
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include <glib.h>

#include "health_report.h"

#define HEALTH_XATTR "user.ecfs.health"

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
	/* no online scrub yet: none has run */
	g_string_append(out, ", \"scrub\": {\"last\": null, \"result\": null}}");
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
	g_string_append(out, "last scrub: never run\n");
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
