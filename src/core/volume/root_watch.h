/* SPDX-License-Identifier: MIT */
/*
 * Whether a member's root may have changed since it was last verified, for
 * one system call instead of a root check on every member.
 *
 * An answer such as ENOENT from a member is only an answer if the member's
 * root is still the directory the volume opened and still holds its
 * superblock (volume_health.c, root_changed): that is three calls a member, and
 * every create's lookup of its new name meets it on all of them.  The
 * kernel reports, as they happen, every change that could make the check
 * fail on a local filesystem: the root or a directory above it removed,
 * moved or made unreadable, the superblock removed or moved away
 * (inotify), and any mount or
 * unmount (/proc/self/mountinfo polls as changed, e.g. a disk unmounted
 * lazily beneath the volume).  So a member verified once stays verified
 * until one of these events is read, and a poll with no timeout tells.
 * The events are queued by the call that made the change, so an answer
 * that follows a change always sees it.
 *
 * Members on filesystems whose changes may come from elsewhere (network
 * and FUSE mounts), or reached through a symbolic link, are never watched:
 * every answer of theirs is checked in full, as before.  Thread-safe.
 */
#ifndef ECFS_ROOT_WATCH_H
#define ECFS_ROOT_WATCH_H

#include <stdbool.h>
#include <stdint.h>

typedef struct root_watch root_watch;

/* A watch for n members, none watched yet.  Never NULL: without inotify
 * or /proc every member is simply never quiet. */
root_watch *root_watch_new(int n);
void root_watch_free(root_watch *w);

/* Watches member idx, whose root directory is at path (opened as rootfd)
 * and holds the superblock in meta_dir, from now on, and forgets any
 * verdict on it (a root taken again by the online heal is verified
 * anew).  local: its filesystem changes only through this kernel
 * (mounts_local).  Does nothing for a member that cannot be watched
 * (above). */
void root_watch_member(root_watch *w, int idx, const char *path, int rootfd,
                       const char *meta_dir, bool local);

/* True if member idx is watched, was verified, and nothing that could
 * change its root happened since.  Otherwise false, with *epoch set to
 * pass to root_watch_verified once a full check finds the root intact. */
bool root_watch_quiet(root_watch *w, int idx, uint64_t *epoch);
void root_watch_verified(root_watch *w, int idx, uint64_t epoch);

#endif
