/* SPDX-License-Identifier: MIT */
/*
 * Paths of the volume on a member: the names reserved at a member root,
 * and the opens resolved beneath the member's root with no symlink
 * followed (openat2 where the kernel has it, else a walk one directory
 * at a time).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "memberio.h"
#include "memberops.h"
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

static int walk_beneath(int root, const char *dir)
{
	int fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *copy = g_strdup(dir), *save = NULL;

	for (char *c = strtok_r(copy, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
		int next;
		if (!strcmp(c, "..") || !strcmp(c, "."))
			next = -1, errno = EACCES;
		else
			next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		fd = next < 0 ? -e : next;
		if (next < 0)
			break;
	}
	g_free(copy);
	return fd;
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
	/* openat2 keeps the walk beneath the member root with no symlink
	 * followed, in one system call. */
	fd = MIO_CALL(mop_openat2_beneath(v->mem[idx].rootfd, dir,
	                                  O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
	if (fd < 0) {
		fd = -errno;
		if (fd == -ENOSYS || fd == -E2BIG)
			fd = walk_beneath(v->mem[idx].rootfd, dir);
		else if (fd == -ELOOP || fd == -EXDEV)
			fd = -ENOTDIR; /* a symlink where a directory should be */
	}
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
