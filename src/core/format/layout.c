/* SPDX-License-Identifier: MIT */
/*
 * Striped-layout arithmetic.  Version 1: a chunk file is a 4 KiB header
 * followed by groups; each group is one 4 KiB block of CHUNK_GROUP_STRIPES
 * strip records followed by the strips of those stripes.  Version 2: a
 * 192-byte header, then stripe 0's record and strip, then the same groups
 * for stripes 1.. from the next 4 KiB boundary; so a file of one stripe is
 * one run of bytes, and its strips shrink to what its bytes need.
 * Version 3: version 2 with a tag area per stripe (a tag per 4 KiB block
 * of the strip): stripe 0's tags between its record and its strip, and in
 * each group a tag block between the record block and the strips.
 * Positions map to members rotated by a per-file offset so parity of
 * different files lands on different members (RAID-5 style, per file).
 */
#include "layout.h"

#include <stdint.h>
#include <string.h>

void layout_init(layout *l, int k, int m, uint64_t strip_size, int rot)
{
	l->k = k;
	l->m = m;
	l->n = k + m;
	l->strip_size = strip_size;
	l->rot = rot;
	l->version = 1;
	l->tail_align = CHUNK_TAIL_ALIGN;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

void layout_set_version(layout *l, uint32_t version, uint64_t block_align)
{
	uint64_t a = block_align ? block_align : 1;
	l->version = version;
	l->tail_align = a / gcd(a, CHUNK_TAIL_ALIGN) * CHUNK_TAIL_ALIGN;
}

int layout_rotation(const uint8_t id[16], int n)
{
	uint32_t v = (uint32_t)id[0] | (uint32_t)id[1] << 8 | (uint32_t)id[2] << 16 |
	             (uint32_t)id[3] << 24;
	return (int)(v % (uint32_t)n);
}

uint64_t layout_stripe_count(const layout *l, uint64_t size)
{
	uint64_t sd = layout_stripe_data(l);
	return size / sd + (size % sd != 0); /* no size + sd - 1: it may wrap */
}

int layout_member_of(const layout *l, int pos)
{
	return (pos + l->rot) % l->n;
}

int layout_position_of(const layout *l, int member)
{
	return (member - l->rot + l->n) % l->n;
}

uint64_t layout_header_size(const layout *l)
{
	return l->version == 1 ? CHUNK_HEADER_SIZE_V1 : CHUNK_HEADER_SIZE_V2;
}

uint64_t layout_tags_size(const layout *l)
{
	if (l->version < 3)
		return 0;
	return (l->strip_size + CHUNK_BLOCK_SIZE - 1) / CHUNK_BLOCK_SIZE * CHUNK_TAG_SIZE;
}

/* Version 3: the tag block of a group, the tags of its stripes in order,
 * padded to keep the strips after it 4 KiB aligned. */
static uint64_t tag_block(const layout *l)
{
	return (CHUNK_GROUP_STRIPES * layout_tags_size(l) + 4095) / 4096 * 4096;
}

static uint64_t group_size(const layout *l)
{
	return CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE + tag_block(l) +
	       (uint64_t)CHUNK_GROUP_STRIPES * l->strip_size;
}

/* Versions 2 and 3: where the groups of stripes 1.. begin. */
static uint64_t v2_groups_base(const layout *l)
{
	uint64_t end = CHUNK_HEADER_SIZE_V2 + CHUNK_RECORD_SIZE + layout_tags_size(l) +
	               l->strip_size;
	return (end + 4095) / 4096 * 4096;
}

/* The stripe's group and its place in it, and where the groups begin. */
static void group_of(const layout *l, uint64_t s, uint64_t *g, uint64_t *i, uint64_t *base)
{
	if (l->version == 1) {
		*base = CHUNK_HEADER_SIZE_V1;
	} else {
		*base = v2_groups_base(l);
		s--; /* stripe 0 is not in a group: callers handle it first */
	}
	*g = s / CHUNK_GROUP_STRIPES;
	*i = s % CHUNK_GROUP_STRIPES;
}

uint64_t layout_group_start(const layout *l, uint64_t s)
{
	if (l->version == 1)
		return s - s % CHUNK_GROUP_STRIPES;
	return s == 0 ? 0 : s - (s - 1) % CHUNK_GROUP_STRIPES;
}

uint64_t layout_group_end(const layout *l, uint64_t s)
{
	if (l->version != 1 && s == 0)
		return 1;
	return layout_group_start(l, s) + CHUNK_GROUP_STRIPES;
}

uint64_t layout_record_offset(const layout *l, uint64_t stripe)
{
	uint64_t g, i, base;

	if (l->version != 1 && stripe == 0)
		return CHUNK_HEADER_SIZE_V2;
	group_of(l, stripe, &g, &i, &base);
	return base + g * group_size(l) + i * CHUNK_RECORD_SIZE;
}

uint64_t layout_tags_offset(const layout *l, uint64_t stripe)
{
	uint64_t g, i, base;

	if (l->version != 1 && stripe == 0)
		return CHUNK_HEADER_SIZE_V2 + CHUNK_RECORD_SIZE;
	group_of(l, stripe, &g, &i, &base);
	return base + g * group_size(l) + CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE +
	       i * layout_tags_size(l);
}

uint64_t layout_strip_offset(const layout *l, uint64_t stripe)
{
	uint64_t g, i, base;

	if (l->version != 1 && stripe == 0)
		return CHUNK_HEADER_SIZE_V2 + CHUNK_RECORD_SIZE + layout_tags_size(l);
	group_of(l, stripe, &g, &i, &base);
	return base + g * group_size(l) + CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE +
	       tag_block(l) + i * l->strip_size;
}

uint64_t layout_chunk_length(const layout *l, uint64_t count)
{
	if (count == 0)
		return layout_header_size(l);
	return layout_strip_offset(l, count - 1) + l->strip_size;
}

bool layout_size_fits(const layout *l, uint64_t size)
{
	uint64_t S = l->strip_size, count, end, grp, rest;

	if (size > (uint64_t)INT64_MAX || S == 0 || S > (uint64_t)INT64_MAX / 2 / CHUNK_GROUP_STRIPES)
		return false;
	count = layout_stripe_count(l, size);
	if (count <= 1)
		return true; /* a header, a record (block) and one strip */
	/* layout_chunk_length(count): base + g * group_size + record block +
	 * (i + 1) * S, each product checked (group_of's terms). */
	uint64_t g, i, base;
	group_of(l, count - 1, &g, &i, &base);
	rest = base + CHUNK_GROUP_STRIPES * CHUNK_RECORD_SIZE + tag_block(l) + (i + 1) * S;
	return !__builtin_mul_overflow(g, group_size(l), &grp) &&
	       !__builtin_add_overflow(grp, rest, &end) && end <= (uint64_t)INT64_MAX;
}

uint64_t layout_strip_len(const layout *l, uint64_t stripe, uint64_t size)
{
	uint64_t sd = layout_stripe_data(l), start = stripe * sd;

	if (l->version == 1 || size >= start + sd)
		return l->strip_size;
	uint64_t bytes = size > start ? size - start : 0;
	uint64_t per = (bytes + (uint64_t)l->k - 1) / (uint64_t)l->k;
	uint64_t len = (per + l->tail_align - 1) / l->tail_align * l->tail_align;
	if (len == 0)
		len = l->tail_align;
	return len < l->strip_size ? len : l->strip_size;
}

/* Copies stripe bytes [from, from + len) out of strips of `unit` bytes. */
static void gather(const uint8_t *const *strips, uint64_t unit, uint64_t from, uint64_t len,
                   uint8_t *out)
{
	while (len) {
		uint64_t j = from / unit, o = from % unit, take = unit - o < len ? unit - o : len;
		memcpy(out, strips[j] + o, take);
		out += take;
		from += take;
		len -= take;
	}
}

void layout_pack_short(const layout *l, uint64_t len, const uint8_t *const *in, uint8_t *const *out)
{
	for (int j = 0; j < l->k; j++)
		gather(in, l->strip_size, (uint64_t)j * len, len, out[j]);
}

void layout_unpack_short(const layout *l, uint64_t len, const uint8_t *const *in, uint64_t want,
                         uint8_t *const *out)
{
	uint64_t S = l->strip_size, total = (uint64_t)l->k * len;

	for (int j = 0; j < l->k; j++) {
		if (!(want >> j & 1))
			continue;
		uint64_t from = (uint64_t)j * S, have = from < total ? total - from : 0;
		if (have > S)
			have = S;
		gather(in, len, from, have, out[j]);
		memset(out[j] + have, 0, S - have);
	}
}
