/* SPDX-License-Identifier: MIT */
/*
 * What the parts of the stripe layer share and nothing else uses: the
 * fetch task that reads and judges one position's strips, and the helpers
 * that stripe.c (buffers, members, headers, recovery), stripe_commit.c,
 * stripe_fetch.c and stripe_hedge.c call across their files.
 */
#ifndef ECFS_STRIPE_INTERNAL_H
#define ECFS_STRIPE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memberio.h"
#include "stripe.h"

/* One position's share of a fetch: stripes [s0, s0+cnt) read and judged. */
typedef struct fetch_task {
	stripe_ctx *c;
	int member, pos, cnt;
	uint64_t s0;
	uint8_t *dest[STRIPE_FETCH_RUN];
	strip_judgment st[STRIPE_FETCH_RUN];
	bool from_head; /* stripe 0 may come from stripe_ctx.head */
	/* Version 3, one stripe: read and judge only bytes [part_off, part_off
	 * + part_len) of the strip, by its tags (0: the whole strip). */
	uint64_t part_off, part_len;
	int err;
	/* What the read needs of the context, taken when it is asked, so
	 * that a hedged read's late task reads nothing the caller changes. */
	int fd;
	chunk_header hdr;
	bool done;      /* hedged reads: set once the task has run (atomic) */
} fetch_task;

/* ---- stripe.c ---- */

/* k strips to pack (commits) or unpack (fetches) short stripes through,
 * allocated the first time a short stripe is met. */
uint8_t *stripe_pack_buffer(stripe_ctx *c, uint8_t **buf);
/* Before anything is written: what was read at open may no longer be so. */
void stripe_forget_heads(stripe_ctx *c);
/* The usable members (bit i: member i). */
uint64_t stripe_usable_members(stripe_ctx *c);
/* One stage of per-member calls, fn(args[mb]) for every member mb whose
 * args[mb] is set, in parallel: on the relay when small
 * (mio_batch_init_small), else on the members' workers, but with here
 * the calls of members that cannot wait (mop_writes_here) on the calling
 * thread.  Returns the lost mask (mio_batch_wait); *stuck, unless NULL,
 * takes mio_batch_stuck. */
uint64_t stripe_run_stage(stripe_ctx *c, bool small, bool here, void (*fn)(void *),
                          void *const args[STRIPE_MAX_N], uint64_t *stuck);
/* A pread of member mb's chunk from what open read of it (all of it). */
ssize_t stripe_head_pread(const stripe_ctx *c, int mb, void *buf, size_t len, uint64_t off);

/* ---- stripe_fetch.c ---- */

/* Sets task t up to read stripes [s0, s0+cnt) of position pos. */
void stripe_fetch_task_init(stripe_ctx *c, fetch_task *t, int pos, uint64_t s0, int cnt);
/* Reads and judges the task's strips (a member worker's job). */
void stripe_fetch_member(void *arg);
/* Fetches stripes [s0, s0+cnt) of the positions in mask (bit j = position
 * j) on their members in parallel; dest[j][i] receives strip j of stripe
 * s0+i.  With from_head, a lone stripe 0 comes from stripe_ctx.head.
 * Returns the positions the bound cut (stripe_fetch_bounded): unread. */
uint64_t stripe_fetch_positions(stripe_ctx *c, uint64_t s0, int cnt, uint64_t mask,
                                uint8_t *(*dest)[STRIPE_FETCH_RUN], fetch_task *tasks,
                                bool from_head);
/* The answers a read around slow members needs before its vote can stand. */
int stripe_around_need(const stripe_ctx *c);
/* Stripe i of the fetch, read around the positions in `skipped`: true if
 * its vote stands whatever those strips hold (reader_rules.h). */
bool stripe_vote_settled(const fetch_task *tasks, int n, int k, int i, uint64_t skipped);
/* Votes stripe s, stripe i of the fetch in tasks, and decodes its wanted
 * data strips into dest[j][i] (stripe_fetch.c says how). */
int stripe_vote_and_decode(stripe_ctx *c, uint64_t s, uint64_t want, const fetch_task *tasks,
                           uint8_t *(*dest)[STRIPE_FETCH_RUN], int i, uint64_t *len);

/* ---- stripe_hedge.c ---- */

/* Stripes [s0, s0+cnt) read around a slow member, asking the positions
 * in first and, if they are late, the one in spare (stripe_hedge.c). */
int stripe_fetch_hedged(stripe_ctx *c, uint64_t s0, int cnt, uint64_t want, uint64_t first,
                        uint64_t spare, uint8_t *(*out)[STRIPE_FETCH_RUN], uint64_t *lens);
/* The bounded fetch of stripe_fetch_positions (stripe_hedge.c says how),
 * leaving the tasks of the positions in keep as they are: the positions
 * cut, or -1 if it could not be made. */
int64_t stripe_fetch_bounded(stripe_ctx *c, uint64_t s0, int cnt, uint64_t mask, uint64_t keep,
                             uint8_t *(*dest)[STRIPE_FETCH_RUN], fetch_task *tasks);
/* Waits for the late answers, then frees every hedge. */
void stripe_drop_hedges(stripe_ctx *c);

#endif
