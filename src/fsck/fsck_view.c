/* SPDX-License-Identifier: MIT */
/*
 * A member's view of one namespace entry and a member's directory
 * listing (fsck_view.h), read with *at() calls only and no symlink
 * followed, as the member workers run them; the views of a directory's
 * entries, a block at a time.
 */
#include "fsck_view.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fsck.h"
#include "memberio.h"
#include "memberops.h"

void fsck_view_clear(view *w)
{
	g_free(w->target);
	xattrs_stored_clear(&w->xs);
	if (w->xblob)
		g_string_free(w->xblob, TRUE);
	if (w->ablob)
		g_string_free(w->ablob, TRUE);
	memset(w, 0, sizeof(*w));
}

bool fsck_not_acl(const char *name)
{
	return !xattrs_is_acl(name);
}

/* The canonical form of the xattrs `which` selects, for comparing; NULL
 * if some could not be read (no vote on them). */
static GString *xattr_blob(const xattrs_stored *xs, bool (*which)(const char *name))
{
	if (!xs->complete)
		return NULL;
	GString *b = g_string_new(NULL);
	for (guint i = 0; i < xs->names->len; i++) {
		const char *xn = xs->names->pdata[i];
		if (!which(xn))
			continue;
		gsize vl;
		const char *val = g_bytes_get_data(xs->values->pdata[i], &vl);
		g_string_append_printf(b, "%s=%zu:", xn, (size_t)vl);
		g_string_append_len(b, val ? val : "", (gssize)vl);
		g_string_append_c(b, '\n');
	}
	return b;
}

/* listxattrat(2), Linux 6.13, where the C library does not name it yet:
 * one number on the architectures that share the generic table. */
#if !defined(SYS_listxattrat) && (defined(__aarch64__) || (defined(__x86_64__) && !defined(__ILP32__)))
#define SYS_listxattrat 465
#endif

/* False if (dfd, name) surely holds no xattr: asked with listxattrat, in
 * one call and no descriptor opened (most entries hold none).  True if
 * it does, or the call failed or is not there (the full read says). */
static bool may_have_xattrs(int dfd, const char *name)
{
#ifdef SYS_listxattrat
	static int absent; /* no listxattrat: an older kernel, or a seccomp filter's EPERM */

	if (__atomic_load_n(&absent, __ATOMIC_RELAXED))
		return true;
	long r = MIO_CALL(syscall(SYS_listxattrat, dfd, name, AT_SYMLINK_NOFOLLOW, NULL, 0));
	if (r < 0 && (errno == ENOSYS || errno == EPERM))
		__atomic_store_n(&absent, 1, __ATOMIC_RELAXED);
	return r != 0;
#else
	(void)dfd;
	(void)name;
	return true;
#endif
}

/* The xattrs of (dfd, name), as the daemon reaches them (xattrs.h), so
 * nothing is resolved through a symlink. */
static void read_xattrs(int dfd, const char *name, view *w)
{
	if (may_have_xattrs(dfd, name))
		xattrs_member_read(dfd, name, &w->xs);
	else
		xattrs_stored_empty(&w->xs);
	w->xblob = xattr_blob(&w->xs, fsck_not_acl);
	w->ablob = xattr_blob(&w->xs, xattrs_is_acl);
}

static struct timespec ts_of(struct statx_timestamp t)
{
	return (struct timespec){ .tv_sec = t.tv_sec, .tv_nsec = t.tv_nsec };
}

/* The struct stat the votes compare, from a member's statx. */
static void stat_of(const struct statx *x, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(x->stx_dev_major, x->stx_dev_minor);
	st->st_ino = x->stx_ino;
	st->st_mode = x->stx_mode;
	st->st_nlink = x->stx_nlink;
	st->st_uid = x->stx_uid;
	st->st_gid = x->stx_gid;
	st->st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor);
	st->st_size = (off_t)x->stx_size;
	st->st_blksize = x->stx_blksize;
	st->st_blocks = (blkcnt_t)x->stx_blocks;
	st->st_atim = ts_of(x->stx_atime);
	st->st_mtim = ts_of(x->stx_mtime);
	st->st_ctim = ts_of(x->stx_ctime);
}

/* On member mb's worker (fsck_on_member): what a system call returns
 * lands in locals first.  The lstat is a member read (mop_statx), where
 * test builds inject faults. */
void fsck_read_view(volume *v, int mb, int dfd, const char *name, view *w)
{
	struct statx stx;
	struct stat st;
	char buf[PATH_MAX + 1];
	int rc = mop_statx(v, mb, dfd, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx);

	if (rc < 0) {
		w->err = rc == -ENOENT ? 0 : -rc;
		return;
	}
	stat_of(&stx, &st);
	w->st = st;
	w->present = true;
	if (S_ISLNK(st.st_mode)) {
		ssize_t l = MIO_CALL(readlinkat(dfd, name, buf, sizeof(buf) - 1));
		w->target = g_strndup(buf, l < 0 ? 0 : (size_t)l);
	} else {
		read_xattrs(dfd, name, w);
	}
}

/* Lists (dfd, name) on the member's worker: the names go to a list of its
 * own, handed to the caller at the end. */
int fsck_list_run(void *arg)
{
	list_call *l = arg;
	int fd = MIO_CALL(openat(l->dfd, l->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		int err = errno;
		if (fd >= 0)
			MIO_CALL(close(fd));
		return -err;
	}
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	while ((!l->most || (int)names->len < l->most) && (de = MIO_CALL(readdir(d))))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			g_ptr_array_add(names, g_strdup(de->d_name));
	MIO_CALL(closedir(d));
	l->names = names;
	return 0;
}


/* ---- the views of a directory's entries, a block at a time ---- */

struct view_block_call {
	view_block *b;
	int mb;
};

static int view_block_run(void *arg)
{
	const struct view_block_call *c = arg;
	view_block *b = c->b;

	for (int i = 0; i < b->count; i++)
		fsck_read_view(b->f->v, c->mb, b->dfd[c->mb], b->names[i],
		               &b->w[i * b->f->n + c->mb]);
	return 0;
}

void fsck_read_view_block(view_block *b, GList *l)
{
	fsck *f = b->f;
	struct view_block_call c[STRIPE_MAX_N];
	void *args[STRIPE_MAX_N];
	uint64_t mask = 0;

	for (b->count = 0; l && b->count < VIEW_BLOCK; l = l->next)
		b->names[b->count++] = l->data;
	b->w = g_new0(view, (size_t)b->count * (size_t)f->n);
	for (int mb = 0; mb < f->n; mb++) {
		c[mb] = (struct view_block_call){ b, mb };
		args[mb] = &c[mb];
		if (b->dfd[mb] >= 0)
			mask |= 1ull << mb;
	}
	fsck_on_members_apart(f, mask, view_block_run, args, b->rcs);
	for (int mb = 0; mb < f->n; mb++)
		for (int i = 0; i < b->count && mask >> mb & 1 && b->rcs[mb] < 0; i++)
			fsck_view_clear(&b->w[i * f->n + mb]); /* a member given up */
}

const int *fsck_take_views(view_block *b, int i, view *dst)
{
	view *w = &b->w[i * b->f->n];

	for (int mb = 0; mb < b->f->n; mb++)
		if (w[mb].present && !S_ISDIR(w[mb].st.st_mode) && w[mb].st.st_nlink > 1)
			return NULL;
	memcpy(dst, w, sizeof(view) * (size_t)b->f->n);
	memset(w, 0, sizeof(view) * (size_t)b->f->n);
	return b->rcs;
}

void fsck_free_view_block(view_block *b)
{
	for (int i = 0; i < b->count * b->f->n; i++)
		fsck_view_clear(&b->w[i]);
	g_free(b->w);
	b->w = NULL;
	b->count = 0;
}
