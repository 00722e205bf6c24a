/* SPDX-License-Identifier: MIT */
/*
 * The small-write log of an open file (docs/DESIGN.md section 4, "The
 * small-write log"; its bytes: smalllog.h, docs/FORMAT.md section 12).
 *
 * With -o tune.small_log=on, an overwrite inside the file that does not
 * cover whole stripes is appended as a record to the file's log,
 * `.ecfs/log/<file id hex>`, on m+1 members in parallel (each copy
 * complete, so the log survives m lost members as a stripe does; the
 * last write is held until the next does not continue it).  The bytes
 * stay in the copies: memory holds an extent map (the overlay) of where
 * each logged byte is in them, which every read lays over what the
 * stripes hold, reading each record it needs back from a copy and
 * checking it.  An fsync with only the log changed is one fdatasync of
 * the log copies.  The log is applied to the stripes, through the
 * ordinary (journaled) commit path, when the copies pass their bound, at the last
 * close or a parking, and before anything else touches a stripe it covers
 * (a write that is not logged, a truncate, the heal): the stripes are
 * committed and synced, and only then the log copies emptied and synced,
 * so that a replay can never bring logged bytes back over a newer write.
 *
 * Invariant kept with ecfile_io.c: the stripe in the write buffer never
 * has bytes in the overlay (a write to it goes through the buffer, and a
 * buffered write to a logged stripe applies the log first).
 */
#include "ecfile_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "smalllog_replay.h"
#include "volume_internal.h"
#include "volume_paths.h"

/* The copies' bound is -o tune.small_log_mib, and the records' count
 * that over 2 KiB (the overlay's memory: a record adds at most two
 * extents, about a hundred bytes each with its node): past either the
 * log is applied.
 * Each application reads and rewrites every stripe the log covers, so
 * the larger the log the fewer times a random write's stripe is
 * rewritten; the logged bytes are in the copies, not in memory. */
#define RECORDS_PER_MIB 512

/* Where logged bytes are: a piece of a record in the copies, or (a
 * replay's records, the write held while the log is applied) memory. */
typedef struct log_extent {
	uint64_t off;       /* in the file */
	uint64_t rec;       /* where its record starts in the copies */
	const uint8_t *mem; /* or its bytes in memory; NULL */
	struct log_extent *next_free;
	uint32_t len;
	uint32_t skip;      /* bytes of its record's data before it */
	uint32_t rec_len;   /* its record's data bytes */
} log_extent;

/* Extents come from slabs, kept until the log is freed: no allocation
 * per write once the first slabs are there. */
#define SLAB_EXTENTS 1024
typedef struct ext_slab {
	struct ext_slab *next;
	log_extent e[SLAB_EXTENTS];
} ext_slab;

struct ecfile_log {
	uint64_t members;     /* where the copies of this epoch are; 0: no epoch yet */
	int fd[STRIPE_MAX_N];
	uint64_t epoch;
	uint64_t seq;         /* of the last record appended */
	uint64_t end;         /* where the next record goes on every copy */
	bool unsynced;        /* appends since the copies were last synced */
	/* The last write logged, not appended yet: a write the kernel split
	 * (it ends a request at the first page it does not fill) continues
	 * it, and goes in the same record, so that a replay never applies
	 * part of one write to a stripe.  Appended at the next write that
	 * does not continue it, and at fsync; reads lay it over the map. */
	uint8_t *pend;
	uint64_t pend_off, pend_size;
	uint32_t pend_len;
	GTree *map;           /* offset -> log_extent, disjoint */
	uint64_t bytes;       /* in the map */
	ext_slab *slabs;      /* the first has slab_used taken */
	int slab_used;
	log_extent *free;     /* extents given back */
	/* The append's buffer, and the last record read back (at rec_at,
	 * checked; UINT64_MAX: none). */
	uint8_t *abuf, *rbuf;
	size_t acap, rcap;
	uint64_t rec_at;
	smalllog_found *replayed; /* a replay's records, until applied */
	GSList *held;         /* held writes' bytes, until applied */
	/* The file's generation and header generation at its last full
	 * fsync: unchanged, the chunks hold nothing unsynced. */
	uint64_t synced_gen, synced_hdr_gen;
};

static int cmp_off(gconstpointer a, gconstpointer b, gpointer unused)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	(void)unused;
	return x < y ? -1 : x > y;
}

static ecfile_log *log_get(ecfile *f)
{
	if (!f->log) {
		f->log = g_new0(ecfile_log, 1);
		f->log->map = g_tree_new_full(cmp_off, NULL, NULL, NULL);
		f->log->rec_at = UINT64_MAX;
	}
	return f->log;
}

/* ---- the overlay ---- */

/* The first extent that may reach past off: the one before the first
 * that starts at or after it. */
static GTreeNode *first_from(GTree *map, uint64_t off)
{
	GTreeNode *n = g_tree_lower_bound(map, &off);
	GTreeNode *p = n ? g_tree_node_previous(n) : g_tree_node_last(map);

	if (p) {
		const log_extent *e = g_tree_node_value(p);
		if (e->off + e->len > off)
			return p;
	}
	return n;
}

static log_extent *extent_new(ecfile_log *l, const log_extent *from)
{
	log_extent *e = l->free;

	if (e) {
		l->free = e->next_free;
	} else {
		if (!l->slabs || l->slab_used == SLAB_EXTENTS) {
			ext_slab *sl = g_new(ext_slab, 1);
			sl->next = l->slabs;
			l->slabs = sl;
			l->slab_used = 0;
		}
		e = &l->slabs->e[l->slab_used++];
	}
	*e = *from;
	return e;
}

static void extent_free(ecfile_log *l, log_extent *e)
{
	e->next_free = l->free;
	l->free = e;
}

/* [a, b) of extent e (within it) as an extent of its own. */
static log_extent piece(const log_extent *e, uint64_t a, uint64_t b)
{
	log_extent p = *e;
	uint32_t d = (uint32_t)(a - e->off);

	p.off = a;
	p.len = (uint32_t)(b - a);
	if (p.mem)
		p.mem += d;
	else
		p.skip += d;
	return p;
}

static void map_put(ecfile_log *l, log_extent *e)
{
	g_tree_insert(l->map, &e->off, e);
	l->bytes += e->len;
}

/* Puts x's bytes in the overlay over what it held there. */
static void overlay_insert(ecfile_log *l, const log_extent *x)
{
	uint64_t off = x->off, end = x->off + x->len;
	GTreeNode *n;

	while ((n = first_from(l->map, off))) {
		log_extent *e = g_tree_node_value(n);
		uint64_t e_end = e->off + e->len;
		if (e->off >= end)
			break;
		g_tree_steal(l->map, &e->off);
		l->bytes -= e->len;
		if (e->off < off) {
			log_extent p = piece(e, e->off, off);
			map_put(l, extent_new(l, &p));
		}
		if (e_end > end) {
			log_extent p = piece(e, end, e_end);
			map_put(l, extent_new(l, &p));
		}
		extent_free(l, e);
	}
	map_put(l, extent_new(l, x));
}

static void overlay_clear(ecfile_log *l)
{
	g_tree_remove_all(l->map);
	l->bytes = 0;
	l->free = NULL;
	l->slab_used = 0;
	while (l->slabs && l->slabs->next) {
		ext_slab *sl = l->slabs;
		l->slabs = sl->next;
		g_free(sl);
	}
	l->rec_at = UINT64_MAX;
	g_slist_free_full(l->held, g_free);
	l->held = NULL;
	if (l->replayed) {
		smalllog_found_free(l->replayed);
		g_free(l->replayed);
		l->replayed = NULL;
	}
}

static int record_load(ecfile *f, const log_extent *e);

int ecfile_log_overlay(ecfile *f, uint8_t *dst, uint64_t off, uint64_t len)
{
	ecfile_log *l = f->log;
	uint64_t end = off + len;

	if (!l || !len)
		return 0;
	for (GTreeNode *n = l->bytes ? first_from(l->map, off) : NULL; n;
	     n = g_tree_node_next(n)) {
		const log_extent *e = g_tree_node_value(n);
		if (e->off >= end)
			break;
		uint64_t a = e->off > off ? e->off : off;
		uint64_t b = e->off + e->len < end ? e->off + e->len : end;
		if (a >= b)
			continue;
		const uint8_t *src = e->mem;
		if (!src) {
			int rc = record_load(f, e);
			if (rc < 0)
				return rc;
			src = l->rbuf + SMALLLOG_RECORD_SIZE + e->skip;
		}
		memcpy(dst + (a - off), src + (a - e->off), b - a);
	}
	/* The held write is the newest. */
	uint64_t a = l->pend_off > off ? l->pend_off : off;
	uint64_t b = l->pend_off + l->pend_len < end ? l->pend_off + l->pend_len : end;
	if (l->pend_len && a < b)
		memcpy(dst + (a - off), l->pend + (a - l->pend_off), b - a);
	return 0;
}

bool ecfile_log_touches(ecfile *f, uint64_t from, uint64_t to)
{
	ecfile_log *l = f->log;

	if (!l || from >= to)
		return false;
	if (l->pend_len && l->pend_off < to && l->pend_off + l->pend_len > from)
		return true;
	if (!l->bytes)
		return false;
	GTreeNode *n = first_from(l->map, from);
	return n && ((const log_extent *)g_tree_node_value(n))->off < to;
}

/* ---- the copies on the members ---- */

enum copy_op { COPY_OPEN, COPY_APPEND, COPY_SYNC, COPY_EMPTY, COPY_READ };

typedef struct copy_task {
	ecfile *f;
	int member;
	enum copy_op op;
	const uint8_t *buf;
	uint8_t *out;  /* COPY_READ: len bytes from at */
	uint64_t at;
	size_t len;
	int err;
} copy_task;

static void copy_run(void *arg)
{
	copy_task *t = arg;
	volume *v = t->f->v;
	ecfile_log *l = t->f->log;
	int mb = t->member;
	char name[SMALLLOG_PATH_SIZE];
	ssize_t r;

	switch (t->op) {
	case COPY_OPEN:
		smalllog_path(t->f->id, name);
		r = volume_meta_open_made(v, mb, volume_root_fd(v, mb), SMALLLOG_DIR, name);
		if (r >= 0)
			l->fd[mb] = (int)r;
		break;
	case COPY_APPEND:
		r = mop_pwrite(v, mb, l->fd[mb], t->buf, t->len, (off_t)l->end);
		if (r >= 0 && (size_t)r != t->len)
			r = -EIO;
		break;
	case COPY_SYNC:
		r = mop_fsync(v, mb, l->fd[mb], true);
		break;
	case COPY_READ:
		r = mop_pread_lent(v, mb, l->fd[mb], t->out, t->len, (off_t)t->at);
		if (r >= 0 && (size_t)r != t->len)
			r = -EIO;
		break;
	default: /* the header stays: its epoch outranks older copies' */
		r = mop_ftruncate(v, mb, l->fd[mb], SMALLLOG_HEADER_SIZE);
		if (r == 0)
			r = mop_fsync(v, mb, l->fd[mb], true);
		break;
	}
	t->err = r < 0 ? (int)r : 0;
}

/* Runs op on every member of mask in parallel, a batch of small calls.
 * A member that fails is out of this file's writes (as in a commit; not
 * for a read, nor when it is only full) and its bit is returned.
 * Appends, syncs and reads of members whose calls cannot wait (tmpfs,
 * ramfs) run on the calling thread, while the relay or the workers take
 * the others (memberio_run_stage): for a 4 KiB record the hand-off would
 * cost more than the copy. */
static uint64_t copies_run(ecfile *f, uint64_t mask, enum copy_op op, const uint8_t *buf,
                           size_t len, uint64_t at, bool *stuck)
{
	copy_task tasks[STRIPE_MAX_N];
	void *args[STRIPE_MAX_N] = { 0 };
	uint64_t failed = 0, here = 0, gone;

	for (int mb = 0; mb < f->c.lay.n; mb++) {
		if (!(mask >> mb & 1))
			continue;
		tasks[mb] = (copy_task){ .f = f, .member = mb, .op = op, .buf = buf, .len = len };
		if (op == COPY_READ) {
			tasks[mb].out = (uint8_t *)buf; /* the caller's own, lent */
			tasks[mb].at = at;
		}
		args[mb] = &tasks[mb];
		if (op == COPY_READ ? mop_reads_here(f->v, mb) :
		                      op != COPY_OPEN && mop_writes_here(f->v, mb))
			here |= 1ull << mb;
	}
	uint64_t lost = memberio_run_stage(volume_memberio(f->v), true, f->c.lay.n, copy_run, args,
	                                   here, &gone);
	if (stuck)
		*stuck = gone != 0;
	for (int mb = 0; mb < f->c.lay.n; mb++) {
		if (!(mask >> mb & 1))
			continue;
		int err = lost >> mb & 1 ? -ETIMEDOUT : tasks[mb].err;
		if (err == 0)
			continue;
		failed |= 1ull << mb;
		if (op == COPY_READ)
			continue;
		volume_member_io_error(f->v, mb, -err, "small-write log", VOLUME_IO_WRITE);
		if (!space_error(err)) /* a full member stays in (space.h) */
			f->c.state[mb] = CHUNK_FAILED;
	}
	return failed;
}

static void copies_close(ecfile *f)
{
	ecfile_log *l = f->log;

	for (int mb = 0; mb < f->c.lay.n; mb++)
		if (l->members >> mb & 1 && l->fd[mb] >= 0)
			volume_member_close(f->v, mb, l->fd[mb]);
	l->members = 0;
}

/* The m+1 members of a new epoch: the usable ones from the file's
 * position 0 on, by its rotation.  0 if fewer are usable. */
static uint64_t pick_members(ecfile *f)
{
	int n = f->c.lay.n, want = f->c.lay.m + 1;
	uint64_t mask = 0;

	for (int i = 0; i < n && want > 0; i++) {
		int mb = ((int)f->c.hdr.rotation + i) % n;
		if (stripe_member_usable(&f->c, mb)) {
			mask |= 1ull << mb;
			want--;
		}
	}
	return want ? 0 : mask;
}

/* True while every member of the epoch can take the log's writes. */
static bool members_usable(ecfile *f)
{
	for (int mb = 0; mb < f->c.lay.n; mb++)
		if (f->log->members >> mb & 1 && !stripe_member_usable(&f->c, mb))
			return false;
	return true;
}

/* Starts an epoch: opens (creates) the copies on the members picked; the
 * first record goes at offset 0 with the new header, over whatever an
 * older epoch left (its records do not verify under the new epoch, which
 * is above every generation used so far and so above every older
 * epoch).  0, or -EAGAIN if the log cannot be used now. */
static int epoch_start(ecfile *f)
{
	ecfile_log *l = f->log;
	uint64_t mask = pick_members(f);

	if (!mask)
		return -EAGAIN;
	for (int mb = 0; mb < f->c.lay.n; mb++)
		l->fd[mb] = -1;
	l->members = mask;
	volume_set_journals_none(f->v, false); /* before a copy can hold a record */
	uint64_t failed = copies_run(f, mask, COPY_OPEN, NULL, 0, 0, NULL);
	if (failed) {
		copies_close(f);
		return -EAGAIN;
	}
	l->epoch = f->gen + 1;
	l->seq = 0;
	l->end = 0;
	return 0;
}

/* The log header of this epoch, as the records' sums bind it. */
static void header_of(ecfile *f, smalllog_header *h)
{
	memset(h, 0, sizeof(*h));
	h->epoch = f->log->epoch;
	h->checksum = (uint16_t)f->c.hdr.checksum;
	memcpy(h->volume_uuid, f->c.hdr.volume_uuid, 16);
	memcpy(h->file_id, f->c.hdr.file_id, 16);
}

/* Grows *buf (capacity *cap) to len bytes, its contents dropped. */
static uint8_t *scratch(uint8_t **buf, size_t *cap, size_t len)
{
	if (*cap < len) {
		free(*buf);
		*buf = g_malloc(len);
		*cap = len;
	}
	return *buf;
}

/* A scratch buffer lent to a member call that was given up (stuck): the
 * call may still use it, so it is kept for good and a new one made at the
 * next use. */
static void scratch_lost(uint8_t **buf, size_t *cap, bool stuck)
{
	if (!stuck)
		return;
	mio_free_or_keep(*buf, true);
	*buf = NULL;
	*cap = 0;
}

/* Reads the record of extent e back from a copy of the epoch into
 * l->rbuf and checks it (its header, place and sum), as a replay would:
 * a copy that cannot be read or does not verify is passed over for the
 * next.  -EIO if no copy holds it. */
static int record_load(ecfile *f, const log_extent *e)
{
	ecfile_log *l = f->log;
	size_t len = SMALLLOG_RECORD_SIZE + e->rec_len;
	smalllog_header h;

	if (l->rec_at == e->rec)
		return 0;
	l->rec_at = UINT64_MAX;
	header_of(f, &h);
	for (int mb = 0; mb < f->c.lay.n; mb++) {
		smalllog_record r;
		bool stuck = false;
		if (!(l->members >> mb & 1) || !stripe_member_usable(&f->c, mb))
			continue;
		uint8_t *buf = scratch(&l->rbuf, &l->rcap, len);
		uint64_t failed = copies_run(f, 1ull << mb, COPY_READ, buf, len, e->rec, &stuck);
		scratch_lost(&l->rbuf, &l->rcap, stuck); /* the worker may still write it */
		if (failed)
			continue;
		if (smalllog_record_decode(buf, &r, NULL) == 0 && r.length == e->rec_len &&
		    r.offset + e->skip == e->off &&
		    smalllog_record_verify(f->c.sum, &h, &r, buf + SMALLLOG_RECORD_SIZE)) {
			l->rec_at = e->rec;
			return 0;
		}
		ecfs_log(LOG_WARNING, "%s: member %d's small-write log does not verify at %llu",
		         f->path, mb, (unsigned long long)e->rec);
	}
	ecfs_log(LOG_ERR, "%s: no copy of its small-write log holds the record at %llu", f->path,
	         (unsigned long long)e->rec);
	return -EIO;
}

/* ---- apply and retire ---- */

/* Commits the stripes [s0, s0+cnt) that the overlay covers: each read
 * (read-modify-write), the overlay laid over it, all committed at once. */
static int apply_run(ecfile *f, uint64_t s0, int cnt, uint8_t *buf)
{
	uint64_t sd = stripe_data(f);
	const uint8_t *p[STRIPE_MAX_N * STRIPE_BATCH];

	for (int i = 0; i < cnt; i++) {
		int rc = ecfile_fetch_stripe(f, s0 + (uint64_t)i, buf + (size_t)i * sd);
		if (rc < 0)
			return rc;
	}
	int rc = ecfile_log_overlay(f, buf, s0 * sd, (uint64_t)cnt * sd);
	if (rc < 0)
		return rc;
	for (int i = 0; i < cnt * f->c.lay.k; i++)
		p[i] = buf + (size_t)i * f->c.lay.strip_size;
	return ecfile_commit_stripes(f, s0, cnt, p);
}

/* The next run of stripes the overlay covers from stripe *s on:
 * consecutive, in one record group, at most STRIPE_BATCH.  False when
 * there is none. */
static bool next_run(ecfile *f, uint64_t *s, int *cnt)
{
	uint64_t sd = stripe_data(f);
	GTreeNode *n = first_from(f->log->map, *s * sd);

	if (!n)
		return false;
	const log_extent *e = g_tree_node_value(n);
	uint64_t s0 = e->off / sd > *s ? e->off / sd : *s;
	uint64_t limit = layout_group_end(&f->c.lay, s0);
	uint64_t last = s0;

	if (limit > s0 + STRIPE_BATCH)
		limit = s0 + STRIPE_BATCH;
	for (; n; n = g_tree_node_next(n)) {
		e = g_tree_node_value(n);
		uint64_t a = e->off / sd, b = (e->off + e->len - 1) / sd;
		if (a > last + 1 || a >= limit)
			break;
		last = b < limit ? (b > last ? b : last) : limit - 1;
	}
	*s = s0;
	*cnt = (int)(last - s0 + 1);
	return true;
}

int ecfile_log_apply(ecfile *f)
{
	ecfile_log *l = f->log;
	uint8_t *buf = NULL;
	uint64_t s = 0;
	int cnt, rc = 0;

	if (!l || (!l->bytes && !l->members && !l->pend_len))
		return 0;
	if (l->pend_len) {
		/* The held write joins the map, in memory of its own until the
		 * map is cleared (the apply may fail and be tried again). */
		uint8_t *copy = g_memdup2(l->pend, l->pend_len);
		log_extent x = { .off = l->pend_off, .mem = copy, .len = l->pend_len };
		l->held = g_slist_prepend(l->held, copy);
		overlay_insert(l, &x);
		l->pend_len = 0;
	}
	if (l->bytes) {
		if (posix_memalign((void **)&buf, 4096, stripe_data(f) * STRIPE_BATCH))
			return -ENOMEM;
		while (rc == 0 && next_run(f, &s, &cnt)) {
			rc = apply_run(f, s, cnt, buf);
			s += (uint64_t)cnt;
		}
		free(buf);
		/* The stripes (and a size a replay raised) durable before the
		 * log is emptied. */
		if (rc == 0 && f->hdr_dirty)
			rc = ecfile_write_headers(f, false);
		if (rc == 0)
			rc = stripe_sync(&f->c, true);
		if (rc < 0) {
			ecfs_log(LOG_WARNING, "%s: cannot apply its small-write log: %s", f->path,
			         g_strerror(-rc));
			return rc;
		}
	}
	if (l->members && l->end) {
		/* Emptied and synced on every copy before anything else may
		 * write where the log did; a copy that fails is out of the
		 * file's writes, so its member is stale and its copy ignored. */
		copies_run(f, l->members, COPY_EMPTY, NULL, 0, 0, NULL);
	}
	copies_close(f);
	overlay_clear(l);
	l->unsynced = false;
	return 0;
}

/* ---- replay ---- */

int ecfile_log_replay(ecfile *f, bool write, uint64_t *records)
{
	smalllog_found found;
	int rc = smalllog_collect(&f->c, &found);

	*records = (uint64_t)found.count;
	if (rc < 0 || !found.count || !write) {
		smalllog_found_free(&found);
		return rc;
	}
	ecfile_log *l = log_get(f);
	for (int i = 0; i < found.count; i++) {
		log_extent x = { .off = found.recs[i].offset, .mem = found.data[i],
			         .len = found.recs[i].length };
		overlay_insert(l, &x);
	}
	uint64_t size = found.recs[found.count - 1].size;
	if (size > f->size) {
		f->size = size;
		f->hdr_dirty = true;
	}
	/* The copies of the newest epoch are emptied once the stripes hold
	 * the records (older epochs' copies never count again). */
	for (int mb = 0; mb < f->c.lay.n; mb++)
		l->fd[mb] = -1;
	l->members = found.holders;
	l->members &= ~copies_run(f, found.holders, COPY_OPEN, NULL, 0, 0, NULL);
	l->end = SMALLLOG_HEADER_SIZE;
	/* The map points into the records read: kept until applied. */
	l->replayed = g_memdup2(&found, sizeof(found));
	return ecfile_log_apply(f);
}

int ecfile_replay_log(volume *v, const char *path)
{
	ecfile *f;
	int rc = ecfile_open(v, path, 0, &f);

	if (rc < 0)
		return rc;
	ecfile_lock(f);
	if (f->read_only)
		rc = -EROFS;
	else if (f->log && f->log->bytes)
		rc = -EIO; /* the replay at open could not apply it (logged) */
	ecfile_unlock(f);
	int rc2 = ecfile_release(f);
	return rc < 0 ? rc : rc2;
}

/* ---- writes, fsync, the end ---- */

bool ecfile_log_takes(ecfile *f, uint64_t s, uint64_t pos, uint64_t len)
{
	if (f->read_only || !volume_settings(f->v)->small_log || len > SMALLLOG_DATA_MAX)
		return false;
	/* A write drops the file's capability, which the kernel leaves to us
	 * for a direct write: the members' kernels drop it from a chunk that
	 * is written, and a logged write writes no chunk until applied. */
	if (volume_attr_marked(f->v, VOLUME_ATTR_CAPS))
		return false;
	/* Overwrites of stored stripes other than the buffered one. */
	return (int64_t)s != f->buf_stripe && s < f->disk_end && pos + len <= f->size;
}

/* Appends the record of [pos, pos+len), written when the file was size
 * bytes long, to every copy. */
static int append(ecfile *f, uint64_t pos, const uint8_t *src, uint64_t len, uint64_t size)
{
	ecfile_log *l = f->log;
	smalllog_header h;
	smalllog_record r = { .length = (uint32_t)len, .epoch = l->epoch, .seq = l->seq + 1,
	                      .offset = pos, .size = size };
	size_t head = l->end ? 0 : SMALLLOG_HEADER_SIZE;
	size_t total = head + SMALLLOG_RECORD_SIZE + len;
	uint8_t *buf = scratch(&l->abuf, &l->acap, total);
	bool stuck = false;

	header_of(f, &h);
	if (head)
		smalllog_header_encode(&h, buf);
	memcpy(buf + head + SMALLLOG_RECORD_SIZE, src, len);
	int rc = smalllog_record_encode(f->c.sum, &h, &r, buf + head + SMALLLOG_RECORD_SIZE,
	                                buf + head);
	if (rc == 0 && copies_run(f, l->members, COPY_APPEND, buf, total, 0, &stuck))
		rc = -EIO;
	scratch_lost(&l->abuf, &l->acap, stuck); /* a worker may still read it */
	if (rc < 0)
		return rc;
	log_extent x = { .off = pos, .rec = l->end + head, .len = (uint32_t)len,
		         .rec_len = (uint32_t)len };
	overlay_insert(l, &x);
	l->seq++;
	l->end += total;
	l->unsynced = true;
	return 0;
}

/* Appends the pending write.  A copy that misses it leaves the log less
 * safe than a stripe: the log is applied at once instead. */
static int pending_flush(ecfile *f)
{
	ecfile_log *l = f->log;

	if (!l->pend_len)
		return 0;
	int rc = append(f, l->pend_off, l->pend, l->pend_len, l->pend_size);
	if (rc < 0) { /* the apply takes the held write too */
		ecfs_log(LOG_INFO, "%s: a small-write log copy failed; applying the log", f->path);
		return ecfile_log_apply(f);
	}
	l->pend_len = 0; /* in the map now */
	return 0;
}

int ecfile_log_write(ecfile *f, uint64_t pos, const uint8_t *src, uint64_t len)
{
	ecfile_log *l = log_get(f);
	int rc;

	/* An epoch keeps its members: one that dropped out ends it. */
	if (l->members && !members_usable(f)) {
		rc = ecfile_log_apply(f);
		if (rc < 0)
			return rc;
	}
	uint64_t sd = stripe_data(f);
	bool more = l->pend_len && pos == l->pend_off + l->pend_len &&
	            pos / sd == l->pend_off / sd && l->pend_len + len <= SMALLLOG_DATA_MAX;
	if (!more) {
		rc = pending_flush(f);
		if (rc < 0)
			return rc;
		/* (none yet, or the flush applied the log) */
		if (!l->members && epoch_start(f) < 0)
			return -EAGAIN;
		l->pend_off = pos;
		l->pend_size = f->size;
	}
	l->pend = g_realloc(l->pend, l->pend_len + len);
	memcpy(l->pend + l->pend_len, src, len);
	l->pend_len += (uint32_t)len;
	uint64_t mib = volume_settings(f->v)->small_log_mib;
	if (l->end + l->pend_len > mib << 20 || l->seq >= mib * RECORDS_PER_MIB)
		return ecfile_log_apply(f);
	return 0;
}

int ecfile_log_sync(ecfile *f, bool *chunks_clean)
{
	ecfile_log *l = f->log;
	int rc = 0;

	*chunks_clean = false;
	if (!l)
		return 0;
	rc = pending_flush(f);
	if (rc == 0 && l->unsynced && l->members) {
		if (copies_run(f, l->members, COPY_SYNC, NULL, 0, 0, NULL))
			rc = ecfile_log_apply(f); /* a copy may be lost: the stripes take it */
		else
			l->unsynced = false;
	}
	*chunks_clean = rc == 0 && f->gen == l->synced_gen &&
	                f->c.hdr.generation == l->synced_hdr_gen && !f->hdr_dirty;
	return rc;
}

void ecfile_log_synced(ecfile *f)
{
	if (f->log) {
		f->log->synced_gen = f->gen;
		f->log->synced_hdr_gen = f->c.hdr.generation;
	}
}

void ecfile_log_forget(ecfile *f, int mb)
{
	if (f->log && f->log->members >> mb & 1)
		return; /* a copy of the epoch in progress: not stale */
	int rc = smalllog_remove_copy(f->v, mb, f->id);
	if (rc < 0)
		ecfs_log(LOG_WARNING, "%s: cannot remove a stale small-write log on member %d: %s",
		         f->path, mb, g_strerror(-rc));
}

void ecfile_log_free(ecfile *f)
{
	if (!f->log)
		return;
	ecfile_log *l = f->log;
	copies_close(f);
	overlay_clear(l);
	g_tree_destroy(l->map);
	g_free(l->slabs);
	g_free(l->pend);
	free(l->abuf);
	free(l->rbuf);
	g_free(l);
	f->log = NULL;
}
