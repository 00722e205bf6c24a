/* SPDX-License-Identifier: MIT */
/*
 * Small state files of the daemon kept in every member's .ecfs/ (the
 * online scrub's .ecfs/scrub): written whole to NAME.tmp, synced and
 * renamed over NAME, so a crash leaves the old copy or the new one; read
 * back from the members in service, the copy most of them hold winning.
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

/* A state file is at most this large: the reader refuses a larger one. */
#define METAFILE_MAX (64u << 20)

struct metafile_run {
	volume *v;
	int mb;
	const char *name;
	const char *bytes; /* to write */
	size_t len;
	char *read; /* what was read (g_free) */
};

static int write_run(void *arg)
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
		                          : mop_fsync(r->v, r->mb, fd, false);
		MIO_CALL(close(fd));
	}
	if (rc == 0)
		rc = mop_renameat2(r->v, r->mb, meta, tmp, meta, r->name, 0);
	if (rc == 0)
		rc = mop_fsync(r->v, r->mb, meta, false);
	g_free(tmp);
	return rc;
}

int volume_metafile_write(volume *v, const char *name, const char *text)
{
	int took = 0;

	for (int mb = 0; mb < volume_n(v); mb++) {
		if (!volume_member_ok(v, mb))
			continue;
		struct metafile_run r = { v, mb, name, text, strlen(text), NULL };
		int rc = volume_on_member(v, mb, write_run, &r);
		if (rc < 0)
			ecfs_log(LOG_WARNING, "member %d: .ecfs/%s not written: %s", mb, name,
			         g_strerror(-rc));
		else
			took++;
	}
	return took;
}

/* Reads the file into a buffer of its own, handed over only once the
 * calls returned (volume_on_member). */
static int read_run(void *arg)
{
	struct metafile_run *r = arg;
	int fd = mop_openat(r->v, r->mb, volume_meta_fd(r->v, r->mb), r->name,
	                    O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	struct stat st;
	char *buf = NULL;
	int rc = MIO_CALL(fstat(fd, &st)) < 0 ? -errno : 0;
	if (rc == 0 && (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > METAFILE_MAX))
		rc = -EINVAL;
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

char *volume_metafile_read(volume *v, const char *name)
{
	char *copy[64] = { NULL };
	int votes[64] = { 0 }, best = -1;

	for (int mb = 0; mb < volume_n(v) && mb < 64; mb++) {
		if (!volume_member_ok(v, mb))
			continue;
		struct metafile_run r = { v, mb, name, NULL, 0, NULL };
		if (volume_on_member(v, mb, read_run, &r) < 0 || strlen(r.read) != r.len) {
			g_free(r.read); /* absent, unreadable or not text: no vote */
			continue;
		}
		copy[mb] = r.read;
		for (int j = 0; j <= mb; j++)
			if (copy[j] && !strcmp(copy[j], r.read)) {
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
