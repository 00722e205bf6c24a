/* SPDX-License-Identifier: MIT */
/*
 * The majority rule of votes.h, and the log of the copies it outvotes.
 */
#include "votes.h"

#include "log.h"
#include "volume_internal.h"

static bool newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec : a->tv_nsec > b->tv_nsec;
}

int votes_winner(int n, uint64_t voters, const struct timespec *ctimes, votes_same_fn same,
                 const void *ctx)
{
	int best = -1, best_votes = 0, best_newest = -1;

	for (int a = 0; a < n; a++) {
		if (!(voters >> a & 1))
			continue;
		int votes = 0, newest = a;
		for (int b = 0; b < n; b++)
			if (voters >> b & 1 && same(ctx, a, b)) {
				votes++;
				if (newer(&ctimes[b], &ctimes[newest]))
					newest = b;
			}
		if (votes > best_votes ||
		    (votes == best_votes && newer(&ctimes[newest], &ctimes[best_newest]))) {
			best = a;
			best_votes = votes;
			best_newest = newest;
		}
	}
	return best;
}

void votes_wrong_copy(volume *v, int mb, const char *path, const char *held,
                      const char *majority)
{
	uint64_t *told = volume_wrong_copies(v);
	if (__atomic_fetch_or(told, 1ull << mb, __ATOMIC_RELAXED) >> mb & 1)
		return;
	ecfs_log(LOG_WARNING, "member %d (%s) holds %s with %s where the majority holds %s: "
	         "not believed, ecfs-fsck -y repairs it (further wrong copies on this member "
	         "are not logged)", mb, volume_member_path(v, mb), path, held, majority);
}
