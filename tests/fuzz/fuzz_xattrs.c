/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the stored extended attributes' names (src/core/namespace/xattrs.c):
 * a member's listxattr(2) list, walked with xattrs_list_next as
 * xattrs_list and ecfs-fsck's xattrs_member_read walk it, each name
 * judged as kept or not.  The input is the list as a member returns it,
 * in a buffer of exactly its length.
 */

#include "fuzz.h"
#include "xattrs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *list = malloc(size ? size : 1);
	if (!list)
		abort();
	memcpy(list, data, size);
	size_t at = 0, last = 0;
	for (const char *name; (name = xattrs_list_next(list, size, &at));) {
		if (at <= last || name < list || name >= list + size)
			abort(); /* in release builds too, where assert is gone */
		last = at;
		if (xattrs_name_kept(name))
			(void)xattrs_is_acl(name);
	}
	free(list);
	return 0;
}
