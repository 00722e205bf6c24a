/* SPDX-License-Identifier: MIT */
/*
 * Temporary member directories and volumes for the storage-core unit
 * tests, and what they look for in the members.
 */
#include "core_test_util.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

void members_make(members *mb, int n)
{
	mb->root = g_dir_make_tmp("ecfs-core-XXXXXX", NULL);
	mb->n = n;
	for (int i = 0; i < n; i++) {
		mb->path[i] = g_strdup_printf("%s/m%d", mb->root, i);
		if (mkdir(mb->path[i], 0755) < 0)
			abort();
	}
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)ftw;
	/* Make entries a test left unreadable removable.  Never through a
	 * symlink: chmod follows it, and a test's link to "/" would lock every
	 * other user out of the machine. */
	if (flag != FTW_SL && flag != FTW_SLN)
		chmod(p, 0700);
	return remove(p);
}

void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void members_remove(members *mb)
{
	if (!mb->root)
		return;
	rm_tree(mb->root);
	for (int i = 0; i < mb->n; i++)
		g_free(mb->path[i]);
	g_free(mb->root);
	mb->root = NULL;
}

static void open_test_volume(test_volume *t)
{
	char *msg = NULL;
	int rc = volume_open((const char *const *)t->mb.path, t->mb.n, &t->o, &t->v, &msg);
	if (rc)
		fail_msg("volume_open: %d %s", rc, msg ? msg : "");
}

test_volume *test_volume_new(const volume_options *o)
{
	test_volume *t = g_new0(test_volume, 1);
	t->o = *o;
	members_make(&t->mb, o->geometry.k + o->geometry.m);
	open_test_volume(t);
	return t;
}

void test_volume_reopen(test_volume *t)
{
	volume_close(t->v);
	open_test_volume(t);
}

void test_volume_free(test_volume *t)
{
	volume_close(t->v);
	members_remove(&t->mb);
	g_free(t);
}

int test_volume_setup(void **state)
{
	*state = test_volume_new(*state);
	return 0;
}

int test_volume_teardown(void **state)
{
	test_volume_free(*state);
	return 0;
}

char *member_path(const members *mb, int i, const char *rel)
{
	return g_strdup_printf("%s%s", mb->path[i], rel);
}

void put_member_file(const members *mb, int i, const char *rel, const char *content)
{
	char *p = member_path(mb, i, rel);
	if (!g_file_set_contents(p, content, -1, NULL))
		fail_msg("cannot write %s", p);
	g_free(p);
}

uint8_t *slurp(const char *path, size_t *len)
{
	char *data = NULL;
	gsize l = 0;

	if (!g_file_get_contents(path, &data, &l, NULL))
		return NULL;
	*len = l;
	return (uint8_t *)data;
}

void fill_random(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)(x >> 24);
	}
}

uint64_t intent_log_slots(const char *root, bool any_bytes)
{
	enum { SLOTS = 64, SLOT_SIZE = 16384 };
	static const uint8_t zero[8];
	char *path = g_strdup_printf("%s/.ecfs/intent/log", root);
	size_t len = 0;
	uint8_t *d = slurp(path, &len);
	uint64_t found = 0;

	for (size_t i = 0; d && i < SLOTS && (i + 1) * SLOT_SIZE <= len; i++) {
		const uint8_t *magic = d + i * SLOT_SIZE;
		bool hit = any_bytes ? memcmp(magic, zero, 8) != 0 : memcmp(magic, "ECFSINT1", 8) == 0;
		found |= (uint64_t)hit << i;
	}
	g_free(d);
	g_free(path);
	return found;
}
