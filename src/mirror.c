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

/* True if rc (a result from member idx) means the member is now failed and
 * its answer must be ignored.  volume_member_error() tells answers (ENOENT,
 * EEXIST, ...) from breakage, and also notices an answer that comes from a
 * member whose root has vanished. */
static bool member_broke(volume *v, int idx, int rc, unsigned flags, const char *what)
{
	if (rc >= 0)
		return false;
	if ((flags & MIRROR_SPACE_IS_ANSWER) && (rc == -ENOSPC || rc == -EDQUOT || rc == -E2BIG))
		return false; /* about the value (an oversized xattr), not the member */
	return volume_member_error(v, idx, -rc, what);
}

/* One member's result for a single-path operation. */
static int run_one(volume *v, int idx, const char *path, mirror_fn fn, void *arg)
{
	const char *leaf;
	int dirfd = volume_parent_fd(v, idx, path, &leaf);
	if (dirfd < 0)
		return dirfd;
	int rc = fn(idx, dirfd, leaf, arg);
	close(dirfd);
	return rc;
}

/* One member's result for a two-path operation. */
static int run_two(volume *v, int idx, const char *from, const char *to,
                   mirror_fn2 fn, void *arg)
{
	const char *leaf1, *leaf2;
	int fd1 = volume_parent_fd(v, idx, from, &leaf1);
	if (fd1 < 0)
		return fd1;
	int fd2 = volume_parent_fd(v, idx, to, &leaf2);
	if (fd2 < 0) {
		close(fd1);
		return fd2;
	}
	int rc = fn(idx, fd1, leaf1, fd2, leaf2, arg);
	close(fd1);
	close(fd2);
	return rc;
}

/* The shared loop of mirror_apply and mirror_apply2: `one` runs the
 * operation on a member. */
typedef int (*member_runner)(volume *v, int idx, const void *ctx);

static int apply_all(volume *v, member_runner one, const void *ctx,
                     unsigned flags, const char *what, const char *path)
{
	if (!volume_usable(v))
		return -EIO;
	bool decided = false;
	int answer = -EIO;
	for (int idx = 0; idx < volume_n(v); idx++) {
		if (!volume_member_ok(v, idx))
			continue;
		int rc = one(v, idx, ctx);
		if (member_broke(v, idx, rc, flags, what))
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
			         what, path, idx, volume_member_path(v, idx),
			         rc < 0 ? strerror(-rc) : "succeeded");
		}
	}
	if (!volume_usable(v))
		return -EIO;
	return answer;
}

struct one_ctx {
	const char *path;
	mirror_fn fn;
	void *arg;
};

static int run_one_ctx(volume *v, int idx, const void *ctx)
{
	const struct one_ctx *c = ctx;
	return run_one(v, idx, c->path, c->fn, c->arg);
}

int mirror_apply(volume *v, const char *path, mirror_fn fn, void *arg,
                 unsigned flags, const char *what)
{
	struct one_ctx c = { path, fn, arg };
	return apply_all(v, run_one_ctx, &c, flags, what, path);
}

struct two_ctx {
	const char *from, *to;
	mirror_fn2 fn;
	void *arg;
};

static int run_two_ctx(volume *v, int idx, const void *ctx)
{
	const struct two_ctx *c = ctx;
	return run_two(v, idx, c->from, c->to, c->fn, c->arg);
}

int mirror_apply2(volume *v, const char *from, const char *to, mirror_fn2 fn,
                  void *arg, unsigned flags, const char *what)
{
	struct two_ctx c = { from, to, fn, arg };
	return apply_all(v, run_two_ctx, &c, flags, what, from);
}

int mirror_apply_logged(volume *v, const intent_args *a, mirror_fn fn, mirror_fn2 fn2,
                        void *arg, const char *what)
{
	intent *it;
	int rc = intent_begin(v, a, &it);
	if (rc < 0)
		return rc;
	rc = a->to ? mirror_apply2(v, a->from, a->to, fn2, arg, 0, what)
	           : mirror_apply(v, a->from, fn, arg, 0, what);
	intent_end(v, it, rc);
	return rc;
}

int mirror_query(volume *v, const char *path, mirror_fn fn, void *arg,
                 unsigned flags, const char *what)
{
	int answer = -EIO;
	for (int idx = 0; idx < volume_n(v) && volume_usable(v); idx++) {
		/* A member being rebuilt may not hold the whole namespace yet. */
		if (!volume_member_answers(v, idx))
			continue;
		int rc = run_one(v, idx, path, fn, arg);
		if (member_broke(v, idx, rc, flags, what))
			continue;
		answer = rc;
		if (rc != -ENOENT) /* as in apply_all: ENOENT may be this member's loss */
			break;
	}
	return volume_usable(v) ? answer : -EIO;
}
