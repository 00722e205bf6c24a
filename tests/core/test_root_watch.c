/* SPDX-License-Identifier: MIT */
/* The member root watch (src/core/volume/root_watch.c): a verified member stays
 * quiet until something that could change its root happens (the root or
 * a directory above it moved or its permissions changed, the superblock
 * removed or moved away, a mount or unmount), and only then; members it cannot vouch for are
 * never quiet.  Run on a tmpfs (/dev/shm) and on the filesystem of /tmp. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "mounts.h"
#include "root_watch.h"
#include "superblock.h"
#include "volume.h"

typedef struct {
	char *base;   /* holds up/member */
	char *up;     /* the member's parent */
	char *root;   /* the member */
	int rootfd;
	root_watch *w;
} fixture;

static void touch(const char *dir, const char *name)
{
	char *p = g_build_filename(dir, name, NULL);
	int fd = open(p, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	g_free(p);
}

static char *meta(const fixture *fx)
{
	return g_build_filename(fx->root, ECFS_META_DIR, NULL);
}

/* Whether the member's filesystem is one the watch can vouch for, as
 * volume_open.c asks it (mounts.h). */
static bool local(const fixture *fx)
{
	mount_info mi = mount_info_of_root(fx->rootfd);
	return mounts_local(&mi);
}

static int setup_in(void **state, const char *tmp)
{
	fixture *fx = g_new0(fixture, 1);

	fx->base = g_build_filename(tmp, "ecfs-root-watch-XXXXXX", NULL);
	assert_non_null(g_mkdtemp(fx->base));
	fx->up = g_build_filename(fx->base, "up", NULL);
	fx->root = g_build_filename(fx->up, "member", NULL);
	char *m = meta(fx);
	assert_int_equal(g_mkdir_with_parents(m, 0700), 0);
	touch(m, SUPERBLOCK_FILE);
	g_free(m);
	fx->rootfd = open(fx->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fx->rootfd >= 0);
	fx->w = root_watch_new(2);
	root_watch_member(fx->w, 0, fx->root, fx->rootfd, ECFS_META_DIR, local(fx));
	*state = fx;
	return 0;
}

static int setup_tmpfs(void **state) { return setup_in(state, "/dev/shm"); }
static int setup_tmp(void **state) { return setup_in(state, "/tmp"); }

static int teardown(void **state)
{
	fixture *fx = *state;
	char *cmd = g_strdup_printf("rm -rf '%s'", fx->base);

	root_watch_free(fx->w);
	close(fx->rootfd);
	assert_int_equal(system(cmd), 0);
	g_free(cmd);
	g_free(fx->base);
	g_free(fx->up);
	g_free(fx->root);
	g_free(fx);
	return 0;
}

/* Verifies member 0 as a full root check would, and says it is quiet. */
static void verify(fixture *fx)
{
	uint64_t epoch;

	assert_false(root_watch_quiet(fx->w, 0, &epoch));
	root_watch_verified(fx->w, 0, epoch);
	assert_true(root_watch_quiet(fx->w, 0, &epoch));
}

static void assert_stirred(fixture *fx, const char *after)
{
	uint64_t epoch;

	if (root_watch_quiet(fx->w, 0, &epoch))
		fail_msg("still quiet after %s", after);
	verify(fx);
}

static void test_quiet_only_once_verified(void **state)
{
	fixture *fx = *state;
	uint64_t epoch;

	assert_false(root_watch_quiet(fx->w, 0, &epoch));
	assert_false(root_watch_quiet(fx->w, 1, &epoch)); /* never watched */
	root_watch_verified(fx->w, 1, epoch);
	assert_false(root_watch_quiet(fx->w, 1, &epoch));
	verify(fx);
	/* Watching a member again (the heal took a new root) forgets it. */
	root_watch_member(fx->w, 0, fx->root, fx->rootfd, ECFS_META_DIR, local(fx));
	verify(fx);
}

/* What ecfs itself does on a member stirs nothing: files made and removed
 * at the root and in .ecfs (journals, heal markers), a directory moved. */
static void test_own_changes_keep_it_quiet(void **state)
{
	fixture *fx = *state;
	char *m = meta(fx), *a = g_build_filename(fx->root, "a", NULL),
	     *b = g_build_filename(fx->root, "b", NULL), *j = g_build_filename(m, "journal", NULL);
	uint64_t epoch;

	verify(fx);
	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(rename(a, b), 0);
	assert_int_equal(rmdir(b), 0);
	touch(m, "journal");
	assert_int_equal(unlink(j), 0);
	touch(fx->root, "c");
	char *c = g_build_filename(fx->root, "c", NULL);
	assert_int_equal(chmod(c, 0600), 0);
	g_free(c);
	assert_true(root_watch_quiet(fx->w, 0, &epoch));
	g_free(m);
	g_free(a);
	g_free(b);
	g_free(j);
}

static void test_superblock_gone(void **state)
{
	fixture *fx = *state;
	char *m = meta(fx), *sb = g_build_filename(m, SUPERBLOCK_FILE, NULL),
	     *away = g_build_filename(fx->root, "away", NULL);
	uint64_t epoch;

	verify(fx);
	assert_int_equal(rename(sb, away), 0);
	assert_stirred(fx, "the superblock moved away");
	assert_int_equal(rename(away, sb), 0); /* back: nothing to notice */
	assert_true(root_watch_quiet(fx->w, 0, &epoch));
	assert_int_equal(unlink(sb), 0);
	assert_stirred(fx, "the superblock removed");
	g_free(m);
	g_free(sb);
	g_free(away);
}

static void test_root_or_above_changed(void **state)
{
	fixture *fx = *state;
	char *aside = g_build_filename(fx->up, "aside", NULL),
	     *up2 = g_build_filename(fx->base, "up2", NULL);

	verify(fx);
	assert_int_equal(rename(fx->root, aside), 0);
	assert_stirred(fx, "the root moved");
	assert_int_equal(rename(aside, fx->root), 0);
	assert_stirred(fx, "the root moved back");
	assert_int_equal(rename(fx->up, up2), 0);
	assert_stirred(fx, "the directory above the root moved");
	assert_int_equal(rename(up2, fx->up), 0);
	assert_stirred(fx, "the directory above moved back");
	assert_int_equal(chmod(fx->root, 0), 0); /* unreadable to a daemon without root */
	assert_stirred(fx, "the root made unreadable");
	assert_int_equal(chmod(fx->up, 0700), 0);
	assert_stirred(fx, "the directory above's mode changed");
	assert_int_equal(chmod(fx->root, 0755), 0);
	g_free(aside);
	g_free(up2);
}

/* A mount anywhere (here over the member's parent's sibling) stirs every
 * member: a disk unmounted lazily beneath a member shows only there. */
static void test_mount_table_changed(void **state)
{
	fixture *fx = *state;
	char *spot = g_build_filename(fx->base, "spot", NULL);

	if (geteuid() != 0) {
		print_message("mount table case not run: mounting needs root\n");
		fail_msg("these tests run as root (the README's test command)");
	}
	assert_int_equal(mkdir(spot, 0755), 0);
	verify(fx);
	assert_int_equal(mount("tmpfs", spot, "tmpfs", 0, "size=1m"), 0);
	assert_stirred(fx, "a mount");
	assert_int_equal(umount2(spot, MNT_DETACH), 0);
	assert_stirred(fx, "a lazy unmount");
	g_free(spot);
}

/* A member reached through a symbolic link is never vouched for: the link
 * could be pointed elsewhere unseen. */
static void test_symlinked_path_never_quiet(void **state)
{
	fixture *fx = *state;
	char *link = g_build_filename(fx->base, "link", NULL),
	     *via = g_build_filename(link, "member", NULL);
	uint64_t epoch;

	assert_int_equal(symlink(fx->up, link), 0);
	root_watch_member(fx->w, 1, via, fx->rootfd, ECFS_META_DIR, local(fx));
	assert_false(root_watch_quiet(fx->w, 1, &epoch));
	root_watch_verified(fx->w, 1, epoch);
	assert_false(root_watch_quiet(fx->w, 1, &epoch));
	/* nor one whose path leads to another directory than its fd's */
	root_watch_member(fx->w, 1, fx->up, fx->rootfd, ECFS_META_DIR, local(fx));
	root_watch_verified(fx->w, 1, epoch);
	assert_false(root_watch_quiet(fx->w, 1, &epoch));
	g_free(link);
	g_free(via);
}

/* An event read while a full check runs leaves the member unverified. */
static void test_event_during_check(void **state)
{
	fixture *fx = *state;
	char *aside = g_build_filename(fx->up, "aside", NULL);
	uint64_t epoch, later;

	assert_false(root_watch_quiet(fx->w, 0, &epoch));
	assert_int_equal(rename(fx->root, aside), 0);
	assert_false(root_watch_quiet(fx->w, 0, &later)); /* another thread's look */
	root_watch_verified(fx->w, 0, epoch);             /* the first check ends */
	assert_false(root_watch_quiet(fx->w, 0, &later));
	assert_int_equal(rename(aside, fx->root), 0);
	g_free(aside);
}

#define ON_BOTH(t) cmocka_unit_test_setup_teardown(t, setup_tmpfs, teardown), \
                   cmocka_unit_test_setup_teardown(t, setup_tmp, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		ON_BOTH(test_quiet_only_once_verified),
		ON_BOTH(test_own_changes_keep_it_quiet),
		ON_BOTH(test_superblock_gone),
		ON_BOTH(test_root_or_above_changed),
		ON_BOTH(test_mount_table_changed),
		ON_BOTH(test_symlinked_path_never_quiet),
		ON_BOTH(test_event_during_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
