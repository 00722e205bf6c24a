/* SPDX-License-Identifier: MIT */
/*
 * The namespace operations on every member: mkdir, rmdir, unlink,
 * rename, link, symlink, mknod, readlink, chmod, chown, utimens, lstat,
 * a directory's fsync and the reads of a listing.  Each one's body on
 * one member is here; mirror.h
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

#include "dirstamps.h"
#include "listing.h"
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

/* ---- reading directories ---- */
/* 0 if path is a directory the daemon can open (on the first member that
 * has it), else a negative errno. */
int nsops_opendir(volume *v, const char *path);
/* A member's part of a listing, and the stamp of its directory then
 * (dirstamps.h): stable if the same before and after the read. */
typedef struct nsops_dir_part {
	listing_part part;
	dirstamp st;
	bool stable;
} nsops_dir_part;
/* Reads the directory at path on the first `most` members that answer
 * namespace queries, at once (mirror_gather, which says what the mask
 * returned and *err hold), member i's names into parts[i] (the caller's
 * listing_part_init'ed). */
uint64_t nsops_list(volume *v, const char *path, nsops_dir_part *parts, int most, int *err);
/* What a member shows of a directory it was not asked to list. */
typedef struct nsops_dir_look {
	dirstamp st;
	bool seen;
} nsops_dir_look;
/* Reads the start of the directory at path on the first `most` members
 * that answer, as nsops_list asks them: what a listing does to its access
 * time (relatime), with no listing to make; with looks, member i's stamp
 * of it in looks[i] (zeroed by the caller). */
uint64_t nsops_touch_dir(volume *v, const char *path, nsops_dir_look *looks, int most,
                         int *err);
/* The attributes of the names entries[0 .. count) of the directory at
 * path as objects_stat answers them: from the first two members that
 * answer namespace queries for those one of them answers whole with no
 * other member call (a regular file: its size remembered) and on whose
 * mode and owner the two agree, else as a lookup settles them,
 * all names at once (objects_stat_many): have[i] is true, with st[i] and
 * ident[i] (objects_stat_ident), for every name still there.  Not for .
 * and ..: the member root's .. lies outside the volume. */
int nsops_stat_names(volume *v, const char *path, const struct listing_entry *entries,
                     guint count, struct stat *st, uint64_t *ident, bool *have);

#endif
