/* SPDX-License-Identifier: MIT */
/*
 * What the storage core's upper layers (data/, namespace/) need from a volume
 * beyond the public volume.h: identity, checksum and code caches, member
 * workers and the open-file table.  Not for the FUSE layer.
 */
#ifndef ECFS_VOLUME_INTERNAL_H
#define ECFS_VOLUME_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "checksum.h"
#include "chunk.h"
#include "ec.h"
#include "fdpool.h"
#include "memberio.h"
#include "size_cache.h"
#include "space.h"
#include "volume.h"

const uint8_t *volume_uuid(const volume *v);
/* Why chunk header h, read from member mb's chunk (-1: any member's),
 * does not fit this volume (rules_header_misfit, with the volume's UUID,
 * k, m and largest strip size), or NULL if it does. */
const char *volume_header_misfit(const volume *v, const chunk_header *h, int mb);
memberio *volume_memberio(volume *v);
/* The members' room and reserves (space.h). */
space *volume_space(volume *v);
/* Closed files' sizes, for stat (size_cache.h). */
size_cache *volume_sizes(volume *v);
/* The pool of open files' member descriptors (fdpool.h). */
fdpool *volume_fd_pool(volume *v);
/* A mark on the volume (volume_marks.c): the empty file .ecfs/<name>
 * made, synced, on every member in service (make), or whether a member in
 * service holds it: 0, -ENOENT, or the first error of a member that stays
 * in service (what names the step in the log of a member that breaks). */
int volume_mark(volume *v, const char *name, bool make, const char *what);
/* The mark removed from every member in service: 0 or the first error. */
int volume_unmark(volume *v, const char *name);
/* The members already logged as holding a wrong copy (votes.h): a mask
 * it reads and writes atomically, 0 at open. */
uint64_t *volume_wrong_copies(volume *v);
/* Whether the names may be unsettled (volume_settled.c): set at open. */
bool *volume_unsettled_flag(volume *v);
/* At open, once the locks are taken and before anything is written:
 * left_open if a member's lock showed an open that never closed.  Marks
 * the names unsettled on every member in service then (not read_only). */
void volume_settle_open(volume *v, bool left_open, bool read_only);
/* True if a member root with this stat is open to others than the daemon
 * (not VOLUME_MEMBER_ROOT_MODE, or not owned by the user ecfs runs as). */
bool volume_root_open_to_others(const struct stat *st);
/* Member idx's root (rootfd) checked, and with fix made the daemon's
 * alone; on the calling thread, a member worker.  *was: its stat before.
 * 1 if it was open to others, 0 if not, or a negative errno. */
int volume_member_root_guard(volume *v, int idx, int rootfd, bool fix, struct stat *was);
/* The stand-ins are in use from now on (volume_root_standin). */
void volume_set_root_standin(volume *v);
/* Directory fd of member idx's namespace root (owned by the volume). */
int volume_root_fd(const volume *v, int idx);
/* Directory fd of member idx's .ecfs (owned by the volume). */
int volume_meta_fd(const volume *v, int idx);
/* Member idx's intent log (intent.c), held open by the volume for the
 * mount: its fd, or -1 while none is held (not yet opened, or dropped
 * when the member's directory was replaced by volume_member_revive). */
int volume_log_fd(volume *v, int idx);
/* Offers fd, the log opened beneath root (member idx's root fd when it
 * was opened), as the one held.  It is held if root is still the
 * member's and none is held yet, or replace is true (the log was just
 * made again: the old one is dropped); a dropped fd, or one opened
 * beneath a root replaced meanwhile, stays open until volume_close.
 * Returns the fd to use: fd, or the one another thread had made held
 * first (then fd is closed). */
int volume_hold_log_fd(volume *v, int idx, int root, int fd, bool replace);
/* Cached objects, shared and immutable; NULL if the parameters are bad.
 * The codes are cached for at most VOLUME_CODES_MAX parameter sets (the
 * volume's k and m, so a kind, w and packet size each): a set past them
 * has no code (its files fail with EIO, logged once), so that headers
 * cannot grow the cache without bound. */
#define VOLUME_CODES_MAX 16
const checksum *volume_checksum(volume *v, checksum_alg alg);
const ec_code *volume_code(volume *v, const ec_params *p);
/* volume_member_error for a chunk read or write: the error, if it is not
 * an answer, is also counted as member idx's (the health report). */
enum volume_io { VOLUME_IO_READ, VOLUME_IO_WRITE };
bool volume_member_io_error(volume *v, int idx, int err, const char *what, enum volume_io io);
/* A file of which a stripe could not be read (fewer than k good strips):
 * listed in the health report (lost.<i>), bounded. */
void volume_file_lost(volume *v, const char *path);
/* Logs a bad strip on member idx (first one per member at WARNING, the
 * rest at DEBUG), counts it, lists path among the damaged files of the
 * health report (damaged.<i>, bounded) and tells a checksum_error event. */
void volume_strip_failure(volume *v, int idx, const char *path, uint64_t stripe,
                          const char *why);

/* ---- the online heal's side in the core (the rest is in volume.h) ---- */

/* True once journal_census found no journal on any member and none was
 * written since: opening a file need not look for its journals. */
bool volume_journals_none(volume *v);
void volume_set_journals_none(volume *v, bool none);
/* Members that missed changes (volume_missed.c).  At open: the members in
 * service that another member in service records as failed since their
 * own last heal (by[i]: that other member), no more than m leaves room
 * for beside the members failed or healing already.  Direct calls. */
uint64_t volume_missed_stale(volume *v, int *by);
/* Parses the name of an entry of .ecfs/missed/: "<i>.<seq>" (*idx set,
 * 0..63) or "healed.<seq>" (*idx -1); false if the name is neither. */
bool volume_missed_parse(const char *name, int *idx, uint64_t *seq);
/* Writes past a slow member: tells the hook (volume_set_left_out_hook,
 * volume.h) that the file at path was just written without `members`
 * (stripe_leave_out_slow), so the online heal catches it up.  With no
 * hook (no heal), nothing is told. */
void volume_left_out(volume *v, const char *path, const uint8_t file_id[16], uint64_t members);
/* Counts strips rewritten by self-healing reads. */
void volume_count_healed(volume *v, uint64_t strips);

/* The open-file table, keyed by file identity (16 bytes). */
void volume_files_lock(volume *v);
void volume_files_unlock(volume *v);
void *volume_files_lookup(volume *v, const uint8_t id[16]);
void volume_files_insert(volume *v, const uint8_t *id, void *f);
void volume_files_remove(volume *v, const uint8_t id[16]);
/* An open reads a file's chunks before it takes the files lock; if the
 * file's last open closed meanwhile, what it read may predate what that
 * close wrote (its small-write log applied, its journals settled).  Take
 * volume_files_gone_count before reading the chunks, then, under the
 * lock, volume_files_gone_since says whether the file left the table
 * since (true too when too many others left to tell). */
#define VOLUME_FILES_GONE 64
uint64_t volume_files_gone_count(volume *v);
bool volume_files_gone_since(volume *v, const uint8_t id[16], uint64_t count);
/* Any file still in the table, or NULL when it is empty. */
void *volume_files_any(volume *v);
/* The first open file for which match(f, arg) is true, or NULL (under the
 * files lock). */
void *volume_files_find(volume *v, bool (*match)(void *f, void *arg), void *arg);

#endif
