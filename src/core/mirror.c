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

static int apply_all(struct member_run *r, const char *what)
{
	volume *v = r->v;
	if (!volume_usable(v))
		return -EIO;
	bool decided = false;
	int answer = -EIO;
	/* One member after the other: on few cores, waking them all at once
	 * costs more than it saves (scripts/bench-namespace.py). */
	for (int idx = 0; idx < volume_n(v); idx++) {
		if (!volume_member_ok(v, idx))
			continue;
		int rc = run_member(r, idx);
		if (member_broke(v, idx, rc, what))
			continue;
		if (!decided) {
			if (rc == -ENOENT) {
				/* Maybe only this member lacks the object (a lost
				 * chunk): the first member that has it decides. */
				answer = rc;
				continue;
			}
			decided = true;
			answer = rc;
			if (rc < 0)
				break; /* refused: leave the other members untouched */
		} else if ((rc < 0) != (answer < 0)) {
			ecfs_log(LOG_WARNING, "%s %s: member %d (%s) diverges: %s",
			         what, r->path, idx, volume_member_path(v, idx),
			         rc < 0 ? strerror(-rc) : "succeeded");
		}
	}
	if (!volume_usable(v))
		return -EIO;
	return answer;
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
	intent *it;
	int rc = intent_begin(v, a, &it);
	if (rc < 0)
		return rc;
	rc = a->to ? mirror_apply2(v, a->from, a->to, fn2, arg, what)
	           : mirror_apply(v, a->from, fn, arg, what);
	intent_end(v, it, rc);
	return rc;
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
