/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the extended attributes on the members (src/core/namespace/xattrs.c)
 * on real member directories: an attribute set or removed reaches every
 * member, reads and lists come from the first member that has the object;
 * which names are kept (user.ecfs.* never, trusted.* listed to the
 * privileged only, unknown namespaces refused); POSIX ACLs stored as the
 * members' own, with the mode kept in step and a directory's default ACL
 * deciding whether the umask applies; file capabilities, read from a
 * member only on volumes where one was set; a name longer than NAME_MAX is
 * ENAMETOOLONG before a member is asked; and the member-side reading and
 * writing ecfs-fsck repairs with; a member's list of names walked
 * within its length.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib.h>

#include "core_test_util.h"
#include "log.h"
#include "xattrs.h"

#define K 2
#define M 1
#define N (K + M)

typedef test_volume fixture;

static const volume_options opts = { .geometry = { .k = K, .m = M } };

/* Makes rel (a directory) on every member. */
static void mkdir_all(fixture *fx, const char *rel)
{
	for (int mb = 0; mb < N; mb++) {
		char *p = member_path(&fx->mb, mb, rel);
		assert_int_equal(mkdir(p, 0755), 0);
		g_free(p);
	}
}

/* The value of name on member mb's copy of rel, g_malloc'd ("" if none,
 * *len -1). */
static char *member_xattr(fixture *fx, int mb, const char *rel, const char *name, ssize_t *len)
{
	char *p = member_path(&fx->mb, mb, rel);
	char buf[4096];
	*len = lgetxattr(p, name, buf, sizeof(buf));
	g_free(p);
	return g_strndup(buf, *len < 0 ? 0 : (size_t)*len);
}

static mode_t member_mode(fixture *fx, int mb, const char *rel)
{
	char *p = member_path(&fx->mb, mb, rel);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	g_free(p);
	return st.st_mode & 07777;
}

/* True if the NUL-separated list of len bytes holds name. */
static bool listed(const char *list, int len, const char *name)
{
	for (int i = 0; i < len; i += (int)strlen(list + i) + 1)
		if (strcmp(list + i, name) == 0)
			return true;
	return false;
}

static void test_set_get_list_remove(void **state)
{
	fixture *fx = *state;
	char buf[256];
	ssize_t len;

	mkdir_all(fx, "/d");
	assert_int_equal(xattrs_set(fx->v, "/d", "user.a", "value", 5, 0), 0);
	for (int mb = 0; mb < N; mb++) {
		char *got = member_xattr(fx, mb, "/d", "user.a", &len);
		assert_int_equal(len, 5);
		assert_string_equal(got, "value");
		g_free(got);
	}
	assert_int_equal(xattrs_get(fx->v, "/d", "user.a", NULL, 0), 5);
	assert_int_equal(xattrs_get(fx->v, "/d", "user.a", buf, 2), -ERANGE);
	assert_int_equal(xattrs_get(fx->v, "/d", "user.a", buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "value", 5);
	assert_int_equal(xattrs_set(fx->v, "/d", "user.a", "x", 1, XATTR_CREATE), -EEXIST);
	assert_int_equal(xattrs_set(fx->v, "/d", "user.b", "x", 1, XATTR_REPLACE), -ENODATA);
	int n = xattrs_list(fx->v, "/d", false, buf, sizeof(buf));
	assert_int_equal(n, (int)sizeof("user.a"));
	assert_true(listed(buf, n, "user.a"));
	assert_int_equal(xattrs_list(fx->v, "/d", false, NULL, 0), n);
	assert_int_equal(xattrs_list(fx->v, "/d", false, buf, 3), -ERANGE);
	assert_int_equal(xattrs_remove(fx->v, "/d", "user.a"), 0);
	for (int mb = 0; mb < N; mb++)
		g_free(member_xattr(fx, mb, "/d", "user.a", &len)), assert_int_equal(len, -1);
	assert_int_equal(xattrs_get(fx->v, "/d", "user.a", buf, sizeof(buf)), -ENODATA);
	assert_int_equal(xattrs_remove(fx->v, "/d", "user.a"), -ENODATA);
	assert_int_equal(xattrs_get(fx->v, "/nothing", "user.a", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(xattrs_set(fx->v, "/nothing", "user.a", "x", 1, 0), -ENOENT);
}

static void test_which_names_are_kept(void **state)
{
	fixture *fx = *state;
	char buf[512];

	mkdir_all(fx, "/d");
	assert_int_equal(xattrs_set(fx->v, "/d", "user.ecfs.layout", "x", 1, 0), -EPERM);
	assert_int_equal(xattrs_remove(fx->v, "/d", "user.ecfs.layout"), -EPERM);
	assert_int_equal(xattrs_set(fx->v, "/d", "other.name", "x", 1, 0), -EOPNOTSUPP);
	assert_int_equal(xattrs_set(fx->v, "/d", "system.nfs4_acl", "x", 1, 0), -EOPNOTSUPP);
	assert_int_equal(xattrs_get(fx->v, "/d", "other.name", buf, sizeof(buf)), -EOPNOTSUPP);
	/* trusted.* takes CAP_SYS_ADMIN on the member: the test runs as root */
	if (geteuid() != 0)
		fail_msg("this test sets trusted.* attributes: run it as root");
	assert_int_equal(xattrs_set(fx->v, "/d", "trusted.t", "1", 1, 0), 0);
	assert_int_equal(xattrs_set(fx->v, "/d", "security.ecfs_test", "2", 1, 0), 0);
	assert_int_equal(xattrs_set(fx->v, "/d", "user.u", "3", 1, 0), 0);
	/* placed on a member behind ecfs's back: never listed */
	char *p = member_path(&fx->mb, 0, "/d");
	assert_int_equal(lsetxattr(p, "user.ecfs.layout", "stored", 6, 0), 0);
	g_free(p);
	int n = xattrs_list(fx->v, "/d", true, buf, sizeof(buf));
	assert_true(n > 0);
	assert_true(listed(buf, n, "trusted.t"));
	assert_true(listed(buf, n, "security.ecfs_test"));
	assert_true(listed(buf, n, "user.u"));
	assert_false(listed(buf, n, "user.ecfs.layout"));
	n = xattrs_list(fx->v, "/d", false, buf, sizeof(buf));
	assert_false(listed(buf, n, "trusted.t"));
	assert_true(listed(buf, n, "security.ecfs_test"));
	assert_int_equal(xattrs_get(fx->v, "/d", "trusted.t", buf, sizeof(buf)), 1);
	assert_true(xattrs_name_kept("user.x") && xattrs_name_kept(XATTRS_ACL_ACCESS) &&
	            xattrs_name_kept("security.x") && xattrs_name_kept("trusted.x"));
	assert_false(xattrs_name_kept("user.ecfs.health") || xattrs_name_kept("system.x"));
}

/* A member that lost the object does not answer for it: the next does. */
static void test_read_from_a_member_that_has_it(void **state)
{
	fixture *fx = *state;
	char buf[64];

	mkdir_all(fx, "/d");
	assert_int_equal(xattrs_set(fx->v, "/d", "user.a", "kept", 4, 0), 0);
	char *p = member_path(&fx->mb, 0, "/d");
	assert_int_equal(rmdir(p), 0);
	g_free(p);
	assert_int_equal(xattrs_get(fx->v, "/d", "user.a", buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "kept", 4);
	int n = xattrs_list(fx->v, "/d", false, buf, sizeof(buf));
	assert_true(listed(buf, n, "user.a"));
	for (int mb = 0; mb < N; mb++)
		assert_true(volume_member_ok(fx->v, mb));
}

static void test_name_too_long(void **state)
{
	fixture *fx = *state;
	char path[600], buf[16];

	memset(path, 'n', sizeof(path));
	path[0] = '/';
	path[1 + NAME_MAX] = 0; /* the longest name: just absent */
	assert_int_equal(xattrs_get(fx->v, path, "user.a", buf, sizeof(buf)), -ENOENT);
	path[1 + NAME_MAX] = 'n';
	path[2 + NAME_MAX] = 0;
	assert_int_equal(xattrs_get(fx->v, path, "user.a", buf, sizeof(buf)), -ENAMETOOLONG);
	assert_int_equal(xattrs_set(fx->v, path, "user.a", "x", 1, 0), -ENAMETOOLONG);
	/* a long component anywhere in the path */
	memcpy(path + 2 + NAME_MAX, "/leaf", 6);
	assert_int_equal(xattrs_list(fx->v, path, false, buf, sizeof(buf)), -ENAMETOOLONG);
	const char *leaf;
	for (int mb = 0; mb < N; mb++) {
		assert_int_equal(volume_parent_fd(fx->v, mb, path, &leaf), -ENAMETOOLONG);
		assert_true(volume_member_ok(fx->v, mb));
	}
}

/* ---- file capabilities ---- */

static bool marker_on(fixture *fx, int mb, const char *file)
{
	char *p = g_strdup_printf("%s/.ecfs/%s", fx->mb.path[mb], file);
	struct stat st;
	bool on = lstat(p, &st) == 0;
	g_free(p);
	return on;
}

/* security.capability is asked for before every write: read from a
 * member only once one was set on the volume (the marker). */
static void test_capabilities(void **state)
{
	fixture *fx = *state;
	/* version 2, effective, CAP_NET_BIND_SERVICE permitted */
	const uint8_t cap[20] = { 0x01, 0, 0, 0x02, 0, 0x04 };
	uint8_t got[32];

	if (geteuid() != 0)
		fail_msg("this test sets file capabilities: run it as root");
	for (int mb = 0; mb < N; mb++)
		put_member_file(&fx->mb, mb, "/f", "");
	char *p0 = member_path(&fx->mb, 0, "/f");
	assert_int_equal(lsetxattr(p0, XATTRS_CAPABILITY, cap, sizeof(cap), 0), 0);
	/* set behind ecfs's back, on a volume without the marker: not seen */
	assert_int_equal(xattrs_get(fx->v, "/f", XATTRS_CAPABILITY, got, sizeof(got)), -ENODATA);
	assert_int_equal(lremovexattr(p0, XATTRS_CAPABILITY), 0);
	assert_int_equal(xattrs_set(fx->v, "/f", XATTRS_CAPABILITY, cap, sizeof(cap), 0), 0);
	for (int mb = 0; mb < N; mb++)
		assert_true(marker_on(fx, mb, XATTRS_CAPS_MARKER));
	assert_int_equal(xattrs_get(fx->v, "/f", XATTRS_CAPABILITY, got, sizeof(got)),
	                 (int)sizeof(cap));
	assert_memory_equal(got, cap, sizeof(cap));
	/* a member that lost the marker (rebuilt) gets it back at a mount */
	char *m0 = g_strdup_printf("%s/.ecfs/" XATTRS_CAPS_MARKER, fx->mb.path[0]);
	assert_int_equal(unlink(m0), 0);
	test_volume_reopen(fx);
	assert_int_equal(xattrs_get(fx->v, "/f", XATTRS_CAPABILITY, got, sizeof(got)),
	                 (int)sizeof(cap));
	assert_true(marker_on(fx, 0, XATTRS_CAPS_MARKER));
	assert_int_equal(xattrs_remove(fx->v, "/f", XATTRS_CAPABILITY), 0);
	assert_int_equal(xattrs_get(fx->v, "/f", XATTRS_CAPABILITY, got, sizeof(got)), -ENODATA);
	ssize_t len;
	g_free(member_xattr(fx, 1, "/f", XATTRS_CAPABILITY, &len));
	assert_int_equal(len, -1);
	g_free(m0);
	g_free(p0);
}

/* ---- POSIX ACLs ---- */

/* The xattr form of an ACL (linux/posix_acl_xattr.h): a version, then
 * entries of tag, permissions and id, in tag order. */
struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};
enum { USER_OBJ = 1, USER = 2, GROUP_OBJ = 4, GROUP = 8, MASK = 16, OTHER = 32 };
#define NO_ID 0xffffffffu

static size_t acl_value(uint8_t *out, const struct acl_entry *e, int n)
{
	uint32_t version = 2;
	memcpy(out, &version, 4);
	memcpy(out + 4, e, sizeof(*e) * (size_t)n);
	return 4 + sizeof(*e) * (size_t)n;
}

/* setfacl(1) with args on path, which must succeed. */
static void setfacl(const char *args, const char *path)
{
	char *cmd = g_strdup_printf("setfacl %s '%s'", args, path);
	assert_int_equal(system(cmd), 0);
	g_free(cmd);
}

static void test_acls(void **state)
{
	fixture *fx = *state;
	uint8_t acl[64], got[64];

	if (!xattrs_acl_supported(fx->v))
		fail_msg("the members' filesystem (%s) keeps no POSIX ACLs", fx->mb.root);
	mkdir_all(fx, "/d");
	mkdir_all(fx, "/plain");
	/* set behind ecfs's back, on a volume without the marker: not seen */
	char *d0 = member_path(&fx->mb, 0, "/d");
	setfacl("-d -m u:7:r", d0);
	assert_int_equal(xattrs_get(fx->v, "/d", XATTRS_ACL_DEFAULT, NULL, 0), -ENODATA);
	assert_int_equal(xattrs_create_mode(fx->v, "/d/f", 0666, 022), 0644);
	setfacl("-k", d0);
	g_free(d0);
	const struct acl_entry e[] = { { USER_OBJ, 7, NO_ID }, { USER, 6, 1234 },
	                               { GROUP_OBJ, 5, NO_ID }, { MASK, 7, NO_ID },
	                               { OTHER, 0, NO_ID } };
	size_t len = acl_value(acl, e, 5);
	/* An access ACL sets the permission bits on every member. */
	assert_false(marker_on(fx, 0, XATTRS_ACLS_MARKER));
	assert_int_equal(xattrs_set(fx->v, "/d", XATTRS_ACL_ACCESS, acl, len, 0), 0);
	for (int mb = 0; mb < N; mb++) {
		assert_int_equal(member_mode(fx, mb, "/d"), 0770);
		assert_true(marker_on(fx, mb, XATTRS_ACLS_MARKER));
	}
	assert_int_equal(xattrs_get(fx->v, "/d", XATTRS_ACL_ACCESS, got, sizeof(got)), (int)len);
	assert_memory_equal(got, acl, len);
	assert_int_equal(xattrs_get(fx->v, "/plain", XATTRS_ACL_ACCESS, got, sizeof(got)),
	                 -ENODATA);
	/* With a default ACL on the parent the umask is the ACL's business. */
	assert_int_equal(xattrs_create_mode(fx->v, "/d/f", 0666, 022), 0644);
	assert_int_equal(xattrs_set(fx->v, "/d", XATTRS_ACL_DEFAULT, acl, len, 0), 0);
	assert_int_equal(xattrs_create_mode(fx->v, "/d/f", 0666, 022), 0666);
	assert_int_equal(xattrs_create_mode(fx->v, "/plain/f", 0666, 022), 0644);
	assert_int_equal(xattrs_create_mode(fx->v, "/top", 0777, 027), 0750);
	assert_int_equal(xattrs_create_mode(fx->v, "/d/f", 0640, 0), 0640);
	char buf[256];
	int n = xattrs_list(fx->v, "/d", false, buf, sizeof(buf));
	assert_true(listed(buf, n, XATTRS_ACL_ACCESS));
	assert_true(listed(buf, n, XATTRS_ACL_DEFAULT));
	assert_int_equal(xattrs_remove(fx->v, "/d", XATTRS_ACL_DEFAULT), 0);
	assert_int_equal(xattrs_create_mode(fx->v, "/d/f", 0666, 022), 0644);
}

/* ---- the member side, for ecfs-fsck ---- */

static bool only_user(const char *name)
{
	return strncmp(name, "user.", 5) == 0;
}

static void test_member_read_and_write(void **state)
{
	fixture *fx = *state;
	mkdir_all(fx, "/d");
	char *p0 = member_path(&fx->mb, 0, "/d"), *p1 = member_path(&fx->mb, 1, "/d");
	if (geteuid() != 0)
		fail_msg("this test sets trusted.* attributes: run it as root");
	assert_int_equal(lsetxattr(p0, "user.b", "2", 1, 0), 0);
	assert_int_equal(lsetxattr(p0, "user.a", "1", 1, 0), 0);
	assert_int_equal(lsetxattr(p0, "trusted.keep", "t", 1, 0), 0);
	assert_int_equal(lsetxattr(p1, "user.extra", "x", 1, 0), 0);
	assert_int_equal(lsetxattr(p1, "trusted.other", "o", 1, 0), 0);

	char *d0 = member_path(&fx->mb, 0, "/"), *d1 = member_path(&fx->mb, 1, "/");
	int fd0 = open(d0, O_RDONLY | O_DIRECTORY), fd1 = open(d1, O_RDONLY | O_DIRECTORY);
	xattrs_stored want, have;
	xattrs_member_read(fd0, "d", &want);
	xattrs_member_read(fd1, "d", &have);
	assert_true(want.complete && have.complete);
	assert_int_equal(want.names->len, 3);
	assert_string_equal(want.names->pdata[0], "trusted.keep"); /* sorted */
	assert_string_equal(want.names->pdata[1], "user.a");
	assert_int_equal(xattrs_member_write(fx->v, 1, fd1, "d", &want, &have, only_user), 0);
	ssize_t len;
	g_free(member_xattr(fx, 1, "/d", "user.extra", &len));
	assert_int_equal(len, -1);
	char *v = member_xattr(fx, 1, "/d", "user.b", &len);
	assert_string_equal(v, "2");
	g_free(v);
	/* what `which` leaves out is left alone */
	g_free(member_xattr(fx, 1, "/d", "trusted.other", &len));
	assert_int_equal(len, 1);
	g_free(member_xattr(fx, 1, "/d", "trusted.keep", &len));
	assert_int_equal(len, -1);
	xattrs_stored_clear(&want);
	xattrs_stored_clear(&have);
	xattrs_member_read(fd0, "absent", &have);
	assert_true(have.complete);
	assert_int_equal(have.names->len, 0);
	xattrs_stored_clear(&have);
	close(fd0);
	close(fd1);
	g_free(d0);
	g_free(d1);
	g_free(p0);
	g_free(p1);
}

/* A list of names as a member returns it is walked within its length: a
 * last name without its NUL is no name, never read past the list. */
static void test_list_walk_stays_inside(void **state)
{
	static const char bytes[] = { 'u', 's', 'e', 'r', '.', 'a', 0, 'u', 's', 'e', 'r', '.', 'b' };
	char *list = g_memdup2(bytes, sizeof bytes); /* exactly its length, no NUL after */
	size_t at = 0;

	(void)state;
	assert_string_equal(xattrs_list_next(list, sizeof bytes, &at), "user.a");
	assert_null(xattrs_list_next(list, sizeof bytes, &at));
	assert_null(xattrs_list_next(list, sizeof bytes, &at));
	at = 0;
	assert_null(xattrs_list_next(list, 0, &at));
	g_free(list);
}

#define T(fn) \
	cmocka_unit_test_prestate_setup_teardown(fn, test_volume_setup, test_volume_teardown, \
	                                         (void *)&opts)

int main(void)
{
	ecfs_log_init("test_xattrs", false, false);
	const struct CMUnitTest tests[] = {
		T(test_set_get_list_remove),
		T(test_which_names_are_kept),
		T(test_read_from_a_member_that_has_it),
		T(test_name_too_long),
		T(test_capabilities),
		T(test_acls),
		T(test_member_read_and_write),
		cmocka_unit_test(test_list_walk_stays_inside),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
