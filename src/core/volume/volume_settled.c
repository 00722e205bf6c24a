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
 * (volume_lock.c empties the lock text at close, and syncs it at open).  The
 * first open after that leaves .ecfs/unsettled, synced, on every member in
 * service before anything is written, and every open that finds it on a
 * member lists every member, until ecfs-fsck -y has left every member
 * whole (volume_names_settle).
 */
#include <errno.h>

#include "log.h"
#include "volume_internal.h"

#define UNSETTLED_FILE "unsettled"

void volume_settle_open(volume *v, bool left_open, bool read_only)
{
	bool *unsettled = volume_unsettled_flag(v);
	/* A member that cannot say counts as marked. */
	*unsettled = left_open || volume_mark(v, UNSETTLED_FILE, false,
	                                      "looking for the names' mark") != -ENOENT;
	if (!*unsettled)
		return;
	ecfs_log(LOG_NOTICE, "%s: a listing reads every member until ecfs-fsck -y has "
	         "checked the volume", left_open ? "the volume was not closed cleanly "
	         "the last time" : "the names may not be on every member since a crash");
	/* The mark stays when this open closes cleanly: the names a crash cut
	 * short are still there. */
	if (left_open && !read_only)
		volume_mark(v, UNSETTLED_FILE, true, "marking the names unsettled");
}

bool volume_names_settled(volume *v)
{
	return !*volume_unsettled_flag(v);
}

int volume_names_settle(volume *v)
{
	int err = volume_unmark(v, UNSETTLED_FILE);
	if (!err)
		*volume_unsettled_flag(v) = false;
	return err;
}
