/* SPDX-License-Identifier: MIT */
/*
 * Mirrored namespace operations: one operation (mkdir, unlink, chmod,
 * setxattr, ...) applied to the same relative path on every healthy member,
 * and one answer made of the members' answers.
 *
 * The first healthy member that has the object is the primary (ENOENT
 * from a member before it only says that member lost it, a deleted chunk
 * say; ENOENT from all is the answer).  Its answer is the volume's
 * answer: if it refuses (EEXIST, ENOTEMPTY, ...), nothing is applied to the
 * other members, so a refused operation never makes the members diverge.
 * If it succeeds, the operation is applied to the others (with a member
 * timeout all at once, each on its I/O worker); a member whose
 * answer differs is logged as diverging (ecfs-fsck repairs it) and does not
 * change the result.  An error that means a member is broken (EIO, EROFS,
 * ...) goes to volume_member_error(), which marks it failed, and the next
 * member takes its place.  With more than m members failed the answer is
 * EIO.  Every call is resolved beneath the member roots by
 * volume_parent_fd(): no path string is ever glued to a member path.
 */
#ifndef ECFS_MIRROR_H
#define ECFS_MIRROR_H

#include <errno.h>
#include <stdint.h>

#include "intent.h"
#include "volume.h"

/* Runs one operation on one member: dirfd is the directory holding the
 * object, leaf its name there.  Returns 0 (or a count) or a negative errno. */
typedef int (*mirror_fn)(int member, int dirfd, const char *leaf, void *arg);
/* The same for operations on two paths (rename, link). */
typedef int (*mirror_fn2)(int member, int dirfd1, const char *leaf1,
                          int dirfd2, const char *leaf2, void *arg);

/* Applies fn to path on every healthy member (see above). */
int mirror_apply(volume *v, const char *path, mirror_fn fn, void *arg, const char *what);
/* Applies fn to (from, to) on every healthy member. */
int mirror_apply2(volume *v, const char *from, const char *to, mirror_fn2 fn,
                  void *arg, const char *what);
/* mirror_apply (fn) or, for rename and link, mirror_apply2 (fn2) of the
 * operation a describes, under an intent (intent.h): for the operations
 * whose partial state after a crash would hurt.  fn or fn2 gets arg.
 * With a member timeout the primary is asked first, as it writes its
 * copy of the intent (intent_begin_first), then the other members all at
 * once, each on its I/O worker, where each also ends the intent
 * (intent_end_member): so fn and fn2 may run on several members at the
 * same time and must not change anything in arg but with atomics.  When every member in
 * service is fast enough for the relay (memberio.h), every step of the
 * operation on every member is one batch of tasks in order on the relay
 * instead, and the first member runs the operation only once every copy
 * of the intent is written: one wait. */
int mirror_apply_logged(volume *v, const intent_args *a, mirror_fn fn, mirror_fn2 fn2,
                        void *arg, const char *what);
#ifdef ECFS_FAULT_INJECTION
/* Test builds: logged operations chained on the relay whatever the
 * members' latency, so that the tasks of a member slower than the relay's
 * threshold run on its own worker beside the relay's, and what keeps the
 * steps in order is the chain's own check of each task's turn and the
 * caller's catch-up after its wait (mirror.c). */
extern bool mirror_chain_always;
#endif

/* Runs a read-only fn on the first healthy member that answers other than
 * ENOENT (a broken member is marked failed and the next one asked).  fn may run more than
 * once, so it must not keep state from a failed attempt. */
int mirror_query(volume *v, const char *path, mirror_fn fn, void *arg, const char *what);

/* Runs a read-only fn on the first `most` members that answer namespace
 * queries (volume_member_answers), at once on their I/O workers with a member
 * timeout (inline, one after the other, without): each member gets its
 * own argument, args[member].  A member that breaks (volume_member_error)
 * or is given up counts for nothing.  Returns the mask of the members
 * whose fn returned 0; if none, 0 and in *err the first answer other than
 * ENOENT, else ENOENT (EIO if the volume became unusable). */
uint64_t mirror_gather(volume *v, const char *path, mirror_fn fn, void *const *args, int most,
                       int *err, const char *what);

/* Wraps a libc call that returns -1/errno into 0/-errno. */
static inline int mirror_errno(int rc)
{
	return rc < 0 ? -errno : rc;
}

#endif
