/* SPDX-License-Identifier: MIT */
/*
 * Member worker threads and the watchdog of the member I/O timeout.  A
 * worker runs tasks from its queue one after the other and never waits
 * for anything but its queue, so batches that span members cannot
 * deadlock.  The queue node is malloc'd per submission (a few hundred per
 * second at most, since one task moves a whole run of strips).
 *
 * A worker's io_since is the time its current member call began, 0 when
 * it is in none, IO_LOST once the watchdog gave up on it.  The watchdog
 * only takes a worker whose io_since is older than the timeout, with a
 * compare-and-swap that mio_io_end races against: whichever side wins
 * decides, so a task is either finished by its worker or given up whole.
 * The calls bounded before there are workers are memberio_bounded.c's.
 */
#include "memberio.h"

#include <assert.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "memberio_private.h"

static __thread worker *self;

worker *memberio_self(void)
{
	return self;
}

int64_t memberio_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* How long the relay and its callers stay awake (memberio_set_spin). */
static int64_t spin_ns(const memberio *mio)
{
	return (int64_t)__atomic_load_n(&mio->spin_us, __ATOMIC_RELAXED) * 1000;
}

/* Batch waiters asleep now (atomic): with none, a task's end makes no
 * wake-up call.  Each side counts, then looks at the other's count, all
 * sequentially consistent: no waiter sleeps through the end it awaits. */
static int sleepers;

static void futex_wake(int *word)
{
	if (__atomic_load_n(&sleepers, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The batch's waiter sleeps on b->pending, and no lock is held when it is
 * woken: it runs at once instead of blocking again on a lock the waker
 * still holds (a third context switch per hand-off).  The wake-up may
 * come after the waiter has seen the count reach 0 and gone on: it then
 * lands on whatever that stack word has become, a spurious wake-up, which
 * every futex user (glibc's locks and conditions, mio_batch_wait) takes
 * in its stride. */
static void task_done(mio_task *t, int lost_idx)
{
	mio_batch *b = t->batch;
	bool each = b->wake_each; /* b may be gone once pending falls */
	bool by_release = b->by_release;

	if (b->bounded)
		__atomic_fetch_or(&b->finished, 1ull << t->idx, __ATOMIC_SEQ_CST);
	free(t);
	if (lost_idx >= 0)
		__atomic_fetch_or(&b->lost, 1ull << lost_idx, __ATOMIC_RELEASE);
	int left = __atomic_sub_fetch(&b->pending, 1, __ATOMIC_SEQ_CST);
	assert(left >= 0);
	if (left == 0 || each)
		futex_wake(&b->pending);
	/* its caller never frees it: the last of it and the tasks does */
	if (by_release && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
		b->on_idle(b->idle_arg);
}

static void *worker_main(void *arg)
{
	worker *w = arg;

	self = w;
	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (!w->head && !w->stop)
			pthread_cond_wait(&w->wake, &w->lock);
		mio_task *t = w->head;
		if (!t) {
			pthread_mutex_unlock(&w->lock);
			return NULL;
		}
		w->head = t->next;
		if (!w->head)
			w->tail = NULL;
		w->current = t;
		pthread_mutex_unlock(&w->lock);

		if (mio_task_starts(t))
			t->fn(t->arg); /* never returns if given up, or cut in a call */
		pthread_mutex_lock(&w->lock);
		w->current = NULL;
		pthread_mutex_unlock(&w->lock);
		task_done(t, -1);
	}
}

static worker *worker_start(memberio *mio, int idx)
{
	worker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->idx = idx;
	w->mio = mio;
	w->timeout_ms = mio->timeout_ms;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		free(w);
		return NULL;
	}
	return w;
}

/* Member idx is lost: its worker's queue is given up with cur, the task
 * whose call hung (on that worker or on the relay); a task its worker is
 * running still finishes there. */
static void lose_member(memberio *mio, int idx, mio_task *cur, unsigned waited_ms)
{
	worker *w = mio->w[idx];

	pthread_mutex_lock(&w->lock);
	bool was = w->lost;
	w->lost = true;
	if (!was)
		w->lost_ms = waited_ms;
	mio_task *t = w->head;
	w->head = w->tail = NULL;
	pthread_mutex_unlock(&w->lock);
	/* first the verdict, so that the waiters woken next find the member
	 * failed, and failed for this reason */
	if (!was && mio->on_lost)
		mio->on_lost(mio->ctx, idx, waited_ms);
	if (cur) {
		__atomic_fetch_or(&cur->batch->stuck, 1ull << idx, __ATOMIC_RELEASE);
		task_done(cur, idx);
	}
	while (t) {
		mio_task *next = t->next;
		task_done(t, idx);
		t = next;
	}
}

static void enqueue(memberio *mio, mio_task *t, bool run_idle);
static void relay_replace(memberio *mio);
static void worker_leave(worker *w);

/* The relay: runs the tasks of its queue one after the other, each with
 * the member it is for in run_idx, so that its calls are timed and
 * watched as that member's.  A task of a member lost meanwhile completes
 * as lost without running.  Given up, it stays in its call (or in
 * mio_io_end) for good; the relay started in its place takes the queue.
 * It drains the queue before it stops, so memberio_free leaves no batch
 * waiting. */
static void *relay_main(void *arg)
{
	worker *r = arg;
	memberio *mio = r->mio;

	self = r;
	pthread_mutex_lock(&mio->rlock);
	for (;;) {
		if (!mio->rhead && !mio->rstop) {
			unsigned seen = __atomic_load_n(&mio->rposted, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&mio->rlock);
			int64_t end = memberio_now_ns() + spin_ns(mio);
			while (__atomic_load_n(&mio->rposted, __ATOMIC_ACQUIRE) == seen &&
			       !__atomic_load_n(&mio->rstop, __ATOMIC_RELAXED) && memberio_now_ns() < end)
				sched_yield(); /* awake, but second to any thread that has work */
			pthread_mutex_lock(&mio->rlock);
		}
		while (!mio->rhead && !mio->rstop)
			pthread_cond_wait(&mio->rwake, &mio->rlock);
		mio_task *t = mio->rhead;
		if (!t)
			break;
		mio->rhead = t->next;
		if (!mio->rhead)
			mio->rtail = NULL;
		r->current = t;
		r->run_idx = t->idx;
		pthread_mutex_unlock(&mio->rlock);
		bool lost = memberio_lost(mio, t->idx);
		if (!lost && mio_task_starts(t))
			t->fn(t->arg); /* never returns if given up, or cut in a call */
		/* current stays set: the watchdog reads it only of a relay in
		 * a call, which this one is not until the next task */
		task_done(t, lost ? t->idx : -1);
		pthread_mutex_lock(&mio->rlock);
	}
	r->current = NULL;
	r->done = true;
	pthread_cond_broadcast(&mio->rdone);
	pthread_mutex_unlock(&mio->rlock);
	return NULL;
}

/* A relay thread (detached: memberio_free waits for its done, and one
 * given up is never waited for). */
static worker *relay_start(memberio *mio)
{
	worker *r = calloc(1, sizeof(*r));
	pthread_attr_t attr;

	if (!r)
		return NULL;
	r->idx = -1;
	r->relay = true;
	r->mio = mio;
	r->timeout_ms = mio->timeout_ms;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&r->thread, &attr, relay_main, r);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		free(r);
		return NULL;
	}
	return r;
}

/* Stops the relay once its queue is empty; a relay stuck in a call is
 * given up by the watchdog (still running) and its successor drains the
 * queue. */
static void relay_stop(memberio *mio)
{
	pthread_mutex_lock(&mio->rlock);
	__atomic_store_n(&mio->rstop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&mio->rwake);
	while (mio->relay && !mio->relay->done)
		pthread_cond_wait(&mio->rdone, &mio->rlock);
	worker *r = mio->relay;
	mio->relay = NULL;
	pthread_mutex_unlock(&mio->rlock);
	if (r) {
		free(r->bounce);
		free(r);
	}
}

/* The watchdog's verdict on w, after a call of waited_ms: gives up its
 * current task and its queue. */
static void give_up(memberio *mio, worker *w, unsigned waited_ms)
{
	pthread_mutex_lock(&w->lock);
	mio_task *cur = w->current;
	w->current = NULL;
	w->stuck = true;
	pthread_mutex_unlock(&w->lock);
	pthread_detach(w->thread);
	lose_member(mio, w->idx, cur, waited_ms);
}

/* Under rlock: a new relay takes the queue of one that stays in its call
 * (or, if none can be started, the members' workers do, in order, before
 * any later submission). */
static void relay_replace(memberio *mio)
{
	mio->relay = relay_start(mio);
	if (!mio->relay) {
		mio_task *t = mio->rhead;
		mio->rhead = mio->rtail = NULL;
		while (t) {
			mio_task *next = t->next;
			t->next = NULL;
			enqueue(mio, t, false);
			t = next;
		}
	}
	pthread_cond_broadcast(&mio->rdone); /* memberio_free waits for the relay */
}

/* The watchdog's verdict on the relay r, stuck in a call for member
 * run_idx: that member is lost, and a new relay takes the queue (or, if
 * none can be started, the members' workers do, in order, before any
 * later submission). */
static void give_up_relay(memberio *mio, worker *r, unsigned waited_ms)
{
	pthread_mutex_lock(&mio->rlock);
	mio_task *cur = r->current;
	r->current = NULL;
	r->stuck = true;
	pthread_mutex_unlock(&mio->rlock);
	/* lost before a new relay runs: it must not make the member's next
	 * queued call, which would hang as well */
	lose_member(mio, r->run_idx, cur, waited_ms);
	pthread_mutex_lock(&mio->rlock);
	relay_replace(mio);
	pthread_mutex_unlock(&mio->rlock);
}

/* The relay's watch: only the relay now can be in a call (one given up
 * stays at IO_LOST). */
static void watch_relay(memberio *mio, int64_t now)
{
	pthread_mutex_lock(&mio->rlock);
	worker *r = mio->relay;
	pthread_mutex_unlock(&mio->rlock);
	if (!r)
		return;
	int64_t since = __atomic_load_n(&r->io_since, __ATOMIC_ACQUIRE);
	unsigned limit = since > 0 ? mio_give_up_ms(mio, r, r->run_idx) : 0;
	if (since > 0 && now - since >= (int64_t)limit &&
	    __atomic_compare_exchange_n(&r->io_since, &since, IO_LOST, false, __ATOMIC_ACQ_REL,
	                                __ATOMIC_ACQUIRE))
		give_up_relay(mio, r, limit);
}

static void *watchdog_main(void *arg)
{
	memberio *mio = arg;
	pthread_mutex_lock(&mio->lock);
	while (!mio->stop) {
		/* a tenth of the soonest give-up, so a hang is seen within 110% of it */
		unsigned soonest = memberio_first_wait_ms(
			mio->timeout_ms, __atomic_load_n(&mio->at_bound, __ATOMIC_RELAXED));
		int64_t period = soonest / 10 < 20 ? 20 : soonest / 10;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (period % 1000) * 1000000;
		until.tv_sec += period / 1000 + until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&mio->wake, &mio->lock, &until);
		if (mio->stop)
			break;
		pthread_mutex_unlock(&mio->lock);
		int64_t now = memberio_now_ns() / 1000000;
		for (int i = 0; i < mio->n; i++) {
			worker *w = mio->w[i];
			int64_t since = __atomic_load_n(&w->io_since, __ATOMIC_ACQUIRE);
			unsigned limit = since > 0 ? mio_give_up_ms(mio, w, i) : 0;
			if (since > 0 && now - since >= (int64_t)limit &&
			    __atomic_compare_exchange_n(&w->io_since, &since, IO_LOST, false,
			                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				give_up(mio, w, limit);
		}
		watch_relay(mio, now);
		pthread_mutex_lock(&mio->lock);
	}
	pthread_mutex_unlock(&mio->lock);
	return NULL;
}

memberio *memberio_new(int n, unsigned timeout_ms, mio_lost_fn on_lost, void *ctx)
{
	memberio *mio = calloc(1, sizeof(*mio));

	if (!mio)
		return NULL;
	mio->timeout_ms = timeout_ms;
	mio->on_lost = on_lost;
	mio->ctx = ctx;
	pthread_mutex_init(&mio->lock, NULL);
	pthread_cond_init(&mio->wake, NULL);
	pthread_mutex_init(&mio->rlock, NULL);
	pthread_cond_init(&mio->rwake, NULL);
	pthread_cond_init(&mio->rdone, NULL);
	mio->w = calloc((size_t)n, sizeof(worker *));
	if (!mio->w) {
		free(mio);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		mio->w[i] = worker_start(mio, i);
		if (!mio->w[i]) {
			memberio_free(mio);
			return NULL;
		}
		mio->n = i + 1;
	}
	if (timeout_ms) {
		if (pthread_create(&mio->watchdog, NULL, watchdog_main, mio) != 0) {
			memberio_free(mio);
			return NULL;
		}
		mio->watching = true;
		/* without one, small tasks go to the workers */
		mio->relay = relay_start(mio);
	}
	return mio;
}

void memberio_free(memberio *mio)
{
	if (!mio)
		return;
	relay_stop(mio);
	for (int i = 0; i < mio->n; i++) {
		worker *w = mio->w[i];
		pthread_mutex_lock(&w->lock);
		w->stop = true;
		pthread_cond_signal(&w->wake);
		pthread_mutex_unlock(&w->lock);
	}
	/* The watchdog still runs: a worker stuck in a member call is given
	 * up after the timeout rather than waited for.  It reads every
	 * worker, so the joined ones are freed only once it has stopped. */
	for (int i = 0; i < mio->n; i++) {
		worker *w = mio->w[i];
		for (;;) {
			pthread_mutex_lock(&w->lock);
			pthread_t thread = w->thread; /* worker_leave may replace it */
			pthread_mutex_unlock(&w->lock);
			if (pthread_tryjoin_np(thread, NULL) == 0) {
				w->joined = true;
				break;
			}
			pthread_mutex_lock(&w->lock);
			bool stuck = w->stuck;
			pthread_mutex_unlock(&w->lock);
			if (stuck)
				break; /* in its member call, or stopped for good */
			usleep(2000);
		}
	}
	if (mio->watching) {
		pthread_mutex_lock(&mio->lock);
		mio->stop = true;
		pthread_cond_signal(&mio->wake);
		pthread_mutex_unlock(&mio->lock);
		pthread_join(mio->watchdog, NULL);
	}
	for (int i = 0; i < mio->n; i++)
		if (mio->w[i]->joined) {
			free(mio->w[i]->bounce);
			free(mio->w[i]);
		}
	free(mio->w);
	free(mio);
}

unsigned memberio_lost_ms(memberio *mio, int idx)
{
	worker *w = mio->w[idx];

	pthread_mutex_lock(&w->lock);
	unsigned ms = w->lost ? w->lost_ms : 0;
	pthread_mutex_unlock(&w->lock);
	return ms;
}

bool memberio_lost(memberio *mio, int idx)
{
	worker *w = mio->w[idx];

	pthread_mutex_lock(&w->lock);
	bool lost = w->lost;
	pthread_mutex_unlock(&w->lock);
	return lost;
}

void mio_batch_init(mio_batch *b)
{
	b->pending = 0;
	b->lost = b->stuck = 0;
	b->caller = NULL;
	b->held = NULL;
	b->small = false;
	b->wake_each = false;
	b->relayed = b->apart = 0;
	b->spin_ns = 0;
	b->bounded = b->by_release = b->calls = false;
	b->refs = 0;
}

void mio_batch_init_each(mio_batch *b)
{
	mio_batch_init(b);
	b->wake_each = true;
}

void mio_batch_init_small(memberio *mio, mio_batch *b)
{
	mio_batch_init_caller(mio, b);
	b->small = mio->timeout_ms != 0;
	b->spin_ns = spin_ns(mio);
}

void memberio_set_spin(memberio *mio, unsigned us)
{
	__atomic_store_n(&mio->spin_us, us, __ATOMIC_RELAXED);
}

void mio_batch_init_caller(memberio *mio, mio_batch *b)
{
	mio_batch_init(b);
	b->caller = mio->timeout_ms ? NULL : mio;
}

static void append(mio_task **head, mio_task **tail, mio_task *t)
{
	if (*tail)
		(*tail)->next = t;
	else
		*head = t;
	*tail = t;
}

/* Queues t on its worker, or with run_idle runs it right here if that
 * worker has nothing queued or running (so the member's tasks still run
 * in submission order). */
static void enqueue(memberio *mio, mio_task *t, bool run_idle)
{
	worker *w = mio->w[t->idx];

	pthread_mutex_lock(&w->lock);
	if (w->lost) {
		pthread_mutex_unlock(&w->lock);
		task_done(t, t->idx);
		return;
	}
	if (run_idle && !w->head && !w->current) {
		pthread_mutex_unlock(&w->lock);
		t->fn(t->arg);
		task_done(t, -1);
		return;
	}
	append(&w->head, &w->tail, t);
	pthread_mutex_unlock(&w->lock);
	/* after the unlock, so the worker does not wake into a held lock */
	pthread_cond_signal(&w->wake);
}

/* Whether this task of member idx goes to the relay: all of a batch's
 * tasks of one member go the same way, so that they run in order. */
static bool to_relay(memberio *mio, mio_batch *b, int idx)
{
	uint64_t bit = 1ull << idx;

	if (!b->small || (b->apart & bit))
		return false;
	if (b->relayed & bit)
		return true;
	if (!memberio_relays(mio, idx)) {
		b->apart |= bit;
		return false;
	}
	b->relayed |= bit;
	return true;
}

bool memberio_relays(memberio *mio, int idx)
{
	return (__atomic_load_n(&mio->relay_all, __ATOMIC_RELAXED) ||
	        memberio_latency_us(mio, idx) < MEMBERIO_RELAY_US) &&
	       !memberio_lost(mio, idx) && !memberio_relay_stalled(mio);
}

void memberio_force_relay(memberio *mio, bool on)
{
	__atomic_store_n(&mio->relay_all, on, __ATOMIC_RELAXED);
}

static void relay_enqueue(memberio *mio, mio_task *t)
{
	pthread_mutex_lock(&mio->rlock);
	if (!mio->relay) { /* none could be started after a hang */
		pthread_mutex_unlock(&mio->rlock);
		enqueue(mio, t, false);
		return;
	}
	append(&mio->rhead, &mio->rtail, t);
	__atomic_add_fetch(&mio->rposted, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&mio->rlock);
	pthread_cond_signal(&mio->rwake); /* no system call while it spins */
}

void memberio_submit(memberio *mio, int idx, mio_batch *b, void (*fn)(void *), void *arg)
{
	mio_task *t = malloc(sizeof(*t));

	assert(idx >= 0 && idx < mio->n);
	if (!t) {
		fn(arg); /* out of memory: run it here rather than lose it */
		return;
	}
	*t = (mio_task){ fn, arg, b, NULL, idx };
	__atomic_add_fetch(&b->pending, 1, __ATOMIC_RELAXED);
	if (b->bounded)
		b->asked |= 1ull << idx;
	if (b->by_release)
		__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
	if (b->caller) {
		/* Held back: the caller may run the last one itself. */
		mio_task *prev = b->held;
		b->held = t;
		if (!prev)
			return;
		t = prev;
	}
	if (to_relay(mio, b, idx))
		relay_enqueue(mio, t);
	else
		enqueue(mio, t, false);
}

uint64_t mio_batch_wait(mio_batch *b)
{
	if (b->held) {
		mio_task *t = b->held;
		b->held = NULL;
		enqueue(b->caller, t, true);
	}
	return mio_batch_wait_left(b, 0);
}

uint64_t mio_batch_stuck(const mio_batch *b)
{
	return __atomic_load_n(&b->stuck, __ATOMIC_ACQUIRE);
}

/* What mio_free_or_keep kept: a few buffers per member given up. */
static struct kept {
	void *p;
	struct kept *next;
} *kept_list;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

void mio_free_or_keep(void *p, bool lent)
{
	struct kept *k = lent && p ? malloc(sizeof(*k)) : NULL;

	if (!k) {
		if (!lent)
			free(p);
		return; /* lent, and no memory to note it in: leaked as it is */
	}
	pthread_mutex_lock(&kept_lock);
	*k = (struct kept){ p, kept_list };
	kept_list = k;
	pthread_mutex_unlock(&kept_lock);
}

uint64_t mio_batch_wait_left(mio_batch *b, int left)
{
	mio_batch_wait_left_until(b, left, 0);
	return __atomic_load_n(&b->lost, __ATOMIC_ACQUIRE);
}

bool mio_spin_for_relay(mio_batch *b, int left)
{
	if (!b->relayed || b->apart || !b->spin_ns)
		return false;
	int64_t end = memberio_now_ns() + b->spin_ns;
	while (__atomic_load_n(&b->pending, __ATOMIC_ACQUIRE) > left) {
		if (memberio_now_ns() >= end)
			return false;
		sched_yield();
	}
	return true;
}

bool mio_batch_wait_left_until(mio_batch *b, int left, int64_t deadline_ns)
{
	if (!deadline_ns && mio_spin_for_relay(b, left))
		return true;
	/* A count that has only fallen since it was read is slept through:
	 * the wake-up comes when it reaches 0, or at every task with
	 * wake_each (task_done). */
	bool in_time = true;
	__atomic_add_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
	for (int now; (now = __atomic_load_n(&b->pending, __ATOMIC_SEQ_CST)) > left;) {
		struct timespec rel, *timeout = NULL;
		if (deadline_ns) {
			int64_t ns = deadline_ns - memberio_now_ns();
			if (ns <= 0) {
				in_time = false;
				break;
			}
			rel = (struct timespec){ ns / 1000000000, ns % 1000000000 };
			timeout = &rel;
		}
		syscall(SYS_futex, &b->pending, FUTEX_WAIT_PRIVATE, now, timeout, NULL, 0);
	}
	__atomic_sub_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
	return in_time;
}

bool mio_batch_idle(const mio_batch *b)
{
	return __atomic_load_n(&b->pending, __ATOMIC_ACQUIRE) == 0;
}

unsigned memberio_timeout(const memberio *mio)
{
	return mio->timeout_ms;
}

bool memberio_on_worker(void)
{
	return self != NULL;
}

void mio_io_begin(void)
{
	worker *w = self;

	if (!w)
		return;
	w->call_ns = memberio_now_ns();
	mio_call_opens(w->current);
	if (w->timeout_ms)
		__atomic_store_n(&w->io_since, w->call_ns / 1000000, __ATOMIC_RELEASE);
}

/* The member's latency: a moving average over about its last 8 calls, so
 * a member that turns slow shows within a few calls (memberio.h). */
static void note_latency(worker *w, int64_t call_ns)
{
	int64_t took = memberio_now_ns() - call_ns;
	int64_t avg = (int64_t)__atomic_load_n(&w->latency_ns, __ATOMIC_RELAXED);

	avg = avg ? avg + (took - avg) / 8 : (took > 0 ? took : 1);
	__atomic_store_n(&w->latency_ns, (uint64_t)avg, __ATOMIC_RELAXED);
}

void mio_io_end(void)
{
	worker *w = self;

	if (!w)
		return;
	int64_t since = __atomic_load_n(&w->io_since, __ATOMIC_ACQUIRE);
	if (w->timeout_ms &&
	    (since == IO_LOST ||
	     !__atomic_compare_exchange_n(&w->io_since, &since, 0, false, __ATOMIC_ACQ_REL,
	                                  __ATOMIC_ACQUIRE))) {
		/* Given up: the task's caller has moved on and its memory may
		 * be anyone's now (the memberio's too).  This thread does
		 * nothing more. */
		ecfs_log(LOG_WARNING, "member %d answered after it was given up; it stays failed "
		         "until the volume is opened again", w->relay ? w->run_idx : w->idx);
		for (;;)
			pause();
	}
	__atomic_store_n(&w->changes, false, __ATOMIC_RELAXED);
	/* the relay's calls are its member's */
	note_latency(w->relay ? w->mio->w[w->run_idx] : w, w->call_ns);
	if (!mio_call_closes(w->current))
		worker_leave(w);
}

/* w's task was cut in the call that just returned (mio_call_closes): its
 * caller went on, and the task's memory may be anyone's now.  Another
 * thread takes w's place (the relay's, for the relay), the task ends,
 * and this thread does nothing more, as one given up. */
static void worker_leave(worker *w)
{
	memberio *mio = w->mio;
	mio_task *t;
	bool taken;

	if (w->relay) {
		pthread_mutex_lock(&mio->rlock);
		t = w->current;
		w->current = NULL;
		w->stuck = true;
		if (mio->relay == w)
			relay_replace(mio);
		taken = true;
		pthread_mutex_unlock(&mio->rlock);
	} else {
		pthread_t next;
		pthread_mutex_lock(&w->lock);
		t = w->current;
		w->current = NULL;
		/* the old thread stays joinable and is never joined */
		taken = pthread_create(&next, NULL, worker_main, w) == 0;
		if (taken)
			w->thread = next;
		pthread_mutex_unlock(&w->lock);
	}
	if (!taken) {
		/* no thread to take its place: the member's later tasks would
		 * wait for ever; it is given up as after the timeout */
		lose_member(mio, w->idx, t, memberio_bound_ms(mio, w->idx));
		t = NULL;
	}
	if (t)
		task_done(t, -1);
	for (;;)
		pause();
}

void mio_io_changes(void)
{
	worker *w = self;

	if (w)
		__atomic_store_n(&w->changes, true, __ATOMIC_RELAXED);
}

uint8_t *mio_bounce(size_t len)
{
	worker *w = self;

	if (!w || !w->timeout_ms)
		return NULL;
	if (w->bounce_len < len) {
		uint8_t *p = realloc(w->bounce, len);
		if (!p)
			return NULL;
		w->bounce = p;
		w->bounce_len = len;
	}
	return w->bounce;
}

bool mio_bounce_holds(const void *p, size_t len)
{
	worker *w = self;
	const uint8_t *b = w ? w->bounce : NULL;

	return b && (const uint8_t *)p >= b && len <= w->bounce_len &&
	       (size_t)((const uint8_t *)p - b) <= w->bounce_len - len;
}

/* Transfer costs: a transfer of under COST_UNIT bytes counts as one unit
 * (its time is mostly the call's).  The cost is the median of the last
 * COST_WINDOW transfers, so that a few the scheduler held up on a busy
 * machine do not make a member slow: most of them must be.  A transfer
 * after the member was left alone for COST_PROBE_MS (gone around,
 * memberio_slow_of) fills half the window, so that one decides whether a
 * member is back.  Reads and writes are judged apart, by the one rule. */
#define COST_UNIT (64 * 1024)
#define COST_WINDOW 8
#define COST_PROBE_MS 1000
#define COST_SETTLED 4

void memberio_note(memberio *mio, int idx, enum mio_cost kind, size_t bytes, int64_t ns)
{
	struct cost *c = &mio->w[idx]->cost[kind];
	int64_t now = memberio_now_ns(), last = __atomic_load_n(&c->last_ns, __ATOMIC_RELAXED);
	int64_t x = bytes > COST_UNIT ? (int64_t)((double)ns * COST_UNIT / (double)bytes) : ns;
	int slots = last && now - last >= (int64_t)COST_PROBE_MS * 1000000 ? COST_WINDOW / 2 : 1;

	for (int i = 0; i < slots; i++) {
		unsigned at = __atomic_fetch_add(&c->cnt, 1, __ATOMIC_RELAXED) % COST_WINDOW;
		__atomic_store_n(&c->ns[at], (uint64_t)(x > 0 ? x : 1), __ATOMIC_RELAXED);
	}
	if (kind == MIO_WRITE)
		__atomic_add_fetch(&c->unsynced, bytes > COST_UNIT ? bytes : COST_UNIT,
		                   __ATOMIC_RELAXED);
	__atomic_store_n(&c->last_ns, now, __ATOMIC_RELAXED);
}

/* A write is not done until it is durable: a mount that queues writes
 * (sshfs pipelines them) answers a write at memory speed and makes the
 * sync wait for the link.  So a sync's time is shared out over the bytes
 * written since the last one, per COST_UNIT, and each such write still in
 * the window has its share added: its cost becomes the time per unit of
 * getting it durable. */
void memberio_note_sync(memberio *mio, int idx, int64_t ns)
{
	struct cost *c = &mio->w[idx]->cost[MIO_WRITE];
	unsigned end = __atomic_load_n(&c->cnt, __ATOMIC_RELAXED);
	unsigned from = __atomic_exchange_n(&c->synced_at, end, __ATOMIC_RELAXED);
	uint64_t units = __atomic_exchange_n(&c->unsynced, 0, __ATOMIC_RELAXED);

	if (!units || ns <= 0)
		return;
	if (end - from > COST_WINDOW)
		from = end - COST_WINDOW;
	uint64_t share = (uint64_t)((double)ns * COST_UNIT / (double)units);
	for (unsigned i = from; i != end; i++)
		__atomic_add_fetch(&c->ns[i % COST_WINDOW], share, __ATOMIC_RELAXED);
	__atomic_store_n(&c->last_ns, memberio_now_ns(), __ATOMIC_RELAXED);
}

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The lower median of the last transfers noted in c (ns per COST_UNIT),
 * 0 before the first; *cnt: how many transfers it is of. */
static uint64_t median_cost(struct cost *c, unsigned *cnt)
{
	uint64_t v[COST_WINDOW];
	unsigned noted = __atomic_load_n(&c->cnt, __ATOMIC_RELAXED);

	*cnt = noted < COST_WINDOW ? noted : COST_WINDOW;
	if (!*cnt)
		return 0;
	for (unsigned i = 0; i < *cnt; i++)
		v[i] = __atomic_load_n(&c->ns[i], __ATOMIC_RELAXED);
	qsort(v, *cnt, sizeof(v[0]), by_value);
	return v[(*cnt - 1) / 2];
}

uint64_t memberio_cost_us(memberio *mio, int idx, enum mio_cost kind)
{
	unsigned cnt;
	return median_cost(&mio->w[idx]->cost[kind], &cnt) / 1000;
}

uint64_t memberio_late_us(memberio *mio, uint64_t members, size_t bytes)
{
	uint64_t units = (bytes + COST_UNIT - 1) / COST_UNIT, slowest = 0;

	for (int i = 0; i < mio->n; i++)
		if (members >> i & 1) {
			uint64_t us = memberio_cost_us(mio, i, MIO_READ);
			slowest = us > slowest ? us : slowest;
		}
	uint64_t us = MEMBERIO_LATE_FACTOR * slowest * units;
	return us > MEMBERIO_LATE_MIN_US ? us : MEMBERIO_LATE_MIN_US;
}

void memberio_force_slow(memberio *mio, enum mio_cost kind, uint64_t members)
{
	for (int i = 0; i < mio->n; i++)
		if (members >> i & 1)
			__atomic_or_fetch(&mio->w[i]->forced_slow, 1ull << kind, __ATOMIC_RELAXED);
}

/* The members of `among` whose cost of `kind` marks them slow against the
 * lower median of the others' (memberio.h); cost[] gets each one's cost
 * (UINT64_MAX for one forced slow). */
static uint64_t slow_by_cost(memberio *mio, enum mio_cost kind, uint64_t among,
                             uint64_t *cost)
{
	uint64_t sorted[64], slow = 0;
	int cnt = 0;
	int64_t now = memberio_now_ns();

	for (int i = 0; i < mio->n; i++) {
		unsigned noted;
		cost[i] = 0;
		if (!(among >> i & 1))
			continue;
		if (__atomic_load_n(&mio->w[i]->forced_slow, __ATOMIC_RELAXED) >> kind & 1) {
			cost[i] = UINT64_MAX;
			slow |= 1ull << i;
			continue;
		}
		uint64_t c = median_cost(&mio->w[i]->cost[kind], &noted);
		if (noted >= COST_SETTLED)
			cost[i] = sorted[cnt++] = c;
	}
	if (cnt < 2)
		return slow;
	qsort(sorted, (size_t)cnt, sizeof(sorted[0]), by_value);
	/* the lower median: of two members, the faster one */
	uint64_t median = sorted[(cnt - 1) / 2];
	for (int i = 0; i < mio->n; i++) {
		int64_t last = __atomic_load_n(&mio->w[i]->cost[kind].last_ns, __ATOMIC_RELAXED);
		if (cost[i] != UINT64_MAX && cost[i] >= MEMBERIO_SLOW_FACTOR * median &&
		    cost[i] - median >= (uint64_t)MEMBERIO_SLOW_EXCESS_US * 1000 &&
		    now - last < (int64_t)MEMBERIO_SLOW_RECHECK_MS * 1000000)
			slow |= 1ull << i;
	}
	return slow;
}

uint64_t memberio_slow_of(memberio *mio, enum mio_cost kind, uint64_t among, int most)
{
	uint64_t cost[64];
	uint64_t slow = slow_by_cost(mio, kind, among, cost);

	/* Members whose chunks their own mount caches read at memory speed
	 * and pull the median down: of many found slow, the slowest. */
	while (slow && __builtin_popcountll(slow) > most) {
		int fastest = __builtin_ctzll(slow);
		for (int i = fastest + 1; i < mio->n; i++)
			if ((slow >> i & 1) && cost[i] < cost[fastest])
				fastest = i;
		slow &= ~(1ull << fastest);
	}
	return slow;
}

uint64_t memberio_latency_us(memberio *mio, int idx)
{
	return __atomic_load_n(&mio->w[idx]->latency_ns, __ATOMIC_RELAXED) / 1000;
}
