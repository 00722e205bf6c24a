/* SPDX-License-Identifier: MIT */
/*
 * What the daemon knows of its member directories' names, as stamps
 * (DESIGN.md section 4, "Listings kept across a remount").  A directory's
 * stamp on a member is what fstat says of it that changes with every
 * change of its names: inode, ctime, mtime, size and link count.  The
 * daemon knows the names behind a stamp when it read them in one listing
 * with the stamp the same before and after, or made the directory (empty
 * then), and from there on while every change of that directory on that
 * member is its own: each namespace change of memberops.c takes the stamp
 * of its directory before and after, and goes on from a known stamp only
 * if the one before is it (anything else, a change behind the daemon's
 * back included, and the directory is no longer known on that member).
 * A failed member knows none of its directories, and a member whose
 * filesystem keeps times in whole seconds knows none either.  On kernels with
 * fine-grained timestamps (Linux 6.13 and later for tmpfs, ext4, XFS and
 * btrfs) a stamp once taken is never given again by a later change; on
 * older ones a change behind the daemon's back in the same clock tick as
 * one of its own can keep the stamp.  Thread-safe.
 */
#ifndef ECFS_DIRSTAMPS_H
#define ECFS_DIRSTAMPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct dirstamp {
	uint64_t ino, size, nlink;
	int64_t ctime_sec, ctime_nsec, mtime_sec, mtime_nsec;
} dirstamp;

void dirstamp_of(const struct stat *st, dirstamp *out);
bool dirstamp_same(const dirstamp *a, const dirstamp *b);

/* The stamps of one volume's member directories (the daemon's: a volume
 * keeps them once mop_keep_dirstamps is called, memberops.h).  Every
 * function takes NULL as a set that knows nothing and keeps nothing. */
typedef struct dirstamps dirstamps;

dirstamps *dirstamps_new(void);
void dirstamps_free(dirstamps *s);
/* True if s knows a directory of member idx: a change on it then takes
 * the stamps (memberops.c). */
bool dirstamps_watching(dirstamps *s, int idx);

/* True if s knows member idx's directory of inode ino (at some stamp). */
bool dirstamps_knows(dirstamps *s, int idx, uint64_t ino);
/* The daemon knows the names of a directory of member idx at stamp st. */
void dirstamps_known(dirstamps *s, int idx, const dirstamp *st);
/* A change of a directory of member idx from stamp before to after; made
 * is false if the change failed or was not made as asked. */
void dirstamps_changed(dirstamps *s, int idx, const dirstamp *before, const dirstamp *after,
                       bool made);
/* Member idx's directories are known no more (it failed). */
void dirstamps_forget_member(dirstamps *s, int idx);
/* The stamp at which the daemon knows member idx's directory of inode
 * ino, into *st: false if it does not know it. */
bool dirstamps_last(dirstamps *s, int idx, uint64_t ino, dirstamp *st);

#endif
