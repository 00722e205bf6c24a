/* SPDX-License-Identifier: MIT */
/*
 * The volume-health report read back into a table of its keys
 * (health_report.h).
 */
#include "health_report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

GHashTable *health_report_parse(const char *text)
{
	GHashTable *r = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	gchar **lines = g_strsplit(text, "\n", -1);

	for (gchar **l = lines; *l; l++) {
		char *eq = strchr(*l, '=');
		if (eq)
			g_hash_table_replace(r, g_strndup(*l, (gsize)(eq - *l)), g_strdup(eq + 1));
	}
	g_strfreev(lines);
	return r;
}

static const char *get_va(GHashTable *r, const char *fmt, va_list ap)
{
	char *key = g_strdup_vprintf(fmt, ap);
	const char *v = g_hash_table_lookup(r, key);

	g_free(key);
	return v;
}

const char *health_report_get(GHashTable *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const char *v = get_va(r, fmt, ap);
	va_end(ap);
	return v;
}

bool health_report_u64(GHashTable *r, uint64_t *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const char *v = get_va(r, fmt, ap);
	va_end(ap);
	char *end;

	*out = 0;
	if (!v || !*v)
		return false;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || *end)
		return false;
	*out = n;
	return true;
}

char *health_report_path(GHashTable *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const char *v = get_va(r, fmt, ap);
	va_end(ap);
	return v ? g_strcompress(v) : NULL;
}

int health_report_state_code(GHashTable *r)
{
	const char *s = g_hash_table_lookup(r, "state");

	return s && !strcmp(s, "healthy") ? 0 : s && !strcmp(s, "degraded") ? 1 : 2;
}

int health_report_member_code(GHashTable *r, int idx)
{
	const char *s = health_report_get(r, "member.%d.state", idx);

	return s && !strcmp(s, "up") ? 0 : s && !strcmp(s, "healing") ? 1 : 2;
}
