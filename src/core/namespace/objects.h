/* SPDX-License-Identifier: MIT */
/*
 * Stat and identity of any object in the namespace: a regular file,
 * a directory, a symlink or a special file, by its path.  A stat asks
 * the members (the first one most often answers alone, the others give
 * their lstat for the vote on the mode and owner) and gives a regular
 * file's logical size, the majority's mode and owner, and an object's
 * identity; a directory's identity is an xattr given at mkdir on every
 * member.  The volume root's mode and owner are its stand-in's
 * (volume_attrs_path).
 */
#ifndef ECFS_OBJECTS_H
#define ECFS_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "volume.h"

/* stat of a path, with st_size the logical size and st_blocks the blocks
 * of the file's chunks scaled by k/(k+m) (ecfile_fill_size). */
int objects_stat(volume *v, const char *path, struct stat *st);
/* objects_stat and the object's identity: a regular file's (ecfile_ident:
 * the same through every name, for the whole life of the file, inode
 * numbers in docs/FORMAT.md), a directory's (below), else 0, or 0 when
 * none could be read. */
int objects_stat_ident(volume *v, const char *path, struct stat *st, uint64_t *ident);
/* objects_stat of the directory at path from a descriptor of it on each
 * member that answers (at->fds[mb], mb a bit of at->held): an fstat each,
 * on the calling thread (a member worker, as objects_dir_ident), no path
 * walked; the same majority.  A member's fstat taken right after the
 * change (at->seen[mb], mb a bit of at->seen_mask) stands in for its
 * fstat while the daemon still knows the directory there at that stamp
 * (dirstamps.h: no change of it since, of ours or one seen behind our
 * back).  -EAGAIN where that does not answer it: a member that answers
 * has no descriptor there, one is not a directory, or path is the volume
 * root (whose mode and owner its stand-in holds). */
int objects_dir_stat_at(volume *v, const char *path, const volume_dir_at *at, struct stat *st);
/* objects_stat_ident of count paths at once (rc[i]: 0 or a negative
 * errno for paths[i]), every member asked for all of them in one task on
 * its worker: the same answers, the same majority, fewer hand-offs. */
void objects_stat_many(volume *v, const char *const *paths, size_t count, struct stat *st,
                       uint64_t *ident, int *rc);
/* A directory's identity lives in this xattr of the directory on every
 * member: 8 bytes, little-endian, random, given at mkdir
 * (docs/FORMAT.md).  objects_dir_ident reads it from (dirfd, leaf) of
 * type mode with a plain call on the calling thread (a member worker):
 * 0 for anything but a directory, or a directory without one.
 * objects_stat_ident answers it for directories too. */
#define OBJECTS_IDENT_XATTR "user.ecfs.id"
uint64_t objects_dir_ident(int dirfd, const char *leaf, mode_t mode);
/* Stores ident as the identity of the directory (dirfd, leaf) on member
 * idx.  A member that keeps no xattrs goes without: its inode numbers
 * stand in (fs_nodes_ino). */
void objects_store_dir_ident(volume *v, int idx, int dirfd, const char *leaf,
                             uint64_t ident);
/* A new random identity, never 0. */
uint64_t objects_new_ident(void);
/* A count that moves whenever a size objects_stat answers may change (a
 * header written, an open file's size changed in memory): read before
 * objects_stat, what it answered holds while the count stands and no
 * member was changed or read meanwhile (attr_cache.h). */
uint64_t objects_stat_epoch(volume *v);
/* What objects_stat answers for a name whose lstat on member mb, the
 * first in service that has it, is *st, when that takes no other member
 * call: true, with a regular file's logical size filled in when it is
 * remembered (size_cache.h), or *st as is for anything else; false for a
 * regular file whose size would take its headers.  *ident: the file's
 * identity as objects_stat_ident gives it (0 for anything else). */
bool objects_stat_from(volume *v, int mb, struct stat *st, uint64_t *ident);

#endif
