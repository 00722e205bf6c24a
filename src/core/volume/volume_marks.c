/* SPDX-License-Identifier: MIT */
/*
 * Marks on a volume: empty files in every member's .ecfs whose presence
 * says something about the whole volume (FORMAT.md section 1): that a
 * capability or an ACL was ever set (xattrs.c), that the names may be
 * unsettled (volume_settled.c).  Made synced on every member in service;
 * one member holding it is enough to find it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "memberio.h"
#include "memberops.h"
#include "volume_internal.h"

struct mark_run {
	volume *v;
	int mb;
	const char *name;
	enum { MARK_LOOK, MARK_MAKE, MARK_REMOVE } step;
};

static int mark_member(void *arg)
{
	const struct mark_run *r = arg;
	int meta = volume_meta_fd(r->v, r->mb);
	struct stat st;
	switch (r->step) {
	case MARK_LOOK:
		return MIO_CALL(fstatat(meta, r->name, &st, AT_SYMLINK_NOFOLLOW)) < 0 ? -errno : 0;
	case MARK_MAKE:
		return mop_touchat(r->v, r->mb, meta, r->name, true);
	default: {
		int rc = mop_unlinkat(r->v, r->mb, meta, r->name, 0);
		return rc == -ENOENT ? 0 : rc;
	}
	}
}

int volume_mark(volume *v, const char *name, bool make, const char *what)
{
	int err = 0;
	for (int mb = 0; mb < volume_n(v); mb++) {
		if (!volume_member_ok(v, mb))
			continue;
		struct mark_run r = { v, mb, name, make ? MARK_MAKE : MARK_LOOK };
		int rc = volume_on_member(v, mb, mark_member, &r);
		if (rc == 0 && !make)
			return 0;
		if (rc < 0 && (make || rc != -ENOENT) && !volume_member_error(v, mb, -rc, what) &&
		    !err)
			err = rc;
	}
	if (!volume_usable(v))
		return -EIO;
	return err ? err : make ? 0 : -ENOENT;
}

int volume_unmark(volume *v, const char *name)
{
	int err = 0;
	for (int mb = 0; mb < volume_n(v); mb++) {
		struct mark_run r = { v, mb, name, MARK_REMOVE };
		int rc = volume_member_ok(v, mb) ? volume_on_member(v, mb, mark_member, &r) : 0;
		if (rc < 0 && !err)
			err = rc;
	}
	return err;
}
