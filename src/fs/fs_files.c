/* SPDX-License-Identifier: MIT */
/*
 * Regular-file operations: create, open, read, write, flush, release,
 * fsync, truncate and fallocate.  The data path belongs to ecfile.h; this
 * layer only maps FUSE requests onto it.  The open-file handle (fi->fh)
 * holds the ecfile itself, so requests on an open file do not use its
 * path and keep working after unlink or rename.
 */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <glib.h>

#include "ecfile.h"
#include "fs_killpriv.h"
#include "log.h"
#include "xattrs.h"

static struct fs_file *handle_of(const struct fuse_file_info *fi)
{
	return (struct fs_file *)(uintptr_t)fi->fh;
}

ecfile *fs_file_of(const struct fuse_file_info *fi)
{
	return handle_of(fi)->f;
}

/* Makes fi the handle of an open of f. */
static void set_handle(struct fuse_file_info *fi, ecfile *f)
{
	struct fs_file *h = g_new0(struct fs_file, 1);
	h->f = f;
	fi->fh = (uintptr_t)h;
}

/* A write-only open bypasses the page cache (direct I/O): the cache is
 * write-through here anyway, so its pages would only cost the writer an
 * allocation and a copy per page.  Such an fd can neither read nor mmap;
 * the kernel drops cached pages of the range from other opens on each
 * direct write, so they stay coherent. */
static bool write_only(const struct fuse_file_info *fi)
{
	return (fi->flags & O_ACCMODE) == O_WRONLY;
}

/* Direct I/O for a write-only open, and for every open under -o direct_io
 * (an open's, or a write request's: it carries its open's flags). */
static bool direct(const struct fuse_file_info *fi)
{
	return write_only(fi) || fs_state()->direct_io;
}

static void direct_mode(struct fuse_file_info *fi)
{
	if (direct(fi))
		fi->direct_io = 1;
}

/* True if the caller of req is in group gid. */
bool fs_caller_in_group(fuse_req_t req, gid_t gid)
{
	gid_t groups[256];

	if (fuse_req_ctx(req)->gid == gid)
		return true;
	int n = fuse_req_getgroups(req, (int)(sizeof(groups) / sizeof(groups[0])), groups);
	for (int i = 0; i < n && i < (int)(sizeof(groups) / sizeof(groups[0])); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* How an open uses the page cache: write-only opens and -o direct_io
 * bypass it; -o kernel_cache keeps it, -o auto_cache while the file's
 * size and modification time are those of the last open. */
static void cache_mode(fuse_ino_t ino, ecfile *f, struct fuse_file_info *fi)
{
	const struct ecfs_fs *fs = fs_state();

	direct_mode(fi);
	fi->keep_cache = fs->kernel_cache;
	if (fs->auto_cache && !fs->kernel_cache) {
		struct stat st;
		if (ecfile_fstat(f, &st) == 0)
			fi->keep_cache = fs_nodes_same_version(ino, &st);
	}
}

void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
               struct fuse_file_info *fi)
{
	char *path = NULL;
	int rc = fs_nodes_child(parent, name, &path);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	nsops_owner owner;
	ecfile *f = NULL;
	struct stat st;
	if (volume_path_reserved(path))
		rc = -EPERM;
	fs_new_owner(req, &owner);
	/* Always exclusive: the kernel sends CREATE after a lookup found no
	 * name, and an object that is there all the same was not checked by
	 * it.  ESTALE makes the kernel walk the path again with a fresh
	 * lookup (do_filp_open's LOOKUP_REVAL) and open what it finds
	 * through its own permission checks; O_EXCL stays EEXIST. */
	if (rc == 0)
		rc = ecfile_create(fs_volume(), path, fi->flags | O_EXCL,
		                  xattrs_create_mode(fs_volume(), path, mode & 07777,
		                                     fuse_req_ctx(req)->umask),
		                  owner.uid, owner.gid, &f);
	if (rc == -EEXIST && !(fi->flags & O_EXCL))
		rc = -ESTALE;
	fs_dirnames_changed(parent, name, S_IFREG, rc);
	if (rc == 0 && (rc = ecfile_fstat(f, &st)) < 0)
		ecfile_release(f);
	g_free(path);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	set_handle(fi, f);
	direct_mode(fi);
	struct fuse_entry_param e;
	fs_entry_fill(&e, fs_nodes_ino(parent, name, ecfile_ident(f), &st), &st);
	fs_nodes_add(parent, name, e.ino, &st, ecfile_ident(f));
	fs_nodes_opened(e.ino);
	if (fuse_reply_create(req, &e, fi) != 0) {
		/* interrupted: the kernel has neither the node nor the open */
		fs_release(NULL, e.ino, fi);
		fs_nodes_forget(e.ino, 1);
	}
}

int fs_open_node(fuse_ino_t ino, int flags, ecfile **out)
{
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	ecfile *f = NULL;
	*out = NULL;
	if (rc == 0 && (flags & O_TRUNC) && volume_settings(fs_volume())->read_only)
		rc = -EROFS;
	if (rc == 0)
		rc = ecfile_open(fs_volume(), path, flags & ~O_TRUNC, &f);
	g_free(path);
	if (rc < 0)
		return rc;
	/* (a node found without an identity, a file whose headers no member
	 * held, keeps its stand-in id: the open may give the file one) */
	if (fs_nodes_ident_ino(ecfile_ident(f)) != ino && fs_nodes_identified(ino)) {
		ecfs_log(LOG_WARNING, "node %016llx: the file at its path is %016llx, another "
		         "file: not opened", (unsigned long long)ino,
		         (unsigned long long)ecfile_ident(f));
		ecfile_release(f);
		return -ESTALE;
	}
	/* O_TRUNC, as ecfile_open does it: an empty file stays untouched */
	struct stat st;
	if ((flags & O_TRUNC) && (rc = ecfile_fstat(f, &st)) == 0 && st.st_size > 0)
		rc = ecfile_truncate(f, 0);
	if (rc < 0) {
		ecfile_release(f);
		return rc;
	}
	*out = f;
	return 0;
}

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	ecfile *f = NULL;
	int rc = fs_open_node(ino, fi->flags, &f);
	if (rc == 0 && (fi->flags & O_TRUNC) && (rc = fs_killpriv_open_trunc(req, ino, f)) < 0)
		ecfile_release(f);
	if (rc < 0) {
		fs_reply_err(req, rc);
		return;
	}
	set_handle(fi, f);
	cache_mode(ino, f, fi);
	fs_nodes_opened(ino);
	if (fuse_reply_open(req, fi) != 0)
		fs_release(NULL, ino, fi);
}

/* The read buffer of each request thread, as large as the largest read;
 * freed when the thread ends (libfuse ends idle ones). */
struct read_buffer {
	size_t cap;
	char bytes[];
};

static GPrivate read_buffer_of_thread = G_PRIVATE_INIT(g_free);

void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct read_buffer *rb = g_private_get(&read_buffer_of_thread);
	if (!rb || size > rb->cap) {
		struct read_buffer *grown = g_try_realloc(rb, sizeof(*rb) + size);
		if (!grown) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		grown->cap = size;
		g_private_set(&read_buffer_of_thread, rb = grown);
	}
	ssize_t n = ecfile_read(fs_file_of(fi), rb->bytes, size, off);
	if (n < 0)
		fs_reply_err(req, (int)n);
	else
		fuse_reply_buf(req, rb->bytes, (size_t)n);
}

void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
              struct fuse_file_info *fi)
{
	int rc = fs_killpriv_write(req, ino, fs_file_of(fi), direct(fi));
	__atomic_store_n(&handle_of(fi)->wrote, true, __ATOMIC_RELAXED);
	ssize_t n = rc < 0 ? rc : ecfile_write(fs_file_of(fi), buf, size, off);
	if (n < 0)
		fs_reply_err(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* Data an open wrote reaches the members at its flush or fsync, which
 * moves the mtime and ctime getattr answers: the kernel must not keep the
 * times it read before. */
static void written_out(fuse_ino_t ino, const struct fuse_file_info *fi)
{
	if (__atomic_exchange_n(&handle_of(fi)->wrote, false, __ATOMIC_RELAXED))
		fs_nodes_inval_wait(ino);
}

void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = ecfile_flush(fs_file_of(fi));
	written_out(ino, fi);
	fs_reply_err(req, rc);
}

void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = ecfile_release(fs_file_of(fi));
	g_free(handle_of(fi));
	/* The last close of a file unlinked while open removes it. */
	char *orphan = fs_nodes_closed(ino);
	if (orphan)
		fs_remove_orphan(orphan);
	g_free(orphan);
	if (req)
		fs_reply_err(req, rc);
}

void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	int rc = ecfile_fsync(fs_file_of(fi), datasync);
	written_out(ino, fi);
	fs_reply_err(req, rc);
}

void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
                  struct fuse_file_info *fi)
{
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		fs_reply_err(req, -EOPNOTSUPP);
	else
		fs_reply_err(req, ecfile_fallocate(fs_file_of(fi), mode, off, len));
	__atomic_store_n(&handle_of(fi)->wrote, true, __ATOMIC_RELAXED);
}

void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
              struct fuse_file_info *fi)
{
	/* The kernel answers the other kinds itself. */
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fs_reply_err(req, -EINVAL);
		return;
	}
	off_t at = ecfile_seek_data(fs_file_of(fi), off, whence == SEEK_DATA);
	if (at < 0)
		fs_reply_err(req, (int)at);
	else
		fuse_reply_lseek(req, at);
}

/* The file identities node ino may stand for: a regular file's node id
 * is its identity, moved past the ids libfuse reserves (fs_nodes_ino). */
static int node_idents(fuse_ino_t ino, uint64_t ids[2])
{
	ids[0] = ino;
	ids[1] = ino - 2;
	return ino == 2 || ino == 3 ? 2 : 1;
}

int fs_flush_node(fuse_ino_t ino)
{
	uint64_t ids[2];
	ecfile *f = NULL;
	for (int i = 0, n = node_idents(ino, ids); i < n && !f; i++)
		if (ecfile_open_ident(fs_volume(), ids[i], &f) < 0)
			f = NULL;
	if (!f)
		return 0; /* not open in the daemon: nothing buffered */
	int rc = ecfile_flush(f);
	int rc2 = ecfile_release(f);
	return rc < 0 ? rc : rc2;
}

bool fs_node_stat_open(fuse_ino_t ino, struct stat *st)
{
	uint64_t ids[2];
	for (int i = 0, n = node_idents(ino, ids); i < n; i++)
		if (ecfile_stat_open(fs_volume(), ids[i], st))
			return true;
	return false;
}
