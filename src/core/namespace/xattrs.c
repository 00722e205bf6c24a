/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes on the members (see xattrs.h).
 *
 * Member objects are reached as /proc/self/fd/N of an O_PATH descriptor
 * opened beneath the member's directory without following a symlink: the
 * *xattr() calls have no *at() form in this libc, and an O_PATH
 * descriptor is the one way to name a symlink or a device node itself.
 * The mirror fns run on the member's I/O worker (volume_on_member), so
 * what they read lands in the worker's bounce buffer or memory of their
 * own, never straight in the caller's.
 */
#include "xattrs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "memberio.h"
#include "memberops.h"
#include "mirror.h"
#include "space.h"
#include "volume_internal.h"
#include "votes.h"

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool xattrs_is_acl(const char *name)
{
	return strcmp(name, XATTRS_ACL_ACCESS) == 0 || strcmp(name, XATTRS_ACL_DEFAULT) == 0;
}

bool xattrs_name_kept(const char *name)
{
	if (has_prefix(name, "user."))
		return !has_prefix(name, XATTRS_ECFS_PREFIX);
	return xattrs_is_acl(name) || has_prefix(name, "security.") ||
	       has_prefix(name, "trusted.");
}

/* The marker that name's attributes need, or -1. */
static int marker_of(const char *name)
{
	return strcmp(name, XATTRS_CAPABILITY) == 0 ? VOLUME_ATTR_CAPS
	       : xattrs_is_acl(name)                ? VOLUME_ATTR_ACLS
	                                            : -1;
}

/* Where attribute name of path lives (volume_attrs_path): the volume
 * root's default ACL stays on the member roots, the rest of its
 * attributes are its stand-in's. */
static const char *where(volume *v, const char *path, const char *name)
{
	return strcmp(name, XATTRS_ACL_DEFAULT) == 0 ? path : volume_attrs_path(v, path);
}

/* The object (dirfd, leaf) as a path the *xattr() calls take. */
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

static void object_close(struct member_object *o)
{
	MIO_CALL(close(o->fd));
}

/* Copies a value out with the getxattr(2) size rules. */
static int copy_out(const void *data, size_t len, void *value, size_t size)
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

struct set_args {
	volume *v;
	const char *name;
	const void *value;
	size_t size;
	int flags;
};

static int set_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct set_args *x = arg;
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	rc = mop_fsetxattr(x->v, member, o.fd, x->name, x->value, x->size, x->flags);
	object_close(&o);
	return rc;
}

int xattrs_set(volume *v, const char *path, const char *name, const void *value,
               size_t size, int flags)
{
	if (!xattrs_name_kept(name))
		return has_prefix(name, XATTRS_ECFS_PREFIX) ? -EPERM : -EOPNOTSUPP;
	int rc = volume_claim_space(v, SPACE_ENTRY_COST + size);
	if (rc == 0 && marker_of(name) >= 0)
		rc = volume_attr_mark(v, (enum volume_attr_kind)marker_of(name));
	if (rc < 0)
		return rc;
	struct set_args x = { v, name, value, size, flags };
	return mirror_apply(v, where(v, path, name), set_member, &x, "setxattr");
}

static int remove_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct set_args *x = arg;
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	rc = mop_fremovexattr(x->v, member, o.fd, x->name);
	object_close(&o);
	return rc;
}

int xattrs_remove(volume *v, const char *path, const char *name)
{
	if (!xattrs_name_kept(name))
		return has_prefix(name, XATTRS_ECFS_PREFIX) ? -EPERM : -EOPNOTSUPP;
	struct set_args x = { .v = v, .name = name };
	return mirror_apply(v, where(v, path, name), remove_member, &x, "removexattr");
}

/* ---- get ---- */

struct get_args {
	const char *name;
	void *value;
	size_t size;
};

static int get_member(int member, int dirfd, const char *leaf, void *arg)
{
	const struct get_args *x = arg;
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	char *dst = x->size ? (char *)mio_bounce(x->size) : NULL;
	if (!dst)
		dst = x->value;
	ssize_t n = MIO_CALL(getxattr(o.path, x->name, dst, x->size));
	rc = n < 0 ? -errno : (int)n;
	if (n > 0 && x->size && dst != x->value)
		memcpy(x->value, dst, (size_t)n);
	object_close(&o);
	return rc;
}

/* One member's copy of a voted attribute (voted_get). */
struct voted_copy {
	const char *name;
	char *value;     /* malloc'd; NULL: none */
	size_t len;
	struct timespec ctime; /* of the object that holds it */
};

/* getxattr(2) of name on o into a buffer of its own (*value, NULL for
 * none), growing it as the value grows meanwhile. */
static int get_object(const struct member_object *o, const char *name, char **value,
                      size_t *len)
{
	for (;;) {
		ssize_t want = MIO_CALL(getxattr(o->path, name, NULL, 0));
		if (want < 0)
			return errno == ENODATA || errno == EOPNOTSUPP ? 0 : -errno;
		char *grown = realloc(*value, (size_t)want + 1);
		if (!grown)
			return -ENOMEM;
		*value = grown;
		ssize_t got = MIO_CALL(getxattr(o->path, name, *value, (size_t)want));
		if (got >= 0) {
			*len = (size_t)got;
			return 0;
		}
		if (errno != ERANGE) /* ERANGE: the value grew meanwhile */
			return -errno;
	}
}

static int voted_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct voted_copy *c = arg;
	struct member_object o;
	struct stat st;
	char *value = NULL;
	size_t len = 0;

	(void)member;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	rc = MIO_CALL(fstat(o.fd, &st)) < 0 ? -errno : get_object(&o, c->name, &value, &len);
	object_close(&o);
	if (rc < 0 || !len) {
		free(value);
		value = NULL;
	}
	/* the copy is this call's own until the end (volume_on_member) */
	c->value = value;
	c->len = len;
	c->ctime = st.st_ctim;
	return rc;
}

static bool same_value(const void *ctx, int a, int b)
{
	const struct voted_copy *c = ctx;
	return c[a].len == c[b].len && (!c[a].len || !memcmp(c[a].value, c[b].value, c[a].len));
}

/* Attributes that grant: an ACL is a permission, security.capability a
 * privilege at exec, trusted.* what root's tools (overlayfs) rely on.
 * Such a value is the one most members that answer hold (votes.h), not
 * the first member's.  The kernel caches ACLs per inode, and the marker
 * spares the member calls on volumes where no ACL or capability was ever
 * set. */
static bool voted_name(const char *name)
{
	return xattrs_is_acl(name) || has_prefix(name, "security.") || has_prefix(name, "trusted.");
}

static int voted_get(volume *v, const char *path, const char *name, void *value, size_t size)
{
	struct voted_copy c[64] = { 0 };
	void *args[64];
	struct timespec ctimes[64];
	int err;

	for (int mb = 0; mb < volume_n(v); mb++) {
		c[mb].name = name;
		args[mb] = &c[mb];
	}
	uint64_t got = mirror_gather(v, path, voted_member, args, volume_n(v), &err, "getxattr");
	for (int mb = 0; mb < volume_n(v); mb++)
		ctimes[mb] = c[mb].ctime;
	int win = votes_winner(volume_n(v), got, ctimes, same_value, c);
	int rc = win < 0 ? err : !c[win].len ? -ENODATA : copy_out(c[win].value, c[win].len,
	                                                            value, size);
	for (int mb = 0; win >= 0 && mb < volume_n(v); mb++)
		if (got >> mb & 1 && !same_value(c, mb, win)) {
			char held[XATTR_NAME_MAX + 16];
			snprintf(held, sizeof(held), "%s %s", c[mb].len ? "a value of" : "no", name);
			votes_wrong_copy(v, mb, path, held, c[win].len ? "a different one" : "none");
		}
	for (int mb = 0; mb < volume_n(v); mb++)
		free(c[mb].value);
	return rc == -EOPNOTSUPP ? -ENODATA : rc;
}

int xattrs_get(volume *v, const char *path, const char *name, void *value, size_t size)
{
	if (!xattrs_name_kept(name))
		return has_prefix(name, XATTRS_ECFS_PREFIX) ? -ENODATA : -EOPNOTSUPP;
	if (marker_of(name) >= 0 && !volume_attr_marked(v, (enum volume_attr_kind)marker_of(name)))
		return -ENODATA;
	if (voted_name(name))
		return voted_get(v, where(v, path, name), name, value, size);
	struct get_args x = { name, value, size };
	int rc = mirror_query(v, where(v, path, name), get_member, &x, "getxattr");
	/* A member that keeps no xattrs holds no ACL: an error here would
	 * fail the kernel's permission checks. */
	if (rc == -EOPNOTSUPP && xattrs_is_acl(name))
		rc = -ENODATA;
	return rc;
}

/* ---- list ---- */

const char *xattrs_list_next(const char *list, size_t len, size_t *at)
{
	if (*at >= len)
		return NULL;
	const char *name = list + *at;
	/* The member's bytes: a last name without its NUL ends the list. */
	const char *end = memchr(name, 0, len - *at);
	if (!end) {
		*at = len;
		return NULL;
	}
	*at = (size_t)(end - list) + 1;
	return name;
}

struct list_args {
	char *names; /* the member's list, malloc'd */
	ssize_t len;
};

/* listxattr(2) of o into a buffer of its own (*names), growing it as
 * the list grows meanwhile. */
static int list_object(const struct member_object *o, char **names, ssize_t *len)
{
	for (;;) {
		ssize_t want = MIO_CALL(listxattr(o->path, NULL, 0));
		if (want < 0)
			return -errno;
		char *grown = realloc(*names, (size_t)want + 1);
		if (!grown)
			return -ENOMEM;
		*names = grown;
		*len = want ? MIO_CALL(listxattr(o->path, *names, (size_t)want)) : 0;
		if (*len >= 0)
			return 0;
		if (errno != ERANGE) /* ERANGE: the list grew meanwhile */
			return -errno;
	}
}

static int list_member(int member, int dirfd, const char *leaf, void *arg)
{
	struct list_args *l = arg;
	free(l->names);
	l->names = NULL;
	l->len = 0;
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	/* The list is this call's own until the end (volume_on_member): a
	 * call given up must not write into what the caller holds. */
	char *names = NULL;
	ssize_t len = 0;
	rc = list_object(&o, &names, &len);
	object_close(&o);
	if (rc == -EOPNOTSUPP) /* a member without xattrs holds none */
		rc = 0, len = 0;
	l->names = names;
	l->len = rc < 0 ? 0 : len;
	return rc;
}

int xattrs_list(volume *v, const char *path, bool privileged, char *list, size_t size)
{
	struct list_args l = { 0 };
	int rc = mirror_query(v, volume_attrs_path(v, path), list_member, &l, "listxattr");
	if (rc < 0) {
		free(l.names);
		return rc;
	}
	GString *out = g_string_new(NULL);
	size_t at = 0;
	for (const char *name; (name = xattrs_list_next(l.names, (size_t)l.len, &at));) {
		if (xattrs_name_kept(name) && (privileged || !has_prefix(name, "trusted.")))
			g_string_append_len(out, name, (gssize)strlen(name) + 1);
	}
	free(l.names);
	/* the volume root's default ACL is the member roots' (where) */
	if (volume_attrs_path(v, path) != path &&
	    xattrs_get(v, path, XATTRS_ACL_DEFAULT, NULL, 0) > 0)
		g_string_append_len(out, XATTRS_ACL_DEFAULT, sizeof(XATTRS_ACL_DEFAULT));
	rc = copy_out(out->str, out->len, list, size);
	g_string_free(out, TRUE);
	return rc;
}

/* ---- creation and support ---- */

mode_t xattrs_create_mode(volume *v, const char *path, mode_t mode, mode_t umask)
{
	/* Nothing to strip: the same either way, and no member is asked. */
	if (!(mode & umask & 0777))
		return mode;
	const char *slash = strrchr(path, '/');
	char *parent = slash && slash != path ? g_strndup(path, (size_t)(slash - path))
	                                      : g_strdup("/");
	int rc = xattrs_get(v, parent, XATTRS_ACL_DEFAULT, NULL, 0);
	g_free(parent);
	return rc > 0 ? mode : mode & ~umask;
}

struct support_args {
	volume *v;
	int mb;
	bool supported;
};

static int probe_member(void *arg)
{
	struct support_args *s = arg;
	const char *leaf;
	int fd = volume_parent_fd(s->v, s->mb, "/", &leaf);
	if (fd < 0)
		return fd;
	ssize_t n = MIO_CALL(fgetxattr(fd, XATTRS_ACL_ACCESS, NULL, 0));
	s->supported = n >= 0 || (errno != EOPNOTSUPP && errno != ENOSYS);
	MIO_CALL(close(fd));
	return 0;
}

bool xattrs_acl_supported(volume *v)
{
	for (int mb = 0; mb < volume_n(v); mb++) {
		if (!volume_member_ok(v, mb))
			continue;
		struct support_args s = { v, mb, false };
		int rc = volume_on_member(v, mb, probe_member, &s);
		if (rc < 0)
			volume_member_error(v, mb, -rc, "probing for ACLs");
		else if (!s.supported)
			return false;
	}
	return true;
}

/* ---- one member object (ecfs-fsck) ---- */

static int cmp_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void xattrs_stored_empty(xattrs_stored *out)
{
	out->names = g_ptr_array_new_with_free_func(g_free);
	out->values = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
	out->complete = true;
}

void xattrs_member_read(int dirfd, const char *leaf, xattrs_stored *out)
{
	xattrs_stored_empty(out);
	struct member_object o;
	if (object_open(dirfd, leaf, &o) < 0)
		return;
	char *list = NULL;
	ssize_t len = 0;
	int rc = list_object(&o, &list, &len);
	if (rc < 0)
		out->complete = rc == -EOPNOTSUPP;
	size_t at = 0;
	for (const char *name; rc == 0 && (name = xattrs_list_next(list, (size_t)len, &at));)
		g_ptr_array_add(out->names, g_strdup(name));
	free(list);
	g_ptr_array_sort(out->names, cmp_names);
	for (guint i = 0; i < out->names->len; i++) {
		const char *name = out->names->pdata[i];
		ssize_t vl = MIO_CALL(getxattr(o.path, name, NULL, 0));
		char *val = vl > 0 ? g_malloc((size_t)vl) : NULL;
		if (vl > 0)
			vl = MIO_CALL(getxattr(o.path, name, val, (size_t)vl));
		if (vl < 0 && errno != ENODATA)
			out->complete = false; /* a value that cannot be read: no vote */
		g_ptr_array_add(out->values, g_bytes_new_take(val, vl < 0 ? 0 : (size_t)vl));
	}
	object_close(&o);
}

void xattrs_stored_clear(xattrs_stored *s)
{
	if (s->names)
		g_ptr_array_unref(s->names);
	if (s->values)
		g_ptr_array_unref(s->values);
	memset(s, 0, sizeof(*s));
}

static bool stored_has(const xattrs_stored *s, const char *name)
{
	for (guint i = 0; s->names && i < s->names->len; i++)
		if (strcmp(s->names->pdata[i], name) == 0)
			return true;
	return false;
}

int xattrs_member_write(volume *v, int mb, int dirfd, const char *leaf,
                        const xattrs_stored *want, const xattrs_stored *have,
                        bool (*which)(const char *name))
{
	struct member_object o;
	int rc = object_open(dirfd, leaf, &o);
	if (rc < 0)
		return rc;
	for (guint i = 0; have->names && i < have->names->len; i++) {
		const char *name = have->names->pdata[i];
		if (!which(name) || stored_has(want, name))
			continue;
		int r = mop_fremovexattr(v, mb, o.fd, name);
		if (r < 0 && r != -ENODATA)
			rc = r;
	}
	for (guint j = 0; j < want->names->len; j++) {
		const char *name = want->names->pdata[j];
		if (!which(name))
			continue;
		gsize vl;
		const void *val = g_bytes_get_data(want->values->pdata[j], &vl);
		int r = mop_fsetxattr(v, mb, o.fd, name, val, vl, 0);
		if (r < 0)
			rc = r;
	}
	object_close(&o);
	return rc;
}
