/* SPDX-License-Identifier: MIT */
/*
 * Interleaved, batched timing of ecfs-bench jobs (see bench_timer.h).  The
 * coding calls are single-threaded and never sleep, so the thread's CPU
 * time equals wall time on an idle machine; on a shared one it leaves out
 * the time other processes held the CPU, which wall time would charge to
 * whichever job happened to be running.  The best round is the headline
 * figure (the run least disturbed by the machine); the median is kept as a
 * check.
 */
#include "bench_timer.h"

#include <stdlib.h>
#include <time.h>

/* One timed batch should last about this long: long enough that reading
 * the clock (tens of nanoseconds) is noise, short enough to give many
 * batches per round. */
#define BENCH_BATCH_SECONDS 1e-3
#define BENCH_MAX_ROUNDS 64

static clockid_t clock_id = CLOCK_THREAD_CPUTIME_ID;

void bench_set_clock(bench_clock clock)
{
	clock_id = clock == BENCH_CLOCK_WALL ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
}

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_batch(const bench_job *job, long calls)
{
	for (long i = 0; i < calls; i++)
		job->fn(job->ctx);
}

/* Warms the job up (first calls build tables, fault pages in, fill caches)
 * and finds the batch size. */
static void calibrate(bench_job *job)
{
	long batch = 1;

	run_batch(job, 1);
	for (;;) {
		double t0 = bench_now();
		run_batch(job, batch);
		double dt = bench_now() - t0;
		if (dt >= BENCH_BATCH_SECONDS || batch >= (1L << 30))
			break;
		/* Grow towards the target, at most 16x per step so one odd
		 * fast reading cannot make a batch that runs for seconds. */
		double grow = dt > 0 ? BENCH_BATCH_SECONDS / dt * 1.2 : 16.0;
		if (grow > 16.0)
			grow = 16.0;
		if (grow < 2.0)
			grow = 2.0;
		batch = (long)((double)batch * grow);
	}
	job->batch = batch;
}

/* Runs one job for `slice` seconds; returns its rate in bytes per second. */
static double run_slice(const bench_job *job, double slice)
{
	long calls = 0;
	double t0 = bench_now(), t;

	do {
		run_batch(job, job->batch);
		calls += job->batch;
		t = bench_now();
	} while (t - t0 < slice);
	return (double)calls * job->bytes_per_call / (t - t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void bench_jobs_run(bench_job *jobs, int n_jobs, double seconds, int rounds)
{
	double rates[BENCH_MAX_ROUNDS];

	if (rounds < 1)
		rounds = 1;
	if (rounds > BENCH_MAX_ROUNDS)
		rounds = BENCH_MAX_ROUNDS;
	for (int j = 0; j < n_jobs; j++)
		calibrate(&jobs[j]);

	double slice = seconds / rounds;
	double *all = calloc((size_t)n_jobs * (size_t)rounds, sizeof(*all));
	if (!all)
		abort();
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < n_jobs; j++)
			all[(size_t)j * (size_t)rounds + (size_t)r] = run_slice(&jobs[j], slice);

	for (int j = 0; j < n_jobs; j++) {
		for (int r = 0; r < rounds; r++)
			rates[r] = all[(size_t)j * (size_t)rounds + (size_t)r];
		qsort(rates, (size_t)rounds, sizeof(rates[0]), cmp_double);
		jobs[j].best_rate = rates[rounds - 1];
		jobs[j].median_rate = rounds % 2 ? rates[rounds / 2]
		                                 : (rates[rounds / 2 - 1] + rates[rounds / 2]) / 2;
	}
	free(all);
}
