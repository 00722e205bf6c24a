// SPDX-License-Identifier: MIT
/*
 * Intents (intent.h): writing, ending, finding and replaying the redo
 * records of the namespace operations whose partial state would hurt.
 * The byte format of a record is docs/FORMAT.md section 8.  All member
 * changes go through memberops.h.
 */
#include "intent.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "intent_trust.h"
#include "le.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_internal.h"
#include "volume_paths.h"

#define INTENT_MAGIC "ECFSINT1"
#define INTENT_HEAD 48     /* fixed part before the per-member identities */
#define INTENT_SUM 32      /* SHA-256 of everything before it */
#define INTENT_IDENT 32    /* per member: from's and to's identity */
#define INTENT_MAX (INTENT_HEAD + 64 * INTENT_IDENT + 2 * INTENT_PATH_MAX + INTENT_SUM)
#define INTENT_LOG INTENT_DIR "/log"
#define INTENT_SLOTS 64
#define INTENT_SLOT_SIZE 16384 /* > INTENT_MAX */
_Static_assert(INTENT_MAX < INTENT_SLOT_SIZE, "a record fits a slot");

struct intent {
	intent_op op;
	unsigned flags;
	mode_t mode;      /* mkdir */
	uid_t uid;        /* mkdir: owner, (uid_t)-1 to leave as made */
	gid_t gid;
	uint64_t id;
	int n;
	char *from, *to;
	ident from_id[64], to_id[64]; /* per member */
	int slot;         /* its place in the members' logs */
	uint64_t holders; /* replay: members with a valid copy */
	uint8_t sum[INTENT_SUM]; /* replay: the record's, which tells copies apart */
	uint8_t *buf;     /* the record, once sealed (intent_seal) */
	size_t len;
};

static const char *op_name(intent_op op)
{
	switch (op) {
	case INTENT_RENAME: return "rename";
	case INTENT_LINK: return "link";
	case INTENT_UNLINK: return "unlink";
	case INTENT_RMDIR: return "rmdir";
	case INTENT_MKDIR: return "mkdir";
	default: return "?";
	}
}

void intent_release(intent *it)
{
	if (!it)
		return;
	g_free(it->from);
	g_free(it->to);
	g_free(it->buf);
	g_free(it);
}

/* ---- the record's bytes ---- */

static void sha256(const uint8_t *data, size_t len, uint8_t out[INTENT_SUM])
{
	GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);
	gsize olen = INTENT_SUM;
	g_checksum_update(c, data, len);
	g_checksum_get_digest(c, out, &olen);
	g_checksum_free(c);
}

static uint8_t *encode(const intent *it, size_t *len)
{
	size_t l1 = strlen(it->from), l2 = it->to ? strlen(it->to) : 0;
	size_t ids = (size_t)it->n * INTENT_IDENT;
	*len = INTENT_HEAD + ids + l1 + l2 + INTENT_SUM;
	uint8_t *b = g_malloc0(*len);
	memcpy(b, INTENT_MAGIC, 8);
	le_put32(b + 8, it->op);
	le_put32(b + 12, it->flags);
	le_put64(b + 16, it->id);
	le_put32(b + 24, (uint32_t)it->n);
	le_put32(b + 28, (uint32_t)l1);
	le_put32(b + 32, (uint32_t)l2);
	le_put32(b + 36, it->mode);
	le_put32(b + 40, it->uid);
	le_put32(b + 44, it->gid);
	for (int i = 0; i < it->n; i++) {
		uint8_t *p = b + INTENT_HEAD + INTENT_IDENT * i;
		le_put64(p, it->from_id[i].ino);
		le_put64(p + 8, it->from_id[i].btime);
		le_put64(p + 16, it->to_id[i].ino);
		le_put64(p + 24, it->to_id[i].btime);
	}
	memcpy(b + INTENT_HEAD + ids, it->from, l1);
	memcpy(b + INTENT_HEAD + ids + l1, it->to ? it->to : "", l2);
	sha256(b, *len - INTENT_SUM, b + *len - INTENT_SUM);
	return b;
}

#define ORPHANS "/" ECFS_META_DIR "/orphans/"

/* A valid volume path: absolute, no NUL, no empty or dot-dot component
 * (it is resolved beneath the member root anyway). */
static bool sane_path(const uint8_t *p, size_t len)
{
	if (len < 2 || len > INTENT_PATH_MAX || p[0] != '/' || memchr(p, 0, len))
		return false;
	char *s = g_strndup((const char *)p, len);
	bool ok = !strstr(s, "//") && !g_str_has_suffix(s, "/") && !strstr(s, "/../") &&
	          !g_str_has_suffix(s, "/..");
	/* In the metadata folder only the orphans are ever renamed or unlinked. */
	if (ok && (!strcmp(s, "/" ECFS_META_DIR) || g_str_has_prefix(s, "/" ECFS_META_DIR "/")))
		ok = g_str_has_prefix(s, ORPHANS) && !strchr(s + strlen(ORPHANS), '/');
	g_free(s);
	return ok;
}

intent *intent_decode(const uint8_t *b, size_t room, int n)
{
	uint8_t sum[INTENT_SUM];
	if (room < INTENT_HEAD + INTENT_SUM || memcmp(b, INTENT_MAGIC, 8) != 0)
		return NULL;
	uint32_t op = le_get32(b + 8), rn = le_get32(b + 24), l1 = le_get32(b + 28), l2 = le_get32(b + 32);
	if (rn > 64 || l1 > INTENT_PATH_MAX || l2 > INTENT_PATH_MAX)
		return NULL;
	size_t ids = (size_t)rn * INTENT_IDENT, len = INTENT_HEAD + ids + l1 + l2 + INTENT_SUM;
	if (len > room || op < INTENT_RENAME || op > INTENT_MKDIR || (int)rn != n)
		return NULL;
	sha256(b, len - INTENT_SUM, sum);
	if (memcmp(sum, b + len - INTENT_SUM, INTENT_SUM) != 0)
		return NULL;
	bool two = op == INTENT_RENAME || op == INTENT_LINK;
	const uint8_t *p1 = b + INTENT_HEAD + ids, *p2 = p1 + l1;
	if (!sane_path(p1, l1) || (two ? !sane_path(p2, l2) : l2 != 0))
		return NULL;
	intent *it = g_new0(intent, 1);
	it->op = (intent_op)op;
	it->flags = le_get32(b + 12);
	it->mode = le_get32(b + 36) & 07777;
	it->uid = le_get32(b + 40);
	it->gid = le_get32(b + 44);
	it->id = le_get64(b + 16);
	it->n = n;
	for (int i = 0; i < n; i++) {
		const uint8_t *p = b + INTENT_HEAD + INTENT_IDENT * i;
		it->from_id[i] = (ident){ le_get64(p), le_get64(p + 8) };
		it->to_id[i] = (ident){ le_get64(p + 16), le_get64(p + 24) };
	}
	it->from = g_strndup((const char *)p1, l1);
	it->to = two ? g_strndup((const char *)p2, l2) : NULL;
	memcpy(it->sum, sum, INTENT_SUM);
	return it;
}

/* ---- member helpers ---- */

static int fsync_at(volume *v, int idx, int root, const char *dir)
{
	int fd = volume_meta_dir(v, idx, root, dir);
	int rc = fd < 0 ? fd : mop_fsync(v, idx, fd, false);
	if (fd >= 0)
		MIO_CALL(close(fd));
	return rc;
}

static int open_log(volume *v, int idx, int root, int flags)
{
	return volume_meta_open(v, idx, root, INTENT_LOG, flags | O_CLOEXEC, 0600);
}

/* Makes the log beneath member idx's root exist, whole and durable: its
 * slots written (so that a record write later changes data only, and
 * fdatasync has no metadata to commit), the file and its folder synced.
 * Returns it open for reading and writing, or a negative errno. */
static int prepare_log(volume *v, int idx, int root)
{
	int rc = volume_meta_mkdirat(v, idx, root, INTENT_DIR, 0700);
	struct stat st;
	if (rc == 0)
		rc = fsync_at(v, idx, root, ECFS_META_DIR);
	else if (rc == -EEXIST)
		rc = 0;
	int fd = rc < 0 ? rc : open_log(v, idx, root, O_RDWR | O_CREAT);
	if (fd < 0)
		return fd;
	if (MIO_CALL(fstat(fd, &st)) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == (off_t)INTENT_SLOTS * INTENT_SLOT_SIZE)
		return fd;
	uint8_t *zero = g_malloc0(INTENT_SLOT_SIZE);
	for (int i = 0; i < INTENT_SLOTS && !rc; i++) {
		ssize_t w = mop_pwrite(v, idx, fd, zero, INTENT_SLOT_SIZE, (off_t)i * INTENT_SLOT_SIZE);
		if (w != INTENT_SLOT_SIZE)
			rc = w < 0 ? (int)w : -EIO;
	}
	g_free(zero);
	if (!rc)
		rc = mop_fsync(v, idx, fd, false);
	if (!rc)
		rc = fsync_at(v, idx, root, INTENT_DIR);
	if (rc < 0)
		MIO_CALL(close(fd));
	return rc < 0 ? rc : fd;
}

/* Member idx's log opened, or made if missing, and handed to the volume
 * to hold (another thread's may come first: then that one). */
static int open_member_log(volume *v, int idx)
{
	int root = volume_root_fd(v, idx);
	int fd = open_log(v, idx, root, O_RDWR);
	if (fd == -ENOENT)
		fd = prepare_log(v, idx, root);
	return fd < 0 ? fd : volume_hold_log_fd(v, idx, root, fd, false);
}

/* One thread at a time opens or makes a member's log: a second maker's
 * zeros would land on the records written meanwhile through the first
 * one's descriptor.  makers lists the logs being opened, each entry on
 * its maker's stack.  A thread that finds its member's log in the list
 * waits for it as for a call on that member (timed: a maker stuck in a
 * member call gets the waiter given up too, memberio.h). */
struct log_maker {
	const volume *v;
	int idx;
	struct log_maker *next;
};

/* guards makers; order: a leaf, never held across a member call */
static pthread_mutex_t makers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t log_made = PTHREAD_COND_INITIALIZER;
static struct log_maker *makers;

/* Under makers_lock. */
static bool log_being_made(const volume *v, int idx)
{
	assert(pthread_mutex_trylock(&makers_lock) == EBUSY); /* held, by some thread */
	for (const struct log_maker *m = makers; m; m = m->next)
		if (m->v == v && m->idx == idx)
			return true;
	return false;
}

/* Lists me as the maker of its member's log and returns true, unless
 * another thread is making that log: then waits until it is done and
 * returns false. */
static bool claim_log(struct log_maker *me)
{
	pthread_mutex_lock(&makers_lock);
	bool busy = log_being_made(me->v, me->idx);
	if (!busy) {
		me->next = makers;
		makers = me;
		pthread_mutex_unlock(&makers_lock);
		return true;
	}
	pthread_mutex_unlock(&makers_lock);
	mio_io_begin();
	pthread_mutex_lock(&makers_lock);
	while (log_being_made(me->v, me->idx))
		pthread_cond_wait(&log_made, &makers_lock);
	pthread_mutex_unlock(&makers_lock);
	mio_io_end(); /* never returns if given up */
	return false;
}

static void unclaim_log(struct log_maker *me)
{
	pthread_mutex_lock(&makers_lock);
	struct log_maker **p = &makers;
	while (*p != me) {
		assert(*p); /* me is listed */
		p = &(*p)->next;
	}
	*p = me->next;
	pthread_cond_broadcast(&log_made);
	pthread_mutex_unlock(&makers_lock);
}

/* Member idx's log, held open by the volume for the mount (its fd is
 * never closed while mounted: volume_hold_log_fd), so a logged operation
 * makes no open or close of it.  Opened by the first operation that
 * needs it (or by the mount's replay), and again once the member's
 * directory was replaced (volume_member_revive drops the old one); made
 * if missing: a member rebuilt while mounted.  The descriptor is the
 * member's like its root's: one that stays in service keeps both, and
 * nothing of ours replaces .ecfs beneath a root in service. */
static int log_fd(volume *v, int idx)
{
	struct log_maker me = { v, idx, NULL };
	int fd;

	while ((fd = volume_log_fd(v, idx)) < 0 && !claim_log(&me))
		; /* made by another thread meanwhile, or it failed to: look again */
	if (fd >= 0)
		return fd;
	/* held by a maker that finished between the look and the claim */
	fd = volume_log_fd(v, idx);
	if (fd < 0)
		fd = open_member_log(v, idx);
	unclaim_log(&me);
	return fd;
}

/* Writes the record into its slot of the member's log, durably, in one
 * call (mop_pwrite_dsync): data over written blocks, one flush.  Several
 * operations write their own slots through the one fd at once. */
static int write_copy(volume *v, int idx, const intent *it)
{
	int fd = log_fd(v, idx);
	if (fd < 0)
		return fd;
	ssize_t w = mop_pwrite_dsync(v, idx, fd, it->buf, it->len,
	                             (off_t)it->slot * INTENT_SLOT_SIZE);
	return w < 0 ? (int)w : (size_t)w != it->len ? -EIO : 0;
}

/* Clears the record's magic, unsynced: the next record written to the log
 * makes it durable (and redo is bound to identity meanwhile). */
static void remove_copy(volume *v, int idx, int slot)
{
	static const uint8_t zero[8];
	int fd = log_fd(v, idx);
	ssize_t rc = fd < 0 ? fd : mop_pwrite(v, idx, fd, zero, sizeof(zero),
	                                      (off_t)slot * INTENT_SLOT_SIZE);
	if (rc < 0)
		volume_member_error(v, idx, (int)-rc, "clearing an intent");
}

static int sync_parent(volume *v, int idx, const char *path)
{
	const char *leaf;
	int d = volume_parent_fd(v, idx, path, &leaf);
	if (d < 0)
		return d == -ENOENT ? 0 : d; /* the member lacks it: nothing to sync */
	int rc = mop_fsync(v, idx, d, false);
	MIO_CALL(close(d));
	return rc;
}

/* True if a and b are in the same directory. */
static bool same_parent(const char *a, const char *b)
{
	const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
	return sa - a == sb - b && strncmp(a, b, (size_t)(sa - a)) == 0;
}

/* A parent held open (intent_fds): synced, or the error of its open
 * (ENOENT: the member lacks it, nothing to sync). */
static int sync_held(volume *v, int idx, int d)
{
	if (d < 0)
		return d == -ENOENT ? 0 : d;
	return mop_fsync(v, idx, d, false);
}

/* Makes the operation durable on member idx: its parent directories,
 * those held in f if not NULL. */
static void sync_parents(volume *v, int idx, const intent *it, const intent_fds *f)
{
	int rc = 0;
	bool two = it->to && (it->op == INTENT_LINK || !same_parent(it->from, it->to));
	if (it->op != INTENT_LINK)
		rc = f ? sync_held(v, idx, f->d1) : sync_parent(v, idx, it->from);
	if (!rc && two)
		rc = f ? sync_held(v, idx, f->d2) : sync_parent(v, idx, it->to);
	if (rc < 0)
		volume_member_error(v, idx, -rc, "syncing a directory");
}

/* ---- begin and end ---- */

/* An intent's work on the members, run on every usable member at once (on
 * the member I/O workers): the syncs of six disks overlap. */
struct member_task {
	volume *v;
	const intent *it;
	int op_rc;     /* end: the operation's result */
	intent_first *first; /* begin: what to run after one member's copy */
	intent *it_mut;      /* begin: it, whose identities are being taken */
};

struct member_job {
	const struct member_task *t;
	int idx;
};

static void begin_member(void *arg)
{
	const struct member_job *j = arg;
	intent_first *first = j->t->first;
	int rc = intent_write_member(j->t->v, j->t->it, j->idx);
	if (rc == 0 && first && first->idx == j->idx)
		first->rc = first->fn(first->arg);
}

int intent_write_member(volume *v, const intent *it, int idx)
{
	assert(it->buf); /* sealed: the record is written as it is */
	int rc = write_copy(v, idx, it);
	if (rc < 0)
		volume_member_error(v, idx, -rc, "writing an intent");
	return rc;
}

void intent_end_member_at(volume *v, const intent *it, int idx, int rc, const intent_fds *f)
{
	assert(idx >= 0 && idx < it->n);
	/* A refused operation changed nothing (mirror.h): no sync. */
	if (rc >= 0)
		sync_parents(v, idx, it, f);
	if (volume_member_ok(v, idx))
		remove_copy(v, idx, it->slot);
}

void intent_end_member(volume *v, const intent *it, int idx, int rc)
{
	intent_end_member_at(v, it, idx, rc, NULL);
}

void intent_open_member(volume *v, const intent *it, int idx, intent_fds *f)
{
	const char *leaf1 = NULL;
	int d1 = volume_parent_fd(v, idx, it->from, &leaf1);
	*f = (intent_fds){ .d1 = d1, .d2 = -EBADF, .leaf1 = leaf1 };
	if (!it->to)
		return;
	/* one directory: one descriptor (volume_parent_fd's rule on the name) */
	if (f->d1 >= 0 && same_parent(it->from, it->to)) {
		f->leaf2 = strrchr(it->to, '/') + 1;
		f->d2 = strlen(f->leaf2) > NAME_MAX ? -ENAMETOOLONG : f->d1;
	} else {
		f->d2 = volume_parent_fd(v, idx, it->to, &f->leaf2);
	}
}

void intent_close_member(intent_fds *f)
{
	if (f->d1 >= 0)
		MIO_CALL(close(f->d1));
	if (f->d2 >= 0 && f->d2 != f->d1)
		MIO_CALL(close(f->d2));
	f->d1 = f->d2 = -EBADF;
}

static void end_member(void *arg)
{
	const struct member_job *j = arg;
	intent_end_member(j->t->v, j->t->it, j->idx, j->t->op_rc);
}

static void on_members(volume *v, const struct member_task *t, void (*fn)(void *))
{
	struct member_job jobs[64];
	mio_batch b;
	mio_batch_init_small(volume_memberio(v), &b);
	for (int idx = 0; idx < volume_n(v); idx++) {
		jobs[idx] = (struct member_job){ t, idx };
		if (volume_member_ok(v, idx))
			memberio_submit(volume_memberio(v), idx, &b, fn, &jobs[idx]);
	}
	mio_batch_wait(&b);
}

void intent_identify_member(volume *v, intent *it, int idx, const intent_fds *f)
{
	bool exchange = it->op == INTENT_RENAME && (it->flags & RENAME_EXCHANGE);
	assert(idx >= 0 && idx < it->n);
	if (it->op == INTENT_MKDIR) /* nothing there yet to identify */
		return;
	if (f) {
		it->from_id[idx] = intent_ident_at(v, idx, f->d1, f->leaf1, NULL);
		if (exchange)
			it->to_id[idx] = intent_ident_at(v, idx, f->d2, f->leaf2, NULL);
		return;
	}
	it->from_id[idx] = intent_ident_of(v, idx, it->from, NULL);
	if (exchange)
		it->to_id[idx] = intent_ident_of(v, idx, it->to, NULL);
}

/* The identities the record holds, of member idx's objects. */
static void ident_member(void *arg)
{
	const struct member_job *j = arg;
	intent_identify_member(j->t->v, j->t->it_mut, j->idx, NULL);
}

/* With a member timeout on the members' I/O workers, all at once, so
 * that a member that hangs is given up (and failed) rather than waited
 * for; without one inline, one member after the other (memberio.h). */
static void identify(volume *v, struct member_task *t)
{
	t->it_mut = (intent *)t->it;
	if (volume_hands_off(v)) {
		on_members(v, t, ident_member);
		return;
	}
	for (int idx = 0; idx < volume_n(v); idx++) {
		struct member_job j = { t, idx };
		if (volume_member_ok(v, idx))
			ident_member(&j);
	}
}

/* Ids grow with the time of day, so that records left by several mounts
 * replay in the order they were made, and are unique within a process. */
static uint64_t next_id(void)
{
	static uint64_t last;
	uint64_t now = (uint64_t)g_get_real_time(), prev = __atomic_load_n(&last, __ATOMIC_RELAXED);
	uint64_t id;
	do
		id = now > prev ? now : prev + 1;
	while (!__atomic_compare_exchange_n(&last, &prev, id, false, __ATOMIC_RELAXED,
	                                    __ATOMIC_RELAXED));
	return id;
}

/* The slots of the operations in progress.  Process-wide: a slot is an
 * offset in every member's log, so two volumes in one process would only
 * share the 64. */
/* guards slots_busy; order: a leaf, never held across a member call */
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slot_freed = PTHREAD_COND_INITIALIZER;
static uint64_t slots_busy;

static int take_slot(void)
{
	pthread_mutex_lock(&slot_lock);
	while (slots_busy == ~0ull)
		pthread_cond_wait(&slot_freed, &slot_lock);
	int slot = __builtin_ctzll(~slots_busy);
	slots_busy |= 1ull << slot;
	pthread_mutex_unlock(&slot_lock);
	return slot;
}

static void give_slot(int slot)
{
	pthread_mutex_lock(&slot_lock);
	assert(slot >= 0 && slot < INTENT_SLOTS && (slots_busy >> slot & 1)); /* taken, once */
	slots_busy &= ~(1ull << slot);
	pthread_cond_signal(&slot_freed);
	pthread_mutex_unlock(&slot_lock);
}

int intent_begin(volume *v, const intent_args *a, intent **out)
{
	return intent_begin_first(v, a, out, NULL);
}

intent *intent_new(volume *v, const intent_args *a)
{
	intent *it = g_new0(intent, 1);
	it->op = a->op;
	it->flags = a->flags;
	it->mode = a->mode & 07777;
	it->uid = a->op == INTENT_MKDIR ? a->uid : (uid_t)-1;
	it->gid = a->op == INTENT_MKDIR ? a->gid : (gid_t)-1;
	it->n = volume_n(v);
	assert(it->n > 0 && it->n <= 64); /* an identity per member fits the record */
	assert(intent_args_fit(a) == 0);  /* and so do the paths */
	it->from = g_strdup(a->from);
	it->to = g_strdup(a->to);
	it->id = next_id();
	it->slot = take_slot();
	return it;
}

void intent_seal(intent *it)
{
	if (!it->buf)
		it->buf = encode(it, &it->len);
}

int intent_args_fit(const intent_args *a)
{
	if (strlen(a->from) > INTENT_PATH_MAX || (a->to && strlen(a->to) > INTENT_PATH_MAX))
		return -ENAMETOOLONG;
	return 0;
}

int intent_begin_first(volume *v, const intent_args *a, intent **out, intent_first *first)
{
	*out = NULL;
	if (first)
		first->rc = INTENT_NOT_RUN;
	int fit = intent_args_fit(a);
	if (fit < 0)
		return fit;
	if (!volume_usable(v))
		return -EIO;
	intent *it = intent_new(v, a);
	struct member_task t = { .v = v, .it = it, .first = first };
	if (a->op != INTENT_MKDIR)
		identify(v, &t);
	intent_seal(it);
	on_members(v, &t, begin_member);
	if (!volume_usable(v)) {
		give_slot(it->slot); /* the next mount replays what was written */
		intent_release(it);
		return -EIO;
	}
	*out = it;
	return 0;
}

void intent_end(volume *v, intent *it, int rc)
{
	if (!it)
		return;
	/* Unusable: the operation may be half done; the next mount replays. */
	if (volume_usable(v)) {
		struct member_task t = { .v = v, .it = it, .op_rc = rc };
		on_members(v, &t, end_member);
	}
	intent_free(it);
}

void intent_free(intent *it)
{
	if (!it)
		return;
	give_slot(it->slot);
	intent_release(it);
}

/* ---- finding and replaying ---- */

/* Copies are one record when their bytes are (their sums): two records
 * of one id are two, each with its own holders. */
static guint sum_hash(gconstpointer p)
{
	return (guint)le_get32(p);
}

static gboolean sum_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, INTENT_SUM) == 0;
}

static gint by_id(gconstpointer a, gconstpointer b)
{
	const intent *x = *(intent *const *)a, *y = *(intent *const *)b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The valid records in the usable members' logs, by id.  *dirty gets the
 * members whose log holds anything but zeros in a slot's magic (records,
 * cleared or torn ones), which a replay then clears. */
struct log_job {
	volume *v;
	int idx;
	bool replay, dirty;
	GPtrArray *found; /* intents decoded from the member's log */
};

/* One member's part of collect(), on its worker: the log is prepared and
 * read there, so a member that hangs is given up after the I/O timeout
 * (memberio.h) instead of holding the mount. */
static void read_log(void *arg)
{
	static const uint8_t zero[8];
	struct log_job *j = arg;
	volume *v = j->v;
	int root = volume_root_fd(v, j->idx);
	int fd = j->replay ? prepare_log(v, j->idx, root) : open_log(v, j->idx, root, O_RDONLY);

	/* the log just made ready is the one the mount's operations use */
	if (fd >= 0 && j->replay)
		fd = volume_hold_log_fd(v, j->idx, root, fd, true);
	if (fd < 0) {
		if (fd != -ENOENT)
			volume_member_error(v, j->idx, -fd, "reading the intent log");
		return;
	}
	uint8_t *slot = g_malloc(INTENT_SLOT_SIZE);
	for (int i = 0; i < INTENT_SLOTS; i++) {
		ssize_t r = mop_pread(v, j->idx, fd, slot, INTENT_SLOT_SIZE,
		                      (off_t)i * INTENT_SLOT_SIZE);
		if (r < 8)
			break;
		if (memcmp(slot, zero, 8) != 0)
			j->dirty = true;
		intent *it = intent_decode(slot, (size_t)r, volume_n(v));
		if (it)
			g_ptr_array_add(j->found, it);
	}
	g_free(slot);
	if (!j->replay)
		MIO_CALL(close(fd));
}

/* The valid records in the usable members' logs, by id.  *dirty gets the
 * members whose log holds anything but zeros in a slot's magic (records,
 * cleared or torn ones), which a replay then clears. */
static GPtrArray *collect(volume *v, bool replay, uint64_t *dirty)
{
	GHashTable *by_sum = g_hash_table_new(sum_hash, sum_equal);
	GPtrArray *all = g_ptr_array_new();
	struct log_job jobs[64];
	mio_batch b;

	*dirty = 0;
	mio_batch_init_caller(volume_memberio(v), &b);
	for (int idx = 0; idx < volume_n(v); idx++) {
		jobs[idx] = (struct log_job){ v, idx, replay, false, g_ptr_array_new() };
		if (volume_member_ok(v, idx))
			memberio_submit(volume_memberio(v), idx, &b, read_log, &jobs[idx]);
	}
	uint64_t lost = mio_batch_wait(&b);
	for (int idx = 0; idx < volume_n(v); idx++) {
		GPtrArray *found = jobs[idx].found;
		if (lost >> idx & 1) {
			/* given up: its worker keeps the array; the member is failed */
			continue;
		}
		*dirty |= (uint64_t)jobs[idx].dirty << idx;
		for (guint i = 0; i < found->len; i++) {
			intent *it = found->pdata[i];
			intent *have = g_hash_table_lookup(by_sum, it->sum);
			if (have) {
				intent_release(it);
				it = have;
			} else {
				g_hash_table_insert(by_sum, it->sum, it);
				g_ptr_array_add(all, it);
			}
			it->holders |= 1ull << idx;
		}
		g_ptr_array_free(found, TRUE);
	}
	g_hash_table_destroy(by_sum);
	g_ptr_array_sort(all, by_id);
	return all;
}

/* Zeroes the magic of every slot and makes that durable. */
static void clear_log(volume *v, int idx)
{
	static const uint8_t zero[8];
	int fd = log_fd(v, idx), rc = fd < 0 ? fd : 0;
	for (int i = 0; i < INTENT_SLOTS && !rc; i++) {
		ssize_t w = mop_pwrite(v, idx, fd, zero, sizeof(zero), (off_t)i * INTENT_SLOT_SIZE);
		rc = w < 0 ? (int)w : 0;
	}
	if (!rc)
		rc = mop_fsync(v, idx, fd, true);
	if (rc < 0)
		volume_member_error(v, idx, -rc, "clearing the intent log");
}

/* mkdir has no object to identify before it: it is made where missing
 * (where the name is taken, the mkdir got EEXIST the first time too). */
static int redo_mkdir(volume *v, int idx, const intent *it)
{
	const char *leaf;
	int d = volume_parent_fd(v, idx, it->from, &leaf);
	if (d < 0)
		return d;
	int rc = mop_mkdirat(v, idx, d, leaf, it->mode);
	if (rc == -EEXIST)
		rc = 0;
	else if (rc == 0 && (it->uid != (uid_t)-1 || it->gid != (gid_t)-1))
		rc = mop_fchownat(v, idx, d, leaf, it->uid, mop_new_object_gid(d, it->gid),
		                  AT_SYMLINK_NOFOLLOW);
	MIO_CALL(close(d));
	return rc;
}

/* Redoes the operation on member idx if the member's object still has the
 * identity recorded for it (so never twice, and never on another object). */
static int redo_member(volume *v, int idx, const intent *it)
{
	mode_t mode = 0;
	if (it->op == INTENT_MKDIR)
		return redo_mkdir(v, idx, it);
	if (!intent_is_object(v, idx, it->from, it->from_id[idx], &mode))
		return 0; /* done here already, or never concerned this member */
	if (it->op == INTENT_RENAME && (it->flags & RENAME_EXCHANGE) &&
	    !intent_is_object(v, idx, it->to, it->to_id[idx], NULL))
		return 0;
	const char *leaf1, *leaf2 = NULL;
	int d1 = volume_parent_fd(v, idx, it->from, &leaf1), d2 = -1, rc = 0;
	if (d1 < 0)
		return d1;
	if (it->to && (d2 = volume_parent_fd(v, idx, it->to, &leaf2)) < 0) {
		MIO_CALL(close(d1));
		return d2;
	}
	switch (it->op) {
	case INTENT_RENAME:
		rc = mop_renameat2(v, idx, d1, leaf1, d2, leaf2, it->flags);
		break;
	case INTENT_LINK:
		rc = mop_linkat(v, idx, d1, leaf1, d2, leaf2, 0);
		break;
	case INTENT_UNLINK:
		rc = S_ISDIR(mode) ? 0 : mop_unlinkat(v, idx, d1, leaf1, 0);
		break;
	case INTENT_RMDIR:
		rc = S_ISDIR(mode) ? mop_unlinkat(v, idx, d1, leaf1, AT_REMOVEDIR) : 0;
		break;
	case INTENT_MKDIR: /* see redo_mkdir */
		break;
	}
	MIO_CALL(close(d1));
	if (d2 >= 0)
		MIO_CALL(close(d2));
	return rc;
}

/* Whether the record is consistent with what a majority of the members
 * show (intent_trust.h; for a mkdir, the mode and owner set to the
 * members'); a record not believed is logged and left. */
static bool believed(volume *v, intent *it)
{
	bool removes = it->op == INTENT_UNLINK || it->op == INTENT_RMDIR;
	intent_claim c = { it->op == INTENT_MKDIR, removes, it->n, it->from, it->to, it->from_id,
	                   it->holders, &it->mode, &it->uid, &it->gid };
	int holders, voters;

	if (intent_claim_believed(v, &c, &holders, &voters))
		return true;
	ecfs_log(LOG_WARNING, "not finishing a %s of %s%s%s: %d of the %d members that "
	         "answer hold its record, and what the others show does not agree with "
	         "it; refused, left as the members show it", op_name(it->op), it->from,
	         it->to ? " to " : "", it->to ? it->to : "", holders, voters);
	return false;
}

static void replay_one(volume *v, const intent *it)
{
	for (int idx = 0; idx < it->n; idx++) {
		if (!volume_member_ok(v, idx))
			continue;
		int rc = redo_member(v, idx, it);
		/* An answer (EEXIST for RENAME_NOREPLACE, ENOTEMPTY, ...) is what
		 * the operation got the first time too: nothing to do. */
		if (rc < 0 && !volume_member_error(v, idx, -rc, "replaying an intent"))
			ecfs_log(LOG_INFO, "replaying %s %s: member %d: %s", op_name(it->op), it->from,
			         idx, g_strerror(-rc));
		if (volume_member_ok(v, idx))
			sync_parents(v, idx, it, NULL);
	}
}

static int scan_or_replay(volume *v, bool replay, intent_report_fn report, void *arg)
{
	uint64_t dirty;
	GPtrArray *all = collect(v, replay, &dirty);
	int count = (int)all->len;

	for (guint i = 0; i < all->len; i++) {
		intent *it = all->pdata[i];
		if (report)
			report(arg, op_name(it->op), it->from, it->to,
			       __builtin_popcountll(it->holders));
		if (!replay)
			continue;
		if (!believed(v, it)) {
			count--;
			continue;
		}
		ecfs_log(LOG_WARNING, "finishing a %s of %s%s%s that a crash interrupted",
		         op_name(it->op), it->from, it->to ? " to " : "", it->to ? it->to : "");
		replay_one(v, it);
	}
	/* The records go only once every operation is redone and durable
	 * (oldest first: a later one may depend on an earlier one); with them
	 * go the cleared and the torn ones (a record torn by a crash while it
	 * was written: its operation had not started). */
	for (int idx = 0; replay && volume_usable(v) && idx < volume_n(v); idx++)
		if (dirty >> idx & 1 && volume_member_ok(v, idx))
			clear_log(v, idx);
	for (guint i = 0; i < all->len; i++)
		intent_release(all->pdata[i]);
	g_ptr_array_free(all, TRUE);
	return volume_usable(v) ? count : -EIO;
}

int intent_replay(volume *v, intent_report_fn report, void *arg)
{
	return scan_or_replay(v, true, report, arg);
}

int intent_scan(volume *v, intent_report_fn report, void *arg)
{
	return scan_or_replay(v, false, report, arg);
}
