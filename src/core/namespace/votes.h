/* SPDX-License-Identifier: MIT */
/*
 * The one rule that settles an attribute on which the members' copies of
 * an object differ, for ecfs-fsck and the daemon alike: the value held by
 * the most members wins, a tie goes to the copy with the newest ctime
 * (the last change made).  A member whose copy differs from the winner
 * holds a wrong copy: it is repaired (ecfs-fsck) or logged, never
 * believed.
 */
#ifndef ECFS_VOTES_H
#define ECFS_VOTES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "volume.h"

/* True if copies a and b (member indices) hold the same value of the
 * attribute voted on; ctx is the caller's. */
typedef bool (*votes_same_fn)(const void *ctx, int a, int b);

/* The member whose value wins among voters (a mask over n members);
 * ctimes[mb] is member mb's copy's ctime.  -1 if there is no voter. */
int votes_winner(int n, uint64_t voters, const struct timespec *ctimes, votes_same_fn same,
                 const void *ctx);
/* Member mb holds a wrong copy of path (what it holds and what the
 * majority holds, in words): logged the first time for each member in
 * a mount, and not believed; ecfs-fsck -y repairs it.  Not rewritten
 * here: a change still reaching the members looks the same for a while. */
void votes_wrong_copy(volume *v, int mb, const char *path, const char *held,
                      const char *majority);

#endif
