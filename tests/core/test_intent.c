/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the namespace intents (src/core/namespace/intent.c) on real member
 * directories: a record written on every member in service in the format
 * of docs/FORMAT.md section 8 and cleared at the end; crashes simulated by
 * putting the record back after the operation reached only some members,
 * then replayed to one outcome on every member for each kind of operation
 * (rename, exchange, directory rename, link, unlink, rmdir, mkdir); redo
 * bound to the identity of the object; records found on some members only;
 * torn, foreign or malicious records refused without harm; and a forged
 * mkdir on one member not believed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>
#include <openssl/sha.h>

#include "core_test_util.h"
#include "intent.h"
#include "log.h"
#include "volume.h"
#include "volume_internal.h"

#define K 4
#define M 2
#define N (K + M)
#define LOG_PATH INTENT_DIR "/log"
#define SLOTS 64
#define SLOT_SIZE 16384
#define MAGIC "ECFSINT1"

typedef test_volume fixture;

/* volume_open leaves the intents as a crash left them: replay is the
 * test's to run. */
static const volume_options opts = { .geometry = { .k = K, .m = M } };

/* ---- the member directories ---- */

static void put_file_all(fixture *fx, const char *rel, const char *content)
{
	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, rel, content);
}

static void mkdir_all(fixture *fx, const char *rel)
{
	for (int mb = 0; mb < N; mb++) {
		char *p = member_path(&fx->mb, mb, rel);
		assert_int_equal(mkdir(p, 0755), 0);
		g_free(p);
	}
}

/* rel's content on member mb ("" for a directory), NULL if absent. */
static char *content(fixture *fx, int mb, const char *rel)
{
	char *p = member_path(&fx->mb, mb, rel), *c = NULL;
	struct stat st;
	if (lstat(p, &st) == 0)
		c = S_ISDIR(st.st_mode) ? g_strdup("") : (char *)slurp(p, &(size_t){ 0 });
	g_free(p);
	return c;
}

static void assert_content(fixture *fx, int mb, const char *rel, const char *want)
{
	char *c = content(fx, mb, rel);
	if (!want && c)
		fail_msg("member %d: %s is present", mb, rel);
	if (want && (!c || strcmp(c, want)))
		fail_msg("member %d: %s holds '%s', not '%s'", mb, rel, c ? c : "(absent)", want);
	g_free(c);
}

static struct stat stat_of(fixture *fx, int mb, const char *rel)
{
	struct stat st;
	char *p = member_path(&fx->mb, mb, rel);
	assert_int_equal(lstat(p, &st), 0);
	g_free(p);
	return st;
}

/* ---- the members' logs ---- */

static uint8_t *read_log(fixture *fx, int mb, size_t *len)
{
	char *p = g_strdup_printf("%s/%s", fx->mb.path[mb], LOG_PATH);
	uint8_t *d = slurp(p, len);
	g_free(p);
	return d;
}

static void write_log(fixture *fx, int mb, const uint8_t *d, size_t len)
{
	char *p = g_strdup_printf("%s/%s", fx->mb.path[mb], LOG_PATH);
	assert_true(g_file_set_contents(p, (const char *)d, (gssize)len, NULL));
	g_free(p);
}

/* The records in member mb's log (slots, bit i: slot i). */
static uint64_t record_slots(fixture *fx, int mb)
{
	return intent_log_slots(fx->mb.path[mb], false);
}

/* No member's log holds a record, a torn or a cleared one. */
static void assert_logs_clean(fixture *fx)
{
	for (int mb = 0; mb < N; mb++) {
		uint64_t dirty = intent_log_slots(fx->mb.path[mb], true);
		if (dirty)
			fail_msg("member %d: log slots %#llx are not clear", mb, (unsigned long long)dirty);
	}
}

/* ---- crashes ---- */

/* Applies the operation a describes to member mb alone, as mirror.c does
 * one member after another. */
static void apply_on_member(fixture *fx, int mb, const intent_args *a)
{
	char *from = member_path(&fx->mb, mb, a->from), *to = a->to ? member_path(&fx->mb, mb, a->to) : NULL;
	int rc = -1;

	switch (a->op) {
	case INTENT_RENAME: rc = renameat2(AT_FDCWD, from, AT_FDCWD, to, a->flags); break;
	case INTENT_LINK: rc = link(from, to); break;
	case INTENT_UNLINK: rc = unlink(from); break;
	case INTENT_RMDIR: rc = rmdir(from); break;
	case INTENT_MKDIR:
		rc = mkdir(from, a->mode);
		if (rc == 0 && a->uid != (uid_t)-1)
			rc = chown(from, a->uid, a->gid);
		break;
	}
	assert_int_equal(rc, 0);
	g_free(from);
	g_free(to);
}

/* A crash during the operation a: its intent written, the operation done
 * on the members in `done` only, the record still in the logs of the
 * members in `kept` (every member that took it, unless the crash came
 * while it was written).  The record is put back after intent_end, as if
 * the end had never come; then the volume is opened again. */
static void crash_during(fixture *fx, const intent_args *a, uint64_t done, uint64_t kept)
{
	uint8_t *saved[N];
	size_t len[N];
	intent *it;

	assert_int_equal(intent_begin(fx->v, a, &it), 0);
	assert_non_null(it);
	for (int mb = 0; mb < N; mb++) {
		assert_int_equal(__builtin_popcountll(record_slots(fx, mb)), 1);
		saved[mb] = read_log(fx, mb, &len[mb]);
	}
	for (int mb = 0; mb < N; mb++)
		if (done >> mb & 1)
			apply_on_member(fx, mb, a);
	intent_end(fx->v, it, 0);
	assert_logs_clean(fx);
	for (int mb = 0; mb < N; mb++) {
		if (kept >> mb & 1)
			write_log(fx, mb, saved[mb], len[mb]);
		g_free(saved[mb]);
	}
	test_volume_reopen(fx);
}

typedef struct report {
	int calls;
	char op[16], from[256], to[256];
	int copies;
} report;

static void on_report(void *arg, const char *op, const char *from, const char *to, int copies)
{
	report *r = arg;
	r->calls++;
	g_strlcpy(r->op, op, sizeof(r->op));
	g_strlcpy(r->from, from, sizeof(r->from));
	g_strlcpy(r->to, to ? to : "", sizeof(r->to));
	r->copies = copies;
}

/* Replays what the crash left: one intent, reported with its copies, its
 * records gone after, and nothing left for a second replay. */
static void replay_one(fixture *fx, const char *op, const intent_args *a, int copies)
{
	report r = { 0 };
	assert_int_equal(intent_replay(fx->v, on_report, &r), 1);
	assert_int_equal(r.calls, 1);
	assert_string_equal(r.op, op);
	assert_string_equal(r.from, a->from);
	assert_string_equal(r.to, a->to ? a->to : "");
	assert_int_equal(r.copies, copies);
	assert_logs_clean(fx);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 0);
	for (int mb = 0; mb < N; mb++)
		assert_true(volume_member_ok(fx->v, mb));
}

/* ---- one kind of operation, cut short on every number of members ---- */

typedef struct op_case {
	const char *name;         /* as intent_replay reports it */
	intent_op op;
	unsigned flags;
	const char *from, *to;    /* inside the variant's folder */
	void (*prepare)(fixture *fx, const char *dir);
	void (*check)(fixture *fx, int mb, const char *dir);
} op_case;

static char *at(const char *dir, const char *leaf)
{
	return leaf ? g_strdup_printf("%s/%s", dir, leaf) : NULL;
}

/* For every count of members the operation reached before the crash (none
 * to all): the replay leaves every member in the new state. */
static void run_case(fixture *fx, const op_case *oc)
{
	for (int done = 0; done <= N; done++) {
		char *dir = g_strdup_printf("/%s%d", oc->name, done);
		char *from = at(dir, oc->from), *to = at(dir, oc->to);
		intent_args a = { oc->op, .from = from, .to = to, .flags = oc->flags, .mode = 0751,
		                  .uid = getuid() == 0 ? 1234 : (uid_t)-1,
		                  .gid = getuid() == 0 ? 4321 : (gid_t)-1 };
		mkdir_all(fx, dir);
		oc->prepare(fx, dir);
		crash_during(fx, &a, (1ull << done) - 1, (1ull << N) - 1);
		replay_one(fx, oc->name, &a, N);
		for (int mb = 0; mb < N; mb++)
			oc->check(fx, mb, dir);
		g_free(dir);
		g_free(from);
		g_free(to);
	}
}

static void prepare_two_files(fixture *fx, const char *dir)
{
	char *a = at(dir, "a"), *b = at(dir, "b");
	put_file_all(fx, a, "A");
	put_file_all(fx, b, "B");
	g_free(a);
	g_free(b);
}

/* The names a and b hold want_a and want_b (NULL: absent). */
static void check_two(fixture *fx, int mb, const char *dir, const char *want_a,
                      const char *want_b)
{
	char *a = at(dir, "a"), *b = at(dir, "b");
	assert_content(fx, mb, a, want_a);
	assert_content(fx, mb, b, want_b);
	g_free(a);
	g_free(b);
}

static void check_renamed(fixture *fx, int mb, const char *dir)
{
	check_two(fx, mb, dir, NULL, "A");
}

static void check_exchanged(fixture *fx, int mb, const char *dir)
{
	check_two(fx, mb, dir, "B", "A");
}

static void check_unlinked(fixture *fx, int mb, const char *dir)
{
	check_two(fx, mb, dir, NULL, "B");
}

static void check_linked(fixture *fx, int mb, const char *dir)
{
	char *a = at(dir, "a"), *c = at(dir, "c");
	struct stat sa = stat_of(fx, mb, a), sc = stat_of(fx, mb, c);
	assert_int_equal(sa.st_ino, sc.st_ino);
	assert_int_equal(sa.st_nlink, 2);
	g_free(a);
	g_free(c);
}

static void prepare_tree(fixture *fx, const char *dir)
{
	char *d = at(dir, "d"), *child = at(dir, "d/child");
	mkdir_all(fx, d);
	put_file_all(fx, child, "C");
	g_free(d);
	g_free(child);
}

static void check_tree_moved(fixture *fx, int mb, const char *dir)
{
	char *d = at(dir, "d"), *child = at(dir, "e/child");
	assert_content(fx, mb, d, NULL);
	assert_content(fx, mb, child, "C");
	g_free(d);
	g_free(child);
}

static void prepare_empty_dir(fixture *fx, const char *dir)
{
	char *d = at(dir, "d");
	mkdir_all(fx, d);
	g_free(d);
}

static void check_no_dir(fixture *fx, int mb, const char *dir)
{
	char *d = at(dir, "d");
	assert_content(fx, mb, d, NULL);
	g_free(d);
}

static void prepare_nothing(fixture *fx, const char *dir)
{
	(void)fx;
	(void)dir;
}

static void check_made_dir(fixture *fx, int mb, const char *dir)
{
	char *d = at(dir, "d");
	struct stat st = stat_of(fx, mb, d);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0751 & ~0022);
	if (getuid() == 0) {
		assert_int_equal(st.st_uid, 1234);
		assert_int_equal(st.st_gid, 4321);
	}
	g_free(d);
}

static void test_replay_rename(void **state)
{
	static const op_case oc = { "rename", INTENT_RENAME, 0, "a", "b", prepare_two_files,
	                            check_renamed };
	run_case(*state, &oc);
}

static void test_replay_exchange(void **state)
{
	static const op_case oc = { "rename", INTENT_RENAME, RENAME_EXCHANGE, "a", "b",
	                            prepare_two_files, check_exchanged };
	run_case(*state, &oc);
}

static void test_replay_directory_rename(void **state)
{
	static const op_case oc = { "rename", INTENT_RENAME, 0, "d", "e", prepare_tree,
	                            check_tree_moved };
	run_case(*state, &oc);
}

static void test_replay_link(void **state)
{
	static const op_case oc = { "link", INTENT_LINK, 0, "a", "c", prepare_two_files,
	                            check_linked };
	run_case(*state, &oc);
}

static void test_replay_unlink(void **state)
{
	static const op_case oc = { "unlink", INTENT_UNLINK, 0, "a", NULL, prepare_two_files,
	                            check_unlinked };
	run_case(*state, &oc);
}

static void test_replay_rmdir(void **state)
{
	static const op_case oc = { "rmdir", INTENT_RMDIR, 0, "d", NULL, prepare_empty_dir,
	                            check_no_dir };
	run_case(*state, &oc);
}

static void test_replay_mkdir(void **state)
{
	umask(0022);
	static const op_case oc = { "mkdir", INTENT_MKDIR, 0, "d", NULL, prepare_nothing,
	                            check_made_dir };
	run_case(*state, &oc);
}

/* ---- the record and its life ---- */

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put64(uint8_t *p, uint64_t x)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(x >> 8 * i);
}

/* The identity FORMAT.md section 8 records for rel on member mb. */
static void ident_of(fixture *fx, int mb, const char *rel, uint64_t *ino, uint64_t *btime)
{
	struct statx stx;
	char *p = member_path(&fx->mb, mb, rel);
	assert_int_equal(statx(AT_FDCWD, p, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &stx), 0);
	*ino = stx.stx_ino;
	*btime = stx.stx_mask & STATX_BTIME
	         ? (uint64_t)stx.stx_btime.tv_sec * 1000000000u + stx.stx_btime.tv_nsec : 0;
	g_free(p);
}

/* The record of a rename is on every member, in one slot, as FORMAT.md
 * section 8 lays it out; the end clears it everywhere. */
static void test_record_on_every_member(void **state)
{
	fixture *fx = *state;
	intent_args a = { INTENT_RENAME, .from = "/a", .to = "/bb", .flags = RENAME_NOREPLACE };
	uint8_t sum[SHA256_DIGEST_LENGTH];
	intent *it;

	put_file_all(fx, "/a", "A");
	assert_int_equal(intent_begin(fx->v, &a, &it), 0);
	for (int mb = 0; mb < N; mb++) {
		size_t len;
		uint8_t *d = read_log(fx, mb, &len);
		uint64_t slots = record_slots(fx, mb), ino, btime;
		assert_int_equal(len, SLOTS * SLOT_SIZE);
		assert_int_equal(__builtin_popcountll(slots), 1);
		const uint8_t *r = d + (size_t)__builtin_ctzll(slots) * SLOT_SIZE;
		assert_int_equal(get32(r + 8), INTENT_RENAME);
		assert_int_equal(get32(r + 12), RENAME_NOREPLACE);
		assert_int_equal(get32(r + 24), N);
		assert_int_equal(get32(r + 28), 2);
		assert_int_equal(get32(r + 32), 3);
		for (int i = 0; i < N; i++) {
			/* from_id of every member; to_id only for an exchange */
			ident_of(fx, i, "/a", &ino, &btime);
			assert_int_equal(get64(r + 48 + 32 * i), ino);
			assert_int_equal(get64(r + 48 + 32 * i + 8), btime);
			assert_int_equal(get64(r + 48 + 32 * i + 16), 0);
		}
		size_t body = 48 + 32 * N + 2 + 3;
		assert_memory_equal(r + 48 + 32 * N, "/a/bb", 5);
		SHA256(r, body, sum);
		assert_memory_equal(r + body, sum, sizeof(sum));
		g_free(d);
	}
	/* The operation was not applied: nothing to sync; the record goes. */
	intent_end(fx->v, it, -EEXIST);
	assert_logs_clean(fx);
	assert_int_equal(intent_scan(fx->v, NULL, NULL), 0);
}

/* A member failed gets no record; with more than m failed the intent is
 * refused before anything is written. */
static void test_begin_with_failed_members(void **state)
{
	fixture *fx = *state;
	intent_args a = { INTENT_UNLINK, .from = "/a" };
	intent *it;

	put_file_all(fx, "/a", "A");
	assert_true(volume_member_error(fx->v, 2, EIO, "test"));
	assert_int_equal(intent_begin(fx->v, &a, &it), 0);
	for (int mb = 0; mb < N; mb++)
		assert_int_equal(__builtin_popcountll(record_slots(fx, mb)), mb != 2);
	intent_end(fx->v, it, 0);
	assert_logs_clean(fx);
	assert_true(volume_member_error(fx->v, 0, EIO, "test"));
	assert_true(volume_member_error(fx->v, 5, EIO, "test"));
	it = (intent *)fx; /* any value but NULL */
	assert_int_equal(intent_begin(fx->v, &a, &it), -EIO);
	assert_null(it);
	assert_logs_clean(fx);
	intent_end(fx->v, NULL, 0); /* nothing to end */
}

/* The crash came while the record was written: only two members hold it,
 * the operation had not started.  The scan reports it without changing
 * anything; the replay does the operation everywhere. */
static void test_record_on_some_members(void **state)
{
	fixture *fx = *state;
	intent_args a = { INTENT_RENAME, .from = "/a", .to = "/b" };
	report r = { 0 };

	put_file_all(fx, "/a", "A");
	crash_during(fx, &a, 0, 0x12);
	assert_int_equal(intent_scan(fx->v, on_report, &r), 1);
	assert_int_equal(r.copies, 2);
	for (int mb = 0; mb < N; mb++) {
		assert_int_equal(__builtin_popcountll(record_slots(fx, mb)), mb == 1 || mb == 4);
		assert_content(fx, mb, "/a", "A");
	}
	replay_one(fx, "rename", &a, 2);
	for (int mb = 0; mb < N; mb++) {
		assert_content(fx, mb, "/a", NULL);
		assert_content(fx, mb, "/b", "A");
	}
}

/* Hard links keep[i] to names[i] on every member: the objects stay
 * alive, so that their inode numbers cannot be reused by newer ones. */
static void keep_alive(fixture *fx, const char *const *names, const char *const *keep, int cnt)
{
	for (int mb = 0; mb < N; mb++)
		for (int i = 0; i < cnt; i++) {
			char *f = member_path(&fx->mb, mb, names[i]), *k = member_path(&fx->mb, mb, keep[i]);
			assert_int_equal(link(f, k), 0);
			g_free(f);
			g_free(k);
		}
}

/* Redo is bound to identity: a record whose operation was done everywhere
 * (its clear lost) never acts on the objects that took the names since,
 * and an exchange is redone only while both names hold their objects. */
static void test_replay_spares_newer_objects(void **state)
{
	fixture *fx = *state;
	static const char *const names[] = { "/f", "/y" }, *const keep[] = { "/kf", "/ky" };
	intent_args un = { INTENT_UNLINK, .from = "/f" };
	intent_args mv = { INTENT_RENAME, .from = "/a", .to = "/b" };
	intent_args ex = { INTENT_RENAME, .from = "/x", .to = "/y", .flags = RENAME_EXCHANGE };

	put_file_all(fx, "/f", "old");
	put_file_all(fx, "/a", "old a");
	put_file_all(fx, "/x", "X");
	put_file_all(fx, "/y", "Y");
	keep_alive(fx, names, keep, 2);
	crash_during(fx, &un, (1ull << N) - 1, (1ull << N) - 1);
	put_file_all(fx, "/f", "new");
	replay_one(fx, "unlink", &un, N);
	crash_during(fx, &mv, (1ull << N) - 1, (1ull << N) - 1);
	put_file_all(fx, "/a", "new a");
	replay_one(fx, "rename", &mv, N);
	crash_during(fx, &ex, 0, (1ull << N) - 1);
	for (int mb = 0; mb < N; mb++) {
		char *y = member_path(&fx->mb, mb, "/y");
		assert_int_equal(unlink(y), 0);
		g_free(y);
	}
	put_file_all(fx, "/y", "new y");
	replay_one(fx, "rename", &ex, N);
	for (int mb = 0; mb < N; mb++) {
		assert_content(fx, mb, "/f", "new");
		assert_content(fx, mb, "/kf", "old");
		assert_content(fx, mb, "/a", "new a");
		assert_content(fx, mb, "/b", "old a");
		assert_content(fx, mb, "/x", "X");
		assert_content(fx, mb, "/y", "new y");
	}
}

/* rmdir of a directory that is not empty on one member: refused there
 * again (the answer it got the first time), the member stays in service. */
static void test_replay_rmdir_not_empty(void **state)
{
	fixture *fx = *state;
	intent_args a = { INTENT_RMDIR, .from = "/d" };

	mkdir_all(fx, "/d");
	crash_during(fx, &a, 0x3, (1ull << N) - 1);
	put_member_file(&fx->mb, 4, "/d/stray", "S");
	replay_one(fx, "rmdir", &a, N);
	for (int mb = 0; mb < N; mb++)
		assert_content(fx, mb, "/d", mb == 4 ? "" : NULL);
	assert_content(fx, 4, "/d/stray", "S");
}

/* Two operations cut short: both replayed, oldest first. */
static void test_two_intents(void **state)
{
	fixture *fx = *state;
	intent_args un = { INTENT_UNLINK, .from = "/p" };
	intent_args mk = { INTENT_MKDIR, .from = "/q", .mode = 0700, .uid = (uid_t)-1,
	                   .gid = (gid_t)-1 };
	intent *i1, *i2;
	uint8_t *saved[N];
	size_t len[N];

	put_file_all(fx, "/p", "P");
	assert_int_equal(intent_begin(fx->v, &un, &i1), 0);
	assert_int_equal(intent_begin(fx->v, &mk, &i2), 0);
	for (int mb = 0; mb < N; mb++) {
		assert_int_equal(__builtin_popcountll(record_slots(fx, mb)), 2);
		saved[mb] = read_log(fx, mb, &len[mb]);
	}
	apply_on_member(fx, 0, &un);
	apply_on_member(fx, 5, &mk);
	intent_end(fx->v, i2, 0);
	intent_end(fx->v, i1, 0);
	for (int mb = 0; mb < N; mb++) {
		write_log(fx, mb, saved[mb], len[mb]);
		g_free(saved[mb]);
	}
	test_volume_reopen(fx);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 2);
	assert_logs_clean(fx);
	for (int mb = 0; mb < N; mb++) {
		assert_content(fx, mb, "/p", NULL);
		assert_content(fx, mb, "/q", "");
	}
}

/* ---- the logs held open ---- */

/* An operation that changes nothing, logged: from here the volume holds
 * every member's log open. */
static void log_nothing(fixture *fx)
{
	intent_args a = { INTENT_UNLINK, .from = "/nothing" };
	intent *it;
	assert_int_equal(intent_begin(fx->v, &a, &it), 0);
	intent_end(fx->v, it, -ENOENT);
}

/* The descriptors of this process open on member mb's log file (the one
 * now at its path; -1 if there is none). */
static int log_fds(fixture *fx, int mb)
{
	char *p = g_strdup_printf("%s/%s", fx->mb.path[mb], LOG_PATH);
	struct stat log, st;
	int count = 0;
	DIR *d = opendir("/proc/self/fd");

	assert_non_null(d);
	if (stat(p, &log) < 0)
		count = -1;
	for (struct dirent *e; count >= 0 && (e = readdir(d));)
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d) &&
		    fstat(atoi(e->d_name), &st) == 0 && st.st_dev == log.st_dev &&
		    st.st_ino == log.st_ino)
			count++;
	closedir(d);
	g_free(p);
	return count;
}

/* The rename a, cut short after member 0, replays to /b on every member
 * (crash_during checks that every member's log at its path took the
 * record). */
static void rename_cut_short(fixture *fx)
{
	intent_args a = { INTENT_RENAME, .from = "/a", .to = "/b" };
	crash_during(fx, &a, 0x1, (1ull << N) - 1);
	replay_one(fx, "rename", &a, N);
	for (int mb = 0; mb < N; mb++) {
		assert_content(fx, mb, "/a", NULL);
		assert_content(fx, mb, "/b", "A");
	}
}

/* A member whose intent folder is gone gets it back, whole, at replay,
 * and the log the volume held open before is not the one written next. */
static void test_replay_makes_the_log(void **state)
{
	fixture *fx = *state;
	char *dir = g_strdup_printf("%s/%s", fx->mb.path[3], INTENT_DIR);
	size_t len;

	log_nothing(fx);
	rm_tree(dir);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 0);
	uint8_t *d = read_log(fx, 3, &len);
	assert_non_null(d);
	assert_int_equal(len, SLOTS * SLOT_SIZE);
	assert_logs_clean(fx);
	assert_int_equal(log_fds(fx, 3), 1);
	put_file_all(fx, "/a", "A");
	rename_cut_short(fx);
	g_free(d);
	g_free(dir);
}

/* A member's directory replaced by an empty one while the volume is open
 * (a new disk, taken back by the online heal: volume_member_revive) gets
 * a log of its own, and the records go there, not to the log of the old
 * directory that the volume held open. */
static void test_log_of_a_revived_member(void **state)
{
	fixture *fx = *state;

	log_nothing(fx);
	assert_int_equal(log_fds(fx, 3), 1);
	rm_tree(fx->mb.path[3]);
	assert_int_equal(mkdir(fx->mb.path[3], 0755), 0);
	assert_true(volume_member_error(fx->v, 3, EIO, "test"));
	assert_int_equal(volume_member_revive(fx->v, 3), 1);
	assert_int_equal(log_fds(fx, 3), -1); /* made by the next logged operation */
	put_file_all(fx, "/a", "A"); /* member 3's as the heal rebuilds it */
	log_nothing(fx);
	assert_int_equal(log_fds(fx, 3), 1);
	rename_cut_short(fx);
}

/* Logged operations from several threads at once, each in its own slot
 * of the one log every member holds open: each is logged and ended on
 * every member, and each log is opened once.  The volume is not replayed,
 * so the first records make the logs: one thread makes each, while the
 * others wait (a second maker's zeros would wipe the records written
 * through the first one's log meanwhile). */
enum { THREADS = 8, ROUNDS = 40 };

struct renamer {
	fixture *fx;
	int t, bad;
};

static void *renamer_run(void *arg)
{
	struct renamer *r = arg;
	for (int i = 0; i < ROUNDS; i++) {
		char *from = g_strdup_printf("/t%d-%d", r->t, i), *to = g_strdup_printf("%s.new", from);
		intent_args a = { INTENT_RENAME, .from = from, .to = to };
		intent *it;
		if (intent_begin(r->fx->v, &a, &it) < 0)
			r->bad++;
		for (int mb = 0; mb < N && it; mb++)
			r->bad += __builtin_popcountll(record_slots(r->fx, mb)) < 1;
		for (int mb = 0; mb < N && it; mb++)
			apply_on_member(r->fx, mb, &a);
		intent_end(r->fx->v, it, 0);
		g_free(from);
		g_free(to);
	}
	return NULL;
}

static void test_logged_at_once(void **state)
{
	fixture *fx = *state;
	struct renamer r[THREADS];
	pthread_t th[THREADS];

	for (int t = 0; t < THREADS; t++)
		for (int i = 0; i < ROUNDS; i++) {
			char *name = g_strdup_printf("/t%d-%d", t, i);
			put_file_all(fx, name, name);
			g_free(name);
		}
	for (int t = 0; t < THREADS; t++) {
		r[t] = (struct renamer){ fx, t, 0 };
		assert_int_equal(pthread_create(&th[t], NULL, renamer_run, &r[t]), 0);
	}
	for (int t = 0; t < THREADS; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		assert_int_equal(r[t].bad, 0);
	}
	assert_logs_clean(fx);
	for (int mb = 0; mb < N; mb++) {
		assert_true(volume_member_ok(fx->v, mb));
		assert_int_equal(log_fds(fx, mb), 1);
		assert_content(fx, mb, "/t7-39.new", "/t7-39");
	}
}

/* ---- records that are no records ---- */

/* The fields of a record made here, by FORMAT.md section 8 (not by
 * intent.c): its op, member count and paths, and the object whose
 * identity on each member it holds as from_id. */
typedef struct craft {
	uint32_t op, n;
	const char *from, *to;
	const char *ids_of;
} craft;

/* The record's bytes in b (SLOT_SIZE); returns its length. */
static size_t make_record(fixture *fx, const craft *c, uint8_t *b)
{
	size_t l1 = strlen(c->from), l2 = c->to ? strlen(c->to) : 0;
	size_t ids = (size_t)c->n * 32, len = 48 + ids + l1 + l2 + 32;

	assert_true(len <= SLOT_SIZE);
	memset(b, 0, len);
	memcpy(b, MAGIC, 8);
	put64(b + 8, c->op);
	put64(b + 16, (uint64_t)g_get_real_time());
	put64(b + 24, c->n | (uint64_t)l1 << 32);
	put64(b + 32, l2);
	memset(b + 40, 0xff, 8); /* uid and gid: the daemon's */
	for (uint32_t i = 0; i < c->n && i < N; i++) {
		uint64_t ino, btime;
		ident_of(fx, (int)i, c->ids_of, &ino, &btime);
		put64(b + 48 + 32 * i, ino);
		put64(b + 48 + 32 * i + 8, btime);
	}
	memcpy(b + 48 + ids, c->from, l1);
	if (l2)
		memcpy(b + 48 + ids + l1, c->to, l2);
	SHA256(b, len - 32, b + len - 32);
	return len;
}

/* Writes rec into slot `slot` of member mb's log. */
static void put_slot_on(fixture *fx, int mb, int slot, const uint8_t *rec, size_t len)
{
	char *p = g_strdup_printf("%s/%s", fx->mb.path[mb], LOG_PATH);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, rec, len, (off_t)slot * SLOT_SIZE), (ssize_t)len);
	close(fd);
	g_free(p);
}

/* Writes rec into slot `slot` of every member's log. */
static void put_slot(fixture *fx, int slot, const uint8_t *rec, size_t len)
{
	for (int mb = 0; mb < N; mb++)
		put_slot_on(fx, mb, slot, rec, len);
}

/* A path too long for a record's slot is refused before any member is
 * written: its record would run into the next slot of the log. */
static void test_path_too_long_refused(void **state)
{
	fixture *fx = *state;
	char *deep = g_malloc(INTENT_PATH_MAX + 2);
	intent *it = NULL;

	memset(deep, 'd', INTENT_PATH_MAX + 1);
	deep[0] = '/';
	deep[INTENT_PATH_MAX + 1] = '\0';
	intent_args mk = { INTENT_MKDIR, .from = deep, .mode = 0755 };
	assert_int_equal(intent_begin(fx->v, &mk, &it), -ENAMETOOLONG);
	assert_null(it);
	intent_args mv = { INTENT_RENAME, .from = "/a", .to = deep };
	assert_int_equal(intent_args_fit(&mv), -ENAMETOOLONG);
	deep[INTENT_PATH_MAX] = '\0'; /* the longest that fits */
	assert_int_equal(intent_args_fit(&mv), 0);
	for (int mb = 0; mb < N; mb++)
		assert_int_equal(record_slots(fx, mb), 0);
	g_free(deep);
}

static void test_malformed_records_refused(void **state)
{
	fixture *fx = *state;
	char *long_path = g_strnfill(5000, 'v');
	long_path[0] = '/';
	const craft bad[] = {
		{ 9, N, "/victim", NULL, "/victim" },                /* no such op */
		{ INTENT_UNLINK, 3, "/victim", NULL, "/victim" },    /* another volume's shape */
		{ INTENT_UNLINK, N, "/x/../victim", NULL, "/victim" },
		{ INTENT_UNLINK, N, "victim", NULL, "/victim" },
		{ INTENT_UNLINK, N, "/victim", "/x", "/victim" },    /* unlink with a target */
		{ INTENT_RENAME, N, "/victim", NULL, "/victim" },    /* rename without one */
		{ INTENT_UNLINK, N, "/.ecfs/superblock", NULL, "/.ecfs/superblock" },
		{ INTENT_RENAME, N, "/victim", "/.ecfs/x", "/victim" },
		{ INTENT_UNLINK, N, long_path, NULL, "/victim" },    /* longer than 4095 */
	};
	const craft good = { INTENT_UNLINK, N, "/victim2", NULL, "/victim2" };
	uint8_t *rec = g_malloc(SLOT_SIZE);
	size_t len;

	put_file_all(fx, "/victim", "V");
	put_file_all(fx, "/victim2", "W");
	mkdir_all(fx, "/x");
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 0); /* makes the logs */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		len = make_record(fx, &bad[i], rec);
		put_slot(fx, (int)i, rec, len);
	}
	/* A real record torn: one byte of its path changed. */
	len = make_record(fx, &(craft){ INTENT_UNLINK, N, "/victim", NULL, "/victim" }, rec);
	rec[len - 33] ^= 1;
	put_slot(fx, 20, rec, len);
	/* Garbage behind a magic. */
	fill_random(rec, SLOT_SIZE, 5);
	memcpy(rec, MAGIC, 8);
	put_slot(fx, 21, rec, SLOT_SIZE);
	/* The one good record, made by the same hand: replayed. */
	len = make_record(fx, &good, rec);
	put_slot(fx, 30, rec, len);
	assert_int_equal(intent_scan(fx->v, NULL, NULL), 1);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 1);
	assert_logs_clean(fx);
	for (int mb = 0; mb < N; mb++) {
		assert_true(volume_member_ok(fx->v, mb));
		assert_content(fx, mb, "/victim", "V");
		assert_content(fx, mb, "/victim2", NULL);
		assert_content(fx, mb, "/x", "");
		char *sb = member_path(&fx->mb, mb, "/.ecfs/superblock");
		assert_int_equal(access(sb, F_OK), 0);
		g_free(sb);
	}
	g_free(rec);
	g_free(long_path);
}

/* A mkdir record of rel made by a hostile member: root's, mode 04777. */
static size_t forge_mkdir(fixture *fx, const char *rel, uint8_t *rec)
{
	size_t len = make_record(fx, &(craft){ INTENT_MKDIR, N, rel, NULL, "/" }, rec);
	memset(rec + 48, 0, 32 * N); /* no identities */
	put64(rec + 32, (uint64_t)04777 << 32);
	put64(rec + 40, 0);
	SHA256(rec, len - 32, rec + len - 32);
	return len;
}

static void make_dir_on(fixture *fx, int mb, const char *rel, mode_t mode, uid_t uid)
{
	char *p = member_path(&fx->mb, mb, rel);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, mode), 0);
	if (getuid() == 0)
		assert_int_equal(chown(p, uid, uid), 0);
	g_free(p);
}

/* A forged mkdir record on one member (root's, mode 04777) is not
 * replayed as such: for a directory no other member has, not at all;
 * for one most members have, with their mode and owner. */
static void test_forged_mkdir_not_believed(void **state)
{
	fixture *fx = *state;
	uint8_t *rec = g_malloc(SLOT_SIZE);

	umask(0022);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 0); /* makes the logs */
	put_slot_on(fx, 0, 3, rec, forge_mkdir(fx, "/evil", rec));
	make_dir_on(fx, 0, "/evil", 04777, 0);
	put_slot_on(fx, 0, 4, rec, forge_mkdir(fx, "/shared", rec));
	make_dir_on(fx, 0, "/shared", 04777, 0);
	for (int mb = 1; mb < N - 1; mb++)
		make_dir_on(fx, mb, "/shared", 0750, 1234);
	assert_int_equal(intent_scan(fx->v, NULL, NULL), 2);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 1);
	assert_logs_clean(fx);
	for (int mb = 1; mb < N; mb++) {
		assert_true(volume_member_ok(fx->v, mb));
		assert_content(fx, mb, "/evil", NULL);
		struct stat st = stat_of(fx, mb, "/shared");
		assert_int_equal(st.st_mode & 07777, 0750);
		if (getuid() == 0)
			assert_int_equal(st.st_uid, 1234);
	}
	g_free(rec);
}

#define T(fn) \
	cmocka_unit_test_prestate_setup_teardown(fn, test_volume_setup, test_volume_teardown, \
	                                         (void *)&opts)

int main(void)
{
	ecfs_log_init("test_intent", false, false);
	const struct CMUnitTest tests[] = {
		T(test_record_on_every_member),
		T(test_begin_with_failed_members),
		T(test_replay_rename),
		T(test_replay_exchange),
		T(test_replay_directory_rename),
		T(test_replay_link),
		T(test_replay_unlink),
		T(test_replay_rmdir),
		T(test_replay_mkdir),
		T(test_record_on_some_members),
		T(test_replay_spares_newer_objects),
		T(test_replay_rmdir_not_empty),
		T(test_two_intents),
		T(test_replay_makes_the_log),
		T(test_log_of_a_revived_member),
		T(test_logged_at_once),
		T(test_path_too_long_refused),
		T(test_malformed_records_refused),
		T(test_forged_mkdir_not_believed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
