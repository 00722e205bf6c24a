/* SPDX-License-Identifier: MIT */
/*
 * Check and repair of one regular file, offline (ecfs-fsck).
 *
 * The file's chunks are opened on every healthy member and their headers
 * judged as ecfile_open judges them (same file identity and code, right
 * position under the rotation, the newest header's `missed` mask).  Then
 * every stripe is read from every member that has a chunk (--rebuild: from
 * k good chunks, all of them only where those disagree), and each strip
 * is judged and each stripe's generation voted by the reader's own rules
 * (reader_rules.h, docs/FORMAT.md 4.3): the highest generation held by at
 * least k good strips wins, and every other strip is an erasure.  Runs of
 * stripes go through two slots so that one run's repairs are written while
 * the next run is read.
 *
 * Repair differs from a commit on purpose.  stripe_commit() writes a new
 * generation to every member; repair instead rewrites only the erased
 * strips, with the stripe's winning generation and the content decoded
 * (ec_decode of libec, the one decoder) from the survivors.  So the strips
 * that were good are never written: an interrupted repair leaves every
 * stripe at least as readable as before, and a stripe with more than m
 * erasures is reported and left exactly as found.  A chunk being rebuilt
 * stays untrusted until its strips are down and synced (one that existed
 * is first marked in its header's `missed` mask, one created here has no
 * header yet), and only then gets the newest header (prepare_rebuild, and
 * rewrite_headers for which headers are rewritten).
 */
#include "repair.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunk.h"
#include "journal_recovery.h"
#include "layout.h"
#include "log.h"
#include "memberops.h"
#include "memberio.h"
#include "reader_rules.h"
#include "stripe.h"
#include "volume_internal.h"

/* Stripes read per member in one go: up to a record group, and about
 * RUN_BYTES of strips per member (fewer round trips through the member
 * workers; bounded memory for large strips). */
#define RUN CHUNK_GROUP_STRIPES
#define RUN_BYTES (1u << 20)

struct file_check;

/* One member's share of a run of stripes: read and judged, then the
 * erased strips of it written back. */
typedef struct member_task {
	struct file_check *fc;
	int member, pos, cnt;
	uint64_t s0;
	uint8_t *buf; /* cnt strips */
	strip_judgment st[RUN];
	uint64_t wmask; /* strips of the run to write back */
	uint64_t wgen[RUN], wsize[RUN];
	int err;
	bool done; /* its read has run (atomic; hedged_wait) */
} member_task;

/* One run of stripes on its way through the pass: read and judged, then
 * its repairs written while the next run is read (two slots take turns). */
typedef struct run_slot {
	member_task task[STRIPE_MAX_N]; /* by position */
	uint8_t *bufs;                  /* n * run strips, position-major */
	mio_batch reads, writes;        /* in flight */
	uint64_t unread;                /* positions not read (rebuild: not needed) */
	uint64_t sources;               /* positions read first (run_sources) */
	uint64_t late;                  /* asked, but the run went on without them */
	int64_t asked_us;               /* when the reads were asked (monotonic) */
	bool reading, writing;
	bool hedged;                    /* its reads may go on without the last */
	uint64_t s0;
	int cnt;
} run_slot;

/* What repair_file keeps from file to file: fresh buffers for every file
 * would be faulted in again every time.  One per file in flight, on the
 * list fsck.repair_pool while unused. */
struct repair_pool {
	run_slot slot[2];
	uint8_t *mem;
	size_t size;
	struct repair_pool *next;
};

/* f->links and f->repair_pool: files are checked on several threads. */
static GMutex shared_lock; /* order: a leaf */

typedef struct file_check {
	fsck *f;
	const char *path;
	stripe_ctx c;
	int n, k, m;
	int run;       /* stripes per run, <= RUN */
	struct repair_pool *pool;
	run_slot *slot; /* [2], in the pool */
	uint8_t *spare; /* m strips: recomputed parity (--deep) */
	uint64_t chunk_bad;  /* members whose chunk as a whole is rebuilt */
	uint64_t quiet;      /* members whose erasures are reported elsewhere */
	uint64_t unwritable; /* members that cannot take repairs */
	uint64_t written;    /* members this repair wrote to (to sync) */
	uint64_t fresh;      /* members whose chunk this repair created: empty */
	uint64_t readable;   /* positions with something to read (not fresh) */
	uint64_t sources;    /* positions read first (readable, or k for --rebuild) */
	uint64_t good;       /* --rebuild reading k: the good chunks' positions, else 0 */
	uint64_t found_missed; /* the `missed` mask of the header found */
	const char *chunk_why[STRIPE_MAX_N];
	const char *chunk_kind[STRIPE_MAX_N];
	uint64_t bad[STRIPE_MAX_N], first_bad[STRIPE_MAX_N], last_bad[STRIPE_MAX_N];
	const char *bad_why[STRIPE_MAX_N];
	uint64_t rebuilt[STRIPE_MAX_N];
	int write_err[STRIPE_MAX_N];
	uint64_t parity_bad, parity_first, parity_last;
	uint64_t lost_first, lost_last, lost_total;
	bool lost_open;
	bool hopeless; /* fewer than k good chunks: report, never write */
	uint64_t max_gen; /* highest generation in a verified record */
	const char *link_from; /* another path of this file (hard links) */
} file_check;

enum fsck_status fsck_outcome(const fsck *f, int rc)
{
	if (!f->o.repair)
		return FSCK_REPAIRABLE;
	return rc < 0 ? FSCK_FAILED : FSCK_REPAIRED;
}

static uint8_t *strip_buf(const file_check *fc, const run_slot *rs, int pos, int i)
{
	return rs->bufs + ((size_t)pos * (size_t)fc->run + (size_t)i) * fc->c.lay.strip_size;
}

/* Takes a pool for fc, grown if this file needs more, and points the run
 * slots and the spare strips into it. */
static int take_buffers(file_check *fc)
{
	fsck *f = fc->f;
	size_t strip = fc->c.lay.strip_size;
	size_t slot_bytes = strip * (size_t)fc->run * (size_t)fc->n;
	size_t need = 2 * slot_bytes + strip * (size_t)fc->m;

	g_mutex_lock(&shared_lock);
	struct repair_pool *p = f->repair_pool;
	if (p)
		f->repair_pool = p->next;
	g_mutex_unlock(&shared_lock);
	if (!p)
		p = g_new0(struct repair_pool, 1);
	fc->pool = p;
	if (p->size < need) {
		free(p->mem);
		p->size = 0;
		if (posix_memalign((void **)&p->mem, 4096, need)) {
			p->mem = NULL;
			return -ENOMEM;
		}
		p->size = need;
	}
	fc->slot = p->slot;
	/* Not the whole slot: its tasks (STRIPE_MAX_N of them, 230 KB) are
	 * set up run by run (init_slot), for the file's n positions. */
	for (int i = 0; i < 2; i++) {
		fc->slot[i].bufs = p->mem + (size_t)i * slot_bytes;
		fc->slot[i].reading = fc->slot[i].writing = false;
		fc->slot[i].late = 0;
	}
	fc->spare = p->mem + 2 * slot_bytes;
	return 0;
}

static void give_back_buffers(file_check *fc)
{
	struct repair_pool *p = fc->pool;

	if (!p)
		return;
	g_mutex_lock(&shared_lock);
	p->next = fc->f->repair_pool;
	fc->f->repair_pool = p;
	g_mutex_unlock(&shared_lock);
}

void repair_release(fsck *f)
{
	while (f->repair_pool) {
		struct repair_pool *p = f->repair_pool;
		f->repair_pool = p->next;
		free(p->mem);
		g_free(p);
	}
}

/* Full-length pread: bytes read (short only at end of file) or -errno. */
static ssize_t read_all(volume *v, int idx, int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = mop_pread(v, idx, fd, (uint8_t *)buf + done, len - done, off + (off_t)done);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* ---- reading and judging one member's strips ---- */

static void scan_strips(member_task *t)
{
	stripe_ctx *c = &t->fc->c;
	uint64_t strip = c->lay.strip_size;
	uint8_t recs[RUN * CHUNK_RECORD_SIZE];
	size_t want = (size_t)t->cnt * strip, rwant = (size_t)t->cnt * CHUNK_RECORD_SIZE;
	int fd = c->fd[t->member];
	chunk_header h = c->hdr;

	int64_t t0 = g_get_monotonic_time();
	ssize_t got = read_all(c->v, t->member, fd, t->buf, want,
	                       (off_t)layout_strip_offset(&c->lay, t->s0));
	/* the member's read cost (memberio_slow_of, run_sources): strips read whole */
	if (got == (ssize_t)want)
		memberio_note(volume_memberio(c->v), t->member, MIO_READ, want,
		              (g_get_monotonic_time() - t0) * 1000);
	ssize_t rgot = got < 0 ? got
	               : read_all(c->v, t->member, fd, recs, rwant,
	                          (off_t)layout_record_offset(&c->lay, t->s0));
	if (got < 0 || rgot < 0) {
		t->err = (int)(got < 0 ? got : rgot);
		for (int i = 0; i < t->cnt; i++) {
			t->st[i].v = STRIP_ERR;
			t->st[i].why = "read error";
		}
		return;
	}
	/* Past the end of a chunk reads as zeros: a hole if the record agrees. */
	if ((size_t)got < want)
		memset(t->buf + got, 0, want - (size_t)got);
	if ((size_t)rgot < rwant)
		memset(recs + rgot, 0, rwant - (size_t)rgot);
	h.position = (uint32_t)t->pos;
	for (int i = 0; i < t->cnt; i++)
		rules_judge_strip(c->sum, &h, &c->lay, t->s0 + (uint64_t)i,
		                  recs + (size_t)i * CHUNK_RECORD_SIZE, t->buf + (size_t)i * strip, fd,
		                  &t->st[i]);
}

static void scan_member(void *arg)
{
	member_task *t = arg;

	scan_strips(t);
	__atomic_store_n(&t->done, true, __ATOMIC_RELEASE);
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

/* ---- opening the chunks ---- */

typedef struct chunk_probe {
	fsck *f;
	const char *path;
	int mb;
	int fd, err;
	bool valid, empty;
	const char *why;
	chunk_header h;
} chunk_probe;

/* On member p->mb's worker (fsck_on_members): opens its chunk and reads
 * its header. */
static int probe_chunk(void *arg)
{
	chunk_probe *p = arg;
	fsck *f = p->f;
	const char *leaf;
	uint8_t buf[CHUNK_HEADER_MAX];
	int pfd = volume_parent_fd(f->v, p->mb, p->path, &leaf);

	if (pfd < 0) {
		p->err = -pfd;
		return 0;
	}
	int fd = MIO_CALL(openat(pfd, leaf, (f->o.repair ? O_RDWR : O_RDONLY) | O_NOFOLLOW |
	                                    O_CLOEXEC));
	p->err = fd < 0 ? errno : 0;
	MIO_CALL(close(pfd));
	p->fd = fd;
	if (fd < 0)
		return 0;
	ssize_t got = read_all(f->v, p->mb, fd, buf, sizeof(buf), 0);
	p->empty = got == 0;
	if (got < 0) {
		p->why = "header unreadable";
	} else if (chunk_header_decode(buf, (size_t)got, &p->h, &p->why) == 0) {
		p->valid = memcmp(p->h.volume_uuid, volume_uuid(f->v), 16) == 0;
		if (!p->valid)
			p->why = "header of another volume";
	}
	return 0;
}

/* Picks the file's header: the identity most chunks carry (ties: the
 * newest), and its newest header.  -1 if no chunk has a valid header. */
static int pick_reference(const chunk_probe *p, int n)
{
	int best = -1, best_votes = 0;

	for (int i = 0; i < n; i++) {
		if (!p[i].valid)
			continue;
		int votes = 0, newest = i;
		for (int j = 0; j < n; j++)
			if (p[j].valid && rules_same_file(&p[j].h, &p[i].h)) {
				votes++;
				if (p[j].h.generation > p[newest].h.generation)
					newest = j;
			}
		if (votes > best_votes ||
		    (votes == best_votes && p[newest].h.generation > p[best].h.generation)) {
			best = newest;
			best_votes = votes;
		}
	}
	return best;
}

/* Creates the missing chunk on member mb (repair only).  A file with
 * hard links whose chunk on mb was already seen (and repaired) at another
 * path gets that chunk linked, so the member keeps one inode per file. */
typedef struct create_call {
	fsck *f;
	int mb;
	const char *path, *link_from;
	bool linked;
} create_call;

/* On the member's worker (fsck_on_member): the chunk's descriptor or a
 * negative errno. */
static int create_chunk_run(void *arg)
{
	create_call *c = arg;
	fsck *f = c->f;
	int mb = c->mb;
	const char *leaf, *sleaf;
	int pfd = volume_parent_fd(f->v, mb, c->path, &leaf);
	int fd = -1;

	if (pfd < 0)
		return pfd;
	if (c->link_from) {
		int sfd = volume_parent_fd(f->v, mb, c->link_from, &sleaf);
		if (sfd >= 0 && mop_linkat(f->v, mb, sfd, sleaf, pfd, leaf, 0) == 0) {
			fd = MIO_CALL(openat(pfd, leaf, O_RDWR | O_NOFOLLOW | O_CLOEXEC));
			c->linked = fd >= 0;
		}
		if (sfd >= 0)
			MIO_CALL(close(sfd));
	}
	if (fd < 0) {
		fd = mop_openat(f->v, mb, pfd, leaf, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		                0600);
		/* A new inode, maybe one removed whose size the daemon
		 * remembers under a ctime it may share (size_cache.h). */
		struct stat st;
		if (fd >= 0 && MIO_CALL(fstat(fd, &st)) == 0)
			size_cache_chunk_made(volume_sizes(f->v), mb, &st);
	}
	/* Made since the namespace was read (in the daemon, opening an empty
	 * file finishes its create): it is rebuilt whole all the same. */
	if (fd == -EEXIST)
		fd = mop_openat(f->v, mb, pfd, leaf, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
	MIO_CALL(close(pfd));
	return fd;
}

static int create_chunk(fsck *f, int mb, const char *path, const char *link_from,
                        bool *linked)
{
	create_call c = { f, mb, path, link_from, false };
	int fd = fsck_on_member(f, mb, create_chunk_run, &c);

	*linked = fd >= 0 && c.linked;
	return fd;
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
	uint64_t best, size = 0, badmask = 0, whole = 0;
	strip_judgment st[STRIPE_MAX_N] = { 0 };

	for (int j = 0; j < n; j++) {
		/* a late answer is still the late task's to write */
		if (!(rs->late >> j & 1))
			st[j] = rs->task[j].st[i];
		if (fc->chunk_bad >> rs->task[j].member & 1)
			whole |= 1ull << j;
		if (st[j].v == STRIP_GOOD && st[j].gen > fc->max_gen)
			fc->max_gen = st[j].gen;
	}
	int votes_best = rules_vote(st, n, k, &best);
	/* The chunks rebuilt whole count for the hole rule as unread, as for
	 * the reader, which does not read them. */
	bool hole = votes_best < k &&
	            rules_first_write_cut_short(st, n, m, s, fc->c.hdr.durable, whole);
	if (votes_best < k && !hole) {
		note_lost(fc, s);
		return;
	}
	flush_lost(fc);
	for (int j = 0; j < n; j++) {
		bool good = rules_strip_current(&st[j], best);
		if (good && st[j].v == STRIP_GOOD)
			size = st[j].size;
		if (!good && !unread_survivor(fc, rs, j))
			badmask |= 1ull << j;
	}
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
	if (!badmask)
		return;
	int erased[STRIPE_MAX_N], ne = 0;
	uint8_t *blocks[STRIPE_MAX_N];
	for (int j = 0; j < n; j++) {
		int mb = rs->task[j].member;
		bool unread = unread_survivor(fc, rs, j);
		/* Not read, so not an input to the decoder; NULL: not rebuilt. */
		blocks[j] = unread ? NULL : strip_buf(fc, rs, j, i);
		if (unread)
			erased[ne++] = j;
		if (!(badmask >> j & 1))
			continue;
		erased[ne++] = j;
		if (!(fc->quiet >> mb & 1) && !(fc->chunk_bad >> mb & 1)) {
			if (!fc->bad[mb]++) {
				fc->first_bad[mb] = s;
				fc->bad_why[mb] = st[j].v == STRIP_GOOD || st[j].v == STRIP_HOLE
				                  ? (best ? "strip of another generation (missed or torn write)"
				                          : "stripe never written but strip present")
				                  : st[j].v == STRIP_UNREAD ? "no strip" : st[j].why;
			}
			fc->last_bad[mb] = s;
		}
	}
	if (!fc->f->o.repair)
		return;
	/* A cut-short first write becomes a clean hole: zeros, blank records. */
	for (int e = 0; e < ne && hole; e++)
		if (blocks[erased[e]])
			memset(blocks[erased[e]], 0, strip);
	if (!hole && ec_decode(fc->c.code, blocks, erased, ne, strip) < 0) {
		ecfs_log(LOG_ERR, "%s: stripe %llu: decoding failed", fc->path, (unsigned long long)s);
		return;
	}
	for (int e = 0; e < ne; e++) {
		member_task *t = &rs->task[erased[e]];
		if (!blocks[erased[e]] || fc->unwritable >> t->member & 1)
			continue;
		t->wmask |= 1ull << i;
		t->wgen[i] = best;
		t->wsize[i] = size;
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
 * (memberio_slow_of, the reader's read-around, stripe.c), as many as the
 * others can spare. */
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
 * them, as the daemon's reads around a slow member do (stripe.c): when
 * they are late, one more good chunk is asked (hedged_wait). */
static bool may_hedge(const file_check *fc, const run_slot *rs, uint64_t mask)
{
	return mask == rs->sources && rs->sources != fc->readable && !fc->f->o.deep &&
	       !volume_defaults(fc->f->v)->no_hedge;
}

/* Starts reading the run's strips at the positions in mask not read yet;
 * wait: the caller waits for them at once (it may read one itself). */
static void read_positions(file_check *fc, run_slot *rs, uint64_t mask, bool wait)
{
	memberio *mio = volume_memberio(fc->f->v);

	rs->reading = true;
	rs->hedged = may_hedge(fc, rs, mask);
	if (rs->hedged)
		mio_batch_init_each(&rs->reads);
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
		if (fc->c.fd[t->member] >= 0 && volume_member_ok(fc->f->v, t->member))
			memberio_submit(mio, t->member, &rs->reads, scan_member, t);
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

/* A hedged run's reads: if its sources are late (memberio_late_us), a
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
	uint64_t late_us = memberio_late_us(mio, members, (size_t)rs->cnt * fc->c.lay.strip_size);
	int spare = spare_position(fc, rs);
	if (spare < 0 ||
	    mio_batch_wait_left_until(&rs->reads, 0, (rs->asked_us + (int64_t)late_us) * 1000))
		return mio_batch_wait(&rs->reads);
	member_task *t = &rs->task[spare];
	t->done = false;
	rs->unread &= ~(1ull << spare);
	rs->sources |= 1ull << spare;
	memberio_submit(mio, t->member, &rs->reads, scan_member, t);
	volume_count_hedged(fc->f->v);
	fsck_count(&fc->f->reads_hedged, 1);
	uint64_t lost = mio_batch_wait_left(&rs->reads, 1);
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

static void finish_reads(file_check *fc, run_slot *rs)
{
	if (!rs->reading)
		return;
	rs->reading = false;
	uint64_t lost = rs->hedged ? hedged_wait(fc, rs) : mio_batch_wait(&rs->reads);
	note_lost_reads(fc, rs, lost, ~rs->late);
}

/* Waits for the answer a hedged run went on without, before the run's
 * slot is read into again. */
static void end_late_reads(file_check *fc, run_slot *rs)
{
	if (!rs->late)
		return;
	note_lost_reads(fc, rs, mio_batch_wait(&rs->reads), rs->late);
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
static void choose_sources(file_check *fc)
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
 * now (memberio_slow_of, the reader's read-around, stripe.c), while the
 * others are enough.  A run where they do not settle every stripe is
 * read whole all the same (stripe_pass). */
static uint64_t run_sources(file_check *fc)
{
	uint64_t sources = 0;
	int left = fc->k;

	if (!fc->good || volume_defaults(fc->f->v)->no_read_around)
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
static int stripe_pass(file_check *fc, uint64_t count)
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

/* ---- reporting ---- */

static enum fsck_status member_outcome(const file_check *fc, int mb, bool header_ok)
{
	if (fc->hopeless)
		return FSCK_UNREPAIRABLE;
	if (!fc->f->o.repair)
		return FSCK_REPAIRABLE;
	if (fc->unwritable >> mb & 1 || !header_ok)
		return FSCK_FAILED;
	return FSCK_REPAIRED;
}

static void report(file_check *fc, bool header_ok)
{
	uint64_t sd = layout_stripe_data(&fc->c.lay), size = fc->c.hdr.size;

	for (int mb = 0; mb < fc->n; mb++) {
		if (fc->chunk_bad >> mb & 1 && !(fc->quiet >> mb & 1))
			fsck_problem(fc->f, fc->chunk_kind[mb], fc->path, mb, 0, 0,
			             member_outcome(fc, mb, header_ok), "%s%s%s", fc->chunk_why[mb],
			             fc->write_err[mb] ? ": " : "",
			             fc->write_err[mb] ? g_strerror(-fc->write_err[mb]) : "");
		if (fc->bad[mb]) {
			uint64_t off = fc->first_bad[mb] * sd, end = (fc->last_bad[mb] + 1) * sd;
			end = end > size ? size : end;
			fsck_problem(fc->f, "strip", fc->path, mb, off, end > off ? end - off : 0,
			             member_outcome(fc, mb, header_ok),
			             "%llu bad strip(s) in stripes %llu-%llu (first: %s)",
			             (unsigned long long)fc->bad[mb], (unsigned long long)fc->first_bad[mb],
			             (unsigned long long)fc->last_bad[mb], fc->bad_why[mb]);
		}
	}
	if (fc->parity_bad) {
		uint64_t off = fc->parity_first * sd, end = (fc->parity_last + 1) * sd;
		end = end > size ? size : end;
		fsck_problem(fc->f, "parity", fc->path, -1, off, end > off ? end - off : 0,
		             fc->f->o.repair ? (header_ok ? FSCK_REPAIRED : FSCK_FAILED)
		                             : FSCK_REPAIRABLE,
		             "%llu stripe(s) whose parity does not follow from their verified data",
		             (unsigned long long)fc->parity_bad);
	}
}

/* ---- the file ---- */

static void mark_chunk(file_check *fc, int mb, const char *kind, const char *why)
{
	fc->chunk_bad |= 1ull << mb;
	fc->chunk_kind[mb] = kind;
	fc->chunk_why[mb] = why;
}

/* Opens and judges every member's chunk; returns the reference member or
 * a negative errno (problem already reported) or -ENODATA for a file with
 * no header that is empty everywhere (nothing to check). */
static int open_chunks(file_check *fc, uint64_t present, chunk_probe *p)
{
	fsck *f = fc->f;
	int n = fc->n, rcs[STRIPE_MAX_N];
	uint64_t mask = f->walk_mask & present;
	void *args[STRIPE_MAX_N] = { 0 };

	for (int mb = 0; mb < n; mb++) {
		p[mb] = (chunk_probe){ .f = f, .path = fc->path, .mb = mb, .fd = -1 };
		args[mb] = &p[mb];
	}
	fsck_on_members(f, mask, probe_chunk, args, rcs);
	for (int mb = 0; mb < n; mb++)
		if (mask >> mb & 1 && rcs[mb] < 0) /* given up: nothing it said counts */
			p[mb] = (chunk_probe){ .fd = -1, .err = -rcs[mb] };
	int ref = pick_reference(p, n);
	if (ref < 0) {
		bool all_empty = true;
		for (int mb = 0; mb < n; mb++)
			all_empty &= p[mb].fd < 0 || p[mb].empty;
		if (all_empty)
			return -ENODATA;
		fsck_problem(f, "chunk-header", fc->path, -1, 0, 0, FSCK_UNREPAIRABLE,
		             "no member holds a valid chunk header for this file");
		return -EINVAL;
	}
	fc->c.hdr = p[ref].h;
	fc->found_missed = p[ref].h.missed;
	chunk_layout(&p[ref].h, 1, &fc->c.lay); /* positions; the code's alignment comes later */
	for (int mb = 0; mb < n; mb++) {
		chunk_probe *q = &p[mb];
		fc->c.fd[mb] = q->fd;
		fc->c.state[mb] = CHUNK_OK;
		q->fd = -1;
		if (!(f->walk_mask >> mb & 1) || fsck_gone(f, mb)) {
			fc->c.state[mb] = CHUNK_FAILED;
			fc->quiet |= 1ull << mb;
			fc->unwritable |= 1ull << mb;
		} else if (fc->c.fd[mb] < 0 && q->err && q->err != ENOENT) {
			fc->c.state[mb] = CHUNK_FAILED;
			fc->unwritable |= 1ull << mb;
			fsck_problem(f, "unreadable", fc->path, mb, 0, 0, FSCK_UNREPAIRABLE,
			             "cannot open the chunk: %s", g_strerror(q->err));
			fc->quiet |= 1ull << mb;
		} else if (fc->c.fd[mb] < 0) {
			fc->c.state[mb] = CHUNK_MISSING;
			mark_chunk(fc, mb, "chunk-missing", "no chunk file");
		} else if (!q->valid) {
			fc->c.state[mb] = CHUNK_CORRUPT;
			mark_chunk(fc, mb, "chunk-header", q->why ? q->why : "invalid header");
		} else if (!rules_same_file(&q->h, &fc->c.hdr)) {
			fc->c.state[mb] = CHUNK_CORRUPT;
			mark_chunk(fc, mb, "chunk-header", "header of another file or code");
		} else if (q->h.position != (uint32_t)layout_position_of(&fc->c.lay, mb)) {
			fc->c.state[mb] = CHUNK_CORRUPT;
			mark_chunk(fc, mb, "chunk-header", "position does not match the rotation");
		} else if (fc->c.hdr.missed >> mb & 1) {
			fc->c.state[mb] = CHUNK_STALE;
			mark_chunk(fc, mb, "chunk-stale", "missed writes while the member was failed");
		}
	}
	return ref;
}

/* Runs op, a stripe-layer step that works on every usable member, on the
 * members in mask only, the others hidden from it.  Returns the members of
 * mask it failed on (the stripe layer took those out of the file). */
static uint64_t on_members(file_check *fc, uint64_t mask, int (*op)(stripe_ctx *c))
{
	enum chunk_state saved[STRIPE_MAX_N];
	uint64_t failed = 0;

	if (!mask)
		return 0;
	for (int mb = 0; mb < fc->n; mb++) {
		saved[mb] = fc->c.state[mb];
		fc->c.state[mb] = mask >> mb & 1 ? CHUNK_OK : CHUNK_FAILED;
	}
	op(&fc->c); /* its count of members that succeeded is not ours */
	for (int mb = 0; mb < fc->n; mb++) {
		if (!(mask >> mb & 1))
			fc->c.state[mb] = saved[mb];
		else if (fc->c.state[mb] == CHUNK_FAILED)
			failed |= 1ull << mb;
	}
	return failed;
}

static int sync_chunks(stripe_ctx *c)
{
	return stripe_sync(c, true);
}

static int durable_headers(stripe_ctx *c)
{
	return stripe_write_headers_durable(c, false);
}

static int seal_headers(stripe_ctx *c)
{
	return stripe_write_headers_durable(c, true);
}

/* Makes every chunk to rebuild exist.  One that was there already gets
 * the file's header naming it in `missed` (stale until its strips are
 * back); one made now has no header until the end, which keeps it just as
 * untrusted if the repair is cut short.  The good chunks are not written
 * before the repair is known to be complete. */
static void prepare_rebuild(file_check *fc, uint64_t *created)
{
	uint64_t target = 0, existing = 0;

	for (int mb = 0; mb < fc->n; mb++) {
		if (!(fc->chunk_bad >> mb & 1) || fc->unwritable >> mb & 1)
			continue;
		if (fc->c.fd[mb] < 0) {
			bool linked;
			int fd = create_chunk(fc->f, mb, fc->path, fc->link_from, &linked);
			if (fd < 0) {
				fc->write_err[mb] = fd;
				fc->unwritable |= 1ull << mb;
				fc->c.state[mb] = CHUNK_MISSING;
				continue;
			}
			fc->c.fd[mb] = fd;
			*created |= 1ull << mb;
			if (linked) {
				/* The chunk of the other path, repaired already. */
				fc->chunk_why[mb] = "no chunk file (restored as a hard link)";
				fc->c.state[mb] = CHUNK_OK;
				continue;
			}
			fc->fresh |= 1ull << mb;
		} else {
			existing |= 1ull << mb;
		}
		target |= 1ull << mb;
		fc->c.hdr.missed |= 1ull << mb;
	}
	fc->c.hdr.generation++;
	uint64_t failed = on_members(fc, existing, stripe_write_headers);
	for (int mb = 0; mb < fc->n; mb++) {
		if (failed >> mb & 1) {
			fc->write_err[mb] = -EIO;
			fc->unwritable |= 1ull << mb; /* and CHUNK_FAILED */
		} else if (target >> mb & 1) {
			fc->c.state[mb] = CHUNK_OK;
		}
	}
	fc->written |= target & ~failed;
}

/* Opens and judges the file's chunks and finds its code and checksum.
 * Returns 0 to check the file, 1 if there is nothing to check (a file
 * empty everywhere, or one whose problem is reported), or a negative
 * errno. */
static int open_file(file_check *fc, uint64_t present)
{
	fsck *f = fc->f;
	chunk_probe p[STRIPE_MAX_N];
	int rc = open_chunks(fc, present, p);

	if (rc < 0) {
		int fds[STRIPE_MAX_N];
		for (int mb = 0; mb < f->n; mb++)
			fds[mb] = p[mb].fd;
		fsck_close_all(f, fds);
		return rc == -ENODATA || rc == -EINVAL ? 1 : rc;
	}
	fc->k = fc->c.lay.k;
	fc->m = fc->c.lay.m;
	ec_params ep = { .kind = fc->c.hdr.kind, .k = fc->k, .m = fc->m, .w = fc->c.hdr.w,
	                 .packet_size = fc->c.hdr.packet_size };
	fc->c.code = volume_code(f->v, &ep);
	fc->c.sum = volume_checksum(f->v, fc->c.hdr.checksum);
	if (fc->c.code)
		chunk_layout(&fc->c.hdr, ec_block_align(fc->c.code), &fc->c.lay);
	if (!fc->c.code || !fc->c.sum || fc->n != fc->k + fc->m) {
		fsck_problem(f, "chunk-header", fc->path, -1, 0, 0, FSCK_UNREPAIRABLE,
		             "the file's code or checksum is not available in this build");
		return 1;
	}
	return 0;
}

static bool good_chunk(const file_check *fc, int mb)
{
	return fc->c.state[mb] == CHUNK_OK && fc->c.fd[mb] >= 0;
}

/* A file with hard links is checked at each of its paths: the first one
 * is remembered, and a later path's missing chunks are linked to its
 * (create_chunk). */
struct links_call {
	int fd;
};

/* The chunk's link count, on the member's worker. */
static int links_run(void *arg)
{
	const struct links_call *l = arg;
	struct stat st;

	return MIO_CALL(fstat(l->fd, &st)) < 0 ? -errno : (int)MIN(st.st_nlink, 2);
}

static void note_hard_link(file_check *fc)
{
	fsck *f = fc->f;
	int mb = 0;

	while (mb < fc->n && !good_chunk(fc, mb))
		mb++;
	struct links_call l = { mb < fc->n ? fc->c.fd[mb] : -1 };
	if (mb == fc->n || fsck_on_member(f, mb, links_run, &l) <= 1)
		return;
	g_mutex_lock(&shared_lock);
	fc->link_from = g_hash_table_lookup(f->links, fc->c.hdr.file_id);
	if (!fc->link_from)
		g_hash_table_insert(f->links, g_memdup2(fc->c.hdr.file_id, 16), g_strdup(fc->path));
	g_mutex_unlock(&shared_lock);
}

/* An overwrite a crash cut short is completed from its journal before the
 * stripes are judged (docs/FORMAT.md 9).  Not in the daemon's heal: there
 * the file's own open recovers it, and an open file's journal protects
 * writes not synced yet. */
static void roll_forward(file_check *fc)
{
	fsck *f = fc->f;
	uint64_t rolled = 0;
	int jr = journal_recover(&fc->c, f->o.repair, &rolled);

	if (rolled)
		fsck_problem(f, "journal", fc->path, -1, 0, 0,
		             !f->o.repair ? FSCK_REPAIRABLE : jr == 0 ? FSCK_REPAIRED : FSCK_FAILED,
		             "%llu stripe(s) of an overwrite cut short by a crash, to roll "
		             "forward from the journal", (unsigned long long)rolled);
}

/* Judges (and repairs) every stripe the file needs checked: 0, or a
 * negative errno. */
static int check_stripes(file_check *fc, uint64_t *created)
{
	fsck *f = fc->f;
	int rc = 0;

	fc->run = (int)MAX(1, MIN((uint64_t)RUN, RUN_BYTES / fc->c.lay.strip_size));
	if (f->o.repair && fc->chunk_bad && !fc->hopeless)
		prepare_rebuild(fc, created);
	choose_sources(fc);
	uint64_t count = layout_stripe_count(&fc->c.lay, fc->c.hdr.size);
	if (f->quick && !fc->chunk_bad && !fc->c.hdr.missed)
		count = 0; /* every chunk current: its strips were checked before */
	if (count) {
		rc = take_buffers(fc);
		if (rc == 0)
			rc = stripe_pass(fc, count);
	}
	return rc;
}

/* After the stripe pass: makes the strips written durable, then writes
 * the headers that trust them again (gen_low: the headers found do not
 * reserve the records' generations).  Returns false if headers that had
 * to be written were not. */
static bool rewrite_headers(file_check *fc, bool gen_low)
{
	bool touched = fc->chunk_bad || fc->parity_bad || fc->c.hdr.missed || gen_low;
	bool header_ok = true;

	for (int mb = 0; mb < fc->n; mb++)
		touched |= fc->rebuilt[mb] != 0;
	if (!fc->f->o.repair || !touched || fc->hopeless)
		return true;
	/* Strips durable first, then the headers that trust them again.
	 * A file with unrecoverable stripes keeps its headers as found. */
	for (int mb = 0; mb < fc->n; mb++)
		if (fc->c.state[mb] != CHUNK_OK && fc->c.fd[mb] >= 0 && !(fc->unwritable >> mb & 1))
			fc->c.state[mb] = CHUNK_OK;
	uint64_t written = fc->written & ~fc->unwritable;
	/* Headers change only where strips were written, unless the
	 * headers found name members in `missed` or are generations
	 * behind.  One member written seals itself (sync, header, sync)
	 * in one round trip; more must all be durable before any header
	 * trusts them. */
	bool everyone = gen_low || fc->found_missed;
	bool seal = !fc->lost_total && !everyone && __builtin_popcountll(written) == 1;
	if (!seal) {
		fc->unwritable |= on_members(fc, written, sync_chunks);
		written &= ~fc->unwritable;
	}
	if (stripe_usable_count(&fc->c) < fc->k)
		header_ok = false;
	if (header_ok && !fc->lost_total) {
		fc->c.hdr.missed &= fc->unwritable;
		fc->c.hdr.generation = rules_header_generation(fc->c.hdr.generation,
		                                               fc->max_gen, 0, false);
		if (everyone) {
			header_ok = stripe_write_headers_durable(&fc->c, false) == 0;
		} else {
			uint64_t failed = on_members(fc, written, seal ? seal_headers : durable_headers);
			fc->unwritable |= failed;
			header_ok = !failed;
		}
	}
	return header_ok;
}

/* Reports what the headers found say is wrong: members named stale, a
 * generation that does not reserve the records' (hdr_gen, before repair). */
static void report_headers(file_check *fc, uint64_t hdr_gen, bool gen_low, bool header_ok)
{
	fsck *f = fc->f;

	if (!fc->chunk_bad && fc->c.hdr.missed && !f->o.repair)
		fsck_problem(f, "chunk-stale", fc->path, -1, 0, 0, FSCK_REPAIRABLE,
		             "the header names members that missed writes (mask 0x%llx)",
		             (unsigned long long)fc->c.hdr.missed);
	if (gen_low)
		fsck_problem(f, "generation", fc->path, -1, 0, 0,
		             fc->hopeless || fc->lost_total ? FSCK_UNREPAIRABLE
		             : !f->o.repair ? FSCK_REPAIRABLE
		             : header_ok ? FSCK_REPAIRED : FSCK_FAILED,
		             "header generation %llu is not above the strips' %llu",
		             (unsigned long long)hdr_gen, (unsigned long long)fc->max_gen);
}

/* Checks and repairs the file open_file opened: 0 or a negative errno. */
static int check_file(file_check *fc, uint64_t *created)
{
	int good = 0;

	for (int mb = 0; mb < fc->n; mb++)
		good += good_chunk(fc, mb);
	note_hard_link(fc);
	if (good >= fc->k && !fc->f->hooks)
		roll_forward(fc);
	if (good < fc->k) {
		/* Not enough of the file is left to rebuild anything: leave
		 * every byte of it as found. */
		fc->hopeless = true;
		fc->unwritable = ~0ull;
	}
	int rc = check_stripes(fc, created);
	if (rc < 0)
		return rc;
	/* The header generation reserves every generation records use
	 * (docs/FORMAT.md 4.1): below a record's, the daemon could reuse one. */
	uint64_t hdr_gen = fc->c.hdr.generation;
	bool gen_low = !rules_gen_reserved(hdr_gen, fc->max_gen);
	bool header_ok = rewrite_headers(fc, gen_low);
	report_headers(fc, hdr_gen, gen_low, header_ok);
	report(fc, header_ok);
	return 0;
}

int repair_file(fsck *f, const char *path, uint64_t present, uint64_t quiet,
                uint64_t *created)
{
	file_check *fc = g_new0(file_check, 1);

	*created = 0;
	fc->f = f;
	fc->path = path;
	fc->n = f->n;
	fc->quiet = quiet;
	fc->c.v = f->v;
	fc->c.path = path;
	for (int mb = 0; mb < STRIPE_MAX_N; mb++)
		fc->c.fd[mb] = -1;
	fsck_count(&f->files, 1);
	void *token = f->hooks ? f->hooks->file_begin(f, path) : NULL;
	int rc = open_file(fc, present);
	rc = rc == 0 ? check_file(fc, created) : rc > 0 ? 0 : rc;
	fsck_close_all(f, fc->c.fd);
	if (f->hooks)
		f->hooks->file_end(f, path, token);
	give_back_buffers(fc);
	g_free(fc);
	return rc;
}
