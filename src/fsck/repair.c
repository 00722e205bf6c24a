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
 * least k good strips wins, and every other strip is an erasure (the
 * stripe pass, repair_pass.c).  Runs of stripes go through two slots so
 * that one run's repairs are written while the next run is read.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunk.h"
#include "ecfile.h"
#include "journal_recovery.h"
#include "layout.h"
#include "log.h"
#include "memberops.h"
#include "memberio.h"
#include "reader_rules.h"
#include "repair_internal.h"
#include "smalllog_replay.h"
#include "stripe.h"
#include "volume_internal.h"

/* f->links and f->repair_pool: files are checked on several threads. */
static GMutex shared_lock; /* order: a leaf */

enum fsck_status fsck_outcome(const fsck *f, int rc)
{
	if (!f->o.repair)
		return FSCK_REPAIRABLE;
	return rc < 0 ? FSCK_FAILED : FSCK_REPAIRED;
}

/* A pool's alignment: that of a huge page (2 MiB on x86-64). */
#define POOL_ALIGN (2u << 20)

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
		if (posix_memalign((void **)&p->mem, POOL_ALIGN, need)) {
			p->mem = NULL;
			return -ENOMEM;
		}
		p->size = need;
		/* Huge pages where the kernel has them: a few faults instead of
		 * one per 4 KiB when the pool is first read into, and fewer
		 * TLB misses in the copies out of the members' files. */
		(void)madvise(p->mem, need, MADV_HUGEPAGE);
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

	fc->pool = NULL;
	if (!p)
		return;
	if (p->lent) {
		mio_free_or_keep(p->mem, true);
		g_free(p);
		return;
	}
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

/* Full-length pread (repair_internal.h). */
ssize_t repair_read_all(volume *v, int idx, int fd, void *buf, size_t len, off_t off, bool lent)
{
	size_t done = 0;

	while (done < len) {
		uint8_t *to = (uint8_t *)buf + done;
		ssize_t r = lent ? mop_pread_lent(v, idx, fd, to, len - done, off + (off_t)done)
		                 : mop_pread(v, idx, fd, to, len - done, off + (off_t)done);
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

/* ---- opening the chunks ---- */

typedef struct chunk_probe {
	fsck *f;
	const char *path;
	int mb;
	int pfd;          /* the parent directory's fd, or -1: found from path */
	const char *leaf; /* the file's name in pfd */
	uint8_t *buf;     /* CHUNK_HEADER_MAX bytes: the chunk's first bytes */
	off_t size;       /* the chunk's size as the walk found it, -1: unknown */
	ssize_t got;      /* how many were read, or -1 */
	int fd, err;
	bool valid, empty;
	const char *why;
	chunk_header h;
} chunk_probe;

/* Opens the file's chunk on member mb in its parent pfd, or from the path
 * if pfd < 0; -errno if it cannot. */
static int open_chunk(fsck *f, int mb, const char *path, int pfd, const char *leaf)
{
	int own = pfd < 0 ? volume_parent_fd(f->v, mb, path, &leaf) : -1;

	if (pfd < 0 && own < 0)
		return own;
	int fd = MIO_CALL(openat(own >= 0 ? own : pfd, leaf,
	                         (f->o.repair ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC));
	int err = errno;
	if (own >= 0)
		MIO_CALL(close(own));
	return fd < 0 ? -err : fd;
}

/* On member p->mb's worker (fsck_on_members): opens its chunk and reads
 * its header, with what follows it up to CHUNK_HEADER_MAX bytes (all of
 * a small chunk: the stripe pass takes its strips from there). */
static int probe_chunk(void *arg)
{
	chunk_probe *p = arg;
	fsck *f = p->f;
	int fd = open_chunk(f, p->mb, p->path, p->pfd, p->leaf);

	p->err = fd < 0 ? -fd : 0;
	p->fd = fd < 0 ? -1 : fd;
	p->got = -1;
	if (fd < 0)
		return 0;
	uint8_t *buf = p->buf;
	/* a chunk read to its known size needs no read that finds its end */
	size_t want = p->size >= 0 && p->size < CHUNK_HEADER_MAX ? (size_t)p->size : CHUNK_HEADER_MAX;
	ssize_t got = repair_read_all(f->v, p->mb, fd, buf, want, 0, false);
	p->got = got;
	p->empty = got == 0;
	if (got < 0) {
		p->why = "header unreadable";
	} else if (chunk_header_decode(buf, (size_t)got, &p->h, &p->why) == 0) {
		p->why = volume_header_misfit(f->v, &p->h, p->mb);
		p->valid = !p->why;
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
	int dfd;          /* the parent directory's fd, or -1: found from path */
	const char *name; /* the file's name in dfd */
	bool linked;
} create_call;

/* On the member's worker (fsck_on_member): the chunk's descriptor or a
 * negative errno. */
static int create_chunk_run(void *arg)
{
	create_call *c = arg;
	fsck *f = c->f;
	int mb = c->mb;
	const char *leaf = c->name, *sleaf;
	int pfd = c->dfd >= 0 ? c->dfd : volume_parent_fd(f->v, mb, c->path, &leaf);
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
	if (pfd != c->dfd)
		MIO_CALL(close(pfd));
	return fd;
}

static int create_chunk(file_check *fc, int mb, bool *linked)
{
	create_call c = { fc->f, mb, fc->path, fc->link_from, fc->dfd ? fc->dfd[mb] : -1,
	                  fc->name, false };
	int fd = fsck_on_member(fc->f, mb, create_chunk_run, &c);

	*linked = fd >= 0 && c.linked;
	return fd;
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

	fc->head = g_malloc((size_t)n * CHUNK_HEADER_MAX);
	for (int mb = 0; mb < n; mb++) {
		p[mb] = (chunk_probe){ .f = f, .path = fc->path, .mb = mb, .fd = -1, .got = -1,
		                       .pfd = fc->dfd ? fc->dfd[mb] : -1, .leaf = fc->name,
		                       .size = fc->seen ? fc->seen[mb].size : -1,
		                       .buf = fc->head + (size_t)mb * CHUNK_HEADER_MAX };
		args[mb] = &p[mb];
	}
	fsck_on_members(f, mask, probe_chunk, args, rcs);
	for (int mb = 0; mb < n; mb++) {
		if (mask >> mb & 1 && rcs[mb] < 0) /* given up: nothing it said counts */
			p[mb] = (chunk_probe){ .fd = -1, .err = -rcs[mb], .got = -1 };
		fc->head_got[mb] = p[mb].fd >= 0 ? p[mb].got : -1;
	}
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
			int fd = create_chunk(fc, mb, &linked);
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
	if (mb < fc->n && fc->seen && fc->seen[mb].nlink == 1)
		return; /* the walk found it with one link */
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

/* Small writes a crash left in the file's log (docs/FORMAT.md 12): with
 * -n reported, with -y replayed once the file is checked and closed
 * (log_replay), through an open of the file as the daemon's. */
static void count_log(file_check *fc)
{
	smalllog_found found;

	if (smalllog_collect(&fc->c, &found) == 0)
		fc->log_records = (uint64_t)found.count;
	smalllog_found_free(&found);
	if (fc->log_records && !fc->f->o.repair)
		fsck_problem(fc->f, "log", fc->path, -1, 0, 0, FSCK_REPAIRABLE,
		             "%llu small write(s) in its log, to apply to the stripes",
		             (unsigned long long)fc->log_records);
}

/* A member whose chunk is rebuilt, or that missed the file's writes,
 * holds no live small-write log record: its copy goes before anything
 * replays the log, as the online heal removes it (ecfile_heal_end). */
static void forget_stale_logs(file_check *fc)
{
	uint64_t no_logs = __atomic_load_n(&fc->f->no_logs, __ATOMIC_ACQUIRE);
	uint64_t stale = (fc->chunk_bad | fc->found_missed) & ~fc->unwritable & ~no_logs;

	if (!fc->f->o.repair || fc->f->hooks || fc->hopeless || !stale)
		return;
	for (int mb = 0; mb < fc->n; mb++) {
		if (!(stale >> mb & 1) || !volume_member_ok(fc->f->v, mb))
			continue;
		int rc = smalllog_remove_copy(fc->f->v, mb, fc->c.hdr.file_id);
		if (rc < 0)
			fsck_problem(fc->f, "log", fc->path, mb, 0, 0, FSCK_FAILED,
			             "cannot remove the stale small-write log: %s", g_strerror(-rc));
	}
}

static void log_replay(file_check *fc)
{
	/* the replay may write log copies: no member is known free of them */
	__atomic_store_n(&fc->f->no_logs, 0, __ATOMIC_RELEASE);
	int rc = ecfile_replay_log(fc->f->v, fc->path);

	fsck_problem(fc->f, "log", fc->path, -1, 0, 0, rc == 0 ? FSCK_REPAIRED : FSCK_FAILED,
	             "%llu small write(s) in its log, to apply to the stripes%s%s",
	             (unsigned long long)fc->log_records, rc < 0 ? ": " : "",
	             rc < 0 ? g_strerror(-rc) : "");
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
	repair_choose_sources(fc);
	uint64_t count = layout_stripe_count(&fc->c.lay, fc->c.hdr.size);
	if (f->quick && !fc->chunk_bad && !fc->c.hdr.missed)
		count = 0; /* every chunk current: its strips were checked before */
	if (count) {
		rc = take_buffers(fc);
		if (rc == 0)
			rc = repair_stripe_pass(fc, count);
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
	if (good >= fc->k && !fc->f->hooks) {
		roll_forward(fc);
		count_log(fc);
	}
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
	return repair_file_at(f, path, NULL, NULL, NULL, present, quiet, created);
}

int repair_file_at(fsck *f, const char *path, const int *dfd, const char *name,
                   const repair_seen *seen, uint64_t present, uint64_t quiet,
                   uint64_t *created)
{
	file_check *fc = g_new0(file_check, 1);

	*created = 0;
	fc->f = f;
	fc->path = path;
	fc->dfd = dfd;
	fc->name = name;
	fc->seen = seen;
	fc->n = f->n;
	fc->quiet = quiet;
	fc->c.v = f->v;
	fc->c.path = path;
	for (int mb = 0; mb < STRIPE_MAX_N; mb++)
		fc->c.fd[mb] = -1;
	fsck_count(&f->files, 1);
	void *token = f->hooks ? f->hooks->file_begin(f, path) : NULL;
	bool skip = f->hooks && f->hooks->skip && f->hooks->skip(f, path, token);
	int rc = skip ? 1 : open_file(fc, present);
	rc = rc == 0 ? check_file(fc, created) : rc > 0 ? 0 : rc;
	if (rc == 0)
		forget_stale_logs(fc);
	fsck_close_all(f, fc->c.fd);
	if (rc == 0 && fc->log_records && f->o.repair)
		log_replay(fc);
	if (f->hooks)
		f->hooks->file_end(f, path, token);
	give_back_buffers(fc);
	g_free(fc->head);
	g_free(fc);
	return rc;
}

