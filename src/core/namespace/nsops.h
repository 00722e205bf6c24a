/* SPDX-License-Identifier: MIT */
/*
 * The namespace operations on every member: mkdir, rmdir, unlink,
 * rename, link, symlink, mknod, readlink, chmod, chown, utimens, lstat
 * and a directory's fsync.  Each one's body on one member is here; mirror.h
 * applies it to every healthy member and makes one answer of theirs, under
 * an intent (intent.h) for those whose partial state after a crash would
 * hurt.  Paths are volume paths; every call returns 0 or a negative
 * errno.  Space is claimed by the caller (volume_claim_space).
 */
#ifndef ECFS_NSOPS_H
#define ECFS_NSOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "volume.h"

/* The owner a new object gets on each member: uid and gid (the group
 * becomes the parent's where the parent directory is setgid,
 * mop_new_object_gid); as_made: it is the daemon's own, which made it,
 * and no chown is needed. */
typedef struct nsops_owner {
	uid_t uid;
	gid_t gid;
	bool as_made;
} nsops_owner;

/* A change that keeps an object's size (a new name, chmod, chown,
 * utimens): the first member that makes it and answers queries (the one a
 * lookup asks first) takes the object's lstat before and after, so that
 * the size the size cache remembers under the old ctime is remembered
 * under the new one too (else the next stat reads the headers of every
 * member) and a link's reply needs no lookup.  Claimed once (atomic): the
 * members may run at once.  Zeroed by the caller. */
typedef struct nsops_kept {
	bool claimed, have;
	int member;
	struct stat before, after;
} nsops_kept;
/* After the change (epoch: objects_stat_epoch before it): true if what
 * objects_stat answers for the object takes no member call, with *st the
 * attributes after it; a regular file's size, remembered for the chunk
 * as it was, is remembered as it is now too. */
bool nsops_kept_carry(volume *v, const nsops_kept *k, uint64_t epoch, struct stat *st);

/* A directory on the members: those it is known on (bits of mask), and
 * its inode number on each, the key of its stamps there (dirstamps.h). */
typedef struct dir_members {
	uint64_t mask;
	uint64_t ino[64];
} dir_members;

/* A directory to make (mode, owner, ident: its identity, objects.h, the
 * same on every member) and what its making found: the attributes of the
 * first member that made it and answers queries (the member a lookup asks
 * first), taken there right after, which spares the reply a lookup (one
 * wait), and the members that made it with its stamp taken there. */
typedef struct nsops_new_dir {
	mode_t mode;
	nsops_owner owner;
	uint64_t ident;
	bool claimed, have_st; /* claimed once (atomic): members run at once */
	struct stat st;
	dir_members on;        /* atomics */
} nsops_new_dir;

int nsops_mkdir(volume *v, const char *path, nsops_new_dir *nd);
/* The directory (dirfd, leaf) opened for reading, not following a
 * symlink, with a plain call on the calling thread (a member worker): an
 * fd or a negative errno. */
int nsops_open_dir(int dirfd, const char *leaf);
int nsops_rmdir(volume *v, const char *path);
/* fsync of the directory at path on every member. */
int nsops_fsyncdir(volume *v, const char *path, int datasync);
int nsops_unlink(volume *v, const char *path);
/* rename(2) with renameat2's flags (RENAME_NOREPLACE, RENAME_EXCHANGE);
 * the size of a regular file renamed stays remembered. */
int nsops_rename(volume *v, const char *from, const char *to, unsigned flags);
/* A hard link to from at to; kept: the lstats around it. */
int nsops_link(volume *v, const char *from, const char *to, nsops_kept *kept);
int nsops_symlink(volume *v, const char *path, const char *target, const nsops_owner *o);
/* The target of the symlink at path into buf (size bytes), terminated,
 * truncated if need be. */
int nsops_readlink(volume *v, const char *path, char *buf, size_t size);
/* A node that is not a regular file (those are ecfiles, ecfile_create). */
int nsops_mknod(volume *v, const char *path, mode_t mode, dev_t rdev, const nsops_owner *o);
/* chmod, chown ((uid_t)-1, (gid_t)-1: left as they are) and utimens
 * (times as utimensat takes them) of path on every member, not following
 * a symlink; kept: the lstats around it. */
int nsops_chmod(volume *v, const char *path, mode_t mode, nsops_kept *kept);
int nsops_chown(volume *v, const char *path, uid_t uid, gid_t gid, nsops_kept *kept);
int nsops_utimens(volume *v, const char *path, const struct timespec ts[2],
                  nsops_kept *kept);
/* lstat of path's object on the first healthy member (a regular file's
 * chunk: not its logical size, see objects_stat). */
int nsops_lstat(volume *v, const char *path, struct stat *st);
/* Makes the orphan folder dir (mode 0700) on every healthy member if it
 * is not there, and removes the orphans a crash left in it: files that
 * were open and unlinked when the daemon stopped. */
int nsops_orphans_prepare(volume *v, const char *dir);

#endif
