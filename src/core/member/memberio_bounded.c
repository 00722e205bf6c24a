/* SPDX-License-Identifier: MIT */
/*
 * Calls bounded by a timeout before there are member workers (memberio.h,
 * mio_bounded): each on a thread of its own, which the caller waits for
 * until its deadline.  One that has not returned by then is abandoned:
 * its thread frees the handle, and the caller's argument through late(),
 * once the call ever returns.  And bounded reads on the workers
 * (mio_batch_bound, memberio_bound_ms): the one rule of how long a read
 * waits for a member, and the batches that go on without it.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memberio.h"
#include "memberio_private.h"

int64_t mio_now_ms(void)
{
	return memberio_now_ns() / 1000000;
}

struct mio_bounded {
	pthread_mutex_t lock; /* guards done, abandoned; order: a leaf */
	pthread_cond_t done_cond;
	void (*fn)(void *);
	void (*late)(void *);
	void *arg;
	bool done, abandoned;
};

static void bounded_free(mio_bounded *b)
{
	pthread_cond_destroy(&b->done_cond);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static void *bounded_main(void *p)
{
	mio_bounded *b = p;

	b->fn(b->arg);
	pthread_mutex_lock(&b->lock);
	bool abandoned = b->abandoned;
	b->done = true;
	pthread_cond_signal(&b->done_cond);
	pthread_mutex_unlock(&b->lock);
	if (abandoned) {
		/* its caller went on long ago: what arg holds is this thread's */
		if (b->late)
			b->late(b->arg);
		bounded_free(b);
	}
	return NULL;
}

mio_bounded *mio_bounded_start(void (*fn)(void *), void (*late)(void *), void *arg)
{
	mio_bounded *b = calloc(1, sizeof(*b));
	pthread_t t;

	if (b) {
		pthread_mutex_init(&b->lock, NULL);
		pthread_cond_init(&b->done_cond, NULL);
		b->fn = fn;
		b->late = late;
		b->arg = arg;
	}
	if (!b || pthread_create(&t, NULL, bounded_main, b) != 0) {
		if (b)
			bounded_free(b);
		fn(arg); /* no thread: inline, unbounded */
		return NULL;
	}
	pthread_detach(t);
	return b;
}

bool mio_bounded_wait(mio_bounded *b, int64_t deadline_ms)
{
	if (!b)
		return true;
	pthread_mutex_lock(&b->lock);
	while (!b->done) {
		if (!deadline_ms) {
			pthread_cond_wait(&b->done_cond, &b->lock);
			continue;
		}
		int64_t left = deadline_ms - mio_now_ms();
		if (left <= 0)
			break;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += left / 1000;
		until.tv_nsec += (left % 1000) * 1000000;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&b->done_cond, &b->lock, &until);
	}
	bool done = b->done;
	b->abandoned = !done;
	pthread_mutex_unlock(&b->lock);
	if (done)
		bounded_free(b);
	return done;
}

int64_t mio_deadline_ms(unsigned timeout_ms)
{
	return timeout_ms ? mio_now_ms() + timeout_ms : 0;
}

/* Bounded reads (memberio.h): a batch whose waiter goes on without the
 * tasks of members past their bound, which mio_claim keeps off its memory. */
void mio_batch_bound(mio_batch *b)
{
	b->bounded = true;
	b->asked = b->finished = 0;
	memset(b->settle, MIO_OPEN, sizeof(b->settle));
}

void mio_batch_by_release(mio_batch *b)
{
	b->by_release = true;
	b->refs = 1;
}

void mio_batch_release(mio_batch *b, void (*on_idle)(void *), void *arg)
{
	b->on_idle = on_idle;
	b->idle_arg = arg;
	if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
		on_idle(arg);
}

unsigned memberio_bound_ms(memberio *mio, int idx)
{
	uint64_t ms = MEMBERIO_BOUND_FACTOR * memberio_latency_us(mio, idx) / 1000;
	return ms > MEMBERIO_BOUND_MIN_MS ? (unsigned)ms : MEMBERIO_BOUND_MIN_MS;
}

void memberio_give_up_at_bound(memberio *mio)
{
	__atomic_store_n(&mio->at_bound, true, __ATOMIC_RELAXED);
}

unsigned mio_give_up_ms(memberio *mio, worker *w, int idx)
{
	unsigned ms = mio->timeout_ms;

	if (__atomic_load_n(&mio->at_bound, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&w->changes, __ATOMIC_RELAXED)) {
		unsigned bound = memberio_bound_ms(mio, idx);
		ms = bound < ms ? bound : ms;
	}
	return ms;
}

unsigned memberio_first_wait_ms(unsigned timeout_ms, bool at_bound)
{
	return at_bound && timeout_ms > MEMBERIO_BOUND_MIN_MS ? MEMBERIO_BOUND_MIN_MS : timeout_ms;
}

/* True if w is in a call that began over bound_ms ago. */
static bool call_older(worker *w, int64_t now_ms, unsigned bound_ms)
{
	int64_t since = __atomic_load_n(&w->io_since, __ATOMIC_ACQUIRE);
	return since > 0 && now_ms - since >= (int64_t)bound_ms;
}

bool memberio_stalled(memberio *mio, int idx)
{
	int64_t now = mio_now_ms();
	unsigned bound = memberio_bound_ms(mio, idx);

	if (!mio->timeout_ms)
		return false;
	if (call_older(mio->w[idx], now, bound))
		return true;
	pthread_mutex_lock(&mio->rlock);
	worker *r = mio->relay;
	bool stalled = r && r->run_idx == idx && call_older(r, now, bound);
	pthread_mutex_unlock(&mio->rlock);
	return stalled;
}

bool memberio_relay_stalled(memberio *mio)
{
	if (!mio->timeout_ms)
		return false;
	pthread_mutex_lock(&mio->rlock);
	worker *r = mio->relay;
	bool stalled = r && r->run_idx >= 0 &&
	               call_older(r, mio_now_ms(), memberio_bound_ms(mio, r->run_idx));
	pthread_mutex_unlock(&mio->rlock);
	return stalled;
}

bool mio_claim(void)
{
	worker *w = memberio_self();
	mio_task *t = w ? w->current : NULL;

	if (!t || !t->batch->bounded)
		return true;
	uint8_t open = MIO_OPEN, *at = &t->batch->settle[t->idx];
	return __atomic_compare_exchange_n(at, &open, MIO_CLAIMED, false, __ATOMIC_SEQ_CST,
	                                   __ATOMIC_SEQ_CST) ||
	       open == MIO_CLAIMED;
}

uint64_t mio_batch_wait_bounded(memberio *mio, mio_batch *b)
{
	unsigned bound = 0;
	uint64_t cut = 0;

	for (int i = 0; i < mio->n; i++)
		if (b->asked >> i & 1) {
			unsigned ms = memberio_bound_ms(mio, i);
			bound = ms > bound ? ms : bound;
		}
	if (!mio->timeout_ms) {
		mio_batch_wait(b); /* no timeout: no bound either */
		return 0;
	}
	if (mio_batch_wait_left_until(b, 0, memberio_now_ns() + (int64_t)bound * 1000000))
		return 0;
	uint64_t open = b->asked & ~__atomic_load_n(&b->finished, __ATOMIC_SEQ_CST);
	for (int i = 0; i < mio->n; i++) {
		uint8_t st = MIO_OPEN;
		if ((open >> i & 1) &&
		    __atomic_compare_exchange_n(&b->settle[i], &st, MIO_CUT, false,
		                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			cut |= 1ull << i;
	}
	/* the claimed ones have only their own work left, no member call */
	while (b->asked & ~cut & ~__atomic_load_n(&b->finished, __ATOMIC_SEQ_CST))
		sched_yield();
	return cut;
}

/* Batches of calls (mio_batch_bound_calls): a task is CLAIMED while it
 * runs its own code, which may write its caller's memory, and OPEN while
 * it waits for a member: queued, or in a member call.  Only an open one
 * is cut. */
void mio_batch_bound_calls(mio_batch *b)
{
	mio_batch_bound(b);
	b->calls = true;
}

bool mio_task_starts(mio_task *t)
{
	uint8_t open = MIO_OPEN;

	return !t || !t->batch->calls ||
	       __atomic_compare_exchange_n(&t->batch->settle[t->idx], &open, MIO_CLAIMED, false,
	                                   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

void mio_call_opens(mio_task *t)
{
	uint8_t claimed = MIO_CLAIMED;

	/* a CAS, not a store: a call inside a call must not undo a cut */
	if (t && t->batch->calls)
		__atomic_compare_exchange_n(&t->batch->settle[t->idx], &claimed, MIO_OPEN, false,
		                            __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

bool mio_call_closes(mio_task *t)
{
	uint8_t open = MIO_OPEN;

	/* (claimed already: the end of a call inside a call) */
	return !t || !t->batch->calls ||
	       __atomic_compare_exchange_n(&t->batch->settle[t->idx], &open, MIO_CLAIMED, false,
	                                   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ||
	       open == MIO_CLAIMED;
}

/* The members of `left` whose tasks in b wait on a stalled member or
 * relay, cut now (those whose cut wins over their claim). */
static uint64_t cut_stalled(memberio *mio, mio_batch *b, uint64_t left)
{
	bool relay = memberio_relay_stalled(mio);
	uint64_t cut = 0;

	for (int i = 0; i < mio->n; i++) {
		uint8_t open = MIO_OPEN;
		if ((left >> i & 1) && ((relay && (b->relayed >> i & 1)) || memberio_stalled(mio, i)) &&
		    __atomic_compare_exchange_n(&b->settle[i], &open, MIO_CUT, false,
		                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			cut |= 1ull << i;
	}
	return cut;
}

uint64_t mio_batch_wait_calls(memberio *mio, mio_batch *b)
{
	/* how often a wait looks for a stalled member: a small share of the
	 * least bound */
	const int64_t look_ns = MEMBERIO_BOUND_MIN_MS / 20 * 1000000ll;
	uint64_t cut = 0;

	/* as any small batch's caller: awake a while for the relay */
	if (mio_spin_for_relay(b, 0))
		return 0;
	for (;;) {
		uint64_t finished = __atomic_load_n(&b->finished, __ATOMIC_SEQ_CST);
		uint64_t left = b->asked & ~cut & ~finished;
		if (!left)
			return cut;
		/* until only the cut ones may be pending; looked at after a
		 * wait, so a query that ends at once takes no lock of the relay */
		if (mio_batch_wait_left_until(b, __builtin_popcountll(cut & ~finished),
		                              memberio_now_ns() + look_ns))
			continue;
		cut |= cut_stalled(mio, b, left);
	}
}
