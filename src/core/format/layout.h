/* SPDX-License-Identifier: MIT */
/*
 * Pure arithmetic of the striped layout (docs/FORMAT.md, sections 4 and 5):
 * file offset <-> stripe and strip, strip position <-> member (rotated per
 * file), where strips and strip records sit inside a chunk file of either
 * format version, and how long the strips of a file's last stripe are.
 * No I/O, no allocation: easy to unit-test exhaustively.
 */
#ifndef ECFS_LAYOUT_H
#define ECFS_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Bytes a reader takes from offset 0 of a chunk: either version's header. */
#define CHUNK_HEADER_MAX 4096u
#define CHUNK_HEADER_SIZE_V1 4096u
#define CHUNK_HEADER_SIZE_V2 192u
#define CHUNK_RECORD_SIZE 64u
/* Records of this many consecutive stripes share one 4 KiB record block,
 * written just before their strips, so strips stay 4 KiB aligned. */
#define CHUNK_GROUP_STRIPES (4096u / CHUNK_RECORD_SIZE)
/* Version 2: the strips of a file's last stripe shrink to a multiple of
 * this (and of the code's block alignment). */
#define CHUNK_TAIL_ALIGN 64u
/* Version 3: a tag of CHUNK_TAG_SIZE bytes per CHUNK_BLOCK_SIZE bytes of
 * each strip, so a read of part of a strip verifies only what it reads. */
#define CHUNK_BLOCK_SIZE 4096u
#define CHUNK_TAG_SIZE 16u

typedef struct layout {
	int k, m, n;
	uint64_t strip_size; /* bytes per strip */
	int rot;             /* member index of strip position 0 */
	uint32_t version;    /* chunk format version, 1 to 3 */
	uint64_t tail_align; /* versions 2 and 3: granule of a last stripe's strips */
} layout;

/* A version-1 layout; layout_set_version makes it another. */
void layout_init(layout *l, int k, int m, uint64_t strip_size, int rot);
/* Versions 2 and 3 need the code's block alignment (ec_block_align). */
void layout_set_version(layout *l, uint32_t version, uint64_t block_align);
/* The rotation a file identity implies for n members. */
int layout_rotation(const uint8_t id[16], int n);

static inline uint64_t layout_stripe_data(const layout *l)
{
	return (uint64_t)l->k * l->strip_size;
}
/* Stripe holding byte off of the file. */
static inline uint64_t layout_stripe_of(const layout *l, uint64_t off)
{
	return off / layout_stripe_data(l);
}
/* Number of stripes a file of `size` bytes occupies. */
uint64_t layout_stripe_count(const layout *l, uint64_t size);
/* True if a file of `size` bytes fits the layout: size and every chunk
 * offset its stripes take (layout_chunk_length of its stripe count) at
 * most INT64_MAX, so they fit an off_t.  Computed without overflow, for
 * any size and strip size. */
bool layout_size_fits(const layout *l, uint64_t size);

/* Member that stores strip position pos, and the inverse. */
int layout_member_of(const layout *l, int pos);
int layout_position_of(const layout *l, int member);

/* Bytes of the chunk header. */
uint64_t layout_header_size(const layout *l);
/* Stripes are read and written in runs within one record group: the
 * first stripe of the group of stripe s, and the first one past it. */
uint64_t layout_group_start(const layout *l, uint64_t s);
uint64_t layout_group_end(const layout *l, uint64_t s);
/* Offsets inside a chunk file. */
uint64_t layout_record_offset(const layout *l, uint64_t stripe);
uint64_t layout_strip_offset(const layout *l, uint64_t stripe);
/* Version 3: bytes of a strip's tags (CHUNK_TAG_SIZE per CHUNK_BLOCK_SIZE
 * block of a whole strip), and where they sit: right after stripe 0's
 * record, and for the other stripes in their group's tag block, between
 * its record block and its strips.  0 bytes in versions 1 and 2. */
uint64_t layout_tags_size(const layout *l);
uint64_t layout_tags_offset(const layout *l, uint64_t stripe);
/* Chunk file length that holds stripes [0, count) with whole strips. */
uint64_t layout_chunk_length(const layout *l, uint64_t count);

/* Bytes of each strip of stripe s that a commit made when the file was
 * `size` bytes long stores, checksums and codes: the strip size, but in
 * version 2 the strips of the stripe holding the file's end shrink to
 * what its bytes need, rounded up to tail_align.  Such a short stripe
 * holds its bytes in the first k * len bytes of its strips, in order
 * (layout_pack_short, layout_unpack_short). */
uint64_t layout_strip_len(const layout *l, uint64_t stripe, uint64_t size);

/* A stripe's data, strips of strip_size bytes (strip j holds stripe bytes
 * [j*S, (j+1)*S)), laid out as a short stripe of strips of len bytes:
 * out[j] receives stripe bytes [j*len, (j+1)*len).  The inverse unpacks
 * into the wanted strips (bit j of want) and zeroes what lies past
 * k * len.  Neither may be given overlapping buffers. */
void layout_pack_short(const layout *l, uint64_t len, const uint8_t *const *in, uint8_t *const *out);
void layout_unpack_short(const layout *l, uint64_t len, const uint8_t *const *in, uint64_t want,
                         uint8_t *const *out);

#endif
