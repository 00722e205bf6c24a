/* SPDX-License-Identifier: MIT */
/*
 * Mirrored namespace operations (see mirror.h): the primary member decides,
 * the others follow, broken members are dropped through
 * volume_member_error(), and more than m failed members means EIO.
 */
#include "mirror.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "memberio.h"
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

/* The primary decides (find_primary); after a success the other members
 * run the operation at once (run_members): with a member timeout, one
 * wait for all of them instead of one hand-off after the other; without
 * one, inline in member order. */
static int apply_all(struct member_run *r, const char *what)
{
	volume *v = r->v;
	if (!volume_usable(v))
		return -EIO;
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
 * (docs/PERFORMANCE.md section 7). */
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
	if (volume_hands_off(v)) {
		struct member_run r = { .v = v, .path = a->from, .to = a->to, .fn = fn, .fn2 = fn2,
		                        .arg = arg };
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

uint64_t mirror_gather(volume *v, const char *path, mirror_fn fn, void *const *args, int *err,
                       const char *what)
{
	struct member_run runs[64];
	int rcs[64];
	uint64_t ask = 0, whole = 0;

	*err = -ENOENT;
	for (int idx = 0; idx < volume_n(v); idx++) {
		runs[idx] = (struct member_run){ .v = v, .path = path, .fn = fn, .arg = args[idx] };
		if (volume_member_answers(v, idx))
			ask |= 1ull << idx;
	}
	if (volume_usable(v))
		run_members(v, ask, runs, rcs, true); /* listings: each on its worker */
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
	for (int idx = 0; idx < volume_n(v) && volume_usable(v); idx++) {
		/* A member being rebuilt may not hold the whole namespace yet. */
		if (!volume_member_answers(v, idx))
			continue;
		struct member_run r = { .v = v, .path = path, .fn = fn, .arg = arg };
		int rc = run_member(&r, idx);
		if (member_broke(v, idx, rc, what))
			continue;
		answer = rc;
		if (rc != -ENOENT) /* as in apply_all: ENOENT may be this member's loss */
			break;
	}
	return volume_usable(v) ? answer : -EIO;
}
