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

/* The identities whose clash was logged, so that each is logged once;
 * emptied when full, to stay bounded. */
#define CLASHES_LOGGED_MAX 4096
static GMutex clashes_lock; /* guards clashes_logged; order: a leaf */
static GHashTable *clashes_logged;

static void log_clash(uint64_t ident, const char *known, const char *name)
{
	g_mutex_lock(&clashes_lock);
	if (!clashes_logged)
		clashes_logged = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	if (g_hash_table_size(clashes_logged) >= CLASHES_LOGGED_MAX)
		g_hash_table_remove_all(clashes_logged);
	bool first = !g_hash_table_contains(clashes_logged, &ident);
	if (first)
		g_hash_table_add(clashes_logged, g_memdup2(&ident, sizeof ident));
	g_mutex_unlock(&clashes_lock);
	if (first)
		ecfs_log(LOG_WARNING, "identity %016llx is claimed by %s and by another object "
		         "named %s: the second is refused (a chunk or directory planted or "
		         "copied on the members?)", (unsigned long long)ident, known, name);
}

fuse_ino_t fs_entry_ino(fuse_ino_t parent, const char *name, uint64_t ident,
                        const struct stat *st)
{
	fuse_ino_t ino = fs_nodes_ino(parent, name, ident, st);
	char *known = NULL;
	if (!ident || !fs_nodes_seen_other(ino, st, &known))
		return ino;
	/* The node's object, asked where the table has it now: the same
	 * member object as st (another member answers now, or the object
	 * was rebuilt), one of another identity, or none there (moved behind
	 * the daemon's back) leave the identity to st's object. */
	struct stat kst;
	uint64_t kident = 0;
	bool clash = objects_stat_ident(fs_volume(), known, &kst, &kident) == 0 &&
	             kident == ident &&
	             (kst.st_dev != st->st_dev || kst.st_ino != st->st_ino);
	if (clash)
		log_clash(ident, known, name);
	g_free(known);
	return clash ? 0 : ino;
}

int fs_entry(fuse_ino_t parent, const char *name, const char *path, fuse_ino_t ino,
             struct fuse_entry_param *e)
{
	struct stat st;
	uint64_t ident = 0;
	int rc;

	if (!ino)
		ino = fs_nodes_lookup_name(parent, name);
	if (ino) {
		/* A name the table knows: its node stands (every change of a
		 * name goes through it), the attributes may come from
		 * attr_cache.h. */
		rc = fs_stat(path, &st);
	} else {
		rc = objects_stat_ident(fs_volume(), path, &st, &ident);
		if (rc == 0 && !(ino = fs_entry_ino(parent, name, ident, &st)))
			rc = -EIO;
	}
	if (rc < 0)
		return rc;
	fs_entry_fill(e, ino, &st);
	fs_nodes_add(parent, name, ino, &st, ident);
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
	/* Not the first FUSE_HANDLE_KILLPRIV (the daemon writes as root, which
	 * keeps setuid): its second version, which asks the kernel to say who
	 * may keep it, is fs_killpriv.c's to offer.  The kernel caches writes
	 * through: every write reaches an ecfile at once, so reads through the
	 * page cache stay coherent. */
	conn->want &= ~(unsigned)(FUSE_CAP_DONT_MASK | FUSE_CAP_HANDLE_KILLPRIV |
	                          FUSE_CAP_WRITEBACK_CACHE);
	/* POSIX ACLs, enforced by the kernel, when every member keeps them
	 * (xattrs.h).  The umask is then the daemon's to apply, as a default
	 * ACL replaces it (xattrs_create_mode); otherwise the kernel applies
	 * it before the daemon sees the mode. */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && xattrs_acl_supported(fs_state()->vol))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
}

/* Every request that builds a path from the node table holds the names
 * (fs_nodes_hold) until it is answered, so that each path names the
 * node's object on every member while the request uses it; a rename
 * holds them alone.  Requests by open file (read, write, flush...) use
 * no path. */
#define HELD(op, params, args)                                                  \
	static void held_##op params                                            \
	{                                                                       \
		fs_nodes_hold();                                                \
		fs_##op args;                                                   \
		fs_nodes_unhold();                                              \
	}
#define REQ fuse_req_t req
#define FI struct fuse_file_info *fi
HELD(lookup, (REQ, fuse_ino_t parent, const char *name), (req, parent, name))
HELD(unlink, (REQ, fuse_ino_t parent, const char *name), (req, parent, name))
HELD(symlink, (REQ, const char *target, fuse_ino_t parent, const char *name),
     (req, target, parent, name))
HELD(readlink, (REQ, fuse_ino_t ino), (req, ino))
HELD(link, (REQ, fuse_ino_t ino, fuse_ino_t parent, const char *name), (req, ino, parent, name))
HELD(mknod, (REQ, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev),
     (req, parent, name, mode, rdev))
HELD(create, (REQ, fuse_ino_t parent, const char *name, mode_t mode, FI),
     (req, parent, name, mode, fi))
HELD(open, (REQ, fuse_ino_t ino, FI), (req, ino, fi))
HELD(mkdir, (REQ, fuse_ino_t parent, const char *name, mode_t mode), (req, parent, name, mode))
HELD(rmdir, (REQ, fuse_ino_t parent, const char *name), (req, parent, name))
HELD(opendir, (REQ, fuse_ino_t ino, FI), (req, ino, fi))
HELD(readdir, (REQ, fuse_ino_t ino, size_t size, off_t off, FI), (req, ino, size, off, fi))
HELD(readdirplus, (REQ, fuse_ino_t ino, size_t size, off_t off, FI), (req, ino, size, off, fi))
HELD(fsyncdir, (REQ, fuse_ino_t ino, int datasync, FI), (req, ino, datasync, fi))
HELD(getattr, (REQ, fuse_ino_t ino, FI), (req, ino, fi))
HELD(setattr, (REQ, fuse_ino_t ino, struct stat *attr, int to_set, FI),
     (req, ino, attr, to_set, fi))
HELD(access, (REQ, fuse_ino_t ino, int mask), (req, ino, mask))
HELD(setxattr, (REQ, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags),
     (req, ino, name, value, size, flags))
HELD(getxattr, (REQ, fuse_ino_t ino, const char *name, size_t size), (req, ino, name, size))
HELD(listxattr, (REQ, fuse_ino_t ino, size_t size), (req, ino, size))
HELD(removexattr, (REQ, fuse_ino_t ino, const char *name), (req, ino, name))
#undef HELD
#undef REQ
#undef FI

static void rename_alone(fuse_req_t req, fuse_ino_t parent, const char *name,
                         fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	fs_nodes_hold_alone();
	fs_rename(req, parent, name, newparent, newname, flags);
	fs_nodes_unhold_alone();
}

static const struct fuse_lowlevel_ops operations = {
	.init = fs_init,
	/* names and links */
	.lookup = held_lookup,
	.forget = fs_forget,
	.forget_multi = fs_forget_multi,
	.unlink = held_unlink,
	.rename = rename_alone,
	.symlink = held_symlink,
	.readlink = held_readlink,
	.link = held_link,
	.mknod = held_mknod,
	/* files */
	.create = held_create,
	.open = held_open,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.release = fs_release,
	.fsync = fs_fsync,
	.fallocate = fs_fallocate,
	.lseek = fs_lseek,
	/* directories */
	.mkdir = held_mkdir,
	.rmdir = held_rmdir,
	.opendir = held_opendir,
	.readdir = held_readdir,
	.readdirplus = held_readdirplus,
	.releasedir = fs_releasedir,
	.fsyncdir = held_fsyncdir,
	/* attributes */
	.getattr = held_getattr,
	.setattr = held_setattr,
	.statfs = fs_statfs,
	.access = held_access,
	/* extended attributes */
	.setxattr = held_setxattr,
	.getxattr = held_getxattr,
	.listxattr = held_listxattr,
	.removexattr = held_removexattr,
};

const struct fuse_lowlevel_ops *ecfs_fs_operations(void)
{
	return &operations;
}
