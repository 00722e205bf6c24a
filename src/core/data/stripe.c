/* SPDX-License-Identifier: MIT */
/*
 * The stripe layer's common ground (stripe.h): the context's buffers and
 * the chunk heads read at open, which members are usable, the members
 * left out of writes when slow, the recovery helpers (the probe of a
 * stripe, the scan of the chunks' end), and the per-member steps of a
 * file: headers, syncs and truncates.  Commits are in stripe_commit.c,
 * fetches in stripe_fetch.c, reads around a slow member in
 * stripe_hedge.c.
 *
 * Each member's share of an operation runs on that member's worker
 * thread, so the strips of a stripe are checksummed and moved to or from
 * all members at once, and the caller waits for the slowest member only.
 */
#include "stripe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <glib.h>

#include "journal.h"
#include "memberops.h"
#include "memberio.h"
#include "reader_rules.h"
#include "space.h"
#include "stripe_internal.h"
#include "volume_internal.h"

int stripe_ctx_buffers(stripe_ctx *c)
{
	size_t strip = c->lay.strip_size;

	if (!c->scratch && posix_memalign((void **)&c->scratch, 4096, strip * (size_t)c->lay.n))
		c->scratch = NULL;
	if (!c->parity &&
	    posix_memalign((void **)&c->parity, 4096, strip * (size_t)c->lay.m * STRIPE_BATCH))
		c->parity = NULL;
	size_t tags = (size_t)layout_tags_size(&c->lay) * (size_t)c->lay.n * STRIPE_BATCH;
	if (!c->tags && tags)
		c->tags = malloc(tags);
	return c->scratch && c->parity && (c->tags || !tags) ? 0 : -ENOMEM;
}

/* k strips to pack (commits) or unpack (fetches) short stripes through,
 * allocated the first time a short stripe is met. */
uint8_t *stripe_pack_buffer(stripe_ctx *c, uint8_t **buf)
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
void stripe_forget_heads(stripe_ctx *c)
{
	for (int mb = 0; mb < c->lay.n; mb++)
		stripe_keep_head(c, mb, NULL, 0);
}

void stripe_ctx_free_buffers(stripe_ctx *c)
{
	stripe_drop_hedges(c);
	stripe_forget_heads(c);
	journal_close(c->v, &c->jf);
	mio_free_or_keep(c->scratch, c->buffers_lent);
	mio_free_or_keep(c->parity, c->buffers_lent);
	mio_free_or_keep(c->tags, c->buffers_lent);
	mio_free_or_keep(c->run_parity, c->buffers_lent);
	mio_free_or_keep(c->pack_in, c->buffers_lent);
	mio_free_or_keep(c->pack_out, c->buffers_lent);
	c->scratch = c->parity = c->tags = c->run_parity = c->pack_in = c->pack_out = NULL;
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
uint64_t stripe_usable_members(stripe_ctx *c)
{
	uint64_t usable = 0;
	for (int mb = 0; mb < c->lay.n; mb++)
		if (stripe_member_usable(c, mb))
			usable |= 1ull << mb;
	return usable;
}

int stripe_usable_count(stripe_ctx *c)
{
	return __builtin_popcountll(stripe_usable_members(c));
}

uint64_t stripe_leave_out_slow(stripe_ctx *c)
{
	int quorum = volume_settings(c->v)->write_quorum;

	if (!quorum)
		return 0;
	uint64_t usable = stripe_usable_members(c);
	int spare = __builtin_popcountll(usable) - quorum;
	if (spare <= 0)
		return 0;
	uint64_t slow = memberio_slow_of(volume_memberio(c->v), MIO_WRITE, usable, spare);
	for (int mb = 0; mb < c->lay.n; mb++)
		if (slow >> mb & 1)
			c->state[mb] = CHUNK_STALE;
	return slow;
}

/* Per member, a stage that moves little and waits on no disk is a batch
 * of small calls: on the relay when the members are fast, one wake-up for
 * all instead of one each.  With `here`, a member whose calls cannot wait
 * (tmpfs: mop_writes_here) needs no hand-off at all: its call runs on the
 * calling thread, after the others are handed out (memberio_run_stage).
 * For a stage that moves strips the work is the copy, the same on any
 * thread, and a hand-off per member only adds two context switches and a
 * wait (on two cores the writers and the committers keep both busy
 * without the workers); a sync there does nothing (mop_fsync), and one
 * round to the relay and back costs more. */
uint64_t stripe_run_stage(stripe_ctx *c, bool small, bool here, void (*fn)(void *),
                          void *const args[STRIPE_MAX_N], uint64_t *stuck)
{
	uint64_t mine = 0;

	for (int mb = 0; here && mb < c->lay.n; mb++)
		if (args[mb] && mop_writes_here(c->v, mb))
			mine |= 1ull << mb;
	return memberio_run_stage(volume_memberio(c->v), small, c->lay.n, fn, args, mine, stuck);
}

/* A pread of member mb's chunk from what open read of it (all of it). */
ssize_t stripe_head_pread(const stripe_ctx *c, int mb, void *buf, size_t len, uint64_t off)
{
	size_t have = c->head_len[mb];

	if (off >= have)
		return 0;
	if (len > have - off)
		len = have - off;
	memcpy(buf, c->head[mb] + off, len);
	return (ssize_t)len;
}

/* ---- recovery helpers ---- */

int stripe_probe(stripe_ctx *c, uint64_t s, uint8_t *bufs, strip_judgment p[STRIPE_MAX_N])
{
	int n = c->lay.n, got = 0;
	fetch_task *tasks = g_new(fetch_task, n);
	uint8_t *dest[STRIPE_MAX_N][STRIPE_FETCH_RUN];

	for (int j = 0; j < n; j++)
		dest[j][0] = bufs + (size_t)j * c->lay.strip_size;
	stripe_fetch_positions(c, s, 1, (1ull << n) - 1, dest, tasks, false);
	for (int j = 0; j < n; j++) {
		p[j] = tasks[j].st[0];
		got += rules_strip_read(&p[j]);
	}
	g_free(tasks);
	return got >= c->lay.k ? 0 : -EIO;
}

/* One member's look at the end of its chunk (stripe_scan_end), with its
 * own copy of what it needs: on a worker it may finish after its caller
 * went on (open_round's way, mio_claim). */
struct scan_job {
	volume *v;
	layout lay;
	int mb, fd;
	uint64_t size;
	const uint8_t *head; /* the whole chunk, read at open, or NULL */
	size_t head_len;
	int rc;     /* 0, or a negative errno */
	bool dirty; /* something stored past the end */
};

static void scan_member_end(void *arg)
{
	struct scan_job *j = arg;
	uint64_t count = layout_stripe_count(&j->lay, j->size);
	uint64_t len = layout_chunk_length(&j->lay, count), last = count - 1;
	uint8_t recs[CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE];
	struct stat st;
	bool dirty = false;

	if (j->head)
		st.st_size = (off_t)j->head_len;
	else if (MIO_CALL(fstat(j->fd, &st)) < 0)
		st.st_size = -1;
	if (st.st_size < 0) {
		j->rc = -errno;
	} else if ((uint64_t)st.st_size > len) {
		dirty = true;
	} else if (count) {
		/* The record block of the last stripe's group: no records after
		 * it, and the last one not written when the file was longer. */
		uint64_t g0 = layout_group_start(&j->lay, last);
		uint64_t gn = layout_group_end(&j->lay, last) - g0;
		size_t rlen = gn * CHUNK_RECORD_SIZE;
		uint64_t roff = layout_record_offset(&j->lay, g0);
		struct iovec iov = { recs, rlen };
		ssize_t r = 0;
		if (!j->head) {
			r = mop_transfer(j->v, j->mb, j->fd, &iov, 1, (off_t)roff, false);
		} else if (roff < j->head_len) {
			r = (ssize_t)(j->head_len - roff < rlen ? j->head_len - roff : rlen);
			memcpy(recs, j->head + roff, (size_t)r);
		}
		/* an unreadable block is an erasure; the reads will judge it */
		if (r >= 0)
			memset(recs + r, 0, rlen - (size_t)r);
		/* Only records a commit wrote count (naming their stripe and this
		 * position): rot in an unused slot is no leftover. */
		uint32_t pos = (uint32_t)layout_position_of(&j->lay, j->mb);
		for (uint64_t i = last - g0; r >= 0 && i < gn; i++) {
			chunk_record rec;
			if (chunk_record_decode(recs + i * CHUNK_RECORD_SIZE, &rec) < 0 ||
			    rec.stripe != g0 + i || rec.position != pos)
				continue;
			if (g0 + i > last ||
			    (j->size % layout_stripe_data(&j->lay) && rec.size > j->size))
				dirty = true;
		}
	}
	if (mio_claim())
		j->dirty = dirty;
}

struct scan_round {
	mio_batch batch;
	struct scan_job jobs[];
};

static void scan_round_free(void *arg)
{
	g_free(arg);
}

/* Every usable member looks at its chunk's end in parallel on its worker,
 * waited for no longer than the members' bound (memberio_bound_ms): one
 * cut there is an erasure for this look.  The round is freed once its
 * last job is done. */
int stripe_scan_end(stripe_ctx *c, uint64_t size, bool *dirty)
{
	int n = c->lay.n, rc = 0;
	memberio *mio = volume_memberio(c->v);
	struct scan_round *r = g_malloc0(sizeof(*r) + (size_t)n * sizeof(r->jobs[0]));
	mio_batch *b = &r->batch;

	*dirty = false;
	mio_batch_init(b);
	mio_batch_bound(b);
	mio_batch_by_release(b);
	for (int mb = 0; mb < n; mb++) {
		struct scan_job *j = &r->jobs[mb];
		*j = (struct scan_job){ .v = c->v, .lay = c->lay, .mb = mb, .fd = c->fd[mb],
		                        .size = size, .head = c->head[mb], .head_len = c->head_len[mb] };
		if (!stripe_member_usable(c, mb))
			continue;
		if (j->head)
			scan_member_end(j); /* read at open: no member call */
		else
			memberio_submit(mio, mb, b, scan_member_end, j);
	}
	uint64_t cut = mio_batch_wait_bounded(mio, b);
	for (int mb = 0; mb < n; mb++) {
		if (cut >> mb & 1 || !stripe_member_usable(c, mb))
			continue;
		*dirty |= r->jobs[mb].dirty;
		if (r->jobs[mb].rc < 0 && !rc)
			rc = r->jobs[mb].rc;
	}
	mio_batch_release(b, scan_round_free, r);
	return rc;
}

/* Member mb's records at roff (len bytes) into recs: false if they could
 * not be read.  *next is where the member's chunk may hold data next
 * (lseek SEEK_DATA), kept across calls so that a run of record blocks in a
 * hole of the chunk costs one call. */
static bool member_records(stripe_ctx *c, int mb, uint64_t roff, size_t len, off_t *next,
                          uint8_t *recs)
{
	ssize_t r;
	if (c->head[mb]) {
		r = stripe_head_pread(c, mb, recs, len, roff);
	} else {
		if ((uint64_t)*next < roff + len) {
			off_t d = MIO_CALL(lseek(c->fd[mb], (off_t)roff, SEEK_DATA));
			*next = d >= 0 ? d : errno == ENXIO ? INT64_MAX : (off_t)roff;
		}
		if ((uint64_t)*next >= roff + len) {
			memset(recs, 0, len);
			return true;
		}
		struct iovec iov = { recs, len };
		r = mop_transfer(c->v, mb, c->fd[mb], &iov, 1, (off_t)roff, false);
	}
	if (r < 0)
		return false;
	memset(recs + r, 0, len - (size_t)r);
	return true;
}

/* Bit i: stripe g0 + i of the group [g0, gn) is written (stripe_find_written). */
static uint64_t group_written(stripe_ctx *c, uint64_t g0, uint64_t gn, off_t *next)
{
	uint8_t recs[CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE];
	uint64_t cnt = gn - g0, all = cnt >= 64 ? ~0ull : (1ull << cnt) - 1, mask = 0;
	uint64_t roff = layout_record_offset(&c->lay, g0);
	int asked = 0;

	for (int mb = 0; mb < c->lay.n && mask != all; mb++) {
		if (!stripe_member_usable(c, mb))
			continue;
		asked++;
		if (!member_records(c, mb, roff, cnt * CHUNK_RECORD_SIZE, &next[mb], recs))
			return all;
		for (uint64_t i = 0; i < cnt; i++)
			if (!chunk_record_is_blank(recs + i * CHUNK_RECORD_SIZE))
				mask |= 1ull << i;
	}
	return asked ? mask : all;
}

uint64_t stripe_find_written(stripe_ctx *c, uint64_t s, uint64_t end, bool want)
{
	off_t next[STRIPE_MAX_N] = { 0 };

	while (s < end) {
		uint64_t g0 = layout_group_start(&c->lay, s), gn = layout_group_end(&c->lay, s);
		uint64_t mask = group_written(c, g0, gn, next);
		for (; s < gn && s < end; s++)
			if (((mask >> (s - g0)) & 1) == want)
				return s;
	}
	return end;
}

uint64_t stripe_written_extent(stripe_ctx *c, uint64_t end)
{
	/* A member that cannot be asked may hold the only records of a
	 * stripe: nothing is known blank then. */
	if (end == 0 || stripe_usable_count(c) < c->lay.n)
		return end;
	uint64_t s = end;
	while (s > 0) {
		/* From the last group down; each group asks the members afresh
		 * (their SEEK_DATA positions hold going forward only). */
		off_t next[STRIPE_MAX_N] = { 0 };
		uint64_t g0 = layout_group_start(&c->lay, s - 1);
		uint64_t mask = group_written(c, g0, layout_group_end(&c->lay, s - 1), next);
		for (; s > g0; s--)
			if (mask >> (s - 1 - g0) & 1)
				return s;
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
	uint64_t from, to; /* reserve_member: the chunk's bytes to set aside */
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
 * when the job makes no sync that waits on a disk; a sync of a member
 * whose calls cannot wait on the calling thread: stripe_run_stage); a
 * member given up (memberio.h) gets -ETIMEDOUT.  A member that fails is
 * out of this file (and of the volume if the error says the member is
 * broken), and fewer than k that succeed fail the step with EIO.  A full member stays in
 * (space.h) and fails the step with its ENOSPC or EDQUOT: what it holds
 * is what a crash before the step would have left. */
static int on_usable_members(stripe_ctx *c, void (*fn)(void *), member_job how,
                             const char *what)
{
	member_job jobs[STRIPE_MAX_N];
	void *args[STRIPE_MAX_N] = { 0 };
	int ok = 0, full = 0;

	for (int mb = 0; mb < c->lay.n; mb++) {
		jobs[mb] = how;
		jobs[mb].c = c;
		jobs[mb].member = mb;
		jobs[mb].err = 1;
		if (stripe_member_usable(c, mb))
			args[mb] = &jobs[mb];
	}
	uint64_t lost = stripe_run_stage(c, !job_syncs(c, fn, &how), fn == sync_member, fn, args,
	                                 NULL);
	for (int mb = 0; mb < c->lay.n; mb++) {
		if (lost >> mb & 1)
			jobs[mb].err = -ETIMEDOUT;
		if (jobs[mb].err == 0) {
			ok++;
		} else if (jobs[mb].err < 0) {
			volume_member_io_error(c->v, mb, jobs[mb].err, what, VOLUME_IO_WRITE);
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

static void reserve_member(void *arg)
{
	member_job *j = arg;
	int r = mop_fallocate(j->c->v, j->member, j->c->fd[j->member], FALLOC_FL_KEEP_SIZE,
	                      (off_t)j->from, (off_t)(j->to - j->from));
	/* A member whose filesystem sets nothing aside (sshfs and other FUSE
	 * mounts say EOPNOTSUPP, ENOSYS or EINVAL) still takes the stripes
	 * when they come, as before the call: not a failed member. */
	j->err = r == -EOPNOTSUPP || r == -ENOSYS || r == -EINVAL ? 0 : r;
}

int stripe_reserve(stripe_ctx *c, uint64_t pos, uint64_t end)
{
	if (pos >= end)
		return 0;
	uint64_t first = layout_stripe_of(&c->lay, pos), last = layout_stripe_of(&c->lay, end - 1);
	member_job how = {
		/* A stripe's record and tags lie before its strip, in its group's
		 * blocks; the strips of the last stripe as long as a file ending
		 * at `end` stores them. */
		.from = layout_record_offset(&c->lay, first),
		.to = layout_strip_offset(&c->lay, last) + layout_strip_len(&c->lay, last, end),
	};
	return on_usable_members(c, reserve_member, how, "setting space aside in a chunk");
}

/* Space set aside past a chunk's end (stripe_reserve) that a file cut to
 * `len` bytes of chunk no longer needs: more blocks than those bytes take
 * say there is some.  Truncating to the chunk's own size gives it back
 * (ext4, tmpfs, XFS) and changes no byte. */
static bool reserved_past(const struct stat *st, uint64_t len)
{
	return (uint64_t)st->st_size <= len && (uint64_t)st->st_blocks * 512 > len + 4096;
}

int stripe_truncate(stripe_ctx *c, uint64_t from)
{
	uint64_t len = layout_chunk_length(&c->lay, from);
	bool in_group = from != layout_group_start(&c->lay, from);
	stripe_forget_heads(c);
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
		else if (rc == 0 && reserved_past(&st, len))
			rc = mop_ftruncate(c->v, mb, c->fd[mb], st.st_size);
		if (rc < 0) {
			if (volume_member_io_error(c->v, mb, -rc, "truncating a chunk", VOLUME_IO_WRITE))
				c->state[mb] = CHUNK_FAILED;
		} else {
			ok++;
		}
	}
	return ok >= c->lay.k ? 0 : -EIO;
}

