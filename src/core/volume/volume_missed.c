/* SPDX-License-Identifier: MIT */
/*
 * Members that missed changes, as the others remember them (DESIGN.md
 * section 10).  A member's .ecfs/missed/ holds an empty file "<i>.<seq>"
 * for each member i the online heal saw failed while this member was in
 * service, and "healed.<seq>" for the last time the heal finished
 * rebuilding this member itself; seq is a time in microseconds.  A member
 * in service that another member in service records as failed after its
 * own last heal came back with an older copy: the open marks it healing,
 * as many of those as m leaves room for (volume_missed_stale).
 * The file names are the whole record, so each change is one create or
 * unlink and a directory sync.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_internal.h"

#define MISSED_DIR "missed"
#define HEALED "healed"

typedef struct book {
	uint64_t failed[64]; /* failed[i]: the latest record of member i failing */
	uint64_t healed;     /* this member's last heal (0: none recorded) */
} book;

bool volume_missed_parse(const char *name, int *idx, uint64_t *seq)
{
	char *end;
	const char *dot = strchr(name, '.');

	if (!dot || dot == name || dot[1] < '0' || dot[1] > '9')
		return false;
	*seq = strtoull(dot + 1, &end, 10);
	if (*end)
		return false;
	if ((size_t)(dot - name) == strlen(HEALED) && !strncmp(name, HEALED, strlen(HEALED))) {
		*idx = -1;
		return true;
	}
	long i = strtol(name, &end, 10);
	*idx = (int)i;
	return end == dot && name[0] >= '0' && name[0] <= '9' && i < 64;
}

/* Reads a member's record (all zero if it has none); on a worker every
 * call is a timed member call.  0 or a negative errno. */
static int read_book(int metafd, book *b)
{
	memset(b, 0, sizeof *b);
	int fd = MIO_CALL(openat(metafd, MISSED_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                                                 O_CLOEXEC));
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		int err = errno;
		MIO_CALL(close(fd));
		return -err;
	}
	struct dirent *e;
	while ((errno = 0, e = MIO_CALL(readdir(d)))) {
		int idx;
		uint64_t seq;
		if (!volume_missed_parse(e->d_name, &idx, &seq))
			continue;
		if (idx < 0)
			b->healed = MAX(b->healed, seq);
		else
			b->failed[idx] = MAX(b->failed[idx], seq);
	}
	int rc = errno ? -errno : 0;
	MIO_CALL(closedir(d));
	return rc;
}

/* Logs the claims of member j about the members in mask that were not
 * believed. */
static void log_refused(volume *v, int j, uint64_t mask)
{
	GString *s = g_string_new(NULL);

	for (int i = 0; i < volume_n(v); i++)
		if (mask >> i & 1)
			g_string_append_printf(s, "%s%d", s->len ? ", " : "", i);
	ecfs_log(LOG_WARNING, "member %d (%s) records member%s %s as having missed changes: "
	         "refused, not believed (the records mark at most m=%d members healing, those "
	         "failed or healing already counted)", j, volume_member_path(v, j),
	         __builtin_popcountll(mask) > 1 ? "s" : "", s->str, volume_m(v));
	g_string_free(s, TRUE);
}

/* The member claimed stale by the most members (the lowest index among
 * equals) of those in claims not yet judged, or -1. */
static int most_claimed(const uint64_t *claims, int n)
{
	int best = -1;

	for (int i = 0; i < n; i++)
		if (claims[i] && (best < 0 ||
		                  __builtin_popcountll(claims[i]) > __builtin_popcountll(claims[best])))
			best = i;
	return best;
}

/* One member's record is no word for the volume: a claim is believed only
 * from a member in service (so one whose superblock is the majority's:
 * volume_probe.c fails the others), and no more members are marked
 * healing than m leaves room for beside those failed or healing already,
 * the members claimed by the most others first.  The claims not believed
 * are logged, each claimer once. */
uint64_t volume_missed_stale(volume *v, int *by)
{
	int n = volume_n(v), out = 0;
	book *b = g_new0(book, n);
	uint64_t ok = 0, stale = 0, claims[64] = { 0 }, refused[64] = { 0 };

	for (int j = 0; j < n; j++)
		if (volume_member_ok(v, j) && read_book(volume_meta_fd(v, j), &b[j]) == 0)
			ok |= 1ull << j;
	for (int i = 0; i < n; i++) {
		out += !volume_member_answers(v, i);
		for (int j = 0; j < n && volume_member_answers(v, i) && (ok >> i & 1); j++)
			if (j != i && (ok >> j & 1) && b[j].failed[i] > b[i].healed)
				claims[i] |= 1ull << j;
	}
	for (int i; (i = most_claimed(claims, n)) >= 0; claims[i] = 0) {
		if (out < volume_m(v)) {
			stale |= 1ull << i;
			by[i] = __builtin_ctzll(claims[i]);
			out++;
			continue;
		}
		for (int j = 0; j < n; j++)
			refused[j] |= (uint64_t)(claims[i] >> j & 1) << i;
	}
	for (int j = 0; j < n; j++)
		if (refused[j])
			log_refused(v, j, refused[j]);
	g_free(b);
	return stale;
}

/* ---- changes, each on the member's worker (volume_on_member) ---- */

struct change {
	volume *v;
	int idx;          /* the member written */
	int about;        /* the member recorded (-1: idx's own heal) */
	uint64_t seq;
	uint64_t seen;    /* out: the latest record removed */
};

/* .ecfs/missed/ of member c->idx, made if missing: an fd or -errno. */
static int open_dir(struct change *c)
{
	int metafd = volume_meta_fd(c->v, c->idx);
	int rc = mop_mkdirat(c->v, c->idx, metafd, MISSED_DIR, 0700);

	if (rc == 0)
		rc = mop_fsync(c->v, c->idx, metafd, false);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	return mop_openat(c->v, c->idx, metafd, MISSED_DIR,
	                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
}

/* Creates the entry of c (about.seq, or healed.seq) and syncs it. */
static int add_entry(struct change *c, int dfd)
{
	char name[48];

	if (c->about < 0)
		snprintf(name, sizeof name, HEALED ".%llu", (unsigned long long)c->seq);
	else
		snprintf(name, sizeof name, "%d.%llu", c->about, (unsigned long long)c->seq);
	return mop_touchat(c->v, c->idx, dfd, name, true);
}

static int record_run(void *arg)
{
	struct change *c = arg;
	int dfd = open_dir(c);
	int rc = dfd < 0 ? dfd : add_entry(c, dfd);

	if (dfd >= 0)
		MIO_CALL(close(dfd));
	return rc;
}

/* Removes the entries about member c->about (or, c->about -1, the older
 * healed stamps of c->idx), noting the latest in c->seen. */
static int remove_run(void *arg)
{
	struct change *c = arg;
	int dfd = open_dir(c), rc = 0;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (!d)
		return dfd < 0 ? dfd : -errno;
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	struct dirent *e;
	while ((e = MIO_CALL(readdir(d)))) {
		int idx;
		uint64_t seq;
		if (volume_missed_parse(e->d_name, &idx, &seq) && idx == c->about && seq != c->seq) {
			c->seen = MAX(c->seen, seq);
			g_ptr_array_add(names, g_strdup(e->d_name));
		}
	}
	for (guint i = 0; i < names->len && rc == 0; i++)
		rc = mop_unlinkat(c->v, c->idx, dirfd(d), names->pdata[i], 0);
	if (rc == 0 && names->len)
		rc = mop_fsync(c->v, c->idx, dirfd(d), false);
	g_ptr_array_free(names, TRUE);
	MIO_CALL(closedir(d));
	return rc == -ENOENT ? 0 : rc;
}

static int change(volume *v, int idx, int (*fn)(void *), struct change *c, const char *what)
{
	int rc = volume_on_member(v, idx, fn, c);

	if (rc < 0) {
		volume_member_error(v, idx, rc, what);
		ecfs_log(LOG_WARNING, "member %d (%s): %s: %s", idx, volume_member_path(v, idx), what,
		         g_strerror(-rc));
	}
	return rc;
}

int volume_missed_record(volume *v, int idx, uint64_t seq)
{
	int written = 0;

	for (int j = 0; j < volume_n(v); j++) {
		struct change c = { v, j, idx, seq, 0 };
		if (j != idx && volume_member_ok(v, j) &&
		    change(v, j, record_run, &c, "recording a failed member") == 0)
			written++;
	}
	return written ? written : -EIO;
}

uint64_t volume_missed_healed(volume *v, int idx, uint64_t seq)
{
	uint64_t seen = 0;

	for (int j = 0; j < volume_n(v); j++) {
		struct change c = { v, j, idx, 0, 0 };
		if (j != idx && volume_member_ok(v, j) &&
		    change(v, j, remove_run, &c, "removing a healed member's records") == 0)
			seen = MAX(seen, c.seen);
	}
	/* Above every record of its failing, also those kept by members
	 * away now. */
	struct change c = { v, idx, -1, MAX(seq, seen + 1), 0 };
	if (volume_member_ok(v, idx) && change(v, idx, record_run, &c, "stamping a heal") == 0)
		change(v, idx, remove_run, &c, "removing older heal stamps");
	return c.seq;
}
