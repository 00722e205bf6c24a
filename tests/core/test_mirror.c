/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the mirrored namespace operations (src/core/namespace/mirror.c) on
 * real member directories: an operation runs on every healthy member and
 * the first member that has the object decides the answer; a refusal
 * leaves the other members untouched; a member missing an entry or
 * answering otherwise does not change the answer; broken members (errors,
 * injected faults, a vanished directory) are failed and skipped, and with
 * more than m of them the answer is EIO; queries ask one member, never
 * one being rebuilt; logged operations leave no intent behind.  With a
 * member timeout, logged operations ask the primary first and the other
 * members together: the same rules, a refusal still touches no other
 * member, and a member that hangs costs the timeout and keeps its copy
 * of the intent for the next mount to replay; the other operations ask
 * the primary, then the rest together, under the same rules.  On fast
 * members a logged operation's steps are chained on the relay, and no
 * member runs it before every member holds the intent; with a member
 * slower than the relay's threshold they go in rounds, under the same
 * rules.  A
 * gathering query asks every member in service but one being rebuilt.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <cmocka.h>
#include <glib.h>

#include "core_test_util.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "dirstamps.h"
#include "mirror.h"
#include "objects.h"
#include "volume_internal.h"

#define K 4
#define M 2
#define N (K + M)
#define ALL ((1ull << N) - 1)

typedef test_volume fixture;

static const volume_options opts = { .geometry = { .k = K, .m = M } };

/* ---- the member directories ---- */

/* The members on which rel exists (bit mb). */
static uint64_t present(fixture *fx, const char *rel)
{
	uint64_t have = 0;
	for (int mb = 0; mb < N; mb++) {
		struct stat st;
		char *p = member_path(&fx->mb, mb, rel);
		have |= (uint64_t)(lstat(p, &st) == 0) << mb;
		g_free(p);
	}
	return have;
}

static void assert_present(fixture *fx, const char *rel, uint64_t want)
{
	uint64_t have = present(fx, rel);
	if (have != want)
		fail_msg("%s is on members %#llx, not %#llx", rel, (unsigned long long)have,
		         (unsigned long long)want);
}

static uint64_t failed_members(fixture *fx)
{
	uint64_t f = 0;
	for (int mb = 0; mb < N; mb++)
		f |= (uint64_t)!volume_member_ok(fx->v, mb) << mb;
	return f;
}

/* ---- operations on one member ---- */

/* What the member operations saw: the members that ran, in order. */
typedef struct calls {
	volume *v;     /* for the operations that go through memberops */
	uint64_t ran;
	int order[N], count;
	int rc[N];     /* scripted: each member's answer */
} calls;

/* Atomic: the logged operations run on several members at once. */
static void note(calls *c, int member)
{
	if (!c)
		return;
	__atomic_fetch_or(&c->ran, 1ull << member, __ATOMIC_RELAXED);
	int at = __atomic_fetch_add(&c->count, 1, __ATOMIC_RELAXED);
	if (at < N)
		c->order[at] = member;
}

static int scripted(int member, int dirfd, const char *leaf, void *arg)
{
	(void)dirfd;
	(void)leaf;
	note(arg, member);
	return ((calls *)arg)->rc[member];
}

static int mkdir_fn(int member, int dirfd, const char *leaf, void *arg)
{
	int rc = mirror_errno(mkdirat(dirfd, leaf, 0755));
	note(arg, member);
	return rc;
}

/* The same through memberops, where the injected faults are. */
static int mop_mkdir_fn(int member, int dirfd, const char *leaf, void *arg)
{
	int rc = mop_mkdirat(((calls *)arg)->v, member, dirfd, leaf, 0755);
	note(arg, member);
	return rc;
}

static int unlink_fn(int member, int dirfd, const char *leaf, void *arg)
{
	int rc = mirror_errno(unlinkat(dirfd, leaf, 0));
	note(arg, member);
	return rc;
}

/* A query: the object's size. */
static int size_fn(int member, int dirfd, const char *leaf, void *arg)
{
	struct stat st;
	int rc = mirror_errno(fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW));
	note(arg, member);
	return rc < 0 ? rc : (int)st.st_size;
}

static int scripted2(int member, int d1, const char *l1, int d2, const char *l2, void *arg)
{
	(void)d1;
	(void)l1;
	(void)d2;
	(void)l2;
	note(arg, member);
	return ((calls *)arg)->rc[member];
}

static int rename_fn(int member, int d1, const char *l1, int d2, const char *l2, void *arg)
{
	int rc = mirror_errno(renameat(d1, l1, d2, l2));
	note(arg, member);
	return rc;
}

static int rename_noreplace_fn(int member, int d1, const char *l1, int d2, const char *l2,
                               void *arg)
{
	int rc = mirror_errno(renameat2(d1, l1, d2, l2, RENAME_NOREPLACE));
	note(arg, member);
	return rc;
}

static int rmdir_fn(int member, int dirfd, const char *leaf, void *arg)
{
	int rc = mirror_errno(unlinkat(dirfd, leaf, AT_REMOVEDIR));
	note(arg, member);
	return rc;
}

static int link_fn(int member, int d1, const char *l1, int d2, const char *l2, void *arg)
{
	int rc = mirror_errno(linkat(d1, l1, d2, l2, 0));
	note(arg, member);
	return rc;
}

/* ---- agreeing members ---- */

static void test_all_members_agree(void **state)
{
	fixture *fx = *state;
	calls c = { 0 };

	assert_int_equal(mirror_apply(fx->v, "/d", mkdir_fn, &c, "mkdir"), 0);
	assert_int_equal(c.ran, ALL);
	for (int i = 0; i < N; i++)
		assert_int_equal(c.order[i], i); /* one member after the other */
	assert_present(fx, "/d", ALL);
	assert_int_equal(mirror_apply(fx->v, "/d/e", mkdir_fn, NULL, "mkdir"), 0);
	assert_present(fx, "/d/e", ALL);
	/* Asked again: member 0 refuses, no other member is asked. */
	c = (calls){ 0 };
	assert_int_equal(mirror_apply(fx->v, "/d", mkdir_fn, &c, "mkdir"), -EEXIST);
	assert_int_equal(c.ran, 1);
	/* A parent missing everywhere: ENOENT, and the operation never ran. */
	c = (calls){ 0 };
	assert_int_equal(mirror_apply(fx->v, "/nope/x", mkdir_fn, &c, "mkdir"), -ENOENT);
	assert_int_equal(c.ran, 0);
	assert_present(fx, "/nope", 0);
	assert_int_equal(failed_members(fx), 0);
}

/* Paths that would leave the member root, by dot-dot or a symlink, are
 * refused beneath it: the operation never runs. */
static void test_paths_stay_beneath_the_root(void **state)
{
	fixture *fx = *state;
	char *outside = g_strdup_printf("%s/escaped", fx->mb.root);
	calls c = { 0 };

	assert_int_equal(mirror_apply(fx->v, "/../escaped", mkdir_fn, &c, "mkdir"), -ENOTDIR);
	for (int mb = 0; mb < N; mb++) {
		char *link = member_path(&fx->mb, mb, "/up");
		assert_int_equal(symlink(fx->mb.root, link), 0);
		g_free(link);
	}
	assert_int_equal(mirror_apply(fx->v, "/up/escaped", mkdir_fn, &c, "mkdir"), -ENOTDIR);
	assert_int_equal(c.ran, 0);
	assert_int_equal(access(outside, F_OK), -1);
	assert_int_equal(failed_members(fx), 0);
	g_free(outside);
}

/* ---- the decision, member by member ---- */

typedef struct rule_case {
	int rc[N];         /* each member's answer */
	int answer;
	uint64_t ran, failed;
} rule_case;

static const rule_case apply_rules[] = {
	{ { 0, 0, 0, 0, 0, 0 }, 0, ALL, 0 },
	{ { -EEXIST, 0, 0, 0, 0, 0 }, -EEXIST, 0x01, 0 },        /* refused: others untouched */
	{ { -ENOENT, 0, 0, 0, 0, 0 }, 0, ALL, 0 },               /* member 0 lost it */
	{ { -ENOENT, -ENOENT, -ENOTEMPTY, 0, 0, 0 }, -ENOTEMPTY, 0x07, 0 },
	{ { -ENOENT, -ENOENT, -ENOENT, -ENOENT, -ENOENT, -ENOENT }, -ENOENT, ALL, 0 },
	{ { -EIO, 0, 0, 0, 0, 0 }, 0, ALL, 0x01 },               /* broken: the next decides */
	{ { -EROFS, -EPERM, 0, 0, 0, 0 }, -EPERM, 0x03, 0x01 },
	{ { 0, 0, -EEXIST, -ENOENT, 0, 0 }, 0, ALL, 0 },         /* diverging, not broken */
	{ { 0, -EIO, 0, 0, -ENOSPC, 0 }, 0, ALL, 0x02 },         /* full is not broken */
	{ { 7, 3, 0, 0, 0, 0 }, 7, ALL, 0 },                     /* a count: the primary's */
	{ { -ENOSPC, 0, 0, 0, 0, 0 }, -ENOSPC, 0x01, 0 },        /* a full member answers */
	{ { -EDQUOT, 0, 0, 0, 0, 0 }, -EDQUOT, 0x01, 0 },
	{ { -E2BIG, 0, 0, 0, 0, 0 }, -E2BIG, 0x01, 0 },          /* an oversized xattr */
	{ { -EIO, -EIO, -ETIMEDOUT, 0, 0, 0 }, -EIO, ALL, 0x07 }, /* more than m */
};

static const rule_case query_rules[] = {
	{ { 5, 9, 9, 9, 9, 9 }, 5, 0x01, 0 },
	{ { -ENOENT, 9, 8, 8, 8, 8 }, 9, 0x03, 0 },
	{ { -ENOENT, -ENOENT, -ENOENT, -ENOENT, -ENOENT, -ENOENT }, -ENOENT, ALL, 0 },
	{ { -ENODATA, 9, 9, 9, 9, 9 }, -ENODATA, 0x01, 0 },      /* an answer */
	{ { -EIO, 4, 9, 9, 9, 9 }, 4, 0x03, 0x01 },
	{ { -EDQUOT, 4, 9, 9, 9, 9 }, -EDQUOT, 0x01, 0 },
	{ { -EIO, -ENXIO, -EIO, 1, 1, 1 }, -EIO, 0x07, 0x07 },
};

static void check_rules(fixture *fx, const rule_case *rules, size_t count, bool query,
                        bool relay)
{
	for (size_t i = 0; i < count; i++) {
		const rule_case *r = &rules[i];
		calls c = { 0 };
		if (relay)
			memberio_force_relay(volume_memberio(fx->v), true);
		memcpy(c.rc, r->rc, sizeof(c.rc));
		int answer = query ? mirror_query(fx->v, "/x", scripted, &c, "test")
		                   : mirror_apply(fx->v, "/x", scripted, &c, "test");
		if (answer != r->answer || c.ran != r->ran || failed_members(fx) != r->failed)
			fail_msg("%s case %zu: answer %d, ran %#llx, failed %#llx; expected %d, %#llx, "
			         "%#llx", query ? "query" : "apply", i, answer,
			         (unsigned long long)c.ran, (unsigned long long)failed_members(fx),
			         r->answer, (unsigned long long)r->ran, (unsigned long long)r->failed);
		test_volume_reopen(fx);
	}
}

static void test_apply_rules(void **state)
{
	check_rules(*state, apply_rules, sizeof(apply_rules) / sizeof(apply_rules[0]), false,
	            false);
}

/* The same with every member on the relay: the candidates and the
 * followers are one batch there (mirror.c, apply_all_relayed). */
static void test_apply_rules_relayed(void **state)
{
	check_rules(*state, apply_rules, sizeof(apply_rules) / sizeof(apply_rules[0]), false,
	            true);
}

static void test_query_rules(void **state)
{
	check_rules(*state, query_rules, sizeof(query_rules) / sizeof(query_rules[0]), true,
	            false);
}

/* ---- disagreeing members ---- */

/* An entry missing on one member: the first member that has it decides,
 * and the operation reaches every member that has it. */
static void test_entry_missing_on_one_member(void **state)
{
	fixture *fx = *state;
	calls c = { 0 };

	for (int mb = 1; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/f", "F");
	for (int mb = 0; mb < N; mb++)
		if (mb != 3)
			put_member_file(&fx->mb, mb, "/g", "G");
	assert_int_equal(mirror_apply(fx->v, "/f", unlink_fn, &c, "unlink"), 0);
	assert_int_equal(c.ran, ALL);
	assert_present(fx, "/f", 0);
	assert_int_equal(mirror_apply(fx->v, "/g", unlink_fn, NULL, "unlink"), 0);
	assert_present(fx, "/g", 0);
	/* A directory that exists on member 0 only refuses the mkdir there;
	 * the others are not made to diverge further. */
	char *d = member_path(&fx->mb, 0, "/d");
	assert_int_equal(mkdir(d, 0755), 0);
	g_free(d);
	assert_int_equal(mirror_apply(fx->v, "/d", mkdir_fn, NULL, "mkdir"), -EEXIST);
	assert_present(fx, "/d", 0x01);
	assert_int_equal(failed_members(fx), 0);
}

/* A query asks the first member that has the object, and only it. */
static void test_query_reads_one_member(void **state)
{
	fixture *fx = *state;
	calls c = { 0 };

	put_member_file(&fx->mb, 0, "/q", "1");
	for (int mb = 1; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/q", "22");
	assert_int_equal(mirror_query(fx->v, "/q", size_fn, &c, "stat"), 1);
	assert_int_equal(c.ran, 0x01);
	char *q = member_path(&fx->mb, 0, "/q");
	assert_int_equal(unlink(q), 0);
	g_free(q);
	c = (calls){ 0 };
	assert_int_equal(mirror_query(fx->v, "/q", size_fn, &c, "stat"), 2);
	assert_int_equal(c.ran, 0x03);
	c = (calls){ 0 };
	assert_int_equal(mirror_query(fx->v, "/none", size_fn, &c, "stat"), -ENOENT);
	assert_int_equal(c.ran, ALL);
	/* A failed member is not asked. */
	assert_true(volume_member_error(fx->v, 1, EIO, "test"));
	c = (calls){ 0 };
	assert_int_equal(mirror_query(fx->v, "/q", size_fn, &c, "stat"), 2);
	assert_int_equal(c.ran, 0x05);
}

/* ---- broken members ---- */

static void test_failed_member_left_alone(void **state)
{
	fixture *fx = *state;
	calls c = { 0 };

	assert_true(volume_member_error(fx->v, 1, EIO, "test"));
	assert_int_equal(mirror_apply(fx->v, "/d", mkdir_fn, &c, "mkdir"), 0);
	assert_int_equal(c.ran, ALL & ~0x02ull);
	assert_present(fx, "/d", ALL & ~0x02ull);
	/* A member whose directory was removed answers ENOENT: that is no
	 * answer but a lost member. */
	rm_tree(fx->mb.path[0]);
	assert_int_equal(mirror_apply(fx->v, "/e", mkdir_fn, NULL, "mkdir"), 0);
	assert_int_equal(failed_members(fx), 0x03);
	assert_present(fx, "/e", ALL & ~0x03ull);
	/* A third: more than m, the volume answers EIO and runs nothing. */
	assert_true(volume_member_error(fx->v, 5, EIO, "test"));
	c = (calls){ 0 };
	assert_int_equal(mirror_apply(fx->v, "/f", mkdir_fn, &c, "mkdir"), -EIO);
	assert_int_equal(mirror_query(fx->v, "/d", size_fn, &c, "stat"), -EIO);
	assert_int_equal(c.ran, 0);
	assert_present(fx, "/f", 0);
}

#ifdef ECFS_FAULT_INJECTION
/* Opens the volume again with the member faults of spec; the open itself
 * must not meet them. */
static void open_with_faults(fixture *fx, const char *spec)
{
	setenv("ECFS_FAULT", spec, 1);
	test_volume_reopen(fx);
	unsetenv("ECFS_FAULT");
	assert_int_equal(failed_members(fx), 0);
}
#endif

/* Errors of the real member calls (injected beneath memberops): a broken
 * member's error fails it (EROFS; ENOSPC when no flag makes it an
 * answer), an answer from the first member is the volume's, from a later
 * one a divergence that fails nothing. */
static void test_member_errors_propagate(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	fixture *fx = *state;
	calls c = { 0 };

	open_with_faults(fx, "member=0,op=meta,errno=EROFS;member=3,op=meta,errno=ENOSPC");
	c.v = fx->v;
	assert_int_equal(mirror_apply(fx->v, "/a", mop_mkdir_fn, &c, "mkdir"), 0);
	/* EROFS fails member 0; the full member 3 stays in, diverging. */
	assert_int_equal(failed_members(fx), 0x01);
	assert_present(fx, "/a", ALL & ~0x09ull);
	open_with_faults(fx, "member=2,op=meta,errno=17"); /* EEXIST */
	c.v = fx->v;
	assert_int_equal(mirror_apply(fx->v, "/b", mop_mkdir_fn, &c, "mkdir"), 0);
	assert_present(fx, "/b", ALL & ~0x04ull);
	open_with_faults(fx, "member=0,op=meta,errno=17");
	c.v = fx->v;
	assert_int_equal(mirror_apply(fx->v, "/c", mop_mkdir_fn, &c, "mkdir"), -EEXIST);
	assert_present(fx, "/c", 0);
	assert_int_equal(failed_members(fx), 0);
#else
	(void)state;
	skip();
#endif
}

/* A member being rebuilt (revived by the online heal) takes the writes
 * but answers no query: its namespace may be incomplete. */
static void test_healing_member(void **state)
{
	fixture *fx = *state;
	calls c = { 0 };

	assert_int_equal(mirror_apply(fx->v, "/d", mkdir_fn, NULL, "mkdir"), 0);
	rm_tree(fx->mb.path[0]);
	assert_int_equal(mirror_query(fx->v, "/d", size_fn, NULL, "stat") >= 0, 1);
	assert_false(volume_member_ok(fx->v, 0));
	assert_int_equal(mkdir(fx->mb.path[0], 0755), 0);
	assert_int_equal(volume_member_revive(fx->v, 0), 1);
	assert_true(volume_member_ok(fx->v, 0));
	assert_false(volume_member_answers(fx->v, 0));
	assert_int_equal(mirror_apply(fx->v, "/e", mkdir_fn, &c, "mkdir"), 0);
	assert_int_equal(c.ran, ALL);
	assert_present(fx, "/e", ALL);
	c = (calls){ 0 };
	assert_true(mirror_query(fx->v, "/d", size_fn, &c, "stat") >= 0);
	assert_int_equal(c.ran, 0x02);
}

/* ---- two paths, and logged operations ---- */

static void test_rename_and_link(void **state)
{
	fixture *fx = *state;
	calls c = { 0 };

	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/a", "A");
	assert_int_equal(mirror_apply2(fx->v, "/a", "/b", rename_fn, &c, "rename"), 0);
	assert_int_equal(c.ran, ALL);
	assert_present(fx, "/a", 0);
	assert_present(fx, "/b", ALL);
	assert_int_equal(mirror_apply2(fx->v, "/b", "/c", link_fn, NULL, "link"), 0);
	for (int mb = 0; mb < N; mb++) {
		struct stat sb, sc;
		char *b = member_path(&fx->mb, mb, "/b"), *cp = member_path(&fx->mb, mb, "/c");
		assert_int_equal(lstat(b, &sb), 0);
		assert_int_equal(lstat(cp, &sc), 0);
		assert_int_equal(sb.st_ino, sc.st_ino);
		g_free(b);
		g_free(cp);
	}
	/* A target in a missing folder: ENOENT, nothing moved. */
	c = (calls){ 0 };
	assert_int_equal(mirror_apply2(fx->v, "/b", "/nope/b", rename_fn, &c, "rename"),
	                 -ENOENT);
	assert_int_equal(c.ran, 0);
	assert_present(fx, "/b", ALL);
}

static void assert_no_intent(fixture *fx)
{
	for (int mb = 0; mb < N; mb++)
		assert_int_equal(intent_log_slots(fx->mb.path[mb], true), 0);
}

static void test_logged_operations(void **state)
{
	fixture *fx = *state;
	intent_args mv = { INTENT_RENAME, .from = "/a", .to = "/b" };
	intent_args mk = { INTENT_MKDIR, .from = "/d", .mode = 0755, .uid = (uid_t)-1,
	                   .gid = (gid_t)-1 };
	calls c = { 0 };

	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/a", "A");
	assert_int_equal(mirror_apply_logged(fx->v, &mv, NULL, rename_fn, &c, "rename"), 0);
	assert_int_equal(c.ran, ALL);
	assert_present(fx, "/b", ALL);
	assert_present(fx, "/a", 0);
	assert_int_equal(mirror_apply_logged(fx->v, &mk, mkdir_fn, NULL, NULL, "mkdir"), 0);
	assert_present(fx, "/d", ALL);
	/* Refused: the answer, and the record goes too. */
	assert_int_equal(mirror_apply_logged(fx->v, &mk, mkdir_fn, NULL, NULL, "mkdir"), -EEXIST);
	assert_no_intent(fx);
	/* More than m failed: refused before any member is touched. */
	for (int mb = 0; mb <= M; mb++)
		assert_true(volume_member_error(fx->v, mb, EIO, "test"));
	c = (calls){ 0 };
	intent_args mv2 = { INTENT_RENAME, .from = "/b", .to = "/c" };
	assert_int_equal(mirror_apply_logged(fx->v, &mv2, NULL, rename_fn, &c, "rename"), -EIO);
	assert_int_equal(c.ran, 0);
	assert_present(fx, "/b", ALL);
	assert_no_intent(fx);
}

/* ---- logged operations with a member timeout: the members in parallel ---- */

static const volume_options opts_timeout = { .geometry = { .k = K, .m = M },
                                             .run.timeout_ms = 10000 };

/* apply_rules through mirror_apply_logged, on a volume with a timeout:
 * a rename (two paths) and an unlink (one) with scripted answers.  The
 * same answers, members run and members failed, except that with more
 * than m members failed by the primary's search nothing more is run; and
 * no intent is left behind while the volume is usable. */
static void test_parallel_rules(void **state)
{
	fixture *fx = *state;

	for (size_t i = 0; i < sizeof(apply_rules) / sizeof(apply_rules[0]); i++) {
		for (int two = 0; two < 2; two++) {
			const rule_case *r = &apply_rules[i];
			bool unusable = __builtin_popcountll(r->failed) > M;
			uint64_t want_ran = unusable ? 0x0f : r->ran;
			intent_args a = { two ? INTENT_RENAME : INTENT_UNLINK, .from = "/x",
			                  .to = two ? "/y" : NULL };
			calls c = { 0 };
			memcpy(c.rc, r->rc, sizeof(c.rc));
			int answer = mirror_apply_logged(fx->v, &a, scripted, scripted2, &c, "test");
			if (answer != r->answer || c.ran != want_ran || failed_members(fx) != r->failed)
				fail_msg("case %zu (%s): answer %d, ran %#llx, failed %#llx; expected "
				         "%d, %#llx, %#llx", i, two ? "rename" : "unlink", answer,
				         (unsigned long long)c.ran,
				         (unsigned long long)failed_members(fx), r->answer,
				         (unsigned long long)want_ran, (unsigned long long)r->failed);
			/* the primary ran first, alone */
			if (c.count > 0 && r->rc[0] != -ENOENT && !(r->failed & 1))
				assert_int_equal(c.order[0], 0);
			if (!unusable)
				for (int mb = 0; mb < N; mb++)
					if (volume_member_ok(fx->v, mb))
						assert_int_equal(intent_log_slots(fx->mb.path[mb], false), 0);
			test_volume_reopen(fx);
		}
	}
}

/* A refusal by the member that decides touches no other member: mkdir of
 * a name that member 0 alone has, a rename that must not replace a name
 * member 0 alone has, an rmdir of a directory that member 0 lacks and
 * member 1 holds with an entry in it. */
static void test_parallel_refusal_touches_no_other_member(void **state)
{
	fixture *fx = *state;
	intent_args mk = { INTENT_MKDIR, .from = "/d", .mode = 0755, .uid = (uid_t)-1,
	                   .gid = (gid_t)-1 };
	intent_args mv = { INTENT_RENAME, .from = "/a", .to = "/b", .flags = RENAME_NOREPLACE };
	intent_args rm = { INTENT_RMDIR, .from = "/e" };
	calls c = { .v = fx->v };

	char *d = member_path(&fx->mb, 0, "/d");
	assert_int_equal(mkdir(d, 0755), 0);
	g_free(d);
	assert_int_equal(mirror_apply_logged(fx->v, &mk, mop_mkdir_fn, NULL, &c, "mkdir"), -EEXIST);
	assert_int_equal(c.ran, 0x01);
	assert_present(fx, "/d", 0x01);

	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/a", "A");
	put_member_file(&fx->mb, 0, "/b", "B");
	c = (calls){ 0 };
	assert_int_equal(mirror_apply_logged(fx->v, &mv, NULL, rename_noreplace_fn, &c, "rename"),
	                 -EEXIST);
	assert_int_equal(c.ran, 0x01);
	assert_present(fx, "/a", ALL);
	assert_present(fx, "/b", 0x01);

	for (int mb = 1; mb < N; mb++) {
		char *e = member_path(&fx->mb, mb, "/e");
		assert_int_equal(mkdir(e, 0755), 0);
		g_free(e);
	}
	put_member_file(&fx->mb, 1, "/e/x", "X");
	c = (calls){ 0 };
	assert_int_equal(mirror_apply_logged(fx->v, &rm, rmdir_fn, NULL, &c, "rmdir"), -ENOTEMPTY);
	assert_int_equal(c.ran, 0x03);
	assert_present(fx, "/e", ALL & ~0x01ull);
	assert_int_equal(failed_members(fx), 0);
	assert_no_intent(fx);
	/* Agreeing again, every member takes them. */
	char *x = member_path(&fx->mb, 1, "/e/x"), *b = member_path(&fx->mb, 0, "/b");
	assert_int_equal(unlink(x), 0);
	assert_int_equal(unlink(b), 0);
	g_free(x);
	g_free(b);
	c = (calls){ 0 };
	assert_int_equal(mirror_apply_logged(fx->v, &rm, rmdir_fn, NULL, &c, "rmdir"), 0);
	assert_int_equal(c.ran, ALL);
	assert_present(fx, "/e", 0);
	c = (calls){ 0 };
	assert_int_equal(mirror_apply_logged(fx->v, &mv, NULL, rename_noreplace_fn, &c, "rename"), 0);
	assert_int_equal(c.ran, ALL);
	assert_present(fx, "/a", 0);
	assert_present(fx, "/b", ALL);
	assert_no_intent(fx);
	assert_int_equal(failed_members(fx), 0);
}

#ifdef ECFS_FAULT_INJECTION
/* Closes the descriptors a member given up kept open (volume_member_close
 * leaves them: closing could wait on the member), so that this process
 * can open the volume again: the lock of .ecfs/lock among them.  The
 * daemon's next mount is another process. */
static void close_left_open(const char *member_root)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t len = strlen(member_root);

	assert_non_null(d);
	while ((e = readdir(d))) {
		char link[300], target[4096];
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (!strncmp(target, member_root, len) && (target[len] == '/' || !target[len]) &&
		    atoi(e->d_name) != dirfd(d))
			close(atoi(e->d_name));
	}
	closedir(d);
}

static int mop_rename_fn(int member, int d1, const char *l1, int d2, const char *l2, void *arg)
{
	int rc = mop_renameat2(((calls *)arg)->v, member, d1, l1, d2, l2, 0);
	note(arg, member);
	return rc;
}

/* Renames /a (on every member) to /b with the faults of spec and a 300
 * ms timeout, member hung hanging: the rename succeeds on the others
 * within the timeout and a few seconds of slack, and only member hung is
 * failed, left as it was.  Returns the members the operation ran on. */
static uint64_t rename_with_a_hang(fixture *fx, const char *spec, int hung)
{
	intent_args mv = { INTENT_RENAME, .from = "/a", .to = "/b" };
	uint64_t others = ALL & ~(1ull << hung);

	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/a", "A");
	fx->o.run.timeout_ms = 300;
	open_with_faults(fx, spec);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 0);
	assert_int_equal(failed_members(fx), 0);
	calls c = { .v = fx->v };
	gint64 t0 = g_get_monotonic_time();
	assert_int_equal(mirror_apply_logged(fx->v, &mv, NULL, mop_rename_fn, &c, "rename"), 0);
	gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
	if (took_ms > 300 + 5000)
		fail_msg("the rename took %lld ms with a 300 ms timeout", (long long)took_ms);
	assert_int_equal(failed_members(fx), 1ull << hung);
	assert_present(fx, "/b", others);
	assert_present(fx, "/a", 1ull << hung);
	return c.ran;
}

/* Opens the volume again, without faults, after member hung was given up. */
static void reopen_after_a_hang(fixture *fx, int hung)
{
	char *msg = NULL;

	fx->o.run.timeout_ms = opts_timeout.run.timeout_ms;
	volume_close(fx->v);
	close_left_open(fx->mb.path[hung]);
	assert_int_equal(volume_open((const char *const *)fx->mb.path, N, &fx->o, &fx->v, &msg), 0);
}

/* Member `hung` hangs in every namespace call from its third on (the
 * first two prepare its intent log in the replay) while /a is renamed to
 * /b: the member keeps its copy of the intent; reopened without the
 * fault, the replay finishes the rename there and leaves no record. */
static void hang_in_rename(fixture *fx, int hung)
{
	char *spec = g_strdup_printf("member=%d,op=meta,after=2,hang", hung);

	rename_with_a_hang(fx, spec, hung);
	for (int mb = 0; mb < N; mb++)
		assert_int_equal(intent_log_slots(fx->mb.path[mb], false) != 0, mb == hung);
	reopen_after_a_hang(fx, hung);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 1);
	assert_present(fx, "/b", ALL);
	assert_present(fx, "/a", 0);
	assert_int_equal(failed_members(fx), 0);
	assert_no_intent(fx);
	for (int mb = 0; mb < N; mb++) {
		char *b = member_path(&fx->mb, mb, "/b");
		assert_int_equal(unlink(b), 0);
		g_free(b);
	}
	g_free(spec);
}

/* Member 4 hangs in the first read after the open's (the replay reads
 * its 64 slots through the log it made ready and keeps open): the statx
 * that takes the identity of /a there for the intent.  The rename still
 * takes only the timeout, and member 4, failed before its copy was
 * written, is left as it was. */
static void hang_in_identity(fixture *fx)
{
	uint64_t ran = rename_with_a_hang(fx, "member=4,op=read,after=64,hang", 4);
	assert_int_equal(ran, ALL & ~(1ull << 4));
	assert_no_intent(fx);
	reopen_after_a_hang(fx, 4);
}
#endif

/* A member that hangs during a parallel rename: one after the primary
 * (its call goes out with the others), the primary itself (the next
 * member decides), and one while the intent takes the identities. */
static void test_parallel_rename_with_a_hung_member(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	hang_in_rename(*state, 3);
	hang_in_rename(*state, 0);
	hang_in_identity(*state);
#else
	(void)state;
	skip();
#endif
}

/* ---- the order of a logged operation's steps ---- */

/* What every member's intent log held each time the operation ran on a
 * member (bit i of held[member]: member i held a record then). */
typedef struct log_probe {
	fixture *fx;
	uint64_t held[N];
	uint64_t ran;
} log_probe;

static int probe_rename(int member, int d1, const char *l1, int d2, const char *l2, void *arg)
{
	log_probe *p = arg;
	uint64_t held = 0;
	for (int mb = 0; mb < N; mb++)
		held |= (uint64_t)(intent_log_slots(p->fx->mb.path[mb], false) != 0) << mb;
	p->held[member] = held;
	__atomic_fetch_or(&p->ran, 1ull << member, __ATOMIC_RELAXED);
	return mop_renameat2(p->fx->v, member, d1, l1, d2, l2, 0);
}

/* Renames /a (on the members in `in`, those in service) to /b and
 * returns what the logs held. */
static log_probe probed_rename(fixture *fx, uint64_t in)
{
	intent_args mv = { INTENT_RENAME, .from = "/a", .to = "/b" };
	log_probe p = { .fx = fx };

	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/a", "A");
	assert_int_equal(mirror_apply_logged(fx->v, &mv, NULL, probe_rename, &p, "rename"), 0);
	assert_int_equal(p.ran, in);
	assert_present(fx, "/a", ALL & ~in);
	assert_present(fx, "/b", in);
	for (int mb = 0; mb < N; mb++) {
		char *a = member_path(&fx->mb, mb, "/a"), *b = member_path(&fx->mb, mb, "/b");
		if (in >> mb & 1)
			assert_int_equal(intent_log_slots(fx->mb.path[mb], false), 0);
		assert_int_equal(in >> mb & 1 ? unlink(b) : unlink(a), 0);
		g_free(a);
		g_free(b);
	}
	return p;
}

/* True if the members in `in` ran the operation one after the other in
 * member order, each once every member holds the record but those before
 * it, which had cleared theirs. */
static bool in_member_order(log_probe p, uint64_t in)
{
	for (int mb = 0; mb < N; mb++)
		if ((in >> mb & 1) && p.held[mb] != (in & ~((1ull << mb) - 1)))
			return false;
	return true;
}

/* Members fast enough for the relay: the steps are chained there, and no
 * member's operation runs before every member holds the record, the first
 * member's included.  Whether they are fast is the members' latency at the
 * time, which a busy machine can push past the threshold, so the test
 * makes every member relayed (memberio_force_relay); of up to 20 renames
 * one must be chained, and in it every member runs after the members
 * before it cleared their copies and before those after it did.  Member
 * 3 failed beforehand takes no part. */
static void test_chained_steps_in_order(void **state)
{
	fixture *fx = *state;
	memberio_force_relay(volume_memberio(fx->v), true);
	bool chained = false;
	for (int i = 0; i < 20 && !chained; i++)
		chained = in_member_order(probed_rename(fx, ALL), ALL);
	assert_true(chained);

	volume_member_error(fx->v, 3, EIO, "test");
	chained = false;
	for (int i = 0; i < 20 && !chained; i++)
		chained = in_member_order(probed_rename(fx, ALL & ~0x08ull), ALL & ~0x08ull);
	assert_true(chained);
}

/* What the volume's refresh (volume_set_refresh) saw: the directories, in
 * order, whether the operation had already run on every member, and the
 * members whose descriptor of the directory it was given (held: each a
 * directory open, of the inode the member's path names). */
static struct {
	fixture *fx;
	const char *gone, *made; /* absent, present on every member by then */
	int count;
	char dirs[4][16];
	bool done[4];
	uint64_t held[4];
} seen;

static void note_refresh(const char *dir, const volume_dir_at *at)
{
	const int *fds = at ? at->fds : NULL;
	uint64_t held = at ? at->held : 0;
	if (seen.count >= 4)
		return;
	snprintf(seen.dirs[seen.count], sizeof(seen.dirs[0]), "%s", dir);
	seen.done[seen.count] = (!seen.gone || present(seen.fx, seen.gone) == 0) &&
	                        present(seen.fx, seen.made) == ALL;
	for (int mb = 0; fds && mb < N; mb++) {
		struct stat by_fd, by_path;
		char *path = g_strconcat(seen.fx->mb.path[mb], dir, NULL);
		if ((held >> mb & 1) && fstat(fds[mb], &by_fd) == 0 && S_ISDIR(by_fd.st_mode) &&
		    stat(path, &by_path) == 0 && by_fd.st_ino == by_path.st_ino)
			seen.held[seen.count] |= 1ull << mb;
		g_free(path);
	}
	seen.count++;
}

/* A chained operation's last task refreshes the directories it changed,
 * once it has run on every member: both parents of a rename, one for a
 * rename within a directory, the root for a new directory; nothing after
 * a refusal. */
static void test_chain_refreshes_parents(void **state)
{
	fixture *fx = *state;
	memberio_force_relay(volume_memberio(fx->v), true);
	volume_set_refresh(fx->v, note_refresh);
	calls c = { .v = fx->v };
	seen = (__typeof__(seen)){ .fx = fx, .made = "/a" };
	intent_args mk = { INTENT_MKDIR, .from = "/a", .mode = 0755, .uid = (uid_t)-1,
	                   .gid = (gid_t)-1 };
	assert_int_equal(mirror_apply_logged(fx->v, &mk, mop_mkdir_fn, NULL, &c, "mkdir"), 0);
	assert_int_equal(seen.count, 1);
	assert_string_equal(seen.dirs[0], "/");
	assert_true(seen.done[0]);
	assert_int_equal(seen.held[0], ALL); /* one parent: by the chain's descriptors */

	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/a/x", "X");
	seen = (__typeof__(seen)){ .fx = fx, .gone = "/a/x", .made = "/y" };
	intent_args mv = { INTENT_RENAME, .from = "/a/x", .to = "/y" };
	assert_int_equal(mirror_apply_logged(fx->v, &mv, NULL, rename_fn, &c, "rename"), 0);
	assert_int_equal(seen.count, 2);
	assert_string_equal(seen.dirs[0], "/a");
	assert_string_equal(seen.dirs[1], "/");
	assert_true(seen.done[0] && seen.done[1]);
	assert_int_equal(seen.held[0] | seen.held[1], 0); /* two: by their paths */

	seen = (__typeof__(seen)){ .fx = fx, .gone = "/y", .made = "/z" };
	intent_args mv2 = { INTENT_RENAME, .from = "/y", .to = "/z" };
	assert_int_equal(mirror_apply_logged(fx->v, &mv2, NULL, rename_fn, &c, "rename"), 0);
	assert_int_equal(seen.count, 1);
	assert_string_equal(seen.dirs[0], "/");
	assert_true(seen.done[0]);

	seen = (__typeof__(seen)){ .fx = fx, .made = "/z" };
	intent_args mv3 = { INTENT_RENAME, .from = "/z", .to = "/a", .flags = RENAME_NOREPLACE };
	assert_int_equal(mirror_apply_logged(fx->v, &mv3, NULL, rename_noreplace_fn, &c, "rename"),
	                 -EEXIST);
	assert_int_equal(seen.count, 0);
	volume_set_refresh(fx->v, NULL);
}

/* The member's stamp of its directory at path now. */
static dirstamp stamp_at(fixture *fx, int mb, const char *rel)
{
	struct stat st;
	char *p = member_path(&fx->mb, mb, rel);
	assert_int_equal(stat(p, &st), 0);
	g_free(p);
	dirstamp s;
	dirstamp_of(&st, &s);
	return s;
}

static int mop_unlink_fn(int member, int dirfd, const char *leaf, void *arg)
{
	int rc = mop_unlinkat(((calls *)arg)->v, member, dirfd, leaf, 0);
	note(arg, member);
	return rc;
}

/* What the refresh was given of the fstats taken after the change: the
 * members whose stat it got, those of them the same as the directory's
 * stamp at the refresh, and what objects_dir_stat_at answers from it. */
static struct {
	fixture *fx;
	uint64_t seen, current;
	int rc;
	struct stat st;
} after;

static void note_after(const char *dir, const volume_dir_at *at)
{
	if (!at)
		return;
	after.seen = at->seen_mask;
	for (int mb = 0; mb < N; mb++) {
		dirstamp s, now = stamp_at(after.fx, mb, "/a");
		dirstamp_of(&at->seen[mb], &s);
		if ((at->seen_mask >> mb & 1) && dirstamp_same(&s, &now))
			after.current |= 1ull << mb;
	}
	after.rc = objects_dir_stat_at(after.fx->v, dir, at, &after.st);
}

/* A chained unlink in a directory the daemon knows on every member hands
 * the refresh each member's fstat of it taken right after the unlink
 * (mop_dir_after), and objects_dir_stat_at answers from those while the
 * daemon still knows the directory at their stamps, and by fstat once a
 * change of it moved them. */
static void test_chain_refresh_takes_the_stats_after(void **state)
{
	fixture *fx = *state;
	calls c = { .v = fx->v };
	memberio_force_relay(volume_memberio(fx->v), true);
	mop_keep_dirstamps(fx->v);
	dirstamps *ds = mop_dirstamps(fx->v);
	for (int mb = 0; mb < N; mb++) {
		char *p = member_path(&fx->mb, mb, "/a");
		assert_int_equal(mkdir(p, 0755), 0);
		g_free(p);
		put_member_file(&fx->mb, mb, "/a/x", "X");
		put_member_file(&fx->mb, mb, "/a/y", "Y");
		dirstamp s = stamp_at(fx, mb, "/a");
		dirstamps_known(ds, mb, &s);
	}
	after = (__typeof__(after)){ .fx = fx, .rc = 1 };
	volume_set_refresh(fx->v, note_after);
	intent_args rm = { INTENT_UNLINK, .from = "/a/x" };
	assert_int_equal(mirror_apply_logged(fx->v, &rm, mop_unlink_fn, NULL, &c, "unlink"), 0);
	volume_set_refresh(fx->v, NULL);
	assert_present(fx, "/a/x", 0);
	assert_int_equal(after.seen, ALL);
	assert_int_equal(after.current, ALL);
	assert_int_equal(after.rc, 0);
	assert_true(S_ISDIR(after.st.st_mode));

	/* Taken from the stats given: a field fstat would answer otherwise. */
	int fds[N];
	struct stat given[N];
	for (int mb = 0; mb < N; mb++) {
		char *p = member_path(&fx->mb, mb, "/a");
		fds[mb] = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(fds[mb] >= 0);
		assert_int_equal(fstat(fds[mb], &given[mb]), 0);
		given[mb].st_blksize = 12345;
		g_free(p);
	}
	volume_dir_at at = { fds, ALL, given, ALL };
	struct stat st;
	assert_int_equal(objects_dir_stat_at(fx->v, "/a", &at, &st), 0);
	assert_int_equal(st.st_blksize, 12345);
	/* a change the daemon made since: its stamps moved, fstat answers */
	assert_int_equal(mop_unlinkat(fx->v, 0, fds[0], "y", 0), 0);
	assert_int_equal(objects_dir_stat_at(fx->v, "/a", &at, &st), 0);
	assert_int_not_equal(st.st_blksize, 12345);
	for (int mb = 0; mb < N; mb++)
		close(fds[mb]);
}

/* A member slower than the relay's threshold (1 ms per call): the steps go
 * in rounds, the slow member's on its own worker.  The first member then
 * runs the operation right after its own copy, before the others hold
 * theirs (the round of the copies), and the others only once all do. */
static void test_rounds_with_a_slow_member(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	fixture *fx = *state;
	open_with_faults(fx, "member=5,delay=1");
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 0); /* member 5's calls timed */
	assert_true(memberio_latency_us(volume_memberio(fx->v), 5) >= MEMBERIO_RELAY_US);
	log_probe p = probed_rename(fx, ALL);
	assert_int_equal(p.held[0] & 1, 1);
	assert_int_not_equal(p.held[0], ALL);
	assert_int_equal(failed_members(fx), 0);
#else
	(void)state;
	skip();
#endif
}

#ifdef ECFS_FAULT_INJECTION
/* The rules of test_parallel_rules with member 5 slower than the relay's
 * threshold (1 ms per call), on a rename. */
static void rules_with_member_5_slow(fixture *fx)
{
	for (size_t i = 0; i < sizeof(apply_rules) / sizeof(apply_rules[0]); i++) {
		const rule_case *r = &apply_rules[i];
		bool unusable = __builtin_popcountll(r->failed) > M;
		open_with_faults(fx, "member=5,delay=1");
		/* a member failed in the case before kept its copy of the intent */
		assert_true(intent_replay(fx->v, NULL, NULL) >= 0);
		intent_args a = { INTENT_RENAME, .from = "/x", .to = "/y" };
		calls c = { 0 };
		memcpy(c.rc, r->rc, sizeof(c.rc));
		int answer = mirror_apply_logged(fx->v, &a, scripted, scripted2, &c, "test");
		if (answer != r->answer || c.ran != (unusable ? 0x0f : r->ran) ||
		    failed_members(fx) != r->failed)
			fail_msg("case %zu: answer %d, ran %#llx, failed %#llx", i, answer,
			         (unsigned long long)c.ran, (unsigned long long)failed_members(fx));
		for (int mb = 0; mb < N && !unusable; mb++)
			if (volume_member_ok(fx->v, mb) && intent_log_slots(fx->mb.path[mb], false))
				fail_msg("case %zu: member %d keeps the intent", i, mb);
	}
	test_volume_reopen(fx);
}
#endif

/* The rules of test_parallel_rules in rounds (member 5 slow). */
static void test_rounds_rules(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	rules_with_member_5_slow(*state);
#else
	(void)state;
	skip();
#endif
}

/* The chain with member 5's tasks on its own worker (slower than the
 * relay's threshold, chained all the same: mirror_chain_always), where
 * they run beside the relay's, in any order against them: the tasks that
 * find their turn not come wait for the catch-up, and the steps keep
 * their order: no member runs the operation before every member holds
 * the record.  The rules of test_parallel_rules hold too. */
static void test_chain_out_of_order(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	fixture *fx = *state;
	mirror_chain_always = true;
	for (int i = 0; i < 5; i++) {
		open_with_faults(fx, "member=5,delay=1");
		assert_true(intent_replay(fx->v, NULL, NULL) >= 0);
		/* member 0 decides, once every member holds the record */
		assert_int_equal(probed_rename(fx, ALL).held[0], ALL);
		assert_int_equal(failed_members(fx), 0);
	}
	rules_with_member_5_slow(fx);
	mirror_chain_always = false;
#else
	(void)state;
	skip();
#endif
}

/* A sync fault on member 3 as it writes its copy of the intent (written
 * and synced in one call, mop_pwrite_dsync): the copy is written but not
 * synced, the member is failed and takes no part, the others rename; a
 * lost sync (errno 0) fails nothing. */
static void test_copy_sync_fault(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	fixture *fx = *state;
	intent_args mv = { INTENT_RENAME, .from = "/a", .to = "/b" };
	calls c = { .v = fx->v };

	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/a", "A");
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 0); /* the logs made */
	open_with_faults(fx, "member=3,op=sync,errno=EIO");
	c.v = fx->v;
	assert_int_equal(mirror_apply_logged(fx->v, &mv, NULL, mop_rename_fn, &c, "rename"), 0);
	assert_int_equal(failed_members(fx), 0x08);
	assert_present(fx, "/b", ALL & ~0x08ull);
	assert_present(fx, "/a", 0x08);
	assert_int_not_equal(intent_log_slots(fx->mb.path[3], false), 0);
	test_volume_reopen(fx);
	assert_int_equal(intent_replay(fx->v, NULL, NULL), 1);
	assert_present(fx, "/b", ALL);
	assert_no_intent(fx);

	intent_args back = { INTENT_RENAME, .from = "/b", .to = "/a" };
	open_with_faults(fx, "member=3,op=sync,errno=0");
	c = (calls){ .v = fx->v };
	assert_int_equal(mirror_apply_logged(fx->v, &back, NULL, mop_rename_fn, &c, "rename"), 0);
	assert_int_equal(failed_members(fx), 0);
	assert_present(fx, "/a", ALL);
	assert_no_intent(fx);
	test_volume_reopen(fx);
#else
	(void)state;
	skip();
#endif
}

/* ---- one query on every member at once ---- */

/* mirror_gather with every member's argument c. */
static uint64_t gather(fixture *fx, calls *c, int *err)
{
	void *args[N];
	for (int mb = 0; mb < N; mb++)
		args[mb] = c;
	return mirror_gather(fx->v, "/", scripted, args, 64, err, "readdir");
}

/* Every member in service is asked; a member lacking the object or
 * answering otherwise gives nothing; every member lacking it is ENOENT;
 * a broken member is failed and gives nothing; a member being rebuilt is
 * not asked.  With a timeout, the same (the members asked at once). */
static void test_gather_rules(void **state)
{
	fixture *fx = *state;
	calls c = { .v = fx->v };
	int err = 0;

	assert_int_equal(gather(fx, &c, &err), ALL);
	assert_int_equal(c.ran, ALL);

	c = (calls){ .v = fx->v, .rc = { [0] = -ENOENT, [2] = -ENOTDIR } };
	assert_int_equal(gather(fx, &c, &err), ALL & ~0x05ull);
	assert_int_equal(c.ran, ALL);

	for (int mb = 0; mb < N; mb++)
		c.rc[mb] = mb == 4 ? -EACCES : -ENOENT;
	c.ran = 0;
	assert_int_equal(gather(fx, &c, &err), 0);
	assert_int_equal(err, -EACCES);
	c.rc[4] = -ENOENT;
	assert_int_equal(gather(fx, &c, &err), 0);
	assert_int_equal(err, -ENOENT);
	assert_int_equal(failed_members(fx), 0);

	c = (calls){ .v = fx->v, .rc = { [1] = -EIO } };
	assert_int_equal(gather(fx, &c, &err), ALL & ~0x02ull);
	assert_int_equal(failed_members(fx), 0x02);

	rm_tree(fx->mb.path[3]);
	assert_int_equal(mkdir(fx->mb.path[3], 0755), 0);
	assert_int_equal(volume_member_error(fx->v, 3, EIO, "test"), true);
	assert_int_equal(volume_member_revive(fx->v, 3), 1);
	assert_false(volume_member_answers(fx->v, 3));
	c = (calls){ .v = fx->v };
	assert_int_equal(gather(fx, &c, &err), ALL & ~0x0aull);
	assert_int_equal(c.ran, ALL & ~0x0aull);
}

#define T(fn) \
	cmocka_unit_test_prestate_setup_teardown(fn, test_volume_setup, test_volume_teardown, \
	                                         (void *)&opts)

#define TT(fn) \
	cmocka_unit_test_prestate_setup_teardown(fn, test_volume_setup, test_volume_teardown, \
	                                         (void *)&opts_timeout)

int main(void)
{
	ecfs_log_init("test_mirror", false, false);
	const struct CMUnitTest tests[] = {
		T(test_all_members_agree),
		T(test_paths_stay_beneath_the_root),
		T(test_apply_rules),
		T(test_query_rules),
		T(test_entry_missing_on_one_member),
		T(test_query_reads_one_member),
		T(test_failed_member_left_alone),
		T(test_member_errors_propagate),
		T(test_healing_member),
		T(test_rename_and_link),
		T(test_logged_operations),
		TT(test_parallel_rules),
		TT(test_parallel_refusal_touches_no_other_member),
		TT(test_parallel_rename_with_a_hung_member),
		TT(test_chained_steps_in_order),
		TT(test_chain_refreshes_parents),
		TT(test_chain_refresh_takes_the_stats_after),
		TT(test_rounds_with_a_slow_member),
		TT(test_rounds_rules),
		TT(test_chain_out_of_order),
		TT(test_copy_sync_fault),
		TT(test_apply_rules),
		TT(test_apply_rules_relayed),
		TT(test_entry_missing_on_one_member),
		T(test_gather_rules),
		TT(test_gather_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
