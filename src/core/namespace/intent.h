/* SPDX-License-Identifier: MIT */
/*
 * Intents: the redo log of the mirrored namespace operations whose partial
 * state would hurt (rename, link, unlink, rmdir, mkdir).  mirror.c applies an
 * operation to the members one after another or, with a member timeout,
 * to the first and then to the others at once, so a crash in the middle
 * leaves the members disagreeing; for these operations that can leave a
 * regular file with fewer than k chunks under one name (a rename over an
 * existing file done on half the members: both the old and the new file
 * lose their quorum).  So the operation is first written down, durably, on
 * every usable member (a slot of .ecfs/intent/log, docs/FORMAT.md section 8), then
 * applied, then made durable (the affected parent directories are fsynced
 * on each member), and only then is the record removed (on each member
 * once its own part is durable: intent_end_member).  A mount (and
 * ecfs-fsck -y) that finds a record finishes the operation on every
 * member before anything else looks at the namespace: each name ends in
 * its new state.
 *
 * Redo is idempotent per member and bound to identity: the record holds,
 * for each member, the inode number and birth time the source (and for
 * RENAME_EXCHANGE the target) had there, and a member's copy of the
 * operation is redone only while its object still has them.  So replaying an
 * intent whose operation had already been done there does nothing, and a
 * record whose removal was lost (it is not synced) can never act on a
 * newer object that took the name meanwhile.
 */
#ifndef ECFS_INTENT_H
#define ECFS_INTENT_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "volume.h"

#define INTENT_DIR ECFS_META_DIR "/intent" /* beneath each member root */

typedef enum intent_op {
	INTENT_RENAME = 1, /* from -> to with renameat2 flags */
	INTENT_LINK = 2,   /* new hard link to -> from */
	INTENT_UNLINK = 3, /* from (not a directory) */
	INTENT_RMDIR = 4,  /* from (an empty directory) */
	INTENT_MKDIR = 5,  /* from, with a mode and an owner */
} intent_op;

typedef struct intent intent;

/* An operation to log: to only for rename and link, flags (renameat2's)
 * only for rename, mode and owner only for mkdir (uid and gid (uid_t)-1
 * and (gid_t)-1: as the daemon makes it). */
typedef struct intent_args {
	intent_op op;
	const char *from, *to;
	unsigned flags;
	mode_t mode;
	uid_t uid;
	gid_t gid;
} intent_args;

/* Writes the intent for the operation (volume paths) to every usable
 * member and makes it durable.  Returns 0 and the intent in *out, or -EIO
 * when more than m members are failed.  A member that fails to take the
 * record is failed (volume_member_error). */
int intent_begin(volume *v, const intent_args *a, intent **out);
/* 0 if a record of a fits its slot, else -ENAMETOOLONG: each path at most
 * INTENT_PATH_MAX bytes (the decoder's bound; docs/FORMAT.md section 8).
 * intent_begin and intent_begin_first ask it first; a caller of the steps
 * below (intent_new) asks it itself. */
#define INTENT_PATH_MAX 4095
int intent_args_fit(const intent_args *a);
/* intent_begin, and on member first->idx, right after its own copy is
 * durable and before the others' may be, first->fn(first->arg) on that
 * member's I/O worker: the operation on the member that decides
 * (mirror.c), which saves it a round of its own.  That member's part may
 * then be done before the other members hold the record: it holds it
 * durably itself, which is what a replay needs (docs/FORMAT.md section
 * 8).  first->rc gets fn's result, or INTENT_NOT_RUN if the member failed
 * first (its copy not written, or no answer within the timeout). */
typedef struct intent_first {
	int idx;
	int (*fn)(void *arg);
	void *arg;
	int rc;
} intent_first;
#define INTENT_NOT_RUN INT_MIN
int intent_begin_first(volume *v, const intent_args *a, intent **out, intent_first *first);
/* intent_begin in steps, for a caller that runs each member's steps as
 * tasks of its own (mirror.c chains them on the relay, memberio.h, so
 * that the whole operation costs its caller one wait).  intent_new makes
 * the intent (no member call; it may wait for a free slot);
 * intent_identify_member takes member idx's identities of the objects
 * (nothing for mkdir); intent_seal encodes the record once every
 * member's identities are taken (later calls do nothing);
 * intent_write_member writes member idx's copy of the sealed record
 * durably and returns 0, or fails the member (volume_member_error) and
 * returns the negative errno.  The operation may start on a member only
 * once every member in service holds its copy; then intent_end_member on
 * each and intent_free, as for intent_begin_first. */
intent *intent_new(volume *v, const intent_args *a);
void intent_seal(intent *it);
/* A member's descriptors held through the steps, so that each step costs
 * only its own calls: the parent directories of from and to (d2 is d1
 * when they are one directory; a negative errno where one could not be
 * opened) with the names there.  intent_open_member opens them
 * (volume_parent_fd); intent_close_member closes them.  Each step takes
 * f NULL to open and close what it needs itself.  The member's log is
 * the volume's, held open for the mount (volume_log_fd). */
typedef struct intent_fds {
	int d1, d2;
	const char *leaf1, *leaf2;
} intent_fds;
void intent_open_member(volume *v, const intent *it, int idx, intent_fds *f);
void intent_close_member(intent_fds *f);
void intent_identify_member(volume *v, intent *it, int idx, const intent_fds *f);
int intent_write_member(volume *v, const intent *it, int idx);
/* Ends an intent after its operation returned rc: makes the operation
 * durable (fsync of the parent directories on each member, unless the
 * operation was refused) and removes the record; frees it.  While the
 * volume is unusable the record stays for the next mount to replay. */
void intent_end(volume *v, intent *it, int rc);
/* intent_end in parts, for a caller that ends the intent on each member
 * right after the operation there (mirror.c, on the member's I/O
 * worker): intent_end_member makes the operation durable on member idx
 * and removes its copy, as intent_end does on every member (so no member
 * loses its copy before its own part of the operation is durable); then
 * intent_free gives the intent back once every member's part is over.
 * Only while the volume is usable: otherwise intent_end. */
void intent_end_member(volume *v, const intent *it, int idx, int rc);
void intent_end_member_at(volume *v, const intent *it, int idx, int rc, const intent_fds *f);
void intent_free(intent *it);

/* Decodes a record read from a slot of a member's log (room bytes) of an
 * n-member volume: the intent, holding no slot, or NULL if the record is
 * torn or not of this volume's shape.  Parsing only; intent_release
 * frees what it returns. */
intent *intent_decode(const uint8_t *b, size_t room, int n);
void intent_release(intent *it);

/* One pending intent (for ecfs-fsck): the operation's name ("rename",
 * ...), its paths (to NULL if none) and how many members hold a valid
 * copy of the record. */
typedef void (*intent_report_fn)(void *arg, const char *op, const char *from,
                                 const char *to, int copies);

/* Finishes every operation whose intent a crash left on the usable
 * members, oldest first, then removes the records (and torn ones).
 * Creates the intent folder where it is missing.  Calls report (if not
 * NULL) for each intent.  Returns the number replayed, or a negative
 * errno if the volume became unusable. */
int intent_replay(volume *v, intent_report_fn report, void *arg);
/* Only reports the pending intents (changes nothing).  Returns their
 * number. */
int intent_scan(volume *v, intent_report_fn report, void *arg);

#endif
