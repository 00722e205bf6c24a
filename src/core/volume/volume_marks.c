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
#include "volume_private.h"

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

/* ---- the marks of attributes ----
 *
 * Every write looks for security.capability (to remove it: the daemon,
 * or the kernel before it sends the write), and with ACLs on the kernel
 * asks for an object's access ACL at most permission checks: a member
 * read there doubles the cost of a 4 KiB write or a stat.  Most volumes
 * hold neither.  So the first capability (or ACL) set on a volume leaves
 * an empty file in .ecfs on every member, synced before the attribute is
 * set; while no member holds it, the answer is "none" without a member
 * read.  A mount that finds a mark puts it back
 * on members that lack it (replaced and rebuilt since). */

enum { ATTR_UNKNOWN, ATTR_NONE, ATTR_SET };
static const char *const attr_mark[] = { VOLUME_CAPS_MARK, VOLUME_ACLS_MARK };

bool volume_attr_marked(volume *v, enum volume_attr_kind kind)
{
	int *state = &v->xattr_marks[kind];
	int s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
	if (s != ATTR_UNKNOWN)
		return s == ATTR_SET;
	int rc = volume_mark(v, attr_mark[kind], false, "xattrs marker");
	if (rc == 0)
		volume_mark(v, attr_mark[kind], true, "xattrs marker");
	if (rc == 0 || rc == -ENOENT)
		__atomic_store_n(state, rc == 0 ? ATTR_SET : ATTR_NONE, __ATOMIC_RELEASE);
	return rc != -ENOENT; /* unsure: ask the members */
}

int volume_attr_mark(volume *v, enum volume_attr_kind kind)
{
	int *state = &v->xattr_marks[kind];
	if (__atomic_load_n(state, __ATOMIC_ACQUIRE) == ATTR_SET)
		return 0;
	int rc = volume_mark(v, attr_mark[kind], true, "xattrs marker");
	if (rc == 0)
		__atomic_store_n(state, ATTR_SET, __ATOMIC_RELEASE);
	return rc;
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
