/* SPDX-License-Identifier: MIT */
/*
 * Where the members are mounted (mounts.h).
 */
#include "mounts.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include <glib.h>

#ifndef F2FS_SUPER_MAGIC
#define F2FS_SUPER_MAGIC 0xF2F52010
#endif
#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000 /* linux/stat.h of 5.8 */
#endif

mount_info mount_info_of_root(int rootfd)
{
	mount_info mi = { 0 };
	struct statx sx;
	struct stat up;
	struct statfs sf;

	if (statx(rootfd, "", AT_EMPTY_PATH, STATX_INO, &sx) < 0 ||
	    fstatat(rootfd, "..", &up, 0) < 0)
		return mi;
	mi.known = true;
	mi.fs_type = fstatfs(rootfd, &sf) == 0 ? (unsigned long)sf.f_type : 0;
	mi.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	mi.parent = up.st_dev;
	if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
		mi.root = sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
	else /* before Linux 5.8: the root of another filesystem than its parent's, or / */
		mi.root = up.st_dev != mi.dev || up.st_ino == sx.stx_ino;
	return mi;
}

bool mounts_memory_only(const mount_info *mi)
{
	return mi->fs_type == TMPFS_MAGIC || mi->fs_type == RAMFS_MAGIC;
}

bool mounts_local(const mount_info *mi)
{
	switch (mi->fs_type) {
	case TMPFS_MAGIC: case RAMFS_MAGIC: case EXT4_SUPER_MAGIC: case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC: case F2FS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

int mounts_unmounted_beside(const mount_info *mi, int n, int i)
{
	int roots = 0;

	for (int j = 0; j < n; j++)
		roots += mi[j].known && mi[j].root;
	if (!mi[i].known || mi[i].root || 2 * roots <= n)
		return -1;
	for (int j = 0; j < n; j++)
		if (j != i && mi[j].known && mi[j].root && mi[j].parent == mi[i].dev)
			return j;
	return -1;
}

char *mounts_same_filesystem(const mount_info *mi, int n, uint64_t known,
                             const char *const *paths)
{
	GString *s = g_string_new(NULL);
	uint64_t done = 0;

	for (int i = 0; i < n; i++) {
		if (!(known >> i & 1) || !mi[i].known || (done >> i & 1))
			continue;
		gsize start = s->len;
		int count = 0;
		g_string_append(s, start ? (paths ? "; " : " ") : "");
		for (int j = i; j < n; j++)
			if ((known >> j & 1) && mi[j].known && mi[j].dev == mi[i].dev) {
				done |= 1ull << j;
				if (paths)
					g_string_append_printf(s, "%s%s", count ? ", " : "", paths[j]);
				else
					g_string_append_printf(s, "%s%d", count ? "," : "", j);
				count++;
			}
		if (count < 2)
			g_string_truncate(s, start);
	}
	return s->len ? g_string_free(s, FALSE) : (g_string_free(s, TRUE), NULL);
}

bool mounts_path_guarded(const char *path)
{
	char *real = realpath(path, NULL);
	bool guarded = false;

	if (!real)
		return false;
	/* From the member root's parent up to "/". */
	for (char *cut = strrchr(real, '/'); cut && !guarded; cut = strrchr(real, '/')) {
		struct stat st;
		if (cut == real)
			cut[1] = '\0'; /* the parent is "/" itself */
		else
			*cut = '\0';
		guarded = stat(real, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
		          !(st.st_mode & (S_IXGRP | S_IXOTH));
		if (cut == real)
			break;
	}
	free(real);
	return guarded;
}
