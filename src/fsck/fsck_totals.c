/* SPDX-License-Identifier: MIT */
/*
 * The totals the progress line measures against (fsck_count_totals,
 * fsck.h): the regular files and their bytes, counted on m + 1 members.
 */
#include "fsck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "chunk.h"
#include "memberio.h"
#include "volume_internal.h"

/* One directory of a member, counted on its worker: its regular files
 * and their data (a chunk holds 1/k of its file's strips; headers of
 * either version taken for the short one: an estimate), and the names of
 * its subdirectories, walked by the caller.  A task per directory, so
 * the member's other tasks (the daemon's reads, in the heal) go between. */
typedef struct tally {
	int dfd;
	const char *name;
	bool root;       /* the member root: its reserved names are left out */
	int fd;          /* the directory, open for its subdirectories */
	GPtrArray *dirs; /* their names */
	uint64_t files, bytes;
} tally;

static int tally_run(void *arg)
{
	tally *t = arg;
	int fd = MIO_CALL(openat(t->dfd, t->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	int lfd = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the listing's own */
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	uint64_t files = 0, bytes = 0;
	struct dirent *de;

	if (!d) {
		int err = errno;
		if (lfd >= 0)
			close(lfd); /* a dup: no member call */
		if (fd >= 0)
			MIO_CALL(close(fd));
		return -err;
	}
	GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
	while ((de = MIO_CALL(readdir(d)))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (t->root && volume_root_name_reserved(de->d_name)))
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		if (de->d_type != DT_DIR &&
		    MIO_CALL(fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW)) < 0)
			continue;
		if (de->d_type == DT_DIR || S_ISDIR(st.st_mode)) {
			g_ptr_array_add(dirs, g_strdup(de->d_name));
		} else if (S_ISREG(st.st_mode)) {
			files++;
			if (st.st_size > CHUNK_HEADER_SIZE_V2)
				bytes += (uint64_t)st.st_size - CHUNK_HEADER_SIZE_V2;
		}
	}
	MIO_CALL(closedir(d));
	t->fd = fd;
	t->dirs = dirs;
	t->files = files;
	t->bytes = bytes;
	return 0;
}

static void count_tree(fsck *f, int mb, int dfd, const char *name, int depth, uint64_t *files,
                       uint64_t *bytes)
{
	tally t = { dfd, name, depth == 0, -1, NULL, 0, 0 };

	if (fsck_on_member(f, mb, tally_run, &t) < 0)
		return;
	*files += t.files;
	*bytes += t.bytes;
	for (guint i = 0; i < t.dirs->len && depth < 256 && !fsck_gone(f, mb); i++)
		count_tree(f, mb, t.fd, t.dirs->pdata[i], depth + 1, files, bytes);
	g_ptr_array_unref(t.dirs);
	fsck_close(f, mb, t.fd);
}

void fsck_count_totals(fsck *f)
{
	uint64_t voters = f->walk_mask & ~f->heal_mask;

	/* m + 1 members: at least one of them was not just emptied. */
	for (int mb = 0, seen = 0; mb < f->n && seen <= f->m; mb++)
		if (voters >> mb & 1) {
			uint64_t files = 0, bytes = 0;
			count_tree(f, mb, volume_root_fd(f->v, mb), ".", 0, &files, &bytes);
			if (fsck_gone(f, mb))
				continue;
			f->total_files = MAX(f->total_files, files);
			f->total_bytes = MAX(f->total_bytes, bytes * (uint64_t)f->k);
			seen++;
		}
}

