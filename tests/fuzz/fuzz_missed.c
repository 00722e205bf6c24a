/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the missed records (src/core/volume/volume_missed.c): the names
 * of the entries of a member's .ecfs/missed/, each parsed by
 * volume_missed_parse as the open reads them.  The input is a directory's
 * names: split at '/' and NUL, which no name holds, each at most 255
 * bytes.  A name taken must index one of 64 members (or be a heal).
 */
#include <assert.h>

#include "fuzz.h"
#include "volume_internal.h"

#define NAME_MAX_BYTES 255

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[NAME_MAX_BYTES + 1];
	size_t len = 0;

	for (size_t i = 0; i <= size; i++) {
		if (i < size && data[i] != '/' && data[i] != 0) {
			if (len < NAME_MAX_BYTES)
				name[len++] = (char)data[i];
			continue;
		}
		name[len] = 0;
		int idx = -2;
		uint64_t seq = 0;
		if (len && volume_missed_parse(name, &idx, &seq))
			assert(idx >= -1 && idx < 64);
		len = 0;
	}
	return 0;
}
