/* SPDX-License-Identifier: MIT */
/*
 * Logging for the daemon and the tools: to stderr while in the foreground
 * (and for ecfs-fsck), to syslog once the daemon has detached.
 */
#ifndef ECFS_LOG_H
#define ECFS_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Until called, messages go to stderr.  ident names the program. */
void ecfs_log_init(const char *ident, bool use_syslog, bool debug);
/* level is a syslog level (LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG). */
void ecfs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
