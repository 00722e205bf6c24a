/* SPDX-License-Identifier: MIT */
/*
 * Paths of the volume on a member: the names reserved at a member root,
 * and the opens resolved beneath the member's root with no symlink
 * followed (openat2 where the kernel has it, else a walk one directory
 * at a time), for the volume's files and for its metadata under .ecfs
 * (volume_paths.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_paths.h"
#include "volume_private.h"

static const char *const root_reserved[] = { ECFS_META_DIR, "lost+found" };

bool volume_root_name_reserved(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(root_reserved); i++)
		if (!strcmp(name, root_reserved[i]))
			return true;
	return false;
}

bool volume_path_reserved(const char *path)
{
	while (*path == '/')
		path++;
	for (size_t i = 0; i < G_N_ELEMENTS(root_reserved); i++) {
		size_t l = strlen(root_reserved[i]);
		if (strncmp(path, root_reserved[i], l) == 0 && (path[l] == 0 || path[l] == '/'))
			return true;
	}
	return false;
}

int volume_dir_walk(int dirfd, const char *dir)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *copy = g_strdup(dir), *save = NULL;

	if (fd < 0)
		fd = -errno;
	for (char *c = strtok_r(copy, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
		int next;
		if (!strcmp(c, "..") || !strcmp(c, "."))
			next = -1, errno = EACCES;
		else
			next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		/* O_NOFOLLOW answers ELOOP for a symlink: not a directory here */
		fd = next >= 0 ? next : e == ELOOP ? -ENOTDIR : -e;
	}
	g_free(copy);
	return fd;
}

int volume_dir_beneath(int dirfd, const char *dir)
{
	/* openat2 keeps the walk beneath dirfd with no symlink followed, in
	 * one system call. */
	int fd = mop_openat2_beneath(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd >= 0)
		return fd;
	fd = -errno;
	if (fd == -ENOSYS || fd == -E2BIG)
		return volume_dir_walk(dirfd, dir);
	return fd == -ELOOP || fd == -EXDEV ? -ENOTDIR : fd; /* a symlink on the way */
}

/* -ENAMETOOLONG if a component of path is longer than a name may be, as
 * a local filesystem answers before it looks anything up: the answer of
 * every member alike, never taken for a member's loss of the name. */
static int check_names(const char *path)
{
	for (const char *c = path; *c;) {
		size_t len = strcspn(c, "/");
		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		c += len;
		c += strspn(c, "/");
	}
	return 0;
}

/* What every path on a member goes through first: the member in service,
 * no component too long; *path loses its leading slashes. */
static int path_usable(volume *v, int idx, const char **path)
{
	if (!volume_member_ok(v, idx))
		return -EIO;
	int rc = check_names(*path);
	while (**path == '/')
		(*path)++;
	return rc;
}

int volume_parent_fd(volume *v, int idx, const char *path, const char **leaf)
{
	const char *slash;
	char *dir;
	int fd;

	int rc = path_usable(v, idx, &path);
	if (rc < 0)
		return rc;
	slash = strrchr(path, '/');
	*leaf = *path ? (slash ? slash + 1 : path) : ".";
	dir = slash ? g_strndup(path, (size_t)(slash - path)) : g_strdup(".");
	fd = MIO_CALL(volume_dir_beneath(v->mem[idx].rootfd, dir));
	g_free(dir);
	return fd;
}

/* Where the kernel has no openat2: the parent walked beneath the root
 * (volume_parent_fd), then the leaf opened there (mop_openat). */
static int open_by_parent(volume *v, int idx, const char *path, int flags, mode_t mode)
{
	const char *leaf;
	int pfd = volume_parent_fd(v, idx, path, &leaf);
	if (pfd < 0)
		return pfd;
	int fd = mop_openat(v, idx, pfd, leaf, flags, mode);
	MIO_CALL(close(pfd));
	return fd;
}

int volume_object_fd(volume *v, int idx, const char *path)
{
	int rc = path_usable(v, idx, &path);
	if (rc < 0)
		return rc;
	/* O_PATH with O_NOFOLLOW opens a trailing symlink itself, even under
	 * RESOLVE_NO_SYMLINKS; only the components before it must not be. */
	int fd = MIO_CALL(mop_openat2_beneath(v->mem[idx].rootfd, *path ? path : ".",
	                                      O_PATH | O_NOFOLLOW | O_CLOEXEC, 0));
	if (fd >= 0)
		return fd;
	fd = -errno;
	if (fd == -ELOOP || fd == -EXDEV)
		return -ENOTDIR; /* a symlink where a directory should be */
	if (fd != -ENOSYS && fd != -E2BIG)
		return fd;
	return open_by_parent(v, idx, path, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
}

int volume_open_beneath(volume *v, int idx, const char *path, int flags, mode_t mode)
{
	int rc = path_usable(v, idx, &path);
	if (rc < 0)
		return rc;
	int fd = mop_openat_beneath(v, idx, v->mem[idx].rootfd, *path ? path : ".", flags, mode);
	if (fd != -ENOSYS && fd != -E2BIG)
		return fd;
	return open_by_parent(v, idx, path, flags, mode);
}

/* ---- metadata paths (volume_paths.h) ---- */

/* The directories beneath .ecfs (docs/FORMAT.md section 1 lists them),
 * each made by its own module when first needed. */
static const char *const meta_dirs[] = { "intent", "journal", "log", "missed", "orphans",
	                                 "lost+found", VOLUME_STANDIN_NAME };

char *volume_meta_refusal(const char *path)
{
	return g_strdup_printf("%s is a symlink or not of its type: refused, nothing is read "
	                       "or written through it", path);
}

int volume_meta_dirs_check(int metafd, char **why)
{
	for (size_t i = 0; i < G_N_ELEMENTS(meta_dirs); i++) {
		int fd = volume_dir_beneath(metafd, meta_dirs[i]);
		if (fd >= 0) {
			close(fd);
		} else if (fd == -ENOTDIR) {
			char *path = g_strconcat(ECFS_META_DIR "/", meta_dirs[i], NULL);
			*why = volume_meta_refusal(path);
			g_free(path);
			return fd;
		}
	}
	return 0;
}

/* Removes name in dirfd if it is a symlink (the link, not its target);
 * shown is its path beneath the member root. */
static int unlink_link(volume *v, int idx, int dirfd, const char *name, const char *shown)
{
	struct stat st;
	if (MIO_CALL(fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) < 0 || !S_ISLNK(st.st_mode))
		return 0;
	ecfs_log(LOG_WARNING, "member %d (%s): removing the symlink %s, where a metadata "
	         "directory belongs", idx, volume_member_path(v, idx), shown);
	return mop_unlinkat(v, idx, dirfd, name, 0);
}

int volume_meta_unlink_links(volume *v, int idx, int rootfd)
{
	int rc = unlink_link(v, idx, rootfd, ECFS_META_DIR, ECFS_META_DIR);
	int meta = rc < 0 ? rc : MIO_CALL(volume_dir_beneath(rootfd, ECFS_META_DIR));
	if (meta < 0)
		return meta == -ENOENT ? 0 : meta;
	for (size_t i = 0; i < G_N_ELEMENTS(meta_dirs) && rc == 0; i++) {
		char *shown = g_strconcat(ECFS_META_DIR "/", meta_dirs[i], NULL);
		rc = unlink_link(v, idx, meta, meta_dirs[i], shown);
		g_free(shown);
	}
	MIO_CALL(close(meta));
	return rc;
}

/* err, or -EIO with member idx failed if err says that a metadata path
 * is a symlink or of the wrong type. */
static int refused(volume *v, int idx, const char *path, int err)
{
	if (err != -ENOTDIR && err != -ELOOP)
		return err;
	char *why = volume_meta_refusal(path);
	vol_fail_member(v, idx, why);
	g_free(why);
	return -EIO;
}

int volume_meta_dir(volume *v, int idx, int root, const char *dir)
{
	return refused(v, idx, dir, MIO_CALL(volume_dir_beneath(root, dir)));
}

/* The directory holding metadata path `path`, opened as volume_meta_dir
 * does; *leaf points at its last component. */
static int meta_parent(volume *v, int idx, int root, const char *path, const char **leaf)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? g_strndup(path, (size_t)(slash - path)) : g_strdup(".");
	*leaf = slash ? slash + 1 : path;
	int fd = volume_meta_dir(v, idx, root, dir);
	g_free(dir);
	return fd;
}

int volume_meta_open(volume *v, int idx, int root, const char *path, int flags, mode_t mode)
{
	const char *leaf;
	int dfd = meta_parent(v, idx, root, path, &leaf);
	if (dfd < 0)
		return dfd;
	int fd = mop_openat(v, idx, dfd, leaf, flags | O_NOFOLLOW, mode);
	MIO_CALL(close(dfd));
	return fd == -ELOOP ? refused(v, idx, path, fd) : fd;
}

/* mkdirat (make, arg the mode) or unlinkat (arg the flags) of metadata
 * path in its parent opened as volume_meta_dir does. */
static int meta_change(volume *v, int idx, int root, const char *path, bool make, int arg)
{
	const char *leaf;
	int dfd = meta_parent(v, idx, root, path, &leaf);
	if (dfd < 0)
		return dfd;
	int rc = make ? mop_mkdirat(v, idx, dfd, leaf, (mode_t)arg)
	              : mop_unlinkat(v, idx, dfd, leaf, arg);
	MIO_CALL(close(dfd));
	return rc;
}

int volume_meta_mkdirat(volume *v, int idx, int root, const char *path, mode_t mode)
{
	return meta_change(v, idx, root, path, true, (int)mode);
}

int volume_meta_unlinkat(volume *v, int idx, int root, const char *path, int flags)
{
	return meta_change(v, idx, root, path, false, flags);
}

/* fsync of metadata directory dir of member idx. */
static int meta_dir_sync(volume *v, int idx, int root, const char *dir)
{
	int fd = volume_meta_dir(v, idx, root, dir);
	if (fd < 0)
		return fd;
	int rc = mop_fsync(v, idx, fd, false);
	MIO_CALL(close(fd));
	return rc;
}

int volume_meta_open_made(volume *v, int idx, int root, const char *dir, const char *path)
{
	int fd = volume_meta_open(v, idx, root, path, O_RDWR | O_CLOEXEC, 0);
	if (fd != -ENOENT)
		return fd;
	int rc = volume_meta_mkdirat(v, idx, root, dir, 0700);
	if (rc == 0)
		rc = meta_dir_sync(v, idx, root, ECFS_META_DIR);
	else if (rc == -EEXIST)
		rc = 0;
	if (rc < 0)
		return rc;
	fd = volume_meta_open(v, idx, root, path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fd;
	rc = meta_dir_sync(v, idx, root, dir);
	if (rc < 0) {
		MIO_CALL(close(fd));
		return rc;
	}
	return fd;
}

bool volume_meta_dir_none(volume *v, int idx, const char *dir, off_t larger)
{
	int fd = volume_meta_dir(v, idx, volume_root_fd(v, idx), dir);
	if (fd < 0)
		return fd == -ENOENT;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	bool none = true;
	for (struct dirent *e; none && (e = readdir(d));) {
		struct stat st;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		none = larger >= 0 && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		       S_ISREG(st.st_mode) && st.st_size <= larger;
	}
	closedir(d);
	return none;
}
