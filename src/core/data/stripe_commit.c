/* SPDX-License-Identifier: MIT */
/*
 * Stripe commits (stripe.h): encode a run of stripes, checksum each strip
 * with its record, and write strips and records to every usable member in
 * parallel.  A run below the file's written end is an overwrite, staged
 * through the write-hole journal (journal.h) first.  A run of stripes in
 * one record group costs each member one pwritev for the strips and one
 * pwrite for the records.  Also the single-strip writer that repair, the
 * online heal and the self-healing read use.
 */
#include "stripe.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <glib.h>

#include "journal.h"
#include "log.h"
#include "memberops.h"
#include "memberio.h"
#include "space.h"
#include "stripe_internal.h"
#include "volume_internal.h"

_Static_assert(STRIPE_BATCH <= JOURNAL_MAX_STRIPES, "a commit must fit in the journal");
_Static_assert(STRIPE_MAX_N <= JOURNAL_MAX_MEMBERS, "every member may have a journal");

typedef struct commit_task {
	stripe_ctx *c;
	int member, pos, cnt;
	uint64_t s0, gen, size;
	const uint8_t *strips[STRIPE_BATCH];
	uint8_t recs[STRIPE_BATCH * CHUNK_RECORD_SIZE];
	uint8_t *tags;  /* version 3: the strips' tags, layout_tags_size each */
	bool have_recs; /* recs computed (by the journal stage) */
	int err;
} commit_task;

/* Record i of a run for strip `data` of len bytes, of generation gen,
 * into recs, and in version 3 its tags into tags (a tag slot of
 * layout_tags_size bytes, zeros past the strip's blocks). */
static int make_record(stripe_ctx *c, uint32_t pos, uint64_t s, uint64_t gen, uint64_t size,
                       const uint8_t *data, uint8_t *rec, uint8_t *tags)
{
	chunk_header h = c->hdr;
	chunk_record r = { .stripe = s, .generation = gen, .position = pos,
	                   .flags = CHUNK_RECORD_WRITTEN, .size = size };
	uint64_t len = layout_strip_len(&c->lay, s, size), T = layout_tags_size(&c->lay);

	h.position = pos;
	if (chunk_strip_sum(c->sum, &h, &r, data, len, tags) < 0)
		return -EIO;
	if (tags) {
		uint64_t used = chunk_strip_blocks(len) * CHUNK_TAG_SIZE;
		memset(tags + used, 0, T - used);
	}
	chunk_record_encode(&r, rec);
	return 0;
}

/* The records (with their checksums) of the task's strips: the same bytes
 * go to the journal and in place. */
static int make_records(commit_task *t)
{
	stripe_ctx *c = t->c;
	uint64_t T = layout_tags_size(&c->lay);

	for (int i = 0; i < t->cnt; i++)
		if (make_record(c, (uint32_t)t->pos, t->s0 + (uint64_t)i, t->gen, t->size,
		                t->strips[i], t->recs + (size_t)i * CHUNK_RECORD_SIZE,
		                T ? t->tags + (size_t)i * T : NULL) < 0)
			return -EIO;
	t->have_recs = true;
	return 0;
}

/* Writes a run of stripes from s0 to member's chunk: the strips (iov,
 * cnt of them), their tags (version 3, cnt tag slots) and their records,
 * records last.  Until the records and strips are both down the pair does
 * not verify, so a torn write reads as an erasure, never as data, in
 * whichever order they land; tags left behind by a torn write only make
 * a partial read fall back to the whole strip (chunk_tags_verify).  Where
 * records, tags and strips lie in one run (stripe 0 of versions 2 and
 * 3: every small file), one write. */
static ssize_t write_run(stripe_ctx *c, int member, uint64_t s0, int cnt, struct iovec *iov,
                         int niov, const uint8_t *recs, const uint8_t *tags)
{
	struct iovec all[2 + STRIPE_BATCH];
	int fd = c->fd[member];
	off_t at = (off_t)layout_strip_offset(&c->lay, s0),
	      rat = (off_t)layout_record_offset(&c->lay, s0),
	      tat = (off_t)layout_tags_offset(&c->lay, s0);
	size_t rlen = (size_t)cnt * CHUNK_RECORD_SIZE,
	       tlen = (size_t)cnt * (size_t)layout_tags_size(&c->lay);
	ssize_t r;

	all[0] = (struct iovec){ (void *)recs, rlen };
	all[1] = (struct iovec){ (void *)tags, tlen };
	if (rat + (off_t)rlen == tat && tat + (off_t)tlen == at && niov <= STRIPE_BATCH) {
		memcpy(all + 2, iov, sizeof(*iov) * (size_t)niov);
		if (!tlen) {
			all[1] = all[0];
			return mop_transfer(c->v, member, fd, all + 1, 1 + niov, rat, true);
		}
		return mop_transfer(c->v, member, fd, all, 2 + niov, rat, true);
	}
	r = mop_transfer(c->v, member, fd, iov, niov, at, true);
	if (r >= 0 && tlen)
		r = mop_transfer(c->v, member, fd, all + 1, 1, tat, true);
	if (r >= 0)
		r = mop_transfer(c->v, member, fd, all, 1, rat, true);
	return r;
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
	struct iovec strips[STRIPE_BATCH];
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
	int64_t t0 = g_get_monotonic_time();
	r = write_run(c, t->member, t->s0, t->cnt, strips, t->cnt, t->recs, t->tags);
	/* the member's write cost (memberio_slow_of, stripe_leave_out_slow) */
	if (r >= 0)
		memberio_note(volume_memberio(c->v), t->member, MIO_WRITE, bytes,
		              (g_get_monotonic_time() - t0) * 1000);
	t->err = r < 0 ? (int)r : 0;
}

int stripe_write_strips(stripe_ctx *c, int member, uint64_t s0, int cnt, const uint8_t *data,
                        const uint64_t *gen, const uint64_t *size)
{
	uint64_t strip = c->lay.strip_size, T = layout_tags_size(&c->lay);
	uint32_t pos = (uint32_t)layout_position_of(&c->lay, member);
	uint8_t rec[CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE] = { 0 };
	int rc = 0;

	if (cnt < 1 || (uint64_t)cnt > layout_group_end(&c->lay, s0) - s0)
		return -EINVAL;
	uint8_t *tags = T ? g_malloc0((size_t)cnt * T) : NULL;
	stripe_forget_heads(c);
	uint64_t last_len = strip;
	for (int i = 0; i < cnt && rc == 0; i++) {
		if (!gen[i])
			continue;
		last_len = layout_strip_len(&c->lay, s0 + (uint64_t)i, size[i]);
		rc = make_record(c, pos, s0 + (uint64_t)i, gen[i], size[i], data + (size_t)i * strip,
		                 rec + (size_t)i * CHUNK_RECORD_SIZE, T ? tags + (size_t)i * T : NULL);
	}
	if (!gen[cnt - 1])
		last_len = strip;
	/* One write for the run's strips: a short strip before the last goes
	 * down whole (zeros past its length), the last only as long as it is. */
	struct iovec iov = { (void *)data, strip * (size_t)(cnt - 1) + last_len };
	ssize_t w = rc == 0 ? write_run(c, member, s0, cnt, &iov, 1, rec, tags) : rc;
	g_free(tags);
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
	void *args[STRIPE_MAX_N] = { 0 };
	uint64_t stuck;
	int ok = 0;

	for (int pos = 0; pos < c->lay.n; pos++)
		if (tasks[pos].err == 0)
			args[tasks[pos].member] = &tasks[pos];
	bool small = commit_stage_small(c, tasks, fn);
	uint64_t lost = stripe_run_stage(c, small, !small, fn, args, &stuck);
	if (stuck && !c->buffers_lent) {
		c->buffers_lent = true;
		ecfs_log(LOG_INFO, "%s: a write given up on a member may still read this file's "
		         "buffers; they are kept until the daemon exits", c->path);
	}
	for (int pos = 0; pos < c->lay.n; pos++) {
		commit_task *t = &tasks[pos];
		if (t->err == 0 && (lost >> t->member & 1))
			t->err = -ETIMEDOUT; /* given up (memberio.h) */
		if (t->err == 0) {
			ok++;
		} else if (t->err < 0) {
			volume_member_io_error(c->v, t->member, -t->err, what, VOLUME_IO_WRITE);
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
	uint64_t T = layout_tags_size(&c->lay);
	if (T && !c->tags)
		return -ENOMEM;
	stripe_forget_heads(c);
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
		                    .gen = gen, .size = size, .err = 1,
		                    .tags = T ? c->tags + (size_t)pos * STRIPE_BATCH * T : NULL };
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
		uint8_t *pb = stripe_pack_buffer(c, &c->pack_out);
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

