/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of volume_open (src/core/volume/volume_open.c) on real member directories:
 * creation, reopening, members in the wrong order, foreign and duplicate
 * members, an empty member (replaced disk), too many missing members,
 * broken superblocks, superblocks that differ from the majority's, the
 * lock, and which members are synced.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "core_test_util.h"
#include "log.h"
#include "memberops.h"
#include "superblock.h"
#include "volume.h"
#include "volume_internal.h"

static int setup(void **state)
{
	members *mb = g_new0(members, 1);
	members_make(mb, 6);
	*state = mb;
	return 0;
}

static int teardown(void **state)
{
	members_remove(*state);
	g_free(*state);
	return 0;
}

static int open_paths(char **paths, int n, int k, int m, volume **v, char **msg)
{
	volume_options o = { .geometry = { .k = k, .m = m } };
	*msg = NULL;
	return volume_open((const char *const *)paths, n, &o, v, msg);
}

static void expect_refused(char **paths, int n, int k, int m, int err, const char *fragment)
{
	volume *v = NULL;
	char *msg = NULL;
	int rc = open_paths(paths, n, k, m, &v, &msg);

	if (rc != err)
		fail_msg("volume_open returned %d (%s), expected %d", rc, msg ? msg : "", err);
	assert_null(v);
	assert_non_null(msg);
	if (fragment && !strstr(msg, fragment))
		fail_msg("message '%s' lacks '%s'", msg, fragment);
	g_free(msg);
}

static void create(members *mb)
{
	volume *v;
	char *msg;
	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	volume_close(v);
}

static void test_create_and_reopen(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;

	expect_refused(mb->path, 6, 0, 0, -EINVAL, "k=");
	expect_refused(mb->path, 6, 4, 3, -EINVAL, "must equal");
	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	assert_int_equal(volume_k(v), 4);
	assert_int_equal(volume_m(v), 2);
	assert_int_equal(volume_n(v), 6);
	assert_int_equal(volume_failed_count(v), 0);
	assert_true(volume_usable(v));
	assert_int_equal(volume_defaults(v)->strip_size % 4096, 0);
	volume_close(v);
	for (int i = 0; i < 6; i++) {
		char *sb = g_strdup_printf("%s/.ecfs/superblock", mb->path[i]);
		size_t len;
		uint8_t *text = slurp(sb, &len);
		assert_non_null(text);
		char *want = g_strdup_printf("index=%d\n", i);
		assert_non_null(strstr((char *)text, want));
		g_free(want);
		g_free(text);
		g_free(sb);
	}
	/* Reopen without k, m: the superblock's; a different k is refused. */
	assert_int_equal(open_paths(mb->path, 6, 0, 0, &v, &msg), 0);
	assert_int_equal(volume_k(v), 4);
	char *health = volume_health_text(v);
	assert_non_null(strstr(health, "state=healthy\n"));
	assert_non_null(strstr(health, "members_failed=0\n"));
	/* the test members share one filesystem */
	assert_non_null(strstr(health, "same_filesystem=0,1,2,3,4,5\n"));
	g_free(health);
	volume_close(v);
	expect_refused(mb->path, 6, 3, 3, -EINVAL, "cannot change");
	expect_refused(mb->path, 5, 0, 0, -EINVAL, "6 members");
}

/* Opens with -o strip=strip (k=4, m=2): 0, or -EINVAL with msg
 * containing fragment. */
static int open_strip(members *mb, size_t strip, const char *fragment)
{
	volume_options o = { .geometry = { .k = 4, .m = 2 }, .files.strip_size = strip };
	volume *v = NULL;
	char *msg = NULL;
	int rc = volume_open((const char *const *)mb->path, 6, &o, &v, &msg);

	if (rc == 0)
		volume_close(v);
	else if (!msg || !strstr(msg, fragment))
		fail_msg("strip=%zu: %d '%s' lacks '%s'", strip, rc, msg ? msg : "", fragment);
	g_free(msg);
	return rc;
}

/* The largest strip a volume's files may have: 64 MiB, or the
 * superblock's if larger, never above 1 GiB (a header naming more is
 * refused as corrupt, so the volume never writes one). */
static void test_strip_bound(void **state)
{
	members *mb = *state;

	/* a volume is not made with strips a header may not name */
	assert_int_equal(open_strip(mb, (size_t)2 << 30, "at most"), -EINVAL);
	assert_int_equal(open_strip(mb, (size_t)1 << 30, ""), 0); /* created: 1 GiB strips */
	assert_int_equal(open_strip(mb, (size_t)512 << 20, ""), 0);
	members_remove(mb);
	members_make(mb, 6);
	assert_int_equal(open_strip(mb, 65536, ""), 0); /* created: 64 KiB strips */
	assert_int_equal(open_strip(mb, (size_t)64 << 20, ""), 0);
	assert_int_equal(open_strip(mb, ((size_t)64 << 20) + 65536, "at most"), -EINVAL);
}

/* The code cache holds VOLUME_CODES_MAX parameter sets; headers naming
 * more do not grow it (their files have no code). */
static void test_code_cache_bound(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;
	const ec_code *first = NULL;

	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	int cached = 0;
	for (int i = 0; i < 2 * VOLUME_CODES_MAX; i++) {
		ec_params p = { .kind = EC_CAUCHY_GOOD, .k = 4, .m = 2, .w = 8,
		                .packet_size = (size_t)64 * (size_t)(i + 1) };
		const ec_code *c = volume_code(v, &p);
		if (i == 0)
			first = c;
		cached += c != NULL;
	}
	/* the volume's own set was cached at open */
	assert_int_equal(cached, VOLUME_CODES_MAX - 1);
	ec_params p = { .kind = EC_CAUCHY_GOOD, .k = 4, .m = 2, .w = 8, .packet_size = 64 };
	assert_ptr_equal(volume_code(v, &p), first); /* a cached set stays */
	assert_non_null(first);
	volume_close(v);
}

static void test_wrong_order(void **state)
{
	members *mb = *state;
	char *rev[6];
	volume *v;
	char *msg;

	create(mb);
	for (int i = 0; i < 6; i++)
		rev[i] = mb->path[5 - i];
	assert_int_equal(open_paths(rev, 6, 0, 0, &v, &msg), 0);
	for (int i = 0; i < 6; i++)
		assert_string_equal(volume_member_path(v, i), mb->path[i]);
	volume_close(v);
}

static void test_foreign_and_duplicate_members(void **state)
{
	members *mb = *state, other;
	char *mix[6];
	volume *v;
	char *msg;

	create(mb);
	members_make(&other, 6);
	assert_int_equal(open_paths(other.path, 6, 3, 3, &v, &msg), 0);
	volume_close(v);
	memcpy(mix, mb->path, sizeof(mix));
	mix[4] = other.path[4];
	expect_refused(mix, 6, 0, 0, -EINVAL, other.path[4]);
	expect_refused(mix, 6, 0, 0, -EINVAL, "another volume");
	memcpy(mix, mb->path, sizeof(mix));
	mix[2] = mb->path[1];
	expect_refused(mix, 6, 0, 0, -EINVAL, "index 1");
	members_remove(&other);

	/* A directory with files but no volume is never taken over. */
	char *p = g_strdup_printf("%s/x", mb->root);
	mkdir(p, 0755);
	char *f = g_strdup_printf("%s/user-file", p);
	g_file_set_contents(f, "hello", 5, NULL);
	mix[0] = p;
	memcpy(mix + 1, mb->path + 1, sizeof(char *) * 5);
	expect_refused(mix, 6, 0, 0, -EINVAL, "not empty (1 entry: user-file)");
	g_free(f);
	g_free(p);
}

static void test_empty_member_is_replaced_disk(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;

	create(mb);
	rm_tree(mb->path[2]);
	mkdir(mb->path[2], 0755);
	assert_int_equal(open_paths(mb->path, 6, 0, 0, &v, &msg), 0);
	assert_false(volume_member_ok(v, 2));
	assert_int_equal(volume_failed_count(v), 1);
	char *health = volume_health_text(v);
	assert_non_null(strstr(health, "state=degraded\n"));
	assert_non_null(strstr(health, "member.2=failed"));
	assert_non_null(strstr(health, "replaced disk"));
	g_free(health);
	volume_close(v);
}

/* lost+found, which mkfs leaves at a filesystem's root, is no content:
 * members holding only it make a volume, and one among formatted members
 * is a replaced disk. */
static void test_lost_found_is_empty(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;

	for (int i = 0; i < 6; i++) {
		char *lf = g_strdup_printf("%s/lost+found", mb->path[i]);
		assert_int_equal(mkdir(lf, 0700), 0);
		g_free(lf);
	}
	create(mb);
	rm_tree(mb->path[4]);
	mkdir(mb->path[4], 0755);
	char *lf = g_strdup_printf("%s/lost+found", mb->path[4]);
	assert_int_equal(mkdir(lf, 0700), 0);
	assert_int_equal(open_paths(mb->path, 6, 0, 0, &v, &msg), 0);
	assert_false(volume_member_ok(v, 4));
	char *health = volume_health_text(v);
	assert_non_null(strstr(health, "replaced disk"));
	g_free(health);
	volume_close(v);
	g_free(lf);
}

static void test_too_many_missing(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;

	create(mb);
	rm_tree(mb->path[1]);
	rm_tree(mb->path[3]);
	assert_int_equal(open_paths(mb->path, 6, 0, 0, &v, &msg), 0);
	assert_int_equal(volume_failed_count(v), 2);
	volume_close(v);
	rm_tree(mb->path[5]);
	expect_refused(mb->path, 6, 0, 0, -EIO, mb->path[5]);
	expect_refused(mb->path, 6, 0, 0, -EIO, "more than m=2");
}

static void test_broken_superblocks(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;

	create(mb);
	char *sb = g_strdup_printf("%s/.ecfs/superblock", mb->path[4]);
	g_file_set_contents(sb, "\x7f garbage \x01", 11, NULL);
	assert_int_equal(open_paths(mb->path, 6, 0, 0, &v, &msg), 0);
	assert_false(volume_member_ok(v, 4));
	volume_close(v);
	/* A version this build cannot read is refused outright. */
	size_t len;
	char *good = g_strdup_printf("%s/.ecfs/superblock", mb->path[0]);
	char *text = (char *)slurp(good, &len);
	char *p = strstr(text, "format=" G_STRINGIFY(SUPERBLOCK_VERSION));
	p[7] = '9';
	g_file_set_contents(sb, text, (gssize)len, NULL);
	expect_refused(mb->path, 6, 0, 0, -EPROTO, "version 9");
	g_free(text);
	g_free(good);
	g_free(sb);
}

/* Member i's superblock text with the line of key given value. */
static void set_superblock_key(members *mb, int i, const char *key, const char *value)
{
	char *sb = g_strdup_printf("%s/.ecfs/superblock", mb->path[i]);
	char *pat = g_strdup_printf("\n%s=", key);
	size_t len;
	char *text = (char *)slurp(sb, &len);
	char *at = strstr(text, pat);

	assert_non_null(at);
	char *end = strchr(at + 1, '\n');
	char *out = g_strdup_printf("%.*s\n%s=%s%s", (int)(at - text), text, key, value,
	                            end ? end : "");
	assert_true(g_file_set_contents(sb, out, -1, NULL));
	g_free(out);
	g_free(text);
	g_free(pat);
	g_free(sb);
}

static void assert_failed_for(volume *v, int i, const char *what)
{
	char *health = volume_health_text(v);
	char *key = g_strdup_printf("member.%d=failed", i);
	const char *line = strstr(health, key);

	assert_false(volume_member_ok(v, i));
	if (!line || !strstr(line, what) || !strstr(line, "not followed"))
		fail_msg("member %d is not failed for its %s: %s", i, what, health);
	g_free(key);
	g_free(health);
}

#define KEY_A "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#define KEY_B "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"

/* A superblock that differs from the one most members carry fails its
 * member, also the first member's (whose key was once taken for the
 * volume's), and sits in its own place; with no majority the open is
 * refused, naming the members and what differs. */
static void test_superblock_differs_from_majority(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg, *sb3 = g_strdup_printf("%s/.ecfs/superblock", mb->path[3]);
	size_t len;

	create(mb);
	char *orig3 = (char *)slurp(sb3, &len);
	set_superblock_key(mb, 0, "checksum_key", KEY_A);
	set_superblock_key(mb, 5, "k", "3");
	set_superblock_key(mb, 5, "m", "3");
	assert_int_equal(open_paths(mb->path, 6, 0, 0, &v, &msg), 0);
	assert_int_equal(volume_failed_count(v), 2);
	assert_failed_for(v, 0, "checksum key");
	assert_failed_for(v, 5, "geometry");
	assert_int_equal(volume_k(v), 4);
	for (int i = 0; i < 6; i++)
		assert_string_equal(volume_member_path(v, i), mb->path[i]);
	volume_close(v);

	/* a third member differing: the original is no majority any more */
	set_superblock_key(mb, 3, "strip_size", "8192");
	expect_refused(mb->path, 6, 0, 0, -EINVAL, "no superblock is carried by a majority");
	expect_refused(mb->path, 6, 0, 0, -EINVAL, mb->path[3]);
	expect_refused(mb->path, 6, 0, 0, -EINVAL, "differs in code defaults");
	assert_true(g_file_set_contents(sb3, orig3, (gssize)len, NULL));

	/* three against three */
	set_superblock_key(mb, 5, "k", "4");
	set_superblock_key(mb, 5, "m", "2");
	for (int i = 0; i < 6; i++)
		set_superblock_key(mb, i, "checksum_key", i < 3 ? KEY_A : KEY_B);
	expect_refused(mb->path, 6, 0, 0, -EINVAL, "m5 carry one that differs in checksum key");
	g_free(orig3);
	g_free(sb3);
}

static void test_lock(void **state)
{
	members *mb = *state;
	volume *v, *v2;
	char *msg;
	char want[64];

	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	snprintf(want, sizeof(want), "in use by pid %ld on ", (long)getpid());
	expect_refused(mb->path, 6, 0, 0, -EBUSY, want); /* at once: not closing */
	volume_close(v);
	/* Closing released it. */
	assert_int_equal(open_paths(mb->path, 6, 0, 0, &v2, &msg), 0);
	volume_close(v2);
}

/* A volume unmounted and closing (volume_mark_closing), closed by this
 * thread after delay_ms. */
struct closer {
	volume *v;
	unsigned delay_ms;
};

static void *close_later(void *arg)
{
	struct closer *c = arg;
	usleep(c->delay_ms * 1000);
	volume_close(c->v);
	return NULL;
}

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* `umount M && mount M`: an open that finds the locks held by a process
 * of this host that is closing the volume waits for them, up to the
 * member timeout; one held by a volume still open is refused at once. */
static void test_lock_of_a_closing_volume(void **state)
{
	members *mb = *state;
	volume_options o = { .run.timeout_ms = 5000 };
	struct closer c = { NULL, 300 };
	struct timespec t0;
	pthread_t th;
	volume *v2;
	char *msg = NULL;

	assert_int_equal(open_paths(mb->path, 6, 4, 2, &c.v, &msg), 0);
	volume_mark_closing(c.v);
	assert_int_equal(pthread_create(&th, NULL, close_later, &c), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = volume_open((const char *const *)mb->path, 6, &o, &v2, &msg);
	if (rc != 0)
		fail_msg("the open after a close returned %d: %s", rc, msg ? msg : "");
	assert_true(since(&t0) >= 0.25); /* it waited for the close */
	pthread_join(th, NULL);
	/* past the timeout, it gives up and says why */
	volume_mark_closing(v2);
	c = (struct closer){ v2, 1500 };
	assert_int_equal(pthread_create(&th, NULL, close_later, &c), 0);
	o.run.timeout_ms = 200;
	assert_int_equal(volume_open((const char *const *)mb->path, 6, &o, &v2, &msg), -EBUSY);
	assert_non_null(strstr(msg, "which is still closing it"));
	g_free(msg);
	pthread_join(th, NULL);
}

static void test_member_vanishes(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;
	const char *leaf;

	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	int fd = volume_parent_fd(v, 3, "/a/b", &leaf);
	assert_int_equal(fd, -ENOENT);
	assert_false(volume_member_error(v, 3, ENOENT, "test"));
	assert_true(volume_member_ok(v, 3));
	fd = volume_parent_fd(v, 3, "/x", &leaf);
	assert_true(fd >= 0);
	assert_string_equal(leaf, "x");
	close(fd);
	rm_tree(mb->path[3]);
	assert_true(volume_member_error(v, 3, ENOENT, "test"));
	assert_false(volume_member_ok(v, 3));
	assert_true(volume_member_error(v, 1, EIO, "test"));
	assert_true(volume_usable(v));
	assert_true(volume_member_error(v, 0, EROFS, "test"));
	assert_false(volume_usable(v));
	char *health = volume_health_text(v);
	assert_non_null(strstr(health, "state=failed\n"));
	g_free(health);
	volume_close(v);
}

static bool on_memory_fs(const char *path)
{
	struct statfs sf;

	assert_int_equal(statfs(path, &sf), 0);
	return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
}

/* Members on tmpfs keep nothing across a power loss: their syncs are not
 * made (an fsync of a bad descriptor "succeeds" there), while a member on
 * a disk (the temporary directory's, on these machines) syncs as asked
 * and gets EBADF. */
static void test_memory_only_members_skip_syncs(void **state)
{
	members *mb = *state;
	char *shm = g_strdup("/dev/shm/ecfs-volume-XXXXXX"), *paths[6];
	volume *v;
	char *msg;

	assert_non_null(g_mkdtemp(shm));
	assert_true(on_memory_fs(shm));
	for (int i = 0; i < 6; i++) {
		paths[i] = i < 3 ? g_strdup(mb->path[i]) : g_strdup_printf("%s/m%d", shm, i);
		assert_int_equal(g_mkdir_with_parents(paths[i], 0755), 0);
	}
	if (on_memory_fs(paths[0]))
		print_message("%s is on a memory filesystem too: no member here syncs\n", paths[0]);
	assert_int_equal(open_paths(paths, 6, 4, 2, &v, &msg), 0);
	for (int i = 0; i < 6; i++)
		assert_int_equal(mop_fsync(v, i, -1, i % 2 == 0),
		                 on_memory_fs(paths[i]) ? 0 : -EBADF);
	volume_close(v);
	rm_tree(shm);
	for (int i = 0; i < 6; i++)
		g_free(paths[i]);
	g_free(shm);
}

/* Whether member i's .ecfs holds name. */
static bool meta_has(members *mb, int i, const char *name)
{
	char *p = g_strdup_printf("%s/.ecfs/%s", mb->path[i], name);
	bool has = g_file_test(p, G_FILE_TEST_EXISTS);
	g_free(p);
	return has;
}

/* The names are settled while every open was closed (a member failed
 * meanwhile included); an open that never closed (its lock text left, as
 * a killed daemon leaves it) marks them unsettled on every member, for
 * every later open, until settled again. */
static void test_names_unsettled_after_an_open_never_closed(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;

	create(mb);
	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	assert_true(volume_names_settled(v));
	assert_true(volume_member_error(v, 2, EIO, "test")); /* a failure is no crash */
	volume_close(v);
	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	assert_true(volume_names_settled(v));
	volume_close(v);
	char *lock = g_strdup_printf("%s/.ecfs/lock", mb->path[3]);
	gsize len = 1;
	char *text = NULL;
	assert_true(g_file_get_contents(lock, &text, &len, NULL));
	assert_int_equal(len, 0); /* emptied at close */
	g_free(text);
	assert_true(g_file_set_contents(lock, "pid=1 host=gone\n", -1, NULL));
	g_free(lock);

	for (int round = 0; round < 2; round++) {
		assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
		assert_false(volume_names_settled(v));
		for (int i = 0; i < 6; i++)
			assert_true(meta_has(mb, i, "unsettled"));
		volume_close(v); /* clean: the mark stays all the same */
	}
	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	assert_int_equal(volume_names_settle(v), 0);
	assert_true(volume_names_settled(v));
	volume_close(v);
	for (int i = 0; i < 6; i++)
		assert_false(meta_has(mb, i, "unsettled"));
	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	assert_true(volume_names_settled(v));
	volume_close(v);
}

static void test_paths(void **state)
{
	members *mb = *state;
	volume *v;
	char *msg;
	const char *leaf;

	(void)mb;
	assert_true(volume_path_reserved("/.ecfs"));
	assert_true(volume_path_reserved("/.ecfs/lock"));
	assert_false(volume_path_reserved("/.ecfsx"));
	assert_false(volume_path_reserved("/a/.ecfs"));
	assert_true(volume_path_reserved("/lost+found"));
	assert_true(volume_path_reserved("//lost+found/x"));
	assert_false(volume_path_reserved("/lost+found2"));
	assert_false(volume_path_reserved("/a/lost+found"));
	assert_true(volume_root_name_reserved("lost+found"));
	assert_true(volume_root_name_reserved(".ecfs"));
	assert_false(volume_root_name_reserved("lost"));
	assert_int_equal(open_paths(mb->path, 6, 4, 2, &v, &msg), 0);
	/* A symlink on a member never leads out of it. */
	char *link = g_strdup_printf("%s/out", mb->path[0]);
	assert_int_equal(symlink("/", link), 0);
	assert_true(volume_parent_fd(v, 0, "/out/etc", &leaf) < 0);
	g_free(link);
	int fd = volume_parent_fd(v, 0, "/", &leaf);
	assert_true(fd >= 0);
	assert_string_equal(leaf, ".");
	close(fd);
	struct statvfs st;
	assert_int_equal(volume_statfs(v, &st), 0);
	assert_true(st.f_blocks > 0);
	volume_close(v);
}

int main(void)
{
	ecfs_log_init("test_volume", false, false);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_and_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_code_cache_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strip_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_and_duplicate_members, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_member_is_replaced_disk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_found_is_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_many_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_broken_superblocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_superblock_differs_from_majority, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_of_a_closing_volume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_member_vanishes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names_unsettled_after_an_open_never_closed, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_memory_only_members_skip_syncs, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
