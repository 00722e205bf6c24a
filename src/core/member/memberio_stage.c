/* SPDX-License-Identifier: MIT */
/*
 * One stage of per-member calls (memberio_run_stage): the calls that can
 * wait handed to the members' workers (or the relay), the ones that
 * cannot run on the calling thread, then the wait for the batch.
 */
#include "memberio.h"

/* The calls of here run on the calling thread after the others are
 * handed out, so that the workers (or the relay) run theirs meanwhile:
 * a call that cannot wait (a copy into or out of memory) costs less than
 * the hand-off to a worker and back would. */
uint64_t memberio_run_stage(memberio *mio, bool small, int n, void (*fn)(void *),
                            void *const args[], uint64_t here, uint64_t *stuck)
{
	uint64_t mine = 0;
	mio_batch b;

	if (small)
		mio_batch_init_small(mio, &b);
	else
		mio_batch_init_caller(mio, &b);
	for (int idx = 0; idx < n; idx++) {
		if (!args[idx])
			continue;
		if (here >> idx & 1)
			mine |= 1ull << idx;
		else
			memberio_submit(mio, idx, &b, fn, args[idx]);
	}
	for (int idx = 0; idx < n; idx++)
		if (mine >> idx & 1)
			fn(args[idx]);
	uint64_t lost = mio_batch_wait(&b);
	if (stuck)
		*stuck = mio_batch_stuck(&b);
	return lost;
}
