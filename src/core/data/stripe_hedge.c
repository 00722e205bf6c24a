/* SPDX-License-Identifier: MIT */
/*
 * Hedged reads (stripe_internal.h): the lifetimes of reads around a slow
 * member that ask one member more than they need and go on with the
 * first answers that settle the stripes' votes.
 */
#include "stripe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "memberio.h"
#include "stripe_internal.h"
#include "volume_internal.h"

/* A read around a slow member asks the k other members it needs, and if
 * they are late, one more, and goes on with the first answers that settle
 * it, so that a straggler among the fast members does not set the read's
 * time.  The answer that comes last must land where nobody looks, so a
 * hedge's tasks read into buffers of its own, with their own copy of what
 * they read with (stripe_fetch_task_init); the context keeps a hedge until
 * its last answer is in, ends it at a later read (reap_hedges), and waits
 * for it before the chunks' descriptors close (stripe_wait_late_reads). */
typedef struct stripe_hedge {
	mio_batch batch;
	fetch_task *tasks;         /* n, by position */
	uint8_t *bufs;             /* n * cap strips: position j's strip i at j * cap + i */
	int cap;                   /* stripes per position bufs holds */
	struct stripe_hedge *next; /* stripe_ctx.late */
} stripe_hedge;

static void hedge_free(stripe_hedge *h)
{
	g_free(h->tasks);
	free(h->bufs);
	g_free(h);
}

/* A hedge whose last answer is in: ended, and kept for the next (one is
 * enough, since hedges rarely overlap). */
static void hedge_end(stripe_ctx *c, stripe_hedge *h)
{
	mio_batch_wait(&h->batch);
	if (c->spare_hedge) {
		hedge_free(h);
		return;
	}
	h->next = NULL;
	c->spare_hedge = h;
}

/* A hedge done with: ended if its last answer is in, else kept as late
 * until it is. */
static void hedge_keep(stripe_ctx *c, stripe_hedge *h)
{
	if (mio_batch_idle(&h->batch)) {
		hedge_end(c, h);
	} else {
		h->next = c->late;
		c->late = h;
	}
}

/* Ends the hedges whose last answer is in, and waits for the others but
 * the `keep` newest (each holds its buffers until its last answer). */
#define STRIPE_HEDGES_LATE 4
static void reap_hedges(stripe_ctx *c, int keep)
{
	int kept = 0;

	for (stripe_hedge **pp = &c->late; *pp;) { /* newest first */
		stripe_hedge *h = *pp;
		if (kept < keep && !mio_batch_idle(&h->batch)) {
			kept++;
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		hedge_end(c, h);
	}
}

void stripe_wait_late_reads(stripe_ctx *c)
{
	reap_hedges(c, 0);
}

/* Waits for the late answers, then frees every hedge. */
void stripe_drop_hedges(stripe_ctx *c)
{
	reap_hedges(c, 0);
	if (c->spare_hedge)
		hedge_free(c->spare_hedge);
	c->spare_hedge = NULL;
}

/* A hedge for runs of cnt stripes, with buffers for them if bufs, or
 * NULL (out of memory). */
static stripe_hedge *hedge_get(stripe_ctx *c, int cnt, bool bufs)
{
	stripe_hedge *h;

	reap_hedges(c, STRIPE_HEDGES_LATE - 1);
	h = c->spare_hedge;
	c->spare_hedge = NULL;
	if (h && bufs && h->bufs && h->cap < cnt) {
		free(h->bufs);
		h->bufs = NULL;
	}
	if (!h) {
		h = g_new0(stripe_hedge, 1);
		h->tasks = g_new(fetch_task, c->lay.n);
	}
	if (bufs && !h->bufs) {
		h->cap = cnt;
		if (posix_memalign((void **)&h->bufs, 4096,
		                   c->lay.strip_size * (size_t)c->lay.n * (size_t)cnt)) {
			h->bufs = NULL;
			hedge_free(h);
			return NULL;
		}
	}
	return h;
}

static void hedged_fetch_member(void *arg)
{
	fetch_task *t = arg;

	stripe_fetch_member(t);
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
}

/* Sets up the hedge's tasks for stripes [s0, s0+cnt), each position's
 * strips landing in dest, or without dest in the hedge's buffers, and
 * asks those in mask. */
static void hedge_ask(stripe_ctx *c, stripe_hedge *h, uint64_t s0, int cnt, uint64_t mask,
                      uint8_t *(*dest)[STRIPE_FETCH_RUN])
{
	for (int pos = 0; pos < c->lay.n; pos++) {
		fetch_task *t = &h->tasks[pos];
		stripe_fetch_task_init(c, t, pos, s0, cnt);
		for (int i = 0; i < cnt; i++)
			t->dest[i] = dest ? dest[pos][i]
			                  : h->bufs + ((size_t)pos * (size_t)h->cap + (size_t)i) *
			                                c->lay.strip_size;
		if (mask >> pos & 1)
			memberio_submit(volume_memberio(c->v), t->member, &h->batch,
			                hedged_fetch_member, t);
	}
}

/* What the hedge's answers say so far: snap gets the tasks that have run
 * and those given up (erasures); the others read as unread, but the
 * positions in keep, read elsewhere, which are left as they are.  Returns
 * the positions answered. */
static uint64_t hedge_answers(stripe_ctx *c, stripe_hedge *h, uint64_t asked, uint64_t lost,
                              uint64_t keep, fetch_task *snap)
{
	uint64_t answered = 0;

	for (int pos = 0; pos < c->lay.n; pos++) {
		fetch_task *t = &h->tasks[pos];
		if (keep >> pos & 1)
			continue;
		if ((asked >> pos & 1) && !(lost >> t->member & 1) &&
		    __atomic_load_n(&t->done, __ATOMIC_ACQUIRE)) {
			snap[pos] = *t;
			answered |= 1ull << pos;
			continue;
		}
		stripe_fetch_task_init(c, &snap[pos], pos, t->s0, t->cnt);
		if ((asked >> pos & 1) && (lost >> snap[pos].member & 1)) {
			snap[pos].err = -ETIMEDOUT; /* given up (memberio.h) */
			for (int i = 0; i < t->cnt; i++)
				snap[pos].st[i].v = STRIP_ERR;
			answered |= 1ull << pos;
		}
	}
	return answered;
}

/* When the spare is asked: once the positions in mask are late for a
 * read of cnt strips each (memberio_late_us). */
static int64_t hedge_deadline_ns(stripe_ctx *c, uint64_t mask, int cnt)
{
	uint64_t members = 0;

	for (int pos = 0; pos < c->lay.n; pos++)
		if (mask >> pos & 1)
			members |= 1ull << layout_member_of(&c->lay, pos);
	uint64_t us = memberio_late_us(volume_memberio(c->v), members,
	                               c->lay.strip_size * (size_t)cnt);
	return (g_get_monotonic_time() + (int64_t)us) * 1000;
}

/* Every stripe of the hedge's run stands on the answers in. */
static bool hedge_settled(const fetch_task *snap, int n, int k, int cnt, uint64_t unanswered)
{
	for (int i = 0; i < cnt; i++)
		if (!stripe_vote_settled(snap, n, k, i, unanswered))
			return false;
	return true;
}

/* Votes and decodes stripe i of the hedge's run from the answers in snap:
 * each wanted data strip j goes to out[j][i], decoded there if it is not
 * among the answers; *len as stripe_vote_and_decode sets it. */
static int hedge_decode(stripe_ctx *c, const fetch_task *snap, uint64_t answered, uint64_t want,
                        int i, uint8_t *(*out)[STRIPE_FETCH_RUN], uint64_t *len)
{
	uint8_t *dest[STRIPE_MAX_N][STRIPE_FETCH_RUN];

	for (int j = 0; j < c->lay.n; j++) {
		bool in = answered >> j & 1, wanted = j < c->lay.k && (want >> j & 1);
		/* a late strip's buffer is the late task's: never a decode's */
		dest[j][i] = in ? snap[j].dest[i] : wanted ? out[j][i] : NULL;
	}
	int rc = stripe_vote_and_decode(c, snap[0].s0 + (uint64_t)i, want, snap, dest, i, len);
	for (int j = 0; j < c->lay.k && rc == 0; j++)
		if ((want >> j & 1) && dest[j][i] != out[j][i])
			memcpy(out[j][i], dest[j][i], c->lay.strip_size);
	return rc;
}

/* Stripes [s0, s0+cnt) read around a slow member: the positions in first
 * (as many as stripe_around_need) are asked; if they have not all answered by
 * hedge_deadline_ns, the position in spare is asked too.  The read goes
 * on as soon as the answers in settle every stripe's vote whatever the
 * others hold (stripe_vote_settled); a late one is left to the hedge.  Returns
 * 1 with each wanted data strip j of stripe i in out[j][i] and the
 * stripe's stored length in lens[i] (stripe_vote_and_decode), 0 if a vote did
 * not stand on every answer (or no hedge could be had: the caller reads
 * every position), or a negative errno. */
int stripe_fetch_hedged(stripe_ctx *c, uint64_t s0, int cnt, uint64_t want, uint64_t first,
                        uint64_t spare, uint8_t *(*out)[STRIPE_FETCH_RUN], uint64_t *lens)
{
	int n = c->lay.n, k = c->lay.k, rc = 0;
	uint64_t all = (1ull << n) - 1, asked = first, answered = 0;
	stripe_hedge *h = hedge_get(c, cnt, true);

	if (!h)
		return 0;
	mio_batch_init_each(&h->batch);
	hedge_ask(c, h, s0, cnt, first, NULL);
	if (!volume_settings(c->v)->no_hedge &&
	    !mio_batch_wait_left_until(&h->batch, 0, hedge_deadline_ns(c, first, cnt))) {
		fetch_task *t = &h->tasks[__builtin_ctzll(spare)];
		memberio_submit(volume_memberio(c->v), t->member, &h->batch, hedged_fetch_member, t);
		asked |= spare;
		volume_count_hedged(c->v);
	}
	fetch_task *snap = g_new(fetch_task, n);
	int need = stripe_around_need(c);
	for (int left = __builtin_popcountll(asked) - need; left >= 0 && rc == 0; left--) {
		uint64_t lost = mio_batch_wait_left(&h->batch, left);
		answered = hedge_answers(c, h, asked, lost, 0, snap);
		rc = hedge_settled(snap, n, k, cnt, all & ~answered);
	}
	for (int i = 0; i < cnt && rc == 1; i++)
		if (hedge_decode(c, snap, answered, want, i, out, &lens[i]) < 0)
			rc = -EIO;
	g_free(snap);
	hedge_keep(c, h);
	return rc;
}

/* The bounded fetch (stripe_fetch_positions with a member timeout): the
 * positions in mask asked, each strip landing straight in dest once its
 * task claims it (stripe_fetch_member), and waited for no longer than
 * the members' bound (mio_batch_wait_bounded).  A position cut there is
 * unread for this fetch (STRIP_UNREAD: an erasure, never a failure of its
 * member) while its task finishes
 * in the background as a late read, without touching dest.  tasks gets
 * what was read (the positions in keep, read on the calling thread, are
 * left as they are); returns the positions cut, or -1 if no hedge could
 * be had (out of memory). */
int64_t stripe_fetch_bounded(stripe_ctx *c, uint64_t s0, int cnt, uint64_t mask, uint64_t keep,
                             uint8_t *(*dest)[STRIPE_FETCH_RUN], fetch_task *tasks)
{
	memberio *mio = volume_memberio(c->v);
	stripe_hedge *h = hedge_get(c, cnt, false);
	uint64_t cut_pos = 0;

	if (!h)
		return -1;
	mio_batch_init(&h->batch);
	mio_batch_bound(&h->batch);
	hedge_ask(c, h, s0, cnt, mask, dest);
	uint64_t cut = mio_batch_wait_bounded(mio, &h->batch);
	uint64_t gone = cut | __atomic_load_n(&h->batch.lost, __ATOMIC_ACQUIRE);
	hedge_answers(c, h, mask, gone, keep, tasks);
	for (int pos = 0; pos < c->lay.n; pos++)
		if (mask >> pos & 1 && cut >> tasks[pos].member & 1) {
			/* not read, rather than failed: the member stays in service */
			stripe_fetch_task_init(c, &tasks[pos], pos, s0, cnt);
			cut_pos |= 1ull << pos;
		}
	hedge_keep(c, h);
	return (int64_t)cut_pos;
}

