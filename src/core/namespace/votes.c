/* SPDX-License-Identifier: MIT */
/*
 * The majority rule of votes.h.
 */
#include "votes.h"

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
