/* SPDX-License-Identifier: MIT */
/*
 * The volume's own state, shared by the files of the volume module
 * (volume_open.c, volume_probe.c, volume_create.c, volume_lock.c,
 * volume_calls.c, volume_health.c, volume_paths.c, volume_revive.c): the
 * volume and its members, the probe of a member directory, and the
 * helpers one of those files gives the others (named vol_*).  Private to
 * those files: data/, namespace/ and ecfs-fsck reach the volume through
 * volume_internal.h, src/fs/ through volume.h.
 */
#ifndef ECFS_VOLUME_PRIVATE_H
#define ECFS_VOLUME_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <glib.h>

#include "checksum.h"
#include "memberops.h"
#include "mounts.h"
#include "root_watch.h"
#include "superblock.h"
#include "volume_internal.h"

/* Present while the online heal rebuilds the member: an unmount cuts the
 * rebuild short, and the next mount takes it up again. */
#define HEAL_FILE "heal"

typedef struct member {
	char *path;
	int rootfd, metafd, lockfd;
	int logfd;       /* the intent log held open (volume_hold_log_fd), -1 if none */
	dev_t dev;
	ino_t ino;
	bool failed;
	char *why;
	bool warned_strip;
	bool warned_full;  /* its first ENOSPC or EDQUOT was logged */
	bool warned_unmounted; /* the heal said it will not take it */
	mount_info mi;
	uint64_t strip_failures;
	uint64_t io_errors[2]; /* errors of chunk reads and writes (enum volume_io) */
	bool root_lost;  /* failed because its directory went away (heal may revive it) */
	bool healing;    /* back in service, being rebuilt by the online heal */
	bool locked;     /* its lock is this process's (vol_lock_member) */
	bool left_open;  /* its lock file held the text of an open that never closed */
} member;

struct volume {
	mop_state mops;        /* first: what the member operations see of us */
	void (*refresh)(const char *dir, const volume_dir_at *at); /* volume_set_refresh */
	int n, k, m;
	int format;            /* the superblock's: the version of the chunks */
	uint64_t strip_max;    /* the largest strip of a file (rules_volume_strip_max) */
	member *mem;
	uint8_t uuid[16];
	uint8_t key[CHECKSUM_KEY_SIZE];
	volume_file_defaults defaults; /* volume_defaults */
	volume_runtime settings;       /* volume_settings */
	char *checksum_name;
	bool read_only;
	bool journals_none;    /* journal_census: no member holds a journal */
	pthread_mutex_t lock;       /* member health; order: before dirstamps', log_lock */
	pthread_mutex_t cache_lock; /* codes and checksums; order: a leaf */
	GHashTable *codes;     /* "kind:k:m:w:packet" -> ec_code*, VOLUME_CODES_MAX at most */
	bool warned_codes;     /* a set past the bound was logged */
	checksum *sums[8];
	pthread_mutex_t files_lock; /* files, ecfile.refs; after heal's, before cache_lock */
	GHashTable *files;     /* file id -> ecfile* */
	/* The ids of the last VOLUME_FILES_GONE files taken out of the table,
	 * slot files_gone % VOLUME_FILES_GONE the next (volume_files_gone_since). */
	uint64_t files_gone;
	uint8_t gone_ids[VOLUME_FILES_GONE][16];
	memberio *mio;
	space *room;           /* the members' free space and reserves */
	size_cache *sizes;     /* closed files' sizes, for stat */
	fdpool *fds;           /* open files' member descriptors (fdpool.h) */
	root_watch *watch;     /* members whose roots are known unchanged */
	int64_t roots_checked; /* monotonic seconds of the last root check */
	uint64_t changes_at_open; /* mops.made once the locks were written */
	uint64_t decoded;      /* atomics */
	uint64_t hedged;
	uint64_t listed_saved;
	uint64_t strip_failures;
	uint64_t strips_healed;
	GArray *old_fds;       /* replaced member fds (struct old_fd), closed at the end */
	char *(*health_hook)(void *); /* extra health lines (the online heal) */
	void *health_arg;
	void (*left_out_hook)(void *, const char *, const uint8_t *, uint64_t);
	void *left_out_arg;           /* the online heal's: files to catch up */
	volume_event_fn event_hook;   /* the daemon's events and metrics */
	void *event_arg;
	GPtrArray *damaged, *lost;    /* paths met since mount (under lock), bounded */
	uint64_t damaged_unlisted, lost_unlisted; /* reports past the bound */
	int xattr_marks[2];    /* volume_attr_marked: what its marks say (atomic) */
	bool names_unsettled;  /* volume_settled.c */
	bool root_standin;     /* volume_roots.c (atomic) */
	uint64_t wrong_copies; /* votes.c: members told of (atomic) */
};

_Static_assert(offsetof(struct volume, mops) == 0, "memberops.c finds mop_state at a volume");

/* P_UNMOUNTED: not a mount point where the others are (judge_mounts). */
enum probe_state { P_OK, P_EMPTY, P_MISSING, P_BROKEN, P_FOREIGN, P_UNMOUNTED };

typedef struct probe {
	const char *path;
	int rootfd, metafd;
	enum probe_state state;
	int err;
	superblock sb;
	char *why;
	int slot;
	mount_info mi;
	bool guarded;     /* out of local users' reach (mounts_path_guarded) */
} probe;

/* A member's root, for a task on its worker. */
struct root_check {
	volume *v;
	int idx;
};

/* volume_probe.c: a member directory probed into p (p->path set), and
 * the probe's descriptors closed. */
void vol_probe_member(probe *p);
void vol_probe_free(probe *p);
/* The member directories probed and judged together (n empty ones made a
 * new volume): the index of the reference probe, or a negative errno. */
int vol_probe_members(probe *pr, const char *const *paths, int n, const volume_options *o,
                      char **message);
/* slot[i]: the probe that is member i. */
void vol_place_members(probe *pr, int n, probe **slot);

/* volume_create.c: the defaults for new files (mount options over the
 * superblock's), and a new volume written on n empty members. */
int vol_set_defaults(volume *v, const superblock *sb, const volume_options *opts,
                     char **message);
int vol_create(probe *pr, int n, const volume_options *opts, superblock *sb,
               char **message);

/* volume_roots.c: whether a member in service holds the volume root's
 * stand-in (volume_root_standin), asked at open. */
void vol_find_standin(volume *v);

/* volume_lock.c: member idx locked through metafd; the locks of the open
 * (and the healing marks); the lock texts emptied at close. */
int vol_lock_member(volume *v, int idx, int metafd, int *lockfd, int64_t wait_until_ms,
                    char **message);
int vol_lock_members(volume *v, bool read_only, unsigned timeout_ms, char **message);
void vol_clear_lock_texts(volume *v);

/* volume_open.c: whether member idx's syncs are skipped (its mount); an
 * fd of member idx kept open until volume_close (under v->lock); member
 * idx's root watched (root_watch.h). */
void vol_note_memory_only(volume *v, int idx);
void vol_keep_old_fd(volume *v, int idx, int fd);
void vol_watch_root(volume *v, int idx);

/* volume_health.c: member idx failed for the rest of the mount, why
 * logged once; an event told to the daemon's hook (volume_set_event_hook),
 * with no lock of the volume held. */
void vol_fail_member(volume *v, int idx, const char *why);
void vol_event(volume *v, volume_event e, int idx, const char *path, const char *detail);

#endif
