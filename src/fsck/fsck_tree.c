/* SPDX-License-Identifier: MIT */
/*
 * The mirrored namespace, offline: every healthy member's tree is walked
 * in step from the root (one directory fd per member, *at() calls only, no
 * symlink followed), the union of the names is judged entry by entry, and
 * with --repair the members are brought back into agreement.
 *
 * The rule that settles disagreements (documented in ecfs-fsck(8)):
 *   - existence: an entry is kept if at least half of the healthy members
 *     hold it (a tie keeps: removing is the one step that cannot be
 *     undone), a regular file also if at least k members hold it (its data
 *     may still decode), a directory also if it is not empty anywhere.
 *     Kept entries are recreated where missing; the others are removed
 *     from the members that still hold them (the leftovers of an unlink
 *     while those members were away);
 *   - type, then each attribute (permission bits, owner and group, the
 *     symlink target, the device number, the POSIX ACLs, the set of other
 *     xattrs): the value held by the most members wins, a tie goes to the
 *     member whose copy has the newest ctime (the last change made).
 * Regular files are handed to repair_file() for their chunks and strips.
 *
 * Before the walk, fsck_pending() (fsck_pending.c) deals with what a
 * crash leaves in the metadata folder: intents are finished first (the
 * namespace votes would otherwise settle a half-done rename by majority,
 * which can split a file's chunks between two names), and orphans are
 * removed; neither is ever judged as a namespace entry.
 */
#include "fsck.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsck_view.h"
#include "memberio.h"
#include "memberops.h"
#include "repair.h"
#include "stripe.h"
#include "volume_internal.h"
#include "volume_paths.h"
#include "votes.h"
#include "xattrs.h"

/* ---- votes ---- */

typedef bool (*same_fn)(const view *a, const view *b);

static bool same_type(const view *a, const view *b)
{
	return (a->st.st_mode & S_IFMT) == (b->st.st_mode & S_IFMT);
}
static bool same_perm(const view *a, const view *b)
{
	return (a->st.st_mode & 07777) == (b->st.st_mode & 07777);
}
static bool same_owner(const view *a, const view *b)
{
	return a->st.st_uid == b->st.st_uid && a->st.st_gid == b->st.st_gid;
}
static bool same_target(const view *a, const view *b)
{
	return g_strcmp0(a->target, b->target) == 0;
}
static bool same_rdev(const view *a, const view *b)
{
	return a->st.st_rdev == b->st.st_rdev;
}
static bool same_blob(const GString *a, const GString *b)
{
	if (!a || !b)
		return true; /* unknown: not a disagreement */
	return a->len == b->len && !memcmp(a->str, b->str, a->len);
}
static bool same_xattrs(const view *a, const view *b)
{
	return same_blob(a->xblob, b->xblob);
}
static bool same_acl(const view *a, const view *b)
{
	return same_blob(a->ablob, b->ablob);
}

/* The member whose value wins among voters (votes.h: majority, ties to
 * the newest ctime); -1 if there is no voter. */
struct vote_ctx {
	const view *w;
	same_fn same;
};

static bool vote_same(const void *ctx, int a, int b)
{
	const struct vote_ctx *c = ctx;
	return c->same(&c->w[a], &c->w[b]);
}

static int vote(const view *w, int n, uint64_t voters, same_fn same)
{
	struct timespec ctimes[STRIPE_MAX_N];
	struct vote_ctx c = { w, same };

	for (int mb = 0; mb < n; mb++)
		ctimes[mb] = w[mb].st.st_ctim;
	return votes_winner(n, voters, ctimes, vote_same, &c);
}

/* Runs fn(e, mb, win) on member mb's worker (fsck_on_member): every
 * member call of the walk goes through here, so a member that hangs is
 * given up after the I/O timeout.  -ETIMEDOUT for a member given up. */
typedef struct entry_ctx entry_ctx;
typedef int (*entry_fn)(entry_ctx *e, int mb, int win);

typedef struct entry_call {
	entry_ctx *e;
	int mb, win;
	entry_fn fn;
} entry_call;

static int entry_call_run(void *arg)
{
	entry_call *c = arg;
	return c->fn(c->e, c->mb, c->win);
}

static int on_member(entry_ctx *e, int mb, int win, entry_fn fn);

static bool dir_has_entries(entry_ctx *e, int mb);

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR: return "directory";
	case S_IFREG: return "regular file";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	default: return "unknown";
	}
}

/* ---- one entry ---- */

struct dir_jobs;

/* What an entry is: a name of the volume, the member roots (the volume
 * root's listing), or the stand-in that holds the volume root's mode,
 * owner, access ACL and xattrs (VOLUME_ROOT_STANDIN, never descended). */
enum entry_kind { ENTRY_NAME, ENTRY_MEMBER_ROOT, ENTRY_STANDIN };

struct entry_ctx {
	fsck *f;
	enum entry_kind kind;
	const char *path;    /* volume path, "/" for the root */
	const char *name;    /* name in the parent, "." for the root */
	const int *dfd;      /* parent directory fd per member, -1 if none */
	uint64_t quiet;      /* members whose absence is reported higher up */
	struct dir_jobs *jobs; /* the parent's file jobs, or NULL: check here */
	view w[STRIPE_MAX_N];
	const int *read_rcs; /* w read already (walk_dir's view blocks): each member's result */
	uint64_t present, fresh;
	uint64_t typed, unreadable; /* a regular file handed to a file thread */
	uint64_t settled; /* fresh copies made like the winners already (settle_fresh) */
	const struct winners *wins; /* for settle_fresh_run */
	int times_from; /* the member whose times the fresh copies take, or -1 */
};

static int on_member(entry_ctx *e, int mb, int win, entry_fn fn)
{
	entry_call c = { e, mb, win, fn };
	return fsck_on_member(e->f, mb, entry_call_run, &c);
}

/* fn(e, mb, win) on the members in mask at once; rcs[mb] its result. */
static void on_members(entry_ctx *e, uint64_t mask, int win, entry_fn fn, int *rcs)
{
	entry_call c[STRIPE_MAX_N];
	void *args[STRIPE_MAX_N];

	for (int mb = 0; mb < e->f->n; mb++) {
		c[mb] = (entry_call){ e, mb, win, fn };
		args[mb] = &c[mb];
	}
	fsck_on_members(e->f, mask, entry_call_run, args, rcs);
}

static int view_run(entry_ctx *e, int mb, int unused)
{
	(void)unused;
	fsck_read_view(e->f->v, mb, e->dfd[mb], e->name, &e->w[mb]);
	return 0;
}

/* Member mb's view of the entry, read again into e->w[mb]. */
static void read_view(entry_ctx *e, int mb)
{
	fsck_view_clear(&e->w[mb]);
	if (e->dfd[mb] >= 0 && on_member(e, mb, 0, view_run) < 0) {
		fsck_view_clear(&e->w[mb]); /* what a member given up said counts for nothing */
		e->w[mb].err = ETIMEDOUT;
	}
}

static int has_entries_run(entry_ctx *e, int mb, int unused)
{
	list_call l = { e->dfd[mb], e->name, 1, NULL };
	int rc = fsck_list_run(&l);

	(void)unused;
	if (rc < 0)
		return rc;
	rc = l.names->len > 0;
	g_ptr_array_unref(l.names);
	return rc;
}

/* Whether member mb's copy of the directory holds anything; one that
 * cannot be read is taken to. */
static bool dir_has_entries(entry_ctx *e, int mb)
{
	return on_member(e, mb, 0, has_entries_run) != 0;
}

/* ---- repairs on one member ---- */

/* The repairs on one member: entry_fns, run on its worker (on_member). */

static int remove_entry(entry_ctx *e, int mb, int unused)
{
	int flags = S_ISDIR(e->w[mb].st.st_mode) ? AT_REMOVEDIR : 0;

	(void)unused;
	return mop_unlinkat(e->f->v, mb, e->dfd[mb], e->name, flags);
}

/* Moves a left-over entry to <member>/.ecfs/lost+found instead of
 * deleting it: what looks like the remains of an unlink may also be the
 * last strips of a file damaged beyond repair, and those are kept. */
static int move_to_lost(entry_ctx *e, int mb, int unused)
{
	fsck *f = e->f;
	int root = volume_root_fd(f->v, mb);
	char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA1, e->path, -1);
	char *target = g_strdup_printf("%.12s-%.200s", sum, e->name);
	int rc = volume_meta_mkdirat(f->v, mb, root, ECFS_META_DIR "/lost+found", 0700);

	(void)unused;
	if (rc == -EEXIST)
		rc = 0;
	int lfd = rc ? -1 : volume_meta_dir(f->v, mb, root, ECFS_META_DIR "/lost+found");
	if (!rc && lfd < 0)
		rc = lfd;
	if (!rc)
		rc = mop_renameat2(f->v, mb, e->dfd[mb], e->name, lfd, target, 0);
	if (lfd >= 0)
		MIO_CALL(close(lfd));
	g_free(sum);
	g_free(target);
	return rc;
}

/* Creates the entry on mb like the winner's copy (win). */
static int create_entry(entry_ctx *e, int mb, int win)
{
	const view *like = &e->w[win];
	volume *v = e->f->v;
	int dfd = e->dfd[mb];
	mode_t mode = like->st.st_mode;
	int rc;

	if (S_ISDIR(mode))
		rc = mop_mkdirat(v, mb, dfd, e->name, 0700);
	else if (S_ISLNK(mode))
		rc = mop_symlinkat(v, mb, like->target, dfd, e->name);
	else
		rc = mop_mknodat(v, mb, dfd, e->name, (mode & S_IFMT) | 0600, like->st.st_rdev);
	return rc;
}

/* One attribute: vote among the members that held the entry before this
 * run, report the others, fix them (and the fresh copies, silently). */
static void settle(entry_ctx *e, int win, same_fn same, const char *what,
                   int (*fix)(entry_ctx *e, int mb, int win))
{
	fsck *f = e->f;

	for (int mb = 0; mb < f->n; mb++) {
		if (!(e->present >> mb & 1) || e->settled >> mb & 1 || same(&e->w[mb], &e->w[win]))
			continue;
		bool fresh = e->fresh >> mb & 1;
		int rc = f->o.repair ? on_member(e, mb, win, fix) : 0;
		if (fsck_gone(f, mb))
			continue; /* reported as a member given up */
		if (!fresh)
			fsck_problem(f, "metadata", e->path, mb, 0, 0, fsck_outcome(f, rc),
			             "%s differs from the other members%s%s", what, rc ? ": " : "",
			             rc ? g_strerror(-rc) : "");
	}
}

static int fix_perm(entry_ctx *e, int mb, int win)
{
	mode_t mode = e->w[win].st.st_mode & 07777;
	return mop_fchmodat(e->f->v, mb, e->dfd[mb], e->name, mode, 0);
}
static int fix_owner(entry_ctx *e, int mb, int win)
{
	int rc = mop_fchownat(e->f->v, mb, e->dfd[mb], e->name, e->w[win].st.st_uid,
	                      e->w[win].st.st_gid, AT_SYMLINK_NOFOLLOW);
	/* chown clears set-id bits: put the permission bits back. */
	if (!rc && !S_ISLNK(e->w[win].st.st_mode) && e->w[win].st.st_mode & 06000)
		rc = fix_perm(e, mb, win);
	return rc;
}
static int fix_xattrs(entry_ctx *e, int mb, int win)
{
	return xattrs_member_write(e->f->v, mb, e->dfd[mb], e->name, &e->w[win].xs,
	                           &e->w[mb].xs, fsck_not_acl);
}
/* Setting an access ACL sets the permission bits from it on the member
 * (its filesystem keeps them in step): the winner's are consistent with
 * its ACL, and the mode was settled first. */
static int fix_acl(entry_ctx *e, int mb, int win)
{
	return xattrs_member_write(e->f->v, mb, e->dfd[mb], e->name, &e->w[win].xs,
	                           &e->w[mb].xs, xattrs_is_acl);
}
static int fix_recreate(entry_ctx *e, int mb, int win)
{
	int rc = remove_entry(e, mb, win);
	if (!rc)
		rc = create_entry(e, mb, win);
	if (!rc)
		rc = fix_owner(e, mb, win);
	return rc;
}

static int fix_times(entry_ctx *e, int mb, int src)
{
	struct timespec ts[2] = { e->w[src].st.st_atim, e->w[src].st.st_mtim };
	return mop_utimensat(e->f->v, mb, e->dfd[mb], e->name, ts, AT_SYMLINK_NOFOLLOW);
}

static int fix_root(entry_ctx *e, int mb, int unused)
{
	struct stat was;
	(void)unused;
	int rc = volume_member_root_guard(e->f->v, mb, e->dfd[mb], true, &was);
	return rc < 0 ? rc : 0;
}

/* A member root is the daemon's alone (volume_roots.c): one open to other
 * users lets them past the mount's permission checks and plant files. */
static void guard_roots(entry_ctx *e)
{
	fsck *f = e->f;

	for (int mb = 0; mb < f->n; mb++) {
		const struct stat *st = &e->w[mb].st;
		if (!(e->present >> mb & 1) || !volume_root_open_to_others(st))
			continue;
		int rc = f->o.repair ? on_member(e, mb, 0, fix_root) : 0;
		if (fsck_gone(f, mb))
			continue;
		fsck_problem(f, "metadata", e->path, mb, 0, 0, fsck_outcome(f, rc),
		             "the member root is mode %04o owned by %u:%u: other users can reach "
		             "the member tree (repair makes it %04o and ecfs's own)%s%s",
		             (unsigned)(st->st_mode & 07777), (unsigned)st->st_uid,
		             (unsigned)st->st_gid, VOLUME_MEMBER_ROOT_MODE, rc ? ": " : "",
		             rc ? g_strerror(-rc) : "");
	}
}

/* The member whose value wins each attribute among the voters (the
 * members that held the entry before this run). */
typedef struct winners {
	int type, owner, perm, acl, xattrs;
} winners;

static uint64_t voters_of(const entry_ctx *e)
{
	return e->present & ~e->fresh & ~e->f->heal_mask;
}

/* Every winner but the type's, which w->type holds already. */
static void vote_attrs(const entry_ctx *e, winners *w)
{
	uint64_t voters = voters_of(e);
	int n = e->f->n;

	w->owner = vote(e->w, n, voters, same_owner);
	w->perm = vote(e->w, n, voters, same_perm);
	w->acl = vote(e->w, n, voters, same_acl);
	w->xattrs = vote(e->w, n, voters, same_xattrs);
}

static void vote_winners(const entry_ctx *e, winners *w)
{
	w->type = vote(e->w, e->f->n, voters_of(e), same_type);
	vote_attrs(e, w);
}

/* A directory check_entry walks after its metadata (descend). */
static bool walked_dir(const entry_ctx *e, mode_t type)
{
	return type == S_IFDIR && e->kind != ENTRY_STANDIN;
}

/* New copies take the times of the newest existing one (times_from); a
 * walked directory's after its walk, which makes its entries and so
 * changes its times. */
static void fresh_times(entry_ctx *e)
{
	int rcs[STRIPE_MAX_N];

	if (e->f->o.repair && e->fresh & ~e->settled && e->times_from >= 0)
		on_members(e, e->fresh & ~e->settled, e->times_from, fix_times, rcs);
}

static void settle_metadata(entry_ctx *e)
{
	fsck *f = e->f;
	uint64_t voters = voters_of(e);
	if (!voters)
		return;
	winners w = { .type = vote(e->w, f->n, voters, same_type) };
	mode_t type = e->w[w.type].st.st_mode & S_IFMT;

	if (type == S_IFLNK) {
		settle(e, vote(e->w, f->n, voters, same_target), same_target, "symlink target",
		       fix_recreate);
		for (int mb = 0; mb < f->n; mb++)
			if (e->present >> mb & 1 && f->o.repair)
				read_view(e, mb); /* after recreation */
	}
	if (type == S_IFCHR || type == S_IFBLK)
		settle(e, vote(e->w, f->n, voters, same_rdev), same_rdev, "device number",
		       fix_recreate);
	/* the symlink's views were read again: its owner is voted on them */
	vote_attrs(e, &w);
	/* the member roots' own mode and owner are ecfs's, the volume root's
	 * are its stand-in's */
	if (e->kind == ENTRY_MEMBER_ROOT)
		guard_roots(e);
	else
		settle(e, w.owner, same_owner, "owner", fix_owner);
	if (type != S_IFLNK && e->kind != ENTRY_MEMBER_ROOT)
		settle(e, w.perm, same_perm, "mode", fix_perm);
	if (type != S_IFLNK) {
		settle(e, w.acl, same_acl, "ACL", fix_acl);
		settle(e, w.xattrs, same_xattrs, "xattrs", fix_xattrs);
	}
	e->times_from = w.type;
	if (!walked_dir(e, type))
		fresh_times(e);
}

/* On a fresh copy's member (settle_fresh): its view read, then made like
 * the winners' in settle_metadata's order (owner before mode: chown
 * clears set-id bits; the ACL after the mode), times last.  A fresh
 * copy's repairs are not reported, as in settle(). */
static int settle_fresh_run(entry_ctx *e, int mb, int unused)
{
	const winners *w = e->wins;
	view *mine = &e->w[mb];

	(void)unused;
	fsck_view_clear(mine);
	view_run(e, mb, 0);
	if (!mine->present)
		return mine->err ? -mine->err : -ENOENT;
	if (!same_owner(mine, &e->w[w->owner]))
		fix_owner(e, mb, w->owner);
	if (!same_perm(mine, &e->w[w->perm]))
		fix_perm(e, mb, w->perm);
	if (!same_acl(mine, &e->w[w->acl]))
		fix_acl(e, mb, w->acl);
	if (!same_xattrs(mine, &e->w[w->xattrs]))
		fix_xattrs(e, mb, w->xattrs);
	return fix_times(e, mb, w->type);
}

/* A regular file's fresh copies (its chunks just created), each settled
 * in one call on its member rather than one call per attribute: a
 * rebuilt member takes every file so.  The others go through
 * settle_metadata. */
static void settle_fresh(entry_ctx *e)
{
	int rcs[STRIPE_MAX_N];
	winners w;

	if (!e->f->o.repair || !e->fresh || e->kind != ENTRY_NAME || !voters_of(e))
		return;
	vote_winners(e, &w);
	if (!S_ISREG(e->w[w.type].st.st_mode))
		return;
	e->wins = &w;
	on_members(e, e->fresh, 0, settle_fresh_run, rcs);
	e->wins = NULL;
	for (int mb = 0; mb < e->f->n; mb++) {
		if (!(e->fresh >> mb & 1))
			continue;
		if (rcs[mb] < 0 && e->w[mb].present) {
			fsck_view_clear(&e->w[mb]); /* a member given up: nothing it said counts */
			e->w[mb].err = ETIMEDOUT;
		}
		if (e->w[mb].present)
			e->present |= 1ull << mb;
		e->settled |= 1ull << mb;
	}
}

static int walk_dir(fsck *f, const char *path, const int *dfd, uint64_t quiet);

/* The metadata of an entry that exists where it should (e->typed, and the
 * fresh copies just made). */
static void settle_entry(entry_ctx *e)
{
	e->present = e->typed;
	settle_fresh(e);
	for (int mb = 0; mb < e->f->n; mb++)
		if (e->fresh >> mb & 1 && !(e->settled >> mb & 1)) {
			read_view(e, mb);
			if (e->w[mb].present)
				e->present |= 1ull << mb;
		}
	settle_metadata(e);
}

/* A regular file: its chunks and strips, then its metadata.  Offline,
 * in the walk's directory fds and with what the walk saw of its chunks;
 * the daemon's heal finds them again from the path, as the volume
 * changes meanwhile. */
static int check_file(entry_ctx *e)
{
	uint64_t created = 0, quiet = e->quiet | e->unreadable;
	repair_seen seen[STRIPE_MAX_N];

	for (int mb = 0; mb < e->f->n; mb++) {
		bool reg = e->w[mb].present && S_ISREG(e->w[mb].st.st_mode);
		seen[mb] = (repair_seen){ reg ? e->w[mb].st.st_size : -1,
		                          reg ? e->w[mb].st.st_nlink : 0 };
	}
	int rc = e->f->hooks ? repair_file(e->f, e->path, e->typed, quiet, &created)
	         : repair_file_at(e->f, e->path, e->dfd, e->name, seen, e->typed, quiet, &created);

	e->fresh |= created;
	settle_entry(e);
	return rc;
}

/* ---- regular files on file threads ----
 *
 * ecfs-fsck checks regular files on FILE_THREADS threads while the walk
 * goes on: a small file spends most of its time waiting on its members,
 * meanwhile others are read and decoded.  A directory's walk waits for
 * its files before it returns (they use its directory fds).  Not in the
 * daemon's heal, which goes one file at a time at its own pace, and not
 * for files with hard links: a path of one restores the chunk of the
 * path repaired before it, so they keep the walk's order. */
#define FILE_THREADS 3
#define FILES_IN_FLIGHT (4 * FILE_THREADS)
#define FILES_REFILL (2 * FILE_THREADS) /* the walk goes on once this few are left */
#define HANDED_OFF 1 /* check_entry: the entry is a file thread's now */

typedef struct dir_jobs {
	GMutex lock; /* guards pending, rc; order: a leaf */
	GCond done;
	int pending;
	int wake_at; /* the walk sleeps until pending falls to this; -1: it does not */
	int rc; /* the first error of a file */
} dir_jobs;

static bool hard_linked(const entry_ctx *e)
{
	for (int mb = 0; mb < e->f->n; mb++)
		if (e->w[mb].present && e->w[mb].st.st_nlink > 1)
			return true;
	return false;
}

/* An entry to check; free_entry() releases it and its views. */
static entry_ctx *new_entry(fsck *f, char *path, const char *name, const int *dfd,
                            uint64_t quiet, dir_jobs *jobs)
{
	entry_ctx *e = g_new0(entry_ctx, 1); /* the views start empty */

	e->f = f;
	e->path = path;
	e->name = name;
	e->dfd = dfd;
	e->quiet = quiet;
	e->jobs = jobs;
	e->times_from = -1;
	return e;
}

static void free_entry(entry_ctx *e)
{
	for (int mb = 0; mb < e->f->n; mb++)
		fsck_view_clear(&e->w[mb]);
	g_free((char *)e->path);
	g_free(e);
}

static void file_job(gpointer data, gpointer unused)
{
	entry_ctx *e = data;
	dir_jobs *jobs = e->jobs;
	int rc = check_file(e);

	(void)unused;
	free_entry(e);
	g_mutex_lock(&jobs->lock);
	if (rc < 0 && !jobs->rc)
		jobs->rc = rc;
	assert(jobs->pending > 0);
	jobs->pending--;
	if (jobs->pending == jobs->wake_at)
		g_cond_signal(&jobs->done);
	g_mutex_unlock(&jobs->lock);
}

static int hand_off(entry_ctx *e)
{
	g_mutex_lock(&e->jobs->lock);
	e->jobs->pending++;
	g_mutex_unlock(&e->jobs->lock);
	g_thread_pool_push(e->f->file_pool, e, NULL);
	return HANDED_OFF;
}

/* With `full` of the directory's files in flight, waits until `low` are
 * left (one wake-up per refill, not one per file); returns the first
 * error of one. */
static int wait_jobs(dir_jobs *jobs, int full, int low)
{
	g_mutex_lock(&jobs->lock);
	if (jobs->pending >= full) {
		jobs->wake_at = low;
		while (jobs->pending > low)
			g_cond_wait(&jobs->done, &jobs->lock);
		jobs->wake_at = -1;
	}
	int rc = jobs->rc;
	g_mutex_unlock(&jobs->lock);
	return rc;
}

/* Reads every member's view of the entry into e->w and e->present; the
 * members where it cannot be read are reported and go to e->unreadable. */
static void read_views(entry_ctx *e)
{
	uint64_t mask = 0;
	int rcs[STRIPE_MAX_N];

	for (int mb = 0; mb < e->f->n; mb++)
		if (e->dfd[mb] >= 0)
			mask |= 1ull << mb;
	if (e->read_rcs)
		memcpy(rcs, e->read_rcs, sizeof(int) * (size_t)e->f->n);
	else
		on_members(e, mask, 0, view_run, rcs);
	for (int mb = 0; mb < e->f->n; mb++) {
		if (mask >> mb & 1 && rcs[mb] < 0) {
			fsck_view_clear(&e->w[mb]);
			e->w[mb].err = ETIMEDOUT;
		}
		if (fsck_gone(e->f, mb)) {
			/* given up: reported once as a member problem */
			fsck_view_clear(&e->w[mb]);
			e->unreadable |= 1ull << mb;
		} else if (e->w[mb].present)
			e->present |= 1ull << mb;
		else if (e->w[mb].err) {
			e->unreadable |= 1ull << mb;
			fsck_problem(e->f, "unreadable", e->path, mb, 0, 0, FSCK_UNREPAIRABLE, "%s",
			             g_strerror(e->w[mb].err));
		}
	}
}

/* Copies of another type than the winner's go (they are then missing like
 * any other); the members holding the winner's type go to e->typed, those
 * whose copy must stay (a directory with entries) to e->unreadable. */
static void drop_mistyped(entry_ctx *e, int win)
{
	fsck *f = e->f;
	mode_t type = e->w[win].st.st_mode & S_IFMT;

	for (int mb = 0; mb < f->n; mb++) {
		if (!(e->present >> mb & 1))
			continue;
		if (same_type(&e->w[mb], &e->w[win])) {
			e->typed |= 1ull << mb;
			continue;
		}
		int r = S_ISDIR(e->w[mb].st.st_mode) && dir_has_entries(e, mb) ? -ENOTEMPTY : 0;
		if (f->o.repair && !r)
			r = on_member(e, mb, win, remove_entry);
		if (fsck_gone(f, mb)) {
			e->unreadable |= 1ull << mb;
			continue;
		}
		fsck_problem(f, "type", e->path, mb, 0, 0,
		             r == -ENOTEMPTY ? FSCK_UNREPAIRABLE : fsck_outcome(f, r),
		             "a %s where the other members hold a %s", type_name(e->w[mb].st.st_mode),
		             type_name(type));
		if (f->o.repair && !r) {
			fsck_view_clear(&e->w[mb]);
			e->present &= ~(1ull << mb);
		} else {
			e->unreadable |= 1ull << mb; /* leave it alone */
		}
	}
}

/* The existence rule (see the top of this file), for an entry of this
 * type held by `holders` of the `walkers` members that vote. */
static bool keep_entry(entry_ctx *e, bool root, mode_t type, int holders, int walkers)
{
	fsck *f = e->f;
	bool keep = root || holders * 2 >= walkers || (type == S_IFREG && holders >= f->k);

	for (int mb = 0; mb < f->n && !keep && type == S_IFDIR; mb++)
		keep = e->typed >> mb & ~f->heal_mask >> mb & 1 && dir_has_entries(e, mb);
	return keep && (root || holders > 0);
}

/* An entry that does not stay leaves the members that still hold it. */
static void remove_extra(entry_ctx *e, mode_t type, int holders, int walkers)
{
	fsck *f = e->f;

	for (int mb = 0; mb < f->n; mb++) {
		if (!(e->typed >> mb & 1))
			continue;
		/* A directory removed while a healing member was away may
		 * still hold entries there: it goes aside whole. */
		bool rm = type == S_IFDIR && !(f->heal_mask >> mb & 1);
		int r = !f->o.repair ? 0 : on_member(e, mb, 0, rm ? remove_entry : move_to_lost);
		if (fsck_gone(f, mb))
			continue;
		fsck_problem(f, "extra", e->path, mb, 0, 0, fsck_outcome(f, r),
		             "%s held by %d of %d members only (left over from a removal)%s",
		             type_name(type), holders, walkers,
		             type == S_IFDIR ? "" : "; repair moves it to " ECFS_META_DIR
		                                    "/lost+found on the member");
	}
}

/* Creates the entry, like the winner's copy, where it is missing. */
static void create_missing(entry_ctx *e, int win)
{
	fsck *f = e->f;
	uint64_t missing = f->walk_mask & ~e->typed & ~e->unreadable;

	for (int mb = 0; mb < f->n; mb++) {
		if (!(missing >> mb & 1))
			continue;
		int r = f->o.repair && e->dfd[mb] >= 0 ? on_member(e, mb, win, create_entry)
		        : f->o.repair ? -ENOENT : 0;
		if (fsck_gone(f, mb))
			continue;
		if (!(e->quiet >> mb & 1))
			fsck_problem(f, "missing", e->path, mb, 0, 0, fsck_outcome(f, r),
			             "%s missing on this member", type_name(e->w[win].st.st_mode));
		if (f->o.repair && !r)
			e->fresh |= 1ull << mb;
	}
}

static int open_dir(entry_ctx *e, int mb, int unused)
{
	(void)unused;
	int fd = MIO_CALL(openat(e->dfd[mb], e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                                               O_CLOEXEC));
	return fd < 0 ? -errno : fd;
}

/* Walks a directory entry on every member that holds it. */
static int descend(entry_ctx *e, bool root)
{
	fsck *f = e->f;
	int cfd[STRIPE_MAX_N];
	uint64_t cquiet = e->quiet | e->unreadable;

	on_members(e, e->present, 0, open_dir, cfd);
	for (int mb = 0; mb < f->n; mb++) {
		if (!(e->present >> mb & 1))
			cfd[mb] = -1;
		if (cfd[mb] < 0 && e->present >> mb & 1 && !fsck_gone(f, mb))
			fsck_problem(f, "unreadable", e->path, mb, 0, 0, FSCK_UNREPAIRABLE,
			             "cannot open the directory: %s", g_strerror(-cfd[mb]));
		if (cfd[mb] < 0) {
			cfd[mb] = -1;
			cquiet |= 1ull << mb;
		}
	}
	int rc = walk_dir(f, root ? "" : e->path, cfd, cquiet);
	fsck_close_all(f, cfd);
	return rc;
}

/* Judges the existence and type of the entry, makes it exist where it
 * should (and only there), checks a regular file's data, settles its
 * metadata and descends into a directory.  The views go with the entry
 * (free_entry). */
static int check_entry(entry_ctx *e, bool root)
{
	fsck *f = e->f;

	read_views(e);
	if (!e->present)
		return 0;
	/* Members being rebuilt (online heal) follow the others: an entry
	 * only they hold is a leftover. */
	uint64_t voters = e->present & ~f->heal_mask;
	int win = vote(e->w, f->n, voters ? voters : e->present, same_type);
	mode_t type = e->w[win].st.st_mode & S_IFMT;
	drop_mistyped(e, win);
	int holders = __builtin_popcountll(e->typed & ~f->heal_mask);
	int walkers = __builtin_popcountll(f->walk_mask & ~f->heal_mask);
	if (!keep_entry(e, root, type, holders, walkers)) {
		remove_extra(e, type, holders, walkers);
		return 0;
	}
	if (walked_dir(e, type))
		f->dirs++;
	else if (type != S_IFREG && type != S_IFDIR)
		f->others++;
	if (type == S_IFREG)
		return e->jobs && !hard_linked(e) ? hand_off(e) : check_file(e);
	create_missing(e, win);
	settle_entry(e);
	if (!walked_dir(e, type))
		return 0;
	int rc = descend(e, root);
	fresh_times(e);
	return rc;
}

/* The union of the names in the directory on every member (dfd[mb] >= 0)
 * into seen, the members' listings made at once. */
static void list_members(fsck *f, const char *path, const int *dfd, GHashTable *seen)
{
	list_call l[STRIPE_MAX_N];
	void *args[STRIPE_MAX_N];
	int rcs[STRIPE_MAX_N];
	uint64_t mask = 0;

	for (int mb = 0; mb < f->n; mb++) {
		l[mb] = (list_call){ dfd[mb], ".", 0, NULL };
		args[mb] = &l[mb];
		if (dfd[mb] >= 0)
			mask |= 1ull << mb;
	}
	fsck_on_members(f, mask, fsck_list_run, args, rcs);
	for (int mb = 0; mb < f->n; mb++) {
		if (!(mask >> mb & 1))
			continue;
		if (rcs[mb] < 0 || !l[mb].names) {
			if (!fsck_gone(f, mb))
				fsck_problem(f, "unreadable", *path ? path : "/", mb, 0, 0,
				             FSCK_UNREPAIRABLE, "cannot list the directory: %s",
				             g_strerror(rcs[mb] < 0 ? -rcs[mb] : EIO));
			continue;
		}
		for (guint i = 0; i < l[mb].names->len; i++) {
			const char *name = l[mb].names->pdata[i];
			if (!(!*path && volume_root_name_reserved(name)) &&
			    !g_hash_table_contains(seen, name))
				g_hash_table_add(seen, g_strdup(name));
		}
		g_ptr_array_unref(l[mb].names);
	}
}

static int walk_dir(fsck *f, const char *path, const int *dfd, uint64_t quiet)
{
	GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	GList *names;
	int rc = 0, at = 0;
	view_block b = { .f = f, .dfd = dfd };

	list_members(f, path, dfd, seen);
	names = g_list_sort(g_hash_table_get_keys(seen), (GCompareFunc)strcmp);
	dir_jobs jobs = { .wake_at = -1 };
	g_mutex_init(&jobs.lock);
	g_cond_init(&jobs.done);
	for (GList *l = names; l && rc >= 0; l = l->next, at++) {
		entry_ctx *e = new_entry(f, g_strdup_printf("%s/%s", path, (const char *)l->data),
		                         l->data, dfd, quiet, f->file_pool ? &jobs : NULL);
		if (!f->hooks && at == b.count) {
			fsck_free_view_block(&b);
			fsck_read_view_block(&b, l);
			at = 0;
		}
		if (!f->hooks)
			e->read_rcs = fsck_take_views(&b, at, e->w);
		rc = check_entry(e, false);
		if (rc == HANDED_OFF)
			rc = 0;
		else
			free_entry(e);
		if (rc >= 0 && f->file_pool)
			rc = wait_jobs(&jobs, FILES_IN_FLIGHT, FILES_REFILL);
	}
	int jrc = wait_jobs(&jobs, 1, 0);
	rc = rc < 0 ? rc : jrc;
	if (b.w)
		fsck_free_view_block(&b);
	g_mutex_clear(&jobs.lock);
	g_cond_clear(&jobs.done);
	g_list_free(names);
	g_hash_table_destroy(seen);
	return rc;
}

/* Member mb's .ecfs opened beneath its root, on its worker. */
struct meta_open {
	fsck *f;
	int mb;
};

static int open_meta(void *arg)
{
	const struct meta_open *o = arg;
	return volume_meta_dir(o->f->v, o->mb, volume_root_fd(o->f->v, o->mb), ECFS_META_DIR);
}

/* The volume root's stand-in on every member walked, judged like any
 * directory (existence kept, type, owner, mode, ACL, xattrs by majority),
 * made where missing (a replaced member) and never descended. */
static int check_standin(fsck *f)
{
	int mdfd[STRIPE_MAX_N];

	for (int mb = 0; mb < f->n; mb++) {
		struct meta_open o = { f, mb };
		mdfd[mb] = f->walk_mask >> mb & 1 ? fsck_on_member(f, mb, open_meta, &o) : -1;
		if (mdfd[mb] < 0)
			mdfd[mb] = -1; /* the member's failure is said where it failed */
	}
	entry_ctx *e = new_entry(f, g_strdup("/" VOLUME_ROOT_STANDIN), VOLUME_STANDIN_NAME, mdfd,
	                         ~f->walk_mask, NULL);
	e->kind = ENTRY_STANDIN;
	int rc = check_entry(e, true);
	free_entry(e);
	fsck_close_all(f, mdfd);
	return rc;
}

int fsck_tree(fsck *f)
{
	int dfd[STRIPE_MAX_N];

	if (!f->hooks) {
		fsck_journal_census(f);
		f->file_pool = g_thread_pool_new(file_job, NULL, FILE_THREADS, FALSE, NULL);
	}
	for (int mb = 0; mb < f->n; mb++)
		dfd[mb] = f->walk_mask >> mb & 1 ? volume_root_fd(f->v, mb) : -1;
	entry_ctx *e = new_entry(f, g_strdup("/"), ".", dfd, ~f->walk_mask, NULL);
	e->kind = ENTRY_MEMBER_ROOT;
	int rc = check_entry(e, true);
	free_entry(e);
	if (rc >= 0 && volume_root_standin(f->v))
		rc = check_standin(f);
	if (f->file_pool)
		g_thread_pool_free(f->file_pool, FALSE, TRUE);
	f->file_pool = NULL;
	repair_release(f);
	return rc;
}

