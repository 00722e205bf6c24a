/* SPDX-License-Identifier: MIT */
/*
 * The FUSE operations of the ecfs daemon, grouped by family in fs_files.c
 * (regular-file data), fs_dirs.c, fs_attr.c, fs_links.c and fs_xattr.c, and
 * gathered into one operations table in fs_ops.c.  They use libfuse's
 * high-level path API: every path is relative to the volume root, and every
 * operation returns 0 (or a count) or a negative errno.
 *
 * Regular files are ecfiles (the open-file handle is the ecfile pointer in
 * fi->fh); everything else in the namespace is mirrored on every healthy
 * member through mirror.h.  Permission checks are the kernel's job: the
 * daemon always mounts with default_permissions.
 */
#ifndef ECFS_FS_OPS_H
#define ECFS_FS_OPS_H

#define FUSE_USE_VERSION 314
#include <fuse.h>

#include <stdbool.h>

#include "attr_cache.h"
#include "volume.h"

/* The state shared by every operation (fuse private_data). */
struct ecfs_fs {
	volume *vol;
	bool chown_new; /* running as root: hand new objects to the caller */
	attr_cache *attrs; /* what getattr answered, for the next one */
};

/* The operations table the daemon mounts with. */
const struct fuse_operations *ecfs_fs_operations(void);

/* ---- helpers shared by the families (fs_ops.c) ---- */
volume *fs_volume(void);
/* What getattr answered, for the next getattr (attr_cache.h), and the
 * stamp to read before asking the members. */
attr_cache *fs_attrs(void);
attr_stamp fs_stamp(void);
/* The owner a new object at path gets: the caller, and the parent's group
 * if the parent directory is setgid (as a local filesystem does).  Returns
 * 0 or a negative errno (the parent's lookup failed). */
int fs_new_owner(const char *path, uid_t *uid, gid_t *gid);
/* Gives the object just created at (dirfd, leaf) on member to uid:gid when
 * the daemon runs as root; a no-op otherwise. */
int fs_chown_new(int member, int dirfd, const char *leaf, uid_t uid, gid_t gid);
/* Open files that are unlinked or renamed over are not removed while open:
 * libfuse renames them to "<dir>/.fuse_hidden<16 hex digits>" and unlinks
 * that name at the last close (so users cannot have names of that form).  ecfs keeps them in the members' orphan folder instead,
 * outside the namespace (never listed, not in the way of rmdir), where
 * fstat, fchmod, ftruncate... keep working.  fs_path maps a path libfuse
 * gives to where the object is: a hidden name into the orphan folder,
 * anything else to itself.  buf must hold FS_ORPHAN_PATH_MAX bytes.  The
 * volume_path_reserved() check is made on the path before mapping. */
#define FS_ORPHAN_DIR "/" ECFS_META_DIR "/orphans"
#define FS_HIDDEN_PREFIX ".fuse_hidden"
#define FS_ORPHAN_PATH_MAX 64
const char *fs_path(const char *path, char *buf);
/* Creates the orphan folder on every healthy member and empties it of
 * what a crash left there.  Run before mounting. */
void fs_orphans_prepare(volume *v);

/* lstat of path's object on the first healthy member (not the logical
 * size of regular files: see fs_getattr). */
int fs_member_lstat(const char *path, struct stat *st);

/* ---- fs_files.c ---- */
/* True if the caller of the current request is in group gid. */
bool fs_caller_in_group(gid_t gid);
int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int fs_open(const char *path, struct fuse_file_info *fi);
int fs_read(const char *path, char *buf, size_t size, off_t off,
            struct fuse_file_info *fi);
int fs_write(const char *path, const char *buf, size_t size, off_t off,
             struct fuse_file_info *fi);
int fs_flush(const char *path, struct fuse_file_info *fi);
int fs_release(const char *path, struct fuse_file_info *fi);
int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi);
int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int fs_fallocate(const char *path, int mode, off_t off, off_t len,
                 struct fuse_file_info *fi);
/* Makes data written through any open of path reach the members, so that
 * times set afterwards are not overwritten by a later flush. */
int fs_flush_path(const char *path);

/* ---- fs_dirs.c ---- */
int fs_mkdir(const char *path, mode_t mode);
int fs_rmdir(const char *path);
int fs_opendir(const char *path, struct fuse_file_info *fi);
int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
               struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int fs_releasedir(const char *path, struct fuse_file_info *fi);
int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi);

/* ---- fs_attr.c ---- */
int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi);
int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi);
int fs_utimens(const char *path, const struct timespec tv[2],
               struct fuse_file_info *fi);
int fs_statfs(const char *path, struct statvfs *st);
int fs_access(const char *path, int mask);

/* ---- fs_links.c ---- */
int fs_unlink(const char *path);
int fs_rename(const char *from, const char *to, unsigned int flags);
int fs_symlink(const char *target, const char *path);
int fs_readlink(const char *path, char *buf, size_t size);
int fs_link(const char *from, const char *to);
int fs_mknod(const char *path, mode_t mode, dev_t rdev);

/* ---- fs_xattr.c ---- */
int fs_setxattr(const char *path, const char *name, const char *value,
                size_t size, int flags);
int fs_getxattr(const char *path, const char *name, char *value, size_t size);
int fs_listxattr(const char *path, char *list, size_t size);
int fs_removexattr(const char *path, const char *name);

#endif
