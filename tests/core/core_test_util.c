/* SPDX-License-Identifier: MIT */
/*
 * Temporary member directories for the storage-core unit tests.
 */
#include "core_test_util.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
