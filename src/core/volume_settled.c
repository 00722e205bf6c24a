/* SPDX-License-Identifier: MIT */
/*
 * Whether the volume's names are settled: every name on every member that
 * answers, or on none (DESIGN.md section 4).  Rename, link, unlink, rmdir
 * and mkdir are logged (intent.c) and end on all members or none; create,
 * symlink and mknod are not, so one that a crash or a power loss cut short
 * may have left its name on any of the members.  While the names are
 * settled, a listing reads the first m + 1 members that answer, which hold
 * every name k members hold; otherwise it reads them all.
 *
 * A volume that was opened and never closed shows it in its lock files
 * (volume.c empties the lock text at close, and syncs it at open).  The
 * first open after that leaves .ecfs/unsettled, synced, on every member in
 * service before anything is written, and every open that finds it on a
 * member lists every member, until ecfs-fsck -y has left every member
 * whole (volume_names_settle).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_internal.h"

#define UNSETTLED_FILE "unsettled"

/* Direct calls: at open, no worker runs yet. */
static bool any_marked(volume *v)
{
	for (int i = 0; i < volume_n(v); i++) {
		struct stat st;
		if (volume_member_ok(v, i) &&
		    fstatat(volume_meta_fd(v, i), UNSETTLED_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return true;
	}
	return false;
}

void volume_settle_open(volume *v, bool left_open, bool read_only)
{
	bool *unsettled = volume_unsettled_flag(v);
	*unsettled = left_open || any_marked(v);
	if (!*unsettled)
		return;
	ecfs_log(LOG_NOTICE, "%s: a listing reads every member until ecfs-fsck -y has "
	         "checked the volume", left_open ? "the volume was not closed cleanly "
	         "the last time" : "the names may not be on every member since a crash");
	/* The mark stays when this open closes cleanly: the names a crash cut
	 * short are still there. */
	for (int i = 0; left_open && !read_only && i < volume_n(v); i++) {
		int rc = volume_member_ok(v, i) ? mop_touchat(v, i, volume_meta_fd(v, i),
		                                              UNSETTLED_FILE, true) : 0;
		if (rc < 0)
			volume_member_error(v, i, -rc, "marking the names unsettled");
	}
}

bool volume_names_settled(volume *v)
{
	return !*volume_unsettled_flag(v);
}

struct unmark {
	volume *v;
	int idx;
};

static int unmark_member(void *arg)
{
	const struct unmark *u = arg;
	int rc = mop_unlinkat(u->v, u->idx, volume_meta_fd(u->v, u->idx), UNSETTLED_FILE, 0);
	return rc == -ENOENT ? 0 : rc;
}

int volume_names_settle(volume *v)
{
	int err = 0;
	for (int i = 0; i < volume_n(v); i++) {
		struct unmark u = { v, i };
		int rc = volume_member_ok(v, i) ? volume_on_member(v, i, unmark_member, &u) : 0;
		if (rc < 0 && !err)
			err = rc;
	}
	if (!err)
		*volume_unsettled_flag(v) = false;
	return err;
}
