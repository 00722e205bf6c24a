/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the metadata paths (src/core/volume/volume_paths.c): a
 * directory opened one component at a time beneath a directory fd, by
 * openat2 and by the walk, refuses a symlink or a file at every depth and
 * takes real directories; a member whose .ecfs or a directory in it is a
 * symlink is failed at open with the path as its reason, one whose
 * .ecfs/intent turns into a symlink while open is failed at the next
 * metadata open, and nothing is ever made in the link's target.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "core_test_util.h"
#include "volume_internal.h"
#include "volume_paths.h"

typedef struct {
	members mb;
	char *outside; /* a directory outside every member: links point here */
} fixture;

static int setup(void **state)
{
	fixture *fx = g_new0(fixture, 1);
	members_make(&fx->mb, 6);
	fx->outside = g_build_filename(fx->mb.root, "outside", NULL);
	assert_int_equal(g_mkdir_with_parents(fx->outside, 0700), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;
	members_remove(&fx->mb);
	g_free(fx->outside);
	g_free(fx);
	return 0;
}

/* Number of entries in dir. */
static int entries(const char *dir)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	int count = 0;
	assert_non_null(d);
	while (g_dir_read_name(d))
		count++;
	g_dir_close(d);
	return count;
}

typedef int (*opener)(int dirfd, const char *dir);

static void expect_dir(opener open_dir, int rootfd, const char *dir)
{
	int fd = open_dir(rootfd, dir);
	if (fd < 0)
		fail_msg("%s refused: %s", dir, g_strerror(-fd));
	close(fd);
}

/* Real directories a/b/c are taken at every depth; a symlink (to a copy
 * of the rest of the path outside) or a file in place of any of them is
 * refused with ENOTDIR, and ".." never climbs out. */
static void check_depths(fixture *fx, opener open_dir)
{
	static const char *const paths[] = { "a", "a/b", "a/b/c" };
	char *base = fx->mb.path[0];
	int rootfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(rootfd >= 0);
	char *deep = g_build_filename(base, "a", "b", "c", NULL);
	char *out_deep = g_build_filename(fx->outside, "b", "c", NULL);
	assert_int_equal(g_mkdir_with_parents(deep, 0700), 0);
	assert_int_equal(g_mkdir_with_parents(out_deep, 0700), 0);

	for (int d = 0; d < 3; d++)
		expect_dir(open_dir, rootfd, paths[d]);
	for (int d = 0; d < 3; d++) {
		char *real = g_build_filename(base, paths[d], NULL);
		char *aside = g_strconcat(real, ".aside", NULL);
		assert_int_equal(rename(real, aside), 0);
		/* the link's target holds the rest of the path: followed, the
		 * open would succeed */
		assert_int_equal(symlink(fx->outside, real), 0);
		for (int e = d; e < 3; e++)
			assert_int_equal(open_dir(rootfd, paths[e]), -ENOTDIR);
		assert_int_equal(unlink(real), 0);
		assert_int_equal(g_file_set_contents(real, "x", 1, NULL), TRUE);
		for (int e = d; e < 3; e++)
			assert_int_equal(open_dir(rootfd, paths[e]), -ENOTDIR);
		assert_int_equal(unlink(real), 0);
		assert_int_equal(rename(aside, real), 0);
		g_free(real);
		g_free(aside);
	}
	assert_int_equal(open_dir(rootfd, "a/missing"), -ENOENT);
	assert_true(open_dir(rootfd, "..") < 0);
	assert_true(open_dir(rootfd, "a/../..") < 0);
	for (int d = 0; d < 3; d++)
		expect_dir(open_dir, rootfd, paths[d]);
	close(rootfd);
	g_free(deep);
	g_free(out_deep);
}

static void test_dir_beneath_each_depth(void **state)
{
	check_depths(*state, volume_dir_beneath);
}

static void test_dir_walk_each_depth(void **state)
{
	check_depths(*state, volume_dir_walk);
}

static int open_volume(fixture *fx, volume **v, char **msg)
{
	volume_options o = { .geometry = { .k = 4, .m = 2 } };
	*msg = NULL;
	return volume_open((const char *const *)fx->mb.path, 6, &o, v, msg);
}

/* member 1's .ecfs/<name> (or .ecfs itself for NULL) replaced by a
 * symlink to the outside directory; the volume opens with member 1
 * failed for a reason that names the path, and nothing lands outside. */
static void check_link_at_open(fixture *fx, const char *name, const char *shown)
{
	volume *v;
	char *msg;
	assert_int_equal(open_volume(fx, &v, &msg), 0);
	volume_close(v);
	char *meta = g_build_filename(fx->mb.path[1], ECFS_META_DIR, name, NULL);
	rm_tree(meta);
	assert_int_equal(symlink(fx->outside, meta), 0);

	assert_int_equal(open_volume(fx, &v, &msg), 0);
	assert_false(volume_member_ok(v, 1));
	char *health = volume_health_text(v);
	if (!strstr(health, shown) || !strstr(health, "symlink"))
		fail_msg("the reason does not name %s:\n%s", shown, health);
	g_free(health);
	/* the open's own metadata: the intent log, a journal */
	assert_int_equal(volume_meta_open(v, 1, volume_root_fd(v, 1), ECFS_META_DIR "/intent/log",
	                                  O_RDWR | O_CREAT | O_CLOEXEC, 0600) < 0, true);
	volume_close(v);
	assert_int_equal(entries(fx->outside), 0);
	g_free(meta);
}

static void test_symlinked_meta_dir_fails_member(void **state)
{
	fixture *fx = *state;
	check_link_at_open(fx, "intent", ECFS_META_DIR "/intent");
}

static void test_symlinked_journal_dir_fails_member(void **state)
{
	fixture *fx = *state;
	check_link_at_open(fx, "journal", ECFS_META_DIR "/journal");
}

static void test_symlinked_ecfs_fails_member(void **state)
{
	fixture *fx = *state;
	check_link_at_open(fx, NULL, ECFS_META_DIR " is a symlink");
}

/* A link made while the volume is open: the next metadata open refuses
 * it, fails the member with the path as the reason, makes nothing. */
static void test_link_while_open(void **state)
{
	fixture *fx = *state;
	volume *v;
	char *msg;
	assert_int_equal(open_volume(fx, &v, &msg), 0);
	char *intent = g_build_filename(fx->mb.path[0], ECFS_META_DIR, "intent", NULL);
	rm_tree(intent);
	assert_int_equal(symlink(fx->outside, intent), 0);
	int root = volume_root_fd(v, 0);

	assert_int_equal(volume_meta_mkdirat(v, 0, root, ECFS_META_DIR "/intent", 0700), -EEXIST);
	assert_true(volume_member_ok(v, 0));
	assert_int_equal(volume_meta_open(v, 0, root, ECFS_META_DIR "/intent/log",
	                                  O_RDWR | O_CREAT | O_CLOEXEC, 0600), -EIO);
	assert_false(volume_member_ok(v, 0));
	char *health = volume_health_text(v);
	if (!strstr(health, "member.0=failed") || !strstr(health, ECFS_META_DIR "/intent"))
		fail_msg("the reason does not name .ecfs/intent:\n%s", health);
	g_free(health);
	/* a symlinked file is refused too, on another member */
	char *jdir = g_build_filename(fx->mb.path[2], ECFS_META_DIR, "journal", NULL);
	char *target = g_build_filename(fx->outside, "j", NULL);
	assert_int_equal(g_mkdir_with_parents(jdir, 0700), 0);
	char *file = g_build_filename(jdir, "f", NULL);
	assert_int_equal(symlink(target, file), 0);
	assert_int_equal(volume_meta_open(v, 2, volume_root_fd(v, 2),
	                                  ECFS_META_DIR "/journal/f",
	                                  O_RDWR | O_CREAT | O_CLOEXEC, 0600), -EIO);
	assert_false(volume_member_ok(v, 2));
	volume_close(v);
	assert_int_equal(entries(fx->outside), 0);
	g_free(intent);
	g_free(jdir);
	g_free(target);
	g_free(file);
}

/* With repair the links lose their place, never their targets'
 * content; real directories are left alone. */
static void test_unlink_links(void **state)
{
	fixture *fx = *state;
	volume *v;
	char *msg;
	assert_int_equal(open_volume(fx, &v, &msg), 0);
	char *journal = g_build_filename(fx->mb.path[3], ECFS_META_DIR, "journal", NULL);
	char *missed = g_build_filename(fx->mb.path[3], ECFS_META_DIR, "missed", NULL);
	char *kept = g_build_filename(fx->outside, "kept", NULL);
	assert_int_equal(g_file_set_contents(kept, "k", 1, NULL), TRUE);
	rm_tree(journal);
	assert_int_equal(symlink(fx->outside, journal), 0);
	assert_int_equal(g_mkdir_with_parents(missed, 0700), 0);

	assert_int_equal(volume_meta_unlink_links(v, 3, volume_root_fd(v, 3)), 0);
	struct stat st;
	assert_int_equal(lstat(journal, &st), -1);
	assert_int_equal(lstat(missed, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(entries(fx->outside), 1);
	volume_close(v);
	g_free(journal);
	g_free(missed);
	g_free(kept);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dir_beneath_each_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_walk_each_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinked_meta_dir_fails_member, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinked_journal_dir_fails_member, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_symlinked_ecfs_fails_member, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_while_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlink_links, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
