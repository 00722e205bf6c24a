/* SPDX-License-Identifier: MIT */
/*
 * Makes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<parser>/)
 * from real bytes: it creates a 4+2 volume in a temporary directory with
 * the storage core, writes files, an intent, missed records and extended
 * attributes through it, and copies what lands on the members; the
 * journal header, the small-write log and the saved listings come from
 * the core's encoders.
 *   make_seeds CORPUS_DIR [TEMP_PARENT]
 * Run it from a build (`build/tests/fuzz/make_seeds tests/fuzz/corpus`)
 * when a format changes, and commit what it writes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "chunk.h"
#include "dirstamps.h"
#include "ecfile.h"
#include "intent.h"
#include "journal.h"
#include "listing.h"
#include "saved_listings.h"
#include "smalllog.h"
#include "superblock.h"
#include "volume.h"
#include "xattrs.h"

#define K 4
#define M 2
#define N (K + M)
#define STRIP 4096

static const char *corpus;
static char *members[N];

static void die(const char *what, int err)
{
	fprintf(stderr, "make_seeds: %s: %s\n", what, g_strerror(err));
	exit(1);
}

static void put(const char *parser, const char *name, const void *bytes, size_t len)
{
	char *dir = g_build_filename(corpus, parser, NULL);
	char *path = g_build_filename(dir, name, NULL);
	GError *err = NULL;

	if (g_mkdir_with_parents(dir, 0755) < 0)
		die(dir, errno);
	if (!g_file_set_contents(path, bytes, (gssize)len, &err)) {
		fprintf(stderr, "make_seeds: %s\n", err->message);
		exit(1);
	}
	printf("%s (%zu bytes)\n", path, len);
	g_free(path);
	g_free(dir);
}

/* Member mb's copy of rel (beneath its root), whole. */
static uint8_t *member_file(int mb, const char *rel, size_t *len)
{
	char *path = g_build_filename(members[mb], rel, NULL);
	gchar *bytes = NULL;
	gsize got = 0;

	if (!g_file_get_contents(path, &bytes, &got, NULL))
		die(path, ENOENT);
	g_free(path);
	*len = got;
	return (uint8_t *)bytes;
}

static void write_file(volume *v, const char *path, size_t size)
{
	ecfile *f;
	uint8_t *buf = g_malloc(size);

	for (size_t i = 0; i < size; i++)
		buf[i] = (uint8_t)(i * 131 + i / 977);
	int rc = ecfile_create(v, path, O_RDWR | O_EXCL, 0644, 0, 0, &f);
	if (rc < 0)
		die(path, -rc);
	if (ecfile_write(f, buf, size, 0) != (ssize_t)size)
		die(path, EIO);
	rc = ecfile_release(f);
	if (rc < 0)
		die(path, -rc);
	g_free(buf);
}

/* The superblock, its key, and the chunks of two files (a short one and
 * one of several stripes) with and without that key before them. */
static void chunk_seeds(volume *v, uint8_t key[CHECKSUM_KEY_SIZE])
{
	static const struct { const char *path; size_t size; } files[] = {
		{ "/short", 100 }, { "/stripes", 3 * K * STRIP + 500 },
	};
	size_t len;
	uint8_t *sbt = member_file(0, ECFS_META_DIR "/" SUPERBLOCK_FILE, &len);
	superblock sb;
	char *why = NULL;

	if (superblock_parse((const char *)sbt, len, &sb, &why) < 0)
		die(why, EINVAL);
	put("superblock", "member0", sbt, len);
	g_free(sbt);
	memcpy(key, sb.key, CHECKSUM_KEY_SIZE);
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		write_file(v, files[i].path, files[i].size);
		uint8_t *c = member_file(1, files[i].path + 1, &len);
		put("chunk_header", files[i].path + 1, c, len < CHUNK_HEADER_SIZE_V2 ? len : CHUNK_HEADER_SIZE_V2);
		GByteArray *b = g_byte_array_new();
		g_byte_array_append(b, key, CHECKSUM_KEY_SIZE);
		g_byte_array_append(b, c, (guint)len);
		put("chunk_records", files[i].path + 1, b->data, b->len);
		g_byte_array_free(b, TRUE);
		/* The same header in the older format versions (the volume's
		 * is the newest). */
		chunk_header h;
		uint8_t old[CHUNK_HEADER_MAX];
		if (chunk_header_decode(c, len, &h, NULL) < 0)
			die("chunk header", EINVAL);
		for (h.version = 1; h.version < CHUNK_FORMAT_VERSION; h.version++) {
			char *name = g_strdup_printf("%s-v%u", files[i].path + 1, h.version);
			put("chunk_header", name, old, chunk_header_encode(&h, old));
			g_free(name);
		}
		g_free(c);
	}
}

/* A journal header of two stripes whose records are the chunk's own. */
static void journal_seed(void)
{
	size_t len;
	uint8_t *c = member_file(1, "stripes", &len);
	chunk_header ch;
	journal_header h = { .position = 0, .count = 2, .first = 0, .strip_size = STRIP };
	uint8_t out[JOURNAL_HEADER_SIZE];

	if (chunk_header_decode(c, len, &ch, NULL) < 0)
		die("chunk header", EINVAL);
	memcpy(h.volume_uuid, ch.volume_uuid, 16);
	memcpy(h.file_id, ch.file_id, 16);
	h.position = ch.position;
	layout l;
	chunk_layout(&ch, 1, &l);
	for (uint32_t s = 0; s < h.count; s++) {
		chunk_record r;
		memcpy(h.records[s], c + layout_record_offset(&l, s), CHUNK_RECORD_SIZE);
		chunk_record_decode(h.records[s], &r);
		h.generation = r.generation;
	}
	journal_header_encode(&h, out);
	put("journal", "two-stripes", out, sizeof out);
	g_free(c);
}

/* A small-write log of the "stripes" file: its header and two records. */
static void smalllog_seed(void)
{
	size_t len, at = SMALLLOG_HEADER_SIZE;
	uint8_t *c = member_file(1, "stripes", &len);
	uint8_t key[CHECKSUM_KEY_SIZE] = { 0 };
	uint8_t out[SMALLLOG_HEADER_SIZE + 2 * (SMALLLOG_RECORD_SIZE + 64)];
	chunk_header ch;
	smalllog_header h = { .epoch = 7, .checksum = CHECKSUM_SHA256 };
	checksum *sum = checksum_new(CHECKSUM_SHA256, key);

	if (!sum || chunk_header_decode(c, len, &ch, NULL) < 0)
		die("chunk header", EINVAL);
	memcpy(h.volume_uuid, ch.volume_uuid, 16);
	memcpy(h.file_id, ch.file_id, 16);
	smalllog_header_encode(&h, out);
	for (uint64_t seq = 1; seq <= 2; seq++) {
		smalllog_record r = { .length = 64, .epoch = h.epoch, .seq = seq,
		                      .offset = 4096 * seq, .size = ch.size };
		memset(out + at + SMALLLOG_RECORD_SIZE, (int)('0' + seq), r.length);
		if (smalllog_record_encode(sum, &h, &r, out + at + SMALLLOG_RECORD_SIZE, out + at) < 0)
			die("log record", EIO);
		at += SMALLLOG_RECORD_SIZE + r.length;
	}
	put("smalllog", "two-records", out, at);
	checksum_free(sum);
	g_free(c);
}

/* The record member 0 holds while the operation a is in progress. */
static void intent_seed(volume *v, const char *name, const intent_args *a)
{
	intent *it;
	size_t len;

	int rc = intent_begin(v, a, &it);
	if (rc < 0)
		die("intent_begin", -rc);
	uint8_t *log = member_file(0, INTENT_DIR "/log", &len);
	for (size_t off = 0; off + 64 <= len; off += 16384) {
		const uint8_t *r = log + off;
		if (memcmp(r, "ECFSINT1", 8) != 0)
			continue;
		/* FORMAT.md section 8: head, an identity per member, paths, sum */
		uint32_t n = r[24] | r[25] << 8, l1 = r[28] | r[29] << 8, l2 = r[32] | r[33] << 8;
		put("intent", name, r, 48 + 32 * (size_t)n + l1 + l2 + 32);
	}
	g_free(log);
	intent_end(v, it, -ECANCELED); /* refused: nothing was done */
}

/* Member 2 failed and member 4 healed, as members 0 and 4 record them:
 * their .ecfs/missed/ entries, the names joined by '/'. */
static void missed_seed(volume *v)
{
	if (volume_missed_record(v, 2, 1700000000000000ull) < 0 ||
	    volume_missed_record(v, 4, 1700000000000001ull) < 0)
		die("volume_missed_record", EIO);
	volume_missed_healed(v, 4, 1700000000000002ull);
	for (int mb = 0; mb < N; mb += 4) {
		char *dir = g_build_filename(members[mb], ECFS_META_DIR, "missed", NULL);
		GDir *d = g_dir_open(dir, 0, NULL);
		if (!d)
			die(dir, ENOENT);
		GString *names = g_string_new(NULL);
		for (const char *e; (e = g_dir_read_name(d));)
			g_string_append_printf(names, "%s%s", names->len ? "/" : "", e);
		char *seed = g_strdup_printf("member%d", mb);
		put("missed", seed, names->str, names->len);
		g_free(seed);
		g_string_free(names, TRUE);
		g_dir_close(d);
		g_free(dir);
	}
}

/* The listings of the root as a clean unmount saves them. */
static void listings_seed(volume *v)
{
	saved_listings *s = saved_listings_for(v);
	saved_dir d = { .dir = 1, .members = (1u << N) - 1 };
	struct stat st;

	for (int mb = 0; mb < N; mb++) {
		if (stat(members[mb], &st) < 0)
			die(members[mb], errno);
		dirstamp_of(&st, &d.stamps[mb]);
	}
	d.names = listing_new(2, sizeof "short" + sizeof "stripes");
	listing_append(d.names, "short", DT_REG);
	listing_append(d.names, "stripes", DT_REG);
	saved_listings_add(s, &d);
	listing_unref(d.names);
	size_t len;
	uint8_t *bytes = saved_listings_encode(s, &len);
	put("saved_listings", "root", bytes, len);
	g_free(bytes);
	saved_listings_free(s);
}

/* The attributes of a file set through the volume, as member 0 lists
 * them, and a list with every kind of name. */
static void xattrs_seed(volume *v)
{
	static const char every[] = "user.comment\0security.capability\0system.posix_acl_access\0"
	                            "system.posix_acl_default\0trusted.x\0user.ecfs.id\0other.name";
	char list[1024];

	if (xattrs_set(v, "/short", "user.comment", "seed", 4, 0) < 0 ||
	    xattrs_set(v, "/short", "user.mime_type", "text/plain", 10, 0) < 0)
		die("xattrs_set", EOPNOTSUPP);
	char *path = g_build_filename(members[0], "short", NULL);
	ssize_t len = listxattr(path, list, sizeof list);
	if (len < 0)
		die(path, errno);
	put("xattrs", "member0", list, (size_t)len);
	put("xattrs", "every-kind", every, sizeof every);
	g_free(path);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: make_seeds CORPUS_DIR [TEMP_PARENT]\n");
		return 2;
	}
	corpus = argv[1];
	char *tmpl = g_build_filename(argc > 2 ? argv[2] : g_get_tmp_dir(), "ecfs-seeds-XXXXXX", NULL);
	char *root = g_mkdtemp(tmpl);
	if (!root)
		die("mkdtemp", errno);
	for (int mb = 0; mb < N; mb++) {
		members[mb] = g_strdup_printf("%s/m%d", root, mb);
		if (mkdir(members[mb], 0700) < 0)
			die(members[mb], errno);
	}
	volume_options o = { .geometry = { .k = K, .m = M } };
	o.files.strip_size = STRIP;
	o.run = volume_runtime_defaults();
	volume *v;
	char *msg = NULL;
	int rc = volume_open((const char *const *)members, N, &o, &v, &msg);
	if (rc < 0)
		die(msg ? msg : "volume_open", -rc);
	if (intent_replay(v, NULL, NULL) < 0) /* makes the intent logs, as a mount does */
		die("intent_replay", EIO);
	uint8_t key[CHECKSUM_KEY_SIZE];
	chunk_seeds(v, key);
	journal_seed();
	smalllog_seed();
	intent_seed(v, "rename", &(intent_args){ .op = INTENT_RENAME, .from = "/short",
	                                         .to = "/renamed" });
	intent_seed(v, "unlink", &(intent_args){ .op = INTENT_UNLINK, .from = "/stripes" });
	intent_seed(v, "mkdir", &(intent_args){ .op = INTENT_MKDIR, .from = "/dir", .mode = 0755,
	                                        .uid = 1000, .gid = 1000 });
	missed_seed(v);
	listings_seed(v);
	xattrs_seed(v);
	volume_close(v);
	char *argv_rm[] = { "rm", "-rf", root, NULL };
	g_spawn_sync(NULL, argv_rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL, NULL);
	for (int mb = 0; mb < N; mb++)
		g_free(members[mb]);
	g_free(tmpl);
	return 0;
}
