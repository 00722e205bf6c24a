/* SPDX-License-Identifier: MIT */
/*
 * Stripe commits and fetches.  Each member's share of an operation runs on
 * that member's worker thread, so the strips of a stripe are checksummed
 * and moved to or from all members at once, and the caller waits for the
 * slowest member only.  A run of stripes in one record group costs each
 * member one pwritev for the strips and one pwrite for the records.
 *
 * Reading trusts nothing it has not verified: every strip is judged, and
 * every stripe voted, by the reader's rules (reader_rules.h), which
 * ecfs-fsck's repair follows too.
 */
#include "stripe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <glib.h>

#include "journal.h"
#include "log.h"
#include "memberops.h"
#include "memberio.h"
#include "reader_rules.h"
#include "space.h"
#include "stripe_decode.h"
#include "volume_internal.h"

int stripe_ctx_buffers(stripe_ctx *c)
{
	size_t strip = c->lay.strip_size;

	if (!c->scratch && posix_memalign((void **)&c->scratch, 4096, strip * (size_t)c->lay.n))
		c->scratch = NULL;
	if (!c->parity &&
	    posix_memalign((void **)&c->parity, 4096, strip * (size_t)c->lay.m * STRIPE_BATCH))
		c->parity = NULL;
	return c->scratch && c->parity ? 0 : -ENOMEM;
}

/* k strips to pack (commits) or unpack (fetches) short stripes through,
 * allocated the first time a short stripe is met. */
static uint8_t *pack_buffer(stripe_ctx *c, uint8_t **buf)
{
	if (!*buf && posix_memalign((void **)buf, 4096, c->lay.strip_size * (size_t)c->lay.k))
		*buf = NULL;
	return *buf;
}

void stripe_keep_head(stripe_ctx *c, int member, uint8_t *head, size_t len)
{
	g_free(c->head[member]);
	c->head[member] = head;
	c->head_len[member] = head ? len : 0;
}

/* Before anything is written: what was read at open may no longer be so. */
static void forget_heads(stripe_ctx *c)
{
	for (int mb = 0; mb < c->lay.n; mb++)
		stripe_keep_head(c, mb, NULL, 0);
}

static void drop_hedges(stripe_ctx *c);

void stripe_ctx_free_buffers(stripe_ctx *c)
{
	drop_hedges(c);
	forget_heads(c);
	journal_close(c->v, &c->jf);
	free(c->scratch);
	free(c->parity);
	free(c->run_parity);
	free(c->pack_in);
	free(c->pack_out);
	c->scratch = c->parity = c->run_parity = c->pack_in = c->pack_out = NULL;
}

void stripe_remove_journals(stripe_ctx *c)
{
	uint64_t usable = 0;

	for (int mb = 0; mb < c->lay.n; mb++)
		if (stripe_member_usable(c, mb))
			usable |= 1ull << mb;
	journal_remove(c->v, &c->jf, c->hdr.file_id, usable, c->path);
}

bool stripe_member_usable(stripe_ctx *c, int member)
{
	if (c->state[member] != CHUNK_OK || c->fd[member] < 0)
		return false;
	if (!volume_member_ok(c->v, member)) {
		c->state[member] = CHUNK_FAILED;
		return false;
	}
	return true;
}

/* The usable members (bit i: member i). */
static uint64_t usable_members(stripe_ctx *c)
{
	uint64_t usable = 0;
	for (int mb = 0; mb < c->lay.n; mb++)
		if (stripe_member_usable(c, mb))
			usable |= 1ull << mb;
	return usable;
}

int stripe_usable_count(stripe_ctx *c)
{
	return __builtin_popcountll(usable_members(c));
}

uint64_t stripe_leave_out_slow(stripe_ctx *c)
{
	int quorum = volume_defaults(c->v)->write_quorum;

	if (!quorum)
		return 0;
	uint64_t usable = usable_members(c);
	int spare = __builtin_popcountll(usable) - quorum;
	if (spare <= 0)
		return 0;
	uint64_t slow = memberio_slow_of(volume_memberio(c->v), MIO_WRITE, usable, spare);
	for (int mb = 0; mb < c->lay.n; mb++)
		if (slow >> mb & 1)
			c->state[mb] = CHUNK_STALE;
	return slow;
}

/* ---- commit ---- */

_Static_assert(STRIPE_BATCH <= JOURNAL_MAX_STRIPES, "a commit must fit in the journal");
_Static_assert(STRIPE_MAX_N <= JOURNAL_MAX_MEMBERS, "every member may have a journal");

typedef struct commit_task {
	stripe_ctx *c;
	int member, pos, cnt;
	uint64_t s0, gen, size;
	const uint8_t *strips[STRIPE_BATCH];
	uint8_t recs[STRIPE_BATCH * CHUNK_RECORD_SIZE];
	bool have_recs; /* recs computed (by the journal stage) */
	int err;
} commit_task;

/* The records (with their checksums) of the task's strips: the same bytes
 * go to the journal and in place. */
static int make_records(commit_task *t)
{
	stripe_ctx *c = t->c;
	chunk_header h = c->hdr;

	h.position = (uint32_t)t->pos;
	for (int i = 0; i < t->cnt; i++) {
		chunk_record rec = { .stripe = t->s0 + (uint64_t)i, .generation = t->gen,
		                     .position = (uint32_t)t->pos, .flags = CHUNK_RECORD_WRITTEN,
		                     .size = t->size };
		uint64_t len = layout_strip_len(&c->lay, rec.stripe, t->size);
		if (chunk_strip_sum(c->sum, &h, &rec, t->strips[i], len) < 0)
			return -EIO;
		chunk_record_encode(&rec, t->recs + (size_t)i * CHUNK_RECORD_SIZE);
	}
	t->have_recs = true;
	return 0;
}

/* Stage one of a journaled commit on one member: its journal, synced. */
static void journal_member(void *arg)
{
	commit_task *t = arg;
	stripe_ctx *c = t->c;
	journal_header jh = { .position = (uint32_t)t->pos, .count = (uint32_t)t->cnt,
	                      .first = t->s0, .generation = t->gen,
	                      .strip_size = c->lay.strip_size };

	t->err = make_records(t);
	if (t->err)
		return;
	memcpy(jh.volume_uuid, c->hdr.volume_uuid, 16);
	memcpy(jh.file_id, c->hdr.file_id, 16);
	for (int i = 0; i < t->cnt; i++)
		memcpy(jh.records[i], t->recs + (size_t)i * CHUNK_RECORD_SIZE, CHUNK_RECORD_SIZE);
	t->err = journal_write_member(c->v, &c->jf, t->member, &jh, t->strips);
}

static void commit_member(void *arg)
{
	commit_task *t = arg;
	stripe_ctx *c = t->c;
	struct iovec iov[1 + STRIPE_BATCH], *strips = iov + 1;
	ssize_t r;

	t->err = t->have_recs ? 0 : make_records(t);
	if (t->err)
		return;
	size_t bytes = 0;
	for (int i = 0; i < t->cnt; i++) {
		strips[i] = (struct iovec){ (void *)t->strips[i],
		                            layout_strip_len(&c->lay, t->s0 + (uint64_t)i, t->size) };
		bytes += strips[i].iov_len;
	}
	/* The strips and their records: until both are down the pair does not
	 * verify, so a torn commit reads as an erasure, never as data, in
	 * whichever order they land.  Where the records lie just before the
	 * strips (stripe 0 of a version-2 chunk: every small file), one write. */
	int fd = c->fd[t->member];
	off_t at = (off_t)layout_strip_offset(&c->lay, t->s0),
	      rat = (off_t)layout_record_offset(&c->lay, t->s0);
	size_t rlen = (size_t)t->cnt * CHUNK_RECORD_SIZE;
	iov[0] = (struct iovec){ t->recs, rlen };
	int64_t t0 = g_get_monotonic_time();
	if (rat + (off_t)rlen == at) {
		r = mop_transfer(c->v, t->member, fd, iov, 1 + t->cnt, rat, true);
	} else {
		r = mop_transfer(c->v, t->member, fd, strips, t->cnt, at, true);
		if (r >= 0)
			r = mop_transfer(c->v, t->member, fd, iov, 1, rat, true);
	}
	/* the member's write cost (memberio_slow_of, stripe_leave_out_slow) */
	if (r >= 0)
		memberio_note(volume_memberio(c->v), t->member, MIO_WRITE, bytes,
		              (g_get_monotonic_time() - t0) * 1000);
	t->err = r < 0 ? (int)r : 0;
}

int stripe_write_strips(stripe_ctx *c, int member, uint64_t s0, int cnt, const uint8_t *data,
                        const uint64_t *gen, const uint64_t *size)
{
	uint64_t strip = c->lay.strip_size;
	uint32_t pos = (uint32_t)layout_position_of(&c->lay, member);
	uint8_t rec[CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE] = { 0 };
	chunk_header h = c->hdr;

	if (cnt < 1 || (uint64_t)cnt > layout_group_end(&c->lay, s0) - s0)
		return -EINVAL;
	forget_heads(c);
	h.position = pos;
	uint64_t last_len = strip;
	for (int i = 0; i < cnt; i++) {
		if (!gen[i])
			continue;
		chunk_record r = { .stripe = s0 + (uint64_t)i, .generation = gen[i],
		                   .position = pos, .flags = CHUNK_RECORD_WRITTEN,
		                   .size = size[i] };
		last_len = layout_strip_len(&c->lay, r.stripe, size[i]);
		if (chunk_strip_sum(c->sum, &h, &r, data + (size_t)i * strip, last_len) < 0)
			return -EIO;
		chunk_record_encode(&r, rec + (size_t)i * CHUNK_RECORD_SIZE);
	}
	if (!gen[cnt - 1])
		last_len = strip;
	/* Strips first, then their records, as a commit does.  One write for
	 * the run: a short strip before the last goes down whole (zeros past
	 * its length), the last only as long as it is. */
	struct iovec iov = { (void *)data, strip * (size_t)(cnt - 1) + last_len };
	struct iovec riov = { rec, (size_t)cnt * CHUNK_RECORD_SIZE };
	ssize_t w = mop_transfer(c->v, member, c->fd[member], &iov, 1,
	                      (off_t)layout_strip_offset(&c->lay, s0), true);
	if (w >= 0)
		w = mop_transfer(c->v, member, c->fd[member], &riov, 1,
		              (off_t)layout_record_offset(&c->lay, s0), true);
	return w < 0 ? (int)w : 0;
}

int stripe_write_strip(stripe_ctx *c, int member, uint64_t s, const uint8_t *data,
                       uint64_t gen, uint64_t size)
{
	return stripe_write_strips(c, member, s, 1, data, &gen, &size);
}

/* Per member, a stage that moves at most this many bytes and waits on no
 * disk is a batch of small calls (mio_batch_init_small): on the relay
 * when the members are fast, one wake-up for all instead of one each.
 * A small file's strips, records and headers are a few KiB a member. */
#define STRIPE_RELAY_BYTES (16 * 1024)

static void stage_batch_init(stripe_ctx *c, mio_batch *b, bool small)
{
	if (small)
		mio_batch_init_small(volume_memberio(c->v), b);
	else
		mio_batch_init_caller(volume_memberio(c->v), b);
}

/* A commit stage of small writes: no journal (synced), and the strips of
 * every task at most STRIPE_RELAY_BYTES. */
static bool commit_stage_small(const stripe_ctx *c, const commit_task *tasks,
                               void (*fn)(void *))
{
	if (fn != commit_member)
		return false;
	for (int pos = 0; pos < c->lay.n; pos++) {
		const commit_task *t = &tasks[pos];
		uint64_t bytes = 0;
		for (int i = 0; t->err == 0 && i < t->cnt; i++)
			bytes += layout_strip_len(&c->lay, t->s0 + (uint64_t)i, t->size);
		if (bytes > STRIPE_RELAY_BYTES)
			return false;
	}
	return true;
}

/* Runs fn on the member of every task with err == 0 (all in parallel, or
 * on the relay for a small stage: commit_stage_small) and
 * counts the members that succeeded.  A member that fails is out of this
 * file's writes from now on (so the caller's missed mask names it), and
 * out of the volume if the error says the member is broken.  A full
 * member stays in (space.h): its strips of this commit are stale and the
 * vote reads around them, and *full takes the error, which the commit
 * hands to the writer. */
static int run_commit_stage(stripe_ctx *c, commit_task *tasks, void (*fn)(void *),
                            const char *what, int *full)
{
	mio_batch batch;
	int ok = 0;

	stage_batch_init(c, &batch, commit_stage_small(c, tasks, fn));
	for (int pos = 0; pos < c->lay.n; pos++)
		if (tasks[pos].err == 0)
			memberio_submit(volume_memberio(c->v), tasks[pos].member, &batch, fn,
			                &tasks[pos]);
	uint64_t lost = mio_batch_wait(&batch);
	for (int pos = 0; pos < c->lay.n; pos++) {
		commit_task *t = &tasks[pos];
		if (t->err == 0 && (lost >> t->member & 1))
			t->err = -ETIMEDOUT; /* given up (memberio.h) */
		if (t->err == 0) {
			ok++;
		} else if (t->err < 0) {
			volume_member_error(c->v, t->member, -t->err, what);
			if (space_error(t->err))
				*full = t->err;
			else
				c->state[t->member] = CHUNK_FAILED;
		}
	}
	return ok;
}

static int commit(stripe_ctx *c, uint64_t s0, int cnt, const uint8_t *const *data,
                  uint64_t gen, uint64_t size, bool journal)
{
	int k = c->lay.k, m = c->lay.m, n = c->lay.n;
	uint64_t strip = c->lay.strip_size;
	commit_task tasks[STRIPE_MAX_N];

	if (cnt < 1 || cnt > STRIPE_BATCH || (uint64_t)cnt > layout_group_end(&c->lay, s0) - s0)
		return -EINVAL;
	if (stripe_usable_count(c) < k)
		return -EIO;
	forget_heads(c);
	for (int i = 0; i < cnt; i++) {
		uint8_t *par[STRIPE_MAX_N];
		for (int j = 0; j < m; j++)
			par[j] = c->parity + ((size_t)i * m + j) * strip;
		int rc = ec_encode(c->code, data + (size_t)i * k, par,
		                   layout_strip_len(&c->lay, s0 + (uint64_t)i, size));
		if (rc < 0) {
			ecfs_log(LOG_ERR, "%s: encoding failed: %s", c->path, ec_strerror(rc));
			return -EIO;
		}
	}
	/* The journal holds one commit: it may be overwritten only once the
	 * in-place writes it protected are durable on every member (a global
	 * barrier: with some members synced and rewritten and others not, a
	 * power cut could leave neither k journal copies nor k in-place strips
	 * of that commit). */
	if (journal && c->inplace_unsynced) {
		int rc = stripe_sync(c, true);
		if (rc < 0)
			return rc;
	}
	for (int pos = 0; pos < n; pos++) {
		int mb = layout_member_of(&c->lay, pos);
		commit_task *t = &tasks[pos];
		*t = (commit_task){ .c = c, .member = mb, .pos = pos, .cnt = cnt, .s0 = s0,
		                    .gen = gen, .size = size, .err = 1 };
		if (!stripe_member_usable(c, mb))
			continue;
		t->err = 0;
		for (int i = 0; i < cnt; i++)
			t->strips[i] = pos < k ? data[(size_t)i * k + pos]
			                       : c->parity + ((size_t)i * m + pos - k) * strip;
	}
	/* The barrier: every journal is durable before any strip is written in
	 * place, so a commit cut short in place has k journal copies to roll
	 * forward from, and one cut short in the journal changed nothing. */
	/* A full member stops a journaled commit before anything is written
	 * in place: the stripes keep their old content. */
	int full = 0;
	if (journal && (run_commit_stage(c, tasks, journal_member, "writing a journal", &full) < k ||
	                full))
		return full ? full : -EIO;
	int written = run_commit_stage(c, tasks, commit_member, "writing a chunk", &full);
	if (journal)
		c->inplace_unsynced = true;
	if (s0 + (uint64_t)cnt > c->written_end)
		c->written_end = s0 + (uint64_t)cnt;
	if (full)
		return full; /* each stripe holds its old or its new content */
	return written >= k ? 0 : -EIO;
}

int stripe_commit(stripe_ctx *c, uint64_t s0, int cnt, const uint8_t *const *data,
                  uint64_t gen, uint64_t size)
{
	int k = c->lay.k;
	const uint8_t *stored[STRIPE_BATCH * STRIPE_MAX_N];

	if (cnt < 1 || cnt > STRIPE_BATCH)
		return -EINVAL;
	/* The stripe holding the file's end is stored short (layout.h); a
	 * commit has at most one, the stripes past the end hold no bytes. */
	memcpy(stored, data, sizeof(*data) * (size_t)cnt * (size_t)k);
	for (int i = 0; i < cnt; i++) {
		uint64_t s = s0 + (uint64_t)i, len = layout_strip_len(&c->lay, s, size);
		if (len >= c->lay.strip_size || s * layout_stripe_data(&c->lay) >= size)
			continue;
		uint8_t *pb = pack_buffer(c, &c->pack_out);
		if (!pb)
			return -ENOMEM;
		uint8_t *out[STRIPE_MAX_N];
		for (int j = 0; j < k; j++)
			stored[(size_t)i * k + j] = out[j] = pb + (size_t)j * c->lay.strip_size;
		layout_pack_short(&c->lay, len, data + (size_t)i * k, out);
	}
	/* Stripes at or past written_end never held committed content: a
	 * first write cut short leaves new strips beside unwritten ones, which
	 * read as the old content, zeros (the hole rule, reader_rules.h). */
	return commit(c, s0, cnt, stored, gen, size, s0 < c->written_end);
}

int stripe_commit_inplace(stripe_ctx *c, uint64_t s0, int cnt, const uint8_t *const *data,
                          uint64_t gen, uint64_t size)
{
	return commit(c, s0, cnt, data, gen, size, false);
}

/* ---- fetch ---- */

typedef struct fetch_task {
	stripe_ctx *c;
	int member, pos, cnt;
	uint64_t s0;
	uint8_t *dest[STRIPE_FETCH_RUN];
	strip_judgment st[STRIPE_FETCH_RUN];
	bool from_head; /* stripe 0 may come from stripe_ctx.head */
	int err;
	/* What the read needs of the context, taken when it is asked, so
	 * that a hedged read's late task reads nothing the caller changes. */
	int fd;
	chunk_header hdr;
	bool done;      /* hedged reads: set once the task has run (atomic) */
} fetch_task;

/* Sets task t up to read stripes [s0, s0+cnt) of position pos. */
static void fetch_task_init(stripe_ctx *c, fetch_task *t, int pos, uint64_t s0, int cnt)
{
	t->c = c;
	t->member = layout_member_of(&c->lay, pos);
	t->pos = pos;
	t->cnt = cnt;
	t->s0 = s0;
	t->err = 0;
	t->from_head = false;
	t->fd = c->fd[t->member];
	t->hdr = c->hdr;
	t->done = false;
	for (int i = 0; i < cnt; i++)
		t->st[i] = (strip_judgment){ .v = STRIP_UNREAD };
}

/* A pread of member mb's chunk from what open read of it (all of it). */
static ssize_t head_pread(const stripe_ctx *c, int mb, void *buf, size_t len, uint64_t off)
{
	size_t have = c->head_len[mb];

	if (off >= have)
		return 0;
	if (len > have - off)
		len = have - off;
	memcpy(buf, c->head[mb] + off, len);
	return (ssize_t)len;
}

/* Reads and judges strips s0..s0+cnt-1 of one position: one preadv for the
 * strips (consecutive in the chunk within a group), one pread for their
 * records, then a verdict per strip. */
static void fetch_member(void *arg)
{
	fetch_task *t = arg;
	stripe_ctx *c = t->c;
	uint64_t strip = c->lay.strip_size;
	uint8_t recs[STRIPE_FETCH_RUN * CHUNK_RECORD_SIZE];
	struct iovec iov[STRIPE_FETCH_RUN], riov = { recs, (size_t)t->cnt * CHUNK_RECORD_SIZE };
	int fd = t->fd;
	chunk_header h = t->hdr;

	for (int i = 0; i < t->cnt; i++)
		iov[i] = (struct iovec){ t->dest[i], strip };
	ssize_t got, rgot;
	if (t->from_head) {
		got = head_pread(c, t->member, t->dest[0], strip, layout_strip_offset(&c->lay, 0));
		rgot = head_pread(c, t->member, recs, CHUNK_RECORD_SIZE,
		                  layout_record_offset(&c->lay, 0));
		fd = -1; /* nothing of the member is looked at */
	} else {
		int64_t t0 = g_get_monotonic_time();
		got = mop_transfer(c->v, t->member, fd, iov, t->cnt,
		                   (off_t)layout_strip_offset(&c->lay, t->s0), false);
		/* the member's read cost (memberio_slow_of): strips read whole */
		if (got == (ssize_t)(strip * (uint64_t)t->cnt))
			memberio_note(volume_memberio(c->v), t->member, MIO_READ, (size_t)got,
			              (g_get_monotonic_time() - t0) * 1000);
		rgot = got < 0 ? got
		       : mop_transfer(c->v, t->member, fd, &riov, 1,
		                      (off_t)layout_record_offset(&c->lay, t->s0), false);
	}
	if (got < 0 || rgot < 0) {
		for (int i = 0; i < t->cnt; i++)
			t->st[i].v = STRIP_ERR;
		t->err = (int)(got < 0 ? got : rgot);
		return;
	}
	/* Past the end of the chunk reads as zeros (a hole, or a chunk cut
	 * short: the records tell which). */
	for (int i = 0; i < t->cnt; i++) {
		uint64_t have = (uint64_t)got > i * strip ? (uint64_t)got - i * strip : 0;
		if (have < strip)
			memset(t->dest[i] + have, 0, strip - have);
	}
	if ((size_t)rgot < riov.iov_len)
		memset(recs + rgot, 0, riov.iov_len - (size_t)rgot);
	h.position = (uint32_t)t->pos;
	for (int i = 0; i < t->cnt; i++)
		rules_judge_strip(c->sum, &h, &c->lay, t->s0 + (uint64_t)i,
		                  recs + (size_t)i * CHUNK_RECORD_SIZE, t->dest[i], fd, &t->st[i]);
}

/* Fetches stripes [s0, s0+cnt) of the positions in mask (bit j = position
 * j) on their members in parallel; dest[j][i] receives strip j of stripe
 * s0+i. */
static void fetch_positions(stripe_ctx *c, uint64_t s0, int cnt, uint64_t mask,
                            uint8_t *(*dest)[STRIPE_FETCH_RUN], fetch_task *tasks,
                            bool from_head)
{
	mio_batch batch;

	mio_batch_init_caller(volume_memberio(c->v), &batch);
	for (int pos = 0; pos < c->lay.n; pos++) {
		fetch_task *t = &tasks[pos];
		fetch_task_init(c, t, pos, s0, cnt);
		int mb = t->member;
		t->from_head = from_head && s0 == 0 && cnt == 1 && c->head[mb];
		for (int i = 0; i < cnt; i++)
			t->dest[i] = dest[pos][i];
		if (!(mask >> pos & 1) || !stripe_member_usable(c, mb))
			continue;
		if (t->from_head)
			fetch_member(t); /* a copy: no need to hand it to the member */
		else
			memberio_submit(volume_memberio(c->v), mb, &batch, fetch_member, t);
	}
	uint64_t lost = mio_batch_wait(&batch);
	for (int pos = 0; lost && pos < c->lay.n; pos++) {
		fetch_task *t = &tasks[pos];
		if (!(lost >> t->member & 1))
			continue;
		/* given up (memberio.h): an erasure, whatever it got to */
		t->err = -ETIMEDOUT;
		for (int i = 0; i < cnt; i++)
			t->st[i].v = STRIP_ERR;
	}
}

/* Fastest-k reads: a member clearly slower than its peers now
 * (memberio_slow_of: its reads per byte against theirs) is read around, as a
 * failed one is, when k others can serve the stripe.  The positions whose
 * members are slow, or 0 (always 0 under -o slow_readaround=off). */
static uint64_t slow_positions(stripe_ctx *c)
{
	int n = c->lay.n;
	uint64_t usable, slow = 0, slow_mb;

	if (volume_defaults(c->v)->no_read_around)
		return 0;
	usable = usable_members(c);
	slow_mb = memberio_slow_of(volume_memberio(c->v), MIO_READ, usable,
	                        __builtin_popcountll(usable) - c->lay.k);
	for (int pos = 0; slow_mb && pos < n; pos++)
		if (slow_mb >> layout_member_of(&c->lay, pos) & 1)
			slow |= 1ull << pos;
	return slow;
}

/* The answers a read around slow members needs before its vote can
 * stand: more than m, so that no generation could have k strips among the
 * unread ones, and k to decode from. */
static int around_need(const stripe_ctx *c)
{
	return c->lay.k > c->lay.m ? c->lay.k : c->lay.m + 1;
}

/* The positions to read around the slow ones: the wanted data positions
 * first, then the other data positions and the parity ones, until
 * around_need are asked, and `spare` more if there are (a hedged read):
 * no more reads than k, as with every member fast, but the spares. */
static uint64_t around_positions(stripe_ctx *c, uint64_t want, uint64_t slow, int spare)
{
	int n = c->lay.n, need = around_need(c) + spare, got = 0;
	uint64_t mask = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int pos = 0; pos < n && got < need; pos++) {
			bool first = pos < c->lay.k && (want >> pos & 1);
			if ((pass == 0) != first || (slow >> pos & 1) || (mask >> pos & 1) ||
			    !stripe_member_usable(c, layout_member_of(&c->lay, pos)))
				continue;
			mask |= 1ull << pos;
			got++;
		}
	return mask;
}

/* Stripe i of the fetch, read around the positions in `skipped`: true if
 * its vote stands whatever those strips hold (reader_rules.h). */
static bool vote_settled(const fetch_task *tasks, int n, int k, int i, uint64_t skipped)
{
	strip_judgment st[STRIPE_MAX_N];
	uint64_t best;

	for (int j = 0; j < n; j++)
		st[j] = tasks[j].st[i];
	return rules_vote(st, n, k, &best) >= k &&
	       rules_vote_settled(st, n, k, __builtin_popcountll(skipped), best);
}

/* True if every wanted data strip of stripe i of the run is good and all
 * are of one generation. */
static bool run_stripe_ok(const fetch_task *tasks, int k, uint64_t want, int i)
{
	bool have = false;
	uint64_t gen = 0;

	for (int j = 0; j < k; j++) {
		if (!(want >> j & 1))
			continue;
		if (tasks[j].st[i].v != STRIP_GOOD || (have && tasks[j].st[i].gen != gen))
			return false;
		gen = tasks[j].st[i].gen;
		have = true;
	}
	return true;
}

static int vote_and_decode(stripe_ctx *c, uint64_t s, uint64_t want, const fetch_task *tasks,
                           uint8_t *(*dest)[STRIPE_FETCH_RUN], int i, uint64_t *len);
static int unpack_in_place(stripe_ctx *c, uint64_t len, uint8_t *const *data);
static int fetch_hedged(stripe_ctx *c, uint64_t s0, int cnt, uint64_t want, uint64_t first,
                        uint64_t spare, uint8_t *(*out)[STRIPE_FETCH_RUN], uint64_t *lens);

/* Parity strips of a degraded run, position k+p of stripe i of the run. */
static uint8_t *run_parity(stripe_ctx *c, int p, int i)
{
	return c->run_parity + ((size_t)p * STRIPE_FETCH_RUN + (size_t)i) * c->lay.strip_size;
}

int stripe_fetch_run(stripe_ctx *c, uint64_t s0, int cnt, uint8_t *const *data)
{
	int k = c->lay.k, n = c->lay.n;
	uint64_t all = (1ull << k) - 1, mask = all;
	uint8_t *dest[STRIPE_MAX_N][STRIPE_FETCH_RUN];
	bool degraded = false;
	fetch_task *tasks;
	int rc = 0;

	if (cnt < 1 || cnt > STRIPE_FETCH_RUN || (uint64_t)cnt > layout_group_end(&c->lay, s0) - s0)
		return -EINVAL;
	for (int j = 0; j < k; j++)
		for (int i = 0; i < cnt; i++)
			dest[j][i] = data[(size_t)i * k + j];
	/* A data position on a member known to be failed: every stripe needs
	 * decoding, so read every position of the whole run at once (one read
	 * per member) rather than fall back stripe by stripe. */
	for (int j = 0; j < k && !degraded; j++)
		degraded = !stripe_member_usable(c, layout_member_of(&c->lay, j));
	/* So is a data position on a member known to be slow. */
	uint64_t slow = slow_positions(c);
	degraded |= (slow & all) != 0;
	if (degraded && !c->run_parity &&
	    posix_memalign((void **)&c->run_parity, 4096,
	                   (size_t)c->lay.m * STRIPE_FETCH_RUN * c->lay.strip_size))
		c->run_parity = NULL;
	if (degraded && c->run_parity) {
		mask = slow ? around_positions(c, all, slow, 0) : (1ull << n) - 1;
		for (int j = k; j < n; j++)
			for (int i = 0; i < cnt; i++)
				dest[j][i] = run_parity(c, j - k, i);
	}
	/* read around a slow member (not the plain k data strips of a run
	 * that only a parity member slows) */
	uint64_t spare = degraded && slow && c->run_parity
	                 ? around_positions(c, all, slow, 1) & ~mask : 0;
	if (spare) {
		uint64_t lens[STRIPE_FETCH_RUN];
		rc = fetch_hedged(c, s0, cnt, all, mask, spare, dest, lens);
		for (int i = 0; i < cnt && rc == 1; i++)
			if (unpack_in_place(c, lens[i], data + (size_t)i * k) < 0)
				rc = -ENOMEM;
		if (rc != 0)
			return rc < 0 ? rc : 0;
		/* a vote that did not stand: the careful way below */
	}
	tasks = g_new(fetch_task, n);
	fetch_positions(c, s0, cnt, mask, dest, tasks, false);
	/* Stripes that did not read cleanly: decoded from what the run read,
	 * or fetched again the careful way, one by one. */
	for (int i = 0; i < cnt && rc == 0; i++) {
		uint64_t len = c->lay.strip_size;
		if (run_stripe_ok(tasks, k, all, i))
			len = tasks[0].st[i].len;
		else if (mask != all &&
		         (!slow || vote_settled(tasks, n, k, i, ((1ull << n) - 1) & ~mask)))
			rc = vote_and_decode(c, s0 + (uint64_t)i, all, tasks, dest, i, &len);
		else
			rc = stripe_fetch(c, s0 + (uint64_t)i, all, data + (size_t)i * k);
		if (rc == 0)
			rc = unpack_in_place(c, len, data + (size_t)i * k);
	}
	g_free(tasks);
	return rc;
}

/* After every position of stripe s was fetched (stripe i of the fetch in
 * tasks, position j's strip in dest[j][i]): votes its generation
 * (stripe_vote_take), treats every strip not of the winner as an erasure,
 * rebuilds the wanted data strips that are erased and rewrites the bad
 * strips of members in service. */
static int vote_and_decode(stripe_ctx *c, uint64_t s, uint64_t want, const fetch_task *tasks,
                           uint8_t *(*dest)[STRIPE_FETCH_RUN], int i, uint64_t *len)
{
	int k = c->lay.k, n = c->lay.n;
	bool need_decode = false;
	uint8_t *blocks[STRIPE_MAX_N];
	strip_judgment st[STRIPE_MAX_N] = { 0 };
	stripe_vote vote;

	for (int j = 0; j < n; j++) {
		const fetch_task *t = &tasks[j];
		st[j] = t->st[i];
		if (st[j].v == STRIP_ERR) {
			if (volume_member_error(c->v, t->member, t->err, "reading a chunk"))
				c->state[t->member] = CHUNK_FAILED;
		} else if (st[j].v == STRIP_BAD) {
			volume_strip_failure(c->v, t->member, c->path, s, st[j].why);
		}
	}
	stripe_vote_take(st, n, k, c->lay.m, s, c->hdr.durable, 0, &vote);
	*len = c->lay.strip_size;
	if (vote.outcome == STRIPE_CUT_SHORT) {
		ecfs_log(LOG_INFO, "%s: stripe %llu: a first write was cut short; it reads as "
		         "zeros, as before it", c->path, (unsigned long long)s);
		for (int j = 0; j < k; j++)
			if (want >> j & 1)
				memset(dest[j][i], 0, c->lay.strip_size);
		return 0;
	}
	if (vote.outcome == STRIPE_LOST) {
		ecfs_log(LOG_ERR, "%s: stripe %llu has fewer than k=%d good strips: unreadable",
		         c->path, (unsigned long long)s, k);
		return -EIO;
	}
	uint64_t best = vote.best, heal = 0;
	for (int j = 0; j < n; j++) {
		const fetch_task *t = &tasks[j];
		blocks[j] = dest[j][i];
		if (!(vote.stale >> j & 1))
			continue;
		if (st[j].v == STRIP_GOOD || st[j].v == STRIP_HOLE)
			volume_strip_failure(c->v, t->member, c->path, s,
			                     "strip of another generation (missed or torn write)");
		/* Self-healing read: a bad strip read from a member in service
		 * (not one that failed to answer) is rewritten once decoded. */
		if (best && st[j].v != STRIP_ERR && st[j].v != STRIP_UNREAD &&
		    !volume_defaults(c->v)->read_only && stripe_member_usable(c, t->member))
			heal |= 1ull << j;
		if ((j < k && (want >> j & 1)) || heal >> j & 1)
			need_decode = true;
		else
			blocks[j] = NULL;
	}
	if (best)
		*len = layout_strip_len(&c->lay, s, vote.size);
	if (!need_decode)
		return 0;
	/* Over whole strips: the good ones read as zeros past their length,
	 * so the rebuilt ones do too. */
	int rc = stripe_decode_erased(c->code, blocks, n, vote.stale, c->lay.strip_size);
	if (rc < 0) {
		ecfs_log(LOG_ERR, "%s: stripe %llu: decoding failed: %s", c->path,
		         (unsigned long long)s, ec_strerror(rc));
		return -EIO;
	}
	volume_count_decoded(c->v, 1);
	for (int j = 0; j < n; j++) {
		if (!(heal >> j & 1))
			continue;
		int mb = tasks[j].member;
		int wrc = stripe_write_strip(c, mb, s, blocks[j], best, vote.size);
		if (wrc < 0) {
			if (volume_member_error(c->v, mb, -wrc, "rewriting a bad strip"))
				c->state[mb] = CHUNK_FAILED;
			continue;
		}
		volume_count_healed(c->v, 1);
		ecfs_log(LOG_NOTICE, "%s: stripe %llu: rewrote the bad strip on member %d (%s)",
		         c->path, (unsigned long long)s, mb, volume_member_path(c->v, mb));
	}
	return 0;
}

/* ---- hedged reads ----
 *
 * A read around a slow member asks the k other members it needs, and if
 * they are late, one more, and goes on with the first answers that settle
 * it (issue 17's fastest-k reads): a straggler among the fast members no
 * longer sets the read's time.  The answer that comes last must land
 * where nobody looks, so a hedge's tasks read into buffers of its own,
 * with their own copy of what they read with (fetch_task_init); the
 * context keeps a hedge until its last answer is in, ends it at a later
 * read (reap_hedges), and waits for it before the chunks' descriptors
 * close (stripe_wait_late_reads). */
typedef struct stripe_hedge {
	mio_batch batch;
	fetch_task *tasks;         /* n, by position */
	uint8_t *bufs;             /* n * cap strips: position j's strip i at j * cap + i */
	int cap;                   /* stripes per position bufs holds */
	struct stripe_hedge *next; /* stripe_ctx.late */
} stripe_hedge;

static void hedge_free(stripe_hedge *h)
{
	g_free(h->tasks);
	free(h->bufs);
	g_free(h);
}

/* A hedge whose last answer is in: ended, and kept for the next (one is
 * enough, since hedges rarely overlap). */
static void hedge_end(stripe_ctx *c, stripe_hedge *h)
{
	mio_batch_wait(&h->batch);
	if (c->spare_hedge) {
		hedge_free(h);
		return;
	}
	h->next = NULL;
	c->spare_hedge = h;
}

/* Ends the hedges whose last answer is in, and waits for the others but
 * the `keep` newest (each holds its buffers until its last answer). */
#define STRIPE_HEDGES_LATE 4
static void reap_hedges(stripe_ctx *c, int keep)
{
	int kept = 0;

	for (stripe_hedge **pp = &c->late; *pp;) { /* newest first */
		stripe_hedge *h = *pp;
		if (kept < keep && !mio_batch_idle(&h->batch)) {
			kept++;
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		hedge_end(c, h);
	}
}

void stripe_wait_late_reads(stripe_ctx *c)
{
	reap_hedges(c, 0);
}

/* Waits for the late answers, then frees every hedge. */
static void drop_hedges(stripe_ctx *c)
{
	reap_hedges(c, 0);
	if (c->spare_hedge)
		hedge_free(c->spare_hedge);
	c->spare_hedge = NULL;
}

/* A hedge with room for runs of cnt stripes, or NULL (out of memory). */
static stripe_hedge *hedge_get(stripe_ctx *c, int cnt)
{
	stripe_hedge *h;

	reap_hedges(c, STRIPE_HEDGES_LATE - 1);
	h = c->spare_hedge;
	c->spare_hedge = NULL;
	if (h && h->cap < cnt) {
		hedge_free(h);
		h = NULL;
	}
	if (h)
		return h;
	h = g_new0(stripe_hedge, 1);
	h->tasks = g_new(fetch_task, c->lay.n);
	h->cap = cnt;
	if (posix_memalign((void **)&h->bufs, 4096,
	                   c->lay.strip_size * (size_t)c->lay.n * (size_t)cnt)) {
		h->bufs = NULL;
		hedge_free(h);
		return NULL;
	}
	return h;
}

static void hedged_fetch_member(void *arg)
{
	fetch_task *t = arg;

	fetch_member(t);
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
}

/* Sets up the hedge's tasks for stripes [s0, s0+cnt), each position's
 * strips landing in the hedge's buffers, and asks those in mask. */
static void hedge_ask(stripe_ctx *c, stripe_hedge *h, uint64_t s0, int cnt, uint64_t mask)
{
	mio_batch_init_each(&h->batch);
	for (int pos = 0; pos < c->lay.n; pos++) {
		fetch_task *t = &h->tasks[pos];
		fetch_task_init(c, t, pos, s0, cnt);
		for (int i = 0; i < cnt; i++)
			t->dest[i] = h->bufs + ((size_t)pos * (size_t)h->cap + (size_t)i) *
			                         c->lay.strip_size;
		if (mask >> pos & 1)
			memberio_submit(volume_memberio(c->v), t->member, &h->batch,
			                hedged_fetch_member, t);
	}
}

/* What the hedge's answers say so far: snap gets the tasks that have run
 * and those given up (erasures); the others read as unread.  Returns the
 * positions answered. */
static uint64_t hedge_answers(stripe_ctx *c, stripe_hedge *h, uint64_t asked, uint64_t lost,
                              fetch_task *snap)
{
	uint64_t answered = 0;

	for (int pos = 0; pos < c->lay.n; pos++) {
		fetch_task *t = &h->tasks[pos];
		if ((asked >> pos & 1) && __atomic_load_n(&t->done, __ATOMIC_ACQUIRE)) {
			snap[pos] = *t;
			answered |= 1ull << pos;
			continue;
		}
		fetch_task_init(c, &snap[pos], pos, t->s0, t->cnt);
		if ((asked >> pos & 1) && (lost >> snap[pos].member & 1)) {
			snap[pos].err = -ETIMEDOUT; /* given up (memberio.h) */
			for (int i = 0; i < t->cnt; i++)
				snap[pos].st[i].v = STRIP_ERR;
			answered |= 1ull << pos;
		}
	}
	return answered;
}

/* When the spare is asked: once the positions in mask are late for a
 * read of cnt strips each (memberio_late_us). */
static int64_t hedge_deadline_ns(stripe_ctx *c, uint64_t mask, int cnt)
{
	uint64_t members = 0;

	for (int pos = 0; pos < c->lay.n; pos++)
		if (mask >> pos & 1)
			members |= 1ull << layout_member_of(&c->lay, pos);
	uint64_t us = memberio_late_us(volume_memberio(c->v), members,
	                               c->lay.strip_size * (size_t)cnt);
	return (g_get_monotonic_time() + (int64_t)us) * 1000;
}

/* Every stripe of the hedge's run stands on the answers in. */
static bool hedge_settled(const fetch_task *snap, int n, int k, int cnt, uint64_t unanswered)
{
	for (int i = 0; i < cnt; i++)
		if (!vote_settled(snap, n, k, i, unanswered))
			return false;
	return true;
}

/* Votes and decodes stripe i of the hedge's run from the answers in snap:
 * each wanted data strip j goes to out[j][i], decoded there if it is not
 * among the answers; *len as vote_and_decode sets it. */
static int hedge_decode(stripe_ctx *c, const fetch_task *snap, uint64_t answered, uint64_t want,
                        int i, uint8_t *(*out)[STRIPE_FETCH_RUN], uint64_t *len)
{
	uint8_t *dest[STRIPE_MAX_N][STRIPE_FETCH_RUN];

	for (int j = 0; j < c->lay.n; j++) {
		bool in = answered >> j & 1, wanted = j < c->lay.k && (want >> j & 1);
		/* a late strip's buffer is the late task's: never a decode's */
		dest[j][i] = in ? snap[j].dest[i] : wanted ? out[j][i] : NULL;
	}
	int rc = vote_and_decode(c, snap[0].s0 + (uint64_t)i, want, snap, dest, i, len);
	for (int j = 0; j < c->lay.k && rc == 0; j++)
		if ((want >> j & 1) && dest[j][i] != out[j][i])
			memcpy(out[j][i], dest[j][i], c->lay.strip_size);
	return rc;
}

/* Stripes [s0, s0+cnt) read around a slow member: the positions in first
 * (as many as around_need) are asked; if they have not all answered by
 * hedge_deadline_ns, the position in spare is asked too.  The read goes
 * on as soon as the answers in settle every stripe's vote whatever the
 * others hold (vote_settled); a late one is left to the hedge.  Returns
 * 1 with each wanted data strip j of stripe i in out[j][i] and the
 * stripe's stored length in lens[i] (vote_and_decode), 0 if a vote did
 * not stand on every answer (or no hedge could be had: the caller reads
 * every position), or a negative errno. */
static int fetch_hedged(stripe_ctx *c, uint64_t s0, int cnt, uint64_t want, uint64_t first,
                        uint64_t spare, uint8_t *(*out)[STRIPE_FETCH_RUN], uint64_t *lens)
{
	int n = c->lay.n, k = c->lay.k, rc = 0;
	uint64_t all = (1ull << n) - 1, asked = first, answered = 0;
	stripe_hedge *h = hedge_get(c, cnt);

	if (!h)
		return 0;
	hedge_ask(c, h, s0, cnt, first);
	if (!volume_defaults(c->v)->no_hedge &&
	    !mio_batch_wait_left_until(&h->batch, 0, hedge_deadline_ns(c, first, cnt))) {
		fetch_task *t = &h->tasks[__builtin_ctzll(spare)];
		memberio_submit(volume_memberio(c->v), t->member, &h->batch, hedged_fetch_member, t);
		asked |= spare;
		volume_count_hedged(c->v);
	}
	fetch_task *snap = g_new(fetch_task, n);
	for (int left = __builtin_popcountll(asked) - around_need(c); left >= 0 && rc == 0; left--) {
		uint64_t lost = mio_batch_wait_left(&h->batch, left);
		answered = hedge_answers(c, h, asked, lost, snap);
		rc = hedge_settled(snap, n, k, cnt, all & ~answered);
	}
	for (int i = 0; i < cnt && rc == 1; i++)
		if (hedge_decode(c, snap, answered, want, i, out, &lens[i]) < 0)
			rc = -EIO;
	g_free(snap);
	if (mio_batch_idle(&h->batch)) {
		hedge_end(c, h);
	} else {
		h->next = c->late;
		c->late = h;
	}
	return rc;
}

/* Fetches stripe s as stored: a short stripe's bytes in the first *len
 * bytes of its strips (layout_strip_len). */
static int fetch_stored(stripe_ctx *c, uint64_t s, uint64_t want, uint8_t *const *data,
                        uint64_t *len)
{
	int k = c->lay.k, n = c->lay.n;
	uint64_t strip = c->lay.strip_size;
	fetch_task *tasks = g_new(fetch_task, n);
	uint8_t *dest[STRIPE_MAX_N][STRIPE_FETCH_RUN];
	int rc = 0;

	for (int j = 0; j < n; j++)
		dest[j][0] = j < k && (want >> j & 1) ? data[j] : c->scratch + (size_t)j * strip;
	/* Fast path: only the wanted data strips, all good and of one
	 * generation.  A hole is not trusted here (a chunk cut short also
	 * reads as one), so it sends us to the slow path that asks everyone. */
	uint64_t slow = slow_positions(c), all = (1ull << n) - 1, mask = all;
	if (!(want & slow)) {
		fetch_positions(c, s, 1, want, dest, tasks, true);
		if (run_stripe_ok(tasks, k, want, 0)) {
			*len = tasks[__builtin_ctzll(want)].st[0].len;
			goto out;
		}
	}
	/* Slow path: every position (or, around a slow member, as many as
	 * the vote needs, if it stands without the others), a vote on the
	 * generation, decode. */
	if (slow) {
		mask = around_positions(c, want, slow, 0);
		uint64_t spare = around_positions(c, want, slow, 1) & ~mask;
		if (spare) {
			rc = fetch_hedged(c, s, 1, want, mask, spare, dest, len);
			if (rc != 0)
				goto out; /* read, or failed */
			mask = all;
		} else {
			fetch_positions(c, s, 1, mask, dest, tasks, false);
			if (!vote_settled(tasks, n, k, 0, all & ~mask))
				mask = all;
		}
	}
	if (mask == all)
		fetch_positions(c, s, 1, all, dest, tasks, false);
	rc = vote_and_decode(c, s, want, tasks, dest, 0, len);
out:
	g_free(tasks);
	return rc < 0 ? rc : 0;
}

/* A stripe fetched as stored (a short one's bytes in the first len bytes
 * of the data strips) made its plain strips, in place. */
static int unpack_in_place(stripe_ctx *c, uint64_t len, uint8_t *const *data)
{
	const uint8_t *in[STRIPE_MAX_N];
	uint8_t *pb = len < c->lay.strip_size ? pack_buffer(c, &c->pack_in) : NULL;

	if (len >= c->lay.strip_size)
		return 0;
	if (!pb)
		return -ENOMEM;
	for (int j = 0; j < c->lay.k; j++) {
		in[j] = pb + (size_t)j * c->lay.strip_size;
		memcpy(pb + (size_t)j * c->lay.strip_size, data[j], len);
	}
	layout_unpack_short(&c->lay, len, in, (1ull << c->lay.k) - 1, data);
	return 0;
}

int stripe_fetch(stripe_ctx *c, uint64_t s, uint64_t want, uint8_t *const *data)
{
	uint64_t all = (1ull << c->lay.k) - 1, len;
	uint8_t *raw[STRIPE_MAX_N];

	if (want == all) {
		int rc = fetch_stored(c, s, want, data, &len);
		return rc < 0 ? rc : unpack_in_place(c, len, data);
	}
	int rc = fetch_stored(c, s, want, data, &len);
	if (rc < 0 || len >= c->lay.strip_size)
		return rc;
	/* A short stripe spreads any range over all its data strips. */
	uint8_t *pb = pack_buffer(c, &c->pack_in);
	if (!pb)
		return -ENOMEM;
	for (int j = 0; j < c->lay.k; j++)
		raw[j] = pb + (size_t)j * c->lay.strip_size;
	rc = fetch_stored(c, s, all, raw, &len);
	if (rc == 0)
		layout_unpack_short(&c->lay, len, (const uint8_t *const *)raw, want, data);
	return rc;
}

/* ---- recovery helpers ---- */

int stripe_probe(stripe_ctx *c, uint64_t s, uint8_t *bufs, strip_judgment p[STRIPE_MAX_N])
{
	int n = c->lay.n, got = 0;
	fetch_task *tasks = g_new(fetch_task, n);
	uint8_t *dest[STRIPE_MAX_N][STRIPE_FETCH_RUN];

	for (int j = 0; j < n; j++)
		dest[j][0] = bufs + (size_t)j * c->lay.strip_size;
	fetch_positions(c, s, 1, (1ull << n) - 1, dest, tasks, false);
	for (int j = 0; j < n; j++) {
		p[j] = tasks[j].st[0];
		got += rules_strip_read(&p[j]);
	}
	g_free(tasks);
	return got >= c->lay.k ? 0 : -EIO;
}

int stripe_scan_end(stripe_ctx *c, uint64_t size, bool *dirty)
{
	uint64_t count = layout_stripe_count(&c->lay, size);
	uint64_t len = layout_chunk_length(&c->lay, count), last = count - 1;
	uint8_t recs[CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE];

	*dirty = false;
	for (int mb = 0; mb < c->lay.n && !*dirty; mb++) {
		struct stat st;
		if (!stripe_member_usable(c, mb))
			continue;
		/* A small file's whole chunk was read at open: no member call. */
		bool whole = c->head[mb] != NULL;
		if (whole)
			st.st_size = (off_t)c->head_len[mb];
		else if (fstat(c->fd[mb], &st) < 0)
			return -errno;
		if ((uint64_t)st.st_size > len) {
			*dirty = true;
			break;
		}
		if (count == 0)
			continue;
		/* The record block of the last stripe's group: no records after
		 * it, and the last one not written when the file was longer. */
		uint64_t g0 = layout_group_start(&c->lay, last);
		uint64_t gn = layout_group_end(&c->lay, last) - g0;
		struct iovec iov = { recs, gn * CHUNK_RECORD_SIZE };
		uint64_t roff = layout_record_offset(&c->lay, g0);
		ssize_t r = whole ? head_pread(c, mb, recs, iov.iov_len, roff)
		            : mop_transfer(c->v, mb, c->fd[mb], &iov, 1, (off_t)roff, false);
		if (r < 0)
			continue; /* an erasure; the reads will judge it */
		memset(recs + r, 0, iov.iov_len - (size_t)r);
		/* Only records a commit wrote count (naming their stripe and this
		 * position): rot in an unused slot is no leftover. */
		uint32_t pos = (uint32_t)layout_position_of(&c->lay, mb);
		for (uint64_t i = last - g0; i < gn; i++) {
			chunk_record rec;
			chunk_record_decode(recs + i * CHUNK_RECORD_SIZE, &rec);
			if (rec.stripe != g0 + i || rec.position != pos ||
			    !(rec.flags & CHUNK_RECORD_WRITTEN))
				continue;
			if (g0 + i > last ||
			    (size % layout_stripe_data(&c->lay) && rec.size > size))
				*dirty = true;
		}
	}
	return 0;
}

/* ---- headers, sync, truncate ---- */

/* One member's part of a per-member step (headers, sync). */
typedef struct member_job {
	stripe_ctx *c;
	int member;
	bool datasync; /* sync_member: fdatasync, not fsync */
	bool durable;  /* write_header_member: fdatasync after the write */
	bool sync_first; /* write_header_member: fdatasync before it too */
	int err; /* 1: not run (member not usable), 0, or -errno */
} member_job;

static void sync_member(void *arg);

/* True if the job makes a sync that waits on some usable member's disk
 * (mop_syncs): such a stage runs on the members' workers, in parallel. */
static bool job_syncs(stripe_ctx *c, void (*fn)(void *), const member_job *how)
{
	if (!how->durable && !how->sync_first && fn != sync_member)
		return false;
	for (int mb = 0; mb < c->lay.n; mb++)
		if (stripe_member_usable(c, mb) && mop_syncs(c->v, mb))
			return true;
	return false;
}

/* Runs fn on every usable member's worker, in parallel (or on the relay
 * when the job makes no sync that waits on a disk); a member given up
 * (memberio.h) gets -ETIMEDOUT.  A member that fails is out of this file
 * (and of the volume if the error says the member is broken), and fewer
 * than k that succeed fail the step with EIO.  A full member stays in
 * (space.h) and fails the step with its ENOSPC or EDQUOT: what it holds
 * is what a crash before the step would have left. */
static int on_usable_members(stripe_ctx *c, void (*fn)(void *), member_job how,
                             const char *what)
{
	member_job jobs[STRIPE_MAX_N];
	mio_batch batch;
	int ok = 0, full = 0;

	stage_batch_init(c, &batch, !job_syncs(c, fn, &how));
	for (int mb = 0; mb < c->lay.n; mb++) {
		jobs[mb] = how;
		jobs[mb].c = c;
		jobs[mb].member = mb;
		jobs[mb].err = 1;
		if (stripe_member_usable(c, mb))
			memberio_submit(volume_memberio(c->v), mb, &batch, fn, &jobs[mb]);
	}
	uint64_t lost = mio_batch_wait(&batch);
	for (int mb = 0; mb < c->lay.n; mb++) {
		if (lost >> mb & 1)
			jobs[mb].err = -ETIMEDOUT;
		if (jobs[mb].err == 0) {
			ok++;
		} else if (jobs[mb].err < 0) {
			volume_member_error(c->v, mb, jobs[mb].err, what);
			if (space_error(jobs[mb].err))
				full = jobs[mb].err;
			else
				c->state[mb] = CHUNK_FAILED;
		}
	}
	return full ? full : ok >= c->lay.k ? 0 : -EIO;
}

/* A sync of member's chunk, timed as part of the member's write cost
 * (memberio_note_sync): a mount may take the writes at once and make the
 * sync wait for them. */
static int sync_chunk(stripe_ctx *c, int member, bool datasync)
{
	int64_t t0 = g_get_monotonic_time();
	int r = mop_fsync(c->v, member, c->fd[member], datasync);
	if (r >= 0)
		memberio_note_sync(volume_memberio(c->v), member,
		                   (g_get_monotonic_time() - t0) * 1000);
	return r;
}

static void write_header_member(void *arg)
{
	member_job *j = arg;
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h = j->c->hdr;

	int fd = j->c->fd[j->member];
	h.position = (uint32_t)layout_position_of(&j->c->lay, j->member);
	struct iovec iov = { buf, chunk_header_encode(&h, buf) };
	ssize_t r = j->sync_first ? sync_chunk(j->c, j->member, true) : 0;
	if (r >= 0)
		r = mop_transfer(j->c->v, j->member, fd, &iov, 1, 0, true);
	if (r >= 0 && j->durable)
		r = sync_chunk(j->c, j->member, true);
	struct stat st; /* a local: a call given up writes nothing of the file's */
	bool stated = r >= 0 && MIO_CALL(fstat(fd, &st)) == 0;
	/* Whatever it did, the sizes remembered before for this file are no
	 * longer sure. */
	size_cache_file_changed(volume_sizes(j->c->v), chunk_file_ident(j->c->hdr.file_id));
	if (stated) {
		j->c->header_stat[j->member] = st;
		__atomic_or_fetch(&j->c->header_stats, 1ull << j->member, __ATOMIC_RELEASE);
	}
	j->err = r < 0 ? (int)r : 0;
}

void stripe_remember_size(stripe_ctx *c)
{
	uint64_t stats = __atomic_load_n(&c->header_stats, __ATOMIC_ACQUIRE);
	uint64_t epoch = size_cache_epoch(volume_sizes(c->v)); /* after the round's changes */

	for (int mb = 0; mb < c->lay.n; mb++)
		if (stats >> mb & 1)
			size_cache_put(volume_sizes(c->v), mb, &c->header_stat[mb], epoch, c->hdr.size,
			               chunk_file_ident(c->hdr.file_id));
}

/* A round of header writes; the chunks' stats after it replace those of
 * the last round. */
static int header_round(stripe_ctx *c, member_job how)
{
	__atomic_store_n(&c->header_stats, 0, __ATOMIC_RELAXED);
	return on_usable_members(c, write_header_member, how, "writing a chunk header");
}

int stripe_write_headers(stripe_ctx *c)
{
	return header_round(c, (member_job){ 0 });
}

int stripe_write_headers_durable(stripe_ctx *c, bool sync_first)
{
	return header_round(c, (member_job){ .durable = true, .sync_first = sync_first });
}

static void sync_member(void *arg)
{
	member_job *j = arg;
	j->err = sync_chunk(j->c, j->member, j->datasync);
}

int stripe_sync(stripe_ctx *c, bool datasync)
{
	/* Whatever an error means for the member, this file's writes there
	 * are not known durable: out of the file, or, for a full member, the
	 * sync fails (space.h) and the caller does not go on. */
	int rc = on_usable_members(c, sync_member, (member_job){ .datasync = datasync },
	                           "syncing a chunk");
	if (rc < 0)
		return rc;
	c->inplace_unsynced = false;
	return 0;
}

int stripe_truncate(stripe_ctx *c, uint64_t from)
{
	uint64_t len = layout_chunk_length(&c->lay, from);
	bool in_group = from != layout_group_start(&c->lay, from);
	forget_heads(c);
	uint64_t left = layout_group_end(&c->lay, from) - from;
	uint8_t zeros[CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE] = { 0 };
	int ok = 0;

	for (int mb = 0; mb < c->lay.n; mb++) {
		struct stat st;
		int rc = 0;
		if (!stripe_member_usable(c, mb))
			continue;
		if (fstat(c->fd[mb], &st) < 0)
			rc = -errno;
		if (rc == 0 && in_group && (uint64_t)st.st_size > layout_record_offset(&c->lay, from)) {
			struct iovec iov = { zeros, left * CHUNK_RECORD_SIZE };
			ssize_t r = mop_transfer(c->v, mb, c->fd[mb], &iov, 1,
			                     (off_t)layout_record_offset(&c->lay, from), true);
			rc = r < 0 ? (int)r : 0;
		}
		if (rc == 0 && (uint64_t)st.st_size > len)
			rc = mop_ftruncate(c->v, mb, c->fd[mb], (off_t)len);
		if (rc < 0) {
			if (volume_member_error(c->v, mb, -rc, "truncating a chunk"))
				c->state[mb] = CHUNK_FAILED;
		} else {
			ok++;
		}
	}
	return ok >= c->lay.k ? 0 : -EIO;
}
