/* SPDX-License-Identifier: MIT */
/*
 * ecfs-bench-calls: what it costs to make one namespace call on each of n
 * member directories, by the way the calls are issued
 * (docs/performance-history.md section 7).  The call is a renameat2 back and forth in each member
 * directory (on tmpfs by default: the call itself costs little, so the
 * issuing shows).  The ways:
 *
 *   inline            one after the other on the calling thread (no
 *                     member timeout can bound them)
 *   threads, serial   each handed to its member's I/O worker in turn,
 *                     waited for before the next (memberio.h, with a
 *                     timeout: ecfs before the calls went out together)
 *   threads, all      all handed out at once, one wait
 *   threads, 1 + rest the first alone, then the others at once (ecfs's
 *                     logged operations with a timeout, mirror.c)
 *   relay, all        all handed to the one relay thread, which makes
 *                     them one after the other, each watched as its
 *                     member's (mio_batch_init_small), one wait
 *   relay, 1 + rest
 *   io_uring, all     one submission of n IORING_OP_RENAMEAT, each linked
 *                     to an IORING_OP_LINK_TIMEOUT, one wait
 *   io_uring, 1 + rest
 *   io_uring, no timeout
 *
 * With -v, then the logged namespace operations themselves (rename,
 * link, unlink, mkdir, rmdir through mirror_apply_logged: the intent, the
 * calls, the end of the intent) on a volume of n members with m = 2, with
 * the default member timeout and without one (-o timeout=0), and a new
 * file's create (ecfile_create and its release, no data): the storage
 * core's part of an operation, without FUSE.
 *
 * usage: ecfs-bench-calls [-v] [-n MEMBERS] [-i ITERATIONS] [-r ROUNDS] [DIR]
 * (defaults 6, 10000, 3, /dev/shm).  Prints microseconds per operation
 * (one call on every member) for each way, each round.  Without liburing
 * at build time, or where io_uring_setup is refused (seccomp, the
 * kernel.io_uring_disabled sysctl), the io_uring ways are left out and
 * the reason printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ecfile.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "mirror.h"

#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

#define MAX_MEMBERS 64

static int n_members = 6;
static int dirfd_of[MAX_MEMBERS];
static int parity; /* which way the names go this time */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *src_name(void)
{
	return parity ? "b" : "a";
}

static const char *dst_name(void)
{
	return parity ? "a" : "b";
}

static void die(const char *what)
{
	fprintf(stderr, "ecfs-bench-calls: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* One member's call, as a worker task (bracketed for the timeout). */
static void call_member(void *arg)
{
	int i = (int)(long)arg;
	mio_io_begin();
	int rc = renameat2(dirfd_of[i], src_name(), dirfd_of[i], dst_name(), 0);
	mio_io_end();
	if (rc < 0)
		die("renameat2");
}

static void way_inline(memberio *mio)
{
	(void)mio;
	for (int i = 0; i < n_members; i++)
		call_member((void *)(long)i);
}

static void hand_out_to(memberio *mio, int lo, int hi, bool small)
{
	mio_batch b;
	if (small)
		mio_batch_init_small(mio, &b);
	else
		mio_batch_init(&b);
	for (int i = lo; i < hi; i++)
		memberio_submit(mio, i, &b, call_member, (void *)(long)i);
	if (mio_batch_wait(&b))
		die("a member timed out");
}

static void hand_out(memberio *mio, int lo, int hi)
{
	hand_out_to(mio, lo, hi, false);
}

static void way_serial(memberio *mio)
{
	for (int i = 0; i < n_members; i++)
		hand_out(mio, i, i + 1);
}

static void way_all(memberio *mio)
{
	hand_out(mio, 0, n_members);
}

static void way_first_then_rest(memberio *mio)
{
	hand_out(mio, 0, 1);
	hand_out(mio, 1, n_members);
}

static void way_relay(memberio *mio)
{
	hand_out_to(mio, 0, n_members, true);
}

static void way_relay_first_then_rest(memberio *mio)
{
	hand_out_to(mio, 0, 1, true);
	hand_out_to(mio, 1, n_members, true);
}

#ifdef HAVE_LIBURING
static struct io_uring ring;
static bool ring_ok;

/* Submits the calls of members lo..hi-1 at once, each bounded by a
 * linked timeout if timed, and waits for every completion. */
static void uring_calls(int lo, int hi, bool timed)
{
	struct __kernel_timespec ts = { .tv_sec = 10 };
	unsigned want = 0;

	for (int i = lo; i < hi; i++) {
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		io_uring_prep_renameat(s, dirfd_of[i], src_name(), dirfd_of[i], dst_name(), 0);
		io_uring_sqe_set_data64(s, (unsigned)i);
		want++;
		if (timed) {
			s->flags |= IOSQE_IO_LINK;
			s = io_uring_get_sqe(&ring);
			io_uring_prep_link_timeout(s, &ts, 0);
			io_uring_sqe_set_data64(s, UINT64_MAX);
			want++;
		}
	}
	if (io_uring_submit_and_wait(&ring, want) < 0)
		die("io_uring_submit_and_wait");
	for (unsigned got = 0; got < want; got++) {
		struct io_uring_cqe *c;
		if (io_uring_wait_cqe(&ring, &c) < 0)
			die("io_uring_wait_cqe");
		if (c->user_data != UINT64_MAX && c->res < 0) {
			errno = -c->res;
			die("IORING_OP_RENAMEAT");
		}
		io_uring_cqe_seen(&ring, c);
	}
}

static void way_uring_all(memberio *mio)
{
	(void)mio;
	uring_calls(0, n_members, true);
}

static void way_uring_first_then_rest(memberio *mio)
{
	(void)mio;
	uring_calls(0, 1, true);
	uring_calls(1, n_members, true);
}

static void way_uring_untimed(memberio *mio)
{
	(void)mio;
	uring_calls(0, n_members, false);
}
#endif

static void time_way(const char *name, void (*fn)(memberio *), memberio *mio, int iters)
{
	for (int i = 0; i < iters / 10; i++, parity ^= 1) /* warm up */
		fn(mio);
	double t = now();
	for (int i = 0; i < iters; i++, parity ^= 1)
		fn(mio);
	t = now() - t;
	printf("  %-22s %8.1f us\n", name, t / iters * 1e6);
}

static void make_members(const char *base, char *dir)
{
	snprintf(dir, 4096, "%s/ecfs-bench-calls.XXXXXX", base);
	if (!mkdtemp(dir))
		die(dir);
	for (int i = 0; i < n_members; i++) {
		char p[4200];
		snprintf(p, sizeof(p), "%s/m%d", dir, i);
		if (mkdir(p, 0700) < 0 || (dirfd_of[i] = open(p, O_RDONLY | O_DIRECTORY)) < 0)
			die(p);
		int fd = openat(dirfd_of[i], "a", O_CREAT | O_WRONLY, 0600);
		if (fd < 0)
			die("creating a file");
		close(fd);
	}
}

static void remove_members(const char *dir)
{
	for (int i = 0; i < n_members; i++) {
		char p[4200];
		unlinkat(dirfd_of[i], "a", 0);
		unlinkat(dirfd_of[i], "b", 0);
		close(dirfd_of[i]);
		snprintf(p, sizeof(p), "%s/m%d", dir, i);
		rmdir(p);
	}
	rmdir(dir);
}

static void run_round(memberio *mio, int iters)
{
	time_way("inline", way_inline, mio, iters);
	time_way("threads, serial", way_serial, mio, iters);
	time_way("threads, all", way_all, mio, iters);
	time_way("threads, 1 + rest", way_first_then_rest, mio, iters);
	time_way("relay, all", way_relay, mio, iters);
	time_way("relay, 1 + rest", way_relay_first_then_rest, mio, iters);
#ifdef HAVE_LIBURING
	if (!ring_ok)
		return;
	time_way("io_uring, all", way_uring_all, mio, iters);
	time_way("io_uring, 1 + rest", way_uring_first_then_rest, mio, iters);
	time_way("io_uring, no timeout", way_uring_untimed, mio, iters);
#endif
}

/* ---- the logged operations on a volume (-v) ---- */

static volume *vol;

static int op_rename(int mb, int d1, const char *l1, int d2, const char *l2, void *arg)
{
	(void)arg;
	return mop_renameat2(vol, mb, d1, l1, d2, l2, 0);
}

static int op_link(int mb, int d1, const char *l1, int d2, const char *l2, void *arg)
{
	(void)arg;
	return mop_linkat(vol, mb, d1, l1, d2, l2, 0);
}

static int op_unlink(int mb, int d, const char *l, void *arg)
{
	return mop_unlinkat(vol, mb, d, l, arg ? AT_REMOVEDIR : 0);
}

static int op_mkdir(int mb, int d, const char *l, void *arg)
{
	(void)arg;
	return mop_mkdirat(vol, mb, d, l, 0755);
}

/* iters of one operation on names f<j>/d<j>; microseconds each. */
static double time_logged(intent_op op, int iters)
{
	static const char *pat[][2] = {
		[INTENT_RENAME] = { "/f%d.0", "/f%d.1" }, [INTENT_LINK] = { "/f%d.1", "/l%d" },
		[INTENT_UNLINK] = { "/l%d", NULL }, [INTENT_MKDIR] = { "/d%d", NULL },
		[INTENT_RMDIR] = { "/d%d", NULL },
	};
	double t = now();
	for (int j = 0; j < iters; j++) {
		char a[64], b[64];
		snprintf(a, sizeof(a), pat[op][0], j);
		if (pat[op][1])
			snprintf(b, sizeof(b), pat[op][1], j);
		intent_args x = { op, .from = a, .to = pat[op][1] ? b : NULL, .mode = 0755,
		                  .uid = (uid_t)-1, .gid = (gid_t)-1 };
		int rc = mirror_apply_logged(vol, &x, op == INTENT_MKDIR ? op_mkdir : op_unlink,
		                             op == INTENT_LINK ? op_link : op_rename,
		                             op == INTENT_RMDIR ? &vol : NULL, "bench");
		if (rc < 0) {
			errno = -rc;
			die("mirror_apply_logged");
		}
	}
	return (now() - t) / iters * 1e6;
}

/* iters new empty files made and closed (ecfile_create, ecfile_release). */
static double time_create(int iters)
{
	double t = now();
	for (int j = 0; j < iters; j++) {
		char a[64];
		ecfile *f;
		snprintf(a, sizeof(a), "/c%d", j);
		int rc = ecfile_create(vol, a, O_CREAT | O_WRONLY, 0644, getuid(), getgid(), &f);
		if (rc == 0)
			rc = ecfile_release(f);
		if (rc < 0) {
			errno = -rc;
			die("ecfile_create");
		}
	}
	return (now() - t) / iters * 1e6;
}

/* One volume on fresh members under base, with timeout_ms; a file f<j>.0
 * put on every member for each operation, then each operation timed. */
static void bench_logged(const char *base, int iters, unsigned timeout_ms)
{
	char dir[4096], *paths[MAX_MEMBERS], *msg = NULL;
	make_members(base, dir);
	for (int i = 0; i < n_members; i++) {
		paths[i] = malloc(4200);
		snprintf(paths[i], 4200, "%s/m%d", dir, i);
		unlinkat(dirfd_of[i], "a", 0);
	}
	volume_options o = { .geometry = { .k = n_members - 2, .m = 2 },
	                     .run.timeout_ms = timeout_ms };
	if (volume_open((const char *const *)paths, n_members, &o, &vol, &msg) < 0) {
		fprintf(stderr, "ecfs-bench-calls: %s\n", msg ? msg : "volume_open failed");
		exit(1);
	}
	for (int i = 0; i < n_members; i++)
		for (int j = 0; j < iters; j++) {
			char name[32];
			snprintf(name, sizeof(name), "f%d.0", j);
			int fd = openat(dirfd_of[i], name, O_CREAT | O_WRONLY, 0600);
			if (fd < 0)
				die("creating a file");
			close(fd);
		}
	static const intent_op order[] = { INTENT_RENAME, INTENT_LINK, INTENT_UNLINK, INTENT_MKDIR,
	                                   INTENT_RMDIR };
	static const char *names[] = { "rename", "link", "unlink", "mkdir", "rmdir" };
	printf("  timeout %-4s", timeout_ms ? "on" : "off");
	for (int i = 0; i < 5; i++) /* in this order: each uses what the last made */
		printf("  %s %6.1f", names[i], time_logged(order[i], iters));
	printf("  create %6.1f us\n", time_create(iters));
	volume_close(vol);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "ecfs-bench-calls: could not remove %s\n", dir);
	for (int i = 0; i < n_members; i++)
		free(paths[i]);
}

int main(int argc, char **argv)
{
	int iters = 10000, rounds = 3, opt;
	bool logged = false;
	while ((opt = getopt(argc, argv, "vn:i:r:")) != -1) {
		if (opt == 'v')
			logged = true;
		else if (opt == 'n')
			n_members = atoi(optarg);
		else if (opt == 'i')
			iters = atoi(optarg);
		else if (opt == 'r')
			rounds = atoi(optarg);
		else
			return 2;
	}
	if (n_members < 3 || n_members > MAX_MEMBERS || iters < 10 || rounds < 1) {
		fprintf(stderr, "usage: ecfs-bench-calls [-v] [-n 3..64] [-i >=10] [-r >=1] [DIR]\n");
		return 2;
	}
	const char *base = optind < argc ? argv[optind] : "/dev/shm";
	char dir[4096];
	ecfs_log_init("ecfs-bench-calls", false, false);
	make_members(base, dir);
	memberio *mio = memberio_new(n_members, 10000, NULL, NULL); /* the default timeout */
	if (!mio)
		die("memberio_new");
#ifdef HAVE_LIBURING
	int rc = io_uring_queue_init(4 * MAX_MEMBERS, &ring, 0);
	ring_ok = rc == 0;
	if (!ring_ok)
		printf("io_uring unavailable (%s): its ways are left out\n", strerror(-rc));
#else
	printf("built without liburing: the io_uring ways are left out\n");
#endif
	printf("%d members in %s, %d operations per way; microseconds per operation\n",
	       n_members, dir, iters);
	for (int r = 0; r < rounds; r++) {
		printf("round %d:\n", r + 1);
		run_round(mio, iters);
	}
#ifdef HAVE_LIBURING
	if (ring_ok)
		io_uring_queue_exit(&ring);
#endif
	memberio_free(mio);
	remove_members(dir);
	for (int r = 0; logged && r < rounds; r++) {
		printf("logged operations on a volume, round %d (microseconds per operation):\n",
		       r + 1);
		bench_logged(base, iters / 10, VOLUME_DEFAULT_TIMEOUT_MS);
		bench_logged(base, iters / 10, 0);
	}
	return 0;
}
