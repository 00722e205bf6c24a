/* SPDX-License-Identifier: MIT */
/*
 * Stripe fetches (stripe.h).  Reading trusts nothing it has not verified:
 * every strip is judged, and every stripe voted, by the reader's rules
 * (reader_rules.h) through stripe_decode.h, which ecfs-fsck's repair and
 * journal recovery use too.  The plain read asks only the wanted data
 * strips; one that does not verify asks every position, votes and
 * decodes.  A member slower than its peers for reads is read around, as a
 * failed one is, when k others can serve the stripe (the read-around
 * policy: slow_positions, around_positions), with a spare asked if the
 * others are late (stripe_hedge.c).
 */
#include "stripe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <glib.h>

#include "log.h"
#include "memberops.h"
#include "memberio.h"
#include "reader_rules.h"
#include "stripe_decode.h"
#include "stripe_internal.h"
#include "volume_internal.h"

/* Sets task t up to read stripes [s0, s0+cnt) of position pos. */
void stripe_fetch_task_init(stripe_ctx *c, fetch_task *t, int pos, uint64_t s0, int cnt)
{
	t->c = c;
	t->member = layout_member_of(&c->lay, pos);
	t->pos = pos;
	t->cnt = cnt;
	t->s0 = s0;
	t->err = 0;
	t->from_head = false;
	t->part_off = cnt == 1 ? c->part_off : 0;
	t->part_len = cnt == 1 ? c->part_len : 0;
	t->fd = c->fd[t->member];
	t->hdr = c->hdr;
	t->done = false;
	for (int i = 0; i < cnt; i++)
		t->st[i] = (strip_judgment){ .v = STRIP_UNREAD };
}

/* The most tags a part is read with (strips up to 1 MiB); a strip with
 * more is read whole. */
#define PART_TAGS_MAX (256 * CHUNK_TAG_SIZE)

/* A task's part of a strip (fetch_task.part_len), version 3: one read for
 * its record, one for its tags (one for both at stripe 0, where they
 * meet) and one for the 4 KiB blocks of the part, which land at their
 * place in the strip, judged by rules_judge_blocks. */
static void fetch_blocks(fetch_task *t)
{
	stripe_ctx *c = t->c;
	uint64_t strip = c->lay.strip_size, T = layout_tags_size(&c->lay), s = t->s0;
	uint64_t b0 = t->part_off / CHUNK_BLOCK_SIZE;
	uint64_t b1 = (t->part_off + t->part_len - 1) / CHUNK_BLOCK_SIZE;
	uint64_t from = b0 * CHUNK_BLOCK_SIZE, want = (b1 + 1) * CHUNK_BLOCK_SIZE - from;
	uint8_t meta[CHUNK_RECORD_SIZE + PART_TAGS_MAX];
	off_t rat = (off_t)layout_record_offset(&c->lay, s), tat = (off_t)layout_tags_offset(&c->lay, s);
	struct iovec riov = { meta, CHUNK_RECORD_SIZE }, tiov = { meta + CHUNK_RECORD_SIZE, T };
	chunk_header h = t->hdr;

	if (want > strip - from)
		want = strip - from;
	memset(meta, 0, sizeof(meta)); /* past the end of the chunk: zeros */
	if (rat + CHUNK_RECORD_SIZE == tat)
		riov.iov_len += T;
	ssize_t rgot = mop_transfer(c->v, t->member, t->fd, &riov, 1, rat, false);
	if (rgot >= 0 && riov.iov_len == CHUNK_RECORD_SIZE) {
		ssize_t tgot = mop_transfer(c->v, t->member, t->fd, &tiov, 1, tat, false);
		rgot = tgot < 0 ? tgot : rgot;
	}
	uint8_t *own = mio_bounce(want), *at = own ? own : t->dest[0] + from;
	struct iovec biov = { at, want };
	ssize_t got = rgot < 0 ? rgot
	              : mop_transfer(c->v, t->member, t->fd, &biov, 1,
	                             (off_t)(layout_strip_offset(&c->lay, s) + from), false);
	if (got < 0 || rgot < 0) {
		t->st[0].v = STRIP_ERR;
		t->err = (int)(got < 0 ? got : rgot);
		return;
	}
	/* Short (past the end of the chunk): zeros, which do not verify
	 * unless they are what the tags say. */
	memset(at + got, 0, want - (size_t)got);
	h.position = (uint32_t)t->pos;
	rules_judge_blocks(c->sum, &h, &c->lay, s, meta, meta + CHUNK_RECORD_SIZE, at, b0,
	                   b1 - b0 + 1, &t->st[0]);
	if (own && mio_claim())
		memcpy(t->dest[0] + from, at, want);
}

/* Reads and judges strips s0..s0+cnt-1 of one position: one pread for
 * their records, one preadv for the strips (consecutive in the chunk
 * within a group), then a verdict per strip.  On a worker with a timeout
 * the strips land in its bounce buffer and are judged there: they reach
 * the caller's memory only once mio_claim says the caller still waits
 * (a bounded read may have gone on without them). */
void stripe_fetch_member(void *arg)
{
	fetch_task *t = arg;
	stripe_ctx *c = t->c;
	uint64_t strip = c->lay.strip_size;
	uint8_t recs[STRIPE_FETCH_RUN * CHUNK_RECORD_SIZE];
	struct iovec iov[STRIPE_FETCH_RUN], riov = { recs, (size_t)t->cnt * CHUNK_RECORD_SIZE };
	int fd = t->fd;
	chunk_header h = t->hdr;
	uint8_t *own = NULL, *at[STRIPE_FETCH_RUN];

	ssize_t got, rgot;
	if (t->part_len && !t->from_head) {
		fetch_blocks(t);
		return;
	}
	if (t->from_head) {
		for (int i = 0; i < t->cnt; i++)
			at[i] = t->dest[i];
		got = stripe_head_pread(c, t->member, at[0], strip, layout_strip_offset(&c->lay, 0));
		rgot = stripe_head_pread(c, t->member, recs, CHUNK_RECORD_SIZE,
		                         layout_record_offset(&c->lay, 0));
		fd = -1; /* nothing of the member is looked at */
	} else {
		rgot = mop_transfer(c->v, t->member, fd, &riov, 1,
		                    (off_t)layout_record_offset(&c->lay, t->s0), false);
		own = mio_bounce(strip * (size_t)t->cnt);
		for (int i = 0; i < t->cnt; i++) {
			at[i] = own ? own + (size_t)i * strip : t->dest[i];
			iov[i] = (struct iovec){ at[i], strip };
		}
		struct iovec one = { own, strip * (size_t)t->cnt };
		int64_t t0 = g_get_monotonic_time();
		got = rgot < 0 ? rgot
		      : own ? mop_transfer(c->v, t->member, fd, &one, 1,
		                           (off_t)layout_strip_offset(&c->lay, t->s0), false)
		            : mop_transfer(c->v, t->member, fd, iov, t->cnt,
		                           (off_t)layout_strip_offset(&c->lay, t->s0), false);
		/* the member's read cost (memberio_slow_of): strips read whole */
		if (got == (ssize_t)(strip * (uint64_t)t->cnt))
			memberio_note(volume_memberio(c->v), t->member, MIO_READ, (size_t)got,
			              (g_get_monotonic_time() - t0) * 1000);
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
			memset(at[i] + have, 0, strip - have);
	}
	if ((size_t)rgot < riov.iov_len)
		memset(recs + rgot, 0, riov.iov_len - (size_t)rgot);
	h.position = (uint32_t)t->pos;
	for (int i = 0; i < t->cnt; i++)
		rules_judge_strip(c->sum, &h, &c->lay, t->s0 + (uint64_t)i,
		                  recs + (size_t)i * CHUNK_RECORD_SIZE, at[i], NULL, fd, &t->st[i]);
	if (own && !mio_claim())
		return; /* its caller read around it: t and c are the late read's */
	for (int i = 0; own && i < t->cnt; i++)
		memcpy(t->dest[i], at[i], strip);
}

/* A fetch that reads one position, or at most this many bytes in all,
 * is read on the calling thread where the members allow it. */
#define STRIPE_HERE_MAX (128 * 1024)

/* Waking a member's worker and being woken by it costs more than a small
 * read of a member whose reads cannot wait (mop_reads_here: tmpfs,
 * ramfs), so a small fetch reads such positions of ask on the calling
 * thread, straight into dest, and judges them there; a larger one keeps
 * the members' reads and checksums in parallel on their workers.  Sets
 * up every task; returns the positions of ask left for the workers. */
static uint64_t fetch_here(stripe_ctx *c, uint64_t s0, int cnt, uint64_t ask,
                           uint8_t *(*dest)[STRIPE_FETCH_RUN], fetch_task *tasks)
{
	int asked = __builtin_popcountll(ask);
	bool small = asked == 1 || (uint64_t)asked * (uint64_t)cnt * c->lay.strip_size <=
	                           STRIPE_HERE_MAX;

	for (int pos = 0; pos < c->lay.n; pos++) {
		fetch_task *t = &tasks[pos];
		stripe_fetch_task_init(c, t, pos, s0, cnt);
		for (int i = 0; i < cnt; i++)
			t->dest[i] = dest[pos][i];
		if (small && (ask >> pos & 1) && mop_reads_here(c->v, t->member)) {
			stripe_fetch_member(t);
			ask &= ~(1ull << pos);
		}
	}
	return ask;
}

/* Fetches stripes [s0, s0+cnt) of the positions in mask (bit j = position
 * j) on their members in parallel; dest[j][i] receives strip j of stripe
 * s0+i.  With a member timeout, bounded (stripe_fetch_bounded) but for
 * what a small fetch reads on the calling thread (fetch_here); returns
 * the positions cut there. */
uint64_t stripe_fetch_positions(stripe_ctx *c, uint64_t s0, int cnt, uint64_t mask,
                                uint8_t *(*dest)[STRIPE_FETCH_RUN], fetch_task *tasks,
                                bool from_head)
{
	mio_batch batch;
	uint64_t ask = 0;

	for (int pos = 0; pos < c->lay.n; pos++) {
		int mb = layout_member_of(&c->lay, pos);
		if ((mask >> pos & 1) && stripe_member_usable(c, mb))
			ask |= 1ull << pos;
	}
	bool heads = from_head && s0 == 0 && cnt == 1;
	for (int pos = 0; heads && pos < c->lay.n; pos++)
		heads = !(ask >> pos & 1) || c->head[layout_member_of(&c->lay, pos)];
	if (memberio_timeout(volume_memberio(c->v)) && !heads) {
		uint64_t rest = fetch_here(c, s0, cnt, ask, dest, tasks);
		int64_t cut = rest ? stripe_fetch_bounded(c, s0, cnt, rest, ask & ~rest, dest, tasks)
		                   : 0;
		if (cut >= 0)
			return (uint64_t)cut;
	}
	mio_batch_init_caller(volume_memberio(c->v), &batch);
	for (int pos = 0; pos < c->lay.n; pos++) {
		fetch_task *t = &tasks[pos];
		stripe_fetch_task_init(c, t, pos, s0, cnt);
		int mb = t->member;
		t->from_head = from_head && s0 == 0 && cnt == 1 && c->head[mb];
		for (int i = 0; i < cnt; i++)
			t->dest[i] = dest[pos][i];
		if (!(ask >> pos & 1))
			continue;
		if (t->from_head)
			stripe_fetch_member(t); /* a copy: no need to hand it to the member */
		else
			memberio_submit(volume_memberio(c->v), mb, &batch, stripe_fetch_member, t);
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
	return 0;
}

/* A member clearly slower than its peers now (memberio_slow_of: its
 * reads per byte against theirs) is read around, as a failed one is, when
 * k others can serve the stripe, and so is one stalled in a call past its
 * bound (memberio_stalled), also under -o tune.slow_readaround=off, which
 * leaves out the slow ones.  The positions whose members are either. */
static uint64_t slow_positions(stripe_ctx *c)
{
	int n = c->lay.n, most;
	memberio *mio = volume_memberio(c->v);
	uint64_t usable, slow = 0, slow_mb = 0;

	usable = stripe_usable_members(c);
	most = __builtin_popcountll(usable) - c->lay.k;
	/* a member stalled in a call past its bound (memberio_bound_ms), whatever
	 * the read-around policy */
	for (int mb = 0; mb < volume_n(c->v); mb++)
		if ((usable >> mb & 1) && __builtin_popcountll(slow_mb) < most &&
		    memberio_stalled(mio, mb))
			slow_mb |= 1ull << mb;
	if (!volume_settings(c->v)->no_read_around)
		slow_mb |= memberio_slow_of(mio, MIO_READ, usable & ~slow_mb,
		                            most - __builtin_popcountll(slow_mb));
	for (int pos = 0; slow_mb && pos < n; pos++)
		if (slow_mb >> layout_member_of(&c->lay, pos) & 1)
			slow |= 1ull << pos;
	return slow;
}

/* The answers a read around slow members needs before its vote can
 * stand: more than m, so that no generation could have k strips among the
 * unread ones, and k to decode from. */
int stripe_around_need(const stripe_ctx *c)
{
	return c->lay.k > c->lay.m ? c->lay.k : c->lay.m + 1;
}

/* The positions to read around the slow ones: the wanted data positions
 * first, then the other data positions and the parity ones, until
 * stripe_around_need are asked, and `spare` more if there are (a hedged read):
 * no more reads than k, as with every member fast, but the spares. */
static uint64_t around_positions(stripe_ctx *c, uint64_t want, uint64_t slow, int spare)
{
	int n = c->lay.n, need = stripe_around_need(c) + spare, got = 0;
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
bool stripe_vote_settled(const fetch_task *tasks, int n, int k, int i, uint64_t skipped)
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

static int unpack_in_place(stripe_ctx *c, uint64_t len, uint8_t *const *data);

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
	bool degraded = false, retried = false;
	uint64_t cut = 0;
	fetch_task *tasks;
	int rc = 0;

	if (cnt < 1 || cnt > STRIPE_FETCH_RUN || (uint64_t)cnt > layout_group_end(&c->lay, s0) - s0)
		return -EINVAL;
again:
	mask = all;
	degraded = false;
	for (int j = 0; j < k; j++)
		for (int i = 0; i < cnt; i++)
			dest[j][i] = data[(size_t)i * k + j];
	/* A data position on a member known to be failed: every stripe needs
	 * decoding, so read every position of the whole run at once (one read
	 * per member) rather than fall back stripe by stripe. */
	for (int j = 0; j < k && !degraded; j++)
		degraded = !stripe_member_usable(c, layout_member_of(&c->lay, j));
	/* So is a data position on a member known to be slow, or cut by the
	 * bound of the first try. */
	uint64_t slow = slow_positions(c) | cut;
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
		rc = stripe_fetch_hedged(c, s0, cnt, all, mask, spare, dest, lens);
		for (int i = 0; i < cnt && rc == 1; i++)
			if (unpack_in_place(c, lens[i], data + (size_t)i * k) < 0)
				rc = -ENOMEM;
		if (rc != 0)
			return rc < 0 ? rc : 0;
		/* a vote that did not stand: the careful way below */
	}
	tasks = g_new(fetch_task, n);
	cut = stripe_fetch_positions(c, s0, cnt, mask, dest, tasks, false);
	if (cut && !retried) {
		g_free(tasks);
		retried = true;
		goto again;
	}
	/* Stripes that did not read cleanly: decoded from what the run read,
	 * or fetched again the careful way, one by one. */
	for (int i = 0; i < cnt && rc == 0; i++) {
		uint64_t len = c->lay.strip_size;
		if (run_stripe_ok(tasks, k, all, i))
			len = tasks[0].st[i].len;
		else if (mask != all &&
		         (!slow || stripe_vote_settled(tasks, n, k, i, ((1ull << n) - 1) & ~mask)))
			rc = stripe_vote_and_decode(c, s0 + (uint64_t)i, all, tasks, dest, i, &len);
		else
			rc = stripe_fetch(c, s0 + (uint64_t)i, all, data + (size_t)i * k);
		if (rc == 0)
			rc = unpack_in_place(c, len, data + (size_t)i * k);
	}
	g_free(tasks);
	return rc;
}

/* Writes strip data of stripe s at generation gen again on member mb (a
 * self-healing read), counted as healed and logged; a member that fails
 * the write is failed as any write error fails it.  doing and what name
 * the strip in the error and in the log line. */
static void rewrite_strip(stripe_ctx *c, int mb, uint64_t s, const uint8_t *data, uint64_t gen,
                          uint64_t size, const char *doing, const char *what)
{
	char why[64];
	int wrc = stripe_write_strip(c, mb, s, data, gen, size);
	if (wrc < 0) {
		snprintf(why, sizeof(why), "rewriting %s", doing);
		if (volume_member_io_error(c->v, mb, -wrc, why, VOLUME_IO_WRITE))
			c->state[mb] = CHUNK_FAILED;
		return;
	}
	volume_count_healed(c->v, 1);
	ecfs_log(LOG_NOTICE, "%s: stripe %llu: rewrote %s on member %d (%s)", c->path,
	         (unsigned long long)s, what, mb, volume_member_path(c->v, mb));
}

/* After every position of stripe s was fetched (stripe i of the fetch in
 * tasks, position j's strip in dest[j][i]): votes its generation
 * (stripe_vote_take), treats every strip not of the winner as an erasure,
 * rebuilds the wanted data strips that are erased and rewrites the bad
 * strips of members in service. */
int stripe_vote_and_decode(stripe_ctx *c, uint64_t s, uint64_t want, const fetch_task *tasks,
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
			if (volume_member_io_error(c->v, t->member, t->err, "reading a chunk",
			                           VOLUME_IO_READ))
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
		volume_file_lost(c->v, c->path);
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
		    !volume_settings(c->v)->read_only && stripe_member_usable(c, t->member))
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
		volume_file_lost(c->v, c->path);
		return -EIO;
	}
	volume_count_decoded(c->v, 1);
	for (int j = 0; j < n; j++) {
		if (!(heal >> j & 1))
			continue;
		rewrite_strip(c, tasks[j].member, s, blocks[j], best, vote.size, "a bad strip",
		              "the bad strip");
	}
	return 0;
}

/* Version 3: data strip j, whose part did not verify by its stored tags
 * (fetch_blocks) but which the careful read (tasks) found good whole, of
 * the stripe's generation, has stale or damaged tags (a power cut that
 * kept its record and strip pages but not its tag page): it is written
 * again, tags computed afresh, so that small reads of it read little
 * again.  Same bytes, same generation: a torn rewrite leaves it as it was. */
static void rewrite_tags(stripe_ctx *c, uint64_t s, int j, const fetch_task *tasks,
                         const uint8_t *data)
{
	strip_judgment st[STRIPE_MAX_N];
	const strip_judgment *mine = &tasks[j].st[0];
	int mb = tasks[j].member;
	uint64_t best;

	for (int i = 0; i < c->lay.n; i++)
		st[i] = tasks[i].st[0];
	if (mine->v != STRIP_GOOD || mine->len != c->lay.strip_size ||
	    rules_vote(st, c->lay.n, c->lay.k, &best) < c->lay.k || mine->gen != best ||
	    volume_settings(c->v)->read_only || !stripe_member_usable(c, mb))
		return;
	volume_strip_failure(c->v, mb, c->path, s, "tags do not match the strip");
	rewrite_strip(c, mb, s, data, mine->gen, mine->size, "a strip's tags",
	              "the strip with bad tags");
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
	bool tags_bad = false;
	if (!(want & slow)) {
		slow |= stripe_fetch_positions(c, s, 1, want, dest, tasks, true);
		/* a part is for this try only: the careful way reads whole */
		tags_bad = c->part_len && tasks[__builtin_ctzll(want)].st[0].v == STRIP_BAD;
		c->part_len = 0;
		if (run_stripe_ok(tasks, k, want, 0)) {
			*len = tasks[__builtin_ctzll(want)].st[0].len;
			goto out;
		}
	}
	/* Slow path: every position (or, around a slow member, as many as
	 * the vote needs, if it stands without the others), a vote on the
	 * generation, decode. */
	c->part_len = 0;
	if (slow) {
		mask = around_positions(c, want, slow, 0);
		uint64_t spare = around_positions(c, want, slow, 1) & ~mask;
		if (spare) {
			rc = stripe_fetch_hedged(c, s, 1, want, mask, spare, dest, len);
			if (rc != 0)
				goto out; /* read, or failed */
			mask = all;
		} else {
			stripe_fetch_positions(c, s, 1, mask, dest, tasks, false);
			if (!stripe_vote_settled(tasks, n, k, 0, all & ~mask))
				mask = all;
		}
	}
	if (mask == all)
		stripe_fetch_positions(c, s, 1, all, dest, tasks, false);
	rc = stripe_vote_and_decode(c, s, want, tasks, dest, 0, len);
	if (rc == 0 && tags_bad)
		rewrite_tags(c, s, __builtin_ctzll(want), tasks, data[__builtin_ctzll(want)]);
out:
	g_free(tasks);
	return rc < 0 ? rc : 0;
}

/* A stripe fetched as stored (a short one's bytes in the first len bytes
 * of the data strips) made its plain strips, in place. */
static int unpack_in_place(stripe_ctx *c, uint64_t len, uint8_t *const *data)
{
	const uint8_t *in[STRIPE_MAX_N];
	uint8_t *pb = len < c->lay.strip_size ? stripe_pack_buffer(c, &c->pack_in) : NULL;

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

int stripe_fetch_part(stripe_ctx *c, uint64_t s, uint64_t want, uint8_t *const *data,
                      uint64_t in, uint64_t len)
{
	uint64_t strip = c->lay.strip_size, j = in / strip;
	int rc;

	/* One data strip, read healthy (slow_positions: nothing to read
	 * around), of tags a part can hold. */
	if (c->lay.version < 3 || len == 0 || len >= strip || want != 1ull << j ||
	    (in + len - 1) / strip != j ||
	    layout_tags_size(&c->lay) > PART_TAGS_MAX || (slow_positions(c) & want))
		return stripe_fetch(c, s, want, data);
	c->part_off = in - j * strip;
	c->part_len = len;
	rc = stripe_fetch(c, s, want, data);
	c->part_off = c->part_len = 0;
	return rc;
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
	uint8_t *pb = stripe_pack_buffer(c, &c->pack_in);
	if (!pb)
		return -ENOMEM;
	for (int j = 0; j < c->lay.k; j++)
		raw[j] = pb + (size_t)j * c->lay.strip_size;
	rc = fetch_stored(c, s, all, raw, &len);
	if (rc == 0)
		layout_unpack_short(&c->lay, len, (const uint8_t *const *)raw, want, data);
	return rc;
}

