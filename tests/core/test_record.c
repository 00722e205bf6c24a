/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the member-operation recorder (src/core/member/record.c, docs/
 * RECORD.md) through the member operations of real volumes: the lines
 * (seq without gaps, volume creation, paths relative to the member root,
 * byte strings escaped, modes and owners afterwards, writes to an unlinked
 * file, the bytes in data.bin), the count at close, and abort_after (in a
 * child process, which must die by SIGKILL right after operation N).
 * The record is process-wide: one test program, the tests in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "core_test_util.h"
#include "log.h"
#include "memberops.h"
#include "record.h"
#include "volume_internal.h"

static const volume_options opts = { .geometry = { .k = 2, .m = 1 } };

static void test_json_strings(void **state)
{
	GString *s = g_string_new(NULL);
	(void)state;

	record_json_string(s, "a/b c~");
	assert_string_equal(s->str, "\"a/b c~\"");
	g_string_truncate(s, 0);
	record_json_string(s, "q\"b\\n\n\x7f\xc3\xa9");
	assert_string_equal(s->str, "\"q\\u0022b\\u005cn\\u000a\\u007f\\u00c3\\u00a9\"");
	g_string_free(s, TRUE);
}

/* abort_after=3 while a new volume is created: the child dies by SIGKILL
 * right after operation 3 (mkdir .ecfs, create superblock.tmp, its
 * write), before the superblock is renamed into place. */
static void test_abort_after(void **state)
{
	members mb;
	int status;
	(void)state;
#ifndef ECFS_FAULT_INJECTION
	skip(); /* no recorder in this build */
#endif

	members_make(&mb, 3);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		volume *v;
		char *msg;
		setenv("ECFS_FAULT", "abort_after=3", 1);
		volume_open((const char *const *)mb.path, 3, &opts, &v, &msg);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	char *tmp = g_build_filename(mb.path[0], ".ecfs", "superblock.tmp", NULL);
	char *sb = g_build_filename(mb.path[0], ".ecfs", "superblock", NULL);
	char *other = g_build_filename(mb.path[1], ".ecfs", NULL);
	struct stat st;
	assert_int_equal(stat(tmp, &st), 0);
	assert_true(st.st_size > 0);
	assert_int_equal(stat(sb, &st), -1);
	assert_int_equal(stat(other, &st), -1);
	g_free(tmp);
	g_free(sb);
	g_free(other);
	members_remove(&mb);
}

static char *field_str(const char *line, const char *key)
{
	char *pat = g_strdup_printf("\"%s\":", key);
	const char *p = strstr(line, pat);
	char *out = NULL;
	if (p) {
		p += strlen(pat);
		const char *e = p + strcspn(p, ",}");
		if (*p == '"') {
			p++;
			e = strchr(p, '"');
		}
		out = g_strndup(p, (size_t)(e - p));
	}
	g_free(pat);
	return out;
}

/* The line of the first operation op on member idx with path, or NULL. */
static const char *find(char **lines, const char *op, int idx, const char *path)
{
	for (char **l = lines; *l; l++) {
		char *o = field_str(*l, "op"), *m = field_str(*l, "member"), *p = field_str(*l, "path");
		bool hit = o && m && p && !strcmp(o, op) && atoi(m) == idx && !strcmp(p, path);
		g_free(o);
		g_free(m);
		g_free(p);
		if (hit)
			return *l;
	}
	return NULL;
}

/* Ten member operations that succeed, in which a file with an odd name is
 * created, written, renamed, unlinked while open and written again, and one
 * that fails. */
static void record_workload(volume *v, int root)
{
	assert_int_equal(mop_mkdirat(v, 1, root, "d", 0751), 0);
	assert_int_equal(mop_fchmodat(v, 1, root, "d", 0700, 0), 0);
	const char *odd = "d/q\"\xff";
	int fd = mop_openat(v, 1, root, odd, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	assert_true(fd >= 0);
	assert_int_equal(mop_pwrite(v, 1, fd, "hello", 5, 3), 5);
	assert_int_equal(mop_fsetxattr(v, 1, fd, "user.x", "\x01\xab", 2, 0), 0);
	/* an open of the existing file with O_CREAT changes nothing */
	int fd2 = mop_openat(v, 1, root, odd, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	assert_true(fd2 >= 0);
	close(fd2);
	assert_int_equal(mop_renameat2(v, 1, root, odd, root, "d/r", 0), 0);
	assert_int_equal(mop_unlinkat(v, 1, root, "d/r", 0), 0);
	assert_int_equal(mop_pwrite(v, 1, fd, "zz", 2, 0), 2);
	assert_int_equal(mop_fsync(v, 1, fd, true), 0);
	close(fd);
	assert_int_equal(mop_unlinkat(v, 1, root, "d", AT_REMOVEDIR), 0);
	/* a failed operation is not recorded */
	assert_int_equal(mop_unlinkat(v, 1, root, "nothing", 0), -ENOENT);
}

/* Each operation of record_workload() is on its line with its fields;
 * returns the line of the first write. */
static const char *check_recorded_ops(char **lines)
{
	/* volume creation, relative to each member root */
	assert_non_null(find(lines, "mkdir", 2, ".ecfs"));
	assert_non_null(find(lines, "rename", 2, ".ecfs/superblock.tmp"));
	assert_non_null(strstr(find(lines, "mkdir", 1, "d"), "\"mode\":489"));   /* 0751 */
	assert_non_null(strstr(find(lines, "chmod", 1, "d"), "\"mode\":448"));   /* 0700 */
	const char *c = find(lines, "create", 1, "d/q\\u0022\\u00ff");
	assert_non_null(c);
	assert_non_null(strstr(c, "\"mode\":416"));                              /* 0640 */
	const char *wr = find(lines, "write", 1, "d/q\\u0022\\u00ff");
	assert_non_null(wr);
	assert_non_null(strstr(wr, "\"off\":3,\"len\":5,"));
	assert_null(strstr(wr, "deleted"));
	assert_non_null(strstr(find(lines, "setxattr", 1, "d/q\\u0022\\u00ff"),
	                       "\"name\":\"user.x\",\"hex\":\"01ab\""));
	assert_non_null(strstr(find(lines, "rename", 1, "d/q\\u0022\\u00ff"),
	                       "\"to\":\"d/r\",\"flags\":0"));
	assert_non_null(find(lines, "unlink", 1, "d/r"));
	const char *gone = find(lines, "write", 1, "d/r");
	assert_non_null(gone);
	assert_non_null(strstr(gone, "\"deleted\":true"));
	assert_non_null(strstr(find(lines, "fsync", 1, "d/r"), "\"datasync\":true"));
	assert_non_null(find(lines, "rmdir", 1, "d"));
	return wr;
}

static void test_record(void **state)
{
	members mb;
	volume *v;
	char *msg = NULL;
	(void)state;
#ifndef ECFS_FAULT_INJECTION
	skip();
#endif

	members_make(&mb, 3);
	char *dir = g_build_filename(mb.root, "rec", NULL);
	assert_int_equal(mkdir(dir, 0755), 0);
	setenv("ECFS_RECORD", dir, 1);
	assert_int_equal(volume_open((const char *const *)mb.path, 3, &opts, &v, &msg), 0);
	int root = volume_root_fd(v, 1);
	uint64_t before = record_count();

	record_workload(v, root);
	uint64_t w = record_count();
	assert_int_equal(w - before, 10);
	volume_close(v);
	assert_int_equal(record_count() - w, 3); /* each member's lock text emptied */
	w = record_count();

	size_t len;
	char *p = g_build_filename(dir, "ops.jsonl", NULL);
	char *text = (char *)slurp(p, &len);
	g_free(p);
	text = g_realloc(text, len + 1);
	text[len] = 0;
	char **lines = g_strsplit(text, "\n", -1);
	uint64_t n = 0;
	for (char **l = lines; *l && **l; l++) {
		char *seq = field_str(*l, "seq");
		assert_int_equal(g_ascii_strtoull(seq, NULL, 10), ++n);
		g_free(seq);
	}
	assert_int_equal(n, w);
	const char *wr = check_recorded_ops(lines);
	/* the bytes of the write, at its data offset */
	char *at = field_str(wr, "data");
	p = g_build_filename(dir, "data.bin", NULL);
	uint8_t *data = slurp(p, &len);
	g_free(p);
	size_t off = (size_t)g_ascii_strtoull(at, NULL, 10);
	assert_true(off + 5 <= len);
	assert_memory_equal(data + off, "hello", 5);
	g_free(at);
	g_free(data);
	/* the count */
	p = g_build_filename(dir, "count", NULL);
	char *count = (char *)slurp(p, &len);
	g_free(p);
	char *want = g_strdup_printf("%llu\n", (unsigned long long)w);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(count, want, len);
	g_free(want);
	g_free(count);
	g_strfreev(lines);
	g_free(text);
	unsetenv("ECFS_RECORD");
	g_free(dir);
	members_remove(&mb);
}

int main(void)
{
	ecfs_log_init("test_record", false, false);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_strings),
		cmocka_unit_test(test_abort_after), /* before anything starts the record */
		cmocka_unit_test(test_record),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
