/* SPDX-License-Identifier: MIT */
/*
 * Prints the daemon's option table (volume_option_table,
 * src/core/volume/volume_options.c) for tests/fs/test_options.py: one
 * line per option, tab-separated: name, value, default ("-" for none),
 * "superblock" or "-", "tuning" or "-".
 */
#include <stdio.h>

#include "volume_options.h"

int main(void)
{
	for (int id = 0; id < VOPT_COUNT; id++) {
		const volume_option *o = &volume_option_table[id];
		printf("%s\t%s\t%s\t%s\t%s\n", o->name, o->value ? o->value : "-",
		       o->def ? o->def : "-", o->superblock ? "superblock" : "-",
		       o->tuning ? "tuning" : "-");
	}
	return 0;
}
