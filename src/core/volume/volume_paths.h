/* SPDX-License-Identifier: MIT */
/*
 * The volume's metadata paths beneath a member root (.ecfs and what it
 * holds), opened one component at a time from a directory descriptor:
 * no symlink is followed on any component and nothing outside the root
 * is reached, so that a member whose .ecfs, .ecfs/intent or
 * .ecfs/journal was replaced by a symlink never has the daemon or
 * ecfs-fsck write through it.  The paths of the volume's own files go
 * through volume_parent_fd and its kin (volume.h), by the same walk.
 */
#ifndef ECFS_VOLUME_PATHS_H
#define ECFS_VOLUME_PATHS_H

#include <stdbool.h>
#include <sys/types.h>

#include "volume.h"

/* Opens directory dir (relative, '/'-separated, no "." or ".." component)
 * beneath dirfd with no symlink followed on any component: openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has it, else
 * volume_dir_walk.  Returns an O_DIRECTORY fd, or a negative errno:
 * -ENOTDIR where a component is a symlink or not a directory, -ENOENT
 * where one is missing.  Plain system calls: a caller on a member worker
 * brackets it as one member call (MIO_CALL). */
int volume_dir_beneath(int dirfd, const char *dir);
/* The same by openat with O_NOFOLLOW | O_DIRECTORY at each component (the
 * way where the kernel has no openat2). */
int volume_dir_walk(int dirfd, const char *dir);

/* The reason a member is refused for metadata path `path` (".ecfs/...")
 * that is a symlink or not a directory; the caller frees it. */
char *volume_meta_refusal(const char *path);
/* The metadata directories beneath .ecfs (metafd) checked: 0 if each is a
 * directory or absent, else -ENOTDIR and *why (volume_meta_refusal) for
 * the first that is not.  Every probe of a member asks (volume_probe.c). */
int volume_meta_dirs_check(int metafd, char **why);
/* With repair (ecfs-fsck -y): each metadata directory that is a symlink
 * (.ecfs itself and those beneath it) loses the link, never its target,
 * so that a real directory is made in its place.  0 or a negative errno. */
int volume_meta_unlink_links(volume *v, int idx, int rootfd);

/* Metadata directory dir (ECFS_META_DIR or a path beneath it) of member
 * idx opened beneath root (the member's root fd as the caller holds it)
 * by volume_dir_beneath.  A symlink or non-directory on the way fails the
 * member, naming it (volume_meta_refusal), and gives -EIO. */
int volume_meta_dir(volume *v, int idx, int root, const char *dir);
/* Opens metadata file path ("<dir>/<name>"): dir by volume_meta_dir, name
 * with mop_openat and O_NOFOLLOW (a symlink there fails the member too). */
int volume_meta_open(volume *v, int idx, int root, const char *path, int flags, mode_t mode);
/* mkdirat of metadata directory path in its parent opened as above: 0,
 * -EEXIST where the name is taken, or a negative errno. */
int volume_meta_mkdirat(volume *v, int idx, int root, const char *path, mode_t mode);
/* unlinkat of metadata path in its parent opened as above. */
int volume_meta_unlinkat(volume *v, int idx, int root, const char *path, int flags);
/* Opens metadata file path (beneath metadata directory dir) for reading
 * and writing, creating it (and dir) the first time with the new names
 * synced, so that a file synced later is found again after a power cut
 * (a per-file journal or log).  The fd or a negative errno. */
int volume_meta_open_made(volume *v, int idx, int root, const char *dir, const char *path);
/* True if metadata directory dir of member idx is missing or holds no
 * entry (larger < 0), or only regular files of at most `larger` bytes. */
bool volume_meta_dir_none(volume *v, int idx, const char *dir, off_t larger);

#endif
