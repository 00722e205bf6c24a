/* SPDX-License-Identifier: MIT */
/*
 * Throughput measurement for ecfs-bench.  A job is one call (encode a
 * stripe, copy k blocks, ...) that is run again and again.  Jobs that are
 * compared with each other are measured together, round-robin: each round
 * gives every job one time slice, so a burst of machine noise (another
 * process, a frequency change) lands on all of them rather than on one.
 * Short calls are batched so the clock is read rarely compared with the work.
 */
#ifndef BENCH_TIMER_H
#define BENCH_TIMER_H

#include <stddef.h>

typedef void (*bench_fn)(void *ctx);

typedef struct bench_job {
	bench_fn fn;          /* one call of the measured operation */
	void *ctx;
	double bytes_per_call; /* data bytes one call processes, for the rate */
	long batch;           /* calls between two clock reads (set by calibration) */
	double best_rate;     /* best round, in bytes per second */
	double median_rate;   /* median round, in bytes per second */
} bench_job;

/* Which clock times the jobs: the calling thread's CPU time (the default:
 * the same as wall time on an idle machine, since the coding calls never
 * sleep, and not inflated by other processes taking the CPU on a busy one)
 * or wall time (CLOCK_MONOTONIC, what a user waits for). */
typedef enum bench_clock { BENCH_CLOCK_CPU, BENCH_CLOCK_WALL } bench_clock;
void bench_set_clock(bench_clock clock);

/* Seconds on the chosen clock. */
double bench_now(void);

/*
 * Measures every job: warms each one up and sizes its batch so one timed
 * batch lasts about a millisecond, then runs `rounds` rounds; in each round
 * every job runs for seconds/rounds (at least one batch).  Fills best_rate
 * and median_rate.
 */
void bench_jobs_run(bench_job *jobs, int n_jobs, double seconds, int rounds);

#endif /* BENCH_TIMER_H */
