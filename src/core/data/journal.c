/* SPDX-License-Identifier: MIT */
/*
 * The overwrite journal (journal.h): its byte format and the member's
 * share of a journaled commit (its roll-forward is journal_recovery.c).
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
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <openssl/sha.h>

#include "le.h"
#include "log.h"
#include "memberops.h"
#include "volume_internal.h"
#include "volume_paths.h"

#define SUM_OFFSET (JOURNAL_HEADER_SIZE - 32)

void journal_header_encode(const journal_header *h, uint8_t out[JOURNAL_HEADER_SIZE])
{
	memset(out, 0, JOURNAL_HEADER_SIZE);
	memcpy(out, JOURNAL_MAGIC, 8);
	le_put32(out + 8, JOURNAL_VERSION);
	le_put32(out + 12, JOURNAL_HEADER_SIZE);
	memcpy(out + 16, h->volume_uuid, 16);
	memcpy(out + 32, h->file_id, 16);
	le_put32(out + 48, h->position);
	le_put32(out + 52, h->count);
	le_put64(out + 56, h->first);
	le_put64(out + 64, h->generation);
	le_put64(out + 72, h->strip_size);
	for (uint32_t i = 0; i < h->count && i < JOURNAL_MAX_STRIPES; i++)
		memcpy(out + JOURNAL_RECORDS_OFFSET + i * CHUNK_RECORD_SIZE, h->records[i],
		       CHUNK_RECORD_SIZE);
	SHA256(out, SUM_OFFSET, out + SUM_OFFSET);
}

/* Why the fields of a sealed journal header are out of range, or NULL:
 * each alone (the limits of chunk.h), and the records against the header
 * (the very records of the commit: its stripes, position, generation). */
static const char *journal_fields_why(const uint8_t in[JOURNAL_HEADER_SIZE], journal_header *h)
{
	if (le_get32(in + 12) != JOURNAL_HEADER_SIZE)
		return "journal header size not supported";
	if (h->count < 1 || h->count > JOURNAL_MAX_STRIPES || h->position >= JOURNAL_MAX_MEMBERS)
		return "journal header count or position out of range";
	if (h->first > CHUNK_STRIPE_LIMIT - h->count)
		return "journal header stripes out of range";
	if (h->generation == 0 || h->generation > CHUNK_GENERATION_MAX)
		return "journal header generation out of range";
	if (h->strip_size == 0 || h->strip_size > CHUNK_STRIP_MAX)
		return "journal header strip size out of range";
	for (uint32_t i = 0; i < h->count; i++) {
		chunk_record r;
		memcpy(h->records[i], in + JOURNAL_RECORDS_OFFSET + i * CHUNK_RECORD_SIZE,
		       CHUNK_RECORD_SIZE);
		if (chunk_record_decode(h->records[i], &r) < 0 || r.stripe != h->first + i ||
		    r.position != h->position || r.generation != h->generation)
			return "journal record does not match its header";
	}
	return NULL;
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
	if (le_get32(in + 8) != JOURNAL_VERSION) {
		*why = "unsupported journal version";
		return -EPROTO;
	}
	memset(h, 0, sizeof(*h));
	memcpy(h->volume_uuid, in + 16, 16);
	memcpy(h->file_id, in + 32, 16);
	h->position = le_get32(in + 48);
	h->count = le_get32(in + 52);
	h->first = le_get64(in + 56);
	h->generation = le_get64(in + 64);
	h->strip_size = le_get64(in + 72);
	*why = journal_fields_why(in, h);
	return *why ? -EINVAL : 0;
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

void journal_path(const uint8_t id[16], char out[JOURNAL_PATH_SIZE])
{
	memcpy(out, JOURNAL_DIR "/", sizeof(JOURNAL_DIR));
	journal_file_name(id, out + sizeof(JOURNAL_DIR));
}

/* ---- member I/O ---- */

/* The journal of file id on member mb, opened for writing (created, with
 * its directory, the first time: the new names are synced, so a journal
 * that was synced is found again after a power cut). */
static int journal_fd(volume *v, journal_files *jf, int mb, const uint8_t id[16])
{
	char name[JOURNAL_PATH_SIZE];

	if (jf->open >> mb & 1)
		return jf->fd[mb];
	journal_path(id, name);
	int fd = volume_meta_open_made(v, mb, volume_root_fd(v, mb), JOURNAL_DIR, name);
	if (fd < 0)
		return fd;
	jf->fd[mb] = fd;
	jf->open |= 1ull << mb;
	return fd;
}

bool journal_member_none(volume *v, int mb)
{
	return volume_meta_dir_none(v, mb, JOURNAL_DIR, -1);
}

void journal_census(volume *v)
{
	for (int mb = 0; mb < volume_n(v); mb++)
		if (volume_member_ok(v, mb) && !journal_member_none(v, mb))
			return;
	volume_set_journals_none(v, true);
}

int journal_write_member(volume *v, journal_files *jf, int mb, const journal_header *h,
                         const uint8_t *const *strips)
{
	uint8_t hdr[JOURNAL_HEADER_SIZE];
	struct iovec iov[1 + JOURNAL_MAX_STRIPES];

	volume_set_journals_none(v, false); /* before the file can exist */
	int fd = journal_fd(v, jf, mb, h->file_id);

	if (fd < 0)
		return fd;
	journal_header_encode(h, hdr);
	iov[0] = (struct iovec){ hdr, sizeof(hdr) };
	for (uint32_t i = 0; i < h->count; i++)
		iov[1 + i] = (struct iovec){ (void *)strips[i], h->strip_size };
	/* One write: header and strips; a torn one leaves strips that do not
	 * verify against the header's records (or a header that does not). */
	ssize_t r = mop_transfer(v, mb, fd, iov, 1 + (int)h->count, 0, true);
	if (r < 0)
		return (int)r;
	return mop_fsync(v, mb, fd, true);
}

void journal_close(volume *v, journal_files *jf)
{
	for (int mb = 0; mb < JOURNAL_MAX_MEMBERS; mb++)
		if (jf->open >> mb & 1)
			volume_member_close(v, mb, jf->fd[mb]);
	jf->open = 0;
}

void journal_remove(volume *v, journal_files *jf, const uint8_t id[16], uint64_t members,
                    const char *path)
{
	char name[JOURNAL_PATH_SIZE];

	journal_close(v, jf);
	journal_path(id, name);
	for (int mb = 0; mb < JOURNAL_MAX_MEMBERS; mb++) {
		int rc = members >> mb & 1 ? volume_meta_unlinkat(v, mb, volume_root_fd(v, mb), name, 0)
		                           : 0;
		if (rc < 0 && rc != -ENOENT)
			ecfs_log(LOG_WARNING, "%s: cannot remove the journal on member %d: %s", path,
			         mb, g_strerror(-rc));
	}
}
