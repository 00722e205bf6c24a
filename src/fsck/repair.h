/* SPDX-License-Identifier: MIT */
/*
 * Offline check and repair of one regular file: its chunk headers on every
 * member, every strip record and checksum, the generation vote of every
 * stripe and (deep) the parity, and the rebuild of missing, corrupt or
 * stale chunks and strips from the surviving strips.  Used by ecfs-fsck.
 */
#ifndef ECFS_REPAIR_H
#define ECFS_REPAIR_H

#include <stdint.h>
#include <sys/types.h>

#include "fsck.h"

/* Checks the file at path (a volume path, "/a/b").  present has bit i set
 * for every healthy member that holds a regular file at path; quiet has bit
 * i for members whose absence was already reported (a missing parent
 * directory).  With f->o.repair, missing chunks are created (mode 0600,
 * *created gets their bits: the caller sets their metadata), bad headers
 * rewritten, bad strips rebuilt at the stripe's own generation; surviving
 * good strips are never written.  Problems go to fsck_problem().  Returns
 * 0, or a negative errno for an operational error. */
int repair_file(fsck *f, const char *path, uint64_t present, uint64_t quiet,
                uint64_t *created);
/* What the walk found of a member's chunk (repair_file_at). */
typedef struct repair_seen {
	off_t size;    /* -1: unknown */
	nlink_t nlink; /* 0: unknown */
} repair_seen;

/* The same, offline, with the file's parent directory already open on the
 * members (dfd[mb], -1 where it is not), its name there and what the walk
 * found of each member's chunk (seen[mb]): the chunks are opened and
 * created in those, not found again from the path, a chunk read to its
 * size is known to end there, and one with a single link has no other
 * path to note. */
int repair_file_at(fsck *f, const char *path, const int *dfd, const char *name,
                   const repair_seen *seen, uint64_t present, uint64_t quiet,
                   uint64_t *created);

/* Frees the buffers repair_file() keeps from one file to the next. */
void repair_release(fsck *f);

#endif
