// SPDX-License-Identifier: MIT
/* The member-operation recorder (record.h, docs/RECORD.md). */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define MAX_MEMBERS 64

struct rec_line {
	GString *s;
	int member;
};

/* Process-wide.  lock serialises the recorded operations; recording and
 * abort_at are set at a volume open, before the operations they affect,
 * and read without it. */
/* held across the member call it records; order: before log_lock only */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool started;
static bool recording;
static long abort_at;
static uint64_t seq;            /* atomic */
static char *dir;
static int ops_fd = -1, data_fd = -1;
static uint64_t data_size;
static char *roots[MAX_MEMBERS]; /* under lock */

/* 0, or a negative errno (EIO for a write that made no progress). */
static int write_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	while (len) {
		ssize_t n = write(fd, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

static int open_in_dir(const char *name)
{
	g_autofree char *p = g_build_filename(dir, name, NULL);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		ecfs_log(LOG_ERR, "ECFS_RECORD: cannot open %s: %s", p, g_strerror(errno));
	return fd;
}

void record_start(long abort_after)
{
	pthread_mutex_lock(&lock);
	if (!started) {
		const char *d = getenv("ECFS_RECORD");
		started = true;
		if (d && *d) {
			dir = g_strdup(d);
			ops_fd = open_in_dir("ops.jsonl");
			data_fd = open_in_dir("data.bin");
			if (ops_fd >= 0 && data_fd >= 0) {
				__atomic_store_n(&recording, true, __ATOMIC_RELEASE);
				ecfs_log(LOG_WARNING, "recording member operations in %s", dir);
			}
		}
	}
	if (abort_after > 0)
		__atomic_store_n(&abort_at, abort_after, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
}

void record_set_root(int idx, int rootfd)
{
	char link[40], buf[PATH_MAX];
	ssize_t n;

	if (!__atomic_load_n(&recording, __ATOMIC_ACQUIRE) || idx < 0 || idx >= MAX_MEMBERS)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", rootfd);
	n = readlink(link, buf, sizeof(buf) - 1);
	pthread_mutex_lock(&lock);
	g_free(roots[idx]);
	roots[idx] = n > 0 ? g_strndup(buf, (size_t)n) : NULL;
	pthread_mutex_unlock(&lock);
}

void record_close(void)
{
	uint64_t w = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);

	ecfs_log(LOG_NOTICE, "member writes: %llu", (unsigned long long)w);
	pthread_mutex_lock(&lock);
	if (recording) {
		int fd = open_in_dir("count");
		g_autofree char *text = g_strdup_printf("%llu\n", (unsigned long long)w);
		if (fd >= 0) {
			int rc = write_all(fd, text, strlen(text));
			if (rc < 0)
				ecfs_log(LOG_ERR, "ECFS_RECORD: cannot write the count: %s",
				         g_strerror(-rc));
			close(fd);
		}
	}
	pthread_mutex_unlock(&lock);
}

uint64_t record_count(void)
{
	return __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
}

bool record_active(void)
{
	return __atomic_load_n(&recording, __ATOMIC_ACQUIRE);
}

bool record_begin(void)
{
	if (!__atomic_load_n(&recording, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&abort_at, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&lock);
	return true;
}

void record_end(bool locked)
{
	if (locked)
		pthread_mutex_unlock(&lock);
}

rec_line *record_line(const char *op, int idx)
{
	rec_line *l;

	if (!__atomic_load_n(&recording, __ATOMIC_ACQUIRE))
		return NULL;
	l = g_new(rec_line, 1);
	l->s = g_string_new(NULL);
	l->member = idx;
	g_string_append_printf(l->s, "\"op\":\"%s\",\"member\":%d", op, idx);
	return l;
}

void record_done(rec_line *l)
{
	uint64_t n = __atomic_add_fetch(&seq, 1, __ATOMIC_ACQ_REL);

	if (l) {
		g_autofree char *head = g_strdup_printf("{\"seq\":%llu,", (unsigned long long)n);
		g_string_prepend(l->s, head);
		g_string_append(l->s, "}\n");
		int rc = write_all(ops_fd, l->s->str, l->s->len);
		if (rc < 0)
			ecfs_log(LOG_ERR, "ECFS_RECORD: cannot write ops.jsonl: %s", g_strerror(-rc));
		g_string_free(l->s, TRUE);
		g_free(l);
	}
	/* Still under the lock: no other member operation takes effect. */
	if (n == (uint64_t)__atomic_load_n(&abort_at, __ATOMIC_ACQUIRE))
		kill(getpid(), SIGKILL);
}

void record_json_string(GString *out, const char *s)
{
	g_string_append_c(out, '"');
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c > 0x7e || *c == '"' || *c == '\\')
			g_string_append_printf(out, "\\u%04x", *c);
		else
			g_string_append_c(out, (char)*c);
	g_string_append_c(out, '"');
}

static void key(rec_line *l, const char *k)
{
	g_string_append_printf(l->s, ",\"%s\":", k);
}

/* abs relative to member idx's root: "" for the root itself, absolute if
 * not beneath it. */
static const char *relative(int idx, const char *abs)
{
	const char *root = idx >= 0 && idx < MAX_MEMBERS ? roots[idx] : NULL;
	size_t n = root ? strlen(root) : 0;

	if (!root || strncmp(abs, root, n))
		return abs;
	if (!abs[n])
		return "";
	if (abs[n] == '/')
		return abs + n + 1;
	return abs;
}

static bool fd_path(int fd, char *buf, size_t size)
{
	char link[40];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, size - 1);
	if (n < 0)
		return false;
	buf[n] = 0;
	return true;
}

void record_path_fd(rec_line *l, const char *k, int fd)
{
	static const char gone[] = " (deleted)";
	char buf[PATH_MAX];
	struct stat st;
	bool deleted;

	if (!l)
		return;
	if (!fd_path(fd, buf, sizeof(buf)))
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d", fd);
	deleted = fstat(fd, &st) == 0 && st.st_nlink == 0;
	size_t n = strlen(buf);
	if (deleted && n > sizeof(gone) - 1 && !strcmp(buf + n - (sizeof(gone) - 1), gone))
		buf[n - (sizeof(gone) - 1)] = 0;
	key(l, k);
	record_json_string(l->s, relative(l->member, buf));
	if (deleted)
		g_string_append(l->s, ",\"deleted\":true");
}

void record_path_at(rec_line *l, const char *k, int dirfd, const char *name)
{
	char buf[PATH_MAX];

	if (!l)
		return;
	if (!fd_path(dirfd, buf, sizeof(buf)))
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d", dirfd);
	g_autofree char *full = *name ? g_strdup_printf("%s%s%s", buf,
	                                                strcmp(buf, "/") ? "/" : "", name)
	                              : g_strdup(buf);
	key(l, k);
	record_json_string(l->s, relative(l->member, full));
}

void record_int(rec_line *l, const char *k, long long x)
{
	if (!l)
		return;
	key(l, k);
	g_string_append_printf(l->s, "%lld", x);
}

void record_bool(rec_line *l, const char *k, bool x)
{
	if (!l)
		return;
	key(l, k);
	g_string_append(l->s, x ? "true" : "false");
}

void record_str(rec_line *l, const char *k, const char *s)
{
	if (!l)
		return;
	key(l, k);
	record_json_string(l->s, s);
}

void record_hex(rec_line *l, const char *k, const void *p, size_t len)
{
	const unsigned char *c = p;

	if (!l)
		return;
	key(l, k);
	g_string_append_c(l->s, '"');
	for (size_t i = 0; i < len; i++)
		g_string_append_printf(l->s, "%02x", c[i]);
	g_string_append_c(l->s, '"');
}

void record_data(rec_line *l, const struct iovec *iov, int cnt, size_t len, long long off)
{
	uint64_t at = data_size;
	size_t left = len;

	if (!l)
		return;
	for (int i = 0; i < cnt && left; i++) {
		size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
		int rc = write_all(data_fd, iov[i].iov_base, n);
		if (rc < 0) {
			ecfs_log(LOG_ERR, "ECFS_RECORD: cannot write data.bin: %s", g_strerror(-rc));
			break;
		}
		left -= n;
	}
	data_size += len;
	record_int(l, "off", off);
	record_int(l, "len", (long long)len);
	record_int(l, "data", (long long)at);
}
