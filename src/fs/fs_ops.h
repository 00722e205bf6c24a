/* SPDX-License-Identifier: MIT */
/*
 * The FUSE operations of the ecfs daemon, grouped by family in fs_files.c
 * (regular-file data), fs_dirs.c, fs_attr.c, fs_links.c and fs_xattr.c, and
 * gathered into one operations table in fs_ops.c.  They use libfuse's
 * low-level API: requests name nodes (fs_nodes.h turns them into paths
 * relative to the volume root, which the storage core takes; the table in
 * fs_ops.c holds the names against renames around each request that does),
 * and every operation answers its request itself.  Internal helpers return
 * 0 (or a count) or a negative errno.
 *
 * Regular files are ecfiles (the open-file handle is the ecfile pointer in
 * fi->fh); everything else in the namespace is mirrored on every healthy
 * member by the namespace layer (nsops.h, mirror.h).  Permission checks
 * are the kernel's job: the daemon always mounts with
 * default_permissions.
 */
#ifndef ECFS_FS_OPS_H
#define ECFS_FS_OPS_H

#include "fs_dirnames.h"
#include "fs_nodes.h"

#include <stdbool.h>

#include "attr_cache.h"
#include "ecfile.h"
#include "nsops.h"
#include "objects.h"
#include "scrub.h"
#include "volume.h"

/* How long the kernel may keep what the daemon answers, in seconds. */
struct fs_timeouts {
	double entry;    /* a name's node (-o entry_timeout) */
	double attr;     /* attributes (-o attr_timeout) */
	double negative; /* that a name does not exist (-o negative_timeout) */
};

/* The state shared by every operation. */
struct ecfs_fs {
	volume *vol;
	uid_t uid;      /* the daemon's own: what new objects are made with (root:
	                 * handed to the caller, fs_new_owner) */
	gid_t gid;
	attr_cache *attrs; /* what getattr answered, for the next one */
	struct fs_timeouts timeouts;
	bool kernel_cache; /* -o kernel_cache: keep the page cache at open */
	bool auto_cache;   /* -o auto_cache: keep it while size and mtime stand */
	bool direct_io;    /* -o direct_io: every open bypasses the page cache */
	scrub *scrub;      /* the online scrub (user.ecfs.scrub); NULL: none */
};

/* The operations table the daemon mounts with, and the state they use
 * (set once, before the session starts). */
const struct fuse_lowlevel_ops *ecfs_fs_operations(void);
void fs_set_state(struct ecfs_fs *fs);

/* ---- helpers shared by the families (fs_ops.c) ---- */
volume *fs_volume(void);
const struct fs_timeouts *fs_timeouts(void);
const struct ecfs_fs *fs_state(void);
/* What getattr answered, for the next getattr (attr_cache.h), and the
 * stamp to read before asking the members. */
attr_cache *fs_attrs(void);
attr_stamp fs_stamp(void);
/* The owner a new object gets: the caller of req when the daemon runs as
 * root, else (uid_t)-1 and (gid_t)-1 (as made).  The group is the
 * caller's; the members (nsops.h) and the chunks' create make it the
 * parent's where the parent directory is setgid (mop_new_object_gid), on
 * each member, without a round of its own. */
void fs_new_owner(fuse_req_t req, nsops_owner *o);
/* Creates the orphan folder on every healthy member and empties it of
 * what a crash left there.  Run before mounting. */
void fs_orphans_prepare(volume *v);

/* The members that answer for the volume now, as a mask (arg: the
 * volume), for fs_nodes_notify_start. */
uint64_t fs_members_answering(void *arg);

/* lstat of path's object on the first healthy member (not the logical
 * size of regular files: see fs_stat). */
int fs_member_lstat(const char *path, struct stat *st);

/* Answers req with errno -rc (rc <= 0; 0 is success). */
void fs_reply_err(fuse_req_t req, int rc);
/* Looks up (parent, name), just found or made at path, for the kernel:
 * fills e (node, attributes, timeouts) and counts the lookup
 * (fs_nodes_add).  ino: the node it must be (a new name of a node),
 * else 0: the node the name has, or the one of the object's identity. */
int fs_entry(fuse_ino_t parent, const char *name, const char *path, fuse_ino_t ino,
             struct fuse_entry_param *e);
/* fs_nodes_ino for an object found at (parent, name) with lstat st and
 * identity ident, or 0 if another object the table knows (a node with a
 * name) already holds that identity: two objects never share a node; the
 * clash is logged once per identity. */
fuse_ino_t fs_entry_ino(fuse_ino_t parent, const char *name, uint64_t ident,
                        const struct stat *st);
/* Fills e for node ino with attributes st (st_ino set) and the timeouts. */
void fs_entry_fill(struct fuse_entry_param *e, fuse_ino_t ino, const struct stat *st);
/* fs_entry, then the reply: the entry, or rc's error. */
void fs_reply_entry(fuse_req_t req, fuse_ino_t parent, const char *name, const char *path,
                    int rc);

/* ---- fs_files.c ---- */
/* An open regular file (fi->fh): the ecfile every open of the file
 * shares, and whether this open wrote since its last flush. */
struct fs_file {
	ecfile *f;
	bool wrote;
};
ecfile *fs_file_of(const struct fuse_file_info *fi);
/* True if the caller of req is in group gid. */
bool fs_caller_in_group(fuse_req_t req, gid_t gid);
void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
               struct fuse_file_info *fi);
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* Opens regular file node ino by its path (flags as ecfile_open takes
 * them, O_TRUNC honoured) once the file found there is known to be the
 * node's (its identity): else -ESTALE, with nothing truncated. */
int fs_open_node(fuse_ino_t ino, int flags, ecfile **out);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
              struct fuse_file_info *fi);
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                  struct fuse_file_info *fi);
/* SEEK_DATA and SEEK_HOLE (ecfile_seek_data). */
void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
              struct fuse_file_info *fi);
/* Makes data written through any open of node ino reach the members, so
 * that times set afterwards are not overwritten by a later flush; no
 * member call when the daemon has no such file open. */
int fs_flush_node(fuse_ino_t ino);
/* If node ino is a regular file open in the daemon: its size in *st
 * (which holds a chunk's lstat), and true. */
bool fs_node_stat_open(fuse_ino_t ino, struct stat *st);

/* ---- fs_dirs.c ---- */
void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                struct fuse_file_info *fi);
void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi);
void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

/* ---- fs_attr.c ---- */
/* After a change that kept a regular file's size (nsops_kept) when
 * nsops_kept_carry could not tell it, for a file open in the daemon as
 * node ino: true, with *st the attributes after the change and the open
 * file's size. */
bool fs_kept_open(const nsops_kept *k, fuse_ino_t ino, struct stat *st);
/* The attributes of the object at path, as getattr answers them (st_ino
 * is the member's: the caller sets the node's). */
int fs_stat(const char *path, struct stat *st);
/* fs_stat of a directory a namespace operation changed, for the cache
 * alone: the volume's refresh (volume_set_refresh), run on the relay; by
 * what the chain holds of it (objects_dir_stat_at), unless NULL. */
void fs_refresh_dir(const char *dir, const volume_dir_at *at);
/* chmod of path on every member. */
int fs_chmod_path(const char *path, mode_t mode);
void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                struct fuse_file_info *fi);
void fs_statfs(fuse_req_t req, fuse_ino_t ino);
void fs_access(fuse_req_t req, fuse_ino_t ino, int mask);

/* ---- fs_links.c ---- */
void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
               const char *newname, unsigned int flags);
void fs_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name);
void fs_readlink(fuse_req_t req, fuse_ino_t ino);
void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
/* Removes an orphan (fs_nodes_closed), logged like an unlink. */
void fs_remove_orphan(const char *orphan);

/* ---- fs_xattr.c ---- */
void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                 size_t size, int flags);
void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

#endif
