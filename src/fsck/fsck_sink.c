/* SPDX-License-Identifier: MIT */
/*
 * The way from the checker to the program that runs it: problems are
 * counted here, where every program needs them counted, and then go to
 * the run's sink (fsck.h), which says them in the program's own way.
 */
#include "fsck.h"

#include <stdarg.h>

void fsck_problem(fsck *f, const char *kind, const char *path, int member,
                  uint64_t off, uint64_t len, enum fsck_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *detail = g_strdup_vprintf(fmt, ap);
	va_end(ap);

	switch (st) {
	case FSCK_REPAIRED: fsck_count(&f->repaired, 1); break;
	case FSCK_REPAIRABLE: fsck_count(&f->repairable, 1); break;
	case FSCK_UNREPAIRABLE: fsck_count(&f->unrepairable, 1); break;
	default: fsck_count(&f->failed, 1); break;
	}
	fsck_report r = { .kind = kind, .path = path, .member = member, .off = off, .len = len,
	                  .st = st, .detail = detail };
	f->sink->problem(f->sink->arg, f, &r);
	g_free(detail);
}

void fsck_progress(fsck *f, bool force)
{
	if (f->sink->progress)
		f->sink->progress(f->sink->arg, f, force);
}
