/* SPDX-License-Identifier: MIT */
/*
 * Mirrored namespace operations (see mirror.h): the primary member decides,
 * the others follow, broken members are dropped through
 * volume_member_error(), and more than m failed members means EIO.
 */
#include "mirror.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_internal.h"

/* True if rc (a result from member idx) means the member is now failed and
 * its answer must be ignored.  volume_member_error() tells answers (ENOENT,
 * EEXIST, ...) from breakage, and also notices an answer that comes from a
 * member whose root has vanished. */
static bool member_broke(volume *v, int idx, int rc, const char *what)
{
	if (rc >= 0)
		return false;
	return volume_member_error(v, idx, -rc, what);
}

/* Every member's part runs on its I/O worker (volume_on_member), so a
 * member that stops answering costs an operation the I/O timeout, not
 * forever; the fns follow that function's rule about their outputs. */
struct member_run {
	volume *v;
	int idx;
	const char *path, *to;
	mirror_fn fn;
	mirror_fn2 fn2;
	void *arg;
};

static int member_run(void *p)
{
	const struct member_run *r = p;
	const char *leaf1, *leaf2;
	int fd1 = volume_parent_fd(r->v, r->idx, r->path, &leaf1), fd2 = -1, rc;

	if (fd1 < 0)
		return fd1;
	if (r->to) {
		fd2 = volume_parent_fd(r->v, r->idx, r->to, &leaf2);
		rc = fd2 < 0 ? fd2 : r->fn2(r->idx, fd1, leaf1, fd2, leaf2, r->arg);
	} else {
		rc = r->fn(r->idx, fd1, leaf1, r->arg);
	}
	MIO_CALL(close(fd1));
	if (fd2 >= 0)
		MIO_CALL(close(fd2));
	return rc;
}

/* One member's result for the operation r describes (r->idx is set). */
static int run_member(struct member_run *r, int idx)
{
	r->idx = idx;
	return volume_on_member(r->v, idx, member_run, r);
}

/* fn (set in the runs) on the members in mask at once (volume_on_members):
 * runs[idx].idx is set, rcs[idx] gets each member's result. */
static void run_members(volume *v, uint64_t mask, struct member_run *runs, int *rcs,
                        bool large)
{
	void *args[64];
	for (int idx = 0; idx < volume_n(v); idx++) {
		runs[idx].idx = idx;
		args[idx] = &runs[idx];
	}
	if (large)
		volume_on_members_apart(v, mask, member_run, args, rcs);
	else
		volume_on_members(v, mask, member_run, args, rcs);
}

/* Takes member idx's answer rc into the decision (*decided, *answer).
 * Returns true once the answer is a refusal: the other members are left
 * untouched. */
static bool take_answer(struct member_run *r, int idx, int rc, bool *decided, int *answer,
                        const char *what)
{
	if (!*decided) {
		/* ENOENT: maybe only this member lacks the object (a lost chunk):
		 * the first member that has it decides. */
		*answer = rc;
		*decided = rc != -ENOENT;
		return *decided && rc < 0;
	}
	if ((rc < 0) != (*answer < 0))
		ecfs_log(LOG_WARNING, "%s %s: member %d (%s) diverges: %s", what, r->path, idx,
		         volume_member_path(r->v, idx), rc < 0 ? strerror(-rc) : "succeeded");
	return false;
}

/* Runs the operation on one member after the other from member `from`
 * until one decides; returns the members that ran (ENOENT, then the
 * decision). */
static uint64_t find_primary(struct member_run *r, int from, bool *decided, int *answer,
                             const char *what)
{
	volume *v = r->v;
	uint64_t ran = 0;

	for (int idx = from; !*decided && idx < volume_n(v); idx++) {
		if (!volume_member_ok(v, idx))
			continue;
		int rc = run_member(r, idx);
		if (member_broke(v, idx, rc, what))
			continue;
		ran |= 1ull << idx;
		if (take_answer(r, idx, rc, decided, answer, what))
			break;
	}
	return ran;
}

/* With every member on the relay, apply_all's steps are one batch there:
 * each member's task runs, in member order, as a candidate until one
 * decides, then as a follower once the answer is a success, and does
 * nothing after a refusal.  A task that finds members before it not yet
 * run (they went to their workers after all) leaves its member to the
 * caller. */
struct relayed_all {
	struct member_run r;
	const char *what;
	pthread_mutex_t lock; /* the state below; order: before log_lock only; never
	                      * held across a member call */
	uint64_t in, ran;     /* members asked; those whose call has run */
	bool decided;
	int answer;
};

struct relayed_job {
	struct relayed_all *a;
	struct member_run r;
};

static void relayed_task(void *p)
{
	struct relayed_job *j = p;
	struct relayed_all *a = j->a;
	volume *v = a->r.v;
	int idx = j->r.idx;

	pthread_mutex_lock(&a->lock);
	/* a candidate's turn: every member before it has run or failed */
	bool turn = true;
	for (int i = 0; i < idx && !a->decided; i++)
		if ((a->in >> i & 1) && !(a->ran >> i & 1) && volume_member_ok(v, i))
			turn = false;
	bool refused = a->decided && a->answer < 0;
	pthread_mutex_unlock(&a->lock);
	if (!turn || refused || !volume_member_ok(v, idx))
		return;
	int rc = member_run(&j->r);
	bool broke = member_broke(v, idx, rc, a->what);
	pthread_mutex_lock(&a->lock);
	a->ran |= 1ull << idx;
	if (!broke)
		take_answer(&a->r, idx, rc, &a->decided, &a->answer, a->what);
	pthread_mutex_unlock(&a->lock);
}

static int apply_all_relayed(struct member_run *r, const char *what)
{
	volume *v = r->v;
	struct relayed_all a = { .r = *r, .what = what, .answer = -EIO };
	struct relayed_job jobs[64];
	mio_batch b;

	pthread_mutex_init(&a.lock, NULL);
	mio_batch_init_small(volume_memberio(v), &b);
	for (int idx = 0; idx < volume_n(v); idx++) {
		if (!volume_member_ok(v, idx))
			continue;
		a.in |= 1ull << idx;
		jobs[idx] = (struct relayed_job){ &a, *r };
		jobs[idx].r.idx = idx;
		memberio_submit(volume_memberio(v), idx, &b, relayed_task, &jobs[idx]);
	}
	uint64_t lost = mio_batch_wait(&b);
	pthread_mutex_destroy(&a.lock);
	assert(!(a.ran & ~a.in)); /* tasks ran only where asked */
	/* What the relay left: in member order, as apply_all would. */
	for (int idx = 0; idx < volume_n(v); idx++) {
		if (!(a.in >> idx & 1) || (a.ran >> idx & 1) || (lost >> idx & 1) ||
		    !volume_member_ok(v, idx) || (a.decided && a.answer < 0))
			continue;
		int rc = run_member(r, idx);
		if (!member_broke(v, idx, rc, what))
			take_answer(r, idx, rc, &a.decided, &a.answer, what);
	}
	return volume_usable(v) ? a.answer : -EIO;
}

static bool chained(volume *v);

/* The primary decides (find_primary); after a success the other members
 * run the operation at once (run_members): with a member timeout, one
 * wait for all of them instead of one hand-off after the other; without
 * one, inline in member order.  With every member on the relay, both in
 * one batch (apply_all_relayed). */
static int apply_all(struct member_run *r, const char *what)
{
	volume *v = r->v;
	if (!volume_usable(v))
		return -EIO;
	if (chained(v))
		return apply_all_relayed(r, what);
	bool decided = false;
	int answer = -EIO;
	uint64_t ran = find_primary(r, 0, &decided, &answer, what);
	if (decided && answer >= 0) {
		struct member_run runs[64];
		int rcs[64];
		uint64_t rest = 0;
		for (int idx = 0; idx < volume_n(v); idx++) {
			runs[idx] = *r;
			if (!(ran >> idx & 1) && volume_member_ok(v, idx))
				rest |= 1ull << idx;
		}
		run_members(v, rest, runs, rcs, false);
		for (int idx = 0; idx < volume_n(v); idx++)
			if ((rest >> idx & 1) && !member_broke(v, idx, rcs[idx], what))
				take_answer(r, idx, rcs[idx], &decided, &answer, what);
	}
	if (!volume_usable(v))
		return -EIO;
	return answer;
}

/* ---- logged operations, the members in parallel ---- */

/* One member's share of the parallel round: the operation (unless it ran
 * while the primary was sought), then the end of the intent there. */
struct par_job {
	struct member_run r; /* r.idx is this member */
	const intent *it;
	const char *what;
	bool run;            /* the operation is still to run here */
	int answer;          /* the primary's */
	int rc;
	bool broke;
};

static void par_job_run(void *p)
{
	struct par_job *j = p;
	volume *v = j->r.v;

	if (j->run) {
		j->rc = member_run(&j->r);
		j->broke = member_broke(v, j->r.idx, j->rc, j->what);
	}
	if (!j->broke && volume_member_ok(v, j->r.idx))
		intent_end_member(v, j->it, j->r.idx, j->answer);
}

/* After the primary decided with a success: the operation on every other
 * member and the end of the intent on all, one task per member on its
 * I/O worker, waited for once.  A member that does not answer within the
 * timeout is given up (memberio.h) and keeps its copy of the intent. */
static void apply_rest(struct member_run *r, intent *it, uint64_t ran, int answer,
                       const char *what)
{
	volume *v = r->v;
	struct par_job jobs[64];
	mio_batch b;

	mio_batch_init_small(volume_memberio(v), &b);
	for (int idx = 0; idx < volume_n(v); idx++) {
		jobs[idx] = (struct par_job){ .r = *r, .it = it, .what = what,
		                              .run = !(ran >> idx & 1), .answer = answer };
		jobs[idx].r.idx = idx;
		if (volume_member_ok(v, idx))
			memberio_submit(volume_memberio(v), idx, &b, par_job_run, &jobs[idx]);
	}
	uint64_t lost = mio_batch_wait(&b);
	for (int idx = 0; idx < volume_n(v); idx++) {
		bool decided = true;
		const struct par_job *j = &jobs[idx];
		if (j->run && !(lost >> idx & 1) && !j->broke && volume_member_ok(v, idx))
			take_answer(r, idx, j->rc, &decided, &answer, what);
	}
}

/* With a member timeout every member call is handed to its member's I/O
 * worker; one hand-off after the other costs a round trip per member.  So
 * the first member in service makes the call on its worker right after
 * writing its copy of the intent (intent_begin_first), and decides unless
 * it lacks the object (then the next ones are asked, one by one); a
 * refusal leaves the others untouched.  Then the other members' calls go
 * out together, each followed on its worker by the end of the intent
 * there: two waits in all, after the one for the identities the intent
 * records (intent.c).  Without a timeout, or on a worker already,
 * the calls run inline one after the other, which is faster still
 * (docs/performance-history.md section 7).  With every member fast
 * enough for the relay, apply_logged_chained below takes a single wait
 * instead. */
static int apply_logged_parallel(struct member_run *r, const intent_args *a, const char *what)
{
	volume *v = r->v;
	int first = 0;
	while (first < volume_n(v) && !volume_member_ok(v, first))
		first++;
	struct member_run fr = *r;
	fr.idx = first;
	intent_first f = { .idx = first, .fn = member_run, .arg = &fr };
	intent *it;
	int rc = intent_begin_first(v, a, &it, &f);
	if (rc < 0)
		return rc;

	bool decided = false;
	int answer = -EIO;
	uint64_t ran = 0;
	if (f.rc != INTENT_NOT_RUN && !member_broke(v, first, f.rc, what)) {
		ran = 1ull << first;
		take_answer(r, first, f.rc, &decided, &answer, what);
	}
	ran |= find_primary(r, first + 1, &decided, &answer, what);
	if (!decided || answer < 0 || !volume_usable(v)) {
		answer = volume_usable(v) ? answer : -EIO;
		intent_end(v, it, answer);
		return answer;
	}
	apply_rest(r, it, ran, answer, what);
	/* Unusable now: the copies left on the members replay it. */
	intent_free(it);
	return volume_usable(v) ? answer : -EIO;
}

/* ---- logged operations chained on the relay ---- */

/* When every member in service is fast (memberio.h: its tasks of a small
 * batch go to the relay), a logged operation is one batch of tasks that
 * follow each other on the relay thread, each stage on every member
 * before the next: the identities, the copies of the intent (the record
 * sealed by the first), the operation (the members in order until one
 * decides, then the others, each ending its part of the intent at once)
 * and the end of the intent where it was not ended yet.  Its caller waits
 * once instead of three times.  The order is what the rounds of
 * apply_logged_parallel keep, and each task checks it itself: it runs
 * only once the tasks it depends on have run on every member still in
 * service (a member failed meanwhile, by an error or given up after the
 * timeout, counts as done; the watchdog fails it before the next relay
 * starts).  A task that finds its turn not come (a member's tasks went to
 * its worker after all, or no relay could be started) does nothing, and
 * the caller runs what is left, stage by stage, after its wait. */
enum { CH_IDENT, CH_COPY, CH_OP, CH_END, CH_STAGES };

struct chain {
	struct member_run r; /* the operation (r.idx unused) */
	intent *it;
	const char *what;
	pthread_mutex_t lock; /* the state below; order: before log_lock only; never
	                      * held across a member call */
	uint64_t in;          /* the members in service at the start */
	uint64_t done[CH_STAGES]; /* bit i: member i's task of that stage has run */
	uint64_t ended;       /* members whose part of the intent ended with the operation */
	bool decided;
	int answer;
	intent_fds fds[64];   /* each member's, opened by its first task, closed by its last
	                       * (or, with keep_fds, by chain_refresh or the caller) */
	bool keep_fds;        /* the parents stay open for chain_refresh */
	uint64_t seen;        /* members whose parent's fstat after the operation is in */
	struct stat after[64]; /* after[idx] (mop_dir_after), for chain_refresh */
};

struct chain_job {
	struct chain *c;
	int idx, stage;
};

/* The members of c->in still in service whose task of stage has not run. */
static uint64_t chain_left(struct chain *c, int stage)
{
	uint64_t left = 0;
	for (int idx = 0; idx < volume_n(c->r.v); idx++)
		if ((c->in >> idx & 1) && !(c->done[stage] >> idx & 1) &&
		    volume_member_ok(c->r.v, idx))
			left |= 1ull << idx;
	return left;
}

/* Under c->lock: true once member idx's task of stage may run: the
 * previous stage has run on every member still in service, and for the
 * operation before a member decided, on every member before idx too. */
static bool chain_ready(struct chain *c, int stage, int idx)
{
	assert(pthread_mutex_trylock(&c->lock) == EBUSY); /* held, by some thread */
	assert(stage >= CH_IDENT && stage < CH_STAGES && idx >= 0 && idx < volume_n(c->r.v));
	if (stage > CH_IDENT && chain_left(c, stage - 1))
		return false;
	if (stage == CH_OP && !c->decided)
		return !(chain_left(c, CH_OP) & ((1ull << idx) - 1));
	return true;
}

/* The operation on member idx, on the parents its first task opened (as
 * member_run on its own). */
static int chain_call(const struct chain *c, int idx)
{
	const intent_fds *f = &c->fds[idx];
	if (f->d1 < 0)
		return f->d1;
	if (!c->r.to)
		return c->r.fn(idx, f->d1, f->leaf1, c->r.arg);
	return f->d2 < 0 ? f->d2 : c->r.fn2(idx, f->d1, f->leaf1, f->d2, f->leaf2, c->r.arg);
}

/* Member idx's operation: a candidate until a member decides (asked in
 * member order, as find_primary does), then a follower once the answer
 * is a success; each ends its part of the intent right after it. */
static void chain_op(struct chain *c, int idx)
{
	volume *v = c->r.v;
	pthread_mutex_lock(&c->lock);
	bool decided = c->decided;
	int answer = c->answer;
	pthread_mutex_unlock(&c->lock);
	if (decided && (answer < 0 || !volume_usable(v)))
		return; /* refused: nothing here; unusable: the copies stay */
	int rc = chain_call(c, idx);
	if (member_broke(v, idx, rc, c->what))
		return;
	if (!c->r.to && mop_dir_after(c->fds[idx].d1, &c->after[idx])) {
		pthread_mutex_lock(&c->lock);
		c->seen |= 1ull << idx;
		pthread_mutex_unlock(&c->lock);
	}
	if (decided) {
		take_answer(&c->r, idx, rc, &decided, &answer, c->what); /* logs a divergence */
	} else {
		pthread_mutex_lock(&c->lock);
		take_answer(&c->r, idx, rc, &c->decided, &c->answer, c->what);
		decided = c->decided;
		answer = c->answer;
		pthread_mutex_unlock(&c->lock);
		if (!decided || answer < 0 || !volume_usable(v))
			return;
	}
	assert(decided && answer >= 0); /* a part of the intent ends after a success only */
	if (volume_member_ok(v, idx)) {
		intent_end_member_at(v, c->it, idx, answer, &c->fds[idx]);
		pthread_mutex_lock(&c->lock);
		c->ended |= 1ull << idx;
		pthread_mutex_unlock(&c->lock);
	}
}

static void chain_task(void *p)
{
	const struct chain_job *j = p;
	struct chain *c = j->c;
	volume *v = c->r.v;

	pthread_mutex_lock(&c->lock);
	bool ready = chain_ready(c, j->stage, j->idx), ended = c->ended >> j->idx & 1;
	if (ready && j->stage == CH_COPY)
		intent_seal(c->it);
	int answer = c->answer;
	pthread_mutex_unlock(&c->lock);
	if (!ready)
		return;
	intent_fds *f = &c->fds[j->idx];
	if (volume_member_ok(v, j->idx)) {
		if (j->stage == CH_IDENT) {
			intent_open_member(v, c->it, j->idx, f);
			intent_identify_member(v, c->it, j->idx, f);
		} else if (j->stage == CH_COPY) {
			intent_write_member(v, c->it, j->idx);
		} else if (j->stage == CH_OP) {
			chain_op(c, j->idx);
		} else if (!ended && volume_usable(v)) {
			intent_end_member_at(v, c->it, j->idx, answer, f);
		}
	}
	if (j->stage == CH_END && !c->keep_fds)
		intent_close_member(f);
	pthread_mutex_lock(&c->lock);
	c->done[j->stage] |= 1ull << j->idx;
	pthread_mutex_unlock(&c->lock);
}

/* Closes the parents the chain's first tasks opened on the members of
 * mask, where still open. */
static void chain_close_fds(struct chain *c, uint64_t mask)
{
	for (int idx = 0; idx < volume_n(c->r.v); idx++)
		if (mask >> idx & 1)
			intent_close_member(&c->fds[idx]);
}

/* The chain's last task: once the operation has ended on every member,
 * the directories it changed are stat'ed for the kernel's next getattr
 * (volume_set_refresh), a single parent by the descriptors the chain
 * holds of it, or by the fstat the operation's wrapper took of it right
 * after the change (mop_dir_after) where that still stands.  Then it
 * closes those of the members whose last task has run (no task of theirs
 * uses them any more); the caller closes the others after its wait. */
static void chain_refresh(void *p)
{
	struct chain *c = p;
	pthread_mutex_lock(&c->lock);
	bool ended = !chain_left(c, CH_END) && c->decided && c->answer >= 0;
	uint64_t finished = c->done[CH_END], seen = c->seen;
	pthread_mutex_unlock(&c->lock);
	int fds[64];
	uint64_t held = 0;
	for (int idx = 0; idx < volume_n(c->r.v); idx++) {
		fds[idx] = c->fds[idx].d1;
		held |= (uint64_t)(fds[idx] >= 0) << idx;
	}
	volume_dir_at at = { fds, held, c->after, seen };
	if (ended && !c->r.to)
		volume_refresh_parent_at(c->r.v, c->r.path, &at);
	else if (ended)
		volume_refresh_parents(c->r.v, c->r.path, c->r.to);
	chain_close_fds(c, finished);
}

/* The tasks of stage on the members in mask, as one small batch. */
static void chain_submit(struct chain *c, struct chain_job (*jobs)[64], int stage, uint64_t mask,
                         mio_batch *b)
{
	for (int idx = 0; idx < volume_n(c->r.v); idx++) {
		if (!(mask >> idx & 1))
			continue;
		jobs[stage][idx] = (struct chain_job){ c, idx, stage };
		memberio_submit(volume_memberio(c->r.v), idx, b, chain_task, &jobs[stage][idx]);
	}
}

/* After the chain's wait: the tasks that found their turn not come, stage
 * by stage, each stage's in one batch until it has run everywhere (a
 * candidate for the operation runs once those before it have). */
static void chain_catch_up(struct chain *c, struct chain_job (*jobs)[64])
{
	for (int stage = 0; stage < CH_STAGES; stage++) {
		for (uint64_t left = chain_left(c, stage), was = 0; left && left != was;
		     was = left, left = chain_left(c, stage)) {
			mio_batch b;
			mio_batch_init_small(volume_memberio(c->r.v), &b);
			chain_submit(c, jobs, stage, left, &b);
			mio_batch_wait(&b);
		}
	}
}

#ifdef ECFS_FAULT_INJECTION
bool mirror_chain_always;
#endif

/* Chained when every member in service takes its calls on the relay
 * (volume_all_relayed), or always in tests that ask for it. */
static bool chained(volume *v)
{
#ifdef ECFS_FAULT_INJECTION
	if (__atomic_load_n(&mirror_chain_always, __ATOMIC_RELAXED))
		return true;
#endif
	return volume_all_relayed(v);
}

static int apply_logged_chained(struct member_run *r, const intent_args *a, const char *what)
{
	volume *v = r->v;
	if (!volume_usable(v))
		return -EIO;
	struct chain c = { .r = *r, .what = what, .answer = -EIO };
	struct chain_job jobs[CH_STAGES][64];
	mio_batch b;

	c.it = intent_new(v, a);
	pthread_mutex_init(&c.lock, NULL);
	for (int idx = 0; idx < volume_n(v); idx++) {
		c.in |= (uint64_t)volume_member_ok(v, idx) << idx;
		c.fds[idx] = (intent_fds){ .d1 = -EBADF, .d2 = -EBADF };
	}
	mio_batch_init_small(volume_memberio(v), &b);
	int last = volume_refresh_member(v, c.in);
	c.keep_fds = last >= 0;
	for (int stage = 0; stage < CH_STAGES; stage++)
		chain_submit(&c, jobs, stage, c.in, &b);
	if (last >= 0)
		memberio_submit(volume_memberio(v), last, &b, chain_refresh, &c);
	mio_batch_wait(&b);
	chain_catch_up(&c, jobs);
	/* Every task has run or was given up inside a call, where it stays:
	 * the descriptors chain_refresh left are no task's now. */
	chain_close_fds(&c, c.in);
	pthread_mutex_destroy(&c.lock);
	for (int stage = 0; stage < CH_STAGES; stage++)
		assert(!(c.done[stage] & ~c.in)); /* tasks ran only where asked */
	assert(!(c.ended & ~c.in));
	/* Unusable now: the copies left on the members replay it. */
	intent_free(c.it);
	return volume_usable(v) ? c.answer : -EIO;
}

int mirror_apply(volume *v, const char *path, mirror_fn fn, void *arg, const char *what)
{
	struct member_run r = { .v = v, .path = path, .fn = fn, .arg = arg };
	return apply_all(&r, what);
}

int mirror_apply2(volume *v, const char *from, const char *to, mirror_fn2 fn,
                  void *arg, const char *what)
{
	struct member_run r = { .v = v, .path = from, .to = to, .fn2 = fn, .arg = arg };
	return apply_all(&r, what);
}

int mirror_apply_logged(volume *v, const intent_args *a, mirror_fn fn, mirror_fn2 fn2,
                        void *arg, const char *what)
{
	int fit = intent_args_fit(a);
	if (fit < 0)
		return fit;
	if (volume_hands_off(v)) {
		struct member_run r = { .v = v, .path = a->from, .to = a->to, .fn = fn, .fn2 = fn2,
		                        .arg = arg };
		if (chained(v))
			return apply_logged_chained(&r, a, what);
		return apply_logged_parallel(&r, a, what);
	}
	intent *it;
	int rc = intent_begin(v, a, &it);
	if (rc < 0)
		return rc;
	rc = a->to ? mirror_apply2(v, a->from, a->to, fn2, arg, what)
	           : mirror_apply(v, a->from, fn, arg, what);
	intent_end(v, it, rc);
	return rc;
}

/* ---- one query on several members at once ---- */

uint64_t mirror_gather(volume *v, const char *path, mirror_fn fn, void *const *args, int most,
                       int *err, const char *what)
{
	struct member_run runs[64];
	int rcs[64];
	uint64_t ask = 0, whole = 0, asked = 0;
	void *run_args[64];

	*err = -ENOENT;
	for (int idx = 0; idx < volume_n(v); idx++) {
		runs[idx] = (struct member_run){ .v = v, .idx = idx, .path = path, .fn = fn,
		                                 .arg = args[idx] };
		run_args[idx] = &runs[idx];
	}
	/* listings, each on its worker; a member cut past its bound gives its
	 * place to one not asked yet, while there is one */
	while (most > 0 && volume_usable(v)) {
		uint64_t pick = 0, now = volume_query_members(v);
		for (int idx = 0; idx < volume_n(v) && most > 0; idx++)
			if ((now >> idx & 1) && !(asked >> idx & 1)) {
				pick |= 1ull << idx;
				most--;
			}
		if (!pick)
			break;
		asked |= pick;
		uint64_t cut = volume_ask_members(v, pick, member_run, run_args, rcs, false);
		ask |= pick & ~cut;
		most += __builtin_popcountll(cut);
	}
	for (int idx = 0; idx < volume_n(v) && volume_usable(v); idx++) {
		if (!(ask >> idx & 1) || member_broke(v, idx, rcs[idx], what))
			continue;
		if (rcs[idx] == 0)
			whole |= 1ull << idx;
		else if (*err == -ENOENT)
			*err = rcs[idx];
	}
	if (!volume_usable(v)) {
		*err = -EIO;
		return 0;
	}
	return whole;
}

int mirror_query(volume *v, const char *path, mirror_fn fn, void *arg, const char *what)
{
	int answer = -EIO;
	/* A member being rebuilt may not hold the whole namespace yet; one
	 * stuck in a call is not waited for. */
	uint64_t ask = volume_query_members(v);
	for (int idx = 0; idx < volume_n(v) && volume_usable(v); idx++) {
		if (!(ask >> idx & 1))
			continue;
		struct member_run r = { .v = v, .idx = idx, .path = path, .fn = fn, .arg = arg };
		bool cut; /* stalled past its bound: the next member answers */
		int rc = volume_ask_member(v, idx, member_run, &r, &cut);
		if (cut || member_broke(v, idx, rc, what))
			continue;
		answer = rc;
		if (rc != -ENOENT) /* as in apply_all: ENOENT may be this member's loss */
			break;
	}
	return volume_usable(v) ? answer : -EIO;
}
