/* SPDX-License-Identifier: MIT */
/*
 * Roll-forward recovery from the overwrite journal (journal_recovery.h,
 * docs/FORMAT.md section 9 "Recovery", docs/CRASH.md): the journals of a
 * file are read, every (stripe, generation) they name is checked against
 * the stripe in place, and one whose overwrite was cut short after the
 * barrier is decoded from the journal strips and committed in place again.
 */
#include "journal_recovery.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "journal.h"
#include "log.h"
#include "memberops.h"
#include "stripe_decode.h"
#include "volume_internal.h"
#include "volume_paths.h"

typedef struct jmember {
	int fd;
	bool valid;
	journal_header h;
} jmember;

/* One member's part of the recovery, on its worker (volume_on_members),
 * so that a member that hangs is given up after the I/O timeout. */
typedef struct jcall {
	stripe_ctx *c;
	int mb;
	jmember *jm;
	const char *name;
	/* journal_strips */
	uint64_t s, g, size;
	uint8_t *bufs;
} jcall;

/* Opens member mb's journal and reads its header: 1 if it has one. */
static int read_journal(void *arg)
{
	jcall *j = arg;
	stripe_ctx *c = j->c;
	int mb = j->mb;
	uint8_t buf[JOURNAL_HEADER_SIZE];
	const char *why = NULL;
	int fd = volume_meta_open(c->v, mb, volume_root_fd(c->v, mb), j->name,
	                          O_RDONLY | O_CLOEXEC, 0);

	if (fd < 0) {
		if (fd != -ENOENT)
			ecfs_log(LOG_WARNING, "%s: cannot open the journal on member %d: %s",
			         c->path, mb, g_strerror(-fd));
		return 0;
	}
	struct iovec iov = { buf, sizeof(buf) };
	ssize_t r = mop_transfer(c->v, mb, fd, &iov, 1, 0, false);
	jmember m = { .fd = fd };
	/* torn or empty: this member's copy does not count */
	if (r == (ssize_t)sizeof(buf) && journal_header_decode(buf, &m.h, &why) == 0)
		m.valid = !memcmp(m.h.volume_uuid, c->hdr.volume_uuid, 16) &&
		          !memcmp(m.h.file_id, c->hdr.file_id, 16) &&
		          m.h.position == (uint32_t)layout_position_of(&c->lay, mb) &&
		          m.h.strip_size == c->lay.strip_size;
	*j->jm = m;
	return 1;
}

/* fn on the usable members of mask at once; rcs[mb] its result.  Strips
 * (large) each on its member's worker, headers as small calls (volume.h). */
static void on_members(stripe_ctx *c, uint64_t mask, int (*fn)(void *), jcall *j, int *rcs,
                       bool strips)
{
	void *args[STRIPE_MAX_N];

	for (int mb = 0; mb < c->lay.n; mb++) {
		args[mb] = &j[mb];
		if (!stripe_member_usable(c, mb))
			mask &= ~(1ull << mb);
	}
	if (strips)
		volume_on_members_apart(c->v, mask, fn, args, rcs);
	else
		volume_on_members(c->v, mask, fn, args, rcs);
}

/* Opens and reads the journal headers of the file; true if any member has
 * a journal file at all. */
static bool read_journals(stripe_ctx *c, jmember *jm)
{
	char name[JOURNAL_PATH_SIZE];
	jcall j[STRIPE_MAX_N];
	int rcs[STRIPE_MAX_N] = { 0 };
	bool any = false;

	for (int mb = 0; mb < c->lay.n; mb++)
		jm[mb] = (jmember){ .fd = -1 };
	if (volume_journals_none(c->v))
		return false;
	journal_path(c->hdr.file_id, name);
	for (int mb = 0; mb < c->lay.n; mb++)
		j[mb] = (jcall){ .c = c, .mb = mb, .jm = &jm[mb], .name = name };
	uint64_t mask = c->lay.n == 64 ? ~0ull : (1ull << c->lay.n) - 1;
	on_members(c, mask, read_journal, j, rcs, false);
	for (int mb = 0; mb < c->lay.n; mb++)
		if (stripe_member_usable(c, mb) && rcs[mb] > 0)
			any = true;
		else if (rcs[mb] == -ETIMEDOUT)
			jm[mb] = (jmember){ .fd = -1 }; /* given up: its worker keeps it */
	return any;
}

/* Reads journal strip s of generation g from every member whose journal
 * holds it into bufs (by position); returns the mask of positions whose
 * strip verifies, and the logical size its record carries in *size. */
/* Member j->mb's journal strip j->s of generation j->g (journal_strips),
 * on its worker: 1 if it verifies (its record's size in j->size). */
static int journal_strip(void *arg)
{
	jcall *j = arg;
	stripe_ctx *c = j->c;
	const journal_header *h = &j->jm->h;
	uint64_t strip = c->lay.strip_size, i = j->s - h->first;
	int pos = (int)h->position;
	uint8_t *dst = j->bufs + (size_t)pos * strip;
	struct iovec iov = { dst, strip }; /* bounced on a worker (mop_transfer) */

	if (mop_transfer(c->v, j->mb, j->jm->fd, &iov, 1,
	                 (off_t)(JOURNAL_HEADER_SIZE + i * strip), false) != (ssize_t)strip)
		return 0;
	chunk_header ch = c->hdr;
	chunk_record r;
	ch.position = (uint32_t)pos;
	chunk_record_decode(h->records[i], &r);
	uint64_t len = layout_strip_len(&c->lay, j->s, r.size);
	if (r.generation != j->g || !chunk_strip_verify(c->sum, &ch, &r, j->s, (uint32_t)pos, dst,
	                                                len))
		return 0;
	memset(dst + len, 0, strip - len); /* past a short strip: no part of it */
	j->size = r.size;
	return 1;
}

static uint64_t journal_strips(stripe_ctx *c, jmember *jm, uint64_t s, uint64_t g,
                               uint8_t *bufs, uint64_t *size)
{
	jcall j[STRIPE_MAX_N];
	int rcs[STRIPE_MAX_N] = { 0 };
	uint64_t ok = 0, mask = 0;

	for (int mb = 0; mb < c->lay.n; mb++) {
		const journal_header *h = &jm[mb].h;
		j[mb] = (jcall){ .c = c, .mb = mb, .jm = &jm[mb], .s = s, .g = g, .bufs = bufs };
		if (jm[mb].valid && h->generation == g && s >= h->first && s - h->first < h->count)
			mask |= 1ull << mb;
	}
	on_members(c, mask, journal_strip, j, rcs, true);
	for (int mb = 0; mb < c->lay.n; mb++)
		if (mask >> mb & 1 && rcs[mb] == 1) {
			ok |= 1ull << jm[mb].h.position;
			*size = j[mb].size;
		}
	return ok;
}

/* Does the in-place stripe need rolling forward to journaled generation
 * g?  Not if every usable strip already verifies at g, nor if a record
 * names a newer generation (a later commit superseded the journal), nor
 * if every record is blank (nothing was ever committed there in place:
 * the journal is older than a truncate, or the commit wrote no record
 * before the crash, and the stripe reads as zeros, its old content). */
static bool needs_roll_forward(const strip_judgment *p, int n, uint64_t g)
{
	bool all_g = true, all_blank = true;

	for (int j = 0; j < n; j++) {
		if (!rules_strip_read(&p[j]))
			continue;
		if (p[j].gen > g)
			return false;
		all_g &= p[j].v == STRIP_GOOD && p[j].gen == g;
		all_blank &= p[j].blank;
	}
	return !all_g && !all_blank;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int journal_recover(stripe_ctx *c, bool write, uint64_t *stripes)
{
	int n = c->lay.n, k = c->lay.k, rc = 0;
	uint64_t strip = c->lay.strip_size;
	jmember jm[STRIPE_MAX_N];
	/* (stripe, generation) pairs named by any member's journal. */
	uint64_t cand[STRIPE_MAX_N * JOURNAL_MAX_STRIPES][2];
	int ncand = 0;
	uint8_t *jbuf = NULL, *pbuf = NULL;
	bool own_buffers = !c->parity;

	*stripes = 0;
	if (!read_journals(c, jm))
		return 0;
	for (int mb = 0; mb < n; mb++)
		for (uint32_t i = 0; jm[mb].valid && i < jm[mb].h.count; i++) {
			uint64_t s = jm[mb].h.first + i, g = jm[mb].h.generation;
			bool seen = false;
			for (int q = 0; q < ncand && !seen; q++)
				seen = cand[q][0] == s && cand[q][1] == g;
			if (!seen) {
				cand[ncand][0] = s;
				cand[ncand++][1] = g;
			}
		}
	qsort(cand, (size_t)ncand, sizeof(cand[0]), cmp_u64);
	if (posix_memalign((void **)&jbuf, 4096, strip * (size_t)n) ||
	    posix_memalign((void **)&pbuf, 4096, strip * (size_t)n) ||
	    (own_buffers && stripe_ctx_buffers(c) < 0)) {
		rc = -ENOMEM;
		goto out;
	}
	for (int q = 0; q < ncand; q++) {
		uint64_t s = cand[q][0], g = cand[q][1], size = 0;
		uint64_t ok = journal_strips(c, jm, s, g, jbuf, &size);
		strip_judgment p[STRIPE_MAX_N];
		uint8_t *blocks[STRIPE_MAX_N];
		/* Fewer than k copies: the barrier was never passed, so nothing
		 * of this commit reached the strips in place. */
		if (__builtin_popcountll(ok) < k)
			continue;
		if (stripe_probe(c, s, pbuf, p) < 0 || !needs_roll_forward(p, n, g))
			continue;
		++*stripes;
		if (!write)
			continue;
		for (int j = 0; j < n; j++)
			blocks[j] = jbuf + (size_t)j * strip;
		const uint8_t *data[STRIPE_MAX_N];
		for (int j = 0; j < k; j++)
			data[j] = blocks[j];
		if (stripe_decode_erased(c->code, blocks, n, ~ok, strip) < 0 ||
		    stripe_commit_inplace(c, s, 1, data, g, size) < 0) {
			ecfs_log(LOG_ERR, "%s: stripe %llu: cannot roll the journal forward",
			         c->path, (unsigned long long)s);
			rc = -EIO;
			continue;
		}
		ecfs_log(LOG_NOTICE, "%s: stripe %llu: an overwrite cut short by a crash was "
		         "completed from the journal (generation %llu)", c->path,
		         (unsigned long long)s, (unsigned long long)g);
	}
	if (write && rc == 0 && *stripes)
		rc = stripe_sync(c, true);
out:
	for (int mb = 0; mb < n; mb++)
		volume_member_close(c->v, mb, jm[mb].fd);
	/* The strips are durable in place: the journals have done their job. */
	if (write && rc == 0)
		stripe_remove_journals(c);
	free(jbuf);
	free(pbuf);
	if (own_buffers)
		stripe_ctx_free_buffers(c);
	return rc;
}
