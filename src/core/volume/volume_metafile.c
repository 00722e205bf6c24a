/* SPDX-License-Identifier: MIT */
/*
 * Files of the daemon's own in a member's .ecfs/ (saved listings, the
 * online scrub's state): written whole to NAME.tmp and renamed over NAME,
 * so a crash leaves the old copy or the new one, and read whole.  The
 * scrub's, a text, is synced and kept on every member in service, and
 * read back as the copy most of them hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "volume_internal.h"

/* The daemon's state file is at most this large: the reader refuses a
 * larger one. */
#define METAFILE_MAX (64u << 20)

struct metafile_run {
	volume *v;
	int mb;
	const char *name;
	const void *bytes; /* to write */
	size_t len, max;
	bool sync;
	uint8_t *read; /* what was read (g_free) */
};

static int put_run(void *arg)
{
	struct metafile_run *r = arg;
	int meta = volume_meta_fd(r->v, r->mb);
	char *tmp = g_strconcat(r->name, ".tmp", NULL);
	int fd = mop_openat(r->v, r->mb, meta, tmp,
	                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int rc = fd < 0 ? fd : 0;

	if (fd >= 0) {
		ssize_t w = mop_pwrite(r->v, r->mb, fd, r->bytes, r->len, 0);
		rc = w != (ssize_t)r->len ? (w < 0 ? (int)w : -EIO)
		     : r->sync ? mop_fsync(r->v, r->mb, fd, false) : 0;
		MIO_CALL(close(fd));
	}
	if (rc == 0)
		rc = mop_renameat2(r->v, r->mb, meta, tmp, meta, r->name, 0);
	if (rc == 0 && r->sync)
		rc = mop_fsync(r->v, r->mb, meta, false);
	g_free(tmp);
	return rc;
}

int volume_metafile_put(volume *v, int mb, const char *name, const void *bytes, size_t len,
                        bool sync)
{
	struct metafile_run r = { .v = v, .mb = mb, .name = name, .bytes = bytes, .len = len,
	                          .sync = sync };
	return volume_on_member(v, mb, put_run, &r);
}

/* Reads the file into a buffer of its own, handed over only once the
 * call returned (volume_on_member). */
static int get_run(void *arg)
{
	struct metafile_run *r = arg;
	struct stat st;
	/* most volumes have no such file: a look costs less than an open */
	if (MIO_CALL(fstatat(volume_meta_fd(r->v, r->mb), r->name, &st, AT_SYMLINK_NOFOLLOW)) < 0)
		return -errno;
	int fd = mop_openat(r->v, r->mb, volume_meta_fd(r->v, r->mb), r->name,
	                    O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	uint8_t *buf = NULL;
	int rc = MIO_CALL(fstat(fd, &st)) < 0 ? -errno : 0;
	if (rc == 0 && !S_ISREG(st.st_mode))
		rc = -EINVAL;
	else if (rc == 0 && (uint64_t)st.st_size > r->max)
		rc = -EFBIG;
	if (rc == 0) {
		buf = g_malloc((size_t)st.st_size + 1);
		ssize_t got = mop_pread(r->v, r->mb, fd, buf, (size_t)st.st_size, 0);
		if (got != (ssize_t)st.st_size)
			rc = got < 0 ? (int)got : -EIO;
		else
			buf[got] = '\0';
	}
	MIO_CALL(close(fd));
	if (rc < 0) {
		g_free(buf);
		return rc;
	}
	r->read = buf;
	r->len = (size_t)st.st_size;
	return 0;
}

int volume_metafile_get(volume *v, int mb, const char *name, size_t max, uint8_t **out,
                        size_t *len)
{
	struct metafile_run r = { .v = v, .mb = mb, .name = name, .max = max };
	int rc = volume_on_member(v, mb, get_run, &r);

	*out = rc == 0 ? r.read : NULL;
	*len = rc == 0 ? r.len : 0;
	return rc;
}

int volume_metafile_write(volume *v, const char *name, const char *text)
{
	int took = 0;

	for (int mb = 0; mb < volume_n(v); mb++) {
		if (!volume_member_ok(v, mb))
			continue;
		int rc = volume_metafile_put(v, mb, name, text, strlen(text), true);
		if (rc < 0)
			ecfs_log(LOG_WARNING, "member %d: .ecfs/%s not written: %s", mb, name,
			         g_strerror(-rc));
		else
			took++;
	}
	return took;
}

char *volume_metafile_read(volume *v, const char *name)
{
	char *copy[64] = { NULL };
	int votes[64] = { 0 }, best = -1;

	for (int mb = 0; mb < volume_n(v) && mb < 64; mb++) {
		uint8_t *text;
		size_t len;
		if (!volume_member_ok(v, mb) ||
		    volume_metafile_get(v, mb, name, METAFILE_MAX, &text, &len) < 0)
			continue;
		if (strlen((char *)text) != len) { /* not text: no vote */
			g_free(text);
			continue;
		}
		copy[mb] = (char *)text;
		for (int j = 0; j <= mb; j++)
			if (copy[j] && !strcmp(copy[j], copy[mb])) {
				votes[j]++;
				if (best < 0 || votes[j] > votes[best])
					best = j;
				break;
			}
	}
	char *out = best >= 0 ? g_strdup(copy[best]) : NULL;
	for (int mb = 0; mb < 64; mb++)
		g_free(copy[mb]);
	return out;
}
