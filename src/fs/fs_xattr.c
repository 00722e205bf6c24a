/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: the FUSE requests mapped onto the storage core
 * (src/core/xattrs.h keeps them on the members and says which names are
 * kept), and ecfs's own virtual attributes.  user.ecfs.layout on every
 * regular file (its code, size and which members hold a good chunk) and
 * user.ecfs.health on the root are computed when read by name; they are
 * not listed, so copying tools (rsync -X, cp -a) neither copy nor remove
 * them.  The whole user.ecfs. namespace is ecfs's: setting or removing a
 * name there is accepted and changes nothing (a copy of a file that
 * carries one, made elsewhere, must not fail), reading an unknown one finds
 * nothing.
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

static bool ecfs_name(const char *name)
{
	return strncmp(name, XATTRS_ECFS_PREFIX, strlen(XATTRS_ECFS_PREFIX)) == 0;
}

/* Setting an access ACL clears the setgid bit of a file whose group the
 * caller is not in, unless the caller is privileged (the kernel asks for
 * it with FUSE_SETXATTR_ACL_KILL_SGID, which libfuse does not pass on; the
 * members, set by root, keep the bit).  Root stands for the privilege. */
static int acl_kill_sgid(const char *path)
{
	struct stat st;
	if (fuse_get_context()->uid == 0)
		return 0;
	int rc = fs_member_lstat(path, &st);
	if (rc < 0 || !(st.st_mode & S_ISGID) || fs_caller_in_group(st.st_gid))
		return rc;
	return fs_chmod(path, st.st_mode & 07777 & ~S_ISGID, NULL);
}

int fs_setxattr(const char *path, const char *name, const char *value,
                size_t size, int flags)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	if (ecfs_name(name))
		return 0;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
	int rc = xattrs_set(fs_volume(), path, name, value, size, flags);
	if (rc == 0 && strcmp(name, XATTRS_ACL_ACCESS) == 0)
		rc = acl_kill_sgid(path);
	return rc;
}

int fs_removexattr(const char *path, const char *name)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	if (ecfs_name(name))
		return 0;
	char buf[FS_ORPHAN_PATH_MAX];
	return xattrs_remove(fs_volume(), fs_path(path, buf), name);
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
	size_t len = strlen(text);
	int rc = size == 0 ? (int)len : size < len ? -ERANGE : (int)len;
	if (rc > 0 && size)
		memcpy(value, text, len);
	g_free(text);
	return rc;
}

int fs_getxattr(const char *path, const char *name, char *value, size_t size)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	path = fs_path(path, buf);
	if (ecfs_name(name))
		return virtual_value(path, name, value, size);
	return xattrs_get(fs_volume(), path, name, value, size);
}

int fs_listxattr(const char *path, char *list, size_t size)
{
	if (volume_path_reserved(path))
		return -ENOENT;
	char buf[FS_ORPHAN_PATH_MAX];
	/* trusted.* as local filesystems list it: to the privileged only */
	bool privileged = fuse_get_context()->uid == 0;
	return xattrs_list(fs_volume(), fs_path(path, buf), privileged, list, size);
}
