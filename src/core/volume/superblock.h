/* SPDX-License-Identifier: MIT */
/*
 * The member superblock, <member>/.ecfs/superblock: a GKeyFile that names
 * the volume (UUID), this member's place in it, the geometry, the default
 * code parameters for new files and the checksum algorithm and key.
 */
#ifndef ECFS_SUPERBLOCK_H
#define ECFS_SUPERBLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "checksum.h"

typedef struct volume volume;

#define SUPERBLOCK_FILE "superblock"
/* The format of new volumes; every version from 1 up to it is read, and
 * a volume's chunks are of its own version (docs/FORMAT.md). */
#define SUPERBLOCK_VERSION 3
#define SUPERBLOCK_GROUP "ecfs"

typedef struct superblock {
	int version;
	uint8_t uuid[16];
	int index, n, k, m;
	int code;            /* ec_kind */
	int w;
	uint64_t packet_size;
	uint64_t strip_size;
	int checksum;        /* checksum_alg */
	uint8_t key[CHECKSUM_KEY_SIZE];
	int64_t created;     /* seconds since the epoch */
} superblock;

/* Parses a superblock text.  Returns 0, or a negative errno with a
 * g_malloc'd reason in *why (-EPROTO: a version this build cannot read). */
int superblock_parse(const char *text, size_t len, superblock *sb, char **why);
/* The GKeyFile text of sb, g_malloc'd. */
char *superblock_format(const superblock *sb);
/* Reads / atomically writes (temp file + rename + fsync) the superblock
 * inside the metadata directory fd (through member idx of v for the
 * write; v is NULL while the volume is being created). */
int superblock_read(int metafd, superblock *sb, char **why);
int superblock_write(volume *v, int idx, int metafd, const superblock *sb);

/* What differs between the superblocks of two members, the index (each
 * member's own) aside: NULL if nothing, else a g_malloc'd list such as
 * "code defaults, checksum key".  superblock_same: nothing differs. */
char *superblock_differs(const superblock *a, const superblock *b);
bool superblock_same(const superblock *a, const superblock *b);
/* The superblock more than half of the given ones carry (sb[i] NULL: a
 * member that gave none): the index of one, or -1 if none has a
 * majority (or none is given).  One member's word is never the
 * volume's (docs/SECURITY.md). */
int superblock_majority(const superblock *const *sb, int n);

void uuid_format(const uint8_t uuid[16], char out[37]);
int uuid_parse(const char *s, uint8_t uuid[16]);

#endif
