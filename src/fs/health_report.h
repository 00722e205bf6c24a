/* SPDX-License-Identifier: MIT */
/*
 * The volume-health report (volume_health_text, volume.h: the root's
 * user.ecfs.health xattr) read back by programs: ecfs status and the
 * daemon's -o metrics take their facts from it, so each fact has one
 * home, the report.
 */
#ifndef ECFS_HEALTH_REPORT_H
#define ECFS_HEALTH_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

/* The report's key=value lines as a table of g_malloc'd strings (the
 * last line of a key wins). */
GHashTable *health_report_parse(const char *text);
/* The value of the key printf(fmt, ...) makes, or NULL. */
const char *health_report_get(GHashTable *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* That value as a number; false (and *out 0) if absent or not one. */
bool health_report_u64(GHashTable *r, uint64_t *out, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A path of the report, unescaped (volume.h), g_malloc'd; NULL if absent. */
char *health_report_path(GHashTable *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* What `ecfs status` exits with and metrics give as ecfs_volume_state:
 * 0 healthy, 1 degraded, 2 failed (unknown states count as failed). */
int health_report_state_code(GHashTable *r);
/* A member's state as a number: 0 up, 1 healing, 2 failed. */
int health_report_member_code(GHashTable *r, int idx);

#endif
