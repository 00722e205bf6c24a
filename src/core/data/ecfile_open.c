/* SPDX-License-Identifier: MIT */
/*
 * Opening a regular file: each member's chunk opened (or made, for a
 * create) and judged against the trusted header (current, missing,
 * corrupt or stale), an interrupted create finished, and the open file
 * shared by identity.  A create on the relay makes the chunks and writes
 * their headers in one batch (struct create_chain); one that fails, or
 * that the volume has no room for, removes the chunks it made.
 */
#include "ecfile_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <openssl/rand.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "reader_rules.h"
#include "space.h"
#include "volume_internal.h"

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

int ecfile_open_chunk(volume *v, int mb, const char *path, bool create, int flags, mode_t mode,
                     uid_t uid, gid_t gid, probe_chunk *pc)
{
	int acc = volume_settings(v)->read_only ? O_RDONLY : O_RDWR;
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
		if (volume_member_io_error(v, mb, e, "opening a chunk", VOLUME_IO_READ))
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
		if (volume_member_io_error(v, mb, (int)-got, "reading a chunk header",
		                           VOLUME_IO_READ))
			pc->state = CHUNK_FAILED;
		else
			pc->state = CHUNK_CORRUPT;
		return 0;
	}
	pc->empty = got == 0;
	pc->state = CHUNK_CORRUPT;
	const char *why;
	rc = chunk_header_decode(buf, (size_t)got, &pc->h, &why);
	const char *misfit = rc == 0 ? volume_header_misfit(v, &pc->h, mb) : NULL;
	if (rc == 0 && !misfit) {
		pc->valid = true;
		pc->state = CHUNK_OK;
		keep_head(pc, buf, (size_t)got);
	} else if (rc == -EPROTO) {
		/* Never guessed at: an erasure, named. */
		ecfs_log(LOG_ERR, "%s: the chunk on member %d (%s) is refused: %s %u (this "
		         "build reads 1 to %u)", path, mb, volume_member_path(v, mb), why,
		         (unsigned)pc->h.version, CHUNK_FORMAT_VERSION);
	} else if (misfit || rc == -ERANGE) {
		/* A sealed header whose fields no volume, or not this one, could
		 * hold: an erasure, named once per open of the file (the open
		 * file keeps the verdict; reads do not look again). */
		ecfs_log(LOG_ERR, "%s: the chunk on member %d (%s) is refused: %s", path, mb,
		         volume_member_path(v, mb), misfit ? misfit : why);
	}
	return 0;
}

/* A new file's chunks and headers in one batch on the relay (with the
 * member timeout, every member in service fast enough for it): each
 * member's chunk is made, then, once every member in service has made
 * its chunk (O_EXCL: none held one before), each writes the header the
 * file would have been given after the wait (ecfile_write_headers), so the
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
		volume_member_io_error(j->v, j->mb, (int)-r, "writing a chunk header",
		                       VOLUME_IO_WRITE);
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
	j->pc->err = ecfile_open_chunk(j->v, j->mb, j->path, j->create, j->flags, j->mode,
	                               j->uid, j->gid, j->pc);
	if (!mio_claim()) {
		/* a bounded open went on without it (open_bounded) */
		if (j->pc->fd >= 0)
			MIO_CALL(close(j->pc->fd));
		g_free(j->pc->head);
		return;
	}
	if (j->ch && j->pc->created && j->pc->fd >= 0) {
		pthread_mutex_lock(&j->ch->lock);
		j->ch->created |= 1ull << j->mb;
		pthread_mutex_unlock(&j->ch->lock);
	}
}

/* The jobs of a bounded open, in memory of their own: a job cut by the
 * bound finishes after its caller has gone on. */
struct open_round {
	mio_batch batch;
	struct open_job jobs[STRIPE_MAX_N];
	probe_chunk pc[STRIPE_MAX_N];
	char *path;
};

static void open_round_free(void *arg)
{
	struct open_round *r = arg;
	g_free(r->path);
	g_free(r);
}

/* An open of an existing file (no create) on the members in `members`,
 * on the relay if small: waited for no longer than their bound
 * (mio_batch_wait_bounded); pc[mb] of a member cut there stays
 * CHUNK_FAILED with no fd, an erasure for this open only.  Returns the
 * members cut. */
static uint64_t open_bounded(volume *v, const char *path, int flags, probe_chunk *pc,
                             uint64_t members, bool small)
{
	memberio *mio = volume_memberio(v);
	struct open_round *r = g_new0(struct open_round, 1);

	r->path = g_strdup(path);
	if (small)
		mio_batch_init_small(mio, &r->batch);
	else
		mio_batch_init(&r->batch);
	mio_batch_bound(&r->batch);
	mio_batch_by_release(&r->batch);
	for (int mb = 0; mb < volume_n(v); mb++) {
		if (!(members >> mb & 1))
			continue;
		r->pc[mb] = (probe_chunk){ .fd = -1, .state = CHUNK_FAILED };
		r->jobs[mb] = (struct open_job){ .v = v, .path = r->path, .flags = flags, .mb = mb,
		                                 .pc = &r->pc[mb], .kind = JOB_OPEN };
		memberio_submit(mio, mb, &r->batch, open_job_run, &r->jobs[mb]);
	}
	uint64_t cut = mio_batch_wait_bounded(mio, &r->batch);
	uint64_t lost = __atomic_load_n(&r->batch.lost, __ATOMIC_ACQUIRE);
	for (int mb = 0; mb < volume_n(v); mb++)
		if ((members & ~cut & ~lost) >> mb & 1)
			pc[mb] = r->pc[mb];
	mio_batch_release(&r->batch, open_round_free, r);
	return cut;
}

/* A plain open with a member timeout: bounded.  On the relay, the tasks
 * behind one that hangs there are cut with it: those of members not
 * stalled themselves are asked again on their own workers. */
static void open_chunks_bounded(volume *v, const char *path, int flags, probe_chunk *pc)
{
	uint64_t members = 0, again = 0;

	for (int mb = 0; mb < volume_n(v); mb++)
		if (volume_member_ok(v, mb))
			members |= 1ull << mb;
	uint64_t cut = open_bounded(v, path, flags, pc, members, true);
	for (int mb = 0; mb < volume_n(v); mb++)
		if ((cut >> mb & 1) && !memberio_stalled(volume_memberio(v), mb))
			again |= 1ull << mb;
	if (again)
		open_bounded(v, path, flags, pc, again, false);
}

/* ecfile_open_chunk on every usable member, all in parallel on their workers, so
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

	for (int mb = 0; mb < n; mb++) {
		memset(&pc[mb], 0, sizeof(pc[mb]));
		pc[mb].fd = -1;
		pc[mb].state = CHUNK_FAILED;
	}
	if (!create && !ch && memberio_timeout(volume_memberio(v))) {
		open_chunks_bounded(v, path, flags, pc);
		return;
	}
	mio_batch_init_small(volume_memberio(v), &batch);
	for (int mb = 0; mb < n; mb++) {
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
	const volume_file_defaults *d = volume_defaults(v);

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
	if (h->size != 0 || volume_settings(v)->read_only || like < 0 || fstat(pc[like].fd, &st) < 0)
		return 0;
	for (int mb = 0; mb < n; mb++) {
		probe_chunk *p = &pc[mb];
		if (!volume_member_ok(v, mb) || p->state == CHUNK_OK || p->state == CHUNK_FAILED ||
		    (p->fd >= 0 && !p->empty))
			continue; /* a chunk with content is repair's to judge */
		if (p->fd < 0 &&
		    (ecfile_open_chunk(v, mb, path, true, 0, st.st_mode & 07777, st.st_uid,
		                       st.st_gid, p) < 0 ||
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

/* The file most members hold a chunk of, then its newest header
 * (ecfile.h). */
int ecfile_trusted_header(const chunk_header *const *hs, int n)
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

/* The header the file opens with (ecfile_trusted_header), or a new one (*fresh)
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
	int ref = ecfile_trusted_header(hs, n);
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
	if (volume_settings(v)->read_only)
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
                        bool *fresh)
{
	int usable = 0;

	for (int mb = 0; mb < n; mb++) {
		probe_chunk *p = &pc[mb];
		if (!*fresh && p->state == CHUNK_OK) {
			/* its position fits its member (ecfile_open_chunk) */
			if (!rules_same_file(&p->h, h))
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
	f->read_only = volume_settings(v)->read_only;
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
	/* Past the size nothing is committed, once ecfile_recover_locked() has cut
	 * what an interrupted truncate or extending write left there. */
	f->c.written_end = f->disk_end;
	f->gen_durable = fresh ? 0 : h->generation;
	f->buf_stripe = -1;
	memcpy(f->id, h->file_id, 16);
	if (!f->c.code || !f->c.sum) {
		ecfs_log(LOG_ERR, "%s: code or checksum of the file is not available", path);
		ecfile_free(f);
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
		ecfile_lock(f);
		rc = ecfile_truncate_locked(f, 0);
		ecfile_unlock(f);
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

/* A chunk made here, or any chunk of a new file, may have the inode of
 * one removed, whose size is remembered under a ctime it may share: the
 * size cache forgets them. */
static void forget_made(volume *v, const probe_chunk *pc, int n, bool fresh)
{
	for (int mb = 0; mb < n; mb++)
		if (pc[mb].fd >= 0 && (fresh || pc[mb].created))
			size_cache_chunk_made(volume_sizes(v), mb, &pc[mb].st);
}

/* The chain of a create (struct create_chain) with the new file's header
 * pre: the header written is the one ecfile_write_headers would write. */
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
 * that holds a chunk of it, the one ecfile_write_headers would write now: f then
 * takes it as written. */
static bool headers_written(ecfile *f, const struct create_chain *ch)
{
	uint64_t held = 0;
	for (int mb = 0; mb < f->c.lay.n; mb++)
		if (f->c.fd[mb] >= 0)
			held |= 1ull << mb;
	if (ch->written != ch->in || held != ch->in || ecfile_missing_mask(f) != ch->h.missed)
		return false;
	f->c.hdr.missed = ch->h.missed;
	f->c.hdr.generation = ch->h.generation;
	f->hdr_dirty = false;
	return true;
}

/* Sets *again, and opens nothing, when the file's last open closed while
 * its chunks were read here (volume_files_gone_since). */
static int open_common(volume *v, const char *path, int flags, bool create, mode_t mode,
                       uid_t uid, gid_t gid, ecfile **out, bool *again)
{
	int n = volume_n(v), rc;
	probe_chunk pc[STRIPE_MAX_N];
	chunk_header h;
	bool fresh = false;

	*out = NULL;
	if (!volume_usable(v))
		return -EIO;
	ecfile_make_room(v, n); /* idle files parked for this one's chunks */
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
	uint64_t gone = volume_files_gone_count(v);
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
	if (rc == 0)
		rc = check_chunks(v, path, pc, n, &h, &fresh);
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
	if (!fresh && *again && volume_files_gone_since(v, h.file_id, gone)) {
		/* (a new file had no open before this one) */
		volume_files_unlock(v);
		close_chunks(pc, n);
		return 0;
	}
	*again = false;
	f = ecfile_new(v, path, &h, pc, fresh);
	if (f)
		volume_files_insert(v, f->id, f);
	volume_files_unlock(v);
	if (!f)
		return -EIO;
	ecfile_pool_enter(f);
	*out = f;

	ecfile_lock(f);
	if (fresh && chp && headers_written(f, &ch))
		rc = 0;
	else if (fresh)
		rc = ecfile_write_headers(f, false);
	if (!fresh)
		ecfile_recover_locked(f);
	if (rc == 0 && !fresh && (flags & O_TRUNC) && f->size)
		rc = ecfile_truncate_locked(f, 0);
	ecfile_unlock(f);
	if (rc < 0) {
		ecfile_release(f);
		*out = NULL;
		if (fresh && create && space_error(rc))
			uncreate(v, path, pc, n); /* no room for its headers */
	}
	return rc;
}

/* open_common, again while the file's last open closed during the reads
 * of its chunks; after a few tries what was read is taken. */
static int open_fresh_read(volume *v, const char *path, int flags, bool create, mode_t mode,
                           uid_t uid, gid_t gid, ecfile **out)
{
	for (int tries = 0;; tries++) {
		bool again = tries < 3;
		int rc = open_common(v, path, flags, create, mode, uid, gid, out, &again);
		if (rc < 0 || *out || !again)
			return rc;
	}
}

int ecfile_create(volume *v, const char *path, int flags, mode_t mode, uid_t uid, gid_t gid,
                  ecfile **out)
{
	if (volume_settings(v)->read_only)
		return -EROFS;
	return open_fresh_read(v, path, flags, true, mode, uid, gid, out);
}

int ecfile_open(volume *v, const char *path, int flags, ecfile **out)
{
	if ((flags & O_TRUNC) && volume_settings(v)->read_only)
		return -EROFS;
	return open_fresh_read(v, path, flags, false, 0, 0, 0, out);
}
