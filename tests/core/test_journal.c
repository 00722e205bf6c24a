/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the write-hole closure (src/core/data/journal.c, its recovery in
 * src/core/data/journal_recovery.c, and their use in src/core/data/stripe_commit.c and
 * src/core/data/ecfile_io.c): the journal's byte format; that a
 * sequential first write journals nothing and an overwrite does; and
 * crash states built directly on member directories (every subset of
 * members reached by an interrupted overwrite, torn strips, journals on
 * too few members, a first write cut short, a truncate cut short), each
 * reopened with every set of up to m members hidden: every stripe must
 * read as its old or its new content, never fail.  Every journal header
 * field out of range, and records that are not the header's, refused.
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
#include "ecfile.h"
#include "journal.h"
#include "log.h"
#include "volume.h"

#define K 4
#define M 2
#define N (K + M)
#define STRIP 4096
#define STRIPE (K * STRIP)

/* ---- helpers ---- */

static volume *open_at(char *const *paths)
{
	volume_options o = { .geometry = { .k = K, .m = M }, .files.strip_size = STRIP };
	volume *v = NULL;
	char *msg = NULL;
	int rc = volume_open((const char *const *)paths, N, &o, &v, &msg);
	if (rc)
		fail_msg("volume_open: %d %s", rc, msg ? msg : "");
	return v;
}

/* A set of N member directories under root/name. */
typedef struct tree {
	char *path[N];
} tree;

static void tree_at(tree *t, const char *root, const char *name)
{
	for (int i = 0; i < N; i++)
		t->path[i] = g_strdup_printf("%s/%s/m%d", root, name, i);
}

static void tree_free(tree *t)
{
	for (int i = 0; i < N; i++)
		g_free(t->path[i]);
}

/* Recursive copy of a small member directory (regular files and
 * directories only: all a member holds here), in process for speed. */
static void copy_dir(const char *src, const char *dst)
{
	GDir *d = g_dir_open(src, 0, NULL);
	const char *e;
	struct stat st;

	assert_non_null(d);
	assert_int_equal(stat(src, &st), 0);
	assert_int_equal(mkdir(dst, st.st_mode & 07777), 0);
	while ((e = g_dir_read_name(d))) {
		char *s = g_build_filename(src, e, NULL), *t = g_build_filename(dst, e, NULL);
		assert_int_equal(lstat(s, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			copy_dir(s, t);
		} else {
			size_t len;
			uint8_t *data = slurp(s, &len);
			assert_non_null(data);
			assert_true(g_file_set_contents(t, (const char *)data, (gssize)len, NULL));
			chmod(t, st.st_mode & 07777);
			g_free(data);
		}
		g_free(s);
		g_free(t);
	}
	g_dir_close(d);
}

/* Copies the members of src to a fresh tree dst (replacing it). */
static void tree_copy(const tree *src, const tree *dst)
{
	for (int i = 0; i < N; i++) {
		rm_tree(dst->path[i]);
		char *parent = g_path_get_dirname(dst->path[i]);
		g_mkdir_with_parents(parent, 0755);
		g_free(parent);
		copy_dir(src->path[i], dst->path[i]);
	}
}

static uint8_t *read_path(const char *dir, const char *name, size_t *len)
{
	char *p = g_build_filename(dir, name, NULL);
	uint8_t *d = slurp(p, len);
	g_free(p);
	return d;
}

static void write_path(const char *dir, const char *name, const uint8_t *d, size_t len)
{
	char *p = g_build_filename(dir, name, NULL);
	assert_true(g_file_set_contents(p, (const char *)d, (gssize)len, NULL));
	g_free(p);
}

/* Journal file name (under the member root) of the file at name. */
static char *journal_of(const char *member, const char *name)
{
	size_t len;
	uint8_t *d = read_path(member, name, &len);
	chunk_header h;
	char hex[33];

	assert_non_null(d);
	assert_int_equal(chunk_header_decode(d, len, &h, NULL), 0);
	g_free(d);
	journal_file_name(h.file_id, hex);
	return g_strdup_printf("%s/%s", JOURNAL_DIR, hex);
}

static bool exists(const char *dir, const char *name)
{
	char *p = g_build_filename(dir, name, NULL);
	bool e = access(p, F_OK) == 0;
	g_free(p);
	return e;
}

/* Opens the volume of tree t with the members in `hidden` replaced by
 * empty directories (lost disks), and reads the file. */
static int read_hidden(const tree *t, uint64_t hidden, const char *name, uint8_t *buf,
                       size_t len)
{
	char *paths[N];
	ecfile *f;
	int rc;

	for (int i = 0; i < N; i++) {
		paths[i] = t->path[i];
		if (hidden >> i & 1) {
			rm_tree(t->path[i]);
			assert_int_equal(mkdir(t->path[i], 0755), 0);
		}
	}
	volume *v = open_at(paths);
	rc = ecfile_open(v, name, 0, &f);
	if (rc == 0) {
		ssize_t r = ecfile_read(f, buf, len, 0);
		rc = r < 0 ? (int)r : r != (ssize_t)len ? -ENODATA : 0;
		ecfile_release(f);
	}
	volume_close(v);
	return rc;
}

/* The sets of at most M hidden members. */
static int hide_sets(uint64_t *out)
{
	int cnt = 0;
	for (uint64_t h = 0; h < (1u << N); h++)
		if (__builtin_popcountll(h) <= M)
			out[cnt++] = h;
	return cnt;
}

/* ---- the journal's format ---- */

/* The records of a journaled commit as h describes it: stripes first.., its
 * position and generation, random sums. */
static void journal_records(journal_header *h)
{
	for (uint32_t i = 0; i < h->count && i < JOURNAL_MAX_STRIPES; i++) {
		chunk_record r = { .stripe = h->first + i, .generation = h->generation,
		                   .position = h->position, .flags = CHUNK_RECORD_WRITTEN,
		                   .size = 1000 };
		fill_random(r.sum, CHECKSUM_MAX, 10 + (uint64_t)i);
		chunk_record_encode(&r, h->records[i]);
	}
}

static void test_header_format(void **state)
{
	(void)state;
	journal_header h = { .position = 5, .count = 3, .first = 130, .generation = 77,
	                     .strip_size = 65536 }, g;
	uint8_t buf[JOURNAL_HEADER_SIZE];
	const char *why = NULL;

	fill_random(h.volume_uuid, 16, 1);
	fill_random(h.file_id, 16, 2);
	journal_records(&h);
	journal_header_encode(&h, buf);
	assert_memory_equal(buf, JOURNAL_MAGIC, 8);
	assert_int_equal(journal_header_decode(buf, &g, &why), 0);
	assert_memory_equal(g.volume_uuid, h.volume_uuid, 16);
	assert_memory_equal(g.file_id, h.file_id, 16);
	assert_int_equal(g.position, 5);
	assert_int_equal(g.count, 3);
	assert_int_equal(g.first, 130);
	assert_int_equal(g.generation, 77);
	assert_int_equal(g.strip_size, 65536);
	assert_memory_equal(g.records, h.records, 3 * CHUNK_RECORD_SIZE);
	/* Fixed offsets (docs/FORMAT.md 9). */
	assert_int_equal(buf[48], 5);
	assert_int_equal(buf[52], 3);
	assert_int_equal(buf[56], 130);
	assert_int_equal(buf[64], 77);
	assert_memory_equal(buf + JOURNAL_RECORDS_OFFSET + CHUNK_RECORD_SIZE, h.records[1],
	                    CHUNK_RECORD_SIZE);
	/* Any flipped byte (a torn or rotten header) is refused. */
	for (size_t off = 0; off < sizeof(buf); off += 97) {
		buf[off] ^= 0x40;
		assert_int_not_equal(journal_header_decode(buf, &g, &why), 0);
		buf[off] ^= 0x40;
	}
	/* An unknown version with a good sum: -EPROTO, never a guess. */
	buf[8] = 2;
	SHA256(buf, JOURNAL_HEADER_SIZE - 32, buf + JOURNAL_HEADER_SIZE - 32);
	assert_int_equal(journal_header_decode(buf, &g, &why), -EPROTO);
	/* Counts out of range. */
	h.count = JOURNAL_MAX_STRIPES + 1;
	journal_header_encode(&h, buf);
	assert_int_equal(journal_header_decode(buf, &g, &why), -EINVAL);
	h.count = 0;
	journal_header_encode(&h, buf);
	assert_int_equal(journal_header_decode(buf, &g, &why), -EINVAL);

	char hex[33];
	uint8_t id[16] = { 0x00, 0x1f, 0xa0, 0xff };
	journal_file_name(id, hex);
	assert_string_equal(hex, "001fa0ff000000000000000000000000");
}

/* Encodes h (sealed) after fixing its records (unless keep) and decodes
 * it: 0 or -EINVAL. */
static int journal_sealed(journal_header *h, bool keep)
{
	uint8_t buf[JOURNAL_HEADER_SIZE];
	journal_header g;
	const char *why = NULL;

	if (!keep)
		journal_records(h);
	journal_header_encode(h, buf);
	int rc = journal_header_decode(buf, &g, &why);
	assert_true(rc == 0 || (rc == -EINVAL && why));
	return rc;
}

/* Each field out of range alone, with a good sum: refused; the limits:
 * accepted; records that are not the commit's: refused. */
static void test_header_ranges(void **state)
{
	const journal_header base = { .position = 2, .count = 4, .first = 9, .generation = 5,
	                              .strip_size = 4096 };
	journal_header h;

	(void)state;
#define JH(rc, keep, ...) \
	do { \
		h = base; \
		__VA_ARGS__; \
		assert_int_equal(journal_sealed(&h, keep), rc); \
	} while (0)
	JH(0, false);
	JH(-EINVAL, false, h.position = JOURNAL_MAX_MEMBERS);
	JH(-EINVAL, false, h.generation = 0);
	JH(-EINVAL, false, h.generation = CHUNK_GENERATION_MAX + 1);
	JH(-EINVAL, false, h.strip_size = 0);
	JH(-EINVAL, false, h.strip_size = CHUNK_STRIP_MAX + 1);
	JH(-EINVAL, false, h.strip_size = UINT64_MAX);
	/* stripes first..first+count-1 past the stripe limit, or wrapping */
	JH(-EINVAL, false, h.first = CHUNK_STRIPE_LIMIT - 3);
	JH(-EINVAL, false, h.first = UINT64_MAX - 1);
	JH(0, false, h.first = CHUNK_STRIPE_LIMIT - 4);
	JH(0, false, h.position = JOURNAL_MAX_MEMBERS - 1; h.count = JOURNAL_MAX_STRIPES);
	JH(0, false, h.generation = CHUNK_GENERATION_MAX; h.strip_size = CHUNK_STRIP_MAX);
	/* the records must be the commit's, in order */
	journal_header ok = base;
	journal_records(&ok);
	chunk_record r;
	JH(-EINVAL, true, journal_records(&h); memset(h.records[1], 0, CHUNK_RECORD_SIZE));
	JH(-EINVAL, true, journal_records(&h); chunk_record_decode(ok.records[2], &r);
	   r.stripe++; chunk_record_encode(&r, h.records[2]));
	JH(-EINVAL, true, journal_records(&h); chunk_record_decode(ok.records[0], &r);
	   r.position++; chunk_record_encode(&r, h.records[0]));
	JH(-EINVAL, true, journal_records(&h); chunk_record_decode(ok.records[3], &r);
	   r.generation--; chunk_record_encode(&r, h.records[3]));
	JH(-EINVAL, true, journal_records(&h); chunk_record_decode(ok.records[3], &r);
	   r.size = UINT64_MAX; chunk_record_encode(&r, h.records[3]));
	JH(0, true, journal_records(&h));
#undef JH
}

/* ---- which commits are journaled ---- */

static void test_first_write_not_journaled(void **state)
{
	(void)state;
	members mb;
	uint8_t *data = g_malloc(20 * STRIPE), *got = g_malloc(20 * STRIPE);
	ecfile *f;

	members_make(&mb, N);
	volume *v = open_at(mb.path);
	fill_random(data, 20 * STRIPE, 3);
	assert_int_equal(ecfile_create(v, "/seq", O_CREAT | O_EXCL, 0644, getuid(), getgid(), &f), 0);
	for (size_t off = 0; off < 20 * STRIPE; off += 3 * STRIPE + 100) {
		size_t l = MIN(3 * STRIPE + 100, 20 * STRIPE - off);
		assert_int_equal(ecfile_write(f, data + off, l, (off_t)off), (ssize_t)l);
	}
	assert_int_equal(ecfile_fsync(f, 0), 0);
	/* A sequential first write wrote no journal at all. */
	for (int i = 0; i < N; i++)
		assert_false(exists(mb.path[i], JOURNAL_DIR));
	/* An overwrite of a stored stripe (partial: read-modify-write) is
	 * journaled on every member while the file is open ... */
	fill_random(data + 5 * STRIPE + 10, 100, 4);
	assert_int_equal(ecfile_write(f, data + 5 * STRIPE + 10, 100, 5 * STRIPE + 10), 100);
	assert_int_equal(ecfile_flush(f), 0);
	char *jname = journal_of(mb.path[0], "seq");
	for (int i = 0; i < N; i++) {
		size_t len;
		uint8_t *j = read_path(mb.path[i], jname, &len);
		journal_header h;
		assert_non_null(j);
		assert_int_equal(len, JOURNAL_HEADER_SIZE + STRIP);
		assert_int_equal(journal_header_decode(j, &h, NULL), 0);
		assert_int_equal(h.first, 5);
		assert_int_equal(h.count, 1);
		g_free(j);
	}
	/* ... and dropped at the last close, once the stripe is durable. */
	assert_int_equal(ecfile_release(f), 0);
	for (int i = 0; i < N; i++)
		assert_false(exists(mb.path[i], jname));
	assert_int_equal(ecfile_open(v, "/seq", 0, &f), 0);
	assert_int_equal(ecfile_read(f, got, 20 * STRIPE, 0), 20 * STRIPE);
	assert_memory_equal(got, data, 20 * STRIPE);
	assert_int_equal(ecfile_release(f), 0);
	volume_close(v);
	g_free(jname);
	members_remove(&mb);
	g_free(data);
	g_free(got);
}

/* The durable mark in member i's header of the file at name. */
static uint64_t durable_mark(const char *member, const char *name)
{
	size_t len;
	uint8_t *d = read_path(member, name, &len);
	chunk_header h;

	assert_non_null(d);
	assert_int_equal(chunk_header_decode(d, len, &h, NULL), 0);
	g_free(d);
	return h.durable;
}

/* Writes stripes [s0, s1) of data into /fa, whole, and flushes. */
static void write_stripes(ecfile *f, const uint8_t *data, int s0, int s1)
{
	for (int s = s0; s < s1; s++)
		assert_int_equal(ecfile_write(f, data + (size_t)s * STRIPE, STRIPE,
		                              (off_t)s * STRIPE), STRIPE);
	assert_int_equal(ecfile_flush(f), 0);
}

/* A file laid out by fallocate and written in a later open: the stripes
 * the layout gave a size but no content are first writes, not journaled,
 * while a stripe stored before is; with a member missing at the open,
 * whose records cannot be seen, they are all journaled. */
static void test_fallocated_not_journaled(void **state)
{
	(void)state;
	members mb;
	uint8_t *data = g_malloc(12 * STRIPE), *got = g_malloc(12 * STRIPE);
	ecfile *f;

	members_make(&mb, N);
	volume *v = open_at(mb.path);
	fill_random(data, 12 * STRIPE, 5);
	assert_int_equal(ecfile_create(v, "/fa", O_CREAT | O_EXCL, 0644, getuid(), getgid(), &f), 0);
	write_stripes(f, data, 0, 3);
	assert_int_equal(ecfile_fallocate(f, 0, 0, 12 * STRIPE), 0);
	assert_int_equal(ecfile_fsync(f, 0), 0);
	assert_int_equal(ecfile_release(f), 0);
	/* The mark covers what was stored, not the size the layout gave. */
	for (int i = 0; i < N; i++)
		assert_int_equal(durable_mark(mb.path[i], "fa"), 3);
	char *jname = journal_of(mb.path[0], "fa");

	assert_int_equal(ecfile_open(v, "/fa", 0, &f), 0);
	write_stripes(f, data, 3, 8);
	for (int i = 0; i < N; i++)
		assert_false(exists(mb.path[i], jname));
	write_stripes(f, data, 1, 2); /* stored before the layout */
	for (int i = 0; i < N; i++)
		assert_true(exists(mb.path[i], jname));
	assert_int_equal(ecfile_release(f), 0);
	volume_close(v);

	/* Member 5's chunk gone at the next open: stripes 8.. may hold records
	 * there for all that can be seen. */
	char *chunk = g_build_filename(mb.path[5], "fa", NULL), *away = g_strconcat(chunk, ".away", NULL);
	assert_int_equal(rename(chunk, away), 0);
	v = open_at(mb.path);
	assert_int_equal(ecfile_open(v, "/fa", 0, &f), 0);
	write_stripes(f, data, 8, 12);
	assert_true(exists(mb.path[0], jname));
	assert_int_equal(ecfile_release(f), 0);
	assert_int_equal(ecfile_open(v, "/fa", 0, &f), 0);
	assert_int_equal(ecfile_read(f, got, 12 * STRIPE, 0), 12 * STRIPE);
	assert_memory_equal(got, data, 12 * STRIPE);
	assert_int_equal(ecfile_release(f), 0);
	volume_close(v);
	g_free(chunk);
	g_free(away);
	g_free(jname);
	members_remove(&mb);
	g_free(data);
	g_free(got);
}

/* ---- crash states of an overwrite ---- */

typedef struct crash_fx {
	members mb;   /* the live volume's members */
	char *root;   /* holds the snapshots and states */
	tree live, old, new, st;
} crash_fx;

static int crash_setup(void **state)
{
	crash_fx *cx = g_new0(crash_fx, 1);
	/* Thousands of crash states, each opened (and synced): on tmpfs when
	 * there is one, as a disk's syncs would make this take minutes. */
	cx->root = g_strdup("/dev/shm/ecfs-journal-XXXXXX");
	if (!g_mkdtemp(cx->root)) {
		g_free(cx->root);
		cx->root = g_dir_make_tmp("ecfs-journal-XXXXXX", NULL);
	}
	/* The live volume there too (removed with the root). */
	for (int i = 0; i < N; i++) {
		cx->mb.path[i] = g_strdup_printf("%s/live/m%d", cx->root, i);
		g_mkdir_with_parents(cx->mb.path[i], 0755);
		cx->live.path[i] = g_strdup(cx->mb.path[i]);
	}
	tree_at(&cx->old, cx->root, "old");
	tree_at(&cx->new, cx->root, "new");
	tree_at(&cx->st, cx->root, "state");
	*state = cx;
	return 0;
}

static int crash_teardown(void **state)
{
	crash_fx *cx = *state;
	for (int i = 0; i < N; i++)
		g_free(cx->mb.path[i]);
	rm_tree(cx->root);
	g_free(cx->root);
	tree_free(&cx->live);
	tree_free(&cx->old);
	tree_free(&cx->new);
	tree_free(&cx->st);
	g_free(cx);
	return 0;
}

/* Where stripe s sits in a chunk of a new volume (docs/FORMAT.md 4). */
static layout chunk_geometry(void)
{
	layout l;
	layout_init(&l, K, M, STRIP, 0);
	layout_set_version(&l, CHUNK_FORMAT_VERSION, 1);
	return l;
}

static size_t strip_off(uint64_t s)
{
	layout l = chunk_geometry();
	return layout_strip_offset(&l, s);
}

static size_t record_off(uint64_t s)
{
	layout l = chunk_geometry();
	return layout_record_offset(&l, s);
}

/* The file /f with content a (len bytes) in the "old" snapshot, and in
 * the "new" one the same after an overwrite with b (blen bytes at off),
 * taken while the file is open (its journal still there). */
static void create_file(crash_fx *cx, const uint8_t *a, size_t len, const tree *snapshot)
{
	ecfile *f;
	volume *v = open_at(cx->mb.path);
	assert_int_equal(ecfile_create(v, "/f", O_CREAT | O_EXCL, 0644, getuid(), getgid(), &f), 0);
	assert_int_equal(ecfile_write(f, a, len, 0), (ssize_t)len);
	assert_int_equal(ecfile_release(f), 0);
	volume_close(v);
	tree_copy(&cx->live, snapshot);
}

static char *snapshot_overwrite(crash_fx *cx, const uint8_t *a, size_t len, const uint8_t *b,
                                size_t blen, off_t off)
{
	ecfile *f;
	create_file(cx, a, len, &cx->old);
	volume *v = open_at(cx->mb.path);
	assert_int_equal(ecfile_open(v, "/f", 0, &f), 0);
	assert_int_equal(ecfile_write(f, b, blen, off), (ssize_t)blen);
	assert_int_equal(ecfile_flush(f), 0);
	tree_copy(&cx->live, &cx->new);
	assert_int_equal(ecfile_release(f), 0);
	volume_close(v);
	return journal_of(cx->new.path[0], "f");
}

/* Puts journal bytes j (jl of them) on member i of the state. */
static void put_journal(crash_fx *cx, int i, const char *jname, const uint8_t *j, size_t jl)
{
	char *dir = g_build_filename(cx->st.path[i], JOURNAL_DIR, NULL);
	g_mkdir_with_parents(dir, 0700);
	g_free(dir);
	write_path(cx->st.path[i], jname, j, jl);
}

/* Every subset of members reached by the in-place stage of an overwrite
 * of stripe 1 (the others torn: strip written, record not; or untouched),
 * journals on every member: the stripe reads as the new content, with any
 * m members hidden at the reopen, and after recovery with any m hidden. */
static void test_overwrite_crash_states(void **state)
{
	crash_fx *cx = *state;
	const size_t len = 3 * STRIPE;
	uint8_t *a = g_malloc(len), *b = g_malloc(len), *got = g_malloc(len);
	uint64_t hides[64];
	int nh = hide_sets(hides);

	fill_random(a, len, 10);
	memcpy(b, a, len);
	fill_random(b + STRIPE, STRIPE, 11);
	/* "new": in place and journal complete. */
	char *jname = snapshot_overwrite(cx, a, len, b + STRIPE, STRIPE, STRIPE);
	for (int i = 0; i < N; i++)
		assert_true(exists(cx->new.path[i], jname));

	for (uint64_t reached = 0; reached < (1u << N); reached++) {
		for (int h = 0; h < nh; h += reached % 4 ? 5 : 1) {
			tree_copy(&cx->old, &cx->st);
			for (int i = 0; i < N; i++) {
				size_t nl, jl, ol;
				uint8_t *nc = read_path(cx->new.path[i], "f", &nl);
				uint8_t *j = read_path(cx->new.path[i], jname, &jl);
				uint8_t *oc = read_path(cx->old.path[i], "f", &ol);
				put_journal(cx, i, jname, j, jl);
				if (reached >> i & 1)
					write_path(cx->st.path[i], "f", nc, nl);
				else if ((reached + (uint64_t)i) % 2) {
					/* Torn: the strip went down, its record did not. */
					memcpy(oc + strip_off(1), nc + strip_off(1), STRIP);
					write_path(cx->st.path[i], "f", oc, ol);
				}
				g_free(nc);
				g_free(j);
				g_free(oc);
			}
			memset(got, 0, len);
			int rc = read_hidden(&cx->st, hides[h], "/f", got, len);
			if (rc)
				fail_msg("reached 0x%llx hidden 0x%llx: read failed: %d",
				         (unsigned long long)reached, (unsigned long long)hides[h], rc);
			if (memcmp(got, b, len))
				fail_msg("reached 0x%llx hidden 0x%llx: not the new content",
				         (unsigned long long)reached, (unsigned long long)hides[h]);
			if (h != 0 && reached % 7)
				continue;
			/* After recovery (with nothing hidden), the stripe is whole
			 * on every member: any m may go.  The journals are gone. */
			for (int i = 0; i < N; i++)
				if (!(hides[h] >> i & 1))
					assert_false(exists(cx->st.path[i], jname));
			for (int h2 = 1; h2 < nh && hides[h] == 0; h2 += 3) {
				tree t2;
				tree_at(&t2, cx->root, "state2");
				tree_copy(&cx->st, &t2);
				assert_int_equal(read_hidden(&t2, hides[h2], "/f", got, len), 0);
				assert_memory_equal(got, b, len);
				tree_free(&t2);
			}
		}
	}
	g_free(jname);
	g_free(a);
	g_free(b);
	g_free(got);
}

/* A journal on fewer than k members: the barrier was never passed, the
 * strips in place are the old ones, and the journal is discarded. */
static void test_journal_short_of_k(void **state)
{
	crash_fx *cx = *state;
	const size_t len = 3 * STRIPE;
	uint8_t *a = g_malloc(len), *got = g_malloc(len), *b = g_malloc(STRIPE);

	fill_random(a, len, 20);
	fill_random(b, STRIPE, 21);
	char *jname = snapshot_overwrite(cx, a, len, b, STRIPE, 2 * STRIPE);
	for (uint64_t js = 0; js < (1u << N); js++) {
		if (__builtin_popcountll(js) >= K)
			continue;
		tree_copy(&cx->old, &cx->st);
		for (int i = 0; i < N; i++) {
			size_t jl;
			uint8_t *j = read_path(cx->new.path[i], jname, &jl);
			if (js >> i & 1)
				put_journal(cx, i, jname, j, jl);
			else if (js % 3 == 1) /* a torn journal write */
				put_journal(cx, i, jname, j, JOURNAL_HEADER_SIZE + STRIP / 2);
			g_free(j);
		}
		assert_int_equal(read_hidden(&cx->st, js % 5 ? 0 : 3, "/f", got, len), 0);
		assert_memory_equal(got, a, len);
	}
	g_free(jname);
	g_free(a);
	g_free(b);
	g_free(got);
}

/* The "new" snapshot: /f written (a first write of len bytes), closed. */
static void snapshot_first_write(crash_fx *cx, const uint8_t *a, size_t len)
{
	create_file(cx, a, len, &cx->new);
}

/* A first write (in place, not journaled) cut short: every subset of
 * members got the new stripe, the others a blank record (with or without
 * the strip data).  The stripe is the new content or zeros, never EIO. */
static void test_first_write_cut_short(void **state)
{
	crash_fx *cx = *state;
	uint8_t *a = g_malloc(2 * STRIPE), *got = g_malloc(2 * STRIPE);
	uint8_t zero_rec[CHUNK_RECORD_SIZE] = { 0 };
	uint64_t hides[64];
	int nh = hide_sets(hides);

	fill_random(a, 2 * STRIPE, 30);
	snapshot_first_write(cx, a, 2 * STRIPE);
	for (uint64_t reached = 0; reached < (1u << N); reached++) {
		int nreached = __builtin_popcountll(reached);
		for (int h = 0; h < nh; h += (reached % 5 ? 4 : 1)) {
			tree_copy(&cx->new, &cx->st);
			for (int i = 0; i < N; i++) {
				size_t l;
				uint8_t *c = read_path(cx->st.path[i], "f", &l);
				if (!(reached >> i & 1)) {
					memcpy(c + record_off(1), zero_rec, sizeof(zero_rec));
					if (i % 2)
						memset(c + strip_off(1), 0, STRIP);
				}
				write_path(cx->st.path[i], "f", c, l);
				g_free(c);
			}
			int rc = read_hidden(&cx->st, hides[h], "/f", got, 2 * STRIPE);
			if (rc)
				fail_msg("reached 0x%llx hidden 0x%llx: read failed: %d",
				         (unsigned long long)reached, (unsigned long long)hides[h], rc);
			assert_memory_equal(got, a, STRIPE);
			int visible = __builtin_popcountll(reached & ~hides[h]);
			bool zeros = true;
			for (size_t x = STRIPE; x < 2 * STRIPE; x++)
				zeros &= got[x] == 0;
			if (memcmp(got + STRIPE, a + STRIPE, STRIPE) && !zeros)
				fail_msg("reached 0x%llx hidden 0x%llx: neither old nor new",
				         (unsigned long long)reached, (unsigned long long)hides[h]);
			if (visible >= K)
				assert_memory_equal(got + STRIPE, a + STRIPE, STRIPE);
			(void)nreached;
		}
	}
	g_free(a);
	g_free(got);
}

/* Drops (punches out) len bytes at off of the file: what a power cut
 * leaves of pages that never reached the disk. */
static void punch_path(const char *dir, const char *name, off_t off, off_t len)
{
	char *p = g_build_filename(dir, name, NULL);
	int fd = open(p, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len), 0);
	close(fd);
	g_free(p);
}

enum { UNSYNCED_LOST, SYNCED_LOST, UNSYNCED_ZEROED, CUT_KINDS };

/* cx->st: the first write of cx->new (or, SYNCED_LOST, the same fsync'd
 * in cx->old) with stripe 1's strip dropped (punched out) or, for
 * UNSYNCED_ZEROED, overwritten with zeros on the members in `dropped`. */
static void power_cut_state(crash_fx *cx, int kind, uint64_t dropped)
{
	tree_copy(kind == SYNCED_LOST ? &cx->old : &cx->new, &cx->st);
	for (int i = 0; i < N; i++) {
		size_t l;
		uint8_t *c;
		if (!(dropped >> i & 1))
			continue;
		if (kind != UNSYNCED_ZEROED) {
			punch_path(cx->st.path[i], "f", (off_t)strip_off(1), STRIP);
			continue;
		}
		c = read_path(cx->st.path[i], "f", &l);
		memset(c + strip_off(1), 0, STRIP);
		write_path(cx->st.path[i], "f", c, l);
		g_free(c);
	}
}

/* got holds stripe 0 of a and zeros (stripe 1 read as the hole it was). */
static void assert_hole_after_stripe0(const uint8_t *got, const uint8_t *a)
{
	assert_memory_equal(got, a, STRIPE);
	for (size_t x = STRIPE; x < 2 * STRIPE; x++)
		assert_int_equal(got[x], 0);
}

/* A power cut that kept the records of a first write on every member but
 * dropped the strip pages on more than m: the stripe was never synced, so
 * it reads as zeros (its old content), not EIO.  The same damage below the
 * header's durable mark (after an fsync) is a real loss: EIO; and so is
 * the strip overwritten with zeros that the chunk file holds (corruption,
 * not a lost page), synced or not.  Then the cuts of at most m strips with
 * m other members lost on top (hidden: fewer than k strips verify and not
 * every member can be read): the same answers. */
static void test_first_write_power_cut(void **state)
{
	crash_fx *cx = *state;
	uint8_t *a = g_malloc(2 * STRIPE), *got = g_malloc(2 * STRIPE);
	ecfile *f;

	fill_random(a, 2 * STRIPE, 50);
	snapshot_first_write(cx, a, 2 * STRIPE);
	volume *v = open_at(cx->mb.path);
	assert_int_equal(ecfile_open(v, "/f", 0, &f), 0);
	assert_int_equal(ecfile_fsync(f, 0), 0);
	assert_int_equal(ecfile_release(f), 0);
	volume_close(v);
	tree_copy(&cx->live, &cx->old); /* the same, fsync'd */
	for (int kind = 0; kind < CUT_KINDS; kind++)
		for (uint64_t dropped = 0; dropped < (1u << N); dropped++) {
			int cut = __builtin_popcountll(dropped);
			power_cut_state(cx, kind, dropped);
			int rc = read_hidden(&cx->st, 0, "/f", got, 2 * STRIPE);
			if (cut <= M) {
				assert_int_equal(rc, 0);
				assert_memory_equal(got, a, 2 * STRIPE);
			} else if (kind != UNSYNCED_LOST) {
				assert_int_equal(rc, -EIO);
			} else {
				assert_int_equal(rc, 0);
				assert_hole_after_stripe0(got, a);
			}
			if (cut == 0 || cut > M)
				continue;
			uint64_t hidden = 0;
			for (int i = 0; i < N && __builtin_popcountll(hidden) < M; i++)
				if (!(dropped >> i & 1))
					hidden |= 1ull << i;
			power_cut_state(cx, kind, dropped);
			rc = read_hidden(&cx->st, hidden, "/f", got, 2 * STRIPE);
			if (kind != UNSYNCED_LOST) {
				assert_int_equal(rc, -EIO);
				continue;
			}
			assert_int_equal(rc, 0);
			assert_hole_after_stripe0(got, a);
		}
	g_free(a);
	g_free(got);
}

/* A truncate cut short after the new size reached the headers: the
 * records and strips past it are still there.  The next open cuts them,
 * so growing the file again shows zeros, not the cut data. */
static void test_truncate_cut_short(void **state)
{
	crash_fx *cx = *state;
	const size_t len = 3 * STRIPE + 100, cut = STRIPE + 50;
	uint8_t *a = g_malloc(len), *got = g_malloc(len);
	ecfile *f;

	fill_random(a, len, 40);
	volume *v = open_at(cx->mb.path);
	assert_int_equal(ecfile_create(v, "/f", O_CREAT | O_EXCL, 0644, getuid(), getgid(), &f), 0);
	assert_int_equal(ecfile_write(f, a, len, 0), (ssize_t)len);
	assert_int_equal(ecfile_release(f), 0);
	volume_close(v);
	tree_copy(&cx->live, &cx->old);
	v = open_at(cx->mb.path);
	assert_int_equal(ecfile_open(v, "/f", 0, &f), 0);
	assert_int_equal(ecfile_truncate(f, (off_t)cut), 0);
	assert_int_equal(ecfile_release(f), 0);
	volume_close(v);
	tree_copy(&cx->live, &cx->new);
	for (int variant = 0; variant < 2; variant++) {
		/* The new headers over the old chunks; variant 1 also keeps the
		 * old last stripe (its tail not yet zeroed either). */
		tree_copy(&cx->old, &cx->st);
		for (int i = 0; i < N; i++) {
			size_t nl, ol;
			uint8_t *nc = read_path(cx->new.path[i], "f", &nl);
			uint8_t *oc = read_path(cx->st.path[i], "f", &ol);
			memcpy(oc, nc, CHUNK_HEADER_SIZE_V2);
			if (variant == 0) {
				memcpy(oc + record_off(1), nc + record_off(1), CHUNK_RECORD_SIZE);
				memcpy(oc + strip_off(1), nc + strip_off(1), STRIP);
			}
			write_path(cx->st.path[i], "f", oc, ol);
			g_free(nc);
			g_free(oc);
		}
		char *paths[N];
		for (int i = 0; i < N; i++)
			paths[i] = cx->st.path[i];
		v = open_at(paths);
		struct stat st;
		assert_int_equal(ecfile_open(v, "/f", 0, &f), 0);
		assert_int_equal(ecfile_fstat(f, &st), 0);
		assert_int_equal(st.st_size, cut);
		assert_int_equal(ecfile_truncate(f, (off_t)len), 0);
		memset(got, 0xee, len);
		assert_int_equal(ecfile_read(f, got, len, 0), (ssize_t)len);
		assert_memory_equal(got, a, cut);
		for (size_t x = cut; x < len; x++)
			if (got[x])
				fail_msg("variant %d: byte %zu past the cut reads %#x, not zero", variant, x,
				         got[x]);
		assert_int_equal(ecfile_release(f), 0);
		volume_close(v);
	}
	g_free(a);
	g_free(got);
}

int main(void)
{
	ecfs_log_init("test_journal", false, false);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_format),
		cmocka_unit_test(test_header_ranges),
		cmocka_unit_test(test_first_write_not_journaled),
		cmocka_unit_test(test_fallocated_not_journaled),
		cmocka_unit_test_setup_teardown(test_overwrite_crash_states, crash_setup, crash_teardown),
		cmocka_unit_test_setup_teardown(test_journal_short_of_k, crash_setup, crash_teardown),
		cmocka_unit_test_setup_teardown(test_first_write_cut_short, crash_setup, crash_teardown),
		cmocka_unit_test_setup_teardown(test_first_write_power_cut, crash_setup, crash_teardown),
		cmocka_unit_test_setup_teardown(test_truncate_cut_short, crash_setup, crash_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
