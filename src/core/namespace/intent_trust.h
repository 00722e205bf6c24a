/* SPDX-License-Identifier: MIT */
/*
 * What a replay believes of an intent record (intent.h): the identities
 * of the objects it names, taken on the members, and whether the record
 * is consistent with what a majority of the members show, so that a
 * record found on one member is never that member's word for the others
 * (docs/SECURITY.md).
 */
#ifndef ECFS_INTENT_TRUST_H
#define ECFS_INTENT_TRUST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "volume.h"

/* An object's identity on one member: its inode number (0: no object)
 * and birth time, so that an inode number reused for a newer object is
 * told apart (btime 0: the member filesystem does not keep it). */
typedef struct ident {
	uint64_t ino, btime;
} ident;

/* The identity of the object at leaf in directory d (or at path) on
 * member idx (ino 0 if it has none), and its type in *mode if not NULL;
 * intent_is_object: it is the one recorded as want. */
ident intent_ident_at(volume *v, int idx, int d, const char *leaf, mode_t *mode);
ident intent_ident_of(volume *v, int idx, const char *path, mode_t *mode);
bool intent_is_object(volume *v, int idx, const char *path, ident want, mode_t *mode);

/* A record as a replay finds it: the kind of operation (a mkdir, or one
 * that removes from: unlink, rmdir), its paths, from's identity on each
 * of the n members, the members holding a copy, and for a mkdir the mode
 * and owner it is redone with (set to the members'). */
typedef struct intent_claim {
	bool mkdir, removes;
	int n;
	const char *from, *to;
	const ident *from_id;
	uint64_t holders;
	mode_t *mode;
	uid_t *uid;
	gid_t *gid;
} intent_claim;

/* True if the record is consistent with the members that answer: for a
 * mkdir, a majority of them hold its record or show its directory (and
 * the mode and owner are those most of the directories have, when a
 * majority show it); for the others, most of the members it gives an
 * identity show it (the object under from, or moved to to, or from
 * gone for an unlink or rmdir), or the replay would act on no member.
 * *holders and *voters: how many of the members that answer hold it, of
 * how many. */
bool intent_claim_believed(volume *v, const intent_claim *c, int *holders, int *voters);

#endif
