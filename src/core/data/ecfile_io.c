/* SPDX-License-Identifier: MIT */
/*
 * The data path of an open file: the per-file stripe buffer that turns
 * small writes into stripe commits, read-modify-write for partial
 * stripes, whole stripes handed to the committer, reads, truncate,
 * fallocate, flush and fsync, and the recovery at open of what a crash
 * cut short.
 *
 * The generation counter works by reservation: chunk headers always hold
 * a generation at least as high as any record written, so after a crash
 * a reopened file continues above every generation it ever used.
 */
#include "ecfile_internal.h"

#include <errno.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "journal_recovery.h"
#include "log.h"
#include "reader_rules.h"
#include "volume_internal.h"

/* ---- headers and commits ---- */

/* Members that miss this file's writes: failed now, or without a current
 * chunk.  Recorded in the headers so repair knows what to rebuild. */
uint64_t ecfile_missing_mask(ecfile *f)
{
	uint64_t mask = 0;
	for (int mb = 0; mb < f->c.lay.n; mb++)
		if (!stripe_member_usable(&f->c, mb))
			mask |= 1ull << mb;
	return mask;
}

/* The headers with the file's size `size` (f->size, or during a commit
 * the size they hold: see commit_stripes). */
static int write_headers_sized(ecfile *f, bool reserve, uint64_t size)
{
	chunk_header *h = &f->c.hdr;
	uint64_t missed = h->missed | ecfile_missing_mask(f);

	if (missed != h->missed)
		ecfs_log(LOG_INFO, "%s: written while degraded (members missing writes: 0x%llx)",
		         f->path, (unsigned long long)missed);
	h->missed = missed;
	h->size = size;
	/* Strictly increasing per header write (the newest header wins), and
	 * always above every generation a record may carry, the next commit's
	 * (f->gen + 1) included. */
	h->generation = rules_header_generation(h->generation, f->gen, 1, reserve);
	int rc = stripe_write_headers(&f->c);
	if (rc == 0 && size == f->size)
		f->hdr_dirty = false;
	return rc;
}

int ecfile_write_headers(ecfile *f, bool reserve)
{
	return write_headers_sized(f, reserve, f->size);
}

/* Stripes below the written extent the header's size gave at open, past
 * the last one any member's records show written, hold nothing (a file
 * laid out by fallocate or truncate, then written): commits there are
 * first writes, not overwrites.  Looked at once per open, before the
 * first commit below that extent.  A first write lands below the header's
 * durable mark only once a header with a lower mark is durable: its
 * records may reach the disk without its strips (the hole rule, case 2).
 * On an error the stripes stay overwrites. */
static void first_writes(ecfile *f)
{
	uint64_t end = stripe_written_extent(&f->c, f->c.written_end), was = f->c.hdr.durable;

	f->extent_checked = true;
	if (end >= f->c.written_end)
		return;
	if (was > end) {
		f->c.hdr.durable = end;
		int rc = write_headers_sized(f, false, f->c.hdr.size);
		if (rc == 0)
			rc = stripe_sync(&f->c, true);
		if (rc < 0) {
			f->c.hdr.durable = was;
			return;
		}
	}
	f->c.written_end = end;
}

/* Commits a run of whole stripes, whose records say the file is size
 * bytes long; the single path data takes to members.  The committer
 * (unlock) drops the lock around the member I/O: meanwhile only the write
 * path runs, and it touches neither the stripe context nor gen. */
static int commit_stripes(ecfile *f, uint64_t s0, int cnt, const uint8_t *const *data,
                          uint64_t size, bool unlock)
{
	int rc;

	if (f->read_only)
		return -EROFS;
	if (!volume_usable(f->v) || stripe_usable_count(&f->c) < f->c.lay.k)
		return -EIO;
	/* A member slow for writes is left out as a failed one is: the
	 * headers below name it before the commit skips it. */
	uint64_t left = stripe_leave_out_slow(&f->c);
	if (left) {
		ecfs_log(LOG_INFO, "%s: writing past slow members (0x%llx)", f->path,
		         (unsigned long long)left);
		volume_left_out(f->v, f->path, f->id, left);
	}
	/* A commit's header round raises the reservation and names members
	 * that miss the writes; the size stays the one the headers hold (a
	 * flush's or an fsync's, which the writer saw): the file's size in
	 * memory may be a point the kernel's write-back split a write at, and
	 * a crash would leave it. */
	if (!rules_gen_reserved(f->c.hdr.generation, f->gen + 1) ||
	    (ecfile_missing_mask(f) & ~f->c.hdr.missed)) {
		rc = write_headers_sized(f, true, f->c.hdr.size);
		if (rc < 0)
			return rc;
	}
	/* A generation is used only under a durable reservation: a power cut
	 * may keep strips and lose the header after them, and a reopened file
	 * that reused a generation could pair two contents under one.  This
	 * also makes a new file's header durable before its first data. */
	if (!rules_gen_reserved(f->gen_durable, f->gen + 1)) {
		rc = stripe_sync(&f->c, true);
		if (rc < 0)
			return rc;
		f->gen_durable = f->c.hdr.generation;
	}
	if (!f->extent_checked && s0 < f->c.written_end)
		first_writes(f);
	uint64_t gen = ++f->gen;
	if (unlock)
		pthread_mutex_unlock(&f->lock);
	rc = stripe_commit(&f->c, s0, cnt, data, gen, size);
	if (unlock)
		pthread_mutex_lock(&f->lock);
	if (rc == 0 && (ecfile_missing_mask(f) & ~f->c.hdr.missed))  /* one dropped out meanwhile */
		rc = write_headers_sized(f, false, f->c.hdr.size);
	if (rc == 0 && s0 + (uint64_t)cnt > f->disk_end)
		f->disk_end = s0 + (uint64_t)cnt;
	return rc;
}

/* Commits now, after everything queued (so generations stay ordered). */
static int commit_run(ecfile *f, uint64_t s0, int cnt, const uint8_t *const *data)
{
	cm_drain(f->cq);
	return commit_stripes(f, s0, cnt, data, f->size, false);
}

static void strip_pointers(const ecfile *f, const uint8_t *base, int stripes, const uint8_t **p);

/* The committer's callback (committer.h).  The batches queued right
 * behind b that continue it go in the same commit, as far as one commit
 * takes (STRIPE_BATCH stripes of one record group): a committer that fell
 * behind the writer catches up with fewer rounds to the members, and an
 * overwrite with fewer journal barriers. */
static int run_batch(void *owner, cm_batch *b)
{
	ecfile *f = owner;
	const uint8_t *p[STRIPE_MAX_N * STRIPE_BATCH];
	uint64_t room = layout_group_end(&f->c.lay, b->s0) - b->s0, size = b->size;
	int cnt = 0, took = 0;

	if (room > STRIPE_BATCH)
		room = STRIPE_BATCH;
	for (cm_batch *x = b; x && x->s0 == b->s0 + (uint64_t)cnt &&
	                      (uint64_t)(cnt + x->cnt) <= room; x = x->next) {
		strip_pointers(f, x->data, x->cnt, p + (size_t)cnt * f->c.lay.k);
		cnt += x->cnt;
		size = x->size;
		took++;
	}
	int rc = commit_stripes(f, b->s0, cnt, p, size, true);
	return rc < 0 ? rc : took;
}

/* Batches hold up to this much data; a file whose stripe is larger
 * commits synchronously. */
#define ASYNC_BATCH_MAX (2u << 20)

/* Queues a copy of stripes [s0, s0+cnt) (cnt <= f->cq_stripes) from src
 * for the committer.  False if the caller must commit them itself.  Never
 * drops the lock (the caller waited for a free batch). */
static bool commit_async(ecfile *f, uint64_t s0, int cnt, const uint8_t *src)
{
	uint64_t sd = stripe_data(f);
	cm_batch *b;

	if (cnt > f->cq_stripes || !f->cq || !(b = cm_reserve(f->cq)))
		return false;
	memcpy(b->data, src, (size_t)cnt * sd);
	b->s0 = s0;
	b->cnt = cnt;
	b->size = f->size;
	/* Stored as far as the write path is concerned: it must not take
	 * these stripes for holes. */
	if (s0 + (uint64_t)cnt > f->disk_end)
		f->disk_end = s0 + (uint64_t)cnt;
	cm_submit(f->cq, b);
	return true;
}

/* Starts the file's committer queue on its first write. */
static void start_committer(ecfile *f)
{
	uint64_t sd = stripe_data(f);

	if (f->cq || f->cq_stripes < 0)
		return;
	f->cq_stripes = -1; /* tried */
	if (sd > ASYNC_BATCH_MAX)
		return;
	int cnt = (int)(ASYNC_BATCH_MAX / sd);
	if (cnt > STRIPE_BATCH)
		cnt = STRIPE_BATCH;
	f->cq = cm_queue_new(&f->lock, (size_t)cnt * sd, run_batch, f);
	if (f->cq)
		f->cq_stripes = cnt;
}

static int ensure_buffers(ecfile *f)
{
	size_t sd = stripe_data(f);

	if (!f->buf && posix_memalign((void **)&f->buf, 4096, sd))
		f->buf = NULL;
	if (!f->partial && posix_memalign((void **)&f->partial, 4096, sd))
		f->partial = NULL;
	if (!f->buf || !f->partial || stripe_ctx_buffers(&f->c) < 0)
		return -ENOMEM;
	return 0;
}

static void strip_pointers(const ecfile *f, const uint8_t *base, int stripes, const uint8_t **p)
{
	for (int i = 0; i < stripes * f->c.lay.k; i++)
		p[i] = base + (size_t)i * f->c.lay.strip_size;
}

/* Reads the whole data of stored stripe s into dst (k strips). */
static int fetch_stripe(ecfile *f, uint64_t s, uint8_t *dst)
{
	uint8_t *p[STRIPE_MAX_N];

	cm_drain(f->cq); /* s may be on its way */
	if (s >= f->disk_end) {
		memset(dst, 0, stripe_data(f));
		return 0;
	}
	for (int j = 0; j < f->c.lay.k; j++)
		p[j] = dst + (size_t)j * f->c.lay.strip_size;
	return stripe_fetch(&f->c, s, (1ull << f->c.lay.k) - 1, p);
}

/* Completes the buffer with the stored stripe under its dirty bytes, so it
 * holds the whole current stripe. */
static int load_buffer(ecfile *f)
{
	uint8_t *t;
	int rc;

	if (f->loaded)
		return 0;
	rc = fetch_stripe(f, (uint64_t)f->buf_stripe, f->partial);
	if (rc < 0)
		return rc;
	if (f->lo < f->hi)
		memcpy(f->partial + f->lo, f->buf + f->lo, f->hi - f->lo);
	t = f->buf;
	f->buf = f->partial;
	f->partial = t;
	f->loaded = true;
	return 0;
}

static void drop_buffer(ecfile *f)
{
	f->buf_stripe = -1;
	f->lo = f->hi = 0;
	f->loaded = false;
}

/* Commits the dirty bytes of the buffer (read-modify-write unless the
 * buffer holds the whole stripe), through the committer if async.  The
 * buffer stays as a clean copy of the stripe, so reads and small writes
 * that follow need no I/O. */
static int commit_buffer(ecfile *f, bool async)
{
	uint64_t sd = stripe_data(f), s = (uint64_t)f->buf_stripe;
	const uint8_t *p[STRIPE_MAX_N];
	int rc;

	if (f->buf_stripe < 0 || f->lo == f->hi)
		return 0;
	if (f->lo == 0 && f->hi == sd) {
		f->loaded = true;
	} else if (!f->loaded && s >= f->disk_end) {
		/* Nothing stored there: the rest of the stripe is zeros. */
		memset(f->buf, 0, f->lo);
		memset(f->buf + f->hi, 0, sd - f->hi);
		f->loaded = true;
	} else {
		rc = load_buffer(f);
		if (rc < 0)
			return rc;
	}
	if (async && commit_async(f, s, 1, f->buf)) {
		rc = 0;
	} else {
		strip_pointers(f, f->buf, 1, p);
		rc = commit_run(f, s, 1, p);
	}
	if (rc == 0)
		f->lo = f->hi = 0;
	return rc;
}

int ecfile_fetch_stripe(ecfile *f, uint64_t s, uint8_t *dst)
{
	return fetch_stripe(f, s, dst);
}

int ecfile_commit_stripes(ecfile *f, uint64_t s0, int cnt, const uint8_t *const *data)
{
	return commit_run(f, s0, cnt, data);
}

/* ---- data operations ---- */

static void set_size(ecfile *f, uint64_t size)
{
	if (size != f->size) {
		f->size = size;
		f->hdr_dirty = true;
		/* ahead of its headers: a size remembered for stat is stale */
		size_cache_file_changed(volume_sizes(f->v), chunk_file_ident(f->id));
	}
}

/* True if writing [in, in+len) of stripe s through the buffer reads the
 * stored stripe first (read-modify-write of the stripe buffered now, or
 * a gap between dirty ranges). */
static bool write_fetches(const ecfile *f, uint64_t s, uint64_t in, uint64_t len)
{
	if (f->loaded || f->lo == f->hi)
		return false;
	if (f->buf_stripe == (int64_t)s)
		return in > f->hi || in + len < f->lo;
	return f->buf_stripe >= 0 && !(f->lo == 0 && f->hi == stripe_data(f)) &&
	       (uint64_t)f->buf_stripe < f->disk_end;
}

/* Before a step of a write: waits (dropping the lock) until the step can
 * run without dropping it again, so that what it decides from the buffer
 * holds to its end: until the committer is idle if the step reads stored
 * data, else until the batches it may queue are free (a run of whole
 * stripes queues one; a buffered step up to two, the stripe buffered
 * before and the one it completes). */
static void write_settle(ecfile *f, bool whole, uint64_t s, uint64_t in, uint64_t len)
{
	int need = whole ? 1 : 2;

	while (f->cq) {
		if (!whole && write_fetches(f, s, in, len)) {
			if (!cm_busy(f->cq))
				return;
			cm_drain(f->cq);
		} else if (cm_free_slots(f->cq) < need) {
			cm_wait_slots(f->cq, need);
		} else {
			return;
		}
	}
}

/* What a write of [pos, end) may take on each member (space.h): its share
 * of the data, and a record per stripe. */
static uint64_t write_cost(const ecfile *f, uint64_t pos, uint64_t end)
{
	uint64_t sd = stripe_data(f), k = (uint64_t)f->c.lay.k;

	return (end - pos + k - 1) / k + ((end - 1) / sd - pos / sd + 1) * CHUNK_RECORD_SIZE;
}

/* Widens the stripes set aside by this open's fallocates to those of
 * file bytes [pos, end), or moves them there if the two do not meet. */
static void note_room(ecfile *f, uint64_t pos, uint64_t end)
{
	uint64_t from = layout_stripe_of(&f->c.lay, pos), to = layout_stripe_count(&f->c.lay, end);

	if (f->room_from < f->room_to && from <= f->room_to && to >= f->room_from) {
		from = from < f->room_from ? from : f->room_from;
		to = to > f->room_to ? to : f->room_to;
	}
	f->room_from = from;
	f->room_to = to;
}

/* True if [pos, end) lies in stripes a fallocate set room aside for and
 * that hold nothing stored yet: the members have the room, so the write
 * claims none, as fallocate promises (an overwrite's journal or log still
 * claims its own). */
static bool first_writes_in_room(const ecfile *f, uint64_t pos, uint64_t end)
{
	uint64_t first = layout_stripe_of(&f->c.lay, pos);

	return first >= f->disk_end && first >= f->room_from &&
	       layout_stripe_count(&f->c.lay, end) <= f->room_to;
}

/* Writes the whole stripes at the start of [pos, end), pos on a stripe
 * boundary, copied to the committer (or straight from the caller's
 * buffer if there is none).  Returns the bytes taken or a negative errno. */
static int64_t write_whole(ecfile *f, uint64_t pos, uint64_t end, const uint8_t *from)
{
	uint64_t sd = stripe_data(f), s = pos / sd;
	uint64_t cnt = (end - pos) / sd, to_group = layout_group_end(&f->c.lay, s) - s;
	const uint8_t *p[STRIPE_MAX_N * STRIPE_BATCH];
	int rc;

	write_settle(f, true, s, 0, sd);
	if (cnt > STRIPE_BATCH)
		cnt = STRIPE_BATCH;
	if (f->cq && cnt > (uint64_t)f->cq_stripes)
		cnt = (uint64_t)f->cq_stripes;
	if (cnt > to_group)
		cnt = to_group;
	if (f->buf_stripe >= 0 && (uint64_t)f->buf_stripe >= s && (uint64_t)f->buf_stripe < s + cnt)
		drop_buffer(f); /* wholly overwritten */
	uint64_t before = f->size;
	if (pos + cnt * sd > f->size)
		set_size(f, pos + cnt * sd);
	if (commit_async(f, s, (int)cnt, from))
		return (int64_t)(cnt * sd);
	strip_pointers(f, from, (int)cnt, p);
	rc = commit_run(f, s, (int)cnt, p);
	if (rc < 0) {
		set_size(f, before); /* these stripes were not taken */
		return rc;
	}
	return (int64_t)(cnt * sd);
}

ssize_t ecfile_write(ecfile *f, const void *buf, size_t size, off_t off)
{
	const uint8_t *src = buf;
	uint64_t sd, pos = (uint64_t)off, end = (uint64_t)off + size;
	int rc = 0;

	if (off < 0 || end < pos || end > (uint64_t)INT64_MAX)
		return off < 0 ? -EINVAL : -EFBIG;
	if (size == 0)
		return 0;
	volume_check_roots(f->v);
	ecfile_lock(f);
	sd = stripe_data(f);
	if (f->read_only) {
		rc = -EROFS;
		goto out;
	}
	/* An earlier write that failed behind its answer fails this one. */
	rc = cm_take_error(f->cq);
	if (rc < 0)
		goto out;
	/* (While the committer is busy the member states are its own; it
	 * latches the error if too few members take a write.) */
	if (!volume_usable(f->v) ||
	    (!cm_busy(f->cq) && stripe_usable_count(&f->c) < f->c.lay.k)) {
		rc = -EIO;
		goto out;
	}
	if (!first_writes_in_room(f, pos, end))
		rc = volume_claim_space(f->v, write_cost(f, pos, end));
	if (rc == 0)
		rc = ensure_buffers(f);
	start_committer(f);
	while (rc == 0 && pos < end) {
		uint64_t s = pos / sd, in = pos % sd;
		if (in == 0 && end - pos >= sd) {
			/* (a write that is not logged lands after the log) */
			if (ecfile_log_touches(f, pos, end) && (rc = ecfile_log_apply(f)) < 0)
				break;
			int64_t took = write_whole(f, pos, end, src + (pos - (uint64_t)off));
			rc = took < 0 ? (int)took : 0;
			if (took > 0)
				pos += (uint64_t)took;
			continue;
		}
		uint64_t len = (end < (s + 1) * sd ? end : (s + 1) * sd) - pos;
		if (ecfile_log_takes(f, s, pos, len)) {
			rc = ecfile_log_write(f, pos, src + (pos - (uint64_t)off), len);
			if (rc == 0)
				pos += len;
			if (rc != -EAGAIN)
				continue;
			rc = 0;
		}
		if (ecfile_log_touches(f, s * sd, (s + 1) * sd) && (rc = ecfile_log_apply(f)) < 0)
			break;
		write_settle(f, false, s, in, len);
		if (f->buf_stripe != (int64_t)s) {
			rc = commit_buffer(f, true);
			if (rc < 0)
				break;
			drop_buffer(f);
			f->buf_stripe = (int64_t)s;
		} else if (!f->loaded && f->lo < f->hi && (in > f->hi || in + len < f->lo)) {
			/* A gap between dirty ranges: fill it from storage. */
			rc = load_buffer(f);
			if (rc < 0)
				break;
		}
		memcpy(f->buf + in, src + (pos - (uint64_t)off), len);
		if (f->lo == f->hi) {
			f->lo = in;
			f->hi = in + len;
		} else {
			f->lo = in < f->lo ? in : f->lo;
			f->hi = in + len > f->hi ? in + len : f->hi;
		}
		pos += len;
		if (pos > f->size)
			set_size(f, pos);
		/* A stripe completed by a write that ends it (the streaming
		 * case) goes out now; random writes stay buffered. */
		if (f->lo == 0 && f->hi == sd && in + len == sd)
			rc = commit_buffer(f, true);
	}
out:
	ecfile_unlock(f);
	/* Like write(2): what was taken before an error, else the error. */
	if (rc < 0 && pos == (uint64_t)off)
		return rc;
	return (ssize_t)(pos - (uint64_t)off);
}

/* Bytes [in, in + len) of stored stripe s into out: whole strips land in
 * out directly, the partly wanted ones go through f->partial. */
static int read_part(ecfile *f, uint64_t s, uint64_t in, uint64_t len, uint8_t *out)
{
	uint64_t strip = f->c.lay.strip_size, want = 0;
	uint8_t *p[STRIPE_MAX_N];
	int j0 = (int)(in / strip), j1 = (int)((in + len - 1) / strip);

	for (int j = 0; j < f->c.lay.k; j++) {
		uint64_t a = (uint64_t)j * strip;
		p[j] = f->partial + a;
		if (j < j0 || j > j1)
			continue;
		want |= 1ull << j;
		if (a >= in && a + strip <= in + len)
			p[j] = out + (a - in);
	}
	/* The stripe at the file's end is likely stored short, its bytes
	 * spread over every data strip: ask for all of them at once. */
	if (layout_strip_len(&f->c.lay, s, f->size) < strip)
		want = (1ull << f->c.lay.k) - 1;
	for (int j = 0; j < f->c.lay.k; j++)
		if (!(want >> j & 1))
			p[j] = NULL;
	int rc = stripe_fetch_part(&f->c, s, want, p, in, len);
	for (int j = j0; j <= j1 && rc == 0; j++) {
		uint64_t a = (uint64_t)j * strip;
		if (p[j] != f->partial + a)
			continue;
		uint64_t from = a > in ? a : in, to = a + strip < in + len ? a + strip : in + len;
		memcpy(out + (from - in), f->partial + from, to - from);
	}
	return rc;
}

ssize_t ecfile_read(ecfile *f, void *buf, size_t size, off_t off)
{
	uint8_t *dst = buf;
	uint64_t sd, strip, pos = (uint64_t)off, end;
	int rc = 0;

	if (off < 0)
		return -EINVAL;
	volume_check_roots(f->v);
	ecfile_lock(f);
	cm_drain(f->cq); /* reads see every write answered before */
	sd = stripe_data(f);
	strip = f->c.lay.strip_size;
	if (pos >= f->size || size == 0)
		goto out;
	end = pos + size > f->size || pos + size < pos ? f->size : pos + size;
	if (!volume_usable(f->v)) {
		rc = -EIO;
		goto out;
	}
	rc = ensure_buffers(f);
	while (rc == 0 && pos < end) {
		uint64_t s = pos / sd, in = pos % sd;
		uint64_t len = (end < (s + 1) * sd ? end : (s + 1) * sd) - pos;
		uint8_t *out_p = dst + (pos - (uint64_t)off);
		if ((int64_t)s == f->buf_stripe) {
			/* The buffered stripe: served from memory. */
			rc = load_buffer(f);
			if (rc == 0) {
				memcpy(out_p, f->buf + in, len);
				pos += len;
			}
			continue;
		}
		if (s >= f->disk_end) {
			memset(out_p, 0, len);
			pos += len;
			continue;
		}
		if (in == 0 && len == sd) {
			/* A run of whole stripes: one read per member, straight
			 * into the caller's buffer. */
			uint64_t cnt = (end - pos) / sd;
			uint64_t to_group = layout_group_end(&f->c.lay, s) - s;
			uint8_t *run[STRIPE_MAX_N * STRIPE_FETCH_RUN];
			if (cnt > STRIPE_FETCH_RUN)
				cnt = STRIPE_FETCH_RUN;
			if (cnt > to_group)
				cnt = to_group;
			if (cnt > f->disk_end - s)
				cnt = f->disk_end - s;
			if (f->buf_stripe > (int64_t)s && (uint64_t)f->buf_stripe < s + cnt)
				cnt = (uint64_t)f->buf_stripe - s;
			for (uint64_t i = 0; i < cnt * (uint64_t)f->c.lay.k; i++)
				run[i] = out_p + i * strip;
			rc = stripe_fetch_run(&f->c, s, (int)cnt, run);
			if (rc == 0)
				pos += cnt * sd;
			continue;
		}
		rc = read_part(f, s, in, len, out_p);
		if (rc < 0)
			break;
		pos += len;
	}
	if (rc == 0)
		rc = ecfile_log_overlay(f, dst, (uint64_t)off, pos - (uint64_t)off);
out:
	ecfile_unlock(f);
	/* An error anywhere fails the request: through FUSE a short read
	 * means end of file, and the kernel would zero-fill the rest of the
	 * page (silently wrong data past a stripe that cannot be decoded). */
	if (rc < 0)
		return rc;
	return (ssize_t)(pos - (uint64_t)off);
}

/* Cuts the file to size bytes (at most its size; nothing queued).
 * Crash-safe order: the last stripe's tail is zeroed (a journaled
 * overwrite), then the new size reaches every header and is synced, and
 * only then are the records past it zeroed and the chunks shortened, and
 * that is synced before a first write may land there.  A crash between
 * leaves the new size with leftovers past it, which ecfile_recover_locked() cuts
 * at the next open; never the old size over half-zeroed stripes.  force:
 * cut even if nothing is known stored past size (recovery). */
static int cut_locked(ecfile *f, uint64_t size, bool force)
{
	uint64_t sd = stripe_data(f);
	uint64_t s = size / sd, in = size % sd, first_gone = in ? s + 1 : s;
	int rc;

	if (in && s < f->disk_end) {
		/* Zero the cut-off tail of the last stripe, so bytes past the end
		 * read as zeros if the file grows again. */
		const uint8_t *p[STRIPE_MAX_N];
		rc = fetch_stripe(f, s, f->partial);
		if (rc < 0)
			return rc;
		memset(f->partial + in, 0, sd - in);
		f->size = size;
		strip_pointers(f, f->partial, 1, p);
		rc = commit_run(f, s, 1, p);
		if (rc < 0)
			return rc;
	}
	f->size = size;
	if (f->c.hdr.durable > first_gone)
		f->c.hdr.durable = first_gone;
	rc = ecfile_write_headers(f, false);
	/* With nothing stored cut, only room a fallocate of this open set
	 * aside past the end is given back. */
	bool cuts = first_gone < f->disk_end || force;
	if (rc < 0 || (!cuts && first_gone >= f->room_to))
		return rc;
	if (f->room_to > first_gone)
		f->room_to = first_gone > f->room_from ? first_gone : f->room_from;
	rc = stripe_sync(&f->c, true);
	if (rc == 0)
		rc = stripe_truncate(&f->c, first_gone);
	if (rc == 0)
		rc = stripe_sync(&f->c, true);
	if (rc == 0 && cuts)
		f->disk_end = f->c.written_end = first_gone;
	return rc;
}

/* Brings a file that a crash interrupted back to old-or-new content
 * before anything reads or writes it: stripes whose journaled overwrite
 * was cut short are rolled forward from the journal, and leftovers past
 * the size (a truncate or an extending write cut short) are cut.  Errors
 * are logged, not returned: what cannot be fixed now reads as it can. */
void ecfile_recover_locked(ecfile *f)
{
	uint64_t rolled = 0;
	bool dirty = false;
	int rc;

	if (f->read_only) {
		if (journal_recover(&f->c, false, &rolled) == 0 && rolled)
			ecfs_log(LOG_WARNING, "%s: %llu stripe(s) of an overwrite cut short by a crash "
			         "need the journal rolled forward: mount read-write or run ecfs-fsck",
			         f->path, (unsigned long long)rolled);
		if (ecfile_log_replay(f, false, &rolled) == 0 && rolled)
			ecfs_log(LOG_WARNING, "%s: %llu small write(s) in its log are not in its "
			         "stripes: mount read-write or run ecfs-fsck", f->path,
			         (unsigned long long)rolled);
		return;
	}
	rc = ensure_buffers(f);
	if (rc == 0)
		rc = journal_recover(&f->c, true, &rolled);
	if (rc == 0)
		rc = ecfile_log_replay(f, true, &rolled);
	if (rc == 0)
		rc = stripe_scan_end(&f->c, f->size, &dirty);
	if (rc == 0 && dirty) {
		ecfs_log(LOG_NOTICE, "%s: cutting what a crash left past the end of the file",
		         f->path);
		rc = cut_locked(f, f->size, true);
	}
	if (rc < 0)
		ecfs_log(LOG_WARNING, "%s: recovery after a crash failed: %s", f->path,
		         g_strerror(-rc));
}

int ecfile_truncate_locked(ecfile *f, uint64_t size)
{
	int rc;

	if (f->read_only)
		return -EROFS;
	if (!volume_usable(f->v))
		return -EIO;
	cm_drain(f->cq);
	rc = ensure_buffers(f);
	if (rc == 0)
		rc = ecfile_log_apply(f);
	if (rc == 0)
		rc = commit_buffer(f, false);
	if (rc < 0)
		return rc;
	drop_buffer(f); /* simpler than cutting the cached stripe too */
	if (size < f->size)
		return cut_locked(f, size, false);
	f->size = size;
	return ecfile_write_headers(f, false);
}

int ecfile_truncate(ecfile *f, off_t size)
{
	int rc;

	if (size < 0)
		return -EINVAL;
	ecfile_lock(f);
	rc = ecfile_truncate_locked(f, (uint64_t)size);
	ecfile_unlock(f);
	return rc;
}

int ecfile_truncate_path(volume *v, const char *path, off_t size)
{
	ecfile *f;
	int rc = ecfile_open(v, path, 0, &f);

	if (rc < 0)
		return rc;
	rc = ecfile_truncate(f, size);
	int rc2 = ecfile_release(f);
	return rc < 0 ? rc : rc2;
}

int ecfile_fallocate(ecfile *f, int mode, off_t off, off_t len)
{
	int rc = 0;

	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if (off < 0 || len <= 0)
		return -EINVAL;
	uint64_t end = (uint64_t)off + (uint64_t)len;
	rc = volume_claim_space(f->v, write_cost(f, (uint64_t)off, end));
	if (rc < 0)
		return rc;
	ecfile_lock(f);
	if (f->read_only)
		rc = -EROFS;
	/* The members set the stripes' room aside, as fallocate promises: the
	 * writes into the range do not fail for space, and pay no page
	 * allocation of their own. */
	if (rc == 0) {
		cm_drain(f->cq); /* the stripe context is the committer's meanwhile */
		rc = stripe_reserve(&f->c, (uint64_t)off, end);
	}
	if (rc == 0)
		note_room(f, (uint64_t)off, end);
	if (rc == 0 && !(mode & FALLOC_FL_KEEP_SIZE) && end > f->size)
		rc = ecfile_truncate_locked(f, end);
	ecfile_unlock(f);
	return rc;
}

static int flush_locked(ecfile *f)
{
	int rc;

	cm_drain(f->cq);
	rc = cm_take_error(f->cq);
	if (rc == 0 && f->buf_stripe >= 0 && f->lo < f->hi)
		rc = commit_buffer(f, false);
	if (rc == 0 && f->hdr_dirty && !f->read_only)
		rc = ecfile_write_headers(f, false);
	return rc;
}

int ecfile_flush(ecfile *f)
{
	ecfile_lock(f);
	int rc = flush_locked(f);
	ecfile_unlock(f);
	return rc;
}

off_t ecfile_seek_data(ecfile *f, off_t off, bool data)
{
	ecfile_lock(f);
	/* What is buffered is data too: it reaches its records first. */
	int rc = flush_locked(f);
	cm_drain(f->cq); /* the stripe context is the committer's meanwhile */
	uint64_t size = f->size, sd = stripe_data(f);
	if (rc == 0 && (off < 0 || (uint64_t)off >= size))
		rc = -ENXIO;
	if (rc < 0) {
		ecfile_unlock(f);
		return rc;
	}
	uint64_t end = layout_stripe_count(&f->c.lay, size);
	uint64_t s = stripe_find_written(&f->c, (uint64_t)off / sd, end, data);
	ecfile_unlock(f);
	if (s == end)
		return data ? -ENXIO : (off_t)size;
	uint64_t at = s * sd > (uint64_t)off ? s * sd : (uint64_t)off;
	return (off_t)(at < size ? at : size);
}

/* The durable mark an fsync leaves: every stored stripe.  Past the
 * written extent nothing is stored, so first writes may land there
 * without lowering the mark again (first_writes). */
static uint64_t synced_mark(const ecfile *f)
{
	uint64_t durable = layout_stripe_count(&f->c.lay, f->size);

	return durable < f->c.written_end ? durable : f->c.written_end;
}

int ecfile_fsync(ecfile *f, int datasync)
{
	int rc;

	ecfile_lock(f);
	rc = flush_locked(f);
	/* After only logged writes, the log copies' sync is all it takes. */
	bool clean = false;
	if (rc == 0)
		rc = ecfile_log_sync(f, &clean);
	if (rc == 0 && clean && synced_mark(f) == f->c.hdr.durable) {
		ecfile_unlock(f);
		return 0;
	}
	if (rc == 0 && !f->read_only)
		rc = ecfile_write_headers(f, false);
	if (rc == 0)
		rc = stripe_sync(&f->c, datasync != 0);
	/* Every stored stripe is durable now: the next header write says so,
	 * and a stripe below that mark is never taken for a first write cut
	 * short (the hole rule, docs/FORMAT.md 4.3). */
	uint64_t durable = synced_mark(f);
	if (rc == 0 && durable != f->c.hdr.durable) {
		f->c.hdr.durable = durable;
		f->hdr_dirty = true; /* written at the next flush, unsynced */
	}
	if (rc == 0)
		ecfile_log_synced(f);
	ecfile_unlock(f);
	return rc;
}
