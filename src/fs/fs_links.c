/* SPDX-License-Identifier: MIT */
/*
 * Name operations, all mirrored on every healthy member: unlink, rename
 * (with RENAME_NOREPLACE and RENAME_EXCHANGE, passed to the members'
 * renameat2), symlink, readlink, hard links and mknod.  A regular file's
 * names are its chunk files' names, so unlink, rename and link of a file
 * are the same *at() call on each member; an open file is not disturbed,
 * its ecfile holds an fd per member.
 */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ecfile.h"
#include "memberio.h"
#include "memberops.h"
#include "mirror.h"
#include "space.h"
#include "xattrs.h"

static int unlink_member(int member, int dirfd, const char *leaf, void *arg)
{
	return mop_unlinkat(fs_volume(), member, dirfd, leaf, 0);
}

int fs_unlink(const char *path)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	intent_args a = { INTENT_UNLINK, .from = fs_path(path, buf) };
	return mirror_apply_logged(fs_volume(), &a, unlink_member, NULL, NULL, "unlink");
}

static int rename_member(int member, int fd1, const char *leaf1, int fd2,
                         const char *leaf2, void *arg)
{
	return mop_renameat2(fs_volume(), member, fd1, leaf1, fd2, leaf2, *(const unsigned *)arg);
}

int fs_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (volume_path_reserved(from))
		return -ENOENT;
	if (volume_path_reserved(to))
		return -EPERM;
	/* libfuse hides an open file that is unlinked or renamed over by
	 * renaming it to a hidden name: into the orphan folder. */
	char buf1[FS_ORPHAN_PATH_MAX], buf2[FS_ORPHAN_PATH_MAX];
	intent_args a = { INTENT_RENAME, .from = fs_path(from, buf1), .to = fs_path(to, buf2),
	                  .flags = flags };
	return mirror_apply_logged(fs_volume(), &a, NULL, rename_member, &flags, "rename");
}

struct new_link {
	const char *target;
	uid_t uid;
	gid_t gid;
};

static int symlink_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_link *nl = arg;
	int rc = mop_symlinkat(fs_volume(), member, nl->target, dirfd, leaf);
	if (rc < 0)
		return rc;
	return fs_chown_new(member, dirfd, leaf, nl->uid, nl->gid);
}

int fs_symlink(const char *target, const char *path)
{
	if (volume_path_reserved(path))
		return -EPERM;
	struct new_link nl = { .target = target };
	int rc = fs_new_owner(path, &nl.uid, &nl.gid);
	if (rc == 0)
		rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST + strlen(target));
	if (rc < 0)
		return rc;
	return mirror_apply(fs_volume(), path, symlink_member, &nl, "symlink");
}

struct link_buffer {
	char *buf;
	size_t size;
};

static int readlink_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct link_buffer *lb = arg;
	char target[PATH_MAX]; /* a local first (volume_on_member) */
	size_t want = lb->size - 1 < sizeof(target) ? lb->size - 1 : sizeof(target);
	ssize_t n = MIO_CALL(readlinkat(dirfd, leaf, target, want));
	if (n < 0)
		return -errno;
	memcpy(lb->buf, target, (size_t)n);
	lb->buf[n] = '\0'; /* FUSE wants it terminated, truncated if need be */
	return 0;
}

int fs_readlink(const char *path, char *buf, size_t size)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	if (size == 0)
		return -EINVAL;
	struct link_buffer lb = { buf, size };
	return mirror_query(fs_volume(), path, readlink_member, &lb, "readlink");
}

static int link_member(int member, int fd1, const char *leaf1, int fd2,
                       const char *leaf2, void *arg)
{
	return mop_linkat(fs_volume(), member, fd1, leaf1, fd2, leaf2, 0);
}

int fs_link(const char *from, const char *to)
{
	if (volume_path_reserved(from))
		return -ENOENT;
	if (volume_path_reserved(to))
		return -EPERM;
	int rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST);
	if (rc < 0)
		return rc;
	intent_args a = { INTENT_LINK, .from = from, .to = to };
	return mirror_apply_logged(fs_volume(), &a, NULL, link_member, NULL, "link");
}

struct new_node {
	mode_t mode;
	dev_t rdev;
	uid_t uid;
	gid_t gid;
};

static int mknod_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct new_node *nn = arg;
	int rc = mop_mknodat(fs_volume(), member, dirfd, leaf, nn->mode, nn->rdev);
	if (rc < 0)
		return rc;
	return fs_chown_new(member, dirfd, leaf, nn->uid, nn->gid);
}

int fs_mknod(const char *path, mode_t mode, dev_t rdev)
{
	if (volume_path_reserved(path))
		return -EPERM;
	mode = (mode & S_IFMT) |
	       xattrs_create_mode(fs_volume(), path, mode & 07777, fuse_get_context()->umask);
	struct new_node nn = { .mode = mode, .rdev = rdev };
	int rc = fs_new_owner(path, &nn.uid, &nn.gid);
	if (rc < 0)
		return rc;
	if (S_ISREG(mode)) {
		/* A regular file is an ecfile even when made by mknod(2). */
		ecfile *f;
		rc = ecfile_create(fs_volume(), path, O_CREAT | O_EXCL | O_WRONLY,
		                   mode & 07777, nn.uid, nn.gid, &f);
		return rc < 0 ? rc : ecfile_release(f);
	}
	rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST);
	if (rc < 0)
		return rc;
	return mirror_apply(fs_volume(), path, mknod_member, &nn, "mknod");
}
