/* SPDX-License-Identifier: MIT */
/*
 * Room on the members (docs/DESIGN.md section 9).  A full volume is the
 * writer's problem, not a member failure: every member keeps a reserve
 * that only the operations which free space or keep the volume consistent
 * may use (unlink, rmdir, rename, truncate, the intent log, repair), and
 * the operations that take space claim it first.  A claim that would eat
 * into some member's reserve is refused with ENOSPC before any member is
 * written, so a full volume stays healthy and `rm` always has room.
 *
 * This module is the accounting only: the free space each member last
 * reported (statvfs), what was claimed since, and the verdict.  The
 * volume asks the members (volume_claim_space, volume.h) when the verdict
 * says the figures are stale.  Thread-safe.
 */
#ifndef ECFS_SPACE_H
#define ECFS_SPACE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/statvfs.h>

typedef struct space space;

/* How long a member's reported free space is trusted without asking. */
#define SPACE_REFRESH_MS 1000
/* What a namespace entry (a directory block, an inode, a chunk header)
 * is taken to cost on each member. */
#define SPACE_ENTRY_COST 8192u

typedef enum space_verdict {
	SPACE_OK,    /* claimed */
	SPACE_STALE, /* ask the members again (space_update), then claim again */
	SPACE_FULL,  /* a member would dip into its reserve: ENOSPC */
} space_verdict;

space *space_new(int n);
void space_free(space *s);

/* The reserve kept on a member filesystem of fs_bytes: 1/32 of it, at
 * least 8 MiB and at most 1 GiB, but never more than a quarter of it. */
uint64_t space_reserve_for(uint64_t fs_bytes);

/* Records what member idx reported at now_ms (monotonic milliseconds),
 * which also forgets the claims made on it before. */
void space_update(space *s, int idx, const struct statvfs *st, int64_t now_ms);

/* Claims bytes on every member in the mask.  Without `fresh` (figures
 * asked for just now), a member whose figures are older than
 * SPACE_REFRESH_MS, unknown, or short of the claim gives SPACE_STALE;
 * with it, a short member gives SPACE_FULL.  Nothing is claimed unless
 * the verdict is SPACE_OK. */
space_verdict space_claim(space *s, uint64_t members, uint64_t bytes, int64_t now_ms, bool fresh);

/* What member idx can still take above its reserve (0 when it is in the
 * reserve or unknown), and its filesystem size, from the last figures
 * less the claims since. */
uint64_t space_room(space *s, int idx);

/* Records whether the last verdict was SPACE_FULL; true if that changed
 * (so a full volume is logged once, and again once it has room). */
bool space_set_full(space *s, bool full);

/* ENOSPC and EDQUOT from a member: it is full, not broken.  The operation
 * fails with that errno and the member stays in service. */
static inline bool space_error(int rc)
{
	return rc == -ENOSPC || rc == -EDQUOT;
}

#endif
