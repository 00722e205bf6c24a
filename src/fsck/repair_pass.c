/* SPDX-License-Identifier: MIT */
/*
 * The stripe pass of a file's repair (repair_internal.h): every stripe
 * read from the members that have a chunk (--rebuild: from k good chunks,
 * all of them only where those disagree), each strip judged and each
 * stripe voted by the reader's own rules (stripe_decode.h), and the
 * erased strips rebuilt at the stripe's winning generation.  Runs of
 * stripes go through two slots so that one run's repairs are written
 * while the next run is read.
 */
#include <errno.h>
#include <string.h>

#include <glib.h>

#include "layout.h"
#include "log.h"
#include "memberio.h"
#include "reader_rules.h"
#include "repair_internal.h"
#include "stripe.h"
#include "stripe_decode.h"
#include "volume_internal.h"

static uint8_t *strip_buf(const file_check *fc, const run_slot *rs, int pos, int i)
{
	return rs->bufs + ((size_t)pos * (size_t)fc->run + (size_t)i) * fc->c.lay.strip_size;
}


/* ---- reading and judging one member's strips ---- */

/* Bytes of strips per read of scan_strips: each piece is judged (its
 * checksums computed) right after its read, while it is still in the
 * core's cache, rather than the whole run after the whole read. */
#define SCAN_PIECE (128u << 10)

/* A task whose read failed: every strip of it an erasure. */
static void scan_failed(member_task *t, ssize_t err)
{
	t->err = (int)err;
	for (int i = 0; i < t->cnt; i++) {
		t->st[i].v = STRIP_ERR;
		t->st[i].why = "read error";
	}
}

/* Whether the chunk's first bytes, as open_chunks read them, answer a
 * read of [off, off + len) as the member would: the range lies within
 * them, or they reach the chunk's end.  Offline only (in the daemon's
 * heal the file may be written meanwhile), and for the good chunks,
 * which nothing writes before the pass; no journal was rolled forward
 * (volume_journals_none). */
static bool head_answers(const file_check *fc, int mb, size_t len, off_t off)
{
	ssize_t have = fc->head_got[mb];

	return fc->head && !fc->f->hooks && have >= 0 && !(fc->chunk_bad >> mb & 1) &&
	       volume_journals_none(fc->f->v) &&
	       (have < (ssize_t)CHUNK_HEADER_MAX || (uint64_t)off + len <= CHUNK_HEADER_MAX);
}

/* The task's reads (its strips and their records) as head_answers. */
static bool task_in_head(const member_task *t)
{
	const stripe_ctx *c = &t->fc->c;

	return head_answers(t->fc, t->member, (size_t)t->cnt * c->lay.strip_size,
	                    (off_t)layout_strip_offset(&c->lay, t->s0)) &&
	       head_answers(t->fc, t->member, (size_t)t->cnt * CHUNK_RECORD_SIZE,
	                    (off_t)layout_record_offset(&c->lay, t->s0));
}

/* repair_read_all of the task's chunk (lent: straight into buf), from its
 * first bytes if they answer it (head_answers). */
static ssize_t read_chunk(const member_task *t, void *buf, size_t len, off_t off, bool lent)
{
	const file_check *fc = t->fc;
	ssize_t have = fc->head_got[t->member];

	if (!head_answers(fc, t->member, len, off))
		return repair_read_all(fc->c.v, t->member, fc->c.fd[t->member], buf, len, off, lent);
	size_t n = off < have ? MIN(len, (size_t)(have - off)) : 0;
	memcpy(buf, fc->head + (size_t)t->member * CHUNK_HEADER_MAX + off, n);
	return (ssize_t)n;
}

/* Reads and judges the task's strips; fd: the chunk's, probed for lost
 * pages where a strip does not verify (rules_judge_strip). */
static void scan_strips(member_task *t, int fd)
{
	stripe_ctx *c = &t->fc->c;
	uint64_t strip = c->lay.strip_size;
	uint8_t recs[RUN * CHUNK_RECORD_SIZE];
	size_t rwant = (size_t)t->cnt * CHUNK_RECORD_SIZE, total = 0;
	int per = (int)MAX(1, SCAN_PIECE / strip);
	chunk_header h = c->hdr;
	int64_t read_us = 0;

	ssize_t rgot = read_chunk(t, recs, rwant, (off_t)layout_record_offset(&c->lay, t->s0),
	                          false);
	/* Version 3: the stored tags too, checked against the strips' bytes
	 * (rules_judge_strip: tags_bad), one read for the run. */
	size_t T = (size_t)layout_tags_size(&c->lay), twant = (size_t)t->cnt * T;
	uint8_t *tags = T ? g_malloc(twant) : NULL;
	ssize_t tgot = rgot >= 0 && T ? read_chunk(t, tags, twant,
	                                           (off_t)layout_tags_offset(&c->lay, t->s0), false)
	               : 0;
	if (rgot < 0 || tgot < 0) {
		g_free(tags);
		scan_failed(t, rgot < 0 ? rgot : tgot);
		return;
	}
	/* Past the end of a chunk reads as zeros: a hole if the record agrees. */
	memset(recs + rgot, 0, rwant - (size_t)rgot);
	if (tags)
		memset(tags + tgot, 0, twant - (size_t)tgot);
	h.position = (uint32_t)t->pos;
	for (int i0 = 0; i0 < t->cnt; i0 += per) {
		int cnt = MIN(per, t->cnt - i0);
		size_t want = (size_t)cnt * strip;
		uint8_t *buf = t->buf + (size_t)i0 * strip;
		int64_t t0 = g_get_monotonic_time();
		/* Straight into the pool's buffers: no bounce, no copy (stuck_reads). */
		ssize_t got = read_chunk(t, buf, want,
		                         (off_t)layout_strip_offset(&c->lay, t->s0 + (uint64_t)i0),
		                         true);
		read_us += g_get_monotonic_time() - t0;
		if (got < 0) {
			g_free(tags);
			scan_failed(t, got);
			return;
		}
		memset(buf + got, 0, want - (size_t)got);
		total += (size_t)got;
		for (int i = i0; i < i0 + cnt; i++)
			rules_judge_strip(c->sum, &h, &c->lay, t->s0 + (uint64_t)i,
			                  recs + (size_t)i * CHUNK_RECORD_SIZE,
			                  t->buf + (size_t)i * strip, tags ? tags + (size_t)i * T : NULL,
			                  fd, &t->st[i]);
	}
	g_free(tags);
	/* the member's read cost (memberio_slow_of, run_sources): strips read whole */
	if (total == (size_t)t->cnt * strip && !task_in_head(t))
		memberio_note(volume_memberio(c->v), t->member, MIO_READ, total, read_us * 1000);
}

static void scan_member(void *arg)
{
	member_task *t = arg;

	scan_strips(t, t->fc->c.fd[t->member]);
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
}

/* The task judged by the caller, from the chunk's first bytes
 * (task_in_head), with no round trip to the member: true if that settled
 * it.  A strip that does not verify is judged again on the member's
 * worker, which probes the chunk for lost pages. */
static bool scan_in_head(member_task *t)
{
	if (!task_in_head(t))
		return false;
	scan_strips(t, -1);
	for (int i = 0; i < t->cnt; i++)
		if (t->st[i].v != STRIP_GOOD && !t->st[i].blank)
			return false;
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
	return true;
}

/* Writes the strips of the run marked in wmask, with their records,
 * through the stripe layer's strip writer. */
static void write_member(void *arg)
{
	member_task *t = arg;
	stripe_ctx *c = &t->fc->c;
	uint64_t strip = c->lay.strip_size;

	t->err = 0;
	for (int i = 0; i < t->cnt && !t->err;) {
		if (!(t->wmask >> i & 1)) {
			i++;
			continue;
		}
		int len = 1; /* a range of consecutive strips: one write */
		while (i + len < t->cnt && t->wmask >> (i + len) & 1)
			len++;
		t->err = stripe_write_strips(c, t->member, t->s0 + (uint64_t)i, len,
		                             t->buf + (size_t)i * strip, t->wgen + i, t->wsize + i);
		i += len;
	}
}

/* ---- the stripe pass ---- */

/* Reports the open range of unrecoverable stripes. */
static void flush_lost(file_check *fc)
{
	uint64_t sd = layout_stripe_data(&fc->c.lay), size = fc->c.hdr.size;
	uint64_t off = fc->lost_first * sd, end = MIN((fc->lost_last + 1) * sd, size);

	if (!fc->lost_open)
		return;
	fsck_problem(fc->f, "unrecoverable", fc->path, -1, off, end > off ? end - off : 0,
	             FSCK_UNREPAIRABLE, "stripes %llu-%llu have fewer than k=%d good strips of "
	             "one generation; their surviving strips are left untouched",
	             (unsigned long long)fc->lost_first, (unsigned long long)fc->lost_last, fc->k);
	fc->lost_open = false;
}

/* Adds stripe s to the ranges of unrecoverable stripes. */
static void note_lost(file_check *fc, uint64_t s)
{
	if (fc->lost_open && s == fc->lost_last + 1) {
		fc->lost_last = s;
	} else {
		flush_lost(fc);
		fc->lost_first = fc->lost_last = s;
		fc->lost_open = true;
	}
	fc->lost_total++;
}

/* A good chunk's strips that a --rebuild run did not need to read: they
 * are neither judged nor rewritten. */
static bool unread_survivor(const file_check *fc, const run_slot *rs, int pos)
{
	return rs->unread >> pos & 1 && !(fc->chunk_bad >> rs->task[pos].member & 1);
}

/* Judges stripe s0+i of the run and prepares its repair. */
static void judge_stripe(file_check *fc, run_slot *rs, int i)
{
	int n = fc->n, k = fc->k, m = fc->m;
	uint64_t s = rs->task[0].s0 + (uint64_t)i, strip = fc->c.lay.strip_size;
	uint64_t whole = 0, unread = 0;
	strip_judgment st[STRIPE_MAX_N] = { 0 };
	stripe_vote vote;

	for (int j = 0; j < n; j++) {
		/* a late answer is still the late task's to write */
		if (!(rs->late >> j & 1))
			st[j] = rs->task[j].st[i];
		if (fc->chunk_bad >> rs->task[j].member & 1)
			whole |= 1ull << j;
		if (unread_survivor(fc, rs, j))
			unread |= 1ull << j;
		if (st[j].v == STRIP_GOOD && st[j].gen > fc->max_gen)
			fc->max_gen = st[j].gen;
	}
	/* The chunks rebuilt whole count for the hole rule as unread, as for
	 * the reader, which does not read them. */
	stripe_vote_take(st, n, k, m, s, fc->c.hdr.durable, whole, &vote);
	if (vote.outcome == STRIPE_LOST) {
		note_lost(fc, s);
		return;
	}
	flush_lost(fc);
	bool hole = vote.outcome == STRIPE_CUT_SHORT;
	uint64_t best = vote.best, badmask = vote.stale & ~unread, tagmask = 0;
	/* Good strips whose stored tags are wrong: written again as they are. */
	for (int j = 0; j < n; j++)
		if (st[j].tags_bad && !(vote.stale >> j & 1))
			tagmask |= 1ull << j;
	/* Deep: every strip verified; does the parity still follow from the data? */
	if (fc->f->o.deep && !badmask && best) {
		const uint8_t *data[STRIPE_MAX_N];
		uint8_t *par[STRIPE_MAX_N];
		for (int j = 0; j < k; j++)
			data[j] = strip_buf(fc, rs, j, i);
		for (int j = 0; j < m; j++)
			par[j] = fc->spare + (size_t)j * strip;
		if (ec_encode(fc->c.code, data, par, strip) == 0)
			for (int j = 0; j < m; j++)
				if (memcmp(par[j], strip_buf(fc, rs, k + j, i), strip)) {
					badmask |= 1ull << (k + j);
					if (!fc->parity_bad++)
						fc->parity_first = s;
					fc->parity_last = s;
				}
	}
	if (!badmask && !tagmask)
		return;
	uint8_t *blocks[STRIPE_MAX_N];
	for (int j = 0; j < n; j++) {
		int mb = rs->task[j].member;
		/* NULL: neither an input to the decoder nor rebuilt.  Not read,
		 * or erased on a member that takes no repairs (a read given up
		 * there may still land in its strips: stuck_reads). */
		bool no_repair = badmask >> j & 1 && fc->unwritable >> mb & 1;
		blocks[j] = unread >> j & 1 || no_repair ? NULL : strip_buf(fc, rs, j, i);
		if (!((badmask | tagmask) >> j & 1))
			continue;
		if (!(fc->quiet >> mb & 1) && !(fc->chunk_bad >> mb & 1)) {
			if (!fc->bad[mb]++) {
				fc->first_bad[mb] = s;
				fc->bad_why[mb] = tagmask >> j & 1 ? "tags do not match the strip"
				                  : st[j].v == STRIP_GOOD || st[j].v == STRIP_HOLE
				                  ? (best ? "strip of another generation (missed or torn write)"
				                          : "stripe never written but strip present")
				                  : st[j].v == STRIP_UNREAD ? "no strip" : st[j].why;
			}
			fc->last_bad[mb] = s;
		}
	}
	if (!fc->f->o.repair)
		return;
	uint64_t erased = unread | badmask;
	/* Decoded as long as the stripe's strips are (the last stripe of a
	 * small file: a few KiB of a 64 KiB strip); a cut-short first write
	 * becomes a clean hole: zeros, blank records. */
	uint64_t len = hole ? 0 : layout_strip_len(&fc->c.lay, s, vote.size);
	if (!hole && stripe_decode_erased(fc->c.code, blocks, n, erased, len) < 0) {
		ecfs_log(LOG_ERR, "%s: stripe %llu: decoding failed", fc->path, (unsigned long long)s);
		return;
	}
	/* Past that, zeros, as in every good strip: a short strip followed by
	 * another in the run goes down whole (stripe_write_strips). */
	for (int j = 0; j < n && len < strip; j++)
		if ((erased >> j & 1) && blocks[j])
			memset(blocks[j] + len, 0, strip - len);
	for (int j = 0; j < n; j++) {
		member_task *t = &rs->task[j];
		if (!((erased | tagmask) >> j & 1) || !blocks[j] || fc->unwritable >> t->member & 1)
			continue;
		t->wmask |= 1ull << i;
		t->wgen[i] = best;
		t->wsize[i] = vote.size;
	}
}

/* Takes stripes s0..s0+cnt-1 into rs, nothing read yet. */
static void init_slot(file_check *fc, run_slot *rs, uint64_t s0, int cnt)
{
	rs->s0 = s0;
	rs->cnt = cnt;
	rs->unread = (1ull << fc->n) - 1;
	for (int pos = 0; pos < fc->n; pos++)
		rs->task[pos] = (member_task){ .fc = fc, .member = layout_member_of(&fc->c.lay, pos),
		                               .pos = pos, .cnt = cnt, .s0 = s0,
		                               .buf = strip_buf(fc, rs, pos, 0) };
}

/* The members of the good chunks that read slower than their peers now
 * (memberio_slow_of, the reader's read-around, stripe_fetch.c), as many as
 * the others can spare. */
static uint64_t slow_good_members(const file_check *fc)
{
	uint64_t among = 0;

	for (int pos = 0; pos < fc->n; pos++)
		if (fc->good >> pos & 1)
			among |= 1ull << layout_member_of(&fc->c.lay, pos);
	return memberio_slow_of(volume_memberio(fc->f->v), MIO_READ, among,
	                        __builtin_popcountll(among) - fc->k);
}

/* A --rebuild run reading its k sources may go on without the last of
 * them, as the daemon's reads around a slow member do (stripe_hedge.c):
 * when they are late, one more good chunk is asked (hedged_wait). */
static bool may_hedge(const file_check *fc, const run_slot *rs, uint64_t mask)
{
	return mask == rs->sources && rs->sources != fc->readable && !fc->f->o.deep &&
	       !volume_settings(fc->f->v)->no_hedge;
}

/* Starts reading the run's strips at the positions in mask not read yet;
 * wait: the caller waits for them at once (it may read one itself). */
static void read_positions(file_check *fc, run_slot *rs, uint64_t mask, bool wait)
{
	memberio *mio = volume_memberio(fc->f->v);

	rs->reading = true;
	rs->hedged = may_hedge(fc, rs, mask);
	/* hedged: woken once it is done or at hedged_wait's deadlines, not
	 * at every task done (a wake-up per member per run) */
	if (rs->hedged)
		mio_batch_init(&rs->reads);
	else if (wait)
		mio_batch_init_caller(mio, &rs->reads);
	else
		mio_batch_init(&rs->reads);
	rs->asked_us = g_get_monotonic_time();
	for (int pos = 0; pos < fc->n; pos++) {
		member_task *t = &rs->task[pos];
		if (!((rs->unread & mask) >> pos & 1))
			continue;
		rs->unread &= ~(1ull << pos);
		t->done = false;
		if (fc->c.fd[t->member] >= 0 && volume_member_ok(fc->f->v, t->member)) {
			if (!scan_in_head(t))
				memberio_submit(mio, t->member, &rs->reads, scan_member, t);
		}
		else
			memset(t->buf, 0, (size_t)rs->cnt * fc->c.lay.strip_size);
	}
}

/* The tasks of positions in `which` whose members were given up: whatever
 * they read counts for nothing, and each member is reported once as a
 * member, not file by file. */
static void note_lost_reads(file_check *fc, run_slot *rs, uint64_t lost, uint64_t which)
{
	for (int pos = 0; pos < fc->n; pos++) {
		member_task *t = &rs->task[pos];
		if (!(which >> pos & 1) || !(lost >> t->member & 1))
			continue;
		fsck_member_lost(fc->f, t->member);
		fc->quiet |= 1ull << t->member;
		fc->unwritable |= 1ull << t->member;
		t->err = -ETIMEDOUT;
		for (int i = 0; i < rs->cnt; i++) {
			t->st[i].v = STRIP_ERR;
			t->st[i].why = "no answer";
		}
	}
}

/* A good chunk of the run not asked yet, on a member that answers and is
 * not slow; -1 if there is none. */
static int spare_position(const file_check *fc, const run_slot *rs)
{
	uint64_t slow = slow_good_members(fc);

	for (int pos = 0; pos < fc->n; pos++) {
		int mb = rs->task[pos].member;
		if ((fc->good & rs->unread) >> pos & 1 && !(slow >> mb & 1) && fc->c.fd[mb] >= 0 &&
		    volume_member_ok(fc->f->v, mb))
			return pos;
	}
	return -1;
}

/* How often a hedged run that asked a spare looks whether all but one of
 * its reads are in (its batch wakes the waiter only once it is done). */
#define HEDGE_POLL_US 1000

/* Waits until all but one of the batch's tasks are done: its lost mask. */
static uint64_t wait_all_but_one(mio_batch *b)
{
	while (!mio_batch_wait_left_until(b, 1, (g_get_monotonic_time() + HEDGE_POLL_US) * 1000))
		;
	return mio_batch_wait_left(b, 1);
}

/* When a hedged run's reads are late: past memberio_late_us, and past
 * MEMBERIO_LATE_FACTOR times what a run's reads usually take here from
 * the asking to the last answer (fsck.run_strip_ns).  The members' cost
 * that memberio_late_us goes by is their calls' time alone; a run's reads
 * also wait for the checks of the strips and for the cores the other
 * reads use, so where those are most of it (fast members, few cores), the
 * members' cost alone would hedge runs that are not late at all. */
static uint64_t run_late_us(file_check *fc, run_slot *rs, uint64_t members)
{
	uint64_t us = memberio_late_us(volume_memberio(fc->f->v), members,
	                               (size_t)rs->cnt * fc->c.lay.strip_size);
	int64_t usual = __atomic_load_n(&fc->f->run_strip_ns, __ATOMIC_RELAXED);
	uint64_t run = (uint64_t)MEMBERIO_LATE_FACTOR * (uint64_t)usual * (uint64_t)rs->cnt / 1000;

	return MAX(us, run);
}

/* Notes how long the run's reads took to be enough to go on with (all of
 * them, or all but a late one): a moving average over about the last 8
 * runs of every file (racy updates from the files in flight lose a sample
 * at worst).  A late member does not raise it, as the spare answers in
 * its place; a machine slower for all of them does. */
static void note_run_time(file_check *fc, run_slot *rs)
{
	int64_t ns = (g_get_monotonic_time() - rs->asked_us) * 1000 / MAX(1, rs->cnt);
	int64_t avg = __atomic_load_n(&fc->f->run_strip_ns, __ATOMIC_RELAXED);

	avg = avg ? avg + (ns - avg) / 8 : MAX(ns, 1);
	__atomic_store_n(&fc->f->run_strip_ns, avg, __ATOMIC_RELAXED);
}

/* A hedged run's reads: if its sources are late (run_late_us), a
 * spare good chunk is asked too, and the run goes on once all but one
 * have answered.  The one left moves from the sources to rs->late (and
 * counts as unread) until end_late_reads.  Returns the lost mask of the
 * answers in. */
static uint64_t hedged_wait(file_check *fc, run_slot *rs)
{
	memberio *mio = volume_memberio(fc->f->v);
	uint64_t members = 0;

	for (int pos = 0; pos < fc->n; pos++)
		if (rs->sources >> pos & 1)
			members |= 1ull << rs->task[pos].member;
	uint64_t late_us = run_late_us(fc, rs, members);
	int spare = spare_position(fc, rs);
	if (spare < 0 ||
	    mio_batch_wait_left_until(&rs->reads, 0, (rs->asked_us + (int64_t)late_us) * 1000)) {
		uint64_t lost = mio_batch_wait(&rs->reads);
		note_run_time(fc, rs);
		return lost;
	}
	member_task *t = &rs->task[spare];
	t->done = false;
	rs->unread &= ~(1ull << spare);
	rs->sources |= 1ull << spare;
	memberio_submit(mio, t->member, &rs->reads, scan_member, t);
	volume_count_hedged(fc->f->v);
	fsck_count(&fc->f->reads_hedged, 1);
	uint64_t lost = wait_all_but_one(&rs->reads);
	note_run_time(fc, rs);
	for (int pos = 0; pos < fc->n; pos++) {
		member_task *u = &rs->task[pos];
		if (rs->sources >> pos & 1 && !(lost >> u->member & 1) &&
		    !__atomic_load_n(&u->done, __ATOMIC_ACQUIRE))
			rs->late |= 1ull << pos;
	}
	if (!rs->late)
		return mio_batch_wait(&rs->reads);
	rs->sources &= ~rs->late;
	rs->unread |= rs->late;
	return lost;
}

/* A read given up inside its call may still land in the slot's strips
 * (scan_strips reads straight into them): the pool is kept for good. */
static void stuck_reads(file_check *fc, run_slot *rs)
{
	if (mio_batch_stuck(&rs->reads))
		fc->pool->lent = true;
}

static void finish_reads(file_check *fc, run_slot *rs)
{
	if (!rs->reading)
		return;
	rs->reading = false;
	uint64_t lost = rs->hedged ? hedged_wait(fc, rs) : mio_batch_wait(&rs->reads);
	note_lost_reads(fc, rs, lost, ~rs->late);
	stuck_reads(fc, rs);
}

/* Waits for the answer a hedged run went on without, before the run's
 * slot is read into again. */
static void end_late_reads(file_check *fc, run_slot *rs)
{
	if (!rs->late)
		return;
	note_lost_reads(fc, rs, mio_batch_wait(&rs->reads), rs->late);
	stuck_reads(fc, rs);
	rs->late = 0;
}

/* Starts writing the repairs judge_stripe() marked in rs (wait: as in
 * read_positions). */
static void start_writes(file_check *fc, run_slot *rs, bool wait)
{
	memberio *mio = volume_memberio(fc->f->v);

	if (wait)
		mio_batch_init_caller(mio, &rs->writes);
	else
		mio_batch_init(&rs->writes);
	rs->writing = true;
	for (int pos = 0; pos < fc->n; pos++) {
		member_task *t = &rs->task[pos];
		if (t->wmask)
			memberio_submit(mio, t->member, &rs->writes, write_member, t);
	}
}

static void finish_writes(file_check *fc, run_slot *rs)
{
	if (!rs->writing)
		return;
	rs->writing = false;
	uint64_t lost = mio_batch_wait(&rs->writes);
	if (mio_batch_stuck(&rs->writes))
		fc->pool->lent = true;
	for (int pos = 0; pos < fc->n; pos++) {
		member_task *t = &rs->task[pos];
		if (!t->wmask)
			continue;
		if (lost >> t->member & 1) {
			fsck_member_lost(fc->f, t->member);
			fc->quiet |= 1ull << t->member;
			t->err = -ETIMEDOUT;
		}
		if (t->err) {
			if (!fc->write_err[t->member])
				fc->write_err[t->member] = t->err;
			fc->unwritable |= 1ull << t->member;
		} else {
			fc->written |= 1ull << t->member;
			fc->rebuilt[t->member] += (uint64_t)__builtin_popcountll(t->wmask);
			fsck_count(&fc->f->strips_rebuilt, (uint64_t)__builtin_popcountll(t->wmask));
		}
	}
}

/* --rebuild reads k good chunks first.  If every stripe of the run has k
 * verified strips of one generation there, that generation wins the vote
 * whatever the unread strips hold, as long as those are fewer than k: the
 * run is settled without them. */
static bool sources_agree(const file_check *fc, const run_slot *rs)
{
	for (int i = 0; i < rs->cnt; i++) {
		uint64_t gen = 0;
		for (int pos = 0; pos < fc->n; pos++) {
			const member_task *t = &rs->task[pos];
			if (!(rs->sources >> pos & 1))
				continue;
			if (t->st[i].v != STRIP_GOOD || (gen && t->st[i].gen != gen))
				return false;
			gen = t->st[i].gen;
		}
	}
	return true;
}

/* Sets the positions a run reads: every one but the chunks this repair
 * created (nothing there yet), and first, with --rebuild, only the first k
 * good chunks in position order (data before parity), when the good chunks
 * left unread are fewer than k (sources_agree). */
void repair_choose_sources(file_check *fc)
{
	uint64_t sources = 0;
	int good = 0;

	fc->readable = 0;
	for (int pos = 0; pos < fc->n; pos++) {
		int mb = layout_member_of(&fc->c.lay, pos);
		if (fc->fresh >> mb & 1)
			continue;
		fc->readable |= 1ull << pos;
		if (fc->c.fd[mb] < 0 || fc->c.state[mb] != CHUNK_OK || fc->chunk_bad >> mb & 1 ||
		    !volume_member_ok(fc->f->v, mb))
			continue;
		if (good++ < fc->k)
			sources |= 1ull << pos;
	}
	bool k_only = fc->f->o.rebuild && good >= fc->k && good - fc->k < fc->k;
	fc->sources = k_only ? sources : fc->readable;
	fc->good = 0;
	for (int pos = 0; k_only && pos < fc->n; pos++) {
		int mb = layout_member_of(&fc->c.lay, pos);
		if (fc->readable >> pos & 1 && fc->c.fd[mb] >= 0 && fc->c.state[mb] == CHUNK_OK &&
		    !(fc->chunk_bad >> mb & 1) && volume_member_ok(fc->f->v, mb))
			fc->good |= 1ull << pos;
	}
}

/* The k positions a --rebuild run reads first: the first good chunks in
 * position order but those whose members read slower than their peers
 * now (memberio_slow_of, the reader's read-around, stripe_fetch.c), while
 * the others are enough.  A run where they do not settle every stripe is
 * read whole all the same (repair_stripe_pass). */
static uint64_t run_sources(file_check *fc)
{
	uint64_t sources = 0;
	int left = fc->k;

	if (!fc->good || volume_settings(fc->f->v)->no_read_around)
		return fc->sources;
	uint64_t slow = slow_good_members(fc);
	for (int pos = 0; pos < fc->n && left; pos++)
		if (fc->good >> pos & 1 && !(slow >> layout_member_of(&fc->c.lay, pos) & 1)) {
			sources |= 1ull << pos;
			left--;
		}
	return left ? fc->sources : sources;
}

/* Stripes in the run that starts at s: up to fc->run, within one record
 * group, within the count. */
static int run_length(const file_check *fc, uint64_t s, uint64_t count)
{
	uint64_t left = layout_group_end(&fc->c.lay, s) - s;
	return (int)MIN(MIN((uint64_t)fc->run, count - s), left);
}

/* The stripe pass over stripes [0, count), count > 0, in fc's buffers
 * (take_buffers): each run is judged and its repairs handed to the member
 * workers while the next run is being read, so reading, decoding and
 * writing overlap.  Returns 0, or -ECANCELED if the pace hook stopped it.
 * Nothing is in flight when it returns. */
int repair_stripe_pass(file_check *fc, uint64_t count)
{
	fsck *f = fc->f;
	uint64_t sd = layout_stripe_data(&fc->c.lay), size = fc->c.hdr.size;
	run_slot *cur = &fc->slot[0], *next = &fc->slot[1];
	int rc = 0;

	init_slot(fc, cur, 0, run_length(fc, 0, count));
	cur->sources = run_sources(fc);
	read_positions(fc, cur, cur->sources, true);
	while (cur->reading) {
		finish_reads(fc, cur);
		if (cur->unread & fc->readable && !sources_agree(fc, cur)) {
			/* --rebuild: the k strips read do not settle every stripe;
			 * the run is read and judged whole, as a check would. */
			end_late_reads(fc, cur);
			read_positions(fc, cur, fc->readable, true);
			finish_reads(fc, cur);
		}
		uint64_t s = cur->s0 + (uint64_t)cur->cnt;
		bool last = s >= count || rc;
		if (!last) {
			finish_writes(fc, next); /* its buffers are read into next */
			end_late_reads(fc, next);
			init_slot(fc, next, s, run_length(fc, s, count));
			next->sources = run_sources(fc);
			read_positions(fc, next, next->sources, false);
		}
		for (int i = 0; i < cur->cnt; i++)
			judge_stripe(fc, cur, i);
		start_writes(fc, cur, last);
		fsck_count(&f->stripes, (uint64_t)cur->cnt);
		uint64_t bytes = MIN((uint64_t)cur->cnt * sd, size - MIN(size, cur->s0 * sd));
		fsck_count(&f->bytes, bytes);
		fsck_progress(f, false);
		/* Stopped: leave the chunks marked stale, as a crash would. */
		if (rc == 0 && f->hooks && !f->hooks->pace(f, bytes))
			rc = -ECANCELED;
		run_slot *t = cur;
		cur = next;
		next = t;
		if (rc)
			finish_reads(fc, cur); /* its run is not judged */
	}
	finish_writes(fc, cur);
	finish_writes(fc, next);
	end_late_reads(fc, cur);
	end_late_reads(fc, next);
	if (rc == 0)
		flush_lost(fc);
	return rc;
}

