/* SPDX-License-Identifier: MIT */
/*
 * The volume root's stand-ins carried over and the member roots guarded
 * (rootattrs.h), each member's part on its worker.
 */
#include "rootattrs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_internal.h"
#include "volume_paths.h"
#include "xattrs.h"

/* The stand-in is made whole under this name first. */
#define STANDIN_NEW VOLUME_STANDIN_NAME ".new"

/* The attributes that move to the stand-in: every kept one but the
 * default ACL, which the member's filesystem applies to what is made in
 * the member root, and which opens the member root to nobody. */
static bool carried(const char *name)
{
	return xattrs_name_kept(name) && strcmp(name, XATTRS_ACL_DEFAULT) != 0;
}

struct settle_call {
	volume *v;
	int idx;
	bool guard;
	bool carried;     /* the stand-in was made here */
	int guarded;      /* volume_member_root_guard's answer */
	struct stat was;  /* the member root before */
};

/* The stand-in made like the member root (rootfd) in .ecfs (metafd). */
static int make_standin(volume *v, int idx, int rootfd, int metafd)
{
	struct stat st;
	xattrs_stored have, none = { g_ptr_array_new(), g_ptr_array_new(), true };

	if (MIO_CALL(fstat(rootfd, &st)) < 0)
		return -errno;
	int rc = mop_unlinkat(v, idx, metafd, STANDIN_NEW, AT_REMOVEDIR); /* a crash's */
	rc = rc == -ENOENT ? 0 : rc;
	if (rc == 0)
		rc = mop_mkdirat(v, idx, metafd, STANDIN_NEW, 0700);
	if (rc == 0)
		rc = mop_fchownat(v, idx, metafd, STANDIN_NEW, st.st_uid, st.st_gid,
		                  AT_SYMLINK_NOFOLLOW);
	if (rc == 0)
		rc = mop_fchmodat(v, idx, metafd, STANDIN_NEW, st.st_mode & 07777, 0);
	xattrs_member_read(rootfd, ".", &have);
	if (rc == 0)
		rc = xattrs_member_write(v, idx, metafd, STANDIN_NEW, &have, &none, carried);
	if (rc == 0)
		rc = mop_renameat2(v, idx, metafd, STANDIN_NEW, metafd, VOLUME_STANDIN_NAME, 0);
	if (rc == 0)
		rc = mop_fsync(v, idx, metafd, false);
	/* Only once the stand-in holds them do they leave the member root. */
	if (rc == 0)
		rc = xattrs_member_write(v, idx, rootfd, ".", &none, &have, carried);
	xattrs_stored_clear(&have);
	xattrs_stored_clear(&none);
	return rc;
}

static int settle_member(void *arg)
{
	struct settle_call *c = arg;
	int rootfd = volume_root_fd(c->v, c->idx);
	int metafd = volume_meta_dir(c->v, c->idx, rootfd, ECFS_META_DIR);
	struct stat st;

	if (metafd < 0)
		return metafd;
	int rc = MIO_CALL(fstatat(metafd, VOLUME_STANDIN_NAME, &st, AT_SYMLINK_NOFOLLOW));
	rc = rc < 0 ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	if (rc == -ENOENT) {
		rc = make_standin(c->v, c->idx, rootfd, metafd);
		c->carried = rc == 0;
	}
	MIO_CALL(close(metafd));
	/* never guarded before its attributes are on the stand-in; a member
	 * whose filesystem refuses it (sshfs without the right) is still used */
	if (rc == 0 && c->guard)
		c->guarded = volume_member_root_guard(c->v, c->idx, rootfd, true, &c->was);
	return rc;
}

/* What member i's part did (c), or could not do (rc), in the log. */
static void tell(volume *v, int i, const struct settle_call *c, int rc)
{
	const char *path = volume_member_path(v, i);

	if (rc < 0) {
		if (!volume_member_error(v, i, -rc, "carrying the volume root's attributes over"))
			ecfs_log(LOG_WARNING, "member %d (%s): cannot carry the volume root's "
			         "attributes over to " VOLUME_ROOT_STANDIN ": %s", i, path,
			         g_strerror(-rc));
		return;
	}
	if (c->carried)
		ecfs_log(LOG_NOTICE, "member %d (%s): the volume root's mode, owner, ACL and "
		         "xattrs carried over from the member root to " VOLUME_ROOT_STANDIN, i,
		         path);
	if (c->guarded < 0)
		ecfs_log(LOG_WARNING, "member %d (%s): cannot make its root %04o and the "
		         "daemon's: %s; local users may reach the member tree", i, path,
		         VOLUME_MEMBER_ROOT_MODE, g_strerror(-c->guarded));
	else if (c->guarded > 0)
		ecfs_log(LOG_NOTICE, "member %d (%s): its root was mode %04o owned by %u:%u, "
		         "now %04o and the daemon's: no local user reaches the member tree", i,
		         path, (unsigned)(c->was.st_mode & 07777), (unsigned)c->was.st_uid,
		         (unsigned)c->was.st_gid, VOLUME_MEMBER_ROOT_MODE);
}

void rootattrs_settle(volume *v, bool guard)
{
	for (int i = 0; i < volume_n(v); i++) {
		if (!volume_member_ok(v, i))
			continue;
		struct settle_call c = { .v = v, .idx = i, .guard = guard };
		int rc = volume_on_member(v, i, settle_member, &c);
		if (rc == 0)
			volume_set_root_standin(v);
		tell(v, i, &c, rc);
	}
}
