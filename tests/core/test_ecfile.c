/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the file data path (src/core/data/ecfile.c and its
 * ecfile_open.c and ecfile_io.c, src/core/data/stripe.c) and of lookups
 * (src/core/namespace/objects.c) through real member directories, without
 * FUSE: byte-exact writes and reads at the sizes around strip and stripe
 * boundaries, random I/O against a reference buffer, truncate, holes, and
 * reads with members removed, emptied or corrupted: exact with up to m,
 * EIO with m+1 and nothing stored changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "chunk.h"
#include "core_test_util.h"
#include "ecfile.h"
#include "objects.h"
#include "log.h"
#include "memberio.h"
#include "volume.h"
#include "volume_internal.h"

#define K 4
#define M 2
#define N (K + M)
#define STRIP 4096
#define STRIPE (K * STRIP)

typedef struct fixture {
	members mb;
	volume *v;
} fixture;

static volume *open_volume(members *mb, size_t strip, const char *sum)
{
	volume_options o = { .geometry = { .k = K, .m = M },
	                     .files = { .strip_size = strip, .checksum = sum } };
	volume *v = NULL;
	char *msg = NULL;
	int rc = volume_open((const char *const *)mb->path, N, &o, &v, &msg);
	if (rc)
		fail_msg("volume_open: %d %s", rc, msg ? msg : "");
	return v;
}

static int setup(void **state)
{
	fixture *fx = g_new0(fixture, 1);
	members_make(&fx->mb, N);
	fx->v = open_volume(&fx->mb, STRIP, NULL);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;
	volume_close(fx->v);
	members_remove(&fx->mb);
	g_free(fx);
	return 0;
}

static void reopen(fixture *fx)
{
	volume_close(fx->v);
	fx->v = open_volume(&fx->mb, STRIP, NULL);
}

static char *chunk_path(fixture *fx, int member, const char *name)
{
	return g_strdup_printf("%s/%s", fx->mb.path[member], name);
}

static void write_file(fixture *fx, const char *name, const uint8_t *data, size_t len, size_t piece)
{
	ecfile *f;
	assert_int_equal(ecfile_create(fx->v, name, O_CREAT | O_EXCL, 0644, getuid(), getgid(), &f), 0);
	for (size_t off = 0; off < len; off += piece) {
		size_t l = len - off < piece ? len - off : piece;
		assert_int_equal(ecfile_write(f, data + off, l, (off_t)off), (ssize_t)l);
	}
	assert_int_equal(ecfile_release(f), 0);
}

static void check_file(fixture *fx, const char *name, const uint8_t *data, size_t len)
{
	ecfile *f;
	uint8_t *got = g_malloc(len + 100);
	struct stat st;

	assert_int_equal(ecfile_open(fx->v, name, 0, &f), 0);
	assert_int_equal(ecfile_fstat(f, &st), 0);
	assert_int_equal(st.st_size, len);
	memset(got, 0xee, len + 100);
	assert_int_equal(ecfile_read(f, got, len + 100, 0), (ssize_t)len);
	assert_memory_equal(got, data, len);
	/* Reads at unaligned offsets and lengths. */
	for (int i = 0; i < 20 && len; i++) {
		size_t off = (size_t)rand() % len, l = 1 + (size_t)rand() % (3 * STRIPE);
		if (off + l > len)
			l = len - off;
		assert_int_equal(ecfile_read(f, got, l, (off_t)off), (ssize_t)l);
		assert_memory_equal(got, data + off, l);
	}
	assert_int_equal(ecfile_release(f), 0);
	assert_int_equal(objects_stat(fx->v, name, &st), 0);
	assert_int_equal(st.st_size, len);
	g_free(got);
}

/* The file's user.ecfs.layout text contains `want`. */
static void assert_layout_has(fixture *fx, const char *name, const char *want)
{
	ecfile *f;
	assert_int_equal(ecfile_open(fx->v, name, 0, &f), 0);
	char *text = ecfile_layout_text(f);
	if (!strstr(text, want))
		fail_msg("layout of %s lacks '%s':\n%s", name, want, text);
	g_free(text);
	assert_int_equal(ecfile_release(f), 0);
}

static const size_t sizes[] = { 0, 1, STRIP - 1, STRIP, STRIPE - 1, STRIPE, STRIPE + 1,
                                10 * STRIPE + 7 };

static void test_sizes_round_trip(void **state)
{
	fixture *fx = *state;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		uint8_t *data = g_malloc(len + 1);
		char name[32];
		fill_random(data, len, i + 1);
		snprintf(name, sizeof(name), "/f%zu", i);
		/* Whole, then in odd pieces, then at random offsets. */
		write_file(fx, name, data, len, len ? len : 1);
		check_file(fx, name, data, len);
		snprintf(name, sizeof(name), "/p%zu", i);
		write_file(fx, name, data, len, 1000);
		check_file(fx, name, data, len);

		snprintf(name, sizeof(name), "/r%zu", i);
		ecfile *f;
		assert_int_equal(ecfile_create(fx->v, name, O_CREAT, 0600, getuid(), getgid(), &f), 0);
		for (int w = 0; w < 30 && len; w++) {
			size_t off = (size_t)rand() % len, l = 1 + (size_t)rand() % (STRIPE + 5);
			if (off + l > len)
				l = len - off;
			assert_int_equal(ecfile_write(f, data + off, l, (off_t)off), (ssize_t)l);
		}
		/* Fill in everything in reverse order of pieces. */
		for (size_t off = len; off > 0;) {
			size_t l = off > 3333 ? 3333 : off;
			off -= l;
			assert_int_equal(ecfile_write(f, data + off, l, (off_t)off), (ssize_t)l);
		}
		assert_int_equal(ecfile_release(f), 0);
		check_file(fx, name, data, len);
		g_free(data);
	}
	reopen(fx);
	uint8_t *data = g_malloc(10 * STRIPE + 7);
	fill_random(data, 10 * STRIPE + 7, 8);
	check_file(fx, "/f7", data, 10 * STRIPE + 7);
	g_free(data);
}

/* Random writes, reads and truncates against an in-memory reference. */
static void test_random_io_against_reference(void **state)
{
	fixture *fx = *state;
	const size_t max = 12 * STRIPE;
	uint8_t *ref = g_malloc0(max), *buf = g_malloc(max), *got = g_malloc(max);
	size_t size = 0;
	ecfile *f;

	srand(1234);
	assert_int_equal(ecfile_create(fx->v, "/rand", O_CREAT, 0644, getuid(), getgid(), &f), 0);
	for (int op = 0; op < 600; op++) {
		int what = rand() % 10;
		size_t off = (size_t)rand() % max, len = 1 + (size_t)rand() % (2 * STRIPE);
		if (off + len > max)
			len = max - off;
		if (what < 5) {
			fill_random(buf, len, (uint64_t)op);
			assert_int_equal(ecfile_write(f, buf, len, (off_t)off), (ssize_t)len);
			memcpy(ref + off, buf, len);
			if (off + len > size)
				size = off + len;
		} else if (what < 9) {
			size_t want = off >= size ? 0 : (off + len > size ? size - off : len);
			assert_int_equal(ecfile_read(f, got, len, (off_t)off), (ssize_t)want);
			assert_memory_equal(got, ref + off, want);
		} else {
			size_t ns = (size_t)rand() % max;
			assert_int_equal(ecfile_truncate(f, (off_t)ns), 0);
			if (ns < size)
				memset(ref + ns, 0, size - ns);
			size = ns;
		}
		if (op % 100 == 99) {
			assert_int_equal(ecfile_fsync(f, op % 200 == 99), 0);
			assert_int_equal(ecfile_release(f), 0);
			assert_int_equal(ecfile_open(fx->v, "/rand", 0, &f), 0);
		}
	}
	assert_int_equal(ecfile_release(f), 0);
	check_file(fx, "/rand", ref, size);
	g_free(ref);
	g_free(buf);
	g_free(got);
}

static void test_holes_and_truncate(void **state)
{
	fixture *fx = *state;
	uint8_t *data = g_malloc0(40 * STRIPE), *got = g_malloc(40 * STRIPE);
	ecfile *f;

	assert_int_equal(ecfile_create(fx->v, "/sparse", O_CREAT, 0644, getuid(), getgid(), &f), 0);
	fill_random(data + 30 * STRIPE + 5, 100, 3);
	assert_int_equal(ecfile_write(f, data + 30 * STRIPE + 5, 100, 30 * STRIPE + 5), 100);
	assert_int_equal(ecfile_release(f), 0);
	check_file(fx, "/sparse", data, 30 * STRIPE + 105);

	/* Down into the middle of a stripe, then up again: the tail is zeros. */
	assert_int_equal(ecfile_truncate_path(fx->v, "/sparse", 30 * STRIPE + 50), 0);
	memset(data + 30 * STRIPE + 50, 0, 55);
	assert_int_equal(ecfile_truncate_path(fx->v, "/sparse", 31 * STRIPE), 0);
	check_file(fx, "/sparse", data, 31 * STRIPE);
	assert_int_equal(ecfile_truncate_path(fx->v, "/sparse", 0), 0);
	check_file(fx, "/sparse", data, 0);

	/* O_TRUNC on open. */
	write_file(fx, "/t", data + 30 * STRIPE, 5000, 5000);
	assert_int_equal(ecfile_open(fx->v, "/t", O_TRUNC, &f), 0);
	assert_int_equal(ecfile_read(f, got, 100, 0), 0);
	assert_int_equal(ecfile_release(f), 0);

	/* fallocate extends, KEEP_SIZE does not; other modes unsupported. */
	assert_int_equal(ecfile_open(fx->v, "/t", 0, &f), 0);
	assert_int_equal(ecfile_fallocate(f, 0, 0, 9000), 0);
	assert_int_equal(ecfile_fallocate(f, 1 /* KEEP_SIZE */, 0, 99000), 0);
	assert_int_equal(ecfile_fallocate(f, 2 /* PUNCH_HOLE */, 0, 10), -EOPNOTSUPP);
	struct stat st;
	assert_int_equal(ecfile_fstat(f, &st), 0);
	assert_int_equal(st.st_size, 9000);
	assert_int_equal(ecfile_release(f), 0);
	g_free(data);
	g_free(got);
}

/* Bytes the blocks of member i's chunk of `name` take. */
static uint64_t chunk_blocks(fixture *fx, int i, const char *name, off_t *size)
{
	char *p = chunk_path(fx, i, name);
	struct stat st;

	assert_int_equal(stat(p, &st), 0);
	g_free(p);
	*size = st.st_size;
	return (uint64_t)st.st_blocks * 512;
}

/* fallocate sets the stripes' room aside on every member, past the
 * chunk's end (its size and bytes unchanged); the writes fill that room;
 * a cut in the same open gives back what lies past the new end. */
static void test_fallocate_sets_room_aside(void **state)
{
	fixture *fx = *state;
	const size_t len = 64 * STRIPE; /* a strip of each: len / K per member */
	uint8_t *data = g_malloc(len), *got = g_malloc(len);
	off_t size[N], now;
	ecfile *f;

	fill_random(data, len, 7);
	assert_int_equal(ecfile_create(fx->v, "/laid", O_CREAT | O_EXCL, 0644, getuid(), getgid(), &f),
	                 0);
	for (int i = 0; i < N; i++)
		chunk_blocks(fx, i, "laid", &size[i]);
	assert_int_equal(ecfile_fallocate(f, 0, 0, (off_t)len), 0);
	for (int i = 0; i < N; i++) {
		assert_true(chunk_blocks(fx, i, "laid", &now) >= len / K);
		assert_int_equal(now, size[i]);
	}
	/* Cut to nothing in the same open: the room goes back. */
	assert_int_equal(ecfile_truncate(f, 0), 0);
	for (int i = 0; i < N; i++)
		assert_true(chunk_blocks(fx, i, "laid", &now) < len / K / 4);
	assert_int_equal(ecfile_fallocate(f, 0, 0, (off_t)len), 0);
	assert_int_equal(ecfile_write(f, data, len, 0), (ssize_t)len);
	assert_int_equal(ecfile_fsync(f, 0), 0);
	for (int i = 0; i < N; i++) {
		uint64_t b = chunk_blocks(fx, i, "laid", &now);
		assert_true(now >= (off_t)(len / K) && b >= len / K);
		assert_true(b < (uint64_t)now + len / K / 4); /* filled, not set aside twice */
	}
	assert_int_equal(ecfile_release(f), 0);
	check_file(fx, "/laid", data, len);
	g_free(data);
	g_free(got);
}

static void test_shared_by_identity(void **state)
{
	fixture *fx = *state;
	ecfile *a, *b;
	struct stat st;

	assert_int_equal(ecfile_create(fx->v, "/orig", O_CREAT, 0644, getuid(), getgid(), &a), 0);
	assert_int_equal(ecfile_write(a, "0123456789", 10, 0), 10);
	for (int i = 0; i < N; i++) {
		char *p1 = chunk_path(fx, i, "orig"), *p2 = chunk_path(fx, i, "link");
		assert_int_equal(link(p1, p2), 0);
		g_free(p1);
		g_free(p2);
	}
	assert_int_equal(ecfile_open(fx->v, "/link", 0, &b), 0);
	assert_ptr_equal(a, b);
	/* Buffered bytes are visible through the other name and in stat. */
	assert_int_equal(objects_stat(fx->v, "/link", &st), 0);
	assert_int_equal(st.st_size, 10);
	char got[10];
	assert_int_equal(ecfile_read(b, got, 10, 0), 10);
	assert_memory_equal(got, "0123456789", 10);
	assert_int_equal(ecfile_release(b), 0);
	assert_int_equal(ecfile_release(a), 0);
	assert_int_equal(ecfile_create(fx->v, "/orig", O_CREAT | O_EXCL, 0644, 0, 0, &a), -EEXIST);
	assert_int_equal(ecfile_open(fx->v, "/nothing", 0, &a), -ENOENT);
}

/* Damages the chunks of `name` on the given members. */
enum damage { REMOVE, CORRUPT_STRIP, CORRUPT_RECORD, TRUNCATE, EMPTY_MEMBER, SWAP_STRIPS };

static void damage(fixture *fx, const char *name, int member, enum damage how)
{
	char *p = chunk_path(fx, member, name + 1);
	size_t len;
	uint8_t *data;

	switch (how) {
	case REMOVE:
		assert_int_equal(unlink(p), 0);
		break;
	case TRUNCATE:
		assert_int_equal(truncate(p, 4096 + 4096 + STRIP / 2), 0);
		break;
	case EMPTY_MEMBER:
		rm_tree(fx->mb.path[member]);
		assert_int_equal(mkdir(fx->mb.path[member], 0755), 0);
		break;
	default:
		data = slurp(p, &len);
		assert_non_null(data);
		if (how == CORRUPT_STRIP)
			for (size_t off = 8192 + 17; off < len; off += 4093)
				data[off] ^= 0x5a;
		else if (how == CORRUPT_RECORD)
			data[4096 + 3 * 64 + 40] ^= 1; /* stripe 3's checksum */
		else /* strips 0 and 1 exchanged: each verifies nowhere else */
			for (size_t i = 0; i < STRIP; i++) {
				uint8_t t = data[8192 + i];
				data[8192 + i] = data[8192 + STRIP + i];
				data[8192 + STRIP + i] = t;
			}
		assert_true(g_file_set_contents(p, (char *)data, (gssize)len, NULL));
		g_free(data);
	}
	g_free(p);
}

static void test_degraded_reads(void **state)
{
	fixture *fx = *state;
	const size_t len = 10 * STRIPE + 7;
	uint8_t *data = g_malloc(len);
	const enum damage kinds[] = { REMOVE, CORRUPT_STRIP, CORRUPT_RECORD, TRUNCATE, SWAP_STRIPS };

	fill_random(data, len, 99);
	for (size_t a = 0; a < sizeof(kinds) / sizeof(kinds[0]); a++)
		for (size_t b = 0; b < sizeof(kinds) / sizeof(kinds[0]); b++) {
			char name[32];
			snprintf(name, sizeof(name), "/d%zu_%zu", a, b);
			write_file(fx, name, data, len, 7000);
			int m1 = (int)(a + b) % N, m2 = (m1 + 1 + (int)b % (N - 1)) % N;
			damage(fx, name, m1, kinds[a]);
			check_file(fx, name, data, len);
			damage(fx, name, m2, kinds[b]);
			check_file(fx, name, data, len);
		}
	char *health = volume_health_text(fx->v);
	assert_null(strstr(health, "strips_decoded=0\n"));
	assert_null(strstr(health, "checksum_failures=0\n"));
	g_free(health);
	g_free(data);
}

static void test_too_many_erasures_harm_nothing(void **state)
{
	fixture *fx = *state;
	const size_t len = 6 * STRIPE + 99;
	uint8_t *data = g_malloc(len), *got = g_malloc(len);
	uint8_t *before[N];
	size_t blen[N];
	ecfile *f;

	fill_random(data, len, 5);
	write_file(fx, "/x", data, len, len);
	damage(fx, "/x", 0, CORRUPT_STRIP);
	damage(fx, "/x", 2, CORRUPT_STRIP);
	damage(fx, "/x", 4, CORRUPT_STRIP);
	for (int i = 0; i < N; i++) {
		char *p = chunk_path(fx, i, "x");
		before[i] = slurp(p, &blen[i]);
		g_free(p);
	}
	assert_int_equal(ecfile_open(fx->v, "/x", 0, &f), 0);
	assert_int_equal(ecfile_read(f, got, len, 0), -EIO);
	assert_int_equal(ecfile_release(f), 0);
	for (int i = 0; i < N; i++) {
		char *p = chunk_path(fx, i, "x");
		size_t l;
		uint8_t *now = slurp(p, &l);
		assert_int_equal(l, blen[i]);
		assert_memory_equal(now, before[i], l);
		g_free(now);
		g_free(before[i]);
		g_free(p);
	}
	/* Three chunks gone: the file cannot even be opened. */
	write_file(fx, "/y", data, len, len);
	damage(fx, "/y", 1, REMOVE);
	damage(fx, "/y", 3, REMOVE);
	damage(fx, "/y", 5, REMOVE);
	assert_int_equal(ecfile_open(fx->v, "/y", 0, &f), -EIO);
	g_free(data);
	g_free(got);
}

static void test_degraded_writes(void **state)
{
	fixture *fx = *state;
	const size_t len = 9 * STRIPE + 3;
	uint8_t *data = g_malloc(len);

	fill_random(data, len, 11);
	write_file(fx, "/before", data, len, len);
	/* A member replaced by an empty directory while mounted, and one
	 * removed: detected on the next operations; work goes on. */
	damage(fx, "/before", 1, EMPTY_MEMBER);
	rm_tree(fx->mb.path[4]);
	check_file(fx, "/before", data, len);
	write_file(fx, "/during", data, len, 5000);
	check_file(fx, "/during", data, len);
	assert_false(volume_member_ok(fx->v, 1));
	assert_false(volume_member_ok(fx->v, 4));
	char *health = volume_health_text(fx->v);
	assert_non_null(strstr(health, "state=degraded\n"));
	g_free(health);

	/* One more failure is too many: EIO, and nothing else breaks. */
	ecfile *f;
	assert_int_equal(ecfile_open(fx->v, "/during", 0, &f), 0);
	assert_true(volume_member_error(fx->v, 0, EIO, "test"));
	uint8_t got[10];
	assert_int_equal(ecfile_read(f, got, 10, 0), -EIO);
	assert_int_equal(ecfile_write(f, got, 10, 0), -EIO);
	ecfile_release(f);
	g_free(data);
}

/* The missed mask in the header of name's chunk on member i. */
static uint64_t header_missed(fixture *fx, int i, const char *name)
{
	char *path = chunk_path(fx, i, name);
	size_t len;
	uint8_t *b = slurp(path, &len);
	uint64_t missed = 0;

	assert_true(len >= 112);
	memcpy(&missed, b + 104, 8); /* FORMAT.md 4.1, little-endian */
	g_free(b);
	g_free(path);
	return missed;
}

#ifdef ECFS_FAULT_INJECTION
/* The member holding data position 0 of name's chunks (FORMAT.md 4.1:
 * the header's rotation, a little-endian word at offset 52). */
static int position0_member(fixture *fx, const char *name)
{
	char *path = chunk_path(fx, 0, name);
	size_t len;
	uint8_t *b = slurp(path, &len);
	uint32_t rotation;

	assert_true(len >= 56);
	memcpy(&rotation, b + 52, 4);
	g_free(b);
	g_free(path);
	return (int)rotation;
}
#endif

/* Hedged reads (stripe_hedge.c): a strip on a member slow for reads is read
 * from four other members, and from the fifth too when those are late;
 * the read goes on with the first four answers.  Here the member of
 * position 1 takes 600 ms per read (the two of an open, or of a fetch,
 * stay under the bound of a read, memberio_bound_ms): the fifth is asked,
 * and the read
 * returns exact before that member has answered (its read cost is still
 * unknown then; a read that waited for it would have noted it); so does a
 * read of whole stripes, and the file's close waits for the late answers,
 * which are noted.  With and without a member timeout (reads bounced or
 * in place); under -o tune.hedge=off the reads wait for the late member. */
static void hedged_read(fixture *fx, const char *name, unsigned timeout_ms, bool hedge)
{
#ifdef ECFS_FAULT_INJECTION
	const size_t len = 4 * STRIPE;
	uint8_t *data = g_malloc(len), *got = g_malloc(STRIP);
	volume_options o = { .run.timeout_ms = timeout_ms, .run.no_hedge = !hedge };
	char *msg = NULL;
	ecfile *f;

	fill_random(data, len, 31);
	write_file(fx, name, data, len, STRIPE);
	int slow = position0_member(fx, name + 1), late = (slow + 1) % N;
	char *spec = g_strdup_printf("member=%d,op=read,delay=600", late);
	volume_close(fx->v);
	setenv("ECFS_FAULT", spec, 1);
	assert_int_equal(volume_open((const char *const *)fx->mb.path, N, &o, &fx->v, &msg), 0);
	unsetenv("ECFS_FAULT");
	memberio *mio = volume_memberio(fx->v);
	memberio_force_slow(mio, MIO_READ, 1ull << slow);
	assert_int_equal(ecfile_open(fx->v, name, 0, &f), 0);
	assert_int_equal(ecfile_read(f, got, STRIP, 2 * STRIPE), STRIP);
	assert_memory_equal(got, data + 2 * STRIPE, STRIP);
	assert_int_equal(memberio_cost_us(mio, late, MIO_READ) > 0, !hedge);
	/* a run of whole stripes, the same way */
	uint8_t *all = g_malloc(len);
	assert_int_equal(ecfile_read(f, all, len, 0), (ssize_t)len);
	assert_memory_equal(all, data, len);
	g_free(all);
	assert_int_equal(memberio_cost_us(mio, late, MIO_READ) > 0, !hedge);
	assert_int_equal(ecfile_release(f), 0);
	assert_true(memberio_cost_us(mio, late, MIO_READ) > 0);
	char *health = volume_health_text(fx->v);
	assert_null(strstr(health, "strips_decoded=0\n"));
	const char *hedged = strstr(health, "reads_hedged=");
	assert_non_null(hedged);
	assert_int_equal(strtoull(hedged + strlen("reads_hedged="), NULL, 10) >= 2, hedge);
	assert_non_null(strstr(health, "members_failed=0\n"));
	g_free(health);
	reopen(fx); /* without the delay */
	check_file(fx, name, data, len);
	g_free(spec);
	g_free(got);
	g_free(data);
#else
	(void)fx;
	(void)name;
	(void)timeout_ms;
	(void)hedge;
	skip();
#endif
}

static void test_hedged_read_goes_on_without_the_last(void **state)
{
	hedged_read(*state, "/h", 0, true);
	hedged_read(*state, "/h_timeout", 5000, true);
	hedged_read(*state, "/h_off", 5000, false); /* -o tune.hedge=off: waits for it */
}

/* Writes past slow members (-o write_quorum, stripe_leave_out_slow): of two
 * members slow for writes, only as many are left out as leave write_quorum
 * members written; they are named missed in the others' headers and the
 * file reads exact.  With a member failed, nobody more is left out, and
 * under write_quorum=all nobody is. */
static void test_write_quorum(void **state)
{
	fixture *fx = *state;
	const size_t len = 5 * STRIPE + 7;
	uint8_t *data = g_malloc(len);
	char *msg = NULL;

	fill_random(data, len, 12);
	memberio_force_slow(volume_memberio(fx->v), MIO_WRITE, 1u << 1 | 1u << 2);
	write_file(fx, "/all", data, len, 3000);
	for (int i = 0; i < N; i++)
		assert_int_equal(header_missed(fx, i, "all"), 0);
	volume_close(fx->v);
	volume_options o = { .run.write_quorum = 5 };
	assert_int_equal(volume_open((const char *const *)fx->mb.path, N, &o, &fx->v, &msg), 0);
	memberio_force_slow(volume_memberio(fx->v), MIO_WRITE, 1u << 1 | 1u << 2);
	write_file(fx, "/five", data, len, 3000);
	uint64_t out = header_missed(fx, 0, "five");
	assert_int_equal(__builtin_popcountll(out), 1);
	assert_true(out & (1u << 1 | 1u << 2));
	for (int i = 0; i < N; i++)
		if (!(out >> i & 1))
			assert_int_equal(header_missed(fx, i, "five"), out);
	check_file(fx, "/five", data, len);
	/* one member failed: five are left, none may be left out */
	rm_tree(fx->mb.path[4]);
	write_file(fx, "/failed", data, len, 3000);
	check_file(fx, "/failed", data, len);
	assert_int_equal(header_missed(fx, 0, "failed"), 1u << 4);
	volume_close(fx->v);
	o.run.write_quorum = K;
	assert_int_equal(volume_open((const char *const *)fx->mb.path, N, &o, &fx->v, &msg),
	                 -EINVAL);
	assert_non_null(strstr(msg, "write_quorum=4"));
	g_free(msg);
	fx->v = open_volume(&fx->mb, STRIP, NULL);
	g_free(data);
}

static void test_stale_member_not_trusted(void **state)
{
	fixture *fx = *state;
	const size_t len = 3 * STRIPE;
	uint8_t *v1 = g_malloc(len), *v2 = g_malloc(len);
	ecfile *f;

	fill_random(v1, len, 1);
	fill_random(v2, len, 2);
	write_file(fx, "/s", v1, len, len);
	/* Member 3 drops out; the file is rewritten without it. */
	assert_true(volume_member_error(fx->v, 3, EIO, "test"));
	assert_int_equal(ecfile_open(fx->v, "/s", 0, &f), 0);
	assert_int_equal(ecfile_write(f, v2, len, 0), (ssize_t)len);
	char *text = ecfile_layout_text(f);
	assert_non_null(strstr(text, "member.3=failed"));
	g_free(text);
	assert_int_equal(ecfile_release(f), 0);
	/* Back with its old, self-consistent strips: they must not be read. */
	reopen(fx);
	assert_true(volume_member_ok(fx->v, 3));
	check_file(fx, "/s", v2, len);
	assert_int_equal(ecfile_open(fx->v, "/s", 0, &f), 0);
	text = ecfile_layout_text(f);
	assert_non_null(strstr(text, "member.3=stale"));
	assert_null(strstr(text, "healthy=0,1,2,3"));
	g_free(text);
	assert_int_equal(ecfile_release(f), 0);
	g_free(v1);
	g_free(v2);
}

/* A crash can cut a round of header writes short: a chunk left with an
 * older header is still a current chunk, and the newest header wins. */
static void test_older_header_still_current(void **state)
{
	fixture *fx = *state;
	const size_t len = 5 * STRIPE + 9;
	uint8_t *data = g_malloc(len);
	char *p = chunk_path(fx, 2, "h");
	size_t l;
	ecfile *f;

	fill_random(data, len, 21);
	write_file(fx, "/h", data, 2 * STRIPE, 2 * STRIPE);
	uint8_t *old = slurp(p, &l);
	assert_int_equal(ecfile_open(fx->v, "/h", 0, &f), 0);
	assert_int_equal(ecfile_write(f, data + 2 * STRIPE, len - 2 * STRIPE, 2 * STRIPE),
	                 (ssize_t)(len - 2 * STRIPE));
	assert_int_equal(ecfile_release(f), 0);
	uint8_t *now = slurp(p, &l);
	memcpy(now, old, 4096);
	assert_true(g_file_set_contents(p, (char *)now, (gssize)l, NULL));
	check_file(fx, "/h", data, len);
	assert_int_equal(ecfile_open(fx->v, "/h", 0, &f), 0);
	char *text = ecfile_layout_text(f);
	assert_non_null(strstr(text, "member.2=ok"));
	g_free(text);
	assert_int_equal(ecfile_release(f), 0);
	g_free(old);
	g_free(now);
	g_free(p);
	g_free(data);
}

static void test_every_checksum(void **state)
{
	const char *names[] = { "sha256", "blake2b", "blake2s", "gmac", "poly1305" };
	uint8_t data[3 * STRIPE + 11];

	(void)state;
	fill_random(data, sizeof(data), 4);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		fixture fx;
		members_make(&fx.mb, N);
		fx.v = open_volume(&fx.mb, 8192, names[i]);
		write_file(&fx, "/c", data, sizeof(data), 5000);
		damage(&fx, "/c", 2, CORRUPT_STRIP);
		check_file(&fx, "/c", data, sizeof(data));
		char *want = g_strdup_printf("checksum=%s\n", names[i]);
		assert_layout_has(&fx, "/c", want);
		g_free(want);
		volume_close(fx.v);
		members_remove(&fx.mb);
	}
}

/* Every code of lib/ec.h as the volume default, with its default w and
 * packet size (the strip size rounded to the code's alignment): exact with
 * m members corrupted. */
static void test_every_code(void **state)
{
	const char *codes[] = { "rs-vandermonde", "rs-cauchy", "raid6-pq", "cauchy-orig",
	                        "cauchy-good", "liberation", "blaum-roth", "liber8tion",
	                        "evenodd", "rdp", "star" };

	(void)state;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		int m = strcmp(codes[i], "star") == 0 ? 3 : 2, n = K + m;
		volume_options o = { .geometry = { .k = K, .m = m },
		                     .files.code = ec_kind_from_name(codes[i]) };
		fixture fx = { 0 };
		char *msg = NULL;
		members_make(&fx.mb, n);
		int rc = volume_open((const char *const *)fx.mb.path, n, &o, &fx.v, &msg);
		if (rc)
			fail_msg("%s: volume_open: %s", codes[i], msg);
		size_t strip = volume_defaults(fx.v)->strip_size, len = 2 * K * strip + 333;
		uint8_t *data = g_malloc(len);
		fill_random(data, len, i);
		write_file(&fx, "/c", data, len, 100000);
		for (int j = 0; j < m; j++)
			damage(&fx, "/c", (int)(i + (size_t)j * 2) % n, CORRUPT_STRIP);
		check_file(&fx, "/c", data, len);
		char *want = g_strdup_printf("code=%s\n", codes[i]);
		assert_layout_has(&fx, "/c", want);
		g_free(want);
		g_free(data);
		volume_close(fx.v);
		members_remove(&fx.mb);
	}
}

/* Many threads at once, as FUSE calls: each writes and checks its own
 * file, and all of them also write disjoint stripes of one shared file. */
typedef struct worker_arg {
	fixture *fx;
	ecfile *shared;
	int id;
	int failures;
} worker_arg;

static void *io_worker(void *p)
{
	worker_arg *a = p;
	const size_t len = 7 * STRIPE + 123;
	uint8_t *data = g_malloc(len), *got = g_malloc(len);
	char name[32];
	ecfile *f;

	fill_random(data, len, 100 + (uint64_t)a->id);
	snprintf(name, sizeof(name), "/thread%d", a->id);
	if (ecfile_create(a->fx->v, name, O_CREAT, 0644, getuid(), getgid(), &f) < 0) {
		a->failures++;
		goto out;
	}
	for (size_t off = 0; off < len; off += 5000) {
		size_t l = len - off < 5000 ? len - off : 5000;
		a->failures += ecfile_write(f, data + off, l, (off_t)off) != (ssize_t)l;
		/* Our stripe of the shared file: stripe id, 2 * id + 1, ... */
		off_t so = (off_t)((off / 5000 % 2) * 8 + (size_t)a->id) * STRIPE + 17;
		a->failures += ecfile_write(a->shared, data, 999, so) != 999;
	}
	a->failures += ecfile_read(f, got, len, 0) != (ssize_t)len || memcmp(got, data, len);
	a->failures += ecfile_release(f) != 0;
	for (int i = 0; i < 2; i++) {
		off_t so = (off_t)(i * 8 + a->id) * STRIPE + 17;
		a->failures += ecfile_read(a->shared, got, 999, so) != 999 || memcmp(got, data, 999);
	}
out:
	g_free(data);
	g_free(got);
	return NULL;
}

static void test_threads(void **state)
{
	fixture *fx = *state;
	enum { T = 6 };
	pthread_t th[T];
	worker_arg args[T];
	ecfile *shared;

	assert_int_equal(ecfile_create(fx->v, "/shared", O_CREAT, 0644, getuid(), getgid(),
	                               &shared), 0);
	for (int i = 0; i < T; i++) {
		args[i] = (worker_arg){ .fx = fx, .shared = shared, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, io_worker, &args[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].failures, 0);
	}
	assert_int_equal(ecfile_release(shared), 0);
}

/* Member i's chunk header of name (1 if it has one, 0 if the chunk is
 * empty); fails on anything else. */
static int member_header(fixture *fx, int i, const char *name, chunk_header *h)
{
	char *p = chunk_path(fx, i, name + 1);
	gchar *buf = NULL;
	gsize len = 0;
	const char *why;
	assert_true(g_file_get_contents(p, &buf, &len, NULL));
	g_free(p);
	int rc = len ? chunk_header_decode((const uint8_t *)buf, len, h, &why) : -1;
	g_free(buf);
	if (!len)
		return 0;
	assert_int_equal(rc, 0);
	return 1;
}

/* The directories the volume's refresh (volume_set_refresh) was given,
 * and whether every member held the new file's header by then. */
static fixture *refresh_fx;
static int refreshes;
static bool refreshed_whole;

static void note_refresh(const char *dir, const volume_dir_at *at)
{
	(void)at;
	chunk_header h;
	refreshes++;
	refreshed_whole = strcmp(dir, "/") == 0;
	for (int i = 0; i < N; i++)
		refreshed_whole &= member_header(refresh_fx, i, "/new", &h) == 1;
}

/* With the member timeout, a new file's chunks and headers are one batch
 * on the relay (ecfile_open.c, struct create_chain): every member holds the
 * header of the one file at its own position, with no missed writes, the
 * same as write_headers gives a degraded create's.  A create over a name
 * some members still hold (O_CREAT without O_EXCL) opens that file, and
 * the chunk it makes on a member that lacked one gets no header of a new
 * file.  The chain ends with the refresh of the new file's directory. */
static void test_create_chained(void **state)
{
	fixture *fx = *state;
	volume_close(fx->v);
	volume_options o = { .geometry = { .k = K, .m = M }, .files.strip_size = STRIP,
	                     .run.timeout_ms = 10000 };
	char *msg = NULL;
	assert_int_equal(volume_open((const char *const *)fx->mb.path, N, &o, &fx->v, &msg), 0);

	ecfile *f;
	chunk_header h[N];
	uint32_t seen = 0;
	memberio_force_relay(volume_memberio(fx->v), true);
	refresh_fx = fx;
	volume_set_refresh(fx->v, note_refresh);
	assert_int_equal(ecfile_create(fx->v, "/new", O_CREAT | O_RDWR, 0644, getuid(), getgid(),
	                               &f), 0);
	/* its last task: the directory, once every header is written */
	assert_int_equal(refreshes, 1);
	assert_true(refreshed_whole);
	volume_set_refresh(fx->v, NULL);
	for (int i = 0; i < N; i++) {
		assert_int_equal(member_header(fx, i, "/new", &h[i]), 1);
		assert_memory_equal(h[i].file_id, ecfile_file_id(f), 16);
		assert_int_equal(h[i].generation, h[0].generation);
		assert_int_equal(h[i].missed, 0);
		seen |= 1u << h[i].position;
	}
	assert_int_equal(seen, (1u << N) - 1);
	assert_int_equal(ecfile_write(f, "abc", 3, 0), 3);
	assert_int_equal(ecfile_release(f), 0);
	check_file(fx, "/new", (const uint8_t *)"abc", 3);

	/* O_EXCL: the members look for the name first, in the same batch; a
	 * name any member holds (here member 4 alone) makes no chunk. */
	assert_int_equal(ecfile_create(fx->v, "/new", O_CREAT | O_EXCL | O_RDWR, 0644, getuid(),
	                               getgid(), &f), -EEXIST);
	put_member_file(&fx->mb, 4, "/stray", "S");
	assert_int_equal(ecfile_create(fx->v, "/stray", O_CREAT | O_EXCL | O_RDWR, 0644, getuid(),
	                               getgid(), &f), -EEXIST);
	for (int i = 0; i < N; i++) {
		char *c = member_path(&fx->mb, i, "/stray");
		struct stat st;
		assert_int_equal(lstat(c, &st) == 0, i == 4);
		g_free(c);
	}
	assert_int_equal(ecfile_create(fx->v, "/excl", O_CREAT | O_EXCL | O_RDWR, 0644, getuid(),
	                               getgid(), &f), 0);
	assert_int_equal(ecfile_release(f), 0);
	check_file(fx, "/excl", NULL, 0);

	uint8_t data[3 * STRIPE + 5];
	fill_random(data, sizeof(data), 7);
	write_file(fx, "/old", data, sizeof(data), sizeof(data));
	damage(fx, "/old", 2, REMOVE);
	assert_int_equal(ecfile_create(fx->v, "/old", O_CREAT | O_RDWR, 0644, getuid(), getgid(),
	                               &f), 0);
	chunk_header other;
	assert_int_equal(member_header(fx, 3, "/old", &other), 1);
	assert_memory_equal(ecfile_file_id(f), other.file_id, 16);
	if (member_header(fx, 2, "/old", &h[2]))
		assert_memory_equal(h[2].file_id, other.file_id, 16);
	assert_int_equal(ecfile_release(f), 0);
	check_file(fx, "/old", data, sizeof(data));

	/* A member out of service: the others' headers say it missed the
	 * file's writes. */
	rm_tree(fx->mb.path[5]);
	check_file(fx, "/old", data, sizeof(data));
	assert_false(volume_member_ok(fx->v, 5));
	assert_int_equal(ecfile_create(fx->v, "/deg", O_CREAT | O_EXCL | O_RDWR, 0644, getuid(),
	                               getgid(), &f), 0);
	for (int i = 0; i < N - 1; i++) {
		assert_int_equal(member_header(fx, i, "/deg", &h[i]), 1);
		assert_int_equal(h[i].missed, 1u << 5);
	}
	assert_int_equal(ecfile_write(f, data, sizeof(data), 0), (ssize_t)sizeof(data));
	assert_int_equal(ecfile_release(f), 0);
	check_file(fx, "/deg", data, sizeof(data));
}

/* A small file's strips, records and headers go to the relay
 * (stripe_commit.c, commit_stage_small).  Member 2 hangs at its first write after
 * the new file's header: the commit gives that member up within the
 * timeout, the relay's other tasks run, and the file reads back exact. */
static void test_small_commit_relayed_past_a_hang(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	fixture *fx = *state;
	volume_options o = { .geometry = { .k = K, .m = M }, .files.strip_size = STRIP,
	                     .run.timeout_ms = 300 };
	char *msg = NULL;
	ecfile *f;

	volume_close(fx->v);
	setenv("ECFS_FAULT", "member=2,op=write,after=1,hang", 1);
	assert_int_equal(volume_open((const char *const *)fx->mb.path, N, &o, &fx->v, &msg), 0);
	unsetenv("ECFS_FAULT");
	memberio_force_relay(volume_memberio(fx->v), true);
	assert_int_equal(ecfile_create(fx->v, "/small", O_CREAT | O_RDWR, 0644, getuid(),
	                               getgid(), &f), 0);
	assert_true(volume_member_ok(fx->v, 2));
	gint64 t0 = g_get_monotonic_time();
	assert_int_equal(ecfile_write(f, "small file", 10, 0), 10);
	assert_int_equal(ecfile_release(f), 0);
	gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
	if (took_ms > 300 + 5000)
		fail_msg("the commit took %lld ms with a 300 ms timeout", (long long)took_ms);
	assert_false(volume_member_ok(fx->v, 2));
	for (int i = 0; i < N; i++)
		assert_int_equal(volume_member_ok(fx->v, i), i != 2);
	check_file(fx, "/small", (const uint8_t *)"small file", 10);
#else
	(void)state;
	print_message("needs a -Dfault_injection=true build to make a member hang\n");
#endif
}

/* Lookups (objects_stat): a directory, a file, a name no member holds, a
 * path through a file or through a symlink, a name too long; then with
 * member 0's directory removed, a name no member holds is still just
 * absent, while a name the others hold fails member 0 (its root is
 * checked) and is answered by them.  Inline, on the members' threads, and
 * with every member on the relay (the first member's probe and the
 * others' in one batch, the others skipped when the first answers it
 * all). */
static void stat_probes(fixture *fx, unsigned timeout_ms, bool relay)
{
	volume_close(fx->v);
	volume_options o = { .geometry = { .k = K, .m = M }, .files.strip_size = STRIP,
	                     .run.timeout_ms = timeout_ms };
	char *msg = NULL;
	assert_int_equal(volume_open((const char *const *)fx->mb.path, N, &o, &fx->v, &msg), 0);
	if (relay)
		memberio_force_relay(volume_memberio(fx->v), true);

	uint8_t data[STRIPE + 7];
	fill_random(data, sizeof(data), 3);
	write_file(fx, "/f", data, sizeof(data), sizeof(data));
	for (int i = 0; i < N; i++) {
		char *d = g_strdup_printf("%s/d", fx->mb.path[i]);
		char *l = g_strdup_printf("%s/s", fx->mb.path[i]);
		assert_int_equal(mkdir(d, 0750), 0);
		assert_int_equal(symlink(".", l), 0);
		g_free(d);
		g_free(l);
	}
	char longname[NAME_MAX + 3] = "/";
	memset(longname + 1, 'a', NAME_MAX + 1);

	struct stat st;
	assert_int_equal(objects_stat(fx->v, "/d", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(objects_stat(fx->v, "/f", &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, sizeof(data));
	assert_int_equal(objects_stat(fx->v, "/s", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(objects_stat(fx->v, "/none", &st), -ENOENT);
	assert_int_equal(objects_stat(fx->v, "/d/none", &st), -ENOENT);
	assert_int_equal(objects_stat(fx->v, "/f/x", &st), -ENOTDIR);
	assert_int_equal(objects_stat(fx->v, "/s/d", &st), -ENOTDIR);
	assert_int_equal(objects_stat(fx->v, longname, &st), -ENAMETOOLONG);
	for (int i = 0; i < N; i++)
		assert_true(volume_member_ok(fx->v, i));

	rm_tree(fx->mb.path[0]);
	assert_int_equal(objects_stat(fx->v, "/none", &st), -ENOENT);
	assert_int_equal(objects_stat(fx->v, "/f", &st), 0);
	assert_int_equal(st.st_size, sizeof(data));
	assert_false(volume_member_ok(fx->v, 0));
	assert_int_equal(objects_stat(fx->v, "/d", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	check_file(fx, "/f", data, sizeof(data));
}

static void test_stat_probes_inline(void **state)
{
	stat_probes(*state, 0, false);
}

static void test_stat_probes_on_workers(void **state)
{
	stat_probes(*state, 10000, false);
}

static void test_stat_probes_relayed(void **state)
{
	stat_probes(*state, 10000, true);
}

int main(void)
{
	ecfs_log_init("test_ecfile", false, false);
	srand(42);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sizes_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_io_against_reference, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holes_and_truncate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fallocate_sets_room_aside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_by_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_degraded_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_many_erasures_harm_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_degraded_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_quorum, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hedged_read_goes_on_without_the_last, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_stale_member_not_trusted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_older_header_still_current, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_chained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stat_probes_inline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stat_probes_on_workers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stat_probes_relayed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_commit_relayed_past_a_hang, setup,
		                                teardown),
		cmocka_unit_test(test_every_checksum),
		cmocka_unit_test(test_every_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
