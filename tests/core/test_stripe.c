/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the stripe layer (src/core/data/stripe.c and its parts
 * stripe_commit.c, stripe_fetch.c, stripe_hedge.c, stripe_decode.c) on real
 * member directories, with a stripe context built as the open file (ecfile.h) and repair.c
 * build theirs: commits land on the members as docs/FORMAT.md section 4 says
 * (strips, parity, records and their checksums); fetches decode around up
 * to m missing or corrupt strips and rewrite the bad ones, and give EIO,
 * never wrong data, with more; strips of another position, stripe, file,
 * volume or generation are never taken for the stripe's; the single
 * strip writer, probe, end scan and truncate do what stripe.h promises; and
 * the vote and decode of one stripe do what stripe_decode.h promises.
 * On members in memory, a commit's stages and syncs run on the calling
 * thread, never waiting for a member's worker.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>
#include <openssl/sha.h>

#include "chunk.h"
#include "core_test_util.h"
#include "journal.h"
#include "log.h"
#include "memberio.h"
#include "stripe.h"
#include "stripe_decode.h"
#include "volume_internal.h"

#define K 4
#define M 2
#define N (K + M)
#define STRIP 4096
#define STRIPE (K * STRIP)
#define ALL_DATA ((1ull << K) - 1)
/* File ids: the file under test (rotation 3, so that positions and
 * members differ) and another file (rotation 5). */
#define FILE_SEED 4
#define OTHER_SEED 2

typedef struct fixture {
	members mb;
	volume *v;
	stripe_ctx c;
} fixture;

/* SHA-256 strip checksums, so that the records on the members can be
 * checked against FORMAT.md 4.2 with an independent digest. */
static volume *open_shape(members *mb, int k, int m, bool read_only)
{
	volume_options o = { .geometry = { .k = k, .m = m },
	                     .files = { .strip_size = STRIP, .checksum = "sha256" },
	                     .run.read_only = read_only };
	volume *v = NULL;
	char *msg = NULL;
	int rc = volume_open((const char *const *)mb->path, k + m, &o, &v, &msg);
	if (rc)
		fail_msg("volume_open: %d %s", rc, msg ? msg : "");
	return v;
}

static volume *open_volume(members *mb, bool read_only)
{
	return open_shape(mb, K, M, read_only);
}

/* The chunk file of name on member mb. */
static char *member_file(const members *mbs, int mb, const char *name)
{
	return g_strdup_printf("%s/%s", mbs->path[mb], name);
}

/* A context for file `name` with the header a new file of the volume gets
 * (ecfile_open.c's new_header), its file id made from seed, and the chunks open
 * (created and given their headers unless the volume is read-only). */
static void ctx_open(stripe_ctx *c, volume *v, const members *mbs, const char *name,
                     uint64_t seed)
{
	const volume_file_defaults *d = volume_defaults(v);
	bool read_only = volume_settings(v)->read_only;
	int k = volume_k(v), m = volume_m(v), n = volume_n(v);

	memset(c, 0, sizeof(*c));
	c->v = v;
	c->path = name;
	c->hdr = (chunk_header){ .version = CHUNK_FORMAT_VERSION, .kind = d->code, .k = (uint16_t)k,
	                         .m = (uint16_t)m, .w = (uint16_t)d->w,
	                         .checksum = (uint16_t)checksum_alg_from_name(d->checksum),
	                         .packet_size = d->packet_size, .strip_size = STRIP,
	                         .generation = 1 };
	memcpy(c->hdr.volume_uuid, volume_uuid(v), 16);
	fill_random(c->hdr.file_id, 16, seed);
	c->hdr.rotation = (uint32_t)layout_rotation(c->hdr.file_id, n);
	ec_params p = { .kind = d->code, .k = k, .m = m, .w = d->w,
	                .packet_size = d->packet_size };
	c->code = volume_code(v, &p);
	chunk_layout(&c->hdr, ec_block_align(c->code), &c->lay);
	c->sum = volume_checksum(v, c->hdr.checksum);
	assert_non_null(c->code);
	assert_non_null(c->sum);
	for (int mb = 0; mb < STRIPE_MAX_N; mb++)
		c->fd[mb] = -1;
	for (int mb = 0; mb < n; mb++) {
		char *path = member_file(mbs, mb, name);
		c->fd[mb] = open(path, read_only ? O_RDONLY : O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		assert_true(c->fd[mb] >= 0);
		c->state[mb] = CHUNK_OK;
		g_free(path);
	}
	assert_int_equal(stripe_ctx_buffers(c), 0);
	if (!read_only)
		assert_int_equal(stripe_write_headers(c), 0);
}

static void ctx_close(stripe_ctx *c)
{
	stripe_ctx_free_buffers(c);
	for (int mb = 0; mb < c->lay.n; mb++)
		if (c->fd[mb] >= 0)
			close(c->fd[mb]);
}

static int setup(void **state)
{
	fixture *fx = g_new0(fixture, 1);
	members_make(&fx->mb, N);
	fx->v = open_volume(&fx->mb, false);
	ctx_open(&fx->c, fx->v, &fx->mb, "f", FILE_SEED);
	assert_int_equal(fx->c.lay.rot, 3);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;
	ctx_close(&fx->c);
	volume_close(fx->v);
	members_remove(&fx->mb);
	g_free(fx);
	return 0;
}

/* ---- helpers ---- */

static int member_of(fixture *fx, int pos)
{
	return layout_member_of(&fx->c.lay, pos);
}

/* The chunk file of the context's file at strip position pos. */
static char *pos_file(fixture *fx, const stripe_ctx *c, int pos)
{
	return member_file(&fx->mb, layout_member_of(&c->lay, pos), c->path);
}

static void peek(fixture *fx, const stripe_ctx *c, int pos, uint64_t off, void *buf, size_t len)
{
	char *path = pos_file(fx, c, pos);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	/* past the end of a chunk reads as zeros, as the stripe layer reads it */
	ssize_t got = pread(fd, buf, len, (off_t)off);
	assert_true(got >= 0);
	memset((uint8_t *)buf + got, 0, len - (size_t)got);
	close(fd);
	g_free(path);
}

static void poke(fixture *fx, int pos, uint64_t off, const void *buf, size_t len)
{
	char *path = pos_file(fx, &fx->c, pos);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
	g_free(path);
}

/* A strip with its record, as one position of one stripe holds them. */
typedef struct strip_copy {
	uint8_t data[STRIP];
	uint8_t rec[CHUNK_RECORD_SIZE];
} strip_copy;

static void take_strip(fixture *fx, const stripe_ctx *c, int pos, uint64_t s, strip_copy *sc)
{
	peek(fx, c, pos, layout_strip_offset(&c->lay, s), sc->data, STRIP);
	peek(fx, c, pos, layout_record_offset(&c->lay, s), sc->rec, CHUNK_RECORD_SIZE);
}

/* Puts a strip and record into position pos of stripe s of fx's file. */
static void put_strip(fixture *fx, int pos, uint64_t s, const strip_copy *sc)
{
	poke(fx, pos, layout_strip_offset(&fx->c.lay, s), sc->data, STRIP);
	poke(fx, pos, layout_record_offset(&fx->c.lay, s), sc->rec, CHUNK_RECORD_SIZE);
}

static void flip_strip_byte(fixture *fx, int pos, uint64_t s)
{
	uint8_t b;
	uint64_t off = layout_strip_offset(&fx->c.lay, s) + 1000;
	peek(fx, &fx->c, pos, off, &b, 1);
	b ^= 0x40;
	poke(fx, pos, off, &b, 1);
}

/* Every member's chunk file, whole. */
typedef struct snapshot {
	uint8_t *data[N];
	size_t len[N];
} snapshot;

static void snap_take(fixture *fx, snapshot *sn)
{
	for (int mb = 0; mb < N; mb++) {
		char *path = member_file(&fx->mb, mb, fx->c.path);
		sn->data[mb] = slurp(path, &sn->len[mb]);
		assert_non_null(sn->data[mb]);
		g_free(path);
	}
}

static void snap_free(snapshot *sn)
{
	for (int mb = 0; mb < N; mb++)
		g_free(sn->data[mb]);
}

/* The chunk files are byte for byte as in sn. */
static void snap_check(fixture *fx, const snapshot *sn)
{
	snapshot now;
	snap_take(fx, &now);
	for (int mb = 0; mb < N; mb++) {
		if (now.len[mb] != sn->len[mb] || memcmp(now.data[mb], sn->data[mb], now.len[mb]))
			fail_msg("member %d: the chunk differs from the one expected", mb);
	}
	snap_free(&now);
}

/* Writes the chunk files back as in sn, in place (the context's
 * descriptors stay valid). */
static void snap_restore(fixture *fx, const snapshot *sn)
{
	for (int mb = 0; mb < N; mb++) {
		char *path = member_file(&fx->mb, mb, fx->c.path);
		int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, sn->data[mb], sn->len[mb]), (ssize_t)sn->len[mb]);
		close(fd);
		g_free(path);
	}
}

/* Commits cnt stripes from s0 of buf (stripe after stripe) at generation
 * gen for a file of size bytes. */
static int commit_at(stripe_ctx *c, uint64_t s0, int cnt, const uint8_t *buf, uint64_t gen,
                     uint64_t size)
{
	const uint8_t *p[STRIPE_BATCH * K];
	for (int i = 0; i < cnt * K && i < STRIPE_BATCH * K; i++)
		p[i] = buf + (size_t)i * STRIP;
	/* One commit per record group, as ecfile_io.c issues them. */
	uint64_t first = cnt > 0 && cnt <= STRIPE_BATCH && layout_group_end(&c->lay, s0) == 1 ? 1 : 0;
	if (first && cnt > 1) {
		int rc = stripe_commit(c, s0, 1, p, gen, size);
		return rc < 0 ? rc : stripe_commit(c, s0 + 1, cnt - 1, p + K, gen, size);
	}
	return stripe_commit(c, s0, cnt, p, gen, size);
}

/* The same for fx's file, whose size is their end. */
static int commit(fixture *fx, uint64_t s0, int cnt, const uint8_t *buf, uint64_t gen)
{
	return commit_at(&fx->c, s0, cnt, buf, gen, (s0 + (uint64_t)cnt) * STRIPE);
}

/* Fetches the data strips in want of stripe s into out (one stripe);
 * bytes of strips not wanted are left as they were. */
static int fetch_want(fixture *fx, uint64_t s, uint64_t want, uint8_t *out)
{
	uint8_t *p[K];
	for (int j = 0; j < K; j++)
		p[j] = out + (size_t)j * STRIP;
	return stripe_fetch(&fx->c, s, want, p);
}

static int fetch_run(fixture *fx, uint64_t s0, int cnt, uint8_t *out)
{
	uint8_t *p[STRIPE_FETCH_RUN * K];
	for (int i = 0; i < cnt * K && i < STRIPE_FETCH_RUN * K; i++)
		p[i] = out + (size_t)i * STRIP;
	memset(out, 0xee, (size_t)(cnt > 0 ? cnt : 0) * STRIPE);
	/* One run per record group, as ecfile_io.c asks (stripe 0 of a version
	 * 2 chunk is a group of its own). */
	if (cnt > 1 && cnt <= STRIPE_FETCH_RUN && layout_group_end(&fx->c.lay, s0) == 1) {
		int rc = stripe_fetch_run(&fx->c, s0, 1, p);
		return rc < 0 ? rc : stripe_fetch_run(&fx->c, s0 + 1, cnt - 1, p + K);
	}
	return stripe_fetch_run(&fx->c, s0, cnt, p);
}

/* Stripe s reads (stripe_fetch) as want, exactly. */
static void assert_stripe(fixture *fx, uint64_t s, const uint8_t *want)
{
	uint8_t *got = g_malloc(STRIPE);
	memset(got, 0xee, STRIPE);
	assert_int_equal(fetch_want(fx, s, ALL_DATA, got), 0);
	assert_memory_equal(got, want, STRIPE);
	g_free(got);
}

static void assert_run(fixture *fx, uint64_t s0, int cnt, const uint8_t *want)
{
	uint8_t *got = g_malloc((size_t)cnt * STRIPE);
	assert_int_equal(fetch_run(fx, s0, cnt, got), 0);
	assert_memory_equal(got, want, (size_t)cnt * STRIPE);
	g_free(got);
}

static void assert_fetch_fails(fixture *fx, uint64_t s)
{
	uint8_t *got = g_malloc(STRIPE);
	assert_int_equal(fetch_want(fx, s, ALL_DATA, got), -EIO);
	g_free(got);
}

static uint8_t *random_stripes(int cnt, uint64_t seed)
{
	uint8_t *b = g_malloc((size_t)cnt * STRIPE);
	fill_random(b, (size_t)cnt * STRIPE, seed);
	return b;
}

/* The number after `key` in the volume's health report. */
static uint64_t health_count(fixture *fx, const char *key)
{
	char *text = volume_health_text(fx->v), *at = strstr(text, key);
	assert_non_null(at);
	uint64_t x = g_ascii_strtoull(at + strlen(key), NULL, 10);
	g_free(text);
	return x;
}

/* ---- what a commit leaves on the members ---- */

static void test_headers_name_each_position(void **state)
{
	fixture *fx = *state;
	uint8_t buf[CHUNK_HEADER_MAX];

	fx->c.hdr.size = 12345;
	assert_int_equal(stripe_write_headers_durable(&fx->c, true), 0);
	for (int pos = 0; pos < N; pos++) {
		chunk_header h;
		peek(fx, &fx->c, pos, 0, buf, sizeof(buf));
		assert_int_equal(chunk_header_decode(buf, sizeof(buf), &h, NULL), 0);
		assert_int_equal(h.position, pos);
		assert_int_equal(h.rotation, fx->c.hdr.rotation);
		assert_int_equal(h.size, 12345);
		assert_memory_equal(h.file_id, fx->c.hdr.file_id, 16);
		assert_memory_equal(h.volume_uuid, volume_uuid(fx->v), 16);
	}
}

/* Strip j of stripe s holds data strip j or parity j-k, and its record
 * names s, the generation, j, the size, and the checksum of FORMAT.md 4.2:
 * SHA-256 of volume uuid, file id, record bytes 0..31 and the strip; in
 * version 3 of them and the strip's tag (one 4 KiB block), which is the
 * first 16 bytes of SHA-256 of them, le64(0), 8 zero bytes and the strip. */
static void check_stripe_on_members(fixture *fx, uint64_t s, const uint8_t *data, uint64_t gen,
                                    uint64_t size)
{
	uint8_t par[M][STRIP], *pp[M] = { par[0], par[1] }, sum[SHA256_DIGEST_LENGTH];
	uint8_t in[80 + STRIP], tag[CHUNK_TAG_SIZE];
	const uint8_t *dp[K];
	strip_copy sc;
	bool v3 = fx->c.lay.version >= 3;

	_Static_assert(STRIP == CHUNK_BLOCK_SIZE, "one tag a strip");
	for (int j = 0; j < K; j++)
		dp[j] = data + (size_t)j * STRIP;
	assert_int_equal(ec_encode(fx->c.code, dp, pp, STRIP), 0);
	for (int pos = 0; pos < N; pos++) {
		chunk_record r;
		take_strip(fx, &fx->c, pos, s, &sc);
		assert_memory_equal(sc.data, pos < K ? dp[pos] : par[pos - K], STRIP);
		chunk_record_decode(sc.rec, &r);
		assert_int_equal(r.stripe, s);
		assert_int_equal(r.generation, gen);
		assert_int_equal(r.position, pos);
		assert_int_equal(r.flags, CHUNK_RECORD_WRITTEN);
		assert_int_equal(r.size, size);
		memcpy(in, fx->c.hdr.volume_uuid, 16);
		memcpy(in + 16, fx->c.hdr.file_id, 16);
		memcpy(in + 32, sc.rec, 32);
		if (v3) {
			assert_int_equal(layout_tags_size(&fx->c.lay), CHUNK_TAG_SIZE);
			peek(fx, &fx->c, pos, layout_tags_offset(&fx->c.lay, s), tag, sizeof(tag));
			memset(in + 64, 0, 16); /* le64(0) and 8 zero bytes */
			memcpy(in + 80, sc.data, STRIP);
			SHA256(in, sizeof(in), sum);
			assert_memory_equal(tag, sum, CHUNK_TAG_SIZE);
			memcpy(in + 64, tag, CHUNK_TAG_SIZE);
			SHA256(in, 64 + CHUNK_TAG_SIZE, sum);
		} else {
			memcpy(in + 64, sc.data, STRIP);
			SHA256(in, 64 + STRIP, sum);
		}
		assert_memory_equal(sc.rec + 32, sum, sizeof(sum));
	}
}

static void test_commit_lands_as_documented(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(3, 2);
	char hex[33];

	assert_int_equal(commit(fx, 0, 3, data, 7), 0);
	for (uint64_t s = 0; s < 3; s++)
		check_stripe_on_members(fx, s, data + s * STRIPE, 7, 3 * STRIPE);
	assert_int_equal(fx->c.written_end, 3);
	/* A first write goes in place only: no journal. */
	journal_file_name(fx->c.hdr.file_id, hex);
	for (int mb = 0; mb < N; mb++) {
		char *j = g_strdup_printf("%s/%s/%s", fx->mb.path[mb], JOURNAL_DIR, hex);
		assert_int_equal(access(j, F_OK), -1);
		g_free(j);
	}
	/* A commit in the second record group. */
	assert_int_equal(commit(fx, 70, 1, data, 8), 0);
	check_stripe_on_members(fx, 70, data, 8, 71 * STRIPE);
	g_free(data);
}

/* An overwrite (below written_end) is journaled on every member first;
 * its in-place writes are unsynced until stripe_sync. */
static void test_overwrite_is_journaled(void **state)
{
	fixture *fx = *state;
	uint8_t *a = random_stripes(2, 3), *b = random_stripes(2, 4);
	char hex[33];

	assert_int_equal(commit(fx, 1, 2, a, 2), 0);
	assert_false(fx->c.inplace_unsynced);
	assert_int_equal(commit(fx, 1, 2, b, 3), 0);
	assert_true(fx->c.inplace_unsynced);
	journal_file_name(fx->c.hdr.file_id, hex);
	for (int mb = 0; mb < N; mb++) {
		char *j = g_strdup_printf("%s/%s/%s", fx->mb.path[mb], JOURNAL_DIR, hex);
		struct stat st;
		assert_int_equal(stat(j, &st), 0);
		assert_int_equal(st.st_size, JOURNAL_HEADER_SIZE + 2 * STRIP);
		g_free(j);
	}
	assert_int_equal(stripe_sync(&fx->c, true), 0);
	assert_false(fx->c.inplace_unsynced);
	check_stripe_on_members(fx, 1, b, 3, 3 * STRIPE);
	check_stripe_on_members(fx, 2, b + STRIPE, 3, 3 * STRIPE);
	assert_run(fx, 1, 2, b);
	g_free(a);
	g_free(b);
}

/* Runs a commit or fetch cannot take are refused, and write nothing. */
static void test_bad_runs_refused(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(STRIPE_FETCH_RUN + 1, 5);
	snapshot sn;

	snap_take(fx, &sn);
	assert_int_equal(commit(fx, 0, 0, data, 2), -EINVAL);
	assert_int_equal(commit(fx, 0, STRIPE_BATCH + 1, data, 2), -EINVAL);
	uint64_t g1 = layout_group_end(&fx->c.lay, 1); /* the first stripe of a group */
	assert_int_equal(commit(fx, g1 - 2, 4, data, 2), -EINVAL);
	snap_check(fx, &sn);
	assert_int_equal(fetch_run(fx, 0, 0, data), -EINVAL);
	assert_int_equal(fetch_run(fx, 0, STRIPE_FETCH_RUN + 1, data), -EINVAL);
	assert_int_equal(fetch_run(fx, g1 - 1, 2, data), -EINVAL);
	uint64_t gen[2] = { 2, 2 }, size[2] = { 0, 0 };
	assert_int_equal(stripe_write_strips(&fx->c, 0, g1 - 1, 2, data, gen, size),
	                 -EINVAL);
	snap_check(fx, &sn);
	snap_free(&sn);
	g_free(data);
}

/* ---- fetches ---- */

static void test_fetch_round_trip(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(5, 6), *got = g_malloc(STRIPE);
	uint8_t *zeros = g_malloc0(STRIPE);

	assert_int_equal(commit(fx, 0, 5, data, 3), 0);
	for (uint64_t s = 0; s < 5; s++)
		assert_stripe(fx, s, data + s * STRIPE);
	assert_run(fx, 0, 5, data);
	assert_run(fx, 2, 3, data + 2 * STRIPE);
	/* Only the wanted strips are filled. */
	for (uint64_t want = 1; want <= ALL_DATA; want++) {
		memset(got, 0xee, STRIPE);
		assert_int_equal(fetch_want(fx, 1, want, got), 0);
		for (int j = 0; j < K; j++) {
			const uint8_t *g = got + (size_t)j * STRIP;
			if (want >> j & 1)
				assert_memory_equal(g, data + STRIPE + (size_t)j * STRIP, STRIP);
			else if (g[0] != 0xee || memcmp(g, g + 1, STRIP - 1))
				fail_msg("want %#llx: strip %d was written", (unsigned long long)want, j);
		}
	}
	/* Stripes never written read as zeros: in the chunk, past its end. */
	assert_int_equal(commit(fx, 9, 1, data, 4), 0);
	assert_stripe(fx, 7, zeros);
	assert_stripe(fx, 200, zeros);
	assert_int_equal(health_count(fx, "strips_decoded="), 0);
	assert_int_equal(health_count(fx, "checksum_failures="), 0);
	g_free(data);
	g_free(got);
	g_free(zeros);
}

/* Every set of up to m members without a chunk: both fetches decode;
 * with m+1, EIO.  Nothing is written (no member was read badly). */
static void test_decode_around_missing(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(2, 7), *got = g_malloc(2 * STRIPE);
	snapshot sn;

	assert_int_equal(commit(fx, 0, 2, data, 2), 0);
	snap_take(fx, &sn);
	for (uint64_t gone = 0; gone < 1u << N; gone++) {
		int cnt = __builtin_popcountll(gone);
		if (cnt > M + 1)
			continue;
		for (int mb = 0; mb < N; mb++)
			fx->c.state[mb] = gone >> mb & 1 ? CHUNK_MISSING : CHUNK_OK;
		assert_int_equal(stripe_usable_count(&fx->c), N - cnt);
		if (cnt <= M) {
			assert_stripe(fx, 1, data + STRIPE);
			assert_run(fx, 0, 2, data);
		} else {
			assert_fetch_fails(fx, 1);
			assert_int_equal(fetch_run(fx, 0, 2, got), -EIO);
		}
	}
	for (int mb = 0; mb < N; mb++)
		fx->c.state[mb] = CHUNK_OK;
	snap_check(fx, &sn);
	assert_true(health_count(fx, "strips_decoded=") > 0);
	snap_free(&sn);
	g_free(data);
	g_free(got);
}

/* Every set of up to m corrupt strips (positions): the stripe reads
 * exactly, and once a bad data strip sends the read to every position,
 * the self-healing read puts back the very bytes (strips and records)
 * that were there before the damage.  Bad parity alone is not read. */
static void test_corrupt_strips_decoded_and_rewritten(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(2, 8);
	snapshot sn;
	uint64_t healed = 0;
	int round = 0;

	assert_int_equal(commit(fx, 0, 2, data, 2), 0);
	snap_take(fx, &sn);
	for (uint64_t bad = 1; bad < 1u << N; bad++) {
		if (__builtin_popcountll(bad) > M)
			continue;
		for (int pos = 0; pos < N; pos++)
			if (bad >> pos & 1)
				flip_strip_byte(fx, pos, 1);
		if (round++ % 2)
			assert_stripe(fx, 1, data + STRIPE);
		else
			assert_run(fx, 0, 2, data);
		if (bad & ALL_DATA) {
			healed += (uint64_t)__builtin_popcountll(bad);
		} else {
			for (int pos = K; pos < N; pos++)
				if (bad >> pos & 1)
					flip_strip_byte(fx, pos, 1);
		}
		snap_check(fx, &sn);
		assert_int_equal(health_count(fx, "strips_healed="), healed);
	}
	for (int mb = 0; mb < N; mb++)
		assert_true(volume_member_ok(fx->v, mb));
	snap_free(&sn);
	g_free(data);
}

/* Damage to more than m strips of a stripe: EIO from both fetches, the
 * members left as they were, the other stripes still read. */
static void check_beyond_m(fixture *fx, const uint8_t *data, uint64_t bad, uint64_t missing)
{
	uint8_t *got = g_malloc(3 * STRIPE);
	snapshot sn;

	for (int pos = 0; pos < N; pos++)
		if (bad >> pos & 1)
			flip_strip_byte(fx, pos, 1);
	for (int pos = 0; pos < N; pos++)
		if (missing >> pos & 1)
			fx->c.state[member_of(fx, pos)] = CHUNK_MISSING;
	snap_take(fx, &sn);
	assert_fetch_fails(fx, 1);
	assert_int_equal(fetch_run(fx, 0, 3, got), -EIO);
	snap_check(fx, &sn);
	assert_stripe(fx, 0, data);
	assert_stripe(fx, 2, data + 2 * STRIPE);
	for (int pos = 0; pos < N; pos++) {
		fx->c.state[member_of(fx, pos)] = CHUNK_OK;
		if (bad >> pos & 1)
			flip_strip_byte(fx, pos, 1);
	}
	assert_stripe(fx, 1, data + STRIPE);
	snap_free(&sn);
	g_free(got);
}

static void test_more_than_m_bad_is_eio(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(3, 9);

	assert_int_equal(commit(fx, 0, 3, data, 2), 0);
	check_beyond_m(fx, data, 0x07, 0);    /* three data strips */
	check_beyond_m(fx, data, 0x31, 0);    /* one data, both parity */
	check_beyond_m(fx, data, 0x2a, 0);
	check_beyond_m(fx, data, 0x0c, 0x10); /* two corrupt, one missing */
	check_beyond_m(fx, data, 0x01, 0x30);
	g_free(data);
}

/* ---- the checksum binding ---- */

enum misplace { OTHER_POSITION, OTHER_STRIPE, OTHER_FILE, OTHER_VOLUME, RECORD_EDITED };

/* Another file of the same volume or, with another_volume, the
 * same file id under another volume uuid, that committed `data` at stripe
 * s with the generation and size of record r: the same strip and record
 * fields, a checksum that verifies only there. */
static void foreign_strip(fixture *fx, bool another_volume, uint64_t s, const uint8_t *data,
                          const chunk_record *r, int pos, strip_copy *sc)
{
	stripe_ctx o;
	ctx_open(&o, fx->v, &fx->mb, "other", another_volume ? FILE_SEED : OTHER_SEED);
	if (another_volume)
		o.hdr.volume_uuid[3] ^= 0x10;
	assert_int_equal(commit_at(&o, s, 1, data, r->generation, r->size), 0);
	take_strip(fx, &o, pos, s, sc);
	ctx_close(&o);
	for (int mb = 0; mb < N; mb++) {
		char *p = member_file(&fx->mb, mb, "other");
		unlink(p);
		g_free(p);
	}
}

/* Replaces position pos of stripe 1 by a strip that verifies only
 * somewhere else (or whose record was edited after its checksum). */
static void misplace(fixture *fx, enum misplace how, int pos, const uint8_t *data)
{
	strip_copy sc, own;
	chunk_record r;

	switch (how) {
	case OTHER_POSITION:
		take_strip(fx, &fx->c, (pos + 1) % N, 1, &sc);
		break;
	case OTHER_STRIPE:
		take_strip(fx, &fx->c, pos, 0, &sc);
		break;
	case OTHER_FILE:
	case OTHER_VOLUME:
		/* The same content in the same place: only the binding differs. */
		take_strip(fx, &fx->c, pos, 1, &own);
		chunk_record_decode(own.rec, &r);
		foreign_strip(fx, how == OTHER_VOLUME, 1, data + STRIPE, &r, pos, &sc);
		assert_memory_equal(sc.data, own.data, STRIP);
		assert_memory_equal(sc.rec, own.rec, 32);
		assert_memory_not_equal(sc.rec + 32, own.rec + 32, 16);
		break;
	case RECORD_EDITED:
		take_strip(fx, &fx->c, pos, 1, &sc);
		chunk_record_decode(sc.rec, &r);
		r.generation++;
		chunk_record_encode(&r, sc.rec);
		break;
	}
	put_strip(fx, pos, 1, &sc);
}

static void check_binding(fixture *fx, enum misplace how, const uint8_t *data)
{
	uint8_t bufs[N * STRIP];
	strip_judgment p[STRIPE_MAX_N];
	snapshot clean, damaged;

	snap_take(fx, &clean);
	/* One strip: probed as not verified, decoded around and rewritten. */
	misplace(fx, how, 2, data);
	assert_int_equal(stripe_probe(&fx->c, 1, bufs, p), 0);
	for (int pos = 0; pos < N; pos++) {
		assert_true(rules_strip_read(&p[pos]));
		assert_int_equal(p[pos].v == STRIP_GOOD, pos != 2);
	}
	/* The generation counts only from a record naming this stripe and
	 * position. */
	assert_int_equal(p[2].gen, how == OTHER_POSITION || how == OTHER_STRIPE ? 0
	                 : how == RECORD_EDITED ? 3 : 2);
	assert_stripe(fx, 1, data + STRIPE);
	snap_check(fx, &clean);
	/* m of them, a data and a parity strip. */
	misplace(fx, how, 0, data);
	misplace(fx, how, K, data);
	assert_run(fx, 0, 3, data);
	snap_check(fx, &clean);
	/* m+1: EIO, and nothing written. */
	for (int pos = 1; pos <= M + 1; pos++)
		misplace(fx, how, pos, data);
	snap_take(fx, &damaged);
	assert_fetch_fails(fx, 1);
	snap_check(fx, &damaged);
	snap_free(&damaged);
	snap_restore(fx, &clean);
	assert_stripe(fx, 1, data + STRIPE);
	snap_free(&clean);
}

static void test_strips_bound_to_their_place(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(3, 10);

	assert_int_equal(commit(fx, 0, 3, data, 2), 0);
	check_binding(fx, OTHER_POSITION, data);
	check_binding(fx, OTHER_STRIPE, data);
	check_binding(fx, OTHER_FILE, data);
	check_binding(fx, OTHER_VOLUME, data);
	check_binding(fx, RECORD_EDITED, data);
	g_free(data);
}

/* Strips of an older commit verify, but the highest generation that k
 * strips share wins: old strips on m members are erasures (and are
 * rewritten), on m+1 the stripe is EIO (no generation has k), and on k
 * members the old content is read whole, never a mix. */
static void test_older_generation(void **state)
{
	fixture *fx = *state;
	uint8_t *a = random_stripes(1, 11), *b = random_stripes(1, 12);
	strip_copy old[N];
	strip_judgment p[STRIPE_MAX_N];
	uint8_t bufs[N * STRIP];

	assert_int_equal(commit(fx, 0, 1, a, 5), 0);
	for (int pos = 0; pos < N; pos++)
		take_strip(fx, &fx->c, pos, 0, &old[pos]);
	assert_int_equal(commit(fx, 0, 1, b, 6), 0);
	assert_int_equal(stripe_sync(&fx->c, true), 0);
	put_strip(fx, 1, 0, &old[1]);
	put_strip(fx, 4, 0, &old[4]);
	assert_int_equal(stripe_probe(&fx->c, 0, bufs, p), 0);
	assert_true(p[1].v == STRIP_GOOD && p[4].v == STRIP_GOOD && p[0].v == STRIP_GOOD);
	assert_int_equal(p[1].gen, 5);
	assert_int_equal(p[0].gen, 6);
	assert_stripe(fx, 0, b);
	check_stripe_on_members(fx, 0, b, 6, STRIPE);
	for (int pos = 0; pos <= M; pos++)
		put_strip(fx, pos, 0, &old[pos]);
	assert_fetch_fails(fx, 0);
	put_strip(fx, M + 1, 0, &old[M + 1]);
	assert_stripe(fx, 0, a);
	g_free(a);
	g_free(b);
}

/* With k = m = 2 two generations can each have k strips: once the data
 * strips disagree (so that every position is read), the newer one is the
 * stripe's content. */
static void test_newest_generation_wins(void **state)
{
	(void)state;
	fixture small = { 0 };
	uint8_t *a = random_stripes(1, 20), *b = random_stripes(1, 21), *got = g_malloc(STRIPE);
	uint8_t *p[2] = { got, got + STRIP };
	strip_copy old[4];

	members_make(&small.mb, 4);
	small.v = open_shape(&small.mb, 2, 2, false);
	ctx_open(&small.c, small.v, &small.mb, "f", FILE_SEED);
	assert_int_equal(commit_at(&small.c, 0, 1, a, 5, 2 * STRIP), 0);
	for (int pos = 0; pos < 4; pos += 2)
		take_strip(&small, &small.c, pos, 0, &old[pos]);
	assert_int_equal(commit_at(&small.c, 0, 1, b, 6, 2 * STRIP), 0);
	for (int pos = 0; pos < 4; pos += 2)
		put_strip(&small, pos, 0, &old[pos]);
	assert_int_equal(stripe_fetch(&small.c, 0, 3, p), 0);
	assert_memory_equal(got, b, 2 * STRIP);
	ctx_close(&small.c);
	volume_close(small.v);
	members_remove(&small.mb);
	g_free(a);
	g_free(b);
	g_free(got);
}

/* ---- degraded commits ---- */

/* A member failed in the volume gets nothing; one whose writes fail is
 * failed by the commit; fewer than k usable members refuse the commit
 * before anything is written. */
static void test_degraded_commit(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(1, 13);
	int failed = member_of(fx, K);
	struct stat st;
	snapshot sn;

	assert_true(volume_member_error(fx->v, failed, EIO, "test"));
	assert_false(stripe_member_usable(&fx->c, failed));
	assert_int_equal(fx->c.state[failed], CHUNK_FAILED);
	assert_int_equal(commit(fx, 0, 1, data, 2), 0);
	char *path = member_file(&fx->mb, failed, "f");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, CHUNK_HEADER_SIZE_V2);
	g_free(path);
	assert_stripe(fx, 0, data);
	/* m+1 without a current chunk: refused, nothing written. */
	fx->c.state[member_of(fx, 0)] = CHUNK_STALE;
	fx->c.state[member_of(fx, 1)] = CHUNK_CORRUPT;
	snap_take(fx, &sn);
	assert_int_equal(commit(fx, 1, 1, data, 3), -EIO);
	snap_check(fx, &sn);
	snap_free(&sn);
	g_free(data);
}

/* Member errors through fault injection: a write error fails the member
 * (the commit succeeds on the others), an error that is no sign of a
 * broken member (EFBIG) leaves it in service but out of this file, and a
 * read error makes an erasure and fails the member. */
static void test_member_errors(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	fixture *fx = *state;
	uint8_t *data = random_stripes(2, 14);
	int w = member_of(fx, 1), r = member_of(fx, 5), big = member_of(fx, 3);
	char spec[200];
	struct stat st;

	ctx_close(&fx->c);
	volume_close(fx->v);
	/* A member's first write is its chunk header; then stripe 0's commit
	 * writes its record and strip in one (they lie together), a later
	 * commit its strips and then its records. */
	snprintf(spec, sizeof(spec), "member=%d,op=write,after=1,errno=EIO;"
	         "member=%d,op=read,errno=EIO;member=%d,op=write,after=2,errno=27", w, r, big);
	setenv("ECFS_FAULT", spec, 1);
	fx->v = open_volume(&fx->mb, false);
	unsetenv("ECFS_FAULT");
	ctx_open(&fx->c, fx->v, &fx->mb, "f", FILE_SEED);
	assert_int_equal(commit(fx, 0, 1, data, 2), 0);
	assert_false(volume_member_ok(fx->v, w));
	assert_int_equal(fx->c.state[w], CHUNK_FAILED);
	assert_int_equal(commit(fx, 1, 1, data + STRIPE, 3), 0);
	assert_true(volume_member_ok(fx->v, big));
	assert_int_equal(fx->c.state[big], CHUNK_FAILED);
	char *path = member_file(&fx->mb, big, "f");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, layout_chunk_length(&fx->c.lay, 1));
	g_free(path);
	/* Stripe 0 lacks position 1 (w): the read asks every member, r
	 * answers with an error and is failed, the other four decode. */
	fx->c.state[big] = CHUNK_OK;
	assert_true(volume_member_ok(fx->v, r));
	assert_stripe(fx, 0, data);
	assert_false(volume_member_ok(fx->v, r));
	assert_int_equal(fx->c.state[r], CHUNK_FAILED);
	assert_true(volume_usable(fx->v));
	g_free(data);
#else
	(void)state;
	skip();
#endif
}

/* ---- single strips, probes, the end of the file ---- */

static void test_write_strips(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(3, 15), zero[CHUNK_RECORD_SIZE] = { 0 };
	strip_copy wiped, sc;
	snapshot sn;

	/* Stripes 1 and 2: one record group in either chunk version. */
	assert_int_equal(commit(fx, 0, 3, data, 4), 0);
	snap_take(fx, &sn);
	memset(&wiped, 0, sizeof(wiped));
	put_strip(fx, 2, 2, &wiped);
	put_strip(fx, 3, 2, &wiped);
	/* The one writer of single strips puts back the very bytes. */
	assert_int_equal(stripe_write_strip(&fx->c, member_of(fx, 2), 2,
	                                    data + 2 * STRIPE + 2 * STRIP, 4, 3 * STRIPE), 0);
	uint64_t gen[2] = { 4, 0 }, size[2] = { 3 * STRIPE, 0 };
	uint8_t two[2 * STRIP];
	take_strip(fx, &fx->c, 3, 1, &sc);
	memcpy(two, sc.data, STRIP);
	memcpy(two + STRIP, data + 2 * STRIPE + 3 * STRIP, STRIP);
	/* Generation 0 is a blank record: a hole. */
	assert_int_equal(stripe_write_strips(&fx->c, member_of(fx, 3), 1, 2, two, gen, size), 0);
	take_strip(fx, &fx->c, 3, 2, &sc);
	assert_memory_equal(sc.rec, zero, CHUNK_RECORD_SIZE);
	assert_memory_equal(sc.data, two + STRIP, STRIP);
	gen[0] = 4;
	assert_int_equal(stripe_write_strips(&fx->c, member_of(fx, 3), 2, 1, two + STRIP, gen, size),
	                 0);
	snap_check(fx, &sn);
	snap_free(&sn);
	g_free(data);
}

static void test_probe(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(1, 16), bufs[N * STRIP];
	strip_judgment p[STRIPE_MAX_N];

	assert_int_equal(commit(fx, 0, 1, data, 9), 0);
	fx->c.state[member_of(fx, 4)] = CHUNK_MISSING;
	assert_int_equal(stripe_probe(&fx->c, 0, bufs, p), 0);
	for (int pos = 0; pos < N; pos++) {
		assert_int_equal(rules_strip_read(&p[pos]), pos != 4);
		assert_int_equal(p[pos].v == STRIP_GOOD, pos != 4);
		assert_int_equal(p[pos].gen, pos != 4 ? 9 : 0);
		assert_false(p[pos].blank);
	}
	assert_memory_equal(bufs, data, STRIPE);
	/* A stripe never written: blank records, nothing verified. */
	assert_int_equal(stripe_probe(&fx->c, 1, bufs, p), 0);
	for (int pos = 0; pos < N; pos++)
		assert_int_equal(p[pos].blank, pos != 4);
	assert_false(p[0].v == STRIP_GOOD);
	fx->c.state[member_of(fx, 0)] = CHUNK_MISSING;
	fx->c.state[member_of(fx, 1)] = CHUNK_MISSING;
	assert_int_equal(stripe_probe(&fx->c, 0, bufs, p), -EIO);
	g_free(data);
}

/* The end scan finds what lies past a size; truncate cuts it: records
 * blanked, chunks shortened, the cut stripe reads as zeros. */
static void test_scan_end_and_truncate(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(3, 17), *zeros = g_malloc0(STRIPE);
	uint8_t rec[CHUNK_RECORD_SIZE];
	bool dirty = true;
	struct stat st;

	memset(data + 2 * STRIPE + 100, 0, STRIPE - 100); /* a last stripe of 100 bytes */
	assert_int_equal(commit_at(&fx->c, 0, 3, data, 2, 2 * STRIPE + 100), 0);
	assert_int_equal(stripe_scan_end(&fx->c, 2 * STRIPE + 100, &dirty), 0);
	assert_false(dirty);
	assert_int_equal(stripe_scan_end(&fx->c, 2 * STRIPE + 50, &dirty), 0);
	assert_true(dirty); /* the last stripe was committed when the file was longer */
	assert_int_equal(stripe_scan_end(&fx->c, 2 * STRIPE, &dirty), 0);
	assert_true(dirty); /* chunks longer than two stripes */
	assert_int_equal(stripe_truncate(&fx->c, 2), 0);
	for (int pos = 0; pos < N; pos++) {
		char *path = pos_file(fx, &fx->c, pos);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_size, layout_chunk_length(&fx->c.lay, 2));
		peek(fx, &fx->c, pos, layout_record_offset(&fx->c.lay, 2), rec, sizeof(rec));
		assert_true(chunk_record_is_blank(rec));
		g_free(path);
	}
	assert_int_equal(stripe_scan_end(&fx->c, 2 * STRIPE, &dirty), 0);
	assert_false(dirty);
	assert_stripe(fx, 2, zeros);
	assert_run(fx, 0, 2, data);
	g_free(data);
	g_free(zeros);
}

/* The hole rule (FORMAT.md 4.3, case 1): a first write cut short leaves
 * blank records; with more than m of them the stripe reads as zeros, its
 * content before that write; with m, as the write. */
static void test_first_write_cut_short(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(2, 18), *zeros = g_malloc0(STRIPE);
	uint8_t blank[CHUNK_RECORD_SIZE] = { 0 };

	assert_int_equal(commit(fx, 0, 2, data, 2), 0);
	for (int pos = 0; pos < M; pos++)
		poke(fx, 2 * pos + 1, layout_record_offset(&fx->c.lay, 1), blank, sizeof(blank));
	assert_stripe(fx, 1, data + STRIPE);
	check_stripe_on_members(fx, 1, data + STRIPE, 2, 2 * STRIPE); /* rewritten */
	for (int pos = 0; pos <= M; pos++)
		poke(fx, pos, layout_record_offset(&fx->c.lay, 1), blank, sizeof(blank));
	assert_stripe(fx, 1, zeros);
	assert_stripe(fx, 0, data);
	g_free(data);
	g_free(zeros);
}

/* A read-only volume decodes around a bad strip but never rewrites it. */
static void test_read_only_never_writes(void **state)
{
	fixture *fx = *state;
	uint8_t *data = random_stripes(1, 19);
	snapshot sn;

	assert_int_equal(commit(fx, 0, 1, data, 2), 0);
	ctx_close(&fx->c);
	volume_close(fx->v);
	fx->v = open_volume(&fx->mb, true);
	ctx_open(&fx->c, fx->v, &fx->mb, "f", FILE_SEED);
	flip_strip_byte(fx, 1, 0);
	snap_take(fx, &sn);
	assert_stripe(fx, 0, data);
	assert_run(fx, 0, 1, data);
	snap_check(fx, &sn);
	assert_int_equal(health_count(fx, "strips_healed="), 0);
	assert_int_equal(volume_failed_count(fx->v), 0);
	snap_free(&sn);
	g_free(data);
}

/* ---- members in memory ---- */

/* A member's worker held busy until the test opens the gate (or, should
 * a commit wait for the worker, until a bound that only a failure
 * reaches). */
typedef struct gate {
	GMutex lock;
	GCond cond;
	bool open;
	int timed_out;
} gate;

static void gate_task(void *arg)
{
	gate *g = arg;
	gint64 until = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;

	g_mutex_lock(&g->lock);
	while (!g->open)
		if (!g_cond_wait_until(&g->cond, &g->lock, until)) {
			g->timed_out++;
			break;
		}
	g_mutex_unlock(&g->lock);
}

static int setup_memory(void **state)
{
	fixture *fx = g_new0(fixture, 1);
	char *root = g_strdup("/dev/shm/ecfs-stripe-XXXXXX");

	assert_non_null(g_mkdtemp(root));
	fx->mb = (members){ .root = root, .n = N };
	for (int i = 0; i < N; i++) {
		fx->mb.path[i] = g_strdup_printf("%s/m%d", root, i);
		assert_int_equal(mkdir(fx->mb.path[i], 0755), 0);
	}
	fx->v = open_volume(&fx->mb, false);
	ctx_open(&fx->c, fx->v, &fx->mb, "f", FILE_SEED);
	*state = fx;
	return 0;
}

/* Members on tmpfs: a first write, a journaled overwrite and the sync of
 * its chunks all complete while every member's worker is busy with
 * something else (so none of them went to a worker), and land.  Five
 * stripes: more than a stage of small calls moves (those go to the
 * relay). */
static void test_memory_members_commit_here(void **state)
{
	fixture *fx = *state;
	uint8_t *a = random_stripes(5, 21), *b = random_stripes(5, 22);
	memberio *mio = volume_memberio(fx->v);
	gate g = { .open = false };
	mio_batch held;

	g_mutex_init(&g.lock);
	g_cond_init(&g.cond);
	mio_batch_init(&held);
	for (int mb = 0; mb < N; mb++)
		memberio_submit(mio, mb, &held, gate_task, &g);
	assert_int_equal(commit(fx, 1, 5, a, 2), 0);
	assert_int_equal(commit(fx, 1, 5, b, 3), 0);
	assert_true(fx->c.inplace_unsynced);
	assert_int_equal(stripe_sync(&fx->c, true), 0);
	g_mutex_lock(&g.lock);
	int waited = g.timed_out;
	g.open = true;
	g_cond_broadcast(&g.cond);
	g_mutex_unlock(&g.lock);
	assert_int_equal(mio_batch_wait(&held), 0);
	assert_int_equal(waited, 0);
	for (uint64_t s = 1; s <= 5; s++)
		check_stripe_on_members(fx, s, b + (s - 1) * STRIPE, 3, 6 * STRIPE);
	assert_run(fx, 1, 5, b);
	g_mutex_clear(&g.lock);
	g_cond_clear(&g.cond);
	g_free(a);
	g_free(b);
}

/* The vote and the decode of one stripe (stripe_decode.h), on judged
 * strips made up here: the winner and its erasures, a stripe lost or cut
 * short, and the erasure mask handed to the decoder, NULL blocks left
 * alone. */
static void test_vote_and_decode_erasures(void **state)
{
	enum { k = 4, m = 2, n = k + m, len = 64 };
	strip_judgment st[n];
	stripe_vote vote;
	(void)state;

	for (int j = 0; j < n; j++)
		st[j] = (strip_judgment){ .v = STRIP_GOOD, .gen = 5, .size = 1000, .len = len };
	st[1] = (strip_judgment){ .v = STRIP_GOOD, .gen = 3, .size = 999, .len = len };
	st[4] = (strip_judgment){ .v = STRIP_BAD, .why = "checksum" };
	stripe_vote_take(st, n, k, m, 0, 0, 0, &vote);
	assert_int_equal(vote.outcome, STRIPE_VOTED);
	assert_int_equal(vote.best, 5);
	assert_int_equal(vote.size, 1000);
	assert_int_equal(vote.stale, (1u << 1) | (1u << 4));
	st[2] = (strip_judgment){ .v = STRIP_ERR };
	stripe_vote_take(st, n, k, m, 0, 0, 0, &vote);
	assert_int_equal(vote.outcome, STRIPE_LOST);
	assert_int_equal(vote.best, 0);
	/* a first write cut short: new strips beside blank ones */
	for (int j = 0; j < n; j++)
		st[j] = j < 3 ? (strip_judgment){ .v = STRIP_GOOD, .gen = 7, .size = 10, .len = len }
		              : (strip_judgment){ .v = STRIP_HOLE, .blank = true };
	stripe_vote_take(st, n, k, m, 3, 0, 0, &vote);
	assert_int_equal(vote.outcome, STRIPE_CUT_SHORT);
	assert_int_equal(vote.stale, 0x7);

	ec_code *code;
	ec_params p = { .kind = EC_RS_VANDERMONDE, .k = k, .m = m, .w = 8 };
	assert_int_equal(ec_create(&p, &code), 0);
	uint8_t buf[n][len], want[n][len];
	uint8_t *blocks[n];
	for (int j = 0; j < n; j++)
		blocks[j] = buf[j];
	fill_random(&buf[0][0], sizeof(buf[0]) * k, 9);
	assert_int_equal(ec_encode(code, (const uint8_t *const *)blocks, blocks + k, len), 0);
	memcpy(want, buf, sizeof(buf));
	assert_int_equal(stripe_decode_erased(code, blocks, n, 0, len), 0);
	memset(buf[3], 0xaa, len);
	memset(buf[5], 0xaa, len);
	blocks[5] = NULL; /* erased, not rebuilt */
	/* the bits from n up name no position */
	assert_int_equal(stripe_decode_erased(code, blocks, n, ~0ull << n | 0x28, len), 0);
	assert_memory_equal(buf[3], want[3], len);
	assert_int_equal(buf[5][0], 0xaa);
	/* more than m erasures: the decoder's error */
	assert_true(stripe_decode_erased(code, blocks, n, 0x29, len) < 0);
	ec_destroy(code);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	ecfs_log_init("test_stripe", false, false);
	const struct CMUnitTest tests[] = {
		T(test_headers_name_each_position),
		T(test_commit_lands_as_documented),
		T(test_overwrite_is_journaled),
		T(test_bad_runs_refused),
		T(test_fetch_round_trip),
		T(test_decode_around_missing),
		T(test_corrupt_strips_decoded_and_rewritten),
		T(test_more_than_m_bad_is_eio),
		T(test_strips_bound_to_their_place),
		T(test_older_generation),
		T(test_newest_generation_wins),
		T(test_degraded_commit),
		T(test_member_errors),
		T(test_write_strips),
		T(test_probe),
		T(test_scan_end_and_truncate),
		T(test_first_write_cut_short),
		T(test_read_only_never_writes),
		cmocka_unit_test_setup_teardown(test_memory_members_commit_here, setup_memory,
		                                teardown),
		cmocka_unit_test(test_vote_and_decode_erasures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
