/* SPDX-License-Identifier: MIT */
/*
 * The overwrite journal (journal.h): its byte format, the member's share
 * of a journaled commit, and roll-forward recovery.
 *
 * A journal file holds one commit: a 4 KiB header (identity, the stripes,
 * the generation, the strip records, a SHA-256 of it all) followed by the
 * strips.  The records are the very records the commit writes in place,
 * so a journal strip is verified exactly like an in-place one (its
 * checksum binds volume, file, stripe, position and generation).  The
 * file is overwritten by the next journaled commit, which stripe_commit()
 * allows only after the in-place writes of this one are synced.
 */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <openssl/sha.h>

#include "log.h"
#include "memberops.h"
#include "volume_internal.h"

#define SUM_OFFSET (JOURNAL_HEADER_SIZE - 32)

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

void journal_header_encode(const journal_header *h, uint8_t out[JOURNAL_HEADER_SIZE])
{
	memset(out, 0, JOURNAL_HEADER_SIZE);
	memcpy(out, JOURNAL_MAGIC, 8);
	put32(out + 8, JOURNAL_VERSION);
	put32(out + 12, JOURNAL_HEADER_SIZE);
	memcpy(out + 16, h->volume_uuid, 16);
	memcpy(out + 32, h->file_id, 16);
	put32(out + 48, h->position);
	put32(out + 52, h->count);
	put64(out + 56, h->first);
	put64(out + 64, h->generation);
	put64(out + 72, h->strip_size);
	for (uint32_t i = 0; i < h->count && i < JOURNAL_MAX_STRIPES; i++)
		memcpy(out + JOURNAL_RECORDS_OFFSET + i * CHUNK_RECORD_SIZE, h->records[i],
		       CHUNK_RECORD_SIZE);
	SHA256(out, SUM_OFFSET, out + SUM_OFFSET);
}

int journal_header_decode(const uint8_t in[JOURNAL_HEADER_SIZE], journal_header *h,
                          const char **why)
{
	uint8_t sum[32];
	const char *dummy;

	if (!why)
		why = &dummy;
	if (memcmp(in, JOURNAL_MAGIC, 8) != 0) {
		*why = "not an ecfs journal (bad magic)";
		return -EINVAL;
	}
	SHA256(in, SUM_OFFSET, sum);
	if (memcmp(sum, in + SUM_OFFSET, 32) != 0) {
		*why = "journal header checksum mismatch";
		return -EINVAL;
	}
	if (get32(in + 8) != JOURNAL_VERSION) {
		*why = "unsupported journal version";
		return -EPROTO;
	}
	memset(h, 0, sizeof(*h));
	memcpy(h->volume_uuid, in + 16, 16);
	memcpy(h->file_id, in + 32, 16);
	h->position = get32(in + 48);
	h->count = get32(in + 52);
	h->first = get64(in + 56);
	h->generation = get64(in + 64);
	h->strip_size = get64(in + 72);
	if (get32(in + 12) != JOURNAL_HEADER_SIZE || h->count < 1 ||
	    h->count > JOURNAL_MAX_STRIPES || h->position >= 64 || h->strip_size == 0 ||
	    h->generation == 0) {
		*why = "journal header fields out of range";
		return -EINVAL;
	}
	for (uint32_t i = 0; i < h->count; i++)
		memcpy(h->records[i], in + JOURNAL_RECORDS_OFFSET + i * CHUNK_RECORD_SIZE,
		       CHUNK_RECORD_SIZE);
	return 0;
}

void journal_file_name(const uint8_t id[16], char out[33])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[32] = 0;
}

/* ---- member I/O ---- */

/* fsync of a directory beneath member mb's root. */
static int sync_dir(volume *v, int mb, const char *dir)
{
	int fd = mop_openat(v, mb, volume_root_fd(v, mb), dir,
	                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int rc = mop_fsync(v, mb, fd, false) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* The journal of the file on member mb, opened for writing (created, with
 * its directory, the first time: the new names are synced, so a journal
 * that was synced is found again after a power cut). */
static int journal_fd(stripe_ctx *c, int mb)
{
	volume *v = c->v;
	int root = volume_root_fd(v, mb);
	char name[sizeof(JOURNAL_DIR) + 40];
	int fd;

	if (c->jopen >> mb & 1)
		return c->jfd[mb];
	memcpy(name, JOURNAL_DIR "/", sizeof(JOURNAL_DIR));
	journal_file_name(c->hdr.file_id, name + sizeof(JOURNAL_DIR));
	fd = mop_openat(v, mb, root, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0 && errno == ENOENT) {
		if (mop_mkdirat(v, mb, root, JOURNAL_DIR, 0700) == 0) {
			int rc = sync_dir(v, mb, ECFS_META_DIR);
			if (rc < 0)
				return rc;
		} else if (errno != EEXIST) {
			return -errno;
		}
		fd = mop_openat(v, mb, root, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		int rc = sync_dir(v, mb, JOURNAL_DIR);
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	if (fd < 0)
		return -errno;
	c->jfd[mb] = fd;
	c->jopen |= 1ull << mb;
	return fd;
}

int journal_write_member(stripe_ctx *c, int mb, const journal_header *h,
                         const uint8_t *const *strips)
{
	uint8_t hdr[JOURNAL_HEADER_SIZE];
	struct iovec iov[1 + JOURNAL_MAX_STRIPES];
	int fd = journal_fd(c, mb);

	if (fd < 0)
		return fd;
	journal_header_encode(h, hdr);
	iov[0] = (struct iovec){ hdr, sizeof(hdr) };
	for (uint32_t i = 0; i < h->count; i++)
		iov[1 + i] = (struct iovec){ (void *)strips[i], h->strip_size };
	/* One write: header and strips; a torn one leaves strips that do not
	 * verify against the header's records (or a header that does not). */
	ssize_t r = mop_transfer(c->v, mb, fd, iov, 1 + (int)h->count, 0, true);
	if (r < 0)
		return (int)r;
	return mop_fsync(c->v, mb, fd, true) < 0 ? -errno : 0;
}

void journal_close(stripe_ctx *c)
{
	for (int mb = 0; mb < STRIPE_MAX_N; mb++)
		if (c->jopen >> mb & 1)
			volume_member_close(c->v, mb, c->jfd[mb]);
	c->jopen = 0;
}

void journal_remove(stripe_ctx *c)
{
	char name[sizeof(JOURNAL_DIR) + 40];

	journal_close(c);
	memcpy(name, JOURNAL_DIR "/", sizeof(JOURNAL_DIR));
	journal_file_name(c->hdr.file_id, name + sizeof(JOURNAL_DIR));
	for (int mb = 0; mb < c->lay.n; mb++)
		if (stripe_member_usable(c, mb) &&
		    mop_unlinkat(c->v, mb, volume_root_fd(c->v, mb), name, 0) < 0 && errno != ENOENT)
			ecfs_log(LOG_WARNING, "%s: cannot remove the journal on member %d: %s", c->path,
			         mb, g_strerror(errno));
}

/* ---- recovery ---- */

typedef struct jmember {
	int fd;
	bool valid;
	journal_header h;
} jmember;

/* Opens and reads the journal headers of the file; true if any member has
 * a journal file at all. */
static bool read_journals(stripe_ctx *c, jmember *jm)
{
	char name[sizeof(JOURNAL_DIR) + 40];
	bool any = false;

	memcpy(name, JOURNAL_DIR "/", sizeof(JOURNAL_DIR));
	journal_file_name(c->hdr.file_id, name + sizeof(JOURNAL_DIR));
	for (int mb = 0; mb < c->lay.n; mb++) {
		uint8_t buf[JOURNAL_HEADER_SIZE];
		const char *why = NULL;
		jm[mb] = (jmember){ .fd = -1 };
		if (!stripe_member_usable(c, mb))
			continue;
		jm[mb].fd = mop_openat(c->v, mb, volume_root_fd(c->v, mb), name,
		                       O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
		if (jm[mb].fd < 0) {
			if (errno != ENOENT)
				ecfs_log(LOG_WARNING, "%s: cannot open the journal on member %d: %s",
				         c->path, mb, g_strerror(errno));
			continue;
		}
		any = true;
		struct iovec iov = { buf, sizeof(buf) };
		ssize_t r = mop_transfer(c->v, mb, jm[mb].fd, &iov, 1, 0, false);
		if (r != (ssize_t)sizeof(buf) || journal_header_decode(buf, &jm[mb].h, &why) < 0)
			continue; /* torn or empty: this member's copy does not count */
		const journal_header *h = &jm[mb].h;
		jm[mb].valid = !memcmp(h->volume_uuid, c->hdr.volume_uuid, 16) &&
		               !memcmp(h->file_id, c->hdr.file_id, 16) &&
		               h->position == (uint32_t)layout_position_of(&c->lay, mb) &&
		               h->strip_size == c->lay.strip_size;
	}
	return any;
}

/* Reads journal strip s of generation g from every member whose journal
 * holds it into bufs (by position); returns the mask of positions whose
 * strip verifies, and the logical size its record carries in *size. */
static uint64_t journal_strips(stripe_ctx *c, const jmember *jm, uint64_t s, uint64_t g,
                               uint8_t *bufs, uint64_t *size)
{
	uint64_t strip = c->lay.strip_size, ok = 0;

	for (int mb = 0; mb < c->lay.n; mb++) {
		const journal_header *h = &jm[mb].h;
		if (!jm[mb].valid || h->generation != g || s < h->first || s - h->first >= h->count)
			continue;
		uint64_t i = s - h->first;
		int pos = (int)h->position;
		uint8_t *dst = bufs + (size_t)pos * strip;
		struct iovec iov = { dst, strip };
		if (mop_transfer(c->v, mb, jm[mb].fd, &iov, 1,
		              (off_t)(JOURNAL_HEADER_SIZE + i * strip), false) != (ssize_t)strip)
			continue;
		chunk_header ch = c->hdr;
		chunk_record r;
		ch.position = (uint32_t)pos;
		chunk_record_decode(h->records[i], &r);
		if (r.generation == g &&
		    chunk_strip_verify(c->sum, &ch, &r, s, (uint32_t)pos, dst, strip)) {
			ok |= 1ull << pos;
			*size = r.size;
		}
	}
	return ok;
}

/* Does the in-place stripe need rolling forward to journaled generation
 * g?  Not if every usable strip already verifies at g, nor if a record
 * names a newer generation (a later commit superseded the journal), nor
 * if every record is blank (nothing was ever committed there in place:
 * the journal is older than a truncate, or the commit wrote no record
 * before the crash, and the stripe reads as zeros, its old content). */
static bool needs_roll_forward(const strip_probe *p, int n, uint64_t g)
{
	bool all_g = true, all_blank = true;

	for (int j = 0; j < n; j++) {
		if (!p[j].read)
			continue;
		if (p[j].gen > g)
			return false;
		all_g &= p[j].verified && p[j].gen == g;
		all_blank &= p[j].blank;
	}
	return !all_g && !all_blank;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int journal_recover(stripe_ctx *c, bool write, uint64_t *stripes)
{
	int n = c->lay.n, k = c->lay.k, rc = 0;
	uint64_t strip = c->lay.strip_size;
	jmember jm[STRIPE_MAX_N];
	/* (stripe, generation) pairs named by any member's journal. */
	uint64_t cand[STRIPE_MAX_N * JOURNAL_MAX_STRIPES][2];
	int ncand = 0;
	uint8_t *jbuf = NULL, *pbuf = NULL;
	bool own_buffers = !c->parity;

	*stripes = 0;
	if (!read_journals(c, jm))
		return 0;
	for (int mb = 0; mb < n; mb++)
		for (uint32_t i = 0; jm[mb].valid && i < jm[mb].h.count; i++) {
			uint64_t s = jm[mb].h.first + i, g = jm[mb].h.generation;
			bool seen = false;
			for (int q = 0; q < ncand && !seen; q++)
				seen = cand[q][0] == s && cand[q][1] == g;
			if (!seen) {
				cand[ncand][0] = s;
				cand[ncand++][1] = g;
			}
		}
	qsort(cand, (size_t)ncand, sizeof(cand[0]), cmp_u64);
	if (posix_memalign((void **)&jbuf, 4096, strip * (size_t)n) ||
	    posix_memalign((void **)&pbuf, 4096, strip * (size_t)n) ||
	    (own_buffers && stripe_ctx_buffers(c) < 0)) {
		rc = -ENOMEM;
		goto out;
	}
	for (int q = 0; q < ncand; q++) {
		uint64_t s = cand[q][0], g = cand[q][1], size = 0;
		uint64_t ok = journal_strips(c, jm, s, g, jbuf, &size);
		strip_probe p[STRIPE_MAX_N];
		int erased[STRIPE_MAX_N], ne = 0;
		uint8_t *blocks[STRIPE_MAX_N];
		/* Fewer than k copies: the barrier was never passed, so nothing
		 * of this commit reached the strips in place. */
		if (__builtin_popcountll(ok) < k)
			continue;
		if (stripe_probe(c, s, pbuf, p) < 0 || !needs_roll_forward(p, n, g))
			continue;
		++*stripes;
		if (!write)
			continue;
		for (int j = 0; j < n; j++) {
			blocks[j] = jbuf + (size_t)j * strip;
			if (!(ok >> j & 1))
				erased[ne++] = j;
		}
		const uint8_t *data[STRIPE_MAX_N];
		for (int j = 0; j < k; j++)
			data[j] = blocks[j];
		if ((ne && ec_decode(c->code, blocks, erased, ne, strip) < 0) ||
		    stripe_commit_inplace(c, s, 1, data, g, size) < 0) {
			ecfs_log(LOG_ERR, "%s: stripe %llu: cannot roll the journal forward",
			         c->path, (unsigned long long)s);
			rc = -EIO;
			continue;
		}
		ecfs_log(LOG_NOTICE, "%s: stripe %llu: an overwrite cut short by a crash was "
		         "completed from the journal (generation %llu)", c->path,
		         (unsigned long long)s, (unsigned long long)g);
	}
	if (write && rc == 0 && *stripes)
		rc = stripe_sync(c, true);
out:
	for (int mb = 0; mb < n; mb++)
		if (jm[mb].fd >= 0)
			close(jm[mb].fd);
	/* The strips are durable in place: the journals have done their job. */
	if (write && rc == 0)
		journal_remove(c);
	free(jbuf);
	free(pbuf);
	if (own_buffers)
		stripe_ctx_free_buffers(c);
	return rc;
}
