/* SPDX-License-Identifier: MIT */
/*
 * The directories whose names the daemon holds whole: one made through
 * the mount (empty then) or listed from the members, every change of its
 * names since made through the daemon (which updates it here before it
 * answers the change).  A listing of such a directory is served from
 * here, with no member read (DESIGN.md section 4): a first listing after
 * the names were made costs no getdents of m + 1 members, and a lookup of
 * a name that is not there (the kernel's before every create) no stat of
 * every member.
 *
 * What is held here is what ecfs made.  A name put on a member behind the
 * daemon's back is neither listed nor found until the directory is read
 * from the members again (the next mount, or once it was dropped here); a
 * name a member lost stays listed, as a listing from the members lists
 * it.  A change that failed drops its directories, since it may have been
 * made on some members; so does everything past DIRNAMES_MAX names in all
 * (all are dropped then, and come back as they are listed again).
 * Thread-safe.
 */
#ifndef ECFS_FS_DIRNAMES_H
#define ECFS_FS_DIRNAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "listing.h"
#include "nsops.h"

/* Names held in all directories at most. */
#define DIRNAMES_MAX (256 * 1024)

/* Counts the changes: taken before a listing reads the members, given
 * back to fs_dirnames_listed. */
uint64_t fs_dirnames_generation(void);

/* A listing of directory dir read from the members: held (a reference
 * to it, which must not change from then on) if no change came between
 * generation (taken before it was read) and now.  on: the members whose
 * directory holds exactly its names (NULL: none known), and its inode
 * number on each, the key of its stamps there (dirstamps.h), with which
 * the names are kept across a remount (fs_dirsaved.h). */
void fs_dirnames_listed(uint64_t dir, listing *l, uint64_t generation, const dir_members *on);
/* dir was just made: it holds only . and .. (on: as fs_dirnames_listed). */
void fs_dirnames_made(uint64_t dir, const dir_members *on);
/* name was made in dir, of type mode (its S_IFMT bits). */
void fs_dirnames_added(uint64_t dir, const char *name, mode_t mode);
/* A change that makes name in dir, of type mode, ended with rc: added if
 * it is 0, else dir is dropped. */
void fs_dirnames_changed(uint64_t dir, const char *name, mode_t mode, int rc);
/* name is gone from dir. */
void fs_dirnames_removed(uint64_t dir, const char *name);
/* (p1, n1) was renamed to (p2, n2), flags as rename(2)'s. */
void fs_dirnames_renamed(uint64_t p1, const char *n1, uint64_t p2, const char *n2,
                         unsigned flags);
/* What is held of dir, or of every directory, is no longer known. */
void fs_dirnames_drop(uint64_t dir);
void fs_dirnames_drop_all(void);

/* True if dir is held and has no name `name` (a lookup's answer with no
 * member asked). */
bool fs_dirnames_absent(uint64_t dir, const char *name);
/* A listing of dir (listing_unref it), or NULL if its names are not held. */
listing *fs_dirnames_listing(uint64_t dir);
/* Calls fn for each directory held with members known to hold exactly
 * its names, with what is held of it (for the listings saved at
 * unmount: nothing else may change what is held meanwhile). */
void fs_dirnames_each(void (*fn)(uint64_t dir, const listing *names, const dir_members *on,
                                 void *ctx),
                      void *ctx);

#endif
