/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes.  User attributes (user.*) are stored on every
 * member, on the object itself (the chunk files of a regular file), and
 * read from the first healthy member.  Two read-only virtual attributes
 * describe the volume: user.ecfs.layout on every regular file (its code,
 * size and which members hold a good chunk) and user.ecfs.health on the
 * root; the whole user.ecfs. namespace is ecfs's, so users cannot set it.
 * Other namespaces (trusted, security, system) are not supported: reads
 * find nothing, writes give EOPNOTSUPP.  The kernel asks for
 * security.capability on every write, so that answer never touches a member.
 *
 * Member objects are reached as /proc/self/fd/N of an O_PATH descriptor
 * opened beneath the member root without following a symlink: the *xattr()
 * calls have no *at() form in this libc.
 */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <glib.h>

#include "ecfile.h"
#include "memberio.h"
#include "memberops.h"
#include "mirror.h"
#include "space.h"

#define XATTR_USER "user."
#define XATTR_ECFS "user.ecfs."
#define XATTR_LAYOUT "user.ecfs.layout"
#define XATTR_HEALTH "user.ecfs.health"

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Opens the object (dirfd, leaf) as a path usable by the *xattr() calls. */
struct member_object {
	int fd;
	char path[40];
};

static int object_open(int dirfd, const char *leaf, struct member_object *o)
{
	o->fd = MIO_CALL(openat(dirfd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC));
	if (o->fd < 0)
		return -errno;
	snprintf(o->path, sizeof o->path, "/proc/self/fd/%d", o->fd);
	return 0;
}

/* Copies a value out with the getxattr(2) size rules. */
static int copy_out(const void *data, size_t len, char *value, size_t size)
{
	if (len > (size_t)INT32_MAX)
		return -E2BIG;
	if (size == 0)
		return (int)len;
	if (size < len)
		return -ERANGE;
	memcpy(value, data, len);
	return (int)len;
}

/* ---- set / remove ---- */

struct xattr_set {
	const char *name;
	const char *value;
	size_t size;
	int flags;
};

static int setxattr_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct xattr_set *x = arg;
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	rc = mop_fsetxattr(fs_volume(), member, o.fd, x->name, x->value, x->size, x->flags);
	MIO_CALL(close(o.fd));
	return rc;
}

/* 0 if user code may set or remove the attribute name, else the errno. */
static int writable_name(const char *name)
{
	if (!has_prefix(name, XATTR_USER))
		return -EOPNOTSUPP;
	if (has_prefix(name, XATTR_ECFS))
		return -EPERM;
	return 0;
}

int fs_setxattr(const char *path, const char *name, const char *value,
                size_t size, int flags)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
	int rc = writable_name(name);
	if (rc == 0)
		rc = volume_claim_space(fs_volume(), SPACE_ENTRY_COST + size);
	if (rc < 0)
		return rc;
	struct xattr_set x = { name, value, size, flags };
	return mirror_apply(fs_volume(), path, setxattr_member, &x, "setxattr");
}

static int removexattr_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	rc = mop_fremovexattr(fs_volume(), member, o.fd, arg);
	MIO_CALL(close(o.fd));
	return rc;
}

int fs_removexattr(const char *path, const char *name)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
	int rc = writable_name(name);
	if (rc < 0)
		return rc;
	return mirror_apply(fs_volume(), path, removexattr_member, (void *)name, "removexattr");
}

/* ---- get ---- */

struct xattr_get {
	const char *name;
	char *value;
	size_t size;
};

static int getxattr_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct xattr_get *x = arg;
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	/* through the worker's bounce buffer (volume_on_member) */
	char *dst = x->size ? (char *)mio_bounce(x->size) : NULL;
	if (!dst)
		dst = x->value;
	ssize_t n = MIO_CALL(getxattr(o.path, x->name, dst, x->size));
	rc = n < 0 ? -errno : (int)n;
	if (n > 0 && x->size && dst != x->value)
		memcpy(x->value, dst, (size_t)n);
	MIO_CALL(close(o.fd));
	return rc;
}

/* The value of a virtual attribute, or ENODATA where it does not apply. */
static int virtual_value(const char *path, const char *name, char *value, size_t size)
{
	volume *v = fs_volume();
	char *text = NULL;
	if (strcmp(name, XATTR_HEALTH) == 0) {
		if (strcmp(path, "/") != 0)
			return -ENODATA;
		text = volume_health_text(v);
	} else if (strcmp(name, XATTR_LAYOUT) == 0) {
		struct stat st;
		int rc = fs_member_lstat(path, &st);
		if (rc < 0)
			return rc;
		if (!S_ISREG(st.st_mode))
			return -ENODATA;
		ecfile *f;
		rc = ecfile_open(v, path, O_RDONLY, &f);
		if (rc < 0)
			return rc;
		text = ecfile_layout_text(f);
		ecfile_release(f);
	} else {
		return -ENODATA;
	}
	if (!text)
		return -ENOMEM;
	int rc = copy_out(text, strlen(text), value, size);
	g_free(text);
	return rc;
}

int fs_getxattr(const char *path, const char *name, char *value, size_t size)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
	if (has_prefix(name, XATTR_ECFS))
		return virtual_value(path, name, value, size);
	if (!has_prefix(name, XATTR_USER))
		return -ENODATA;
	struct xattr_get x = { name, value, size };
	return mirror_query(fs_volume(), path, getxattr_member, &x, "getxattr");
}

/* ---- list ---- */

struct xattr_list {
	char *names;   /* the member's list, malloc'd */
	ssize_t len;
	mode_t type;   /* S_IFMT bits of the object */
};

static int listxattr_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct xattr_list *l = arg;
	free(l->names);
	l->names = NULL;
	struct stat st;
	if (MIO_CALL(fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW)) < 0)
		return -errno;
	l->type = st.st_mode & S_IFMT;
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	/* The list is this call's own until the end (volume_on_member): a
	 * call given up must not write into what the caller holds. */
	char *names = NULL;
	ssize_t len = 0;
	for (;;) {
		ssize_t want = MIO_CALL(listxattr(o.path, NULL, 0));
		if (want < 0) {
			rc = -errno;
			break;
		}
		char *grown = realloc(names, (size_t)want + 1);
		if (!grown) {
			rc = -ENOMEM;
			break;
		}
		names = grown;
		len = want ? MIO_CALL(listxattr(o.path, names, (size_t)want)) : 0;
		if (len >= 0) {
			rc = 0;
			break;
		}
		if (errno != ERANGE) { /* ERANGE: the list grew meanwhile */
			rc = -errno;
			break;
		}
	}
	MIO_CALL(close(o.fd));
	l->names = names;
	l->len = len;
	return rc;
}

int fs_listxattr(const char *path, char *list, size_t size)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
	struct xattr_list l = { 0 };
	int rc = mirror_query(fs_volume(), path, listxattr_member, &l, "listxattr");
	if (rc < 0) {
		free(l.names);
		return rc;
	}
	GString *out = g_string_new(NULL);
	for (ssize_t i = 0; i < l.len; i += (ssize_t)strlen(l.names + i) + 1) {
		const char *name = l.names + i;
		if (has_prefix(name, XATTR_USER) && !has_prefix(name, XATTR_ECFS))
			g_string_append_len(out, name, (gssize)strlen(name) + 1);
	}
	free(l.names);
	if (l.type == S_IFREG)
		g_string_append_len(out, XATTR_LAYOUT, sizeof XATTR_LAYOUT);
	if (strcmp(path, "/") == 0)
		g_string_append_len(out, XATTR_HEALTH, sizeof XATTR_HEALTH);
	rc = copy_out(out->str, out->len, list, size);
	g_string_free(out, TRUE);
	return rc;
}
