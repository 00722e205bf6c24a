/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the reader's rules (src/core/format/reader_rules.c), each rule
 * called directly: the verdict on a strip from its record, data and chunk
 * file (good, hole, data without a record, misplaced, torn, a lost page
 * against a page of zeros written, a strip of another file); the
 * generation vote (ties, holes as generation 0, the highest generation
 * short of k votes); the hole rule (a process crash, a power cut with
 * pages lost, the durable mark, unread members, positions ignored); file
 * identity; the generation reservation of the daemon and of repair, over
 * many reservations; a header against its volume (UUID, k and m, strip
 * bound, position of its member) and the volume's strip bound.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "checksum.h"
#include "chunk.h"
#include "ec.h"
#include "layout.h"
#include "reader_rules.h"

#define STRIP 8192 /* two pages */
#define FILE_SIZE (UINT64_C(1) << 40) /* records of whole stripes */

/* ---- strips as judged, for the vote and the hole rule ---- */

static strip_judgment good(uint64_t gen)
{
	return (strip_judgment){ .v = STRIP_GOOD, .gen = gen, .size = 1000 + gen };
}

static strip_judgment hole(void)
{
	return (strip_judgment){ .v = STRIP_HOLE, .blank = true };
}

/* Read, does not verify; gen: what its record says if it names the strip. */
static strip_judgment bad(uint64_t gen, bool lost_page)
{
	return (strip_judgment){ .v = STRIP_BAD, .gen = gen, .zpage = lost_page,
	                         .why = "checksum mismatch" };
}

/* Data without a record: what a process crash leaves mid-commit. */
static strip_judgment blank_bad(void)
{
	return (strip_judgment){ .v = STRIP_BAD, .blank = true };
}

static strip_judgment unread(void)
{
	return (strip_judgment){ .v = STRIP_UNREAD };
}

static strip_judgment err(void)
{
	return (strip_judgment){ .v = STRIP_ERR };
}

/* ---- a chunk file to judge strips in ---- */

typedef struct fixture {
	checksum *sum;
	chunk_header h; /* position 1 */
	layout lay;     /* k=2, m=1 */
	int fd;         /* the chunk file (unlinked) */
} fixture;

static int setup(void **state)
{
	fixture *fx = calloc(1, sizeof(*fx));
	char path[] = "/tmp/ecfs-test-rules-XXXXXX";

	fx->sum = checksum_new(CHECKSUM_SHA256, NULL);
	fx->h = (chunk_header){ .version = CHUNK_FORMAT_VERSION, .position = 1, .kind = EC_RS_CAUCHY,
	                        .k = 2, .m = 1, .w = 8, .checksum = CHECKSUM_SHA256,
	                        .strip_size = STRIP, .generation = 100 };
	for (int i = 0; i < 16; i++) {
		fx->h.volume_uuid[i] = (uint8_t)(0x30 + i);
		fx->h.file_id[i] = (uint8_t)(0x70 + 5 * i);
	}
	chunk_layout(&fx->h, 1, &fx->lay);
	fx->fd = mkstemp(path);
	unlink(path);
	if (!fx->sum || fx->fd < 0)
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;

	checksum_free(fx->sum);
	close(fx->fd);
	free(fx);
	return 0;
}

/* The record a commit writes for strip s at the header's position. */
static void make_record(const fixture *fx, const chunk_header *h, uint64_t s, uint64_t gen,
                        const uint8_t *data, uint8_t rec[CHUNK_RECORD_SIZE])
{
	chunk_record r = { .stripe = s, .generation = gen, .position = h->position,
	                   .flags = CHUNK_RECORD_WRITTEN, .size = FILE_SIZE };

	assert_int_equal(chunk_strip_sum(fx->sum, h, &r, data, STRIP, NULL), 0);
	chunk_record_encode(&r, rec);
}

static strip_judgment judge(const fixture *fx, uint64_t s, const uint8_t *rec,
                            const uint8_t *data)
{
	strip_judgment j;
	uint8_t copy[STRIP]; /* the judge zeroes what lies past a short strip */

	memcpy(copy, data, STRIP);
	memset(&j, 0x5a, sizeof(j)); /* every field is the judge's to set */
	rules_judge_strip(fx->sum, &fx->h, &fx->lay, s, rec, copy, NULL, fx->fd, &j);
	return j;
}

static void test_judge_good_and_hole(void **state)
{
	fixture *fx = *state;
	uint8_t data[STRIP], rec[CHUNK_RECORD_SIZE];

	memset(data, 0xc3, sizeof(data));
	make_record(fx, &fx->h, 5, 42, data, rec);
	strip_judgment j = judge(fx, 5, rec, data);
	assert_int_equal(j.v, STRIP_GOOD);
	assert_int_equal(j.gen, 42);
	assert_int_equal(j.size, FILE_SIZE);
	assert_int_equal(j.len, STRIP);
	assert_false(j.blank);
	assert_false(j.zpage);

	/* A strip of zeros committed is good too, not a hole. */
	memset(data, 0, sizeof(data));
	make_record(fx, &fx->h, 5, 43, data, rec);
	j = judge(fx, 5, rec, data);
	assert_int_equal(j.v, STRIP_GOOD);
	assert_int_equal(j.gen, 43);

	/* Never written: blank record, zero data. */
	memset(rec, 0, sizeof(rec));
	j = judge(fx, 5, rec, data);
	assert_int_equal(j.v, STRIP_HOLE);
	assert_true(j.blank);
	assert_int_equal(j.gen, 0);
	assert_int_equal(j.size, 0);
	assert_false(j.zpage);

	/* Data without its record (strips go before records). */
	data[STRIP - 1] = 1;
	j = judge(fx, 5, rec, data);
	assert_int_equal(j.v, STRIP_BAD);
	assert_true(j.blank);
	assert_int_equal(j.gen, 0);
	assert_string_equal(j.why, "strip data without a record");
}

static void test_judge_misplaced_and_torn(void **state)
{
	fixture *fx = *state;
	uint8_t data[STRIP], rec[CHUNK_RECORD_SIZE];
	chunk_header other = fx->h;

	memset(data, 0x77, sizeof(data));
	assert_int_equal(pwrite(fx->fd, data, STRIP, (off_t)layout_strip_offset(&fx->lay, 6)),
	                 STRIP);
	/* The record of another stripe, or of another position: no generation
	 * of this strip. */
	make_record(fx, &fx->h, 7, 9, data, rec);
	strip_judgment j = judge(fx, 6, rec, data);
	assert_int_equal(j.v, STRIP_BAD);
	assert_int_equal(j.gen, 0);
	assert_string_equal(j.why, "record names another stripe or position");
	other.position = 2;
	make_record(fx, &other, 6, 9, data, rec);
	j = judge(fx, 6, rec, data);
	assert_int_equal(j.v, STRIP_BAD);
	assert_int_equal(j.gen, 0);

	/* Its own record, torn data: the record's generation is kept for the
	 * hole rule; every page is on disk, so nothing was lost. */
	make_record(fx, &fx->h, 6, 9, data, rec);
	data[100] ^= 1;
	j = judge(fx, 6, rec, data);
	assert_int_equal(j.v, STRIP_BAD);
	assert_int_equal(j.gen, 9);
	assert_false(j.blank);
	assert_false(j.zpage);
	assert_string_equal(j.why, "checksum mismatch");
}

/* A power cut that kept the record but not a strip page leaves a hole in
 * the chunk file (or its end); a page of zeros that was written is damage. */
static void test_judge_lost_page_against_zeros_written(void **state)
{
	fixture *fx = *state;
	uint8_t data[STRIP], rec[CHUNK_RECORD_SIZE], page[4096];
	off_t off = (off_t)layout_strip_offset(&fx->lay, 3);

	memset(data, 0x11, sizeof(data));
	make_record(fx, &fx->h, 3, 77, data, rec);
	memset(page, 0x11, sizeof(page));
	/* Page 0 on disk, page 1 never reached it (past the end of file). */
	assert_int_equal(ftruncate(fx->fd, 0), 0);
	assert_int_equal(pwrite(fx->fd, page, 4096, off), 4096);
	uint8_t got[STRIP];
	memcpy(got, page, 4096);
	memset(got + 4096, 0, 4096);
	strip_judgment j = judge(fx, 3, rec, got);
	assert_int_equal(j.v, STRIP_BAD);
	assert_int_equal(j.gen, 77);
	assert_true(j.zpage);

	/* No page of the strip reached the disk, the record did. */
	assert_int_equal(ftruncate(fx->fd, 0), 0);
	assert_int_equal(pwrite(fx->fd, page, 4096, off + STRIP), 4096);
	memset(got, 0, sizeof(got));
	j = judge(fx, 3, rec, got);
	assert_int_equal(j.v, STRIP_BAD);
	assert_true(j.zpage);

	/* The same zeros written on disk: damage, no page lost. */
	assert_int_equal(pwrite(fx->fd, got, STRIP, off), STRIP);
	j = judge(fx, 3, rec, got);
	assert_int_equal(j.v, STRIP_BAD);
	assert_int_equal(j.gen, 77);
	assert_false(j.zpage);
}

/* A chunk of another file at the same path: its strips do not verify
 * against this file's header (the file id is in the checksum), and its
 * header is not the file's. */
static void test_chunk_of_another_file(void **state)
{
	fixture *fx = *state;
	uint8_t data[STRIP], rec[CHUNK_RECORD_SIZE];
	chunk_header other = fx->h;

	other.file_id[15] ^= 0x80;
	memset(data, 0x42, sizeof(data));
	assert_int_equal(pwrite(fx->fd, data, STRIP, (off_t)layout_strip_offset(&fx->lay, 2)),
	                 STRIP);
	make_record(fx, &other, 2, 8, data, rec);
	strip_judgment j = judge(fx, 2, rec, data);
	assert_int_equal(j.v, STRIP_BAD);
	assert_int_equal(j.gen, 8);
	assert_false(j.zpage);
	assert_false(rules_same_file(&other, &fx->h));
	assert_true(rules_same_file(&fx->h, &fx->h));
}

static void test_same_file_fields(void **state)
{
	fixture *fx = *state;
	const chunk_header h = fx->h;
	chunk_header o;

	/* Per chunk or per write: the same file whatever they say. */
	o = h;
	o.position = 0;
	o.generation = 1;
	o.size = 123;
	o.missed = 5;
	o.durable = 7;
	assert_true(rules_same_file(&o, &h));
	/* Identity and code: another file. */
#define DIFFERS(field, value) \
	do { \
		o = h; \
		o.field = value; \
		assert_false(rules_same_file(&o, &h)); \
		assert_false(rules_same_file(&h, &o)); \
	} while (0)
	DIFFERS(file_id[0], (uint8_t)(h.file_id[0] + 1));
	DIFFERS(rotation, 1);
	DIFFERS(kind, EC_RS_VANDERMONDE);
	DIFFERS(k, 3);
	DIFFERS(m, 2);
	DIFFERS(w, 16);
	DIFFERS(checksum, CHECKSUM_GMAC);
	DIFFERS(packet_size, 1024);
	DIFFERS(strip_size, 4096);
#undef DIFFERS
}

/* A record whose checksum matches but whose fields are out of range
 * (chunk_record_decode) names no strip: an erasure, no generation. */
static void test_judge_record_out_of_range(void **state)
{
	fixture *fx = *state;
	uint8_t data[STRIP], rec[CHUNK_RECORD_SIZE];
	const chunk_record base = { .stripe = 5, .generation = 42, .position = fx->h.position,
	                            .flags = CHUNK_RECORD_WRITTEN, .size = FILE_SIZE };
	chunk_record bad[3] = { base, base, base };

	memset(data, 0xc3, sizeof(data));
	bad[0].size = UINT64_MAX;
	bad[1].flags = CHUNK_RECORD_WRITTEN | 4;
	bad[2].generation = CHUNK_GENERATION_MAX + 1;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(chunk_strip_sum(fx->sum, &fx->h, &bad[i], data, STRIP, NULL), 0);
		chunk_record_encode(&bad[i], rec);
		strip_judgment j = judge(fx, 5, rec, data);
		assert_int_equal(j.v, STRIP_BAD);
		assert_int_equal(j.gen, 0);
		assert_string_equal(j.why, "strip record fields out of range");
	}
}

/* ---- a header against its volume ---- */

static void test_header_misfit(void **state)
{
	fixture *fx = *state;
	const chunk_header h = fx->h; /* k=2 m=1, rotation 0, position 1 */
	chunk_header o;
	rules_volume vol = { .uuid = h.volume_uuid, .k = 2, .m = 1, .strip_max = STRIP };

	assert_null(rules_header_misfit(&h, &vol, 1));
	assert_null(rules_header_misfit(&h, &vol, -1));
	/* the position its rotation gives each member */
	assert_non_null(rules_header_misfit(&h, &vol, 0));
	assert_non_null(rules_header_misfit(&h, &vol, 2));
	o = h;
	o.rotation = 2;
	o.position = 2;
	assert_null(rules_header_misfit(&o, &vol, 1)); /* (1 + 3 - 2) % 3 */
	assert_non_null(rules_header_misfit(&o, &vol, 2));
	/* another volume */
	o = h;
	o.volume_uuid[15] ^= 1;
	assert_non_null(rules_header_misfit(&o, &vol, 1));
	/* k and m the volume's: k + m = n is not enough */
	o = h;
	o.k = 1;
	o.m = 2;
	assert_non_null(rules_header_misfit(&o, &vol, 1));
	o.k = 1;
	o.m = 63;
	assert_non_null(rules_header_misfit(&o, &vol, 1));
	/* strips up to the volume's largest */
	o = h;
	o.strip_size = STRIP + 64;
	assert_non_null(rules_header_misfit(&o, &vol, 1));
	vol.strip_max = STRIP + 64;
	assert_null(rules_header_misfit(&o, &vol, 1));
}

static void test_volume_strip_max(void **state)
{
	(void)state;
	assert_true(rules_volume_strip_max(65536) == RULES_STRIP_BOUND);
	assert_true(rules_volume_strip_max(RULES_STRIP_BOUND) == RULES_STRIP_BOUND);
	assert_true(rules_volume_strip_max(RULES_STRIP_BOUND * 2) == RULES_STRIP_BOUND * 2);
	assert_true(rules_volume_strip_max(CHUNK_STRIP_MAX) == CHUNK_STRIP_MAX);
	assert_true(rules_volume_strip_max(UINT64_MAX) == CHUNK_STRIP_MAX);
}

/* ---- the vote ---- */

static void test_vote_highest_with_k(void **state)
{
	uint64_t best = 99;
	(void)state;

	strip_judgment all[] = { good(7), good(7), good(7) };
	assert_int_equal(rules_vote(all, 3, 2, &best), 3);
	assert_int_equal(best, 7);

	/* A newer generation on fewer than k strips (a missed or torn write)
	 * loses to the older one that k strips hold. */
	strip_judgment older[] = { good(9), good(7), good(7), bad(9, false) };
	assert_int_equal(rules_vote(older, 4, 2, &best), 2);
	assert_int_equal(best, 7);

	/* Only good strips vote: bad, unread and failed ones do not, even
	 * with a record of the generation. */
	strip_judgment few[] = { good(9), bad(9, true), unread(), err() };
	best = 99;
	assert_int_equal(rules_vote(few, 4, 2, &best), 0);
	assert_int_equal(best, 0);
}

static void test_vote_ties(void **state)
{
	uint64_t best;
	(void)state;

	/* Two generations with k strips each: the higher, in either order. */
	strip_judgment hi_first[] = { good(9), good(9), good(9), good(5), good(5), good(5) };
	strip_judgment lo_first[] = { good(5), good(5), good(5), good(9), good(9), good(9) };
	strip_judgment mixed[] = { good(5), good(9), good(5), good(9), good(5), good(9) };
	assert_int_equal(rules_vote(hi_first, 6, 3, &best), 3);
	assert_int_equal(best, 9);
	assert_int_equal(rules_vote(lo_first, 6, 3, &best), 3);
	assert_int_equal(best, 9);
	assert_int_equal(rules_vote(mixed, 6, 3, &best), 3);
	assert_int_equal(best, 9);
	/* More strips for the lower does not make it win. */
	strip_judgment uneven[] = { good(5), good(5), good(5), good(5), good(9), good(9) };
	assert_int_equal(rules_vote(uneven, 6, 2, &best), 2);
	assert_int_equal(best, 9);
	/* No generation with k: nothing wins, whatever the counts. */
	strip_judgment split[] = { good(5), good(9), good(5), good(9) };
	assert_int_equal(rules_vote(split, 4, 3, &best), 0);
	assert_int_equal(best, 0);
}

static void test_vote_holes(void **state)
{
	uint64_t best;
	(void)state;

	strip_judgment never[] = { hole(), hole(), hole() };
	assert_int_equal(rules_vote(never, 3, 2, &best), 3);
	assert_int_equal(best, 0);
	/* Holes are generation 0: any written generation with k is newer. */
	strip_judgment written[] = { hole(), good(3), good(3) };
	assert_int_equal(rules_vote(written, 3, 2, &best), 2);
	assert_int_equal(best, 3);
	/* k holes against a newer generation short of k: still a hole. */
	strip_judgment short_gen[] = { hole(), hole(), good(3) };
	assert_int_equal(rules_vote(short_gen, 3, 2, &best), 2);
	assert_int_equal(best, 0);
	/* Data without a record is no hole. */
	strip_judgment not_hole[] = { hole(), blank_bad(), good(3) };
	assert_int_equal(rules_vote(not_hole, 3, 2, &best), 0);
}

/* A vote with a slow member's strip left unread stands only if that strip
 * could not change the winner. */
static void test_vote_settled_without_unread(void **state)
{
	uint64_t best;
	(void)state;

	/* Every read strip agrees and the unread one cannot make another
	 * generation reach k. */
	strip_judgment agreed[] = { good(7), good(7), good(7), unread() };
	assert_int_equal(rules_vote(agreed, 4, 2, &best), 3);
	assert_true(rules_vote_settled(agreed, 4, 2, 1, best));
	/* k=2, m=2, a first write that reached exactly k members, one of them
	 * unread: the holes win the vote among the read strips, but the
	 * unread strip may be the second 9 that makes it the content. */
	strip_judgment cut[] = { good(9), hole(), hole(), unread() };
	assert_int_equal(rules_vote(cut, 4, 2, &best), 2);
	assert_int_equal(best, 0);
	assert_false(rules_vote_settled(cut, 4, 2, 1, best));
	/* The same with k=3: one 9 and one unread cannot reach 3. */
	strip_judgment cut3[] = { good(9), hole(), hole(), hole(), unread() };
	assert_int_equal(rules_vote(cut3, 5, 3, &best), 3);
	assert_true(rules_vote_settled(cut3, 5, 3, 1, best));
	/* As many unread strips as k: a generation nobody read could win. */
	strip_judgment blind[] = { good(4), good(4), unread(), unread() };
	assert_int_equal(rules_vote(blind, 4, 2, &best), 2);
	assert_false(rules_vote_settled(blind, 4, 2, 2, best));
}

static void test_vote_generations_across_the_reserve(void **state)
{
	uint64_t best;
	const uint64_t r = RULES_GEN_RESERVE, big = UINT64_C(1) << 40;
	(void)state;

	/* The last generation of one reservation and the first of the next
	 * (a header write between two commits): the later wins. */
	strip_judgment across[] = { good(r), good(r + 1), good(r + 1), good(r) };
	assert_int_equal(rules_vote(across, 4, 2, &best), 2);
	assert_int_equal(best, r + 1);
	/* Generations are 64-bit: no truncation to 32 bits. */
	strip_judgment wide[] = { good(big + r), good(big + r), good(r), good(r) };
	assert_int_equal(rules_vote(wide, 4, 2, &best), 2);
	assert_int_equal(best, big + r);
	strip_judgment low32[] = { good(big + 1), good(big + 1), good(2), good(2) };
	assert_int_equal(rules_vote(low32, 4, 2, &best), 2);
	assert_int_equal(best, big + 1);
}

static void test_strip_current(void **state)
{
	(void)state;
	strip_judgment g = good(4), h = hole(), b = bad(4, false);

	assert_true(rules_strip_current(&g, 4));
	assert_false(rules_strip_current(&g, 5));
	assert_false(rules_strip_current(&g, 0));
	assert_true(rules_strip_current(&h, 0));
	assert_false(rules_strip_current(&h, 4));
	assert_false(rules_strip_current(&b, 4));
}

/* ---- the hole rule ---- */

static void test_hole_after_a_process_crash(void **state)
{
	(void)state;
	/* k=2, m=1: one strip and its record down, one strip without its
	 * record, one untouched.  A blank record proves a first write. */
	strip_judgment st[] = { good(6), blank_bad(), hole() };
	assert_true(rules_first_write_cut_short(st, 3, 1, 4, 0, 0));
	/* Below the durable mark too: a blank record is never committed. */
	assert_true(rules_first_write_cut_short(st, 3, 1, 4, 100, 0));
	/* Records of two generations: not one interrupted commit. */
	strip_judgment two[] = { good(6), bad(5, false), blank_bad() };
	assert_false(rules_first_write_cut_short(two, 3, 1, 4, 0, 0));
}

static void test_hole_after_a_power_cut(void **state)
{
	(void)state;
	uint64_t s = 10, durable = 10;

	/* Every record down, some strip pages not: each strip that does not
	 * verify lost a page, at or past the durable mark. */
	strip_judgment lost[] = { good(6), bad(6, true), bad(6, true) };
	assert_true(rules_first_write_cut_short(lost, 3, 1, s, durable, 0));
	/* No strip page at all reached the disk. */
	strip_judgment none[] = { bad(6, true), bad(6, true), bad(6, true) };
	assert_true(rules_first_write_cut_short(none, 3, 1, s, durable, 0));
	/* Below the mark an fsync made it durable: a loss, not a hole. */
	assert_false(rules_first_write_cut_short(lost, 3, 1, s, durable + 1, 0));
	/* A page of zeros that was written is damage: no hole. */
	strip_judgment damaged[] = { good(6), bad(6, true), bad(6, false) };
	assert_false(rules_first_write_cut_short(damaged, 3, 1, s, durable, 0));
	/* A lost page under a record that does not name the strip is no
	 * torn write of it. */
	strip_judgment stray[] = { good(6), bad(6, true), bad(0, true) };
	assert_false(rules_first_write_cut_short(stray, 3, 1, s, durable, 0));
	/* The torn strips' records of two generations. */
	strip_judgment mixed[] = { good(6), bad(6, true), bad(7, true) };
	assert_false(rules_first_write_cut_short(mixed, 3, 1, s, durable, 0));
}

static void test_hole_with_members_unread(void **state)
{
	(void)state;
	uint64_t s = 0;

	/* k=3, m=2.  Up to m members not read, if a strip read is torn. */
	strip_judgment two_gone[] = { good(4), bad(4, true), good(4), unread(), err() };
	assert_true(rules_first_write_cut_short(two_gone, 5, 2, s, 0, 0));
	/* More than m not read: what is left may be a loss. */
	strip_judgment three_gone[] = { good(4), bad(4, true), unread(), unread(), err() };
	assert_false(rules_first_write_cut_short(three_gone, 5, 2, s, 0, 0));
	/* Members not read and no torn strip among those read: no evidence
	 * of a first write (the rule alone; here the vote would decide). */
	strip_judgment untorn[] = { good(4), good(4), unread(), good(4), unread() };
	assert_false(rules_first_write_cut_short(untorn, 5, 2, s, 0, 0));
	/* All read, all of one generation, none torn: the rule holds. */
	strip_judgment all_read[] = { good(4), good(4), good(4), good(4), good(4) };
	assert_true(rules_first_write_cut_short(all_read, 5, 2, s, 0, 0));
	/* A blank record decides even so. */
	strip_judgment blank[] = { good(4), blank_bad(), unread(), unread(), unread() };
	assert_true(rules_first_write_cut_short(blank, 5, 2, s, 0, 0));
}

/* Repair reads the chunks it rebuilds whole, but its hole rule counts
 * them as not read, as the reader (which does not read them) does. */
static void test_hole_ignores_positions(void **state)
{
	(void)state;
	/* Position 2, a stale chunk, holds an older generation. */
	strip_judgment st[] = { good(6), bad(6, true), good(5) };
	assert_false(rules_first_write_cut_short(st, 3, 1, 0, 0, 0));
	assert_true(rules_first_write_cut_short(st, 3, 1, 0, 0, 1u << 2));
	/* Ignored positions count toward the m unread. */
	assert_false(rules_first_write_cut_short(st, 3, 1, 0, 0, 1u << 0 | 1u << 2));
	/* An ignored blank record proves nothing. */
	strip_judgment blank[] = { good(6), good(6), blank_bad() };
	assert_true(rules_first_write_cut_short(blank, 3, 1, 0, 5, 0));
	assert_false(rules_first_write_cut_short(blank, 3, 1, 0, 5, 1u << 2));
}

/* ---- the generation reservation ---- */

static void test_gen_reserved(void **state)
{
	(void)state;
	assert_true(rules_gen_reserved(10, 9));
	assert_false(rules_gen_reserved(10, 10));
	assert_false(rules_gen_reserved(10, 11));
	assert_true(rules_gen_reserved(UINT64_MAX, UINT64_MAX - 1));
}

static void test_header_generation(void **state)
{
	const uint64_t r = RULES_GEN_RESERVE;
	(void)state;

	assert_int_equal(r, 65536);
	/* The daemon (room 1: its next commit takes used + 1). */
	assert_int_equal(rules_header_generation(10, 5, 1, false), 11);
	assert_int_equal(rules_header_generation(10, 9, 1, false), 11);
	assert_int_equal(rules_header_generation(10, 10, 1, false), 10 + r);
	assert_int_equal(rules_header_generation(10, 20, 1, false), 20 + r);
	assert_int_equal(rules_header_generation(10, 5, 1, true), 5 + r);
	/* Repair (room 0: it writes no record after).  At used == hdr the two
	 * differ: hdr + 1 is above every record already. */
	assert_int_equal(rules_header_generation(10, 5, 0, false), 11);
	assert_int_equal(rules_header_generation(10, 10, 0, false), 11);
	assert_int_equal(rules_header_generation(10, 11, 0, false), 11 + r);
	/* Always above the header before and the room above used. */
	for (uint64_t hdr = 1; hdr < 40; hdr += 3)
		for (uint64_t used = 0; used < 50; used += 7)
			for (int room = 0; room < 2; room++) {
				uint64_t g = rules_header_generation(hdr, used, room, false);
				assert_true(g > hdr);
				assert_true(rules_gen_reserved(g, used + (uint64_t)room));
			}
}

/* The daemon's commits over several reservations, as ecfile does them:
 * every generation used is reserved by the header when it is used, and a
 * header write comes once per RULES_GEN_RESERVE commits. */
static void test_reservation_over_many_commits(void **state)
{
	const uint64_t r = RULES_GEN_RESERVE;
	uint64_t hdr = 1, gen = 1, writes = 0; /* a new file */
	(void)state;

	for (uint64_t i = 0; i < 3 * r + 5; i++) {
		if (!rules_gen_reserved(hdr, gen + 1)) {
			uint64_t next = rules_header_generation(hdr, gen, 1, true);
			assert_true(next > hdr);
			hdr = next;
			writes++;
		}
		gen++;
		assert_true(rules_gen_reserved(hdr, gen));
	}
	assert_int_equal(writes, 4);
	assert_int_equal(hdr, 4 * r - 2);
	/* Reopened after a crash at any point: the counter restarts at the
	 * header's generation, above every generation used. */
	assert_true(hdr > gen);
}

/* Version 3: a part of a strip is good by its record and its stored tags
 * only; a stale or damaged tag, a flipped block, a short stripe's record,
 * another stripe's record make it bad (the reader then reads whole), and
 * a strip with bad stored tags is still good whole, with tags_bad. */
static void test_judge_blocks(void **state)
{
	fixture *fx = *state;
	uint8_t data[STRIP], rec[CHUNK_RECORD_SIZE], tags[2 * CHUNK_TAG_SIZE];
	chunk_record r = { .stripe = 4, .generation = 9, .position = fx->h.position,
	                   .flags = CHUNK_RECORD_WRITTEN, .size = FILE_SIZE };
	strip_judgment j;

	assert_int_equal(fx->lay.version, 3);
	assert_int_equal(layout_tags_size(&fx->lay), sizeof(tags));
	memset(data, 0x21, sizeof(data));
	data[5000] = 7;
	assert_int_equal(chunk_strip_sum(fx->sum, &fx->h, &r, data, STRIP, tags), 0);
	chunk_record_encode(&r, rec);
	for (uint64_t b = 0; b < 2; b++) {
		rules_judge_blocks(fx->sum, &fx->h, &fx->lay, 4, rec, tags, data + b * 4096, b, 1, &j);
		assert_int_equal(j.v, STRIP_GOOD);
		assert_int_equal(j.gen, 9);
	}
	rules_judge_blocks(fx->sum, &fx->h, &fx->lay, 5, rec, tags, data, 0, 2, &j);
	assert_int_equal(j.v, STRIP_BAD); /* another stripe's */
	data[4100] ^= 1; /* block 1 only */
	rules_judge_blocks(fx->sum, &fx->h, &fx->lay, 4, rec, tags, data, 0, 1, &j);
	assert_int_equal(j.v, STRIP_GOOD);
	rules_judge_blocks(fx->sum, &fx->h, &fx->lay, 4, rec, tags, data + 4096, 1, 1, &j);
	assert_int_equal(j.v, STRIP_BAD);
	data[4100] ^= 1;
	tags[20] ^= 1; /* a tag of block 1: the record's sum catches it for any block */
	rules_judge_blocks(fx->sum, &fx->h, &fx->lay, 4, rec, tags, data, 0, 1, &j);
	assert_int_equal(j.v, STRIP_BAD);
	uint8_t copy[STRIP];
	memcpy(copy, data, STRIP);
	rules_judge_strip(fx->sum, &fx->h, &fx->lay, 4, rec, copy, tags, fx->fd, &j);
	assert_int_equal(j.v, STRIP_GOOD); /* the stored tags never decide */
	assert_true(j.tags_bad);
	tags[20] ^= 1;
	rules_judge_strip(fx->sum, &fx->h, &fx->lay, 4, rec, copy, tags, fx->fd, &j);
	assert_true(j.v == STRIP_GOOD && !j.tags_bad);
	/* a short stripe's record: its part is read whole */
	r.size = 4 * 2 * STRIP + 100;
	assert_int_equal(chunk_strip_sum(fx->sum, &fx->h, &r, data, 64, tags), 0);
	chunk_record_encode(&r, rec);
	rules_judge_blocks(fx->sum, &fx->h, &fx->lay, 4, rec, tags, data, 0, 1, &j);
	assert_int_equal(j.v, STRIP_BAD);
}

/* Versions 2 and 3: the record of the stripe at the file's end covers only the
 * bytes its strips need; what lies past them is no part of the strip. */
static void test_judge_short_strip(void **state)
{
	fixture *fx = *state;
	uint8_t data[STRIP], rec[CHUNK_RECORD_SIZE];
	uint64_t s = 3, size = 3 * 2 * STRIP + 300; /* k = 2: 150 bytes a strip */
	chunk_record r = { .stripe = s, .generation = 7, .position = fx->h.position,
	                   .flags = CHUNK_RECORD_WRITTEN, .size = size };

	assert_true(fx->lay.version >= 2);
	memset(data, 0x11, sizeof(data));
	assert_int_equal(chunk_strip_sum(fx->sum, &fx->h, &r, data, 192, NULL), 0);
	chunk_record_encode(&r, rec);
	strip_judgment j = judge(fx, s, rec, data);
	assert_int_equal(j.v, STRIP_GOOD);
	assert_int_equal(j.len, 192);
	/* Bytes past the length change nothing; one inside does. */
	data[192] ^= 0xff;
	assert_int_equal(judge(fx, s, rec, data).v, STRIP_GOOD);
	data[191] ^= 0xff;
	assert_int_equal(judge(fx, s, rec, data).v, STRIP_BAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_judge_short_strip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_judge_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_judge_good_and_hole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_judge_misplaced_and_torn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_judge_lost_page_against_zeros_written, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_chunk_of_another_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_file_fields, setup, teardown),
		cmocka_unit_test(test_vote_highest_with_k),
		cmocka_unit_test(test_vote_ties),
		cmocka_unit_test(test_vote_holes),
		cmocka_unit_test(test_vote_settled_without_unread),
		cmocka_unit_test(test_vote_generations_across_the_reserve),
		cmocka_unit_test(test_strip_current),
		cmocka_unit_test(test_hole_after_a_process_crash),
		cmocka_unit_test(test_hole_after_a_power_cut),
		cmocka_unit_test(test_hole_with_members_unread),
		cmocka_unit_test(test_hole_ignores_positions),
		cmocka_unit_test_setup_teardown(test_judge_record_out_of_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_misfit, setup, teardown),
		cmocka_unit_test(test_volume_strip_max),
		cmocka_unit_test(test_gen_reserved),
		cmocka_unit_test(test_header_generation),
		cmocka_unit_test(test_reservation_over_many_commits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
