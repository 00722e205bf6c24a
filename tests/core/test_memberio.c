/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the member workers (src/core/member/memberio.c): a batch's tasks run
 * on their members' worker threads, in submission order per member; a
 * batch made with mio_batch_init_caller has its last task run by the
 * waiting caller when that member's worker is idle, never ahead of a task
 * still queued for the same member, and never when there is a timeout; and
 * each member's latency follows the calls its worker makes; and a member
 * is judged slow by its read cost per byte against its peers'
 * (memberio_slow_of, from read times given here, not measured), and for
 * writes with the time of its syncs shared out over the bytes they made
 * durable; and a call bounded without a worker (mio_bounded) is given up
 * at its deadline.
 * A batch of small calls (mio_batch_init_small) runs on the one relay
 * thread when its members are fast, on the workers of those that are not;
 * a call that hangs on the relay gives up its member only, and a new relay
 * runs the rest of the batch and the batches after it, also when the
 * relay stays awake between batches.  A batch of calls
 * (mio_batch_bound_calls) cuts a task stalled in a member call at its
 * bound, and the task writes nothing after; its worker goes on.
 */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "memberio.h"

#define N 3

typedef struct job {
	pthread_t ran_on;
	int order;     /* when it ran, counted over every job of a test */
	unsigned usec; /* sleeps this long first */
	int *clock;
	pthread_mutex_t *lock;
} job;

static void run_job(void *arg)
{
	job *j = arg;

	if (j->usec)
		usleep(j->usec);
	j->ran_on = pthread_self();
	pthread_mutex_lock(j->lock);
	j->order = ++*j->clock;
	pthread_mutex_unlock(j->lock);
}

typedef struct jobs {
	job j[8];
	int clock;
	pthread_mutex_t lock;
} jobs;

static void jobs_init(jobs *js)
{
	*js = (jobs){ .lock = PTHREAD_MUTEX_INITIALIZER };
	for (int i = 0; i < 8; i++)
		js->j[i] = (job){ .clock = &js->clock, .lock = &js->lock };
}

/* One job per member in one batch, waited for; the jobs that ran on the
 * calling thread, as a mask. */
static unsigned one_batch(unsigned timeout_ms, bool caller, jobs *js)
{
	memberio *mio = memberio_new(N, timeout_ms, NULL, NULL);
	mio_batch b;
	unsigned here = 0;

	jobs_init(js);
	if (caller)
		mio_batch_init_caller(mio, &b);
	else
		mio_batch_init(&b);
	for (int i = 0; i < N; i++)
		memberio_submit(mio, i, &b, run_job, &js->j[i]);
	assert_int_equal(mio_batch_wait(&b), 0);
	for (int i = 0; i < N; i++) {
		assert_true(js->j[i].order > 0);
		here |= (unsigned)pthread_equal(js->j[i].ran_on, pthread_self()) << i;
	}
	memberio_free(mio);
	return here;
}

static void plain_batch_runs_on_workers(void **state)
{
	jobs js;

	(void)state;
	assert_int_equal(one_batch(0, false, &js), 0);
}

static void caller_runs_the_last_task(void **state)
{
	jobs js;

	(void)state;
	assert_int_equal(one_batch(0, true, &js), 1u << (N - 1));
}

static void caller_keeps_member_order(void **state)
{
	memberio *mio = memberio_new(N, 0, NULL, NULL);
	mio_batch slow, b;
	jobs js;

	(void)state;
	jobs_init(&js);
	/* Member 1 is busy with an earlier batch's slow task... */
	js.j[0].usec = 200000;
	mio_batch_init(&slow);
	memberio_submit(mio, 1, &slow, run_job, &js.j[0]);
	/* ...so the caller may not run the next task of member 1 itself. */
	mio_batch_init_caller(mio, &b);
	memberio_submit(mio, 0, &b, run_job, &js.j[1]);
	memberio_submit(mio, 1, &b, run_job, &js.j[2]);
	assert_int_equal(mio_batch_wait(&b), 0);
	assert_true(js.j[0].order > 0 && js.j[2].order > js.j[0].order);
	assert_true(pthread_equal(js.j[2].ran_on, js.j[0].ran_on));
	assert_int_equal(mio_batch_wait(&slow), 0);
	memberio_free(mio);
}

static void no_caller_run_with_a_timeout(void **state)
{
	jobs js;

	(void)state;
	assert_int_equal(one_batch(5000, true, &js), 0);
}

/* A member call that takes usec (a member call is what MIO_CALL brackets). */
static void slow_call(void *arg)
{
	unsigned usec = *(unsigned *)arg;

	MIO_CALL(usleep(usec));
}

/* Runs calls of usec[i] on each member i, 8 batches of them. */
static void timed_calls(memberio *mio, unsigned *usec)
{
	for (int round = 0; round < 8; round++) {
		mio_batch b;
		mio_batch_init(&b);
		for (int i = 0; i < N; i++)
			memberio_submit(mio, i, &b, slow_call, &usec[i]);
		assert_int_equal(mio_batch_wait(&b), 0);
	}
}

static void latency_follows_the_calls(void **state)
{
	memberio *mio = memberio_new(N, 0, NULL, NULL);
	unsigned usec[N] = { 0, 20000, 0 };

	(void)state;
	for (int i = 0; i < N; i++)
		assert_int_equal(memberio_latency_us(mio, i), 0); /* no call yet */
	timed_calls(mio, usec);
	assert_true(memberio_latency_us(mio, 1) >= 15000);
	assert_true(memberio_latency_us(mio, 0) < 5000);
	assert_true(memberio_latency_us(mio, 2) < 5000);
	/* member 1 turns fast, member 2 slow: seen within 8 calls (ratios,
	 * so that a loaded machine's longer sleeps do not matter) */
	uint64_t slow = memberio_latency_us(mio, 1);
	usec[1] = 0;
	usec[2] = 20000;
	timed_calls(mio, usec);
	assert_true(memberio_latency_us(mio, 1) < slow / 2);
	assert_true(memberio_latency_us(mio, 2) > memberio_latency_us(mio, 1));
	assert_true(memberio_latency_us(mio, 2) >= 10000);
	memberio_free(mio);
}

/* One batch of mio_batch_init_small with one job per member, waited
 * for: the lost mask. */
static uint64_t small_batch(memberio *mio, jobs *js)
{
	mio_batch b;

	jobs_init(js);
	mio_batch_init_small(mio, &b);
	for (int i = 0; i < N; i++)
		memberio_submit(mio, i, &b, run_job, &js->j[i]);
	return mio_batch_wait(&b);
}

static void small_batch_on_the_relay(void **state)
{
	memberio *mio = memberio_new(N, 5000, NULL, NULL);
	unsigned slow = 20000;
	jobs js;

	(void)state;
	assert_int_equal(small_batch(mio, &js), 0);
	for (int i = 0; i < N; i++) {
		assert_true(js.j[i].order == i + 1); /* one after the other, in order */
		assert_false(pthread_equal(js.j[i].ran_on, pthread_self()));
		assert_true(pthread_equal(js.j[i].ran_on, js.j[0].ran_on));
	}
	/* member 1 turns slow (a remote member): its tasks go to its worker;
	 * the others made no timed call, so a loaded machine cannot make
	 * them slow too */
	for (int round = 0; round < 8; round++) {
		mio_batch b;
		mio_batch_init(&b);
		memberio_submit(mio, 1, &b, slow_call, &slow);
		assert_int_equal(mio_batch_wait(&b), 0);
	}
	assert_true(memberio_latency_us(mio, 1) >= MEMBERIO_RELAY_US);
	assert_int_equal(small_batch(mio, &js), 0);
	assert_true(pthread_equal(js.j[2].ran_on, js.j[0].ran_on));
	assert_false(pthread_equal(js.j[1].ran_on, js.j[0].ran_on));
	memberio_free(mio);
	/* without a timeout there is no relay: as mio_batch_init_caller */
	mio = memberio_new(N, 0, NULL, NULL);
	assert_int_equal(small_batch(mio, &js), 0);
	assert_true(pthread_equal(js.j[N - 1].ran_on, pthread_self()));
	assert_false(pthread_equal(js.j[0].ran_on, js.j[1].ran_on));
	memberio_free(mio);
}

static int lost_calls;
static int lost_idx = -1;

static void note_lost(void *ctx, int idx, unsigned timeout_ms)
{
	(void)ctx;
	(void)timeout_ms;
	__atomic_add_fetch(&lost_calls, 1, __ATOMIC_RELAXED);
	lost_idx = idx;
}

/* A member call that never returns: a read of a pipe nobody writes. */
static void hung_call(void *arg)
{
	char c;

	(void)!MIO_CALL(read(*(int *)arg, &c, 1));
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void hang_on_a_relay_spinning_for(unsigned spin_us)
{
	memberio *mio = memberio_new(N, 200, note_lost, NULL);
	int pipefd[2];
	mio_batch b;
	jobs js;
	struct timespec t0;

	lost_calls = 0;
	lost_idx = -1;
	memberio_set_spin(mio, spin_us);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	jobs_init(&js);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	mio_batch_init_small(mio, &b);
	memberio_submit(mio, 0, &b, run_job, &js.j[0]);
	memberio_submit(mio, 1, &b, hung_call, &pipefd[0]);
	memberio_submit(mio, 1, &b, run_job, &js.j[1]); /* after its member's hang */
	memberio_submit(mio, 2, &b, run_job, &js.j[2]);
	assert_int_equal(mio_batch_wait(&b), 1u << 1);
	double took = seconds_since(&t0);
	assert_true(took >= 0.2 && took < 5.0);
	/* member 1's hung task is still in its call; its next never ran */
	assert_int_equal(mio_batch_stuck(&b), 1u << 1);
	assert_int_equal(lost_calls, 1);
	assert_int_equal(lost_idx, 1);
	assert_true(memberio_lost(mio, 1));
	assert_int_equal(js.j[1].order, 0); /* given up with its member */
	assert_true(js.j[0].order > 0 && js.j[2].order > 0);
	/* member 2's task ran on the relay started in the stuck one's place */
	assert_false(pthread_equal(js.j[2].ran_on, js.j[0].ran_on));
	/* later batches: the lost member's tasks complete at once, the
	 * others run on the new relay */
	assert_int_equal(small_batch(mio, &js), 1u << 1);
	assert_int_equal(js.j[1].order, 0);
	assert_true(js.j[0].order > 0 && js.j[2].order > 0);
	assert_true(pthread_equal(js.j[0].ran_on, js.j[2].ran_on));
	assert_int_equal(lost_calls, 1); /* failed once */
	/* and the plain workers still serve the other members */
	mio_batch_init(&b);
	jobs_init(&js);
	memberio_submit(mio, 0, &b, run_job, &js.j[0]);
	memberio_submit(mio, 1, &b, run_job, &js.j[1]);
	assert_int_equal(mio_batch_wait(&b), 1u << 1);
	assert_true(js.j[0].order > 0);
	memberio_free(mio); /* does not wait for the stuck call */
	close(pipefd[1]); /* the stuck relay returns into mio_io_end and stops there */
	usleep(20000);
	close(pipefd[0]);
}

/* A call that hangs on a member's worker: its batch learns the member
 * was lost and that its task is stuck inside the call (so what the task
 * was lent must outlive the batch); a task queued behind it in another
 * batch was given up without running, so that batch's member is lost
 * but not stuck. */
static void hang_on_a_worker(void **state)
{
	memberio *mio = memberio_new(N, 200, note_lost, NULL);
	int pipefd[2];
	mio_batch hung, queued;
	jobs js;

	(void)state;
	lost_calls = 0;
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	jobs_init(&js);
	mio_batch_init(&hung);
	mio_batch_init(&queued);
	memberio_submit(mio, 0, &hung, run_job, &js.j[0]);
	memberio_submit(mio, 1, &hung, hung_call, &pipefd[0]);
	memberio_submit(mio, 1, &queued, run_job, &js.j[1]);
	memberio_submit(mio, 2, &queued, run_job, &js.j[2]);
	assert_int_equal(mio_batch_wait(&hung), 1u << 1);
	assert_int_equal(mio_batch_stuck(&hung), 1u << 1);
	assert_int_equal(mio_batch_wait(&queued), 1u << 1);
	assert_int_equal(mio_batch_stuck(&queued), 0);
	assert_int_equal(js.j[1].order, 0);
	assert_true(js.j[0].order > 0 && js.j[2].order > 0);
	assert_int_equal(lost_calls, 1);
	memberio_free(mio);
	close(pipefd[1]); /* the stuck worker returns into mio_io_end and stops there */
	usleep(20000);
	close(pipefd[0]);
}

static void hang_on_the_relay(void **state)
{
	(void)state;
	hang_on_a_relay_spinning_for(0);
}

/* The same with the relay and its callers awake between batches
 * (memberio_set_spin): the spinning relay is replaced like a sleeping
 * one, its callers see the same results, and memberio_free stops it. */
static void hang_on_a_spinning_relay(void **state)
{
	(void)state;
	hang_on_a_relay_spinning_for(5000);
}

/* A call that hangs on the relay past its member's bound, long before
 * the member timeout: the other members' small calls stop going to the
 * relay and run on their own workers at once, instead of queueing behind
 * the hung call until the watchdog gives it up. */
static void relay_stalled_sends_others_to_their_workers(void **state)
{
	memberio *mio = memberio_new(N, 60000, note_lost, NULL);
	int pipefd[2];
	mio_batch hung, after;
	jobs js;
	struct timespec t0;

	(void)state;
	lost_calls = 0;
	memberio_force_relay(mio, true);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	jobs_init(&js);
	mio_batch_init_small(mio, &hung);
	mio_batch_bound(&hung);
	memberio_submit(mio, 1, &hung, hung_call, &pipefd[0]);
	assert_true(memberio_relays(mio, 0));
	/* the bound cuts the hung member; the relay is still in its call,
	 * stalled once the call is as old as the bound (it began a little
	 * after the wait did) */
	assert_int_equal(mio_batch_wait_bounded(mio, &hung), 1u << 1);
	for (int i = 0; i < 100 && !memberio_relay_stalled(mio); i++)
		usleep(10000);
	assert_true(memberio_relay_stalled(mio));
	assert_false(memberio_relays(mio, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	mio_batch_init_small(mio, &after);
	memberio_submit(mio, 0, &after, run_job, &js.j[0]);
	memberio_submit(mio, 2, &after, run_job, &js.j[2]);
	assert_int_equal(mio_batch_wait(&after), 0);
	assert_true(seconds_since(&t0) < 5.0);
	assert_true(js.j[0].order > 0 && js.j[2].order > 0);
	assert_int_equal(lost_calls, 0); /* nobody was failed for it */
	close(pipefd[1]); /* the hung call returns in time: no member lost */
	while (!mio_batch_idle(&hung))
		usleep(1000);
	assert_false(memberio_relay_stalled(mio));
	assert_true(memberio_relays(mio, 0));
	memberio_free(mio);
	close(pipefd[0]);
}

/* A task of a batch of calls (mio_batch_bound_calls): a call of its,
 * then a write of its caller's memory. */
typedef struct call_then_write {
	int fd;
	int wrote; /* atomic */
} call_then_write;

static void call_then_write_run(void *arg)
{
	call_then_write *c = arg;
	char ch;

	(void)!MIO_CALL(read(c->fd, &ch, 1));
	__atomic_store_n(&c->wrote, 1, __ATOMIC_RELEASE);
}

static void batch_free(void *arg)
{
	*(bool *)arg = true;
}

/* A batch of calls whose member 1 hangs in its first call, long before
 * the member timeout: the wait cuts it at its bound and returns with
 * member 0's answer; when the call returns, the task writes nothing more,
 * and another thread takes member 1's worker: its next task runs.  Nobody
 * is failed for it. */
static void calls_batch_cuts_a_stalled_call(void **state)
{
	memberio *mio = memberio_new(N, 60000, note_lost, NULL);
	mio_batch *b = malloc(sizeof(*b));
	call_then_write c[2] = { { -1, 0 }, { -1, 0 } };
	int pipefd[2], done[2];
	bool idle = false;
	mio_batch after;
	jobs js;
	struct timespec t0;

	(void)state;
	lost_calls = 0;
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	assert_int_equal(pipe2(done, O_CLOEXEC), 0);
	assert_int_equal(write(done[1], "x", 1), 1);
	c[0].fd = done[0];
	c[1].fd = pipefd[0];
	jobs_init(&js);
	mio_batch_init(b);
	mio_batch_bound_calls(b);
	mio_batch_by_release(b);
	memberio_submit(mio, 0, b, call_then_write_run, &c[0]);
	memberio_submit(mio, 1, b, call_then_write_run, &c[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(mio_batch_wait_calls(mio, b), 1u << 1);
	double took = seconds_since(&t0);
	assert_true(took >= MEMBERIO_BOUND_MIN_MS / 1000.0 - 0.1 && took < 30.0);
	assert_int_equal(__atomic_load_n(&c[0].wrote, __ATOMIC_ACQUIRE), 1);
	assert_true(memberio_stalled(mio, 1));
	mio_batch_release(b, batch_free, &idle);
	assert_false(__atomic_load_n(&idle, __ATOMIC_ACQUIRE));
	close(pipefd[1]); /* the hung call returns */
	for (int i = 0; i < 500 && !__atomic_load_n(&idle, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	assert_true(__atomic_load_n(&idle, __ATOMIC_ACQUIRE));
	free(b);
	assert_int_equal(__atomic_load_n(&c[1].wrote, __ATOMIC_ACQUIRE), 0);
	mio_batch_init(&after);
	memberio_submit(mio, 1, &after, run_job, &js.j[1]);
	assert_int_equal(mio_batch_wait(&after), 0);
	assert_true(js.j[1].order > 0);
	assert_false(memberio_stalled(mio, 1));
	assert_int_equal(lost_calls, 0);
	memberio_free(mio);
	close(pipefd[0]);
	close(done[0]);
	close(done[1]);
}

/* A batch made with mio_batch_init_each (hedged reads): its caller goes
 * on as soon as all but one task are done, while the last still blocks
 * (a read of a pipe until a byte comes), and a wait for all of them
 * gives up at its deadline; the batch then ends whole. */
static void wait_for_all_but_one(void **state)
{
	memberio *mio = memberio_new(N, 0, NULL, NULL);
	int pipefd[2];
	mio_batch b;
	jobs js;

	(void)state;
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	jobs_init(&js);
	mio_batch_init_each(&b);
	memberio_submit(mio, 0, &b, run_job, &js.j[0]);
	memberio_submit(mio, 1, &b, hung_call, &pipefd[0]);
	memberio_submit(mio, 2, &b, run_job, &js.j[2]);
	assert_int_equal(mio_batch_wait_left(&b, 1), 0);
	assert_true(js.j[0].order > 0 && js.j[2].order > 0);
	assert_false(mio_batch_idle(&b));
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int64_t soon = (int64_t)t0.tv_sec * 1000000000 + t0.tv_nsec + 50000000;
	assert_false(mio_batch_wait_left_until(&b, 0, soon)); /* the last still blocks */
	assert_true(seconds_since(&t0) >= 0.05);
	assert_true(mio_batch_wait_left_until(&b, 1, soon));
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	assert_int_equal(mio_batch_wait(&b), 0);
	assert_true(mio_batch_idle(&b));
	memberio_free(mio);
	close(pipefd[0]);
	close(pipefd[1]);
}

#define KIB 1024
#define US 1000

/* `times` reads of `bytes` noted on member idx, each taking ns. */
static void reads(memberio *mio, int idx, int times, size_t bytes, int64_t ns)
{
	for (int i = 0; i < times; i++)
		memberio_note(mio, idx, MIO_READ, bytes, ns);
}

static void slow_by_cost_per_byte(void **state)
{
	memberio *mio = memberio_new(6, 0, NULL, NULL);

	(void)state;
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x3f, 2), 0); /* nothing read yet */
	/* a link at a third of its peers': 3 ms per 64 KiB against 1 ms */
	for (int i = 0; i < 4; i++)
		reads(mio, i, 8, 256 * KIB, 4000 * US);
	reads(mio, 4, 3, 256 * KIB, 12000 * US);
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x3f, 2), 0); /* too few reads to judge */
	reads(mio, 4, 5, 256 * KIB, 12000 * US);
	assert_int_equal(memberio_cost_us(mio, 0, MIO_READ), 1000);
	assert_int_equal(memberio_cost_us(mio, 4, MIO_READ), 3000);
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x3f, 2), 1u << 4);
	/* only among the members asked about: alone, nobody is slow */
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x0f, 2), 0);
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 1u << 4, 2), 0);
	/* of two, judged against the faster one */
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x11, 2), 1u << 4);
	/* per byte: 1 MiB in 16 ms is as fast as 64 KiB in 1 ms */
	reads(mio, 5, 8, 1024 * KIB, 16000 * US);
	assert_int_equal(memberio_cost_us(mio, 5, MIO_READ), 1000);
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x3f, 2), 1u << 4);
	/* twice as slow, but by little: members on local disks, where a
	 * call's jitter is most of its time, are never read around */
	memberio *local = memberio_new(3, 0, NULL, NULL);
	reads(local, 0, 8, 64 * KIB, 20 * US);
	reads(local, 1, 8, 64 * KIB, 20 * US);
	reads(local, 2, 8, 4 * KIB, 600 * US);
	assert_int_equal(memberio_slow_of(local, MIO_READ, 0x7, 2), 0);
	reads(local, 2, 40, 4 * KIB, 1500 * US); /* a short read counts as 64 KiB */
	assert_int_equal(memberio_slow_of(local, MIO_READ, 0x7, 2), 1u << 2);
	/* of many found slow, only as many as the reader can spare, the
	 * slowest: members read from their mount's cache at memory speed
	 * pull the median down */
	memberio *cached = memberio_new(6, 0, NULL, NULL);
	reads(cached, 0, 8, 64 * KIB, 20 * US);
	reads(cached, 1, 8, 64 * KIB, 90 * US);
	reads(cached, 2, 8, 64 * KIB, 170 * US);
	reads(cached, 3, 8, 64 * KIB, 1700 * US);
	reads(cached, 4, 8, 64 * KIB, 1400 * US);
	reads(cached, 5, 8, 64 * KIB, 3100 * US);
	assert_int_equal(memberio_slow_of(cached, MIO_READ, 0x3f, 2), 1u << 3 | 1u << 5);
	assert_int_equal(memberio_slow_of(cached, MIO_READ, 0x3f, 1), 1u << 5);
	assert_int_equal(memberio_slow_of(cached, MIO_READ, 0x3f, 0), 0);
	memberio_free(cached);
	/* a few reads held up (a busy machine's scheduler) are not a slow
	 * member: most of its last 8 reads must be slow */
	memberio *busy = memberio_new(3, 0, NULL, NULL);
	reads(busy, 0, 8, 64 * KIB, 20 * US);
	reads(busy, 1, 8, 64 * KIB, 20 * US);
	reads(busy, 2, 5, 64 * KIB, 20 * US);
	reads(busy, 2, 3, 64 * KIB, 10000 * US);
	assert_int_equal(memberio_slow_of(busy, MIO_READ, 0x7, 1), 0);
	reads(busy, 2, 2, 64 * KIB, 10000 * US);
	assert_int_equal(memberio_slow_of(busy, MIO_READ, 0x7, 1), 1u << 2);
	memberio_free(busy);
	/* a member that recovers is back within a few reads */
	reads(mio, 4, 8, 256 * KIB, 4000 * US);
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x3f, 2), 0);
	memberio_free(local);
	memberio_free(mio);
}

/* Writes are judged by the same rule as reads, apart from them: a link
 * slow one way only is slow for that kind only.  A member forced slow (the
 * fault rule of tests) is slow from the start, within `most`. */
static void writes_judged_apart(void **state)
{
	memberio *mio = memberio_new(6, 0, NULL, NULL);

	(void)state;
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 8; j++)
			memberio_note(mio, i, MIO_WRITE, 256 * KIB, (i == 2 ? 40000 : 4000) * US);
	reads(mio, 0, 8, 256 * KIB, 4000 * US);
	reads(mio, 1, 8, 256 * KIB, 4000 * US);
	reads(mio, 2, 8, 256 * KIB, 4000 * US);
	assert_int_equal(memberio_cost_us(mio, 2, MIO_WRITE), 10000);
	assert_int_equal(memberio_cost_us(mio, 2, MIO_READ), 1000);
	assert_int_equal(memberio_slow_of(mio, MIO_WRITE, 0x3f, 1), 1u << 2);
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x07, 1), 0);
	assert_int_equal(memberio_slow_of(mio, MIO_WRITE, 0x3f, 0), 0);
	memberio_force_slow(mio, MIO_WRITE, 1u << 5);
	assert_int_equal(memberio_slow_of(mio, MIO_WRITE, 0x3f, 2), 1u << 2 | 1u << 5);
	assert_int_equal(memberio_slow_of(mio, MIO_WRITE, 0x3f, 1), 1u << 5);
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x3f, 1), 0);
	memberio_free(mio);
}

/* A sync's time counts in the write cost, shared out per byte over the
 * writes since the member's last sync: a member whose writes are answered
 * at once and whose syncs wait for a slow link is slow for writes; one
 * whose syncs are fast, or slower by less than the jitter margin, is not;
 * a sync with nothing written since the last one charges nothing. */
static void syncs_count_in_write_cost(void **state)
{
	memberio *mio = memberio_new(6, 0, NULL, NULL);

	(void)state;
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 8; j++) /* 2 MiB each, 250 us per 64 KiB */
			memberio_note(mio, i, MIO_WRITE, 256 * KIB, 1000 * US);
	assert_int_equal(memberio_slow_of(mio, MIO_WRITE, 0x3f, 1), 0);
	for (int i = 0; i < 6; i++) /* 2 s on member 2, 20 ms on 4, 2 ms elsewhere */
		memberio_note_sync(mio, i, (i == 2 ? 2000000 : i == 4 ? 20000 : 2000) * US);
	assert_int_equal(memberio_cost_us(mio, 2, MIO_WRITE), 250 + 62500);
	assert_int_equal(memberio_cost_us(mio, 0, MIO_WRITE), 250 + 62);
	assert_int_equal(memberio_cost_us(mio, 4, MIO_WRITE), 250 + 625);
	assert_int_equal(memberio_slow_of(mio, MIO_WRITE, 0x3f, 1), 1u << 2);
	assert_int_equal(memberio_slow_of(mio, MIO_READ, 0x3f, 1), 0);
	memberio_note_sync(mio, 0, INT64_C(10000000) * US);
	assert_int_equal(memberio_cost_us(mio, 0, MIO_WRITE), 250 + 62);
	/* Past the window, each write counted gets the share of the bytes
	 * synced: 32 writes of 64 KiB, one sync of 320 ms, 10 ms each. */
	for (int j = 0; j < 32; j++)
		memberio_note(mio, 1, MIO_WRITE, 64 * KIB, 100 * US);
	memberio_note_sync(mio, 1, 320000 * US);
	assert_int_equal(memberio_cost_us(mio, 1, MIO_WRITE), 100 + 10000);
	assert_int_equal(memberio_slow_of(mio, MIO_WRITE, 0x3f, 2), 1u << 1 | 1u << 2);
	memberio_free(mio);
}

/* mio_bounded: a call that returns in time is waited for; one that does
 * not is given up at the deadline, its arguments left to its thread, which
 * runs the late hook once the call returns. */
typedef struct bounded_job {
	int fd;        /* read one byte from it first (-1: none) */
	int ran, late; /* atomic */
} bounded_job;

static void bounded_fn(void *arg)
{
	bounded_job *b = arg;
	char c;

	if (b->fd >= 0)
		assert_int_equal(read(b->fd, &c, 1), 1);
	__atomic_store_n(&b->ran, 1, __ATOMIC_RELEASE);
}

static void bounded_late(void *arg)
{
	bounded_job *b = arg;

	__atomic_store_n(&b->late, 1, __ATOMIC_RELEASE);
}

static void bounded_waits_or_gives_up(void **state)
{
	bounded_job quick = { .fd = -1 }, stuck = { 0 };
	int p[2];

	(void)state;
	assert_true(mio_bounded_wait(mio_bounded_start(bounded_fn, bounded_late, &quick),
	                             mio_deadline_ms(60000)));
	assert_int_equal(quick.ran, 1);
	assert_int_equal(quick.late, 0);
	assert_true(mio_bounded_wait(mio_bounded_start(bounded_fn, bounded_late, &quick), 0));
	assert_int_equal(pipe(p), 0);
	stuck.fd = p[0];
	assert_false(mio_bounded_wait(mio_bounded_start(bounded_fn, bounded_late, &stuck),
	                              mio_deadline_ms(50)));
	assert_int_equal(__atomic_load_n(&stuck.ran, __ATOMIC_ACQUIRE), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	for (int i = 0; i < 60000 && !__atomic_load_n(&stuck.late, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	assert_int_equal(__atomic_load_n(&stuck.ran, __ATOMIC_ACQUIRE), 1);
	assert_int_equal(__atomic_load_n(&stuck.late, __ATOMIC_ACQUIRE), 1);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_batch_runs_on_workers),
		cmocka_unit_test(caller_runs_the_last_task),
		cmocka_unit_test(caller_keeps_member_order),
		cmocka_unit_test(no_caller_run_with_a_timeout),
		cmocka_unit_test(hang_on_a_worker),
		cmocka_unit_test(latency_follows_the_calls),
		cmocka_unit_test(slow_by_cost_per_byte),
		cmocka_unit_test(writes_judged_apart),
		cmocka_unit_test(syncs_count_in_write_cost),
		cmocka_unit_test(bounded_waits_or_gives_up),
		cmocka_unit_test(small_batch_on_the_relay),
		cmocka_unit_test(hang_on_the_relay),
		cmocka_unit_test(hang_on_a_spinning_relay),
		cmocka_unit_test(relay_stalled_sends_others_to_their_workers),
		cmocka_unit_test(wait_for_all_but_one),
		cmocka_unit_test(calls_batch_cuts_a_stalled_call),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
