/* SPDX-License-Identifier: MIT */
/*
 * Regular files: opening the chunk files on every member and judging them
 * (which are current, which missing, corrupt or stale), the per-file
 * stripe buffer that turns small writes into stripe commits, read-modify-
 * write for partial stripes, sizes, truncate and fsync.
 *
 * One ecfile exists per file identity however many times (and by however
 * many names) it is open; its mutex serialises the data operations on it.
 * The generation counter works by reservation: chunk headers always hold a
 * generation at least as high as any record written, so after a crash a
 * reopened file continues above every generation it ever used.
 */
#include "ecfile.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <glib.h>
#include <openssl/rand.h>

#include "chunk.h"
#include "committer.h"
#include "journal_recovery.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "reader_rules.h"
#include "space.h"
#include "stripe.h"
#include "volume_internal.h"

struct ecfile {
	volume *v;
	uint8_t id[16];
	int refs;          /* under the volume's files lock */
	pthread_mutex_t lock; /* the file's state; order: first; held across member calls */
	char *path;        /* the name it was first opened by, for messages */
	stripe_ctx c;
	uint64_t size;     /* logical size, buffered writes included */
	uint64_t disk_end; /* stripes from here on hold nothing stored */
	uint64_t gen;      /* last generation used */
	uint64_t gen_durable; /* header generation known to be on disk */
	bool hdr_dirty;
	bool read_only;
	uint8_t *buf;      /* the stripe buffer: k strips */
	int64_t buf_stripe; /* stripe it holds, -1 for none */
	uint64_t lo, hi;   /* hull of its dirty bytes (lo == hi: clean) */
	bool loaded;       /* it holds the whole stripe, not just [lo, hi) */
	uint8_t *partial;  /* k strips of scratch for RMW and partial reads */
	/* Whole stripes on their way to the members (committer.h).  While it
	 * is busy, its thread owns the stripe context, gen and the header:
	 * everything that touches them but the write path drains it first. */
	cm_queue *cq;
	int cq_stripes;    /* stripes per batch; 0: not started, -1: none */
};

static uint64_t stripe_data(const ecfile *f)
{
	return layout_stripe_data(&f->c.lay);
}

/* ---- opening ---- */

typedef struct probe_chunk {
	int fd;
	int err; /* open_chunks: what open_chunk returned */
	enum chunk_state state;
	bool valid, empty, created;
	struct stat st; /* the chunk's, once opened */
	chunk_header h;
	uint8_t *head; /* the whole chunk, when the header read got all of it */
	size_t head_len;
} probe_chunk;

/* A short read of the header is the whole chunk (a small file of format
 * version 2): the open file keeps it for its first read (stripe_ctx.head). */
static void keep_head(probe_chunk *pc, const uint8_t *buf, size_t got)
{
	if (got >= CHUNK_HEADER_MAX)
		return;
	pc->head = g_memdup2(buf, got);
	pc->head_len = got;
}

/* The group a chunk just made must have: the caller's, or its
 * directory's if that is setgid (mop_new_object_gid). */
static gid_t new_chunk_gid(volume *v, int mb, const char *path, gid_t gid)
{
	char *dir = g_path_get_dirname(path);
	int dfd = volume_object_fd(v, mb, dir);
	g_free(dir);
	if (dfd < 0)
		return gid;
	gid = mop_new_object_gid(dfd, gid);
	MIO_CALL(close(dfd));
	return gid;
}

static int open_chunk(volume *v, int mb, const char *path, bool create, int flags, mode_t mode,
                      uid_t uid, gid_t gid, probe_chunk *pc)
{
	int acc = volume_defaults(v)->read_only ? O_RDONLY : O_RDWR;
	struct stat st;

	pc->fd = -1;
	pc->state = CHUNK_MISSING;
	/* The chunk opened (and made) in one call beneath the member root. */
	if (create) {
		pc->fd = volume_open_beneath(v, mb, path,
		                             acc | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		pc->created = pc->fd >= 0;
		if (pc->fd == -EEXIST && !(flags & O_EXCL))
			pc->fd = volume_open_beneath(v, mb, path, acc | O_NOFOLLOW | O_CLOEXEC, 0);
	} else {
		pc->fd = volume_open_beneath(v, mb, path, acc | O_NOFOLLOW | O_CLOEXEC, 0);
	}
	/* Errors make this chunk an erasure; the caller fails the open only
	 * if no member has the file (then the error is the answer). */
	if (pc->fd < 0) {
		int e = -pc->fd;
		pc->fd = -1;
		if (volume_member_error(v, mb, e, "opening a chunk"))
			pc->state = CHUNK_FAILED;
		else if (e != ENOENT)
			pc->state = CHUNK_CORRUPT;
		return pc->state == CHUNK_FAILED ? 0 : -e;
	}
	if (MIO_CALL(fstat(pc->fd, &st)) < 0 || !S_ISREG(st.st_mode)) {
		close(pc->fd);
		pc->fd = -1;
		pc->state = CHUNK_CORRUPT;
		return -EINVAL;
	}
	pc->st = st;
	/* Owned by the caller: already so if the daemon runs with the
	 * caller's fsuid/fsgid (or the directory gave the group), else chown
	 * it (root daemon), to the directory's group if that is setgid. */
	int rc = 0;
	if (pc->created && (st.st_uid != uid || st.st_gid != gid)) {
		gid = new_chunk_gid(v, mb, path, gid);
		if (st.st_uid != uid || st.st_gid != gid)
			rc = mop_fchown(v, mb, pc->fd, uid, gid);
	}
	if (rc < 0)
		ecfs_log(LOG_WARNING, "%s: cannot chown the chunk on member %d to %u:%u: %s", path,
		         mb, (unsigned)uid, (unsigned)gid, g_strerror(-rc));
	if (pc->created) {
		/* Made just now (O_EXCL): empty, nothing to read. */
		pc->empty = true;
		pc->state = CHUNK_CORRUPT;
		return 0;
	}
	uint8_t buf[CHUNK_HEADER_MAX];
	ssize_t got = mop_pread(v, mb, pc->fd, buf, sizeof(buf), 0);
	if (got < 0) {
		if (volume_member_error(v, mb, (int)-got, "reading a chunk header"))
			pc->state = CHUNK_FAILED;
		else
			pc->state = CHUNK_CORRUPT;
		return 0;
	}
	pc->empty = got == 0;
	pc->state = CHUNK_CORRUPT;
	const char *why;
	rc = chunk_header_decode(buf, (size_t)got, &pc->h, &why);
	if (rc == 0 && memcmp(pc->h.volume_uuid, volume_uuid(v), 16) == 0) {
		pc->valid = true;
		pc->state = CHUNK_OK;
		keep_head(pc, buf, (size_t)got);
	} else if (rc == -EPROTO) {
		/* Never guessed at: an erasure, named. */
		ecfs_log(LOG_ERR, "%s: the chunk on member %d (%s) is refused: %s %u (this "
		         "build reads 1 to %u)", path, mb, volume_member_path(v, mb), why,
		         (unsigned)pc->h.version, CHUNK_FORMAT_VERSION);
	}
	return 0;
}

/* A new file's chunks and headers in one batch on the relay (with the
 * member timeout, every member in service fast enough for it): each
 * member's chunk is made, then, once every member in service has made
 * its chunk (O_EXCL: none held one before), each writes the header the
 * file would have been given after the wait (write_headers), so the
 * caller waits once instead of twice.  The order on the members is the
 * same: every chunk made, then the headers.  A task that finds its turn
 * not come, or a chunk that was there already or failed, writes nothing,
 * and the caller writes every header after its wait as before. */
struct create_chain {
	pthread_mutex_t lock; /* guards the fields below; order: a leaf */
	bool excl;        /* O_EXCL: each member first looks for the name */
	uint64_t probed;  /* bit i: member i has looked */
	bool exists;      /* ... and some member holds the name */
	bool unsure;      /* an open found a member that had not looked yet */
	uint64_t in;      /* the members in service at the start */
	uint64_t created; /* bit i: member i's open has made its chunk */
	uint64_t written; /* bit i: member i's header is written */
	chunk_header h;   /* the header to write (position set per member) */
	layout lay;       /* positions only */
};

struct open_job {
	volume *v;
	const char *path;
	bool create;
	int flags, mb;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	probe_chunk *pc;
	struct create_chain *ch; /* NULL: no header written here */
	enum { JOB_PROBE, JOB_OPEN, JOB_HEADER, JOB_REFRESH } kind;
};

/* Under ch->lock: true once every member in service at the start, still
 * in service, has made its chunk. */
static bool chain_fresh(volume *v, const struct create_chain *ch)
{
	for (int mb = 0; mb < volume_n(v); mb++)
		if ((ch->in >> mb & 1) && (!volume_member_ok(v, mb) || !(ch->created >> mb & 1)))
			return false;
	return true;
}

static void chain_header_run(struct open_job *j)
{
	struct create_chain *ch = j->ch;
	pthread_mutex_lock(&ch->lock);
	bool fresh = chain_fresh(j->v, ch);
	pthread_mutex_unlock(&ch->lock);
	if (!fresh || !volume_member_ok(j->v, j->mb))
		return;
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h = ch->h;
	h.position = (uint32_t)layout_position_of(&ch->lay, j->mb);
	struct iovec iov = { buf, chunk_header_encode(&h, buf) };
	ssize_t r = mop_transfer(j->v, j->mb, j->pc->fd, &iov, 1, 0, true);
	if (r < 0) {
		volume_member_error(j->v, j->mb, (int)-r, "writing a chunk header");
		return;
	}
	pthread_mutex_lock(&ch->lock);
	ch->written |= 1ull << j->mb;
	pthread_mutex_unlock(&ch->lock);
}

/* The chain's last task: once every header is written, the directory of
 * the new file is stat'ed for the kernel's next getattr
 * (volume_set_refresh). */
static void chain_refresh_run(struct open_job *j)
{
	struct create_chain *ch = j->ch;
	pthread_mutex_lock(&ch->lock);
	bool done = ch->written == ch->in && chain_fresh(j->v, ch);
	pthread_mutex_unlock(&ch->lock);
	if (done)
		volume_refresh_parents(j->v, j->path, NULL);
}

/* Whether member mb holds something at path (O_EXCL). */
static bool holds_name(volume *v, int mb, const char *path)
{
	int fd = volume_object_fd(v, mb, path);
	if (fd >= 0)
		MIO_CALL(close(fd));
	return fd >= 0;
}

/* O_EXCL: whether member j->mb holds anything at the name (name_exists,
 * but on the relay ahead of the opens). */
static void chain_probe_run(struct open_job *j)
{
	struct create_chain *ch = j->ch;
	bool held = holds_name(j->v, j->mb, j->path);
	pthread_mutex_lock(&ch->lock);
	ch->probed |= 1ull << j->mb;
	ch->exists |= held;
	pthread_mutex_unlock(&ch->lock);
}

/* Under ch->lock, for an O_EXCL create: true once every member in service
 * has looked for the name and none holds it.  A member that has not
 * looked yet makes the chain unsure: no chunk is made, and the caller
 * starts again without a chain. */
static bool chain_name_free(volume *v, struct create_chain *ch)
{
	for (int mb = 0; mb < volume_n(v); mb++)
		if ((ch->in >> mb & 1) && volume_member_ok(v, mb) && !(ch->probed >> mb & 1))
			ch->unsure = true;
	return !ch->exists && !ch->unsure;
}

static void open_job_run(void *arg)
{
	struct open_job *j = arg;
	if (j->kind == JOB_PROBE) {
		chain_probe_run(j);
		return;
	}
	if (j->kind == JOB_OPEN && j->ch && j->ch->excl) {
		pthread_mutex_lock(&j->ch->lock);
		bool go = chain_name_free(j->v, j->ch);
		pthread_mutex_unlock(&j->ch->lock);
		if (!go)
			return; /* the caller answers EEXIST, or starts again */
	}
	if (j->kind == JOB_HEADER) {
		chain_header_run(j);
		return;
	}
	if (j->kind == JOB_REFRESH) {
		chain_refresh_run(j);
		return;
	}
	j->pc->err = open_chunk(j->v, j->mb, j->path, j->create, j->flags, j->mode, j->uid,
	                        j->gid, j->pc);
	if (j->ch && j->pc->created && j->pc->fd >= 0) {
		pthread_mutex_lock(&j->ch->lock);
		j->ch->created |= 1ull << j->mb;
		pthread_mutex_unlock(&j->ch->lock);
	}
}

/* open_chunk on every usable member, all in parallel on their workers, so
 * that a member that does not answer is given up after the I/O timeout
 * (memberio.h) instead of holding the open.  pc[mb] of a member not
 * tried, or given up, is CHUNK_FAILED with no fd.  With ch, each member's
 * header task follows in the same batch (struct create_chain). */
static void open_chunks(volume *v, const char *path, bool create, int flags, mode_t mode,
                        uid_t uid, gid_t gid, probe_chunk *pc, struct create_chain *ch)
{
	struct open_job jobs[3][STRIPE_MAX_N], refresh;
	int n = volume_n(v);
	mio_batch batch;

	mio_batch_init_small(volume_memberio(v), &batch);
	for (int mb = 0; mb < n; mb++) {
		memset(&pc[mb], 0, sizeof(pc[mb]));
		pc[mb].fd = -1;
		pc[mb].state = CHUNK_FAILED;
		jobs[0][mb] = (struct open_job){ v, path, create, flags, mb, mode, uid, gid, &pc[mb],
		                                 ch, JOB_OPEN };
		jobs[1][mb] = jobs[0][mb];
		jobs[1][mb].kind = JOB_HEADER;
		jobs[2][mb] = jobs[0][mb];
		jobs[2][mb].kind = JOB_PROBE;
	}
	for (int mb = 0; ch && ch->excl && mb < n; mb++)
		if (ch->in >> mb & 1)
			memberio_submit(volume_memberio(v), mb, &batch, open_job_run, &jobs[2][mb]);
	for (int mb = 0; mb < n; mb++)
		if (volume_member_ok(v, mb))
			memberio_submit(volume_memberio(v), mb, &batch, open_job_run, &jobs[0][mb]);
	for (int mb = 0; ch && mb < n; mb++)
		if (ch->in >> mb & 1)
			memberio_submit(volume_memberio(v), mb, &batch, open_job_run, &jobs[1][mb]);
	int last = ch ? volume_refresh_member(v, ch->in) : -1;
	if (last >= 0) {
		refresh = jobs[1][last];
		refresh.kind = JOB_REFRESH;
		memberio_submit(volume_memberio(v), last, &batch, open_job_run, &refresh);
	}
	uint64_t lost = mio_batch_wait(&batch);
	for (int mb = 0; mb < n; mb++)
		if (lost >> mb & 1) /* its descriptor, if any, stays with its worker */
			pc[mb] = (probe_chunk){ .fd = -1, .state = CHUNK_FAILED };
}

/* A header for a new file from the volume's defaults. */
static int new_header(volume *v, chunk_header *h)
{
	const volume_options *d = volume_defaults(v);

	memset(h, 0, sizeof(*h));
	h->version = volume_chunk_version(v);
	memcpy(h->volume_uuid, volume_uuid(v), 16);
	if (RAND_bytes(h->file_id, 16) != 1)
		return -EIO;
	h->rotation = (uint32_t)layout_rotation(h->file_id, volume_n(v));
	h->kind = d->code;
	h->k = (uint16_t)volume_k(v);
	h->m = (uint16_t)volume_m(v);
	h->w = (uint16_t)d->w;
	h->checksum = (uint16_t)checksum_alg_from_name(d->checksum);
	h->packet_size = d->packet_size;
	h->strip_size = d->strip_size;
	h->generation = 1;
	return 0;
}

static int write_headers(ecfile *f, bool reserve);
static uint64_t missing_mask(ecfile *f);

static void free_ecfile(ecfile *f)
{
	pthread_mutex_lock(&f->lock);
	cm_drain(f->cq);
	pthread_mutex_unlock(&f->lock);
	cm_queue_free(f->cq);
	stripe_wait_late_reads(&f->c);
	for (int i = 0; i < f->c.lay.n; i++)
		volume_member_close(f->v, i, f->c.fd[i]);
	stripe_ctx_free_buffers(&f->c);
	free(f->buf);
	free(f->partial);
	pthread_mutex_destroy(&f->lock);
	g_free(f->path);
	g_free(f);
}

static int truncate_locked(ecfile *f, uint64_t size);
static void recover_locked(ecfile *f);

/* An empty file whose create a crash cut short leaves chunks missing on
 * some members, or still without a header.  With no data to lose, the
 * create is finished (the missing chunks made, and the caller writes every
 * header) rather than the file failed for want of k chunks: a name shows
 * its old or its new state (intent.h).  Returns the members made usable. */
static uint64_t finish_create(volume *v, const char *path, const chunk_header *h,
                              probe_chunk *pc, int n)
{
	struct stat st;
	int like = -1;
	uint64_t made = 0;

	for (int mb = 0; mb < n && like < 0; mb++)
		if (pc[mb].fd >= 0 && pc[mb].state == CHUNK_OK)
			like = mb;
	if (h->size != 0 || volume_defaults(v)->read_only || like < 0 || fstat(pc[like].fd, &st) < 0)
		return 0;
	for (int mb = 0; mb < n; mb++) {
		probe_chunk *p = &pc[mb];
		if (!volume_member_ok(v, mb) || p->state == CHUNK_OK || p->state == CHUNK_FAILED ||
		    (p->fd >= 0 && !p->empty))
			continue; /* a chunk with content is repair's to judge */
		if (p->fd < 0 &&
		    (open_chunk(v, mb, path, true, 0, st.st_mode & 07777, st.st_uid, st.st_gid, p) < 0 ||
		     p->fd < 0 || !p->empty))
			continue;
		p->state = CHUNK_OK;
		made |= 1ull << mb;
	}
	return made;
}

static int name_probe_run(void *arg)
{
	const member_at *p = arg;
	return holds_name(p->v, p->mb, p->path);
}

/* Whether any member in service has something at path (O_EXCL), asked on
 * the members' workers, so that one that hangs costs the timeout. */
static bool name_exists(volume *v, const char *path)
{
	return volume_members_where(v, path, name_probe_run) != 0;
}

static void close_chunks(probe_chunk *pc, int n)
{
	for (int mb = 0; mb < n; mb++) {
		if (pc[mb].fd >= 0)
			close(pc[mb].fd);
		g_free(pc[mb].head);
		pc[mb].head = NULL;
	}
}

/* Which of the members' valid headers (hs[mb], NULL for none) a name's
 * file is: the file that most members hold a chunk of, so that a chunk
 * of another file put under the name (a copy made behind the daemon's
 * back) is an erasure rather than the file; ties go to the newest
 * generation.  Then that file's newest header.  Returns its member, or
 * -1 if there is no header. */
static int trusted_header(const chunk_header *const *hs, int n)
{
	int best = -1, best_votes = 0;
	for (int mb = 0; mb < n; mb++) {
		if (!hs[mb])
			continue;
		int votes = 0, newest = mb;
		for (int o = 0; o < n; o++)
			if (hs[o] && rules_same_file(hs[o], hs[mb])) {
				votes++;
				if (hs[o]->generation > hs[newest]->generation)
					newest = o;
			}
		if (votes > best_votes ||
		    (votes == best_votes && hs[newest]->generation > hs[best]->generation)) {
			best = newest;
			best_votes = votes;
		}
	}
	return best;
}

/* The header the file opens with (trusted_header), or a new one (*fresh)
 * when every chunk is empty (pre, if given).  0, or a negative errno: with no chunk
 * anywhere the first error other than ENOENT. */
static int choose_header(volume *v, const char *path, probe_chunk *pc, int n, chunk_header *h,
                         const chunk_header *pre, bool *fresh)
{
	int exists = 0, first_err = 0;
	const chunk_header *hs[STRIPE_MAX_N] = { 0 };

	for (int mb = 0; mb < n; mb++) {
		int e = pc[mb].err;
		if (e < 0 && e != -ENOENT && !first_err)
			first_err = e;
		exists += pc[mb].fd >= 0;
		hs[mb] = pc[mb].valid ? &pc[mb].h : NULL;
	}
	int ref = trusted_header(hs, n);
	if (!exists)
		return !volume_usable(v) ? -EIO : first_err ? first_err : -ENOENT;
	if (ref >= 0) {
		*h = pc[ref].h;
		return 0;
	}
	/* No header anywhere: a new file if every chunk is empty. */
	for (int mb = 0; mb < n; mb++)
		if (pc[mb].fd >= 0 && !pc[mb].empty) {
			ecfs_log(LOG_ERR, "%s: no member holds a valid chunk header", path);
			return -EIO;
		}
	if (volume_defaults(v)->read_only)
		return -EROFS;
	int rc = pre ? (*h = *pre, 0) : new_header(v, h);
	if (rc < 0)
		return rc;
	*fresh = true;
	for (int mb = 0; mb < n; mb++)
		if (pc[mb].fd >= 0)
			pc[mb].state = CHUNK_OK;
	return 0;
}

/* Judges each chunk against header h, finishes a create a crash cut
 * short, and requires k current chunks.  0 or -EIO. */
static int check_chunks(volume *v, const char *path, probe_chunk *pc, int n, chunk_header *h,
                        const layout *lay, bool *fresh)
{
	int usable = 0;

	for (int mb = 0; mb < n; mb++) {
		probe_chunk *p = &pc[mb];
		if (!*fresh && p->state == CHUNK_OK) {
			if (!rules_same_file(&p->h, h) ||
			    p->h.position != (uint32_t)layout_position_of(lay, mb))
				p->state = CHUNK_CORRUPT;
			else if (h->missed >> mb & 1)
				/* Only the newest header's record of missed writes
				 * makes a chunk stale: an older header generation
				 * alone may just be a header write cut short by a
				 * crash, and the strips themselves are checked per
				 * stripe (generation vote) anyway. */
				p->state = CHUNK_STALE;
		}
		usable += p->state == CHUNK_OK;
	}
	uint64_t made = finish_create(v, path, h, pc, n);
	if (made) {
		usable += __builtin_popcountll(made);
		h->missed &= ~made;
		*fresh = true; /* every chunk gets its header below */
	}
	if (usable < h->k) {
		ecfs_log(LOG_ERR, "%s: only %d members hold a current chunk, %d needed", path,
		         usable, h->k);
		return -EIO;
	}
	return 0;
}

/* The open file of header h, taking over the chunk descriptors in pc;
 * NULL (and the descriptors closed) if its code or checksum is not
 * available. */
static ecfile *ecfile_new(volume *v, const char *path, const chunk_header *h, probe_chunk *pc,
                          bool fresh)
{
	ecfile *f = g_new0(ecfile, 1);

	f->v = v;
	f->refs = 1;
	pthread_mutex_init(&f->lock, NULL);
	f->path = g_strdup(path);
	f->read_only = volume_defaults(v)->read_only;
	f->c.v = v;
	f->c.path = f->path;
	f->c.hdr = *h;
	ec_params p = { .kind = h->kind, .k = h->k, .m = h->m, .w = h->w,
	                .packet_size = h->packet_size };
	f->c.code = volume_code(v, &p);
	chunk_layout(h, f->c.code ? ec_block_align(f->c.code) : 1, &f->c.lay);
	f->c.sum = volume_checksum(v, h->checksum);
	for (int mb = 0; mb < volume_n(v); mb++) {
		f->c.fd[mb] = pc[mb].fd;
		f->c.state[mb] = pc[mb].state;
		pc[mb].fd = -1;
		stripe_keep_head(&f->c, mb, pc[mb].head, pc[mb].head_len);
		pc[mb].head = NULL;
	}
	f->size = h->size;
	f->gen = h->generation;
	f->disk_end = layout_stripe_count(&f->c.lay, h->size);
	/* Past the size nothing is committed, once recover_locked() has cut
	 * what an interrupted truncate or extending write left there. */
	f->c.written_end = f->disk_end;
	f->gen_durable = fresh ? 0 : h->generation;
	f->buf_stripe = -1;
	memcpy(f->id, h->file_id, 16);
	if (!f->c.code || !f->c.sum) {
		ecfs_log(LOG_ERR, "%s: code or checksum of the file is not available", path);
		free_ecfile(f);
		return NULL;
	}
	return f;
}

/* A file that is open already (f, its reference taken) opened again: the
 * chunks just opened are not needed.  0 or a negative errno (then the
 * reference is given back). */
static int open_again(ecfile *f, probe_chunk *pc, int n, int flags)
{
	int rc = 0;

	close_chunks(pc, n);
	if (flags & O_TRUNC) {
		pthread_mutex_lock(&f->lock);
		rc = truncate_locked(f, 0);
		pthread_mutex_unlock(&f->lock);
	}
	return rc < 0 ? (ecfile_release(f), rc) : 0;
}

/* Removes the chunk member mb made for a create that failed. */
static int uncreate_run(void *arg)
{
	const member_at *u = arg;
	const char *leaf;
	int pfd = volume_parent_fd(u->v, u->mb, u->path, &leaf);

	if (pfd < 0)
		return pfd;
	int rc = mop_unlinkat(u->v, u->mb, pfd, leaf, 0);
	MIO_CALL(close(pfd));
	return rc;
}

/* Removes the chunks this create made (those of pc[] marked created). */
static void uncreate(volume *v, const char *path, const probe_chunk *pc, int n)
{
	for (int mb = 0; mb < n; mb++) {
		member_at u = { v, mb, path };
		if (pc[mb].created)
			volume_on_member(v, mb, uncreate_run, &u);
	}
}

/* A new file takes room: one the volume has no room for (space.h), or
 * that a full member refused, fails with ENOSPC (or the member's errno),
 * and the chunks made for it are removed: the name is not left half made.
 * Opening an existing file (O_CREAT without O_EXCL) claims nothing. */
static int refused_for_space(volume *v, const char *path, probe_chunk *pc, int n)
{
	int full = 0;
	bool made = false;

	for (int mb = 0; mb < n; mb++) {
		made |= pc[mb].created;
		if (space_error(pc[mb].err))
			full = pc[mb].err;
	}
	if (!full && made)
		full = volume_claim_space(v, SPACE_ENTRY_COST);
	if (!full)
		return 0;
	close_chunks(pc, n);
	uncreate(v, path, pc, n);
	return full;
}

/* The chain of a create (struct create_chain) with the new file's header
 * pre: the header written is the one write_headers would write. */
/* A chunk made here, or any chunk of a new file, may have the inode of
 * one removed, whose size is remembered under a ctime it may share: the
 * size cache forgets them. */
static void forget_made(volume *v, const probe_chunk *pc, int n, bool fresh)
{
	for (int mb = 0; mb < n; mb++)
		if (pc[mb].fd >= 0 && (fresh || pc[mb].created))
			size_cache_chunk_made(volume_sizes(v), mb, &pc[mb].st);
}

static struct create_chain *create_chain_init(volume *v, struct create_chain *ch,
                                              const chunk_header *pre)
{
	memset(ch, 0, sizeof(*ch));
	pthread_mutex_init(&ch->lock, NULL);
	for (int mb = 0; mb < volume_n(v); mb++)
		ch->in |= (uint64_t)volume_member_ok(v, mb) << mb;
	ch->h = *pre;
	ch->h.missed = ~ch->in & ((2ull << (volume_n(v) - 1)) - 1);
	ch->h.generation = rules_header_generation(pre->generation, pre->generation, 1, false);
	chunk_layout(pre, 1, &ch->lay); /* positions only */
	return ch;
}

/* True if the chain wrote the header of the new file f on every member
 * that holds a chunk of it, the one write_headers would write now: f then
 * takes it as written. */
static bool headers_written(ecfile *f, const struct create_chain *ch)
{
	uint64_t held = 0;
	for (int mb = 0; mb < f->c.lay.n; mb++)
		if (f->c.fd[mb] >= 0)
			held |= 1ull << mb;
	if (ch->written != ch->in || held != ch->in || missing_mask(f) != ch->h.missed)
		return false;
	f->c.hdr.missed = ch->h.missed;
	f->c.hdr.generation = ch->h.generation;
	f->hdr_dirty = false;
	return true;
}

static int open_common(volume *v, const char *path, int flags, bool create, mode_t mode,
                       uid_t uid, gid_t gid, ecfile **out)
{
	int n = volume_n(v), rc;
	probe_chunk pc[STRIPE_MAX_N];
	chunk_header h;
	layout lay;
	bool fresh = false;

	*out = NULL;
	if (!volume_usable(v))
		return -EIO;
	struct create_chain ch, *chp = NULL;
	chunk_header pre;
	if (create && volume_all_relayed(v)) {
		if ((rc = new_header(v, &pre)) < 0)
			return rc;
		chp = create_chain_init(v, &ch, &pre);
		ch.excl = flags & O_EXCL;
	}
	if (create && (flags & O_EXCL) && !chp && name_exists(v, path))
		return -EEXIST;
	open_chunks(v, path, create, flags, mode, uid, gid, pc, chp);
	if (chp)
		pthread_mutex_destroy(&ch.lock);
	if (chp && ch.excl && (ch.exists || ch.unsure)) {
		/* no chunk was made: the name is taken, or ask again apart */
		close_chunks(pc, n);
		if (ch.exists || name_exists(v, path))
			return -EEXIST;
		chp = NULL;
		open_chunks(v, path, create, flags, mode, uid, gid, pc, NULL);
	}
	if (create && (rc = refused_for_space(v, path, pc, n)) < 0)
		return rc;
	rc = choose_header(v, path, pc, n, &h, chp ? &pre : NULL, &fresh);
	if (rc == 0) {
		chunk_layout(&h, 1, &lay); /* positions only */
		rc = check_chunks(v, path, pc, n, &h, &lay, &fresh);
	}
	if (rc < 0) {
		close_chunks(pc, n);
		return rc;
	}
	forget_made(v, pc, n, fresh);

	volume_files_lock(v);
	ecfile *f = volume_files_lookup(v, h.file_id);
	if (f) {
		f->refs++;
		volume_files_unlock(v);
		*out = f;
		return open_again(f, pc, n, flags);
	}
	f = ecfile_new(v, path, &h, pc, fresh);
	if (f)
		volume_files_insert(v, f->id, f);
	volume_files_unlock(v);
	if (!f)
		return -EIO;
	*out = f;

	pthread_mutex_lock(&f->lock);
	if (fresh && chp && headers_written(f, &ch))
		rc = 0;
	else if (fresh)
		rc = write_headers(f, false);
	if (!fresh)
		recover_locked(f);
	if (rc == 0 && !fresh && (flags & O_TRUNC) && f->size)
		rc = truncate_locked(f, 0);
	pthread_mutex_unlock(&f->lock);
	if (rc < 0) {
		ecfile_release(f);
		*out = NULL;
		if (fresh && create && space_error(rc))
			uncreate(v, path, pc, n); /* no room for its headers */
	}
	return rc;
}

int ecfile_create(volume *v, const char *path, int flags, mode_t mode, uid_t uid, gid_t gid,
                  ecfile **out)
{
	if (volume_defaults(v)->read_only)
		return -EROFS;
	return open_common(v, path, flags, true, mode, uid, gid, out);
}

int ecfile_open(volume *v, const char *path, int flags, ecfile **out)
{
	if ((flags & O_TRUNC) && volume_defaults(v)->read_only)
		return -EROFS;
	return open_common(v, path, flags, false, 0, 0, 0, out);
}

/* ---- headers and commits ---- */

/* Members that miss this file's writes: failed now, or without a current
 * chunk.  Recorded in the headers so repair knows what to rebuild. */
static uint64_t missing_mask(ecfile *f)
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
	uint64_t missed = h->missed | missing_mask(f);

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

static int write_headers(ecfile *f, bool reserve)
{
	return write_headers_sized(f, reserve, f->size);
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
	    (missing_mask(f) & ~f->c.hdr.missed)) {
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
	uint64_t gen = ++f->gen;
	if (unlock)
		pthread_mutex_unlock(&f->lock);
	rc = stripe_commit(&f->c, s0, cnt, data, gen, size);
	if (unlock)
		pthread_mutex_lock(&f->lock);
	if (rc == 0 && (missing_mask(f) & ~f->c.hdr.missed))  /* one dropped out meanwhile */
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

/* The committer's callback (committer.h). */
static int run_batch(void *owner, cm_batch *b)
{
	ecfile *f = owner;
	const uint8_t *p[STRIPE_MAX_N * STRIPE_BATCH];

	strip_pointers(f, b->data, b->cnt, p);
	return commit_stripes(f, b->s0, b->cnt, p, b->size, true);
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
	pthread_mutex_lock(&f->lock);
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
	rc = volume_claim_space(f->v, write_cost(f, pos, end));
	if (rc == 0)
		rc = ensure_buffers(f);
	start_committer(f);
	while (rc == 0 && pos < end) {
		uint64_t s = pos / sd, in = pos % sd;
		if (in == 0 && end - pos >= sd) {
			int64_t took = write_whole(f, pos, end, src + (pos - (uint64_t)off));
			rc = took < 0 ? (int)took : 0;
			if (took > 0)
				pos += (uint64_t)took;
			continue;
		}
		uint64_t len = (end < (s + 1) * sd ? end : (s + 1) * sd) - pos;
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
	pthread_mutex_unlock(&f->lock);
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
	int rc = stripe_fetch(&f->c, s, want, p);
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
	pthread_mutex_lock(&f->lock);
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
out:
	pthread_mutex_unlock(&f->lock);
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
 * leaves the new size with leftovers past it, which recover_locked() cuts
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
	rc = write_headers(f, false);
	if (rc < 0 || (first_gone >= f->disk_end && !force))
		return rc;
	rc = stripe_sync(&f->c, true);
	if (rc == 0)
		rc = stripe_truncate(&f->c, first_gone);
	if (rc == 0)
		rc = stripe_sync(&f->c, true);
	if (rc == 0)
		f->disk_end = f->c.written_end = first_gone;
	return rc;
}

/* Brings a file that a crash interrupted back to old-or-new content
 * before anything reads or writes it: stripes whose journaled overwrite
 * was cut short are rolled forward from the journal, and leftovers past
 * the size (a truncate or an extending write cut short) are cut.  Errors
 * are logged, not returned: what cannot be fixed now reads as it can. */
static void recover_locked(ecfile *f)
{
	uint64_t rolled = 0;
	bool dirty = false;
	int rc;

	if (f->read_only) {
		if (journal_recover(&f->c, false, &rolled) == 0 && rolled)
			ecfs_log(LOG_WARNING, "%s: %llu stripe(s) of an overwrite cut short by a crash "
			         "need the journal rolled forward: mount read-write or run ecfs-fsck",
			         f->path, (unsigned long long)rolled);
		return;
	}
	rc = ensure_buffers(f);
	if (rc == 0)
		rc = journal_recover(&f->c, true, &rolled);
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

static int truncate_locked(ecfile *f, uint64_t size)
{
	int rc;

	if (f->read_only)
		return -EROFS;
	if (!volume_usable(f->v))
		return -EIO;
	cm_drain(f->cq);
	rc = ensure_buffers(f);
	if (rc == 0)
		rc = commit_buffer(f, false);
	if (rc < 0)
		return rc;
	drop_buffer(f); /* simpler than cutting the cached stripe too */
	if (size < f->size)
		return cut_locked(f, size, false);
	f->size = size;
	return write_headers(f, false);
}

int ecfile_truncate(ecfile *f, off_t size)
{
	int rc;

	if (size < 0)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	rc = truncate_locked(f, (uint64_t)size);
	pthread_mutex_unlock(&f->lock);
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
	/* No space is set aside (stripes are written whole when they are
	 * written), but a volume without room for the range says so now. */
	rc = volume_claim_space(f->v, write_cost(f, (uint64_t)off, (uint64_t)off + (uint64_t)len));
	if (rc < 0 || (mode & FALLOC_FL_KEEP_SIZE))
		return rc;
	pthread_mutex_lock(&f->lock);
	if ((uint64_t)(off + len) > f->size)
		rc = truncate_locked(f, (uint64_t)(off + len));
	pthread_mutex_unlock(&f->lock);
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
		rc = write_headers(f, false);
	return rc;
}

int ecfile_flush(ecfile *f)
{
	pthread_mutex_lock(&f->lock);
	int rc = flush_locked(f);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int ecfile_fsync(ecfile *f, int datasync)
{
	int rc;

	pthread_mutex_lock(&f->lock);
	rc = flush_locked(f);
	if (rc == 0 && !f->read_only)
		rc = write_headers(f, false);
	if (rc == 0)
		rc = stripe_sync(&f->c, datasync != 0);
	/* Every stored stripe is durable now: the next header write says so,
	 * and a stripe below that mark is never taken for a first write cut
	 * short (the hole rule, docs/FORMAT.md 4.3). */
	uint64_t durable = layout_stripe_count(&f->c.lay, f->size);
	if (rc == 0 && durable != f->c.hdr.durable) {
		f->c.hdr.durable = durable;
		f->hdr_dirty = true; /* written at the next flush, unsynced */
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* Under f->lock, the committer drained: true if the headers on the
 * members hold f->size (nothing buffered, no header write pending). */
static bool headers_current(const ecfile *f)
{
	return !f->hdr_dirty && f->c.hdr.size == f->size &&
	       (f->buf_stripe < 0 || f->lo == f->hi);
}

int ecfile_release(ecfile *f)
{
	volume *v = f->v;
	int rc = ecfile_flush(f);

	volume_files_lock(v);
	bool last = f->refs == 1;
	volume_files_unlock(v);
	if (last && rc == 0) {
		/* The last close of a file with a journal: make what the journal
		 * protects durable in place and drop it, rather than leave it for
		 * the next open to judge.  Under the file's lock, so an open that
		 * comes in meanwhile shares this state. */
		pthread_mutex_lock(&f->lock);
		cm_drain(f->cq);
		if (f->c.jf.open && stripe_sync(&f->c, true) == 0)
			stripe_remove_journals(&f->c);
		/* A stat, chmod or utimens after the close (tar x sets the times
		 * then) finds the size without reading the headers. */
		if (headers_current(f))
			stripe_remember_size(&f->c);
		pthread_mutex_unlock(&f->lock);
	}
	volume_files_lock(v);
	last = --f->refs == 0;
	if (last)
		volume_files_remove(v, f->id);
	volume_files_unlock(v);
	if (last)
		free_ecfile(f);
	return rc;
}

int ecfile_release_all(volume *v)
{
	int closed = 0;

	for (;;) {
		volume_files_lock(v);
		ecfile *f = volume_files_any(v);
		volume_files_unlock(v);
		if (!f)
			return closed;
		char *path = g_strdup(f->path); /* f may be freed below */
		if (ecfile_release(f) < 0)
			ecfs_log(LOG_ERR, "%s: buffered writes not stored at unmount", path);
		g_free(path);
		closed++;
	}
}

/* ---- attributes ---- */

static void fill_size(struct stat *st, uint64_t size)
{
	st->st_size = (off_t)size;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
}

int ecfile_fstat(ecfile *f, struct stat *st)
{
	int rc = -EIO;

	pthread_mutex_lock(&f->lock);
	cm_drain(f->cq); /* the stripe context is the committer's meanwhile */
	uint64_t epoch = size_cache_epoch(volume_sizes(f->v));
	for (int mb = 0; mb < f->c.lay.n; mb++) {
		if (!stripe_member_usable(&f->c, mb))
			continue;
		if (fstat(f->c.fd[mb], st) == 0) {
			/* What a stat of the closed file will find, while
			 * nothing changes it (size_cache.h): a file just made
			 * is looked up, renamed or linked without its headers. */
			if (headers_current(f))
				size_cache_put(volume_sizes(f->v), mb, st, epoch, f->size,
				               chunk_file_ident(f->id));
			fill_size(st, f->size);
			rc = 0;
			break;
		}
		volume_member_error(f->v, mb, errno, "stat of a chunk");
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* What one member says about a path, for ecfile_stat. */
struct stat_probe {
	volume *v;
	int mb;
	const char *path;
	int rc;          /* 0, or -errno of the member's lstat */
	bool from_dir;   /* rc, not ENOENT, came from opening the object: an
	                  * answer (ENOTDIR, ENAMETOOLONG) or breakage */
	struct stat s;
	bool cached;     /* s is a chunk whose size is known (the size cache, an open file): size */
	uint64_t size;
	uint64_t ident;  /* and its identity (ecfile_ident) */
	bool want_ident; /* a directory's identity is asked for too */
	bool have_header;
	chunk_header h;
	/* Asked in the same relay batch as the first member's probe (lead),
	 * which runs before: skipped once the lead has answered it all. */
	struct stat_probe *lead;
	bool whole;      /* this probe answers it all (atomic, for the others) */
};

/* On the member's worker (volume_on_member): its lstat and, for a regular
 * file, the chunk header. */
static int stat_probe_run(void *arg)
{
	struct stat_probe *p = arg;
	struct stat s;
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h;

	if (p->lead && __atomic_load_n(&p->lead->whole, __ATOMIC_ACQUIRE))
		return p->rc = 0; /* not taken: the lead answered it all */
	int ofd = volume_object_fd(p->v, p->mb, p->path);
	if (ofd < 0) {
		/* ENOENT: the name or a directory above it is missing here;
		 * another error is the answer (ENOTDIR, ENAMETOOLONG) or the
		 * member's breakage, judged as a directory's (take_probe). */
		p->from_dir = ofd != -ENOENT;
		return p->rc = ofd;
	}
	int r = MIO_CALL(fstat(ofd, &s)) < 0 ? -errno : 0;
	uint64_t size;
	bool cached = r == 0 && S_ISREG(s.st_mode) &&
	              size_cache_get(volume_sizes(p->v), p->mb, &s, &size, &p->ident);
	int fd = -1;
	if (r == 0 && S_ISREG(s.st_mode) && !cached) {
		/* The very inode just stat'ed, opened for reading: no second walk. */
		char self[32];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", ofd);
		fd = mop_openat(p->v, p->mb, AT_FDCWD, self, O_RDONLY | O_CLOEXEC, 0);
	}
	if (r == 0 && p->want_ident && S_ISDIR(s.st_mode))
		p->ident = ecfile_object_ident(ofd, ".", s.st_mode);
	MIO_CALL(close(ofd));
	ssize_t got = fd >= 0 ? mop_pread(p->v, p->mb, fd, buf, sizeof(buf), 0) : -1;
	if (fd >= 0)
		MIO_CALL(close(fd));
	bool valid = got >= 0 && chunk_header_decode(buf, (size_t)got, &h, NULL) == 0 &&
	             !memcmp(h.volume_uuid, volume_uuid(p->v), 16);
	if (valid) {
		/* A chunk of a file open in the daemon: that file knows its size
		 * best (buffered writes included), and no other member need say
		 * which file the name is. */
		volume_files_lock(p->v);
		ecfile *f = volume_files_lookup(p->v, h.file_id);
		if (f) {
			size = __atomic_load_n(&f->size, __ATOMIC_RELAXED);
			p->ident = chunk_file_ident(h.file_id);
			cached = true;
		}
		volume_files_unlock(p->v);
	}
	p->s = s;
	p->cached = cached;
	if (cached)
		p->size = size;
	p->have_header = valid;
	if (valid)
		p->h = h;
	__atomic_store_n(&p->whole, r == 0 && (!S_ISREG(s.st_mode) || cached), __ATOMIC_RELEASE);
	return p->rc = r;
}

uint64_t ecfile_object_ident(int dirfd, const char *leaf, mode_t mode)
{
	char path[PATH_MAX];
	uint8_t b[8];

	if (!S_ISDIR(mode))
		return 0;
	/* lgetxattr beneath the directory's fd: one call, no symlink followed */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd, leaf);
	if (MIO_CALL(lgetxattr(path, ECFILE_IDENT_XATTR, b, sizeof(b))) != (ssize_t)sizeof(b))
		return 0;
	uint64_t id = 0;
	for (int i = 7; i >= 0; i--)
		id = id << 8 | b[i];
	return id;
}

void ecfile_store_object_ident(volume *v, int idx, int dirfd, const char *leaf,
                               uint64_t ident)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(ident >> (8 * i));
	mop_lsetxattrat(v, idx, dirfd, leaf, ECFILE_IDENT_XATTR, b, sizeof(b), 0);
}

uint64_t ecfile_new_ident(void)
{
	uint64_t id = 0;
	while (id == 0)
		if (RAND_bytes((unsigned char *)&id, sizeof(id)) != 1)
			id = (uint64_t)g_get_real_time() ^ (uint64_t)g_random_int() << 32;
	return id;
}

const uint8_t *ecfile_file_id(const ecfile *f)
{
	return f->id;
}

uint64_t ecfile_ident(ecfile *f)
{
	return chunk_file_ident(f->id);
}

static bool ident_is(void *f, void *ident)
{
	return chunk_file_ident(((ecfile *)f)->id) == *(const uint64_t *)ident;
}

int ecfile_open_ident(volume *v, uint64_t ident, ecfile **out)
{
	volume_files_lock(v);
	ecfile *f = volume_files_find(v, ident_is, &ident);
	if (f)
		f->refs++;
	volume_files_unlock(v);
	*out = f;
	return f ? 0 : -ENOENT;
}

bool ecfile_stat_open(volume *v, uint64_t ident, struct stat *st)
{
	volume_files_lock(v);
	ecfile *f = volume_files_find(v, ident_is, &ident);
	if (f)
		fill_size(st, __atomic_load_n(&f->size, __ATOMIC_RELAXED));
	volume_files_unlock(v);
	return f != NULL;
}

int ecfile_stat(volume *v, const char *path, struct stat *st)
{
	return ecfile_stat_ident(v, path, st, NULL);
}

/* The probes of the members in mask (volume_on_members): with a member
 * timeout at once, without one inline. */
static void stat_probes_run(volume *v, uint64_t mask, struct stat_probe *p, int *rcs)
{
	void *args[STRIPE_MAX_N];
	for (int mb = 0; mb < volume_n(v); mb++)
		args[mb] = &p[mb];
	volume_on_members(v, mask, stat_probe_run, args, rcs);
}

/* What ecfile_stat_ident gathers from the members' probes, in member order. */
struct stat_answer {
	struct stat *st;
	uint64_t *ident;
	int rc;          /* -ENOENT until a member has the name */
	bool whole;      /* *st and *ident are one member's whole answer */
	int first;       /* the first member with a regular file there */
	const chunk_header *hs[STRIPE_MAX_N]; /* their valid headers */
};

/* Takes member mb's probe (which returned r) into the answer: a->whole
 * once one member answers it all (not a regular file, or its size known). */
static void take_probe(volume *v, int mb, const struct stat_probe *p, int r,
                       struct stat_answer *a)
{
	if (r < 0 && (p->from_dir || r == -ETIMEDOUT)) {
		volume_member_error(v, mb, -r, "opening a directory");
		if (volume_member_ok(v, mb))
			a->rc = r;
		return;
	}
	if (r < 0) {
		/* ENOENT: the name, or a directory above it, is not there.  The
		 * member may have lost its directory: volume_member_error checks
		 * its root, also when no member holds the name, since a
		 * directory unmounted lazily under the volume still answers
		 * through its descriptor, and the lookup before a create is
		 * where that is seen first. */
		volume_member_error(v, mb, -r, "stat");
		return;
	}
	if (!S_ISREG(p->s.st_mode) || p->cached) {
		*a->st = p->s; /* not ours to interpret, or its size known */
		*a->ident = p->ident; /* a directory's, or the cached file's */
		if (p->cached)
			fill_size(a->st, p->size);
		a->whole = true;
		return;
	}
	if (a->first < 0)
		a->first = mb;
	if (p->have_header)
		a->hs[mb] = &p->h;
}

/* A regular file's answer from the probes taken: the lstat of the first
 * member holding the trusted file's header (else of the first with a
 * chunk), its size from that header or from the open file, which knows it
 * best (buffered writes included); remembered in the size cache. */
static void finish_stat(volume *v, const struct stat_probe *p, struct stat_answer *a,
                        uint64_t epoch)
{
	int ref = trusted_header(a->hs, volume_n(v)), from = a->first;
	uint64_t size = 0;
	bool open_now = false;

	*a->ident = 0;
	for (int mb = 0; ref >= 0 && mb < volume_n(v); mb++)
		if (a->hs[mb] && rules_same_file(a->hs[mb], a->hs[ref])) {
			from = mb;
			break;
		}
	*a->st = p[from].s;
	if (ref >= 0) {
		size = a->hs[ref]->size;
		*a->ident = chunk_file_ident(a->hs[ref]->file_id);
		volume_files_lock(v);
		ecfile *f = volume_files_lookup(v, a->hs[ref]->file_id);
		if (f) {
			size = __atomic_load_n(&f->size, __ATOMIC_RELAXED);
			open_now = true;
		}
		volume_files_unlock(v);
		if (!open_now)
			size_cache_put(volume_sizes(v), from, a->st, epoch, size, *a->ident);
	}
	fill_size(a->st, size);
}

int ecfile_stat_ident(volume *v, const char *path, struct stat *st, uint64_t *ident)
{
	uint64_t unasked, epoch = size_cache_epoch(volume_sizes(v));
	struct stat_answer a = { .st = st, .ident = ident ? ident : &unasked, .rc = -ENOENT,
	                         .first = -1 };
	struct stat_probe p[STRIPE_MAX_N];
	int rcs[STRIPE_MAX_N];

	if (!volume_usable(v))
		return -EIO;
	/* The first member most often answers alone (a directory, a file whose
	 * size is cached); else the others are asked at once: a name that is
	 * not there, or a regular file's headers. */
	uint64_t rest = 0;
	int first = -1;
	for (int mb = 0; mb < volume_n(v); mb++) {
		p[mb] = (struct stat_probe){ .v = v, .mb = mb, .path = path, .want_ident = !!ident };
		/* a member being rebuilt may hold a name removed meanwhile */
		if (!volume_member_answers(v, mb))
			continue;
		if (first < 0)
			first = mb;
		else
			rest |= 1ull << mb;
	}
	/* On the relay, in order, both steps take one hand-off: the others'
	 * probes come after the first's and skip once it answered it all. */
	bool together = first >= 0 && rest && volume_all_relayed(v);
	if (together) {
		for (int mb = 0; mb < volume_n(v); mb++)
			if (rest >> mb & 1)
				p[mb].lead = &p[first];
		stat_probes_run(v, rest | 1ull << first, p, rcs);
	} else if (first >= 0) {
		rcs[first] = volume_on_member(v, first, stat_probe_run, &p[first]);
	}
	if (first >= 0)
		take_probe(v, first, &p[first], rcs[first], &a);
	if (!a.whole && rest) {
		if (!together)
			stat_probes_run(v, rest, p, rcs);
		for (int mb = 0; mb < volume_n(v) && !a.whole; mb++)
			if (rest >> mb & 1)
				take_probe(v, mb, &p[mb], rcs[mb], &a);
	}
	if (a.whole)
		return 0;
	if (a.first < 0)
		return a.rc;
	finish_stat(v, p, &a, epoch);
	return 0;
}

uint64_t ecfile_stat_epoch(volume *v)
{
	return size_cache_epoch(volume_sizes(v));
}

bool ecfile_stat_from(volume *v, int mb, struct stat *st, uint64_t *ident)
{
	uint64_t size;

	*ident = 0;
	if (!S_ISREG(st->st_mode))
		return true;
	if (!size_cache_get(volume_sizes(v), mb, st, &size, ident))
		return false;
	fill_size(st, size);
	return true;
}

static const char *state_name(enum chunk_state s)
{
	switch (s) {
	case CHUNK_OK: return "ok";
	case CHUNK_MISSING: return "missing";
	case CHUNK_CORRUPT: return "corrupt";
	case CHUNK_STALE: return "stale";
	default: return "failed";
	}
}

char *ecfile_layout_text(ecfile *f)
{
	GString *s = g_string_new(NULL);
	const chunk_header *h = &f->c.hdr;

	pthread_mutex_lock(&f->lock);
	cm_drain(f->cq);
	g_string_append_printf(s, "code=%s\nk=%d\nm=%d\nw=%d\npacket_size=%llu\nstrip_size=%llu\n"
	                       "checksum=%s\nsize=%llu\ngeneration=%llu\nrotation=%u\nhealthy=",
	                       ec_kind_name(h->kind), h->k, h->m, h->w,
	                       (unsigned long long)h->packet_size, (unsigned long long)h->strip_size,
	                       checksum_alg_name(h->checksum), (unsigned long long)f->size,
	                       (unsigned long long)f->gen, h->rotation);
	bool first = true;
	for (int mb = 0; mb < f->c.lay.n; mb++)
		if (stripe_member_usable(&f->c, mb)) {
			g_string_append_printf(s, "%s%d", first ? "" : ",", mb);
			first = false;
		}
	g_string_append_c(s, '\n');
	for (int mb = 0; mb < f->c.lay.n; mb++) {
		stripe_member_usable(&f->c, mb);
		g_string_append_printf(s, "member.%d=%s %s\n", mb, state_name(f->c.state[mb]),
		                       volume_member_path(f->v, mb));
	}
	pthread_mutex_unlock(&f->lock);
	return g_string_free(s, FALSE);
}

/* ---- the online heal ---- */

ecfile *ecfile_heal_begin(volume *v, const char *path)
{
	ecfile *f;

	if (ecfile_open(v, path, 0, &f) < 0)
		return NULL;
	pthread_mutex_lock(&f->lock);
	/* Commits in flight land first: the heal reads the stored stripes.  A
	 * commit error stays queued for the file's user; the buffered stripe
	 * stays buffered (it reaches the healed member when committed). */
	cm_drain(f->cq);
	/* The headers say how far the stored stripes go: the heal rebuilds
	 * that far. */
	if (f->hdr_dirty && !f->read_only) {
		int rc = write_headers(f, false);
		if (rc < 0)
			ecfs_log(LOG_WARNING, "%s: cannot write its headers before healing it: %s",
			         f->path, g_strerror(-rc));
	}
	return f;
}

void ecfile_heal_end(ecfile *f, const char *path, uint64_t members)
{
	stripe_wait_late_reads(&f->c); /* before any descriptor is replaced */
	for (int mb = 0; mb < f->c.lay.n; mb++) {
		probe_chunk pc;
		if (!(members >> mb & 1) || !volume_member_ok(f->v, mb))
			continue;
		memset(&pc, 0, sizeof(pc));
		open_chunk(f->v, mb, path, false, 0, 0, 0, 0, &pc);
		g_free(pc.head); /* a small chunk read whole: the file reads its own */
		/* Taken back only if the heal left it current.  Even a chunk this
		 * file holds as usable is taken again: its fd may be one into the
		 * member's old directory, from before the member failed and was
		 * replaced. */
		if (pc.fd < 0 || !pc.valid || !rules_same_file(&pc.h, &f->c.hdr) ||
		    pc.h.position != (uint32_t)layout_position_of(&f->c.lay, mb) ||
		    pc.h.missed >> mb & 1) {
			if (pc.fd >= 0)
				close(pc.fd);
			continue;
		}
		if (f->c.fd[mb] >= 0)
			close(f->c.fd[mb]);
		f->c.fd[mb] = pc.fd;
		f->c.state[mb] = CHUNK_OK;
		if (pc.h.generation > f->c.hdr.generation)
			f->c.hdr.generation = pc.h.generation;
		f->c.hdr.missed = pc.h.missed;
	}
	pthread_mutex_unlock(&f->lock);
	ecfile_release(f);
}
