/* SPDX-License-Identifier: MIT */
/*
 * Directory operations.  Directories exist on every member (mkdir and rmdir
 * are mirrored); a listing is read from one healthy member, the first,
 * which is also the one getattr asks, so the two agree.  The volume's own
 * metadata folder (/.ecfs) is never listed.
 */
#include "fs_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mirror.h"

/* An open directory: the listing stream of the member it was opened on. */
struct dir_handle {
	DIR *dir;
	int member;     /* the member listed */
	off_t offset;   /* telldir() position after the last entry handed out */
	bool is_root;   /* hide the metadata folder */
	char *path;     /* as opened, for fsyncdir if libfuse has lost it */
};

static struct dir_handle *dir_of(const struct fuse_file_info *fi)
{
	return (struct dir_handle *)(uintptr_t)fi->fh;
}

struct new_dir {
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

static int mkdir_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_dir *nd = arg;
	if (mkdirat(dirfd, leaf, nd->mode) < 0)
		return -errno;
	return fs_chown_new(dirfd, leaf, nd->uid, nd->gid);
}

int fs_mkdir(const char *path, mode_t mode)
{
	if (volume_path_reserved(path))
		return -EPERM;
	/* A directory made in a setgid directory inherits S_ISGID from the
	 * member filesystem itself, since member directories carry the mode. */
	struct new_dir nd = { .mode = mode & 07777 };
	int rc = fs_new_owner(path, &nd.uid, &nd.gid);
	if (rc < 0)
		return rc;
	return mirror_apply(fs_volume(), path, mkdir_member, &nd, 0, "mkdir");
}

static int rmdir_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mirror_errno(unlinkat(dirfd, leaf, AT_REMOVEDIR));
}

int fs_rmdir(const char *path)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	return mirror_apply(fs_volume(), path, rmdir_member, NULL, 0, "rmdir");
}

static int opendir_member(int member, int dirfd, const char *leaf, void *arg)
{
	int fd = openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = errno;
		close(fd);
		return -err;
	}
	struct dir_handle *h = arg;
	h->dir = d;
	h->member = member;
	return 0;
}

int fs_opendir(const char *path, struct fuse_file_info *fi)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	struct dir_handle *h = calloc(1, sizeof *h);
	if (!h)
		return -ENOMEM;
	h->path = strdup(path);
	if (!h->path) {
		free(h);
		return -ENOMEM;
	}
	int rc = mirror_query(fs_volume(), path, opendir_member, h, 0, "opendir");
	if (rc < 0) {
		free(h->path);
		free(h);
		return rc;
	}
	h->is_root = strcmp(path, "/") == 0;
	fi->fh = (uintptr_t)h;
	return 0;
}

/* True for an entry of the root that names the volume's metadata. */
static bool hidden_entry(const struct dir_handle *h, const char *name)
{
	if (!h->is_root)
		return false;
	char path[NAME_MAX + 2];
	path[0] = '/';
	strncpy(path + 1, name, NAME_MAX);
	path[NAME_MAX + 1] = '\0';
	return volume_path_reserved(path);
}

int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
               struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct dir_handle *h = dir_of(fi);
	if (off != h->offset) {
		if (off == 0)
			rewinddir(h->dir);
		else
			seekdir(h->dir, off);
		h->offset = off;
	}
	for (;;) {
		errno = 0;
		struct dirent *de = readdir(h->dir);
		if (!de) {
			if (errno) {
				int err = errno;
				volume_member_error(fs_volume(), h->member, err, "readdir");
				return -err;
			}
			return 0;
		}
		off_t next = telldir(h->dir);
		if (!hidden_entry(h, de->d_name)) {
			struct stat st = { .st_ino = de->d_ino,
			                   .st_mode = (mode_t)DTTOIF(de->d_type) };
			if (filler(buf, de->d_name, &st, next, 0)) {
				/* The reply is full: this entry comes first next time. */
				seekdir(h->dir, h->offset);
				return 0;
			}
		}
		h->offset = next;
	}
}

int fs_releasedir(const char *path, struct fuse_file_info *fi)
{
	struct dir_handle *h = dir_of(fi);
	closedir(h->dir);
	free(h->path);
	free(h);
	return 0;
}

static int fsync_member_dir(int member, int dirfd, const char *leaf, void *arg)
{
	int fd = openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int datasync = *(const int *)arg;
	int rc = mirror_errno(datasync ? fdatasync(fd) : fsync(fd));
	close(fd);
	return rc;
}

int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct dir_handle *h = dir_of(fi);
	/* By its current path (libfuse knows it), else the one it was opened
	 * with; if that is gone, through the stream we hold. */
	int rc = mirror_apply(fs_volume(), path ? path : h->path, fsync_member_dir, &datasync,
	                      0, "fsyncdir");
	if (rc == -ENOENT || rc == -ENOTDIR)
		rc = mirror_errno(datasync ? fdatasync(dirfd(h->dir)) : fsync(dirfd(h->dir)));
	return rc;
}
