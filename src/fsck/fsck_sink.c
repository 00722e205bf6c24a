/* SPDX-License-Identifier: MIT */
/*
 * The way from the checker to the program that runs it: problems are
 * counted here, where every program needs them counted, and then go to
 * the run's sink (fsck.h), which says them in the program's own way.
 */
#include "fsck.h"

#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "memberio.h"
#include "volume_internal.h"

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

/* ---- member calls under the I/O timeout ---- */

/* The member of a call that returned -ETIMEDOUT was given up (and not
 * merely answered with ETIMEDOUT, a network member's own error). */
static void check_lost(fsck *f, int mb, int rc)
{
	if (rc == -ETIMEDOUT && memberio_lost(volume_memberio(f->v), mb))
		fsck_member_lost(f, mb);
}

int fsck_on_member(fsck *f, int mb, int (*fn)(void *), void *arg)
{
	int rc = volume_on_member(f->v, mb, fn, arg);

	check_lost(f, mb, rc);
	return rc;
}

void fsck_on_members(fsck *f, uint64_t mask, int (*fn)(void *), void *const *args, int *rcs)
{
	volume_on_members(f->v, mask, fn, args, rcs);
	for (int mb = 0; mb < f->n; mb++)
		if (mask >> mb & 1)
			check_lost(f, mb, rcs[mb]);
}

void fsck_on_members_apart(fsck *f, uint64_t mask, int (*fn)(void *), void *const *args,
                           int *rcs)
{
	volume_on_members_apart(f->v, mask, fn, args, rcs);
	for (int mb = 0; mb < f->n; mb++)
		if (mask >> mb & 1)
			check_lost(f, mb, rcs[mb]);
}

void fsck_member_lost(fsck *f, int mb)
{
	uint64_t bit = 1ull << mb;

	if (__atomic_fetch_or(&f->lost, bit, __ATOMIC_RELAXED) & bit)
		return;
	__atomic_fetch_and(&f->walk_mask, ~bit, __ATOMIC_RELAXED);
	/* the timeout, or the member's bound if it came first */
	unsigned ms = memberio_lost_ms(volume_memberio(f->v), mb);
	if (!ms)
		ms = memberio_timeout(volume_memberio(f->v));
	fsck_problem(f, "member", NULL, mb, 0, 0, FSCK_UNREPAIRABLE,
	             "no answer within %g s, treated as failed: its strips count as "
	             "erasures, and nothing more is checked or written on it", ms / 1000.0);
}

struct close_call {
	int fd;
};

static int close_run(void *arg)
{
	const struct close_call *c = arg;
	return MIO_CALL(close(c->fd)) < 0 ? -errno : 0;
}

void fsck_close(fsck *f, int mb, int fd)
{
	struct close_call c = { fd };

	if (fd >= 0 && !memberio_lost(volume_memberio(f->v), mb))
		fsck_on_member(f, mb, close_run, &c);
}

void fsck_close_all(fsck *f, const int *fds)
{
	struct close_call c[64];
	void *args[64];
	int rcs[64];
	uint64_t mask = 0;

	for (int mb = 0; mb < f->n; mb++) {
		c[mb].fd = fds[mb];
		args[mb] = &c[mb];
		if (fds[mb] >= 0 && !memberio_lost(volume_memberio(f->v), mb))
			mask |= 1ull << mb;
	}
	fsck_on_members(f, mask, close_run, args, rcs);
}
