/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the member superblock (src/core/volume/superblock.c):
 * superblock_parse on the text of .ecfs/superblock, and a superblock it
 * accepts formatted and parsed again to the same fields.
 */
#include <assert.h>

#include <glib.h>

#include "fuzz.h"
#include "superblock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	superblock sb, again;
	char *why = NULL;

	if (superblock_parse((const char *)data, size, &sb, &why) != 0) {
		assert(why);
		g_free(why);
		return 0;
	}
	assert(!why);
	assert(sb.k + sb.m == sb.n && sb.index >= 0 && sb.index < sb.n);
	char *text = superblock_format(&sb);
	int rc = superblock_parse(text, strlen(text), &again, &why);
	assert(rc == 0 && memcmp(&sb, &again, sizeof sb) == 0);
	g_free(text);
	return 0;
}
