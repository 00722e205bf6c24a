/* SPDX-License-Identifier: MIT */
/*
 * The vote and the decode of one stripe (stripe_decode.h): the one place
 * the reader's rules are turned into erasures and the erasures into
 * strips, for the stripe layer, journal recovery and repair alike.
 */
#include "stripe_decode.h"

#include <assert.h>

void stripe_vote_take(const strip_judgment *st, int n, int k, int m, uint64_t s,
                      uint64_t durable, uint64_t ignore, stripe_vote *out)
{
	uint64_t best;
	int votes = rules_vote(st, n, k, &best);

	*out = (stripe_vote){ .outcome = STRIPE_VOTED, .best = best };
	if (votes < k)
		out->outcome = rules_first_write_cut_short(st, n, m, s, durable, ignore)
		               ? STRIPE_CUT_SHORT : STRIPE_LOST;
	for (int j = 0; j < n; j++) {
		if (!rules_strip_current(&st[j], best))
			out->stale |= 1ull << j;
		else if (st[j].v == STRIP_GOOD)
			out->size = st[j].size;
	}
}

int stripe_decode_erased(const ec_code *code, uint8_t *const *blocks, int n, uint64_t erased,
                         size_t len)
{
	int list[64], ne = 0;

	assert(n <= 64);
	for (int j = 0; j < n; j++)
		if (erased >> j & 1)
			list[ne++] = j;
	return ne ? ec_decode(code, blocks, list, ne, len) : 0;
}
