/* SPDX-License-Identifier: MIT */
/*
 * The operations table of the ecfs daemon, filled in one place, the
 * connection setup (init), and the small helpers the operation families
 * share: the volume, who owns a newly created object, and the entries
 * handed to the kernel.
 */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ecfile.h"
#include "log.h"
#include "memberops.h"
#include "xattrs.h"

#define ECFS_MAX_REQUEST (1u << 20) /* 1 MiB writes and read-ahead */

/* The mounted filesystem: one per process, set before the session
 * starts; the member workers (volume_on_member) use it too. */
static struct ecfs_fs *mounted;

void fs_set_state(struct ecfs_fs *fs)
{
	mounted = fs;
}

const struct ecfs_fs *fs_state(void)
{
	return mounted;
}

volume *fs_volume(void)
{
	return mounted->vol;
}

const struct fs_timeouts *fs_timeouts(void)
{
	return &mounted->timeouts;
}

attr_cache *fs_attrs(void)
{
	return mounted->attrs;
}

attr_stamp fs_stamp(void)
{
	volume *v = fs_volume();
	return (attr_stamp){ mop_changes(v), attr_cache_listings(fs_attrs()), mop_reads(v),
	                     objects_stat_epoch(v) };
}

void fs_new_owner(fuse_req_t req, nsops_owner *o)
{
	/* Not root: objects can only belong to the daemon's user, and
	 * (uid_t)-1 tells every chown below to leave them as made. */
	bool to_caller = mounted->uid == 0;
	o->uid = to_caller ? fuse_req_ctx(req)->uid : (uid_t)-1;
	o->gid = to_caller ? fuse_req_ctx(req)->gid : (gid_t)-1;
	/* The daemon's own user and group: made so already (the group of a
	 * setgid parent too, by the member filesystem), no chown needed. */
	o->as_made = (o->uid == (uid_t)-1 || o->uid == mounted->uid) &&
	             (o->gid == (gid_t)-1 || o->gid == mounted->gid);
}

int fs_member_lstat(const char *path, struct stat *st)
{
	return nsops_lstat(fs_volume(), path, st);
}

void fs_orphans_prepare(volume *v)
{
	int rc = nsops_orphans_prepare(v, FS_ORPHAN_DIR);
	if (rc < 0)
		ecfs_log(LOG_WARNING, "cannot prepare the orphan folder %s: %s; files unlinked "
		         "while open may fail", FS_ORPHAN_DIR, strerror(-rc));
}

uint64_t fs_members_answering(void *arg)
{
	volume *v = arg;
	uint64_t mask = 0;
	for (int i = 0; i < volume_n(v); i++)
		if (volume_member_answers(v, i))
			mask |= 1ull << i;
	return mask;
}

void fs_reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, -rc);
}

void fs_entry_fill(struct fuse_entry_param *e, fuse_ino_t ino, const struct stat *st)
{
	memset(e, 0, sizeof *e);
	e->ino = ino;
	e->attr = *st;
	e->attr.st_ino = ino;
	e->attr_timeout = mounted->timeouts.attr;
	e->entry_timeout = mounted->timeouts.entry;
}

int fs_entry(fuse_ino_t parent, const char *name, const char *path, fuse_ino_t ino,
             struct fuse_entry_param *e)
{
	struct stat st;
	int rc;

	if (!ino)
		ino = fs_nodes_lookup_name(parent, name);
	if (ino) {
		/* A name the table knows: its node stands (every change of a
		 * name goes through it), the attributes may come from
		 * attr_cache.h. */
		rc = fs_stat(path, &st);
	} else {
		uint64_t ident;
		rc = objects_stat_ident(fs_volume(), path, &st, &ident);
		if (rc == 0)
			ino = fs_nodes_ino(parent, name, ident, &st);
	}
	if (rc < 0)
		return rc;
	fs_entry_fill(e, ino, &st);
	fs_nodes_add(parent, name, ino, st.st_mode);
	return 0;
}

void fs_reply_entry(fuse_req_t req, fuse_ino_t parent, const char *name, const char *path,
                    int rc)
{
	struct fuse_entry_param e;

	if (rc == 0)
		rc = fs_entry(parent, name, path, 0, &e);
	if (rc < 0)
		fs_reply_err(req, rc);
	else if (fuse_reply_entry(req, &e) != 0)
		fs_nodes_forget(e.ino, 1); /* the request was interrupted */
}

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = ECFS_MAX_REQUEST;
	conn->max_readahead = ECFS_MAX_REQUEST;
	/* The kernel clears setuid/setgid on write and chown (the daemon
	 * writes as root, which would not), and caches writes through: every
	 * write reaches an ecfile at once, so reads through the page cache
	 * stay coherent. */
	conn->want &= ~(unsigned)(FUSE_CAP_DONT_MASK | FUSE_CAP_HANDLE_KILLPRIV |
	                          FUSE_CAP_WRITEBACK_CACHE);
	/* POSIX ACLs, enforced by the kernel, when every member keeps them
	 * (xattrs.h).  The umask is then the daemon's to apply, as a default
	 * ACL replaces it (xattrs_create_mode); otherwise the kernel applies
	 * it before the daemon sees the mode. */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && xattrs_acl_supported(fs_state()->vol))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
}

static const struct fuse_lowlevel_ops operations = {
	.init = fs_init,
	/* names and links */
	.lookup = fs_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.unlink = fs_unlink,
	.rename = fs_rename,
	.symlink = fs_symlink,
	.readlink = fs_readlink,
	.link = fs_link,
	.mknod = fs_mknod,
	/* files */
	.create = fs_create,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.release = fs_release,
	.fsync = fs_fsync,
	.fallocate = fs_fallocate,
	/* directories */
	.mkdir = fs_mkdir,
	.rmdir = fs_rmdir,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	/* attributes */
	.getattr = fs_getattr,
	.setattr = fs_setattr,
	.statfs = fs_statfs,
	.access = fs_access,
	/* extended attributes */
	.setxattr = fs_setxattr,
	.getxattr = fs_getxattr,
	.listxattr = fs_listxattr,
	.removexattr = fs_removexattr,
};

const struct fuse_lowlevel_ops *ecfs_fs_operations(void)
{
	return &operations;
}
