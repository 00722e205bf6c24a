/* SPDX-License-Identifier: MIT */
/*
 * Calls on the members: a small call on one member or on several at once
 * (on the relay or the members' I/O workers, memberio.h), large ones each
 * on its own worker, queries that go on without a member past its bound,
 * the members where a path answers yes, and the refresh of the
 * directories a chain changed, as its last task.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <glib.h>

#include "memberio.h"
#include "volume_private.h"

struct member_call {
	int (*fn)(void *);
	void *arg;
	int rc;
};

static void member_call_run(void *p)
{
	struct member_call *c = p;
	c->rc = c->fn(c->arg);
}

bool volume_hands_off(const volume *v)
{
	return v->mio && memberio_timeout(v->mio) && !memberio_on_worker();
}

bool volume_all_relayed(const volume *v)
{
	if (!volume_hands_off(v))
		return false;
	for (int i = 0; i < v->n; i++)
		if (volume_member_ok(v, i) && !memberio_relays(v->mio, i))
			return false;
	return true;
}

void volume_set_refresh(volume *v, void (*refresh)(const char *dir, const volume_dir_at *at))
{
	v->refresh = refresh;
}

/* refresh for the directory holding path (by at, unless NULL). */
static void refresh_parent(volume *v, const char *path, size_t dirlen, const volume_dir_at *at)
{
	char *dir = dirlen ? g_strndup(path, dirlen) : g_strdup("/");
	v->refresh(dir, at);
	g_free(dir);
}

/* The length of path's directory part ("/a/b" -> 2, "/b" -> 0: the root). */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? (size_t)(slash - path) : 0;
}

void volume_refresh_parents(volume *v, const char *path, const char *path2)
{
	if (!v->refresh || !volume_usable(v))
		return;
	size_t len = dir_len(path);
	refresh_parent(v, path, len, NULL);
	if (path2) {
		size_t len2 = dir_len(path2);
		if (len2 != len || strncmp(path, path2, len) != 0)
			refresh_parent(v, path2, len2, NULL);
	}
}

void volume_refresh_parent_at(volume *v, const char *path, const volume_dir_at *at)
{
	if (v->refresh && volume_usable(v))
		refresh_parent(v, path, dir_len(path), at);
}

int volume_refresh_member(volume *v, uint64_t mask)
{
	for (int i = 0; i < v->n; i++)
		if ((mask >> i & 1) && volume_member_answers(v, i))
			return i;
	return -1;
}

int volume_on_member(volume *v, int idx, int (*fn)(void *), void *arg)
{
	struct member_call c = { fn, arg, -EIO };
	mio_batch b;

	if (!volume_hands_off(v))
		return fn(arg);
	mio_batch_init_small(v->mio, &b);
	memberio_submit(v->mio, idx, &b, member_call_run, &c);
	return mio_batch_wait(&b) ? -ETIMEDOUT : c.rc;
}

static void on_members(volume *v, uint64_t mask, int (*fn)(void *), void *const *args,
                       int *rcs, bool small)
{
	struct member_call calls[64];
	bool on_workers = volume_hands_off(v);
	mio_batch b;

	if (small)
		mio_batch_init_small(v->mio, &b);
	else
		mio_batch_init(&b);
	for (int idx = 0; idx < v->n; idx++) {
		if (!(mask >> idx & 1))
			continue;
		calls[idx] = (struct member_call){ fn, args[idx], -EIO };
		if (on_workers)
			memberio_submit(v->mio, idx, &b, member_call_run, &calls[idx]);
		else
			member_call_run(&calls[idx]);
	}
	uint64_t lost = on_workers ? mio_batch_wait(&b) : 0;
	for (int idx = 0; idx < v->n; idx++)
		if (mask >> idx & 1)
			rcs[idx] = lost >> idx & 1 ? -ETIMEDOUT : calls[idx].rc;
}

void volume_on_members(volume *v, uint64_t mask, int (*fn)(void *), void *const *args,
                       int *rcs)
{
	on_members(v, mask, fn, args, rcs, true);
}

uint64_t volume_members_where(volume *v, const char *path, int (*fn)(void *))
{
	member_at p[64];
	void *args[64];
	int rcs[64];
	uint64_t ask = 0, where = 0;

	for (int mb = 0; mb < v->n; mb++) {
		p[mb] = (member_at){ v, mb, path };
		args[mb] = &p[mb];
		if (volume_member_ok(v, mb))
			ask |= 1ull << mb;
	}
	volume_on_members(v, ask, fn, args, rcs);
	for (int mb = 0; mb < v->n; mb++)
		if ((ask >> mb & 1) && rcs[mb] == 1)
			where |= 1ull << mb;
	return where;
}

void volume_on_members_apart(volume *v, uint64_t mask, int (*fn)(void *),
                             void *const *args, int *rcs)
{
	on_members(v, mask, fn, args, rcs, false);
}

/* The calls of one query round, in memory of their own: a call cut by
 * the bound ends after its caller has gone on. */
struct ask_round {
	mio_batch batch;
	struct member_call calls[64];
};

static void ask_round_free(void *arg)
{
	g_free(arg);
}

/* One round of volume_ask_members: returns the members cut. */
static uint64_t ask_round(volume *v, uint64_t mask, int (*fn)(void *), void *const *args,
                          int *rcs, bool small)
{
	struct ask_round *r = g_new(struct ask_round, 1);

	if (small)
		mio_batch_init_small(v->mio, &r->batch);
	else
		mio_batch_init(&r->batch);
	mio_batch_bound_calls(&r->batch);
	mio_batch_by_release(&r->batch);
	for (int idx = 0; idx < v->n; idx++) {
		if (!(mask >> idx & 1))
			continue;
		r->calls[idx] = (struct member_call){ fn, args[idx], -EIO };
		memberio_submit(v->mio, idx, &r->batch, member_call_run, &r->calls[idx]);
	}
	uint64_t cut = mio_batch_wait_calls(v->mio, &r->batch);
	uint64_t lost = __atomic_load_n(&r->batch.lost, __ATOMIC_ACQUIRE);
	for (int idx = 0; idx < v->n; idx++)
		if (mask >> idx & 1)
			rcs[idx] = cut >> idx & 1    ? -EAGAIN
			           : lost >> idx & 1 ? -ETIMEDOUT
			                             : r->calls[idx].rc;
	mio_batch_release(&r->batch, ask_round_free, r);
	return cut;
}

uint64_t volume_ask_members(volume *v, uint64_t mask, int (*fn)(void *), void *const *args,
                            int *rcs, bool small)
{
	if (!volume_hands_off(v)) {
		on_members(v, mask, fn, args, rcs, small);
		return 0;
	}
	uint64_t cut = ask_round(v, mask, fn, args, rcs, small), again = 0;
	/* behind a member stalled on the relay: the others again, each on its
	 * own worker (their calls never ran) */
	for (int idx = 0; idx < v->n; idx++)
		if ((cut >> idx & 1) && !memberio_stalled(v->mio, idx))
			again |= 1ull << idx;
	if (again)
		cut = (cut & ~again) | ask_round(v, again, fn, args, rcs, false);
	return cut;
}

int volume_ask_member(volume *v, int idx, int (*fn)(void *), void *arg, bool *cut)
{
	void *args[64];
	int rcs[64];

	args[idx] = arg;
	*cut = volume_ask_members(v, 1ull << idx, fn, args, rcs, true) != 0;
	return rcs[idx];
}
