/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the asynchronous stripe commits (src/core/data/committer.c behind
 * src/core/data/ecfile_io.c) and of degraded run reads (stripe_fetch_run), on real
 * member directories: whole-stripe writes answered before they reach the
 * members must still be seen by every later read, RMW, truncate and
 * reopen, in order; a commit that fails behind its answer must fail a
 * later write, flush or release, never vanish; a file read with two
 * data members known failed is decoded from one read of the run; and the
 * committer pool takes turns of CM_TURN runs between files that keep
 * their queues full, and frees every batch a run takes at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

#include "committer.h"
#include "core_test_util.h"
#include "ecfile.h"
#include "log.h"
#include "volume.h"

#define K 4
#define M 2
#define N (K + M)
#define STRIP 4096
#define STRIPE (K * STRIP)

typedef struct fixture {
	members mb;
	volume *v;
} fixture;

static volume *open_volume(members *mb)
{
	volume_options o = { .geometry = { .k = K, .m = M }, .files.strip_size = STRIP };
	volume *v = NULL;
	char *msg = NULL;
	if (volume_open((const char *const *)mb->path, N, &o, &v, &msg))
		fail_msg("volume_open: %s", msg ? msg : "");
	return v;
}

static int setup(void **state)
{
	fixture *fx = g_new0(fixture, 1);
	members_make(&fx->mb, N);
	fx->v = open_volume(&fx->mb);
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

static void assert_reads(ecfile *f, const uint8_t *ref, size_t len)
{
	uint8_t *got = g_malloc(len + 1);
	assert_int_equal(ecfile_read(f, got, len + 1, 0), (ssize_t)len);
	assert_memory_equal(got, ref, len);
	g_free(got);
}

/* Random mixes of runs of whole stripes (queued for the committer) and
 * small or unaligned writes (through the stripe buffer, read-modify-write
 * of stripes that may still be queued), reads, truncates and fsyncs,
 * checked against a reference after every step and after a reopen. */
static void test_async_mixed_with_everything(void **state)
{
	fixture *fx = *state;
	const size_t max = 40 * STRIPE;
	uint8_t *ref = g_malloc0(max), *src = g_malloc(max), *got = g_malloc(max);
	size_t size = 0;
	ecfile *f;

	fill_random(src, max, 7);
	assert_int_equal(ecfile_create(fx->v, "/mix", O_CREAT, 0644, getuid(), getgid(), &f), 0);
	for (int step = 0; step < 400; step++) {
		int op = rand() % 10;
		size_t off, len;
		if (op < 5) {
			/* 1 to 12 whole stripes: more than a batch, and in
			 * flight behind the answer. */
			off = (size_t)(rand() % 28) * STRIPE;
			len = (size_t)(1 + rand() % 12) * STRIPE;
		} else if (op < 8) {
			off = (size_t)rand() % (max - 3 * STRIPE);
			len = 1 + (size_t)rand() % (3 * STRIPE);
		} else if (op == 8) {
			size_t to = (size_t)rand() % max;
			assert_int_equal(ecfile_truncate(f, (off_t)to), 0);
			if (to > size)
				memset(ref + size, 0, to - size);
			size = to;
			continue;
		} else {
			off = (size_t)rand() % max;
			len = (size_t)rand() % (2 * STRIPE);
			if (off + len > max)
				len = max - off;
			ssize_t want = off >= size ? 0 : (ssize_t)(off + len > size ? size - off : len);
			assert_int_equal(ecfile_read(f, got, len, (off_t)off), want);
			assert_memory_equal(got, ref + off, (size_t)want);
			continue;
		}
		const uint8_t *from = src + (size_t)rand() % (max - len + 1);
		assert_int_equal(ecfile_write(f, from, len, (off_t)off), (ssize_t)len);
		if (off > size)
			memset(ref + size, 0, off - size);
		memcpy(ref + off, from, len);
		if (off + len > size)
			size = off + len;
		if (step % 50 == 0)
			assert_int_equal(ecfile_fsync(f, 0), 0);
		if (step % 7 == 0) {
			struct stat st;
			assert_int_equal(ecfile_fstat(f, &st), 0);
			assert_int_equal(st.st_size, size);
		}
	}
	assert_reads(f, ref, size);
	assert_int_equal(ecfile_release(f), 0);
	/* What reached the members, read by a fresh volume. */
	volume_close(fx->v);
	fx->v = open_volume(&fx->mb);
	assert_int_equal(ecfile_open(fx->v, "/mix", 0, &f), 0);
	assert_reads(f, ref, size);
	assert_int_equal(ecfile_release(f), 0);
	g_free(ref);
	g_free(src);
	g_free(got);
}

typedef struct streamer {
	fixture *fx;
	int id;
	int failures;
} streamer;

/* Streams 1 MiB-like runs of whole stripes to its own file while reading
 * back what it wrote before, then checks the whole file. */
static void *stream_worker(void *p)
{
	streamer *a = p;
	const size_t len = 64 * STRIPE, req = 16 * STRIPE;
	uint8_t *data = g_malloc(len), *got = g_malloc(req);
	char name[32];
	ecfile *f;

	fill_random(data, len, 300 + (uint64_t)a->id);
	snprintf(name, sizeof(name), "/stream%d", a->id);
	if (ecfile_create(a->fx->v, name, O_CREAT, 0644, getuid(), getgid(), &f) < 0) {
		a->failures++;
		goto out;
	}
	for (size_t off = 0; off < len; off += req) {
		a->failures += ecfile_write(f, data + off, req, (off_t)off) != (ssize_t)req;
		a->failures += ecfile_read(f, got, req, (off_t)off) != (ssize_t)req ||
		               memcmp(got, data + off, req);
	}
	a->failures += ecfile_release(f) != 0;
	if (ecfile_open(a->fx->v, name, 0, &f) < 0) {
		a->failures++;
		goto out;
	}
	for (size_t off = 0; off < len; off += req)
		a->failures += ecfile_read(f, got, req, (off_t)off) != (ssize_t)req ||
		               memcmp(got, data + off, req);
	a->failures += ecfile_release(f) != 0;
out:
	g_free(data);
	g_free(got);
	return NULL;
}

/* More files than committer threads, all streaming at once. */
static void test_concurrent_streams(void **state)
{
	enum { T = 5 };
	pthread_t th[T];
	streamer args[T];

	for (int i = 0; i < T; i++) {
		args[i] = (streamer){ .fx = *state, .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, stream_worker, &args[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].failures, 0);
	}
}

/* A commit that fails behind the write's answer: two members are failed
 * and the third one's writes fail with an errno that is an answer, not a
 * member failure (fault injection from its second write on; the first is
 * the new file's header), so no batch reaches k members while the volume
 * stays usable.  The write was answered in full; its error must fail the
 * next write and the release. */
static void test_error_behind_the_answer_is_reported(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	fixture *fx = *state;
	uint8_t *data = g_malloc(16 * STRIPE);
	struct stat st;
	ecfile *f;

	volume_close(fx->v);
	setenv("ECFS_FAULT", "member=5,op=write,after=1,errno=27", 1); /* EFBIG */
	fx->v = open_volume(&fx->mb);
	unsetenv("ECFS_FAULT");
	fill_random(data, 16 * STRIPE, 9);
	assert_true(volume_member_error(fx->v, 0, EIO, "test"));
	assert_true(volume_member_error(fx->v, 1, EIO, "test"));
	assert_int_equal(ecfile_create(fx->v, "/e", O_CREAT, 0644, getuid(), getgid(), &f), 0);
	assert_int_equal(ecfile_write(f, data, 16 * STRIPE, 0), 16 * STRIPE);
	assert_int_equal(ecfile_fstat(f, &st), 0); /* waits for the commits */
	assert_true(volume_member_ok(fx->v, 5));
	assert_int_equal(ecfile_write(f, data, 16 * STRIPE, 16 * STRIPE), -EIO);
	assert_int_equal(ecfile_release(f), -EIO);
	g_free(data);
#else
	(void)state;
	skip();
#endif
}

/* A partial write into a stripe whose whole-stripe write may still be on
 * its way, then a move to another stripe (which commits the first one
 * read-modify-write): the queued data must be read, not taken for a hole. */
static void test_partial_write_over_queued_stripes(void **state)
{
	fixture *fx = *state;
	const size_t len = 24 * STRIPE;
	uint8_t *ref = g_malloc0(31 * STRIPE), *got = g_malloc(31 * STRIPE);
	ecfile *f;

	fill_random(ref, len, 21);
	for (int i = 0; i < 20; i++) {
		char name[16];
		snprintf(name, sizeof(name), "/q%d", i);
		assert_int_equal(ecfile_create(fx->v, name, O_CREAT, 0644, getuid(), getgid(), &f), 0);
		assert_int_equal(ecfile_write(f, ref, len, 0), (ssize_t)len);
		assert_int_equal(ecfile_write(f, "abc", 3, 23 * STRIPE + 100), 3);
		assert_int_equal(ecfile_write(f, "xyz", 3, 30 * STRIPE + 5), 3);
		memcpy(ref + 23 * STRIPE + 100, "abc", 3);
		memcpy(ref + 30 * STRIPE + 5, "xyz", 3);
		assert_int_equal(ecfile_read(f, got, 31 * STRIPE, 0), 30 * STRIPE + 8);
		assert_memory_equal(got, ref, 30 * STRIPE + 8);
		assert_int_equal(ecfile_release(f), 0);
		fill_random(ref, len, 22 + (uint64_t)i);
	}
	g_free(ref);
	g_free(got);
}

/* Two data members known failed: whole-stripe reads decode every stripe
 * from one read of the run, byte-exact, and count the decoded stripes. */
static void test_degraded_run_read(void **state)
{
	fixture *fx = *state;
	const size_t len = 70 * STRIPE + 5;
	uint8_t *data = g_malloc(len);
	ecfile *f;

	fill_random(data, len, 13);
	assert_int_equal(ecfile_create(fx->v, "/d", O_CREAT, 0644, getuid(), getgid(), &f), 0);
	assert_int_equal(ecfile_write(f, data, len, 0), (ssize_t)len);
	assert_int_equal(ecfile_release(f), 0);
	/* The layout rotates parity per file: fail the members holding data
	 * positions 0 and k-1 of this file, whatever they are. */
	assert_int_equal(ecfile_open(fx->v, "/d", 0, &f), 0);
	char *text = ecfile_layout_text(f), *rot = strstr(text, "rotation=");
	assert_non_null(rot);
	int r = atoi(rot + 9);
	g_free(text);
	/* layout.c: position p is on member (p + rotation) % n. */
	assert_true(volume_member_error(fx->v, r % N, EIO, "test"));
	assert_true(volume_member_error(fx->v, (K - 1 + r) % N, EIO, "test"));
	assert_reads(f, data, len);
	assert_int_equal(ecfile_release(f), 0);
	char *health = volume_health_text(fx->v), *dec = strstr(health, "strips_decoded=");
	assert_non_null(dec);
	/* Every stripe but the last, partial one, read as a whole. */
	assert_true(strtoull(dec + 15, NULL, 10) >= 70);
	g_free(health);
	g_free(data);
}

/* ---- the pool, on queues of its own ---- */

typedef struct owner {
	pthread_mutex_t lock;
	cm_queue *q;
	char name;
	int merge; /* batches the next run takes at once */
	int runs;
} owner;

static struct {
	pthread_mutex_t lock;
	char order[64]; /* the owners' names, one per run started */
	int len;
} runs = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* A run that takes its time outside the owner's lock, as a commit's
 * member I/O does, and records its start. */
static int slow_run(void *arg, cm_batch *b)
{
	owner *o = arg;
	(void)b;
	pthread_mutex_lock(&runs.lock);
	if (runs.len < (int)sizeof(runs.order) - 1)
		runs.order[runs.len++] = o->name;
	pthread_mutex_unlock(&runs.lock);
	o->runs++;
	pthread_mutex_unlock(&o->lock);
	usleep(20000);
	pthread_mutex_lock(&o->lock);
	int took = o->merge;
	o->merge = 1;
	return took;
}

static void owner_init(owner *o, char name)
{
	memset(o, 0, sizeof(*o));
	pthread_mutex_init(&o->lock, NULL);
	o->name = name;
	o->merge = 1;
	o->q = cm_queue_new(&o->lock, 64, slow_run, o);
	assert_non_null(o->q);
}

/* Queues `batches` batches, each as soon as a slot is free, as a writer
 * does. */
static void owner_submit(owner *o, int batches)
{
	pthread_mutex_lock(&o->lock);
	for (int i = 0; i < batches; i++) {
		cm_wait_slots(o->q, 1);
		cm_batch *b = cm_reserve(o->q);
		assert_non_null(b);
		b->s0 = (uint64_t)i;
		b->cnt = 1;
		cm_submit(o->q, b);
	}
	pthread_mutex_unlock(&o->lock);
}

static void owner_drain(owner *o)
{
	pthread_mutex_lock(&o->lock);
	cm_drain(o->q);
	assert_int_equal(cm_free_slots(o->q), CM_DEPTH);
	assert_int_equal(cm_take_error(o->q), 0);
	pthread_mutex_unlock(&o->lock);
	cm_queue_free(o->q, false);
	pthread_mutex_destroy(&o->lock);
}

/* Keeps o's queue full with `batches` batches in all, on a thread of
 * its own. */
typedef struct feeder {
	owner *o;
	int batches;
	pthread_t t;
} feeder;

static void *feed(void *arg)
{
	feeder *fd = arg;

	owner_submit(fd->o, fd->batches);
	return NULL;
}

static void feeder_start(feeder *fd, owner *o, int batches)
{
	fd->o = o;
	fd->batches = batches;
	assert_int_equal(pthread_create(&fd->t, NULL, feed, fd), 0);
}

/* Two files keep their queues full and a third queues one batch: it
 * waits for one turn of CM_TURN runs of one of the others, not until a
 * queue has drained, nor only for one run (which would send the threads
 * round every file between runs, each batch's bytes long out of the
 * cache). */
static void test_pool_takes_turns(void **state)
{
	(void)state;
	owner a, b, c;
	feeder fa, fb;

	owner_init(&a, 'a');
	owner_init(&b, 'b');
	owner_init(&c, 'c');
	runs.len = 0;
	feeder_start(&fa, &a, 3 * CM_TURN);
	feeder_start(&fb, &b, 3 * CM_TURN);
	usleep(5000); /* both running their first batch */
	pthread_mutex_lock(&runs.lock);
	runs.order[runs.len++] = '|'; /* c queued here */
	pthread_mutex_unlock(&runs.lock);
	owner_submit(&c, 1);
	pthread_join(fa.t, NULL);
	pthread_join(fb.t, NULL);
	owner_drain(&a);
	owner_drain(&b);
	owner_drain(&c);
	runs.order[runs.len] = 0;
	char *first_c = strchr(runs.order, 'c');
	assert_non_null(first_c);
	/* Runs before c, and those of them started after c was queued: a
	 * thread hands its file back at the first end of a run once the turn
	 * is full, so at most CM_TURN - 1 more start meanwhile. */
	int as = 0, bs = 0, as_after = 0, bs_after = 0;
	bool queued = false;
	for (const char *p = runs.order; p < first_c; p++) {
		queued |= *p == '|';
		as += *p == 'a';
		bs += *p == 'b';
		as_after += queued && *p == 'a';
		bs_after += queued && *p == 'b';
	}
	if (as_after > CM_TURN - 1 || bs_after > CM_TURN - 1)
		fail_msg("runs in order %s: c waited more than a turn", runs.order);
	if (as < CM_TURN && bs < CM_TURN)
		fail_msg("runs in order %s: a thread left its file before its turn ended",
		         runs.order);
}

/* A run that takes the batch behind its own too frees both. */
static void test_run_takes_batches_behind(void **state)
{
	(void)state;
	owner a;

	owner_init(&a, 'a');
	pthread_mutex_lock(&a.lock);
	a.merge = 2;
	pthread_mutex_unlock(&a.lock);
	owner_submit(&a, CM_DEPTH);
	pthread_mutex_lock(&a.lock);
	cm_drain(a.q);
	assert_int_equal(a.runs, CM_DEPTH - 1);
	pthread_mutex_unlock(&a.lock);
	owner_drain(&a);
}

int main(void)
{
	ecfs_log_init("test_committer", false, false);
	srand(4242);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_async_mixed_with_everything, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_behind_the_answer_is_reported, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_partial_write_over_queued_stripes, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_degraded_run_read, setup, teardown),
		cmocka_unit_test(test_pool_takes_turns),
		cmocka_unit_test(test_run_takes_batches_behind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
