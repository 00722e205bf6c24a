/* SPDX-License-Identifier: MIT */
/*
 * Reading back the small-write log (smalllog_replay.h): each usable
 * member's copy of .ecfs/log/<id> read whole on its worker, the copies
 * merged by epoch and sequence number.
 */
#include "smalllog_replay.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "journal.h"
#include "log.h"
#include "memberops.h"
#include "volume_internal.h"
#include "volume_paths.h"

/* A copy larger than this is read this far (the writer applies its log
 * long before). */
#define COPY_READ_MAX (UINT64_C(1) << 30)

void smalllog_path(const uint8_t id[16], char out[SMALLLOG_PATH_SIZE])
{
	memcpy(out, SMALLLOG_DIR "/", sizeof(SMALLLOG_DIR));
	journal_file_name(id, out + sizeof(SMALLLOG_DIR));
}

typedef struct copy_read {
	stripe_ctx *c;
	int mb;
	const char *name;
	size_t max;   /* bytes to read at most */
	uint8_t *buf;
	size_t len;
} copy_read;

/* Member mb's copy, read on its worker (its first r->max bytes): 1 if
 * there is one. */
static int read_copy(void *arg)
{
	copy_read *r = arg;
	volume *v = r->c->v;
	struct stat st;
	int fd = volume_meta_open(v, r->mb, volume_root_fd(v, r->mb), r->name,
	                          O_RDONLY | O_CLOEXEC, 0);

	if (fd < 0) {
		if (fd != -ENOENT)
			ecfs_log(LOG_WARNING, "%s: cannot open the small-write log on member %d: %s",
			         r->c->path, r->mb, g_strerror(-fd));
		return 0;
	}
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)SMALLLOG_HEADER_SIZE) {
		volume_member_close(v, r->mb, fd);
		return 0;
	}
	size_t len = (uint64_t)st.st_size > r->max ? r->max : (size_t)st.st_size;
	uint8_t *buf = g_try_malloc(len);
	struct iovec iov = { buf, len };
	ssize_t got = buf ? mop_transfer(v, r->mb, fd, &iov, 1, 0, false) : -ENOMEM;
	volume_member_close(v, r->mb, fd);
	if (got < (ssize_t)SMALLLOG_HEADER_SIZE) {
		g_free(buf);
		return 0;
	}
	r->buf = buf;
	r->len = (size_t)got;
	return 1;
}

typedef struct merge {
	GHashTable *by_seq; /* seq -> index in recs */
	GArray *recs, *data;
} merge;

static void visit(void *ctx, const smalllog_record *r, const uint8_t *data)
{
	merge *m = ctx;

	if (g_hash_table_contains(m->by_seq, &r->seq))
		return; /* one verified copy of it is enough */
	g_array_append_val(m->recs, *r);
	g_array_append_val(m->data, data);
	g_hash_table_insert(m->by_seq, g_memdup2(&r->seq, sizeof(r->seq)),
	                    GUINT_TO_POINTER(m->recs->len));
}

/* The records of the copies of epoch found->epoch, 1..count in order.
 * The copies are read whole one at a time, and one that adds no record
 * to those before it is let go: a replay holds the copies it takes
 * records from (one, unless appends were torn), not all m+1. */
static void merge_copies(stripe_ctx *c, smalllog_found *found, copy_read *r)
{
	smalllog_header want = { 0 };
	merge m = { g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL),
	            g_array_new(FALSE, FALSE, sizeof(smalllog_record)),
	            g_array_new(FALSE, FALSE, sizeof(const uint8_t *)) };

	memcpy(want.volume_uuid, c->hdr.volume_uuid, 16);
	memcpy(want.file_id, c->hdr.file_id, 16);
	for (int mb = 0; mb < c->lay.n; mb++) {
		void *args[STRIPE_MAX_N];
		int rcs[STRIPE_MAX_N] = { 0 };
		if (!(found->holders >> mb & 1))
			continue;
		r[mb].max = COPY_READ_MAX;
		args[mb] = &r[mb];
		volume_on_members(c->v, 1ull << mb, read_copy, args, rcs);
		if (rcs[mb] == -ETIMEDOUT)
			found->lost |= 1ull << mb;
		if (rcs[mb] != 1)
			continue;
		guint before = m.recs->len;
		smalllog_scan(c->sum, &want, r[mb].buf, r[mb].len, visit, &m, NULL, NULL);
		if (m.recs->len > before)
			found->copy[mb] = r[mb].buf;
		else
			g_free(r[mb].buf);
	}
	found->recs = g_new(smalllog_record, m.recs->len + 1);
	found->data = g_new(const uint8_t *, m.recs->len + 1);
	for (uint64_t seq = 1;; seq++) {
		guint at = GPOINTER_TO_UINT(g_hash_table_lookup(m.by_seq, &seq));
		if (!at)
			break;
		found->recs[found->count] = g_array_index(m.recs, smalllog_record, at - 1);
		found->data[found->count++] = g_array_index(m.data, const uint8_t *, at - 1);
	}
	g_hash_table_destroy(m.by_seq);
	g_array_free(m.recs, TRUE);
	g_array_free(m.data, TRUE);
}

int smalllog_collect(stripe_ctx *c, smalllog_found *found)
{
	char name[SMALLLOG_PATH_SIZE];
	copy_read r[STRIPE_MAX_N];
	void *args[STRIPE_MAX_N];
	int rcs[STRIPE_MAX_N] = { 0 };
	uint64_t mask = 0;
	int n = c->lay.n;

	memset(found, 0, sizeof(*found));
	if (volume_journals_none(c->v))
		return 0;
	smalllog_path(c->hdr.file_id, name);
	for (int mb = 0; mb < n; mb++) {
		r[mb] = (copy_read){ .c = c, .mb = mb, .name = name, .max = SMALLLOG_HEADER_SIZE };
		args[mb] = &r[mb];
		if (stripe_member_usable(c, mb))
			mask |= 1ull << mb;
	}
	volume_on_members(c->v, mask, read_copy, args, rcs);
	/* The newest epoch among the copies whose header counts (their
	 * headers read first): a copy of an older one was retired (its
	 * records applied) or is stale. */
	for (int mb = 0; mb < n; mb++) {
		smalllog_header h;
		if (rcs[mb] == -ETIMEDOUT) {
			found->lost |= 1ull << mb;
			continue;
		}
		if (rcs[mb] != 1)
			continue;
		bool ours = smalllog_header_decode(r[mb].buf, &h, NULL) == 0 &&
		            memcmp(h.volume_uuid, c->hdr.volume_uuid, 16) == 0 &&
		            memcmp(h.file_id, c->hdr.file_id, 16) == 0;
		g_free(r[mb].buf);
		if (!ours)
			continue;
		if (h.epoch > found->epoch) {
			found->epoch = h.epoch;
			found->holders = 0;
		}
		if (h.epoch == found->epoch)
			found->holders |= 1ull << mb;
	}
	if (found->holders)
		merge_copies(c, found, r);
	return 0;
}

void smalllog_found_free(smalllog_found *found)
{
	for (int mb = 0; mb < STRIPE_MAX_N; mb++)
		g_free(found->copy[mb]);
	g_free(found->recs);
	g_free(found->data);
	memset(found, 0, sizeof(*found));
}

bool smalllog_member_none(volume *v, int mb)
{
	return volume_meta_dir_none(v, mb, SMALLLOG_DIR, SMALLLOG_HEADER_SIZE);
}

void smalllog_census(volume *v)
{
	for (int mb = 0; mb < volume_n(v); mb++)
		if (volume_member_ok(v, mb) && !smalllog_member_none(v, mb))
			volume_set_journals_none(v, false);
}

int smalllog_remove_copy(volume *v, int mb, const uint8_t id[16])
{
	char name[SMALLLOG_PATH_SIZE];

	smalllog_path(id, name);
	int rc = volume_meta_unlinkat(v, mb, volume_root_fd(v, mb), name, 0);
	return rc == -ENOENT ? 0 : rc;
}
