/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: the FUSE requests mapped onto the storage core
 * (src/core/namespace/xattrs.h keeps them on the members and says which names are
 * kept), and ecfs's own virtual attributes.  user.ecfs.layout on every
 * regular file (its code, size and which members hold a good chunk) and
 * user.ecfs.health on the root are computed when read by name; they are
 * not listed, so copying tools (rsync -X, cp -a) neither copy nor remove
 * them.  The health report names the files met damaged or lost to root
 * and the user who mounted only.  user.ecfs.scrub set on the root, by
 * root only, controls the online scrub (scrub.h).  The whole user.ecfs. namespace is
 * ecfs's: setting or removing a name there is accepted and changes
 * nothing (a copy of a file that carries one, made elsewhere, must not
 * fail), reading an unknown one finds nothing.
 */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#include "ecfile.h"
#include "xattrs.h"

#define XATTR_LAYOUT XATTRS_ECFS_PREFIX "layout"
#define XATTR_HEALTH XATTRS_ECFS_PREFIX "health"
#define XATTR_SCRUB XATTRS_ECFS_PREFIX "scrub"

static bool ecfs_name(const char *name)
{
	return strncmp(name, XATTRS_ECFS_PREFIX, strlen(XATTRS_ECFS_PREFIX)) == 0;
}

/* Setting an access ACL clears the setgid bit of a file whose group the
 * caller is not in, unless the caller is privileged (the kernel asks for
 * it with FUSE_SETXATTR_ACL_KILL_SGID, which libfuse does not pass on; the
 * members, set by root, keep the bit).  Root stands for the privilege. */
static int acl_kill_sgid(fuse_req_t req, const char *path)
{
	struct stat st;
	if (fuse_req_ctx(req)->uid == 0)
		return 0;
	int rc = fs_member_lstat(path, &st);
	if (rc < 0 || !(st.st_mode & S_ISGID) || fs_caller_in_group(req, st.st_gid))
		return rc;
	return fs_chmod_path(path, st.st_mode & 07777 & ~S_ISGID);
}

/* A command for the online scrub: root's alone (docs/SECURITY.md). */
static int scrub_command(fuse_req_t req, const char *value, size_t size)
{
	scrub *s = __atomic_load_n(&fs_state()->scrub, __ATOMIC_ACQUIRE);

	if (fuse_req_ctx(req)->uid != 0)
		return -EPERM;
	if (!s)
		return -ENOTSUP; /* read-only, or -o noheal */
	char *cmd = g_strndup(value, size);
	int rc = scrub_control(s, g_strstrip(cmd));
	g_free(cmd);
	return rc;
}

static int set_value(fuse_req_t req, const char *path, const char *name, const char *value,
                     size_t size, int flags)
{
	if (strcmp(name, XATTR_SCRUB) == 0 && strcmp(path, "/") == 0)
		return scrub_command(req, value, size);
	if (ecfs_name(name))
		return 0;
	int rc = xattrs_set(fs_volume(), path, name, value, size, flags);
	if (rc == 0 && strcmp(name, XATTRS_ACL_ACCESS) == 0)
		rc = acl_kill_sgid(req, path);
	return rc;
}

/* The health report without the paths of the files met damaged or lost
 * (their counts stay): those may name files in directories the caller
 * cannot search (docs/SECURITY.md). */
static char *without_file_paths(char *text)
{
	GString *s = g_string_sized_new(strlen(text));
	gchar **lines = g_strsplit(text, "\n", -1);

	for (gchar **l = lines; *l; l++)
		if (**l && !g_str_has_prefix(*l, "damaged.") && !g_str_has_prefix(*l, "lost."))
			g_string_append_printf(s, "%s\n", *l);
	g_strfreev(lines);
	g_free(text);
	return g_string_free(s, FALSE);
}

/* The value of a virtual attribute, or ENODATA where it does not apply;
 * privileged: the caller is root or the user who mounted. */
static int virtual_value(const char *path, const char *name, bool privileged, char *value,
                         size_t size)
{
	volume *v = fs_volume();
	char *text = NULL;
	if (strcmp(name, XATTR_HEALTH) == 0) {
		if (strcmp(path, "/") != 0)
			return -ENODATA;
		text = volume_health_text(v);
		if (!privileged)
			text = without_file_paths(text);
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
	size_t len = strlen(text);
	int rc = size == 0 ? (int)len : size < len ? -ERANGE : (int)len;
	if (rc > 0 && size)
		memcpy(value, text, len);
	g_free(text);
	return rc;
}

static int get_value(fuse_req_t req, const char *path, const char *name, char *value,
                     size_t size)
{
	uid_t uid = fuse_req_ctx(req)->uid;

	if (ecfs_name(name))
		return virtual_value(path, name, uid == 0 || uid == fs_state()->uid, value, size);
	return xattrs_get(fs_volume(), path, name, value, size);
}

/* ---- the requests: by node ---- */

void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                 size_t size, int flags)
{
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	if (rc == 0)
		rc = set_value(req, path, name, value, size, flags);
	g_free(path);
	if (strcmp(name, XATTRS_ACL_ACCESS) == 0)
		fs_nodes_inval(ino); /* the mode may have changed with it */
	fs_reply_err(req, rc);
}

void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	char *path = NULL;
	int rc = fs_nodes_path(ino, &path);
	if (rc == 0 && !ecfs_name(name))
		rc = xattrs_remove(fs_volume(), path, name);
	g_free(path);
	fs_reply_err(req, rc);
}

/* Answers a get or list request of size bytes with the rc bytes of value
 * (or, for size 0, their count). */
static void reply_value(fuse_req_t req, int rc, const char *value, size_t size)
{
	if (rc < 0)
		fs_reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)rc);
	else
		fuse_reply_buf(req, value, (size_t)rc);
}

void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *path = NULL, *value = size ? g_malloc(size) : NULL;
	int rc = fs_nodes_path(ino, &path);
	if (rc == 0)
		rc = get_value(req, path, name, value, size);
	g_free(path);
	reply_value(req, rc, value, size);
	g_free(value);
}

void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *path = NULL, *list = size ? g_malloc(size) : NULL;
	int rc = fs_nodes_path(ino, &path);
	/* trusted.* as local filesystems list it: to the privileged only */
	bool privileged = fuse_req_ctx(req)->uid == 0;
	if (rc == 0)
		rc = xattrs_list(fs_volume(), path, privileged, list, size);
	g_free(path);
	reply_value(req, rc, list, size);
	g_free(list);
}
