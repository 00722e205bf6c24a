/* SPDX-License-Identifier: MIT */
/*
 * What memberio.c and memberio_bounded.c share and nothing else sees: the
 * queue node, the worker and the memberio themselves (memberio.c says
 * how they work).  Included after memberio.h.
 */
#ifndef ECFS_MEMBERIO_PRIVATE_H
#define ECFS_MEMBERIO_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* after memberio.h, whose types these use */

#define IO_LOST INT64_MIN

typedef struct mio_task {
	void (*fn)(void *);
	void *arg;
	mio_batch *batch;
	struct mio_task *next;
	int idx;
} mio_task;

typedef struct worker {
	pthread_t thread;
	pthread_mutex_t lock; /* queue, current, stop, lost, stuck; a leaf, after rlock */
	pthread_cond_t wake;
	mio_task *head, *tail;
	mio_task *current; /* the task being run */
	int64_t io_since;  /* ms, CLOCK_MONOTONIC */
	int64_t call_ns;   /* start of the member call under way */
	uint64_t latency_ns; /* moving average of member calls (atomic) */
	struct cost {
		uint64_t ns[8];  /* the last COST_WINDOW transfers, ns per COST_UNIT (atomic) */
		int64_t last_ns; /* when the last one noted ended (atomic) */
		unsigned cnt;    /* transfers noted: the next slot of ns (atomic) */
		unsigned synced_at; /* writes: cnt at the last sync (atomic) */
		uint64_t unsynced;  /* writes: bytes noted since, as units (atomic) */
	} cost[MIO_COSTS];    /* reads, writes */
	uint64_t forced_slow;  /* bit kind: judged slow for that kind (fault tests) */
	bool stop, lost;
	unsigned lost_ms;  /* lost: how long its call had waited (the verdict's) */
	bool changes;      /* the call under way changes the member (atomic) */
	bool stuck;        /* given up in its own member call */
	bool joined;       /* memberio_free: its thread ended, to be freed */
	bool relay, done;  /* the relay; done: it has stopped (under rlock) */
	int idx;
	int run_idx;       /* the relay: the member of the task under way */
	unsigned timeout_ms;
	memberio *mio;
	uint8_t *bounce;
	size_t bounce_len;
} worker;

struct memberio {
	int n;
	unsigned timeout_ms;
	mio_lost_fn on_lost;
	void *ctx;
	worker **w;
	pthread_t watchdog;
	bool watching;
	pthread_mutex_t lock; /* the watchdog's sleep, stop; order: a leaf */
	pthread_cond_t wake;
	bool stop;
	/* The relay: one queue of small tasks of any member, run by one
	 * thread at a time (relay_main) */
	pthread_mutex_t rlock; /* the relay's queue, relay, rstop; before a worker's lock */
	pthread_cond_t rwake, rdone;
	mio_task *rhead, *rtail;
	unsigned rposted;  /* tasks queued on the relay so far (atomic): what
	                    * an idle relay watches while it spins */
	worker *relay; /* the thread running it now; NULL: none, use the workers */
	bool rstop;
	bool relay_all; /* memberio_force_relay (tests) */
	bool at_bound;  /* memberio_give_up_at_bound (atomic) */
	unsigned spin_us; /* memberio_set_spin (atomic) */
};

/* The worker (or relay) this thread is, or NULL. */
worker *memberio_self(void);
/* How long the watchdog lets a call of member idx run on w (a worker,
 * or the relay in a call of idx) before it gives the member up: the
 * timeout, or the member's bound if sooner under memberio_give_up_at_bound
 * (memberio_bounded.c). */
unsigned mio_give_up_ms(memberio *mio, worker *w, int idx);
/* Tasks of a batch of mio_batch_bound_calls (memberio_bounded.c):
 * mio_task_starts, before t runs: false if it was cut already (it is
 * not run); mio_call_opens, at each member call's start, and
 * mio_call_closes, at its end: false if it was cut meanwhile.  True for
 * (or no-ops on) any other task, and t NULL. */
bool mio_task_starts(mio_task *t);
void mio_call_opens(mio_task *t);
bool mio_call_closes(mio_task *t);
/* Stays awake up to the spin time (memberio_set_spin) for a batch that
 * went wholly to the relay to fall to left tasks; true if it did. */
bool mio_spin_for_relay(mio_batch *b, int left);
/* CLOCK_MONOTONIC in nanoseconds. */
int64_t memberio_now_ns(void);

#endif
