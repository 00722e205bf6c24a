/* SPDX-License-Identifier: MIT */
/*
 * Where the members are mounted (docs/DESIGN.md section 3): whether a
 * member root is a mount point, which members share a filesystem, and
 * which member looks like a disk that did not mount.  Judged on facts
 * taken once per member (mount_info_of_root), so the volume can judge
 * them again (the online heal) without touching the members.
 */
#ifndef ECFS_MOUNTS_H
#define ECFS_MOUNTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a member root sits: its filesystem, whether it is a mount point,
 * and the filesystem of the directory it is mounted on (its parent). */
typedef struct mount_info {
	bool known;
	bool root;
	unsigned long fs_type; /* statfs's f_type, 0 if unknown */
	dev_t dev, parent;
} mount_info;

/* The mount_info of the directory rootfd (known false if it cannot be
 * asked). */
mount_info mount_info_of_root(int rootfd);

/* Its filesystem keeps nothing across a power loss: tmpfs or ramfs. */
bool mounts_memory_only(const mount_info *mi);
/* Its filesystem changes only through this kernel, which reports every
 * change to inotify: local disks and memory.  A network or FUSE member
 * can be changed on its server, unseen. */
bool mounts_local(const mount_info *mi);

/* Member i looks like a disk that did not mount: more than half of the
 * members are mount points (a volume of disks), and member i is not one
 * but lies on the filesystem that holds member j's mount point, so ecfs
 * would write to the filesystem beneath.  Returns j, or -1.  Members that
 * are all plain directories, or directories inside disks, are never such,
 * nor are plain directories beside one mounted member. */
int mounts_unmounted_beside(const mount_info *mi, int n, int i);

/* Whether local users are kept out of the tree at path: some directory
 * above it is root's and lets no one else search it (mode 0700 or the
 * like).  A member root cannot be such a directory itself, since its mode
 * is the volume root's (docs/SECURITY.md, "Member trees").  ACLs on those
 * directories are not read.  False also when path cannot be resolved. */
bool mounts_path_guarded(const char *path);

/* Groups of members that share a filesystem (same st_dev), members in the
 * mask `known` only: "0,1,2 4,5" (indices), or with paths "a, b, c; e, f".
 * g_malloc'd, or NULL if each member has its own. */
char *mounts_same_filesystem(const mount_info *mi, int n, uint64_t known,
                             const char *const *paths);

#endif
