/* SPDX-License-Identifier: MIT */
/*
 * The member roots, kept the daemon's alone: mode 0700 and owned by the
 * user ecfs runs as (root), so that no local user walks into a member
 * tree past the mount's permission checks.  The volume root's own mode,
 * owner, access ACL and xattrs live on its stand-in, the directory
 * .ecfs/root of each member (docs/FORMAT.md section 1); this file holds
 * the check of a member root, the flag that says the stand-ins are in use
 * and the path an attribute of "/" is read and written at.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memberio.h"
#include "memberops.h"
#include "volume_private.h"

bool volume_root_open_to_others(const struct stat *st)
{
	return (st->st_mode & 07777) != VOLUME_MEMBER_ROOT_MODE || st->st_uid != geteuid() ||
	       st->st_gid != getegid();
}

int volume_member_root_guard(volume *v, int idx, int rootfd, bool fix, struct stat *was)
{
	if (MIO_CALL(fstat(rootfd, was)) < 0)
		return -errno;
	if (!volume_root_open_to_others(was))
		return 0;
	if (!fix)
		return 1;
	/* the owner first: a chown may clear set-id bits the chmod then sets */
	int rc = mop_fchownat(v, idx, rootfd, ".", geteuid(), getegid(), 0);
	if (rc == 0)
		rc = mop_fchmodat(v, idx, rootfd, ".", VOLUME_MEMBER_ROOT_MODE, 0);
	return rc < 0 ? rc : 1;
}

/* ---- the stand-in of the volume root ---- */

static int standin_call(void *arg)
{
	struct root_check *c = arg;
	struct stat st;
	int metafd = c->v->mem[c->idx].metafd;
	if (metafd < 0)
		return -ENOENT;
	int rc = MIO_CALL(fstatat(metafd, VOLUME_STANDIN_NAME, &st, AT_SYMLINK_NOFOLLOW));
	return rc < 0 ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

void vol_find_standin(volume *v)
{
	for (int i = 0; i < v->n && !volume_root_standin(v); i++) {
		struct root_check c = { v, i };
		if (volume_member_ok(v, i) && volume_on_member(v, i, standin_call, &c) == 0)
			volume_set_root_standin(v);
	}
}

bool volume_root_standin(volume *v)
{
	return __atomic_load_n(&v->root_standin, __ATOMIC_ACQUIRE);
}

void volume_set_root_standin(volume *v)
{
	__atomic_store_n(&v->root_standin, true, __ATOMIC_RELEASE);
}

const char *volume_attrs_path(volume *v, const char *path)
{
	if (path[strspn(path, "/")] || !volume_root_standin(v))
		return path;
	return "/" VOLUME_ROOT_STANDIN;
}
