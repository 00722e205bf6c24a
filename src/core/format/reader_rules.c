/* SPDX-License-Identifier: MIT */
/*
 * The reader's rules (docs/FORMAT.md 4.1, 4.3; docs/CRASH.md argues the
 * hole rule case by case).  Reading trusts nothing it has not verified: a
 * strip counts only if its record is written, names this stripe and
 * position, its checksum (which binds volume, file, stripe, generation and
 * position) matches, and its generation wins the stripe's vote.  Anything
 * else is an erasure, repaired from any k strips of the winning
 * generation, or, when no generation has k, either a first write cut
 * short (zeros) or a loss.
 */
#include "reader_rules.h"

#include <string.h>

static bool all_zero(const uint8_t *p, size_t len)
{
	return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

void rules_judge_strip(const checksum *sum, const chunk_header *h, const layout *lay,
                       uint64_t s, const uint8_t *rec, uint8_t *data, const uint8_t *tags,
                       int fd, strip_judgment *out)
{
	bool tags_ok;

	uint64_t strip = lay->strip_size;
	chunk_record r;

	*out = (strip_judgment){ .v = STRIP_BAD, .len = strip };
	if (chunk_record_is_blank(rec)) {
		/* Never written: zeros, unless data is there without a record. */
		out->v = all_zero(data, strip) ? STRIP_HOLE : STRIP_BAD;
		out->why = "strip data without a record";
		out->blank = true;
		return;
	}
	/* A record out of range names nothing: judged like another's. */
	bool sane = chunk_record_decode(rec, &r) == 0;
	bool names = sane && r.stripe == s && r.position == h->position;
	if (names) {
		out->gen = r.generation;
		out->len = layout_strip_len(lay, s, r.size);
	}
	if (names && chunk_strip_verify_tags(sum, h, &r, s, h->position, data, out->len, tags,
	                                     &tags_ok)) {
		out->v = STRIP_GOOD;
		out->tags_bad = !tags_ok;
		out->size = r.size;
		/* A short strip's bytes past its length are no part of it. */
		memset(data + out->len, 0, strip - out->len);
		return;
	}
	out->zpage = chunk_strip_has_lost_page(fd, data, out->len, layout_strip_offset(lay, s));
	out->why = names ? "checksum mismatch"
	           : sane ? "record names another stripe or position"
	           : "strip record fields out of range";
}

void rules_judge_blocks(const checksum *sum, const chunk_header *h, const layout *lay,
                        uint64_t s, const uint8_t *rec, const uint8_t *tags,
                        const uint8_t *data, uint64_t first, uint64_t count,
                        strip_judgment *out)
{
	uint64_t strip = lay->strip_size;
	chunk_record r;

	*out = (strip_judgment){ .v = STRIP_BAD, .len = strip, .why = "blocks do not verify" };
	if (chunk_record_decode(rec, &r) != 0 || layout_strip_len(lay, s, r.size) != strip)
		return;
	if (chunk_tags_verify(sum, h, &r, s, h->position, tags, strip) &&
	    chunk_blocks_verify(sum, h, &r, tags, strip, first, count, data)) {
		out->v = STRIP_GOOD;
		out->gen = r.generation;
		out->size = r.size;
	}
}

bool rules_strip_current(const strip_judgment *st, uint64_t best)
{
	return (st->v == STRIP_GOOD && st->gen == best) || (st->v == STRIP_HOLE && best == 0);
}

bool rules_vote_settled(const strip_judgment *st, int n, int k, int unread, uint64_t best)
{
	if (unread >= k)
		return false; /* a generation none of the read strips holds */
	for (int j = 0; j < n; j++) {
		if (st[j].v != STRIP_GOOD || st[j].gen <= best)
			continue;
		int votes = 0;
		for (int i = 0; i < n; i++)
			votes += rules_strip_current(&st[i], st[j].gen);
		if (votes + unread >= k)
			return false;
	}
	return true;
}

int rules_vote(const strip_judgment *st, int n, int k, uint64_t *best)
{
	int votes_best = 0;

	*best = 0;
	for (int j = 0; j < n; j++) {
		if (st[j].v != STRIP_GOOD && st[j].v != STRIP_HOLE)
			continue;
		uint64_t g = st[j].v == STRIP_GOOD ? st[j].gen : 0;
		int votes = 0;
		for (int i = 0; i < n; i++)
			votes += rules_strip_current(&st[i], g);
		if (votes >= k && (votes_best == 0 || g > *best)) {
			*best = g;
			votes_best = votes;
		}
	}
	return votes_best;
}

/* Every record that names the stripe (verified or not) is of one
 * generation, the interrupted commit's, and either some record is still
 * blank (a process killed mid-commit always leaves one: strips go before
 * records), or, for a stripe no fsync has made durable (at or past the
 * header's durable mark), every strip that does not verify has a page of
 * zeros (a power cut kept the records but not all strip pages) and every
 * member was read, or at most m were not and some strip read is so torn
 * (m members lost after the power cut: what is left of the write is all
 * we can see).  A committed stripe never has a blank record (overwrites
 * are journaled and rolled forward, truncate blanks records only past the
 * end), so taking a loss for a hole needs more than m damaged strips, one
 * of them an all-zero record, or (data never synced) each lacking a page
 * in its chunk file. */
bool rules_first_write_cut_short(const strip_judgment *st, int n, int m, uint64_t s,
                                 uint64_t durable, uint64_t ignore)
{
	bool blank = false, have = false, torn = true, some_torn = false;
	int unread = 0;
	uint64_t gen = 0;

	for (int j = 0; j < n; j++) {
		const strip_judgment *t = &st[j];
		if (ignore >> j & 1 || !rules_strip_read(t)) {
			unread++;
			continue;
		}
		blank |= t->blank;
		if (t->v == STRIP_BAD && !t->blank) {
			bool lost = t->gen != 0 && t->zpage;
			torn &= lost;
			some_torn |= lost;
		}
		if (!t->gen)
			continue;
		if (have && t->gen != gen)
			return false;
		gen = t->gen;
		have = true;
	}
	return blank || (s >= durable && torn && (unread == 0 || (unread <= m && some_torn)));
}

bool rules_same_file(const chunk_header *a, const chunk_header *b)
{
	return !memcmp(a->file_id, b->file_id, 16) && a->rotation == b->rotation &&
	       a->kind == b->kind && a->k == b->k && a->m == b->m && a->w == b->w &&
	       a->checksum == b->checksum && a->packet_size == b->packet_size &&
	       a->strip_size == b->strip_size && a->version == b->version;
}

uint64_t rules_volume_strip_max(uint64_t sb_strip)
{
	uint64_t max = sb_strip > RULES_STRIP_BOUND ? sb_strip : RULES_STRIP_BOUND;
	return max < CHUNK_STRIP_MAX ? max : CHUNK_STRIP_MAX;
}

const char *rules_header_misfit(const chunk_header *h, const rules_volume *vol, int member)
{
	if (memcmp(h->volume_uuid, vol->uuid, 16) != 0)
		return "header of another volume";
	if (h->k != vol->k || h->m != vol->m)
		return "header's k and m are not the volume's";
	if (h->strip_size > vol->strip_max)
		return "header's strip size is above the volume's largest";
	/* k + m = n now, and rotation < n (chunk_header_decode) */
	uint32_t n = (uint32_t)vol->k + (uint32_t)vol->m;
	if (member >= 0 && h->position != ((uint32_t)member + n - h->rotation) % n)
		return "position does not match the rotation";
	return NULL;
}

bool rules_gen_reserved(uint64_t hdr, uint64_t gen)
{
	return gen < hdr;
}

uint64_t rules_header_generation(uint64_t hdr, uint64_t used, int room, bool reserve)
{
	if (reserve || !rules_gen_reserved(hdr + 1, used + (uint64_t)room))
		return used + RULES_GEN_RESERVE;
	return hdr + 1;
}
