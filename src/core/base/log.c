/* SPDX-License-Identifier: MIT */
/*
 * Logging: messages go to stderr (prefixed with the program name and the
 * level) until ecfs_log_init() switches the daemon to syslog after it has
 * detached from the terminal.  Debug messages are dropped unless enabled.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static const char *log_ident = "ecfs";
static bool log_syslog;
static bool log_debug;
/* guards the lines on stderr; order: last, the innermost lock (any
 * holder of another may log) */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void ecfs_log_init(const char *ident, bool use_syslog, bool debug)
{
	log_ident = ident ? ident : "ecfs";
	log_debug = debug;
	if (use_syslog && !log_syslog)
		openlog(log_ident, LOG_PID, LOG_DAEMON);
	log_syslog = use_syslog;
}

static const char *level_name(int level)
{
	switch (level) {
	case LOG_EMERG:
	case LOG_ALERT:
	case LOG_CRIT:
	case LOG_ERR: return "error";
	case LOG_WARNING: return "warning";
	case LOG_NOTICE:
	case LOG_INFO: return "info";
	default: return "debug";
	}
}

void ecfs_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level >= LOG_DEBUG && !log_debug)
		return;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		/* One lock so lines from worker threads never interleave. */
		pthread_mutex_lock(&log_lock);
		fprintf(stderr, "%s: %s: ", log_ident, level_name(level));
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		pthread_mutex_unlock(&log_lock);
	}
	va_end(ap);
}
