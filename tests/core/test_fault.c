/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the fault-injection rules (src/core/member/fault.c): the ECFS_FAULT
 * grammar (rules, keys, errno names, the old one-rule form, unknown keys),
 * the matching of operations (member, kind, after, count, errno 0, delay,
 * hang and its release, counters shared by threads), and the rules at work
 * in the member operations of a real volume (src/core/member/memberops.c).
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "core_test_util.h"
#include "fault.h"
#include "log.h"
#include "memberops.h"
#include "volume_internal.h"

/* Runs fault_parse(spec) with stderr captured; returns the rules and the
 * log text (g_free) in *log. */
static fault_rules *parse_logged(const char *spec, char **log)
{
	char path[] = "/tmp/ecfs-test-fault-XXXXXX";
	int fd = mkstemp(path);
	int saved = dup(2);
	fault_rules *r;
	size_t len;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	r = fault_parse(spec);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	*log = (char *)slurp(path, &len);
	unlink(path);
	assert_non_null(*log);
	*log = g_realloc(*log, len + 1);
	(*log)[len] = 0;
	return r;
}

/* Whether one operation is hit, and with which errno (-1: not hit). */
static int hit(fault_rules *r, int idx, int kind)
{
	int err = 12345;
	return fault_check(r, idx, kind, &err) ? err : -1;
}

static void test_no_spec_no_rules(void **state)
{
	(void)state;
	assert_null(fault_parse(NULL));
	assert_null(fault_parse(""));
	assert_int_equal(hit(NULL, 0, FAULT_WRITE), -1);
	assert_int_equal(fault_count(NULL), 0);
	assert_int_equal(fault_abort_after(NULL), 0);
}

static void test_old_form(void **state)
{
	char *log;
	fault_rules *r = parse_logged("member=1,op=write,after=2,errno=28", &log);
	(void)state;

	assert_non_null(r);
	assert_int_equal(fault_count(r), 1);
	assert_non_null(strstr(log, "fault injection: member 1, write operations after 2"));
	assert_int_equal(hit(r, 0, FAULT_WRITE), -1);   /* other member */
	assert_int_equal(hit(r, 1, FAULT_READ), -1);    /* other kind */
	assert_int_equal(hit(r, 1, FAULT_WRITE), -1);   /* after=2 */
	assert_int_equal(hit(r, 1, FAULT_WRITE), -1);
	assert_int_equal(hit(r, 1, FAULT_WRITE), ENOSPC);
	assert_int_equal(hit(r, 1, FAULT_WRITE), ENOSPC); /* default count: the rest */
	assert_int_equal(hit(r, 1, FAULT_SYNC), -1);
	fault_free(r);
	g_free(log);
}

static void test_rules_count_and_names(void **state)
{
	char *log;
	fault_rules *r = parse_logged("member=0,op=read,after=1,count=2,errno=EROFS; "
	                              "op=sync,errno=EDQUOT;op=meta", &log);
	(void)state;

	assert_int_equal(fault_count(r), 3);
	assert_int_equal(hit(r, 0, FAULT_READ), -1);
	assert_int_equal(hit(r, 0, FAULT_READ), EROFS);
	assert_int_equal(hit(r, 0, FAULT_READ), EROFS);
	assert_int_equal(hit(r, 0, FAULT_READ), -1);    /* count=2 used up */
	assert_int_equal(hit(r, 3, FAULT_SYNC), EDQUOT); /* every member */
	assert_int_equal(hit(r, 5, FAULT_META), EIO);    /* the default errno */
	assert_int_equal(hit(r, 5, FAULT_WRITE), -1);
	fault_free(r);
	g_free(log);
}

static void test_unknown_keys_and_bad_values(void **state)
{
	char *log;
	fault_rules *r = parse_logged("member=2,colour=red,op=sideways,errno=EBANANA,"
	                              "after=-3,errno=ENOSPC", &log);
	(void)state;

	assert_non_null(strstr(log, "ECFS_FAULT: ignoring 'colour=red'"));
	assert_non_null(strstr(log, "ECFS_FAULT: ignoring 'op=sideways'"));
	assert_non_null(strstr(log, "ECFS_FAULT: ignoring 'errno=EBANANA'"));
	assert_non_null(strstr(log, "ECFS_FAULT: ignoring 'after=-3'"));
	assert_int_equal(fault_count(r), 1);
	assert_int_equal(hit(r, 2, FAULT_READ), ENOSPC); /* op: still any */
	assert_int_equal(hit(r, 1, FAULT_READ), -1);
	fault_free(r);
	g_free(log);

	/* a rule of nothing but unknown keys is no rule */
	r = parse_logged("bogus", &log);
	assert_null(r);
	assert_non_null(strstr(log, "ECFS_FAULT: ignoring 'bogus'"));
	g_free(log);
}

static void test_abort_after_is_global(void **state)
{
	char *log;
	fault_rules *r = parse_logged("abort_after=17", &log);
	(void)state;

	assert_non_null(r);
	assert_int_equal(fault_count(r), 0);
	assert_int_equal(fault_abort_after(r), 17);
	assert_int_equal(hit(r, 0, FAULT_WRITE), -1);
	assert_non_null(strstr(log, "abort (SIGKILL) after member write 17"));
	fault_free(r);
	g_free(log);

	r = parse_logged("member=1,op=sync,errno=EIO;abort_after=4", &log);
	assert_int_equal(fault_count(r), 1);
	assert_int_equal(fault_abort_after(r), 4);
	fault_free(r);
	g_free(log);
}

/* errno=0 is a lost write or sync; on reads and metadata it is no fault. */
static void test_errno_zero(void **state)
{
	char *log;
	fault_rules *r = parse_logged("errno=0", &log);
	(void)state;

	assert_int_equal(hit(r, 0, FAULT_WRITE), 0);
	assert_int_equal(hit(r, 0, FAULT_SYNC), 0);
	assert_int_equal(hit(r, 0, FAULT_READ), -1);
	assert_int_equal(hit(r, 0, FAULT_META), -1);
	fault_free(r);
	g_free(log);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* delay= alone slows the operation and lets it run; with errno= it fails
 * it after the wait.  (Only the lower bound is asserted: a sleep never
 * ends early.) */
static void test_delay(void **state)
{
	char *log;
	fault_rules *r = parse_logged("member=0,op=read,delay=30;member=1,delay=20,errno=EIO",
	                              &log);
	(void)state;

	double t0 = now_ms();
	assert_int_equal(hit(r, 0, FAULT_READ), -1);
	assert_true(now_ms() - t0 >= 29.5);
	t0 = now_ms();
	assert_int_equal(hit(r, 1, FAULT_WRITE), EIO);
	assert_true(now_ms() - t0 >= 19.5);
	assert_int_equal(hit(r, 2, FAULT_WRITE), -1);
	fault_free(r);
	g_free(log);
}

typedef struct hang_arg {
	fault_rules *r;
	int result;
	int done; /* atomic */
} hang_arg;

static void *hang_thread(void *p)
{
	hang_arg *a = p;
	a->result = hit(a->r, 3, FAULT_WRITE);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* hang blocks the operation until fault_release(), which fails it with
 * EIO; later hits fail at once. */
static void test_hang_until_release(void **state)
{
	char *log;
	fault_rules *r = parse_logged("member=3,op=write,after=1,hang", &log);
	hang_arg a = { .r = r };
	pthread_t th;
	(void)state;

	assert_int_equal(hit(r, 3, FAULT_WRITE), -1); /* after=1 */
	assert_int_equal(pthread_create(&th, NULL, hang_thread, &a), 0);
	for (int i = 0; i < 20; i++) {
		usleep(5000);
		assert_int_equal(__atomic_load_n(&a.done, __ATOMIC_ACQUIRE), 0);
	}
	assert_int_equal(hit(r, 2, FAULT_WRITE), -1); /* other members answer */
	fault_release(r);
	pthread_join(th, NULL);
	assert_int_equal(a.result, EIO);
	assert_int_equal(hit(r, 3, FAULT_WRITE), EIO);
	fault_free(r);
	g_free(log);
}

#define THREADS 4
#define CALLS 1000

typedef struct count_arg {
	fault_rules *r;
	int hits;
} count_arg;

static void *count_thread(void *p)
{
	count_arg *a = p;
	for (int i = 0; i < CALLS; i++)
		a->hits += hit(a->r, 1, FAULT_WRITE) == ENOSPC;
	return NULL;
}

/* The counters are shared by threads: exactly `count` operations are hit
 * however the threads interleave. */
static void test_counts_across_threads(void **state)
{
	char *log;
	fault_rules *r = parse_logged("member=1,op=write,after=1000,count=500,errno=ENOSPC", &log);
	count_arg a[THREADS] = { 0 };
	pthread_t th[THREADS];
	int total = 0;
	(void)state;

	for (int i = 0; i < THREADS; i++) {
		a[i].r = r;
		assert_int_equal(pthread_create(&th[i], NULL, count_thread, &a[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		total += a[i].hits;
	}
	assert_int_equal(total, 500);
	fault_free(r);
	g_free(log);
}

/* The rules at work in a volume's member operations: every kind of
 * wrapper consults them. */
static void test_member_operations(void **state)
{
#ifdef ECFS_FAULT_INJECTION
	static const volume_options o = { .geometry = { .k = 2, .m = 1 } };
	members mb;
	volume *v;
	char *msg = NULL, buf[8];
	(void)state;

	members_make(&mb, 3);
	setenv("ECFS_FAULT", "member=1,op=meta,errno=EROFS;member=1,op=sync,errno=EDQUOT;"
	       "member=1,op=write,errno=0;member=2,op=read,errno=ENOSPC", 1);
	assert_int_equal(volume_open((const char *const *)mb.path, 3, &o, &v, &msg), 0);
	unsetenv("ECFS_FAULT");
	int r1 = volume_root_fd(v, 1), r2 = volume_root_fd(v, 2);

	assert_int_equal(mop_mkdirat(v, 1, r1, "d", 0755), -EROFS);
	assert_int_equal(mop_openat(v, 1, r1, "f", O_RDWR | O_CREAT, 0600), -EROFS);
	int fd = mop_openat(v, 2, r2, "f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(mop_pwrite(v, 2, fd, "abc", 3, 0), 3);
	assert_int_equal(mop_pread(v, 2, fd, buf, 3, 0), -ENOSPC);
	/* member 1's writes are lost while reported done */
	int fd1 = openat(r1, "g", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd1 >= 0);
	assert_int_equal(mop_pwrite(v, 1, fd1, "abc", 3, 0), 3);
	assert_int_equal(mop_ftruncate(v, 1, fd1, 100), 0);
	struct stat st;
	assert_int_equal(fstat(fd1, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(mop_fsync(v, 1, fd1, true), -EDQUOT);
	assert_int_equal(mop_pread(v, 1, fd1, buf, 3, 0), 0);
	close(fd);
	close(fd1);
	volume_close(v);
	members_remove(&mb);
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	ecfs_log_init("test_fault", false, false);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_spec_no_rules),
		cmocka_unit_test(test_old_form),
		cmocka_unit_test(test_rules_count_and_names),
		cmocka_unit_test(test_unknown_keys_and_bad_values),
		cmocka_unit_test(test_abort_after_is_global),
		cmocka_unit_test(test_errno_zero),
		cmocka_unit_test(test_delay),
		cmocka_unit_test(test_hang_until_release),
		cmocka_unit_test(test_counts_across_threads),
		cmocka_unit_test(test_member_operations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
