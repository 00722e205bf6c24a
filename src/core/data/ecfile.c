/* SPDX-License-Identifier: MIT */
/*
 * The open regular file (ecfile) as every open of it shares it: one
 * exists per file identity however many times (and by however many
 * names) it is open, and its mutex serialises the data operations on it.
 * Here: its release and freeing, stat of an open file, its identity and
 * the table of open files asked by identity, the layout report, and the
 * online heal's hold on it.  Opening is ecfile_open.c, the data path
 * ecfile_io.c.
 */
#include "ecfile_internal.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "reader_rules.h"
#include "volume_internal.h"

void ecfile_free(ecfile *f)
{
	fdpool_remove(volume_fd_pool(f->v), &f->pool); /* no parking of it runs */
	pthread_mutex_lock(&f->lock);
	cm_drain(f->cq);
	pthread_mutex_unlock(&f->lock);
	/* the batches, f->buf and f->partial are what commits write from */
	cm_queue_free(f->cq, f->c.buffers_lent);
	stripe_wait_late_reads(&f->c);
	for (int i = 0; i < f->c.lay.n; i++)
		volume_member_close(f->v, i, f->c.fd[i]);
	stripe_ctx_free_buffers(&f->c);
	mio_free_or_keep(f->buf, f->c.buffers_lent);
	mio_free_or_keep(f->partial, f->c.buffers_lent);
	ecfile_log_free(f);
	pthread_mutex_destroy(&f->lock);
	g_free(f->park);
	g_free(f->path);
	g_free(f);
}

void ecfile_settle_journals(ecfile *f)
{
	ecfile_log_apply(f); /* its commits are journaled too */
	if (f->c.jf.open && stripe_sync(&f->c, true) == 0)
		stripe_remove_journals(&f->c);
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
	assert(f->refs > 0);
	bool last = f->refs == 1;
	volume_files_unlock(v);
	if (last && rc == 0) {
		/* The last close of a file with a journal: make what the journal
		 * protects durable in place and drop it, rather than leave it for
		 * the next open to judge.  Under the file's lock, so an open that
		 * comes in meanwhile shares this state. */
		ecfile_lock(f);
		cm_drain(f->cq);
		ecfile_settle_journals(f);
		/* A stat, chmod or utimens after the close (tar x sets the times
		 * then) finds the size without reading the headers. */
		if (headers_current(f))
			stripe_remember_size(&f->c);
		ecfile_unlock(f);
	}
	volume_files_lock(v);
	last = --f->refs == 0;
	if (last)
		volume_files_remove(v, f->id);
	volume_files_unlock(v);
	if (last)
		ecfile_free(f);
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

void ecfile_fill_size(struct stat *st, uint64_t size, int k)
{
	/* The n chunks hold about the same blocks each: n times this one's,
	 * scaled by k/n (a member's st_blocks, no call on the others). */
	st->st_size = (off_t)size;
	st->st_blocks *= k;
}

int ecfile_fstat(ecfile *f, struct stat *st)
{
	int rc = -EIO;

	ecfile_lock(f);
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
			ecfile_fill_size(st, f->size, f->c.lay.k);
			rc = 0;
			break;
		}
		volume_member_error(f->v, mb, errno, "stat of a chunk");
	}
	ecfile_unlock(f);
	return rc;
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
		ecfile_fill_size(st, __atomic_load_n(&f->size, __ATOMIC_RELAXED), f->c.lay.k);
	volume_files_unlock(v);
	return f != NULL;
}

bool ecfile_open_size(volume *v, const uint8_t file_id[16], uint64_t *size)
{
	volume_files_lock(v);
	ecfile *f = volume_files_lookup(v, file_id);
	if (f)
		*size = __atomic_load_n(&f->size, __ATOMIC_RELAXED);
	volume_files_unlock(v);
	return f != NULL;
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

	ecfile_lock(f);
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
	ecfile_unlock(f);
	return g_string_free(s, FALSE);
}

/* ---- the online heal ---- */

ecfile *ecfile_heal_begin(volume *v, const char *path)
{
	ecfile *f;

	if (ecfile_open(v, path, 0, &f) < 0)
		return NULL;
	ecfile_lock(f);
	/* Commits in flight land first: the heal reads the stored stripes.  A
	 * commit error stays queued for the file's user; the buffered stripe
	 * stays buffered (it reaches the healed member when committed). */
	cm_drain(f->cq);
	/* The logged writes reach the stripes first: the heal rebuilds
	 * stripes, and a log applied later would commit over them anyway. */
	if (!f->read_only && ecfile_log_apply(f) < 0)
		ecfs_log(LOG_WARNING, "%s: healed with its small-write log not applied", f->path);
	/* The headers say how far the stored stripes go: the heal rebuilds
	 * that far. */
	if (f->hdr_dirty && !f->read_only) {
		int rc = ecfile_write_headers(f, false);
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
		ecfile_open_chunk(f->v, mb, path, false, 0, 0, 0, 0, &pc);
		g_free(pc.head); /* a small chunk read whole: the file reads its own */
		/* Taken back only if the heal left it current.  Even a chunk this
		 * file holds as usable is taken again: its fd may be one into the
		 * member's old directory, from before the member failed and was
		 * replaced. */
		if (pc.fd < 0 || !pc.valid || !rules_same_file(&pc.h, &f->c.hdr) ||
		    pc.h.missed >> mb & 1) {
			if (pc.fd >= 0)
				close(pc.fd);
			continue;
		}
		if (f->c.fd[mb] >= 0)
			close(f->c.fd[mb]);
		f->c.fd[mb] = pc.fd;
		ecfile_log_forget(f, mb);
		f->c.state[mb] = CHUNK_OK;
		if (pc.h.generation > f->c.hdr.generation)
			f->c.hdr.generation = pc.h.generation;
		f->c.hdr.missed = pc.h.missed;
	}
	ecfile_unlock(f);
	ecfile_release(f);
}
