/* SPDX-License-Identifier: MIT */
/* What the daemon knows of its member directories (src/core/member/dirstamps.c)
 * and the namespace changes of memberops.c that keep it, on a real
 * directory: a change of its own (of its names, or its attributes) goes
 * on from a known stamp; a change behind its back (before one of its own,
 * or between) makes the directory unknown, and so do a failed change (but
 * a create that finds its name) and a failed member.  An older stamp
 * never replaces a newer one, and one in whole seconds is never known. */
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
#include "dirstamps.h"
#include "memberops.h"

struct fixture {
	mop_state state; /* what memberops.c and dirstamps.c see of a volume */
	char *root;
	int rootfd, dirfd;
};

static volume *vol(struct fixture *f)
{
	return (volume *)(void *)&f->state;
}

static int setup(void **state)
{
	struct fixture *f = g_new0(struct fixture, 1);
	f->root = g_dir_make_tmp("ecfs-dirstamps-XXXXXX", NULL);
	assert_non_null(f->root);
	f->rootfd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->rootfd >= 0);
	assert_int_equal(mkdirat(f->rootfd, "d", 0700), 0);
	f->dirfd = openat(f->rootfd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->dirfd >= 0);
	mop_keep_dirstamps(vol(f));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	dirstamps_free(mop_dirstamps(vol(f)));
	close(f->dirfd);
	close(f->rootfd);
	rm_tree(f->root);
	g_free(f->root);
	g_free(f);
	return 0;
}

static dirstamp now(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	dirstamp s;
	dirstamp_of(&st, &s);
	return s;
}

/* True if member idx's d is known at the stamp it has now. */
static bool known_now(struct fixture *f, int idx)
{
	dirstamp have, want = now(f->dirfd);
	return dirstamps_last(mop_dirstamps(vol(f)), idx, want.ino, &have) &&
	       dirstamp_same(&have, &want);
}

/* True if member idx's d is known at all. */
static bool known_at_all(struct fixture *f, int idx)
{
	dirstamp have;
	return dirstamps_last(mop_dirstamps(vol(f)), idx, now(f->dirfd).ino, &have);
}

static void start(struct fixture *f)
{
	dirstamp s = now(f->dirfd);
	dirstamps_known(mop_dirstamps(vol(f)), 0, &s);
	assert_true(known_now(f, 0));
}

static void test_own_changes_go_on(void **state)
{
	struct fixture *f = *state;
	volume *v = vol(f);
	dirstamps *ds = mop_dirstamps(v);
	assert_false(dirstamps_watching(ds, 0));
	start(f);
	assert_true(dirstamps_watching(ds, 0));
	assert_int_equal(mop_mkdirat(v, 0, f->dirfd, "sub", 0700), 0);
	assert_true(known_now(f, 0));
	int fd = mop_openat(v, 0, f->dirfd, "file", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_true(known_now(f, 0));
	fd = mop_openat_beneath(v, 0, f->rootfd, "d/by-path", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_true(known_now(f, 0));
	/* a create that finds its name changes nothing */
	assert_int_equal(mop_openat(v, 0, f->dirfd, "file", O_WRONLY | O_CREAT | O_EXCL, 0600),
	                 -EEXIST);
	assert_true(known_now(f, 0));
	assert_int_equal(mop_symlinkat(v, 0, "file", f->dirfd, "link"), 0);
	assert_int_equal(mop_linkat(v, 0, f->dirfd, "file", f->dirfd, "hard", 0), 0);
	assert_int_equal(mop_renameat2(v, 0, f->dirfd, "hard", f->dirfd, "moved", 0), 0);
	assert_int_equal(mop_unlinkat(v, 0, f->dirfd, "moved", 0), 0);
	assert_int_equal(mop_mknodat(v, 0, f->dirfd, "fifo", S_IFIFO | 0600, 0), 0);
	assert_int_equal(mop_unlinkat(v, 0, f->dirfd, "sub", AT_REMOVEDIR), 0);
	assert_true(known_now(f, 0));
	/* its own attributes: its names stay as known */
	const struct timespec times[2] = { { 1, 0 }, { 2, 0 } };
	assert_int_equal(mop_utimensat(v, 0, f->rootfd, "d", times, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(mop_fchmodat(v, 0, f->rootfd, "d", 0750, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(known_now(f, 0));
	assert_false(known_at_all(f, 1)); /* another member's are its own */
}

static void test_change_behind_the_back_makes_it_unknown(void **state)
{
	struct fixture *f = *state;
	volume *v = vol(f);
	start(f);
	assert_int_equal(mkdirat(f->dirfd, "foreign", 0700), 0); /* not through memberops */
	assert_false(known_now(f, 0));
	assert_int_equal(mop_mkdirat(v, 0, f->dirfd, "own", 0700), 0);
	assert_false(known_at_all(f, 0));
	assert_int_equal(mop_mkdirat(v, 0, f->dirfd, "own2", 0700), 0);
	assert_false(known_at_all(f, 0)); /* until read again */
}

static void test_failed_change_makes_it_unknown(void **state)
{
	struct fixture *f = *state;
	volume *v = vol(f);
	start(f);
	assert_int_equal(mop_mkdirat(v, 0, f->dirfd, "twice", 0700), 0);
	assert_int_equal(mop_mkdirat(v, 0, f->dirfd, "twice", 0700), -EEXIST);
	assert_false(known_at_all(f, 0));
}

static void test_rename_across_directories(void **state)
{
	struct fixture *f = *state;
	volume *v = vol(f);
	dirstamps *ds = mop_dirstamps(v);
	assert_int_equal(mkdirat(f->rootfd, "e", 0700), 0);
	int efd = openat(f->rootfd, "e", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	start(f);
	dirstamp e = now(efd);
	dirstamps_known(ds, 0, &e);
	assert_int_equal(mop_mknodat(v, 0, f->dirfd, "x", S_IFIFO | 0600, 0), 0);
	assert_int_equal(mop_renameat2(v, 0, f->dirfd, "x", efd, "x", 0), 0);
	assert_true(known_now(f, 0));
	dirstamp have, want = now(efd);
	assert_true(dirstamps_last(ds, 0, want.ino, &have));
	assert_true(dirstamp_same(&have, &want));
	close(efd);
}

static void test_older_stamp_never_replaces_a_newer(void **state)
{
	struct fixture *f = *state;
	volume *v = vol(f);
	dirstamps *ds = mop_dirstamps(v);
	dirstamp old = now(f->dirfd);
	usleep(20000);
	start(f);
	assert_int_equal(mop_mkdirat(v, 0, f->dirfd, "n", 0700), 0);
	dirstamp newer = now(f->dirfd);
	dirstamps_known(ds, 0, &old); /* a listing read before the change */
	dirstamp have;
	assert_true(dirstamps_last(ds, 0, newer.ino, &have));
	assert_true(dirstamp_same(&have, &newer));
}

static void test_stamp_in_whole_seconds_never_known(void **state)
{
	struct fixture *f = *state;
	dirstamps *ds = mop_dirstamps(vol(f));
	dirstamp coarse = now(f->dirfd);
	coarse.ctime_nsec = coarse.mtime_nsec = 0; /* as sshfs gives it */
	dirstamps_known(ds, 2, &coarse);
	assert_false(dirstamps_knows(ds, 2, coarse.ino));
	start(f);
	dirstamp before = now(f->dirfd);
	dirstamps_changed(ds, 0, &before, &coarse, true);
	assert_false(known_at_all(f, 0));
}

static void test_failed_member_forgotten(void **state)
{
	struct fixture *f = *state;
	volume *v = vol(f);
	dirstamps *ds = mop_dirstamps(v);
	start(f);
	dirstamp s = now(f->dirfd);
	dirstamps_known(ds, 1, &s);
	dirstamps_forget_member(ds, 0);
	assert_false(dirstamps_last(ds, 0, s.ino, &s));
	assert_true(dirstamps_last(ds, 1, s.ino, &s));
	assert_false(dirstamps_watching(ds, 0));
}

/* Each test on a directory of its own. */
/* A namespace change of a known directory hands on the fstat it took of
 * the directory after the change (mop_dir_after), on its thread only for
 * that descriptor; a change of an unknown directory, a failed one and a
 * change of an object at a path beneath the descriptor hand on none. */
static void test_stat_after_a_change(void **state)
{
	struct fixture *f = *state;
	volume *v = vol(f);
	struct stat st, want;
	assert_int_equal(mop_mkdirat(v, 0, f->dirfd, "sub", 0700), 0);
	assert_false(mop_dir_after(f->dirfd, &st)); /* not known: no stat taken */
	start(f);
	assert_int_equal(mop_unlinkat(v, 0, f->dirfd, "sub", AT_REMOVEDIR), 0);
	assert_true(mop_dir_after(f->dirfd, &st));
	assert_int_equal(fstat(f->dirfd, &want), 0);
	dirstamp a, b;
	dirstamp_of(&st, &a);
	dirstamp_of(&want, &b);
	assert_true(dirstamp_same(&a, &b));
	assert_false(mop_dir_after(f->rootfd, &st)); /* another descriptor */
	assert_int_equal(mop_unlinkat(v, 0, f->dirfd, "sub", AT_REMOVEDIR), -ENOENT);
	assert_false(mop_dir_after(f->dirfd, &st)); /* failed */
	assert_int_equal(mop_fchmodat(v, 0, f->rootfd, "d", 0750, AT_SYMLINK_NOFOLLOW), 0);
	assert_false(mop_dir_after(f->rootfd, &st)); /* d at a path beneath it */
}

#define ON_A_DIRECTORY(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		ON_A_DIRECTORY(test_own_changes_go_on),
		ON_A_DIRECTORY(test_change_behind_the_back_makes_it_unknown),
		ON_A_DIRECTORY(test_failed_change_makes_it_unknown),
		ON_A_DIRECTORY(test_rename_across_directories),
		ON_A_DIRECTORY(test_older_stamp_never_replaces_a_newer),
		ON_A_DIRECTORY(test_stamp_in_whole_seconds_never_known),
		ON_A_DIRECTORY(test_failed_member_forgotten),
		ON_A_DIRECTORY(test_stat_after_a_change),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
