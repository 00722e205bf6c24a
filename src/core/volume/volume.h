/* SPDX-License-Identifier: MIT */
/*
 * A volume: the n = k+m member directories, their superblocks, the lock,
 * and each member's health.  See docs/DESIGN.md section 3 and the on-member
 * format, docs/FORMAT.md.
 *
 * Every member is reached through a directory fd for its namespace root,
 * and paths inside the volume ("/a/b") are resolved beneath that root
 * without following symlinks.  A member that errors is marked failed for
 * the rest of the mount (logged once, naming it); the volume stays usable
 * while at most m members are failed.  All functions are thread-safe.
 */
#ifndef ECFS_VOLUME_H
#define ECFS_VOLUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "ec.h"
#include "volume_options.h"

#define ECFS_META_DIR ".ecfs" /* per-member metadata folder, never shown */
/* A member root is the daemon's alone: this mode, owned by the user ecfs
 * runs as (volume_roots.c).  The volume root's mode, owner, access ACL and
 * xattrs are those of its stand-in, this directory of each member
 * (docs/FORMAT.md section 1); its default ACL stays on the member root,
 * where the member's filesystem applies it to what is made in it. */
#define VOLUME_MEMBER_ROOT_MODE 0700
#define VOLUME_STANDIN_NAME "root"
#define VOLUME_ROOT_STANDIN ECFS_META_DIR "/" VOLUME_STANDIN_NAME

typedef struct volume volume;

/* What the volume tells the daemon's -o events and -o metrics as it
 * happens (volume_set_event_hook). */
typedef enum volume_event {
	VOLUME_EVENT_MEMBER_FAILED,  /* a member is out of service */
	VOLUME_EVENT_MEMBER_BACK,    /* a failed member is back, being rebuilt */
	VOLUME_EVENT_MEMBER_HEALED,  /* its rebuild is complete */
	VOLUME_EVENT_CHECKSUM_ERROR, /* a bad strip was read */
	VOLUME_EVENT_VOLUME_FULL,    /* writes get ENOSPC */
	VOLUME_EVENT_SCRUB_DONE,     /* the online scrub ended a run */
	VOLUME_EVENTS
} volume_event;
/* fn(arg, event, member index or -1, path in the volume or NULL, detail). */
typedef void (*volume_event_fn)(void *arg, volume_event e, int member, const char *path,
                                const char *detail);

/* Opens (creating on first use of n empty directories) the volume made of
 * the member directories paths[0..n-1], given in any order.  Takes the
 * volume lock.  On failure returns a negative errno and sets *message to a
 * g_malloc'd sentence naming the member at fault (the caller g_free()s it).
 * The namespace is as a crash left it: a read-write caller finishes the
 * pending intents (intent_replay, intent.h) before anything looks at it. */
int volume_open(const char *const *paths, int n, const volume_options *opts,
                volume **out, char **message);
void volume_close(volume *v);
/* The daemon was unmounted and closes the volume: its lock texts say so,
 * and an open on this host meanwhile waits for the locks (volume_lock.c).
 * Call it once the heal has stopped: these writes count among the
 * changes a failed member missed (volume_missed_changes). */
void volume_mark_closing(volume *v);
/* Attributes a mark in each member's .ecfs stands for (volume_marks.c):
 * file capabilities, POSIX ACLs, ever set on the volume. */
enum volume_attr_kind { VOLUME_ATTR_CAPS, VOLUME_ATTR_ACLS };
#define VOLUME_CAPS_MARK "capabilities"
#define VOLUME_ACLS_MARK "acls"
/* False only if no attribute of the kind was ever set on the volume: no
 * member holds its mark.  Asks the members once per mount (and puts the
 * mark back on members that lack it). */
bool volume_attr_marked(volume *v, enum volume_attr_kind kind);
/* Before an attribute of the kind is set: its mark, durably, on every
 * member in service.  0 or an error. */
int volume_attr_mark(volume *v, enum volume_attr_kind kind);
/* Closes a descriptor on member idx, unless the member was given up after
 * the I/O timeout (memberio.h): then it stays open, as closing would wait
 * on the member. */
void volume_member_close(volume *v, int idx, int fd);
/* Runs fn(arg), a small member call (memberio.h: on the relay if the
 * member is fast, else on its I/O worker), and returns its result, or
 * -ETIMEDOUT if the member was given up (memberio.h), so that the calling
 * thread never waits longer than the I/O timeout on a member.  fn keeps
 * what system calls return in its own locals and writes to arg only after
 * them (a call given up may return much later, and then it must find
 * nothing of the caller's to write into); reads go through mop_pread or
 * mio_bounce.  Inline on a worker thread, and without a timeout. */
int volume_on_member(volume *v, int idx, int (*fn)(void *), void *arg);
/* The argument of many such calls: a path on one member. */
typedef struct member_at {
	volume *v;
	int mb;
	const char *path;
} member_at;
/* The members in service for which fn(a member_at of path) returned 1,
 * asked at once (volume_on_members). */
uint64_t volume_members_where(volume *v, const char *path, int (*fn)(void *));
/* Whether member calls are handed to the members' I/O workers: only with
 * a timeout to watch them (without one the hand-off gains nothing), and
 * not from a worker already (workers could wait for each other). */
bool volume_hands_off(const volume *v);
/* volume_hands_off, and every member in service takes small calls on the
 * relay now (memberio_relays): the tasks of a small batch then follow each
 * other on one thread, so chained steps (mirror.c, a create in ecfile_open.c)
 * can each wait for the ones before. */
bool volume_all_relayed(const volume *v);
/* What a chain on the relay does last, once a namespace operation has
 * ended on every member: the daemon's getattr of each directory it
 * changed, so that the one the kernel asks next (every path walk asks
 * for a changed directory's attributes again) finds them kept
 * (attr_cache.h) instead of costing a hand-off.  refresh runs on the
 * relay, where member calls are made inline; NULL: nothing.  at, unless
 * NULL: what the chain holds of dir (objects_dir_stat_at). */
typedef struct volume_dir_at {
	const int *fds;          /* a descriptor of dir on each member of held */
	uint64_t held;
	const struct stat *seen; /* on each member of seen_mask, its fstat right */
	uint64_t seen_mask;      /* after the change (mop_dir_after) */
} volume_dir_at;
void volume_set_refresh(volume *v, void (*refresh)(const char *dir, const volume_dir_at *at));
/* refresh (above) for the directories holding path and, unless NULL or the
 * same, path2; called by the chains' last task. */
void volume_refresh_parents(volume *v, const char *path, const char *path2);
/* refresh for the directory holding path, by what the chain holds of it. */
void volume_refresh_parent_at(volume *v, const char *path, const volume_dir_at *at);
/* The member whose worker runs that last task: the first that answers
 * queries (the one a getattr asks) among those in mask; -1 if none. */
int volume_refresh_member(volume *v, uint64_t mask);
/* volume_on_member on the members in mask at once, each with its own
 * argument: rcs[idx] = fn(args[idx]), or -ETIMEDOUT for a member given
 * up.  With a timeout the calls go out together (to the relay, for fast
 * members) and are waited for once; without one they run inline, one
 * after the other. */
void volume_on_members(volume *v, uint64_t mask, int (*fn)(void *), void *const *args,
                       int *rcs);
/* The same for large calls (listings, strips): each member's on its own
 * worker. */
void volume_on_members_apart(volume *v, uint64_t mask, int (*fn)(void *),
                             void *const *args, int *rcs);

/* A query (a lookup, a getattr, a listing, the votes on an attribute):
 * volume_on_members (small: on the relay where it may, else each on its
 * own worker), but with a member timeout it waits for a member no longer
 * than the member's bound (memberio_bound_ms): a call that waits on a
 * member stalled past it, or on the relay stalled behind one, is cut
 * (mio_batch_bound_calls), and the members cut only because the relay
 * was are asked again on their own workers.  Returns the members cut:
 * no answer from them (rcs -EAGAIN), and no verdict on them either (the
 * member timeout still judges them); the caller answers from the others
 * if they are enough for its rule.  fn writes to its argument only
 * between member calls, as volume_on_member says. */
uint64_t volume_ask_members(volume *v, uint64_t mask, int (*fn)(void *), void *const *args,
                            int *rcs, bool small);
/* The same on one member: its result, and *cut. */
int volume_ask_member(volume *v, int idx, int (*fn)(void *), void *arg, bool *cut);

int volume_k(const volume *v);
/* The chunk format version of the volume's files (its superblock's). */
uint32_t volume_chunk_version(const volume *v);
int volume_m(const volume *v);
int volume_n(const volume *v);
/* Defaults for files created from now on (mount options over superblock). */
const volume_file_defaults *volume_defaults(const volume *v);
/* The settings the volume was opened with. */
const volume_runtime *volume_settings(const volume *v);

/* The path the user gave for member idx (idx is the member's place in the
 * volume, not in the command line). */
const char *volume_member_path(const volume *v, int idx);
/* 1 if member idx is in service. */
bool volume_member_ok(const volume *v, int idx);
int volume_failed_count(const volume *v);
/* Bitmask of failed members. */
uint64_t volume_failed_mask(volume *v);
/* In service and not being rebuilt by the online heal: may answer
 * namespace queries (a healing member's namespace may be incomplete). */
bool volume_member_answers(volume *v, int idx);
/* The members a namespace query asks now: those that answer, less any
 * stuck in one call past its bound (memberio_stalled), which would hold
 * the query until the member timeout; all that answer if every one is
 * stuck. */
uint64_t volume_query_members(volume *v);
/* True while every name is on every member that answers, or on none
 * (volume_settled.c): a listing may then read m + 1 of them. */
bool volume_names_settled(volume *v);
/* Every member is whole again (ecfs-fsck -y): the names are settled.
 * 0, or the first error of a member. */
int volume_names_settle(volume *v);
/* True while no more than m members are failed. */
bool volume_usable(const volume *v);

/* Reports that an operation on member idx failed with errno err while
 * doing `what`.  Errors that mean the member is broken (EIO, EROFS,
 * ENOTCONN, ESTALE, the root vanished or changed identity, ...) mark it
 * failed and log once; errors that are answers (ENOENT on a missing entry,
 * EEXIST, ENOTEMPTY, and ENOSPC or EDQUOT: a full member is not a broken
 * one, space.h) do not.  Returns true if the member is now failed. */
bool volume_member_error(volume *v, int idx, int err, const char *what);

/* Opens the directory that holds `path` on member idx, resolved beneath the
 * member's namespace root with no symlink followed, and sets *leaf to the
 * last component of path (a pointer into path; "." for "/").  Returns an
 * O_DIRECTORY fd the caller closes, or a negative errno: -ENAMETOOLONG,
 * before any member is asked, when a component of path is longer than
 * NAME_MAX (every operation on a path comes here, so this is the one
 * place that answers it). */
int volume_parent_fd(volume *v, int idx, const char *path, const char **leaf);
/* Opens `path` itself on member idx with O_PATH, resolved as above (a
 * trailing symlink is opened, not followed), in one call where the kernel
 * has openat2: a lookup of a name no member holds costs one call a member.
 * Returns the fd the caller closes, or a negative errno (-ENAMETOOLONG as
 * above; -ENOTDIR for a symlink before the last component). */
int volume_object_fd(volume *v, int idx, const char *path);
/* Opens `path` on member idx (mop_openat_beneath: recorded, faults
 * injected) in one call where the kernel has openat2; as
 * volume_parent_fd's walk and then the leaf elsewhere.  Returns the fd or
 * a negative errno (ELOOP for a symlink anywhere on the path). */
int volume_open_beneath(volume *v, int idx, const char *path, int flags, mode_t mode);

/* The path at which an attribute (mode, owner, access ACL, xattr) of path
 * lives on the members: "/" VOLUME_ROOT_STANDIN for the volume root once
 * the stand-ins are in use (volume_root_standin), else path itself. */
const char *volume_attrs_path(volume *v, const char *path);
/* True once the volume root's attributes live on the stand-ins: a member
 * in service held one at open, or they were carried over since
 * (rootattrs.h).  A volume made by an older build, opened read-only,
 * keeps them on the member roots. */
bool volume_root_standin(volume *v);

/* Names reserved at a member root, never part of the volume: the metadata
 * folder (.ecfs) and lost+found, which mkfs leaves at a filesystem's root
 * (a member root holding only lost+found is empty).  Deeper in the tree
 * both are ordinary names. */
bool volume_root_name_reserved(const char *name);
/* True for paths of the volume that are a reserved name at the root, or
 * below one (/.ecfs, /.ecfs/..., /lost+found, ...). */
bool volume_path_reserved(const char *path);

/* The members in service that share a filesystem (the same st_dev: they
 * fill up together, and one failure of it fails them all), as groups of
 * indices "0,1,2 4,5", g_malloc'd; NULL if each has its own. */
char *volume_same_filesystem(volume *v);

/* Space the volume can still store, in the statvfs sense: f_bavail is the
 * data k strips of the fullest member's room above its reserve can hold
 * (space.h), records counted. */
int volume_statfs(volume *v, struct statvfs *st);
/* Claims bytes on every member in service before an operation that takes
 * space (data writes, new files and directories, xattrs); 0, or -ENOSPC
 * when some member would dip into its reserve.  Operations that free
 * space or keep the volume consistent never claim. */
int volume_claim_space(volume *v, uint64_t bytes);

/* The volume-health report (the root's user.ecfs.health xattr): one
 * "key=value" line per fact, g_malloc'd.  Paths in the keys that end in
 * .path and in damaged.<i> and lost.<i> are escaped as in C (a backslash,
 * and \ooo for control bytes), so each fact is one line:
 *   state=healthy|degraded|failed   (degraded also while a member heals)
 *   k=K  m=M  n=N  members_failed=F
 *   member.<idx>=up <path>          or  member.<idx>=failed <path>: <why>
 *                                   or  member.<idx>=healing <path> (online heal)
 *   member.<idx>.state=up|failed|healing
 *   member.<idx>.path=<path, escaped>
 *   member.<idx>.read_errors=<errors of its chunk reads since mount>
 *   member.<idx>.write_errors=<errors of its chunk writes since mount>
 *   member.<idx>.checksum_errors=<bad strips read from it since mount>
 *   member.<idx>.latency_us=<moving average of its recent calls, memberio.h>
 *   member.<idx>.read_us=<its read cost: microseconds per 64 KiB read (median),
 *                         memberio_cost_us>[ slow]  (slow: read around
 *                         now, memberio_slow_of)
 *   member.<idx>.write_us=<its write cost, the same per 64 KiB written>[ slow]
 *                         (slow: new writes leave it out, -o write_quorum)
 *   strips_decoded=<count since mount>
 *   reads_hedged=<reads around a slow member that asked a spare member
 *                because the first ones were late, since mount (stripe_hedge.c)>
 *   checksum_failures=<count since mount>
 *   strips_healed=<strips rewritten by self-healing reads since mount>
 *   listings_from_last_mount=<directories listed from what the last
 *                             unmount saved, since mount (saved_listings.h)>
 *   same_filesystem=0,1,2 4,5  (only if members in service share one:
 *                               see volume_same_filesystem)
 *   damaged_files=<D>  damaged.<0..D-1>=<path of a file a bad strip was
 *                      read from since mount, escaped; the first 32, of
 *                      4 KiB in all>
 *   damaged_unlisted=<further bad-strip reports, of files past those>
 *   lost_files=<L>  lost.<0..L-1>=<path of a file with a stripe that could
 *                   not be read since mount, escaped; the first 32, of
 *                   4 KiB in all>
 *   lost_unlisted=<further such reports>
 *   heal=...  (the daemon's online heal, see heal.h)
 *   scrub=... (its online scrub, see scrub.h) */
char *volume_health_text(volume *v);
/* Tells fn(arg, ...) each volume_event, on the thread that met it and
 * with no lock of the volume held: fn returns at once (it queues, never
 * waits on anything slow).  Set before the volume is used; NULL: none. */
void volume_set_event_hook(volume *v, volume_event_fn fn, void *arg);
/* The event's name for programs: "member_failed", ... */
const char *volume_event_name(volume_event e);
/* Tells the event hook of an event met above the volume (the scrub's). */
void volume_post_event(volume *v, volume_event e, int idx, const char *path,
                       const char *detail);

/* Counters shown in the health report. */
void volume_count_decoded(volume *v, uint64_t stripes);
void volume_count_hedged(volume *v);
/* A directory listed from what the last unmount saved (saved_listings.h). */
void volume_count_listed_saved(volume *v);

/* ---- the online heal (src/fs/heal.c, heal.h) ---- */

/* Notices member roots removed while mounted (at most once a second). */
void volume_check_roots(volume *v);
/* Tries to bring failed member idx back: its directory holds this volume's
 * superblock for idx again after having gone away (unmounted, renamed,
 * made unreachable) or is a new empty directory (a replaced disk, which
 * gets the superblock).  The member then takes the lock and is in service
 * again, marked healing.  Returns 1 if revived, 0 if not (yet), or a
 * negative errno. */
int volume_member_revive(volume *v, int idx);
/* Members in service that are being rebuilt (their namespace and chunks
 * may be incomplete): they take writes but answer no namespace query. */
uint64_t volume_healing_mask(volume *v);
/* The heal of member idx is complete. */
void volume_member_healed(volume *v, int idx);
/* The failed members that may have missed a change: all of them once
 * some member was written in this mount (besides the locks of the open),
 * none before. */
uint64_t volume_missed_changes(volume *v);
/* Members that missed changes (volume_missed.c): records on every other
 * member in service that member idx failed at seq (microseconds): the
 * number of members written, or -EIO if none. */
int volume_missed_record(volume *v, int idx, uint64_t seq);
/* Member idx is healed: the records of its failing are removed from the
 * members in service, and idx is stamped healed at seq or above every
 * record removed.  Returns the stamp. */
uint64_t volume_missed_healed(volume *v, int idx, uint64_t seq);
/* .ecfs/<name> on member mb (the caller's thread, through
 * volume_on_member): written whole to name.tmp, synced if sync, renamed
 * over name (and the directory synced if sync); or read whole into *out
 * (g_malloc'd, a NUL after its *len bytes): -EINVAL if not a regular
 * file, -EFBIG if larger than max, else 0 or a negative errno. */
int volume_metafile_put(volume *v, int mb, const char *name, const void *bytes, size_t len,
                        bool sync);
int volume_metafile_get(volume *v, int mb, const char *name, size_t max, uint8_t **out,
                        size_t *len);
/* The daemon's state file .ecfs/<name> (a text) written whole on every
 * member in service (to name.tmp, synced, renamed over); returns on how
 * many it was.  Read back: the text most members in service hold, or NULL
 * if none holds one; g_malloc'd. */
int volume_metafile_write(volume *v, const char *name, const char *text);
char *volume_metafile_read(volume *v, const char *name);
/* Extra lines for the health report: fn(arg) returns them g_malloc'd. */
void volume_set_health_hook(volume *v, char *(*fn)(void *), void *arg);
/* Writes past a slow member: fn(arg, path, file id, members) is told
 * that the file at path was just written without `members`
 * (stripe_leave_out_slow), so the online heal catches it up.  NULL: no
 * hook, nothing is told. */
void volume_set_left_out_hook(volume *v,
                              void (*fn)(void *, const char *, const uint8_t *, uint64_t),
                              void *arg);
/* Whether the file whose id (ecfile_file_id) is file_id is open. */
bool volume_file_is_open(volume *v, const uint8_t file_id[16]);

#endif
