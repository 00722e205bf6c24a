/* SPDX-License-Identifier: MIT */
/*
 * What a replay believes of an intent record (intent_trust.h): the
 * identities of objects on the members, and the record judged against
 * what the members that answer show.
 */
#include "intent_trust.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memberio.h"
#include "memberops.h"
#include "volume_internal.h"
#include "votes.h"

/* ---- identities ---- */

ident intent_ident_at(volume *v, int idx, int d, const char *leaf, mode_t *mode)
{
	struct statx stx;
	ident id = { 0, 0 };
	if (d >= 0 && mop_statx(v, idx, d, leaf, AT_SYMLINK_NOFOLLOW,
	                        STATX_TYPE | STATX_INO | STATX_BTIME, &stx) == 0) {
		id.ino = stx.stx_ino;
		if (stx.stx_mask & STATX_BTIME)
			id.btime = (uint64_t)stx.stx_btime.tv_sec * 1000000000u + stx.stx_btime.tv_nsec;
		if (mode)
			*mode = stx.stx_mode;
	}
	return id;
}

ident intent_ident_of(volume *v, int idx, const char *path, mode_t *mode)
{
	const char *leaf;
	int d = volume_parent_fd(v, idx, path, &leaf);
	ident id = intent_ident_at(v, idx, d, leaf, mode);
	if (d >= 0)
		MIO_CALL(close(d));
	return id;
}

bool intent_is_object(volume *v, int idx, const char *path, ident want, mode_t *mode)
{
	ident have = intent_ident_of(v, idx, path, mode);
	return want.ino && have.ino == want.ino && have.btime == want.btime;
}

/* ---- what a record is believed for ---- */

/* The mode and owner of path's directory on member idx in *stx; false if
 * it has no directory there. */
static bool dir_attrs(volume *v, int idx, const char *path, struct statx *stx)
{
	const char *leaf;
	int d = volume_parent_fd(v, idx, path, &leaf);
	if (d < 0)
		return false;
	int rc = mop_statx(v, idx, d, leaf, AT_SYMLINK_NOFOLLOW,
	                   STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_CTIME, stx);
	MIO_CALL(close(d));
	return rc == 0 && S_ISDIR(stx->stx_mode);
}

static bool same_attrs(const void *ctx, int i, int j)
{
	const struct statx *a = (const struct statx *)ctx + i, *b = (const struct statx *)ctx + j;
	return (a->stx_mode & 07777) == (b->stx_mode & 07777) && a->stx_uid == b->stx_uid &&
	       a->stx_gid == b->stx_gid;
}

/* A mkdir: believed when a majority of the voters hold its record or
 * show its directory; redone with the mode and owner most of the
 * directories have when a majority show it, else with the record's. */
static bool settle_mkdir(volume *v, const intent_claim *c, uint64_t voters)
{
	struct statx st[64] = { 0 };
	struct timespec ctimes[64] = { 0 };
	uint64_t shown = 0;
	int count = __builtin_popcountll(voters);

	for (int i = 0; i < c->n; i++) {
		if (voters >> i & 1 && dir_attrs(v, i, c->from, &st[i])) {
			shown |= 1ull << i;
			ctimes[i] = (struct timespec){ .tv_sec = st[i].stx_ctime.tv_sec,
			                               .tv_nsec = st[i].stx_ctime.tv_nsec };
		}
	}
	/* the rule of every attribute the members differ on (votes.h) */
	int best = votes_winner(c->n, shown, ctimes, same_attrs, st);
	if (2 * __builtin_popcountll(shown) > count) {
		*c->mode = st[best].stx_mode & 07777;
		*c->uid = st[best].stx_uid;
		*c->gid = st[best].stx_gid;
		return true;
	}
	return 2 * __builtin_popcountll(c->holders & voters) > count;
}

/* An operation bound to identity: believed when most of the voters the
 * record gives an identity show it.  *acts: some member still shows the
 * object under from (the replay would act there). */
static bool ids_shown(volume *v, const intent_claim *c, uint64_t voters, bool *acts)
{
	int named = 0, shown = 0;
	*acts = false;
	for (int i = 0; i < c->n; i++) {
		ident want = c->from_id[i];
		if (!(voters >> i & 1) || !want.ino)
			continue;
		ident have = intent_ident_of(v, i, c->from, NULL);
		bool there = have.ino == want.ino && have.btime == want.btime;
		bool moved = !there && c->to && intent_is_object(v, i, c->to, want, NULL);
		*acts |= there;
		named++;
		shown += there || moved || (c->removes && !have.ino);
	}
	return 2 * shown > named;
}

bool intent_claim_believed(volume *v, const intent_claim *c, int *holders, int *voters)
{
	uint64_t answer = 0;
	bool acts = true, ok;

	for (int i = 0; i < c->n; i++)
		answer |= (uint64_t)volume_member_answers(v, i) << i;
	if (c->mkdir)
		ok = settle_mkdir(v, c, answer);
	else
		ok = ids_shown(v, c, answer, &acts);
	*holders = __builtin_popcountll(c->holders & answer);
	*voters = __builtin_popcountll(answer);
	return ok || !acts; /* one that acts nowhere is done (FORMAT.md section 8) */
}
