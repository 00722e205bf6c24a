/* SPDX-License-Identifier: MIT */
/*
 * Parallel member I/O: one worker thread per member, each with its own
 * queue, so the n strips of a stripe are hashed and written (or read and
 * verified) at the same time on every member.  A caller groups its tasks
 * in a batch and waits for the whole batch; tasks of one member run in
 * submission order.
 *
 * The member I/O timeout: every member call a worker makes is bracketed
 * (mio_io_begin/mio_io_end, memberops.c), and a watchdog thread gives up
 * on a worker whose call has not returned after the timeout.  Such a
 * member is lost for this memberio: its pending and later tasks complete
 * at once without running, their batches learn it from mio_batch_wait,
 * and the on_lost callback fails the member.  A call that hangs cannot be
 * cancelled, so the worker is left where it is; should the call return,
 * the worker stops in mio_io_end for good, before it touches anything of
 * the task's caller again.  Reads on a worker therefore land in the
 * worker's own bounce buffer first (mio_bounce), never straight in the
 * caller's memory, which may be reused by then (but with mop_pread_lent,
 * whose caller keeps the memory as for a large write).  A write cannot be made
 * safe that way at no cost: the kernel may still copy from the caller's
 * buffer when the call comes back.  Small writes go through the bounce
 * buffer too; a batch says which of its tasks were given up inside their
 * call (mio_batch_stuck), and the caller of a large write keeps the
 * memory it lent them for good (a member is given up once a mount, so
 * that is at most one write's buffers per member).
 *
 * The relay: on two cores, waking a thread costs more than a small member
 * call on a local filesystem, so a batch of small calls (namespace
 * operations, lookups, chunk opens, a small file's strips) made with
 * mio_batch_init_small hands the tasks of its fast members to one relay
 * thread that runs them one after the other: one wake-up instead of one
 * per member.  Each call there is bracketed as its member's, so a call
 * that hangs gives up that member (as above) and the relay with it, and a
 * new relay takes the rest of the queue.
 */
#ifndef ECFS_MEMBERIO_H
#define ECFS_MEMBERIO_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct memberio memberio;

typedef struct mio_batch {
	int pending;   /* tasks not done yet (atomic), the word the waiter sleeps on */
	uint64_t lost; /* bit i: member i's tasks were given up (atomic) */
	uint64_t stuck; /* bit i: member i's task was given up inside its call (atomic) */
	memberio *caller; /* mio_batch_init_caller without a timeout */
	struct mio_task *held; /* its last task, not queued yet */
	bool small;       /* mio_batch_init_small with a timeout */
	bool wake_each;   /* mio_batch_init_each: woken at every task done */
	uint64_t relayed, apart; /* bit i: member i's tasks go to the relay, to its worker */
	int64_t spin_ns;  /* mio_batch_init_small: how long its caller stays awake for it */
	/* mio_batch_bound: */
	bool bounded;
	bool calls;       /* mio_batch_bound_calls: cut in a member call, not only before */
	bool by_release;  /* ended by mio_batch_release, never by its caller */
	int refs;         /* by_release: its caller's and its tasks' (atomic) */
	void (*on_idle)(void *);
	void *idle_arg;
	uint64_t asked;   /* bit i: member i has a task in the batch */
	uint64_t finished; /* bit i: member i's task is done (atomic) */
	uint8_t settle[64]; /* per member: MIO_OPEN, MIO_CLAIMED or MIO_CUT (atomic) */
} mio_batch;

/* Called from the watchdog thread once per member given up, with the
 * time its call had run (the timeout, or memberio_give_up_at_bound's
 * bound). */
typedef void (*mio_lost_fn)(void *ctx, int idx, unsigned timeout_ms);

/* timeout_ms 0: no timeout (no watchdog, no bounce buffers). */
memberio *memberio_new(int n, unsigned timeout_ms, mio_lost_fn on_lost, void *ctx);
void memberio_free(memberio *mio);
/* True once member idx was given up: it stays so for this memberio (the
 * next mount), since its worker may still be inside the call. */
bool memberio_lost(memberio *mio, int idx);

void mio_batch_init(mio_batch *b);
/* For a batch its caller waits for right after the last submission: the
 * caller runs the last task itself in mio_batch_wait, if that member's
 * worker is idle, rather than sleep through a hand-off (two context
 * switches, which cost more than a small member call).  Without a
 * timeout only: with one, every member call is made and watched on its
 * worker. */
void mio_batch_init_caller(memberio *mio, mio_batch *b);
/* For a batch of small member calls (a few KiB at most) its caller waits for
 * before it submits more: with a timeout, the tasks of each member whose
 * latency is under MEMBERIO_RELAY_US go to the relay, one after the other
 * on one thread (the first task of a member in the batch decides where
 * all of that member's go); slower members' (remote ones) go to their
 * workers, in parallel.  Without a timeout, as mio_batch_init_caller.
 * Not for tasks that must queue behind earlier ones still queued on a
 * member's worker by another batch: a relayed task may overtake them. */
#define MEMBERIO_RELAY_US 200
void mio_batch_init_small(memberio *mio, mio_batch *b);
/* The rule of mio_batch_init_small: member idx's small calls go to the
 * relay now (its latency is under MEMBERIO_RELAY_US, it was not given
 * up, and the relay is not stuck in a call past its member's bound:
 * behind a member that stopped answering, the others' calls go to their
 * own workers instead of waiting for the watchdog). */
bool memberio_relays(memberio *mio, int idx);
/* True while the relay is in one member call for longer than that
 * member's bound (memberio_bound_ms). */
bool memberio_relay_stalled(memberio *mio);
/* Waking a sleeping thread costs tens of microseconds on a virtual
 * machine (an interrupt to another CPU), more than a relayed batch of
 * namespace calls takes.  With us > 0 the relay stays awake that long
 * for its next task once it has none, and the caller of a small batch
 * that went wholly to the relay that long for its end, before either
 * sleeps: one request's batches, and the next request's, meet a thread
 * that is running.  Awake means yielding the CPU to any thread that has
 * work; an idle daemon sleeps after that time.  0 (the default): never. */
void memberio_set_spin(memberio *mio, unsigned us);
/* Tests: with on, every member's small calls go to the relay whatever its
 * latency (a busy machine can push a fast member past the threshold). */
void memberio_force_relay(memberio *mio, bool on);
/* Queues fn(arg) on member idx's worker; a lost member's task is not run
 * and only sets its bit in b->lost. */
void memberio_submit(memberio *mio, int idx, mio_batch *b, void (*fn)(void *), void *arg);
/* Waits until every task of the batch has run or was given up, destroys
 * the batch and returns the lost mask: the tasks of those members may
 * have run in part and said nothing true; the caller treats them as
 * failed with ETIMEDOUT. */
uint64_t mio_batch_wait(mio_batch *b);
/* After mio_batch_wait: the members whose task of this batch was given up
 * inside its member call, which may still read (never write) the memory
 * the task was handed, should the call come back.  A subset of the lost
 * mask. */
uint64_t mio_batch_stuck(const mio_batch *b);
/* One stage of per-member calls, in parallel: fn(args[idx]) for every
 * member idx < n whose args[idx] is set, in a batch of small calls
 * (mio_batch_init_small) or else one its caller waits for
 * (mio_batch_init_caller).  The members of here (whose calls cannot wait:
 * mop_writes_here, mop_reads_here) make theirs on the calling thread,
 * after the others are handed out.  Waits for the batch and returns the
 * lost mask (mio_batch_wait); *stuck, unless NULL, takes mio_batch_stuck. */
uint64_t memberio_run_stage(memberio *mio, bool small, int n, void (*fn)(void *),
                            void *const args[], uint64_t here, uint64_t *stuck);
/* free(p), or, if lent to a task given up inside its call, keep p for
 * the life of the process (reachable, so leak checkers do not count
 * it). */
void mio_free_or_keep(void *p, bool lent);
/* For a batch whose caller goes on with the first of its answers (hedged
 * reads, stripe_fetch.c): mio_batch_wait_left wakes at every task done, not
 * only at the last.  Its tasks must own everything they touch, since the
 * caller may return before the last has run; it still ends the batch with
 * mio_batch_wait, once mio_batch_idle says every task is done. */
void mio_batch_init_each(mio_batch *b);
/* Waits until at most `left` tasks of the batch are pending; returns the
 * lost mask so far.  The batch goes on, and may take more tasks. */
uint64_t mio_batch_wait_left(mio_batch *b, int left);
/* The same, giving up at deadline_ns (CLOCK_MONOTONIC): true if at most
 * `left` are pending. */
bool mio_batch_wait_left_until(mio_batch *b, int left, int64_t deadline_ns);
/* True once every task of the batch has run or was given up. */
bool mio_batch_idle(const mio_batch *b);

/* Bounded reads.  A read waits for a member that stopped answering no
 * longer than memberio_bound_ms (the one home of the rule): past it, the
 * read treats the member as an erasure for this call and decodes from the
 * others, while the member's call finishes in the background; only the
 * member timeout (the watchdog above) fails the member.  The bound is
 * MEMBERIO_BOUND_FACTOR times the member's latency, and not less than
 * MEMBERIO_BOUND_MIN_MS; it applies with a member timeout only (without
 * one, a read waits for every answer). */
#define MEMBERIO_BOUND_MIN_MS 2000
#define MEMBERIO_BOUND_FACTOR 4
unsigned memberio_bound_ms(memberio *mio, int idx);
/* For a run that goes on without a member rather than ask it again
 * (ecfs-fsck): from now on the watchdog gives up a member whose call has
 * run past its bound, when that is sooner than the timeout, as it would
 * at the timeout (the member is lost, on_lost is told the time waited).
 * Not a call that changes the member (mio_io_changes: a write, a sync, a
 * namespace change may take long on a busy disk): those keep the
 * timeout. */
void memberio_give_up_at_bound(memberio *mio);
/* The longest wait for a member's first answer, before it has a latency
 * (a look at it while a volume opens): the timeout, or with at_bound
 * (as above) the least bound if sooner. */
unsigned memberio_first_wait_ms(unsigned timeout_ms, bool at_bound);
/* Lost (memberio_lost): how long the call it was given up in had run,
 * in ms (the timeout, or its bound); 0 if not lost. */
unsigned memberio_lost_ms(memberio *mio, int idx);
/* True while member idx's worker (or the relay, for it) is in one member
 * call for longer than its bound: reads go around it without asking. */
bool memberio_stalled(memberio *mio, int idx);
/* Makes b, just initialised, a bounded batch: at most one task per member,
 * waited for with mio_batch_wait_bounded.  A task of such a batch writes
 * nothing of its caller's before mio_claim says it may. */
void mio_batch_bound(mio_batch *b);
/* On a worker, in a task of a bounded batch, before it first writes
 * memory of its caller's: true if the caller still waits for it (and will
 * until the task ends), false if the caller has gone on without it (the
 * task then touches only what it owns).  True outside a bounded batch. */
enum { MIO_OPEN, MIO_CLAIMED, MIO_CUT };
bool mio_claim(void);
/* Waits for a bounded batch until every task is done, or until the
 * largest bound (memberio_bound_ms) of the members with a task has passed
 * since the call; then the tasks not claimed yet are cut (mio_claim
 * fails for them) and the claimed ones waited for.  Returns the cut
 * members: the caller treats them as erasures for this call, keeps
 * whatever their tasks may still touch until the batch is idle
 * (mio_batch_idle), and never waits for it with mio_batch_wait_left. */
uint64_t mio_batch_wait_bounded(memberio *mio, mio_batch *b);
/* A bounded batch for tasks that know nothing of claims (volume_ask_members):
 * each is cut only while it waits for a member, in a member call or
 * queued, and only once that member (or the relay it waits on) is stalled
 * (memberio_stalled, memberio_relay_stalled), so a long task on a member
 * that answers is never cut.  A task cut before it starts never runs; one
 * cut in a call stops when the call returns (mio_io_end never returns to
 * it), another thread taking its worker's place: a task writes its
 * caller's memory only between member calls, as for the timeout.  At most
 * one task per member; waited for with mio_batch_wait_calls. */
void mio_batch_bound_calls(mio_batch *b);
/* Waits for such a batch until every task not cut is done; returns the
 * members cut (their tasks said nothing; the caller keeps the batch until
 * it is idle, mio_batch_by_release). */
uint64_t mio_batch_wait_calls(memberio *mio, mio_batch *b);
/* For a bounded batch in memory of its own (heap): from now on the batch
 * belongs to its tasks; on_idle(arg) runs once every task is done (at
 * once, if they are), on the thread of the last. */
void mio_batch_by_release(mio_batch *b);
void mio_batch_release(mio_batch *b, void (*on_idle)(void *), void *arg);

/* True on a worker thread or the relay: a task must not wait for another task (two
 * workers could wait for each other), so it runs such work inline. */
bool memberio_on_worker(void);
/* The timeout this memberio was made with (0: none). */
unsigned memberio_timeout(const memberio *mio);
/* Member idx's latency: a moving average of the member calls its worker
 * made (about the last 8), in microseconds; 0 before the first. */
uint64_t memberio_latency_us(memberio *mio, int idx);

/* Fastest-k reads and writes past a slow member (stripe_fetch.c, ecfile_io.c):
 * the stripe layer times each read of strips, and each in-place write of
 * a commit's strips and records, and notes it here.  A member's cost of
 * each kind is the median over its last 8 transfers of that kind of the
 * time per 64 KiB (a shorter one counts as 64 KiB): most of them must be
 * slow for it to be.  Per byte, so that a member whose link is slow
 * stands out from its peers on large transfers, where the time is the
 * transfer's.  Reads and writes are judged apart (a link may be slow one
 * way only), by the one rule of memberio_slow_of. */
enum mio_cost { MIO_READ, MIO_WRITE, MIO_COSTS };
void memberio_note(memberio *mio, int idx, enum mio_cost kind, size_t bytes, int64_t ns);
/* A sync (fdatasync, fsync) of a chunk on member idx that took ns: its
 * time is shared out, per byte, over the writes noted on that member since
 * its last sync, and added to those still counted in its write cost, so
 * that a mount that answers writes before they cross its link (sshfs
 * queues them) and waits at the sync shows its real cost. */
void memberio_note_sync(memberio *mio, int idx, int64_t ns);
/* Member idx's cost of kind in microseconds per 64 KiB; 0 before its
 * first transfer of that kind. */
uint64_t memberio_cost_us(memberio *mio, int idx, enum mio_cost kind);
/* Hedged reads (stripe_hedge.c, repair_pass.c): how long reads of `bytes` from each
 * member in `members` may take before they are late and a spare member
 * is asked, in microseconds: MEMBERIO_LATE_FACTOR times the slowest one's
 * read cost scaled to the read, and not less than MEMBERIO_LATE_MIN_US.
 * So a read costs its k transfers while they answer in their usual time,
 * and one more only in the tail. */
#define MEMBERIO_LATE_FACTOR 2
#define MEMBERIO_LATE_MIN_US 200
uint64_t memberio_late_us(memberio *mio, uint64_t members, size_t bytes);
/* The members of `among` (bit i: member i) clearly slower than their
 * peers now for kind: each with at least 4 transfers noted, a cost at
 * least MEMBERIO_SLOW_FACTOR times the lower median of those of `among`
 * and at least MEMBERIO_SLOW_EXCESS_US above it (so that members all
 * fast, where a call's jitter is a large share, stay in), and a transfer
 * noted within the last MEMBERIO_SLOW_RECHECK_MS: one gone around for
 * that long is asked again, so a member that recovered is seen.  At most
 * `most` of them, the slowest (the caller needs the others). */
#define MEMBERIO_SLOW_FACTOR 2
#define MEMBERIO_SLOW_EXCESS_US 1000
#define MEMBERIO_SLOW_RECHECK_MS 5000
uint64_t memberio_slow_of(memberio *mio, enum mio_cost kind, uint64_t among, int most);
/* Test builds (ECFS_FAULT's slow rule): the members in `members` are
 * slow for kind from now on, whatever their times. */
void memberio_force_slow(memberio *mio, enum mio_cost kind, uint64_t members);

/* Around one member call (memberops.c); no-ops outside a worker.  They
 * time the call for the member's latency, and with a timeout they let the
 * watchdog see it; mio_io_end never returns if the call was given up. */
void mio_io_begin(void);
void mio_io_end(void);
/* In a member call (after mio_io_begin): this call changes the member
 * (memberio_give_up_at_bound leaves it to the timeout). */
void mio_io_changes(void);
/* A raw system call on a member as one timed member call (its result
 * must go to the caller's own stack, never to memory of the task's
 * caller: reads use mop_pread, which bounces). */
#define MIO_CALL(expr)                                                          \
	({                                                                      \
		mio_io_begin();                                                 \
		__auto_type mio_r_ = (expr);                                    \
		int mio_e_ = errno;                                             \
		mio_io_end();                                                   \
		errno = mio_e_;                                                 \
		mio_r_;                                                         \
	})

/* A call bounded by a timeout before there are workers (the first look
 * at the members while a volume opens, ecfs-fsck's look at their paths):
 * fn(arg) on a thread of its own.  mio_bounded_wait waits until it has
 * returned or the deadline (mio_deadline_ms; 0: for ever) has passed, and
 * frees the handle: true if it returned.  If not, it is abandoned: arg
 * belongs to that thread from then on (the caller must not touch it), and
 * late(arg) frees it once fn ever returns.  Without a thread (out of
 * resources) fn runs at once, inline. */
typedef struct mio_bounded mio_bounded;
mio_bounded *mio_bounded_start(void (*fn)(void *), void (*late)(void *), void *arg);
bool mio_bounded_wait(mio_bounded *b, int64_t deadline_ms);
/* The deadline timeout_ms from now, for mio_bounded_wait (0: none). */
int64_t mio_deadline_ms(unsigned timeout_ms);
/* Monotonic milliseconds, the clock of the deadlines. */
int64_t mio_now_ms(void);

/* On a worker with a timeout: its bounce buffer of at least len bytes for
 * a read, or a write of at most MIO_BOUNCE_WRITE_MAX; otherwise (or out
 * of memory) NULL: read or write in place. */
#define MIO_BOUNCE_WRITE_MAX (64 * 1024)
uint8_t *mio_bounce(size_t len);
/* True if [p, p+len) lies in this worker's bounce buffer: a task that
 * reads there owns what it reads until it copies it out (mio_claim). */
bool mio_bounce_holds(const void *p, size_t len);

#endif
