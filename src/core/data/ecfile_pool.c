/* SPDX-License-Identifier: MIT */
/*
 * An open file's member descriptors in the volume's pool (fdpool.h,
 * docs/DESIGN.md section 4, "Descriptors of open files"): a file in use
 * is pinned under its lock; when the pool is full, an idle file's chunks
 * are parked (their identity kept, their descriptors closed), and the
 * file's next use reopens them, each checked to be the same object.
 */
#include "ecfile_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "volume_internal.h"

/* A parked chunk: how to reach it again, and what it must be. */
struct parked_chunk {
	dev_t dev;
	ino_t ino;
	union {
		struct file_handle fh;
		uint8_t bytes[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h; /* handle_bytes 0: reopened by its path only */
};

struct park_call {
	volume *v;
	int mb, fd;
	int acc;          /* reopen: O_RDONLY or O_RDWR */
	const char *path; /* reopen: the file's name at open */
	struct parked_chunk *pk;
};

/* Descriptors f holds now: its chunks' and its journals'. */
static int held_by(ecfile *f)
{
	int held = __builtin_popcountll(__atomic_load_n(&f->c.jf.open, __ATOMIC_RELAXED));
	for (int mb = 0; mb < f->c.lay.n; mb++)
		held += f->c.fd[mb] >= 0;
	return held;
}

/* On member p->mb: the chunk's identity, and a handle to reopen it by
 * wherever it has been renamed to.  -EBUSY for a chunk with no name left
 * (unlinked while open): closing it would lose it. */
static int identify_run(void *arg)
{
	struct park_call *p = arg;
	struct parked_chunk pk;
	struct stat st;
	int mount_id;

	if (MIO_CALL(fstat(p->fd, &st)) < 0)
		return -errno;
	if (st.st_nlink == 0)
		return -EBUSY;
	pk.dev = st.st_dev;
	pk.ino = st.st_ino;
	pk.h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (MIO_CALL(name_to_handle_at(p->fd, "", &pk.h.fh, &mount_id, AT_EMPTY_PATH)) < 0)
		pk.h.fh.handle_bytes = 0;
	*p->pk = pk;
	return 0;
}

/* Whether fd is the chunk pk: its device and inode, and its handle when
 * one was kept (which names the inode's generation too: an inode number
 * reused by a file made since is not the chunk). */
static bool same_chunk(int fd, const struct parked_chunk *pk)
{
	struct parked_chunk now;
	struct stat st;
	int mount_id;

	if (MIO_CALL(fstat(fd, &st)) < 0 || st.st_dev != pk->dev || st.st_ino != pk->ino ||
	    !S_ISREG(st.st_mode))
		return false;
	if (!pk->h.fh.handle_bytes)
		return true;
	now.h.fh.handle_bytes = MAX_HANDLE_SZ;
	return MIO_CALL(name_to_handle_at(fd, "", &now.h.fh, &mount_id, AT_EMPTY_PATH)) == 0 &&
	       now.h.fh.handle_bytes == pk->h.fh.handle_bytes &&
	       now.h.fh.handle_type == pk->h.fh.handle_type &&
	       memcmp(now.h.fh.f_handle, pk->h.fh.f_handle, pk->h.fh.handle_bytes) == 0;
}

/* On member p->mb: the parked chunk opened again, by its handle, else by
 * the file's name; the descriptor, or -ESTALE if what opens is not the
 * chunk that was parked. */
static int reopen_run(void *arg)
{
	const struct park_call *p = arg;
	struct parked_chunk pk = *p->pk;
	int fd = -1;

	if (pk.h.fh.handle_bytes)
		fd = MIO_CALL(open_by_handle_at(volume_root_fd(p->v, p->mb), &pk.h.fh,
		                                p->acc | O_CLOEXEC));
	if (fd < 0)
		fd = volume_open_beneath(p->v, p->mb, p->path, p->acc | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	if (!same_chunk(fd, &pk)) {
		MIO_CALL(close(fd));
		return -ESTALE;
	}
	return fd;
}

/* Under f->lock, the committer idle and no hedged read pending: parks
 * every chunk.  False (nothing closed) if one cannot be. */
static bool park_chunks(ecfile *f)
{
	int n = f->c.lay.n;
	uint64_t open = 0;

	/* the journals are made durable in place and dropped, as at the
	 * last close: a journal is not reopened */
	ecfile_settle_journals(f);
	if (f->c.jf.open)
		return false;
	if (!f->park)
		f->park = g_new0(struct parked_chunk, n);
	for (int mb = 0; mb < n; mb++) {
		if (f->c.fd[mb] < 0)
			continue;
		struct park_call p = { f->v, mb, f->c.fd[mb], 0, NULL, &f->park[mb] };
		open |= 1ull << mb;
		memset(&f->park[mb], 0, sizeof(f->park[mb])); /* inode 0: not kept */
		if (!volume_member_ok(f->v, mb))
			continue; /* failed: not reopened until the heal takes it back */
		if (volume_on_member(f->v, mb, identify_run, &p) < 0)
			return false;
	}
	for (int mb = 0; mb < n; mb++)
		if (open >> mb & 1) {
			volume_member_close(f->v, mb, f->c.fd[mb]);
			f->c.fd[mb] = -1;
		}
	__atomic_store_n(&f->parked, open, __ATOMIC_RELEASE);
	return true;
}

/* The pool's eviction (fdpool_evict_fn): never waits for a file's lock. */
static int evict_file(fdpool_entry *e, void *arg)
{
	ecfile *f = (ecfile *)((char *)e - offsetof(ecfile, pool));
	int rc = -1;

	(void)arg;
	if (pthread_mutex_trylock(&f->lock) != 0)
		return -1;
	if (!cm_busy(f->cq) && !f->c.late && park_chunks(f))
		rc = 0;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void ecfile_make_room(volume *v, int want)
{
	fdpool_make_room(volume_fd_pool(v), want, evict_file, NULL);
}

void ecfile_pool_enter(ecfile *f)
{
	fdpool_add(volume_fd_pool(f->v), &f->pool, held_by(f));
}

/* Under f->lock: reopens the parked chunks.  One that cannot be reached
 * again, or is no longer the same object, is an erasure for this file. */
static void unpark_chunks(ecfile *f)
{
	uint64_t parked = f->parked;
	int acc = f->read_only ? O_RDONLY : O_RDWR;

	for (int mb = 0; mb < f->c.lay.n; mb++) {
		if (!(parked >> mb & 1))
			continue;
		struct park_call p = { f->v, mb, -1, acc, f->path, &f->park[mb] };
		bool kept = f->park[mb].ino != 0 && volume_member_ok(f->v, mb);
		int fd = kept ? volume_on_member(f->v, mb, reopen_run, &p) : -ENXIO;
		if (fd >= 0) {
			f->c.fd[mb] = fd;
			continue;
		}
		if (fd == -ENXIO)
			; /* failed when parked, or now: the heal takes it back */
		else if (fd == -ESTALE || fd == -ENOENT)
			ecfs_log(LOG_ERR, "%s: the chunk on member %d (%s) is not the one this open "
			         "file had: an erasure for it", f->path, mb, volume_member_path(f->v, mb));
		else
			volume_member_error(f->v, mb, -fd, "reopening a chunk");
		if (f->c.state[mb] == CHUNK_OK)
			f->c.state[mb] = CHUNK_MISSING;
	}
	__atomic_store_n(&f->parked, 0, __ATOMIC_RELEASE);
}

void ecfile_lock(ecfile *f)
{
	uint64_t parked = __atomic_load_n(&f->parked, __ATOMIC_ACQUIRE);

	if (parked)
		ecfile_make_room(f->v, __builtin_popcountll(parked));
	pthread_mutex_lock(&f->lock);
	fdpool_pin(volume_fd_pool(f->v), &f->pool);
	if (f->parked)
		unpark_chunks(f);
}

void ecfile_unlock(ecfile *f)
{
	fdpool_unpin(volume_fd_pool(f->v), &f->pool, held_by(f));
	pthread_mutex_unlock(&f->lock);
}
