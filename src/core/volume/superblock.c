/* SPDX-License-Identifier: MIT */
/*
 * Superblock parsing and writing with GKeyFile.  Parsing is strict: a
 * missing key, a value out of range or an unknown version is an error with
 * a sentence saying which, never a guess, because a wrong geometry would
 * decode garbage.
 */
#include "superblock.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "ec.h"
#include "memberops.h"

void uuid_format(const uint8_t u[16], char out[37])
{
	snprintf(out, 37,
	         "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
	         u[12], u[13], u[14], u[15]);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex_decode(const char *s, uint8_t *out, size_t len, bool dashes)
{
	for (size_t i = 0; i < len; i++) {
		if (dashes && *s == '-')
			s++;
		int hi = hexval(s[0]), lo = hi < 0 ? -1 : hexval(s[1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return *s ? -EINVAL : 0;
}

int uuid_parse(const char *s, uint8_t uuid[16])
{
	return strlen(s) == 36 ? hex_decode(s, uuid, 16, true) : -EINVAL;
}

static int get_int(GKeyFile *kf, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   char **why)
{
	GError *err = NULL;
	char *s = g_key_file_get_value(kf, SUPERBLOCK_GROUP, key, &err);
	char *end;

	if (!s) {
		*why = g_strdup_printf("superblock lacks key '%s'", key);
		g_clear_error(&err);
		return -EINVAL;
	}
	errno = 0;
	long long v = strtoll(s, &end, 10);
	bool bad = errno || end == s || *end || v < lo || v > hi;
	if (bad)
		*why = g_strdup_printf("superblock key '%s' has bad value '%s'", key, s);
	g_free(s);
	*out = v;
	return bad ? -EINVAL : 0;
}

int superblock_parse(const char *text, size_t len, superblock *sb, char **why)
{
	GKeyFile *kf = g_key_file_new();
	GError *err = NULL;
	int64_t v;
	char *s = NULL;
	int rc = -EINVAL;

	*why = NULL;
	memset(sb, 0, sizeof(*sb));
	if (!g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, &err)) {
		*why = g_strdup_printf("superblock is not a valid key file: %s", err->message);
		goto out;
	}
	if (get_int(kf, "format", 1, INT32_MAX, &v, why) < 0)
		goto out;
	sb->version = (int)v;
	if (sb->version > SUPERBLOCK_VERSION) {
		*why = g_strdup_printf("superblock format version %d is not supported "
		                       "(this ecfs reads versions 1 to %d)", sb->version,
		                       SUPERBLOCK_VERSION);
		rc = -EPROTO;
		goto out;
	}
	s = g_key_file_get_string(kf, SUPERBLOCK_GROUP, "uuid", NULL);
	if (!s || uuid_parse(s, sb->uuid) < 0) {
		*why = g_strdup("superblock has no valid 'uuid'");
		goto out;
	}
	g_free(s);
	s = NULL;
	if (get_int(kf, "n", 2, 64, &v, why) < 0)
		goto out;
	sb->n = (int)v;
	if (get_int(kf, "k", 1, 63, &v, why) < 0)
		goto out;
	sb->k = (int)v;
	if (get_int(kf, "m", 1, 63, &v, why) < 0)
		goto out;
	sb->m = (int)v;
	if (sb->k + sb->m != sb->n) {
		*why = g_strdup_printf("superblock says k=%d m=%d but n=%d", sb->k, sb->m, sb->n);
		goto out;
	}
	if (get_int(kf, "index", 0, sb->n - 1, &v, why) < 0)
		goto out;
	sb->index = (int)v;
	s = g_key_file_get_string(kf, SUPERBLOCK_GROUP, "code", NULL);
	sb->code = s ? ec_kind_from_name(s) : 0;
	if (!sb->code) {
		*why = g_strdup_printf("superblock names unknown code '%s'", s ? s : "");
		goto out;
	}
	g_free(s);
	s = NULL;
	if (get_int(kf, "w", 1, 64, &v, why) < 0)
		goto out;
	sb->w = (int)v;
	if (get_int(kf, "packet_size", 0, 1 << 30, &v, why) < 0)
		goto out;
	sb->packet_size = (uint64_t)v;
	if (get_int(kf, "strip_size", 1, 1 << 30, &v, why) < 0)
		goto out;
	sb->strip_size = (uint64_t)v;
	s = g_key_file_get_string(kf, SUPERBLOCK_GROUP, "checksum", NULL);
	sb->checksum = s ? checksum_alg_from_name(s) : 0;
	if (!sb->checksum) {
		*why = g_strdup_printf("superblock names unknown checksum '%s'", s ? s : "");
		goto out;
	}
	g_free(s);
	s = g_key_file_get_string(kf, SUPERBLOCK_GROUP, "checksum_key", NULL);
	if (!s || strlen(s) != 2 * CHECKSUM_KEY_SIZE ||
	    hex_decode(s, sb->key, CHECKSUM_KEY_SIZE, false) < 0) {
		*why = g_strdup("superblock has no valid 'checksum_key'");
		goto out;
	}
	if (get_int(kf, "created", 0, INT64_MAX, &v, why) < 0)
		goto out;
	sb->created = v;
	rc = 0;
out:
	g_free(s);
	g_clear_error(&err);
	g_key_file_free(kf);
	return rc;
}

static void note(GString *s, bool differs, const char *what)
{
	if (differs)
		g_string_append_printf(s, "%s%s", s->len ? ", " : "", what);
}

char *superblock_differs(const superblock *a, const superblock *b)
{
	GString *s = g_string_new(NULL);

	note(s, memcmp(a->uuid, b->uuid, 16) != 0, "volume uuid");
	note(s, a->version != b->version, "format version");
	note(s, a->n != b->n || a->k != b->k || a->m != b->m, "geometry");
	note(s, a->code != b->code || a->w != b->w || a->packet_size != b->packet_size ||
	     a->strip_size != b->strip_size, "code defaults");
	note(s, a->checksum != b->checksum, "checksum algorithm");
	note(s, memcmp(a->key, b->key, CHECKSUM_KEY_SIZE) != 0, "checksum key");
	note(s, a->created != b->created, "creation time");
	if (!s->len) {
		g_string_free(s, TRUE);
		return NULL;
	}
	return g_string_free(s, FALSE);
}

bool superblock_same(const superblock *a, const superblock *b)
{
	char *diff = superblock_differs(a, b);
	g_free(diff);
	return !diff;
}

int superblock_majority(const superblock *const *sb, int n)
{
	int answered = 0;

	for (int i = 0; i < n; i++)
		answered += sb[i] != NULL;
	for (int i = 0; i < n; i++) {
		int votes = 0;
		for (int j = 0; j < n && sb[i]; j++)
			votes += sb[j] && superblock_same(sb[i], sb[j]);
		if (2 * votes > answered)
			return i;
	}
	return -1;
}

char *superblock_format(const superblock *sb)
{
	GKeyFile *kf = g_key_file_new();
	char uuid[37], key[2 * CHECKSUM_KEY_SIZE + 1];
	char *text;

	uuid_format(sb->uuid, uuid);
	for (int i = 0; i < CHECKSUM_KEY_SIZE; i++)
		snprintf(key + 2 * i, 3, "%02x", sb->key[i]);
	g_key_file_set_comment(kf, NULL, NULL,
	                       " ecfs member superblock: see docs/FORMAT.md. Do not edit.", NULL);
	g_key_file_set_integer(kf, SUPERBLOCK_GROUP, "format", sb->version);
	g_key_file_set_string(kf, SUPERBLOCK_GROUP, "uuid", uuid);
	g_key_file_set_integer(kf, SUPERBLOCK_GROUP, "index", sb->index);
	g_key_file_set_integer(kf, SUPERBLOCK_GROUP, "n", sb->n);
	g_key_file_set_integer(kf, SUPERBLOCK_GROUP, "k", sb->k);
	g_key_file_set_integer(kf, SUPERBLOCK_GROUP, "m", sb->m);
	g_key_file_set_string(kf, SUPERBLOCK_GROUP, "code", ec_kind_name(sb->code));
	g_key_file_set_integer(kf, SUPERBLOCK_GROUP, "w", sb->w);
	g_key_file_set_uint64(kf, SUPERBLOCK_GROUP, "packet_size", sb->packet_size);
	g_key_file_set_uint64(kf, SUPERBLOCK_GROUP, "strip_size", sb->strip_size);
	g_key_file_set_string(kf, SUPERBLOCK_GROUP, "checksum", checksum_alg_name(sb->checksum));
	g_key_file_set_string(kf, SUPERBLOCK_GROUP, "checksum_key", key);
	g_key_file_set_int64(kf, SUPERBLOCK_GROUP, "created", sb->created);
	text = g_key_file_to_data(kf, NULL, NULL);
	g_key_file_free(kf);
	return text;
}

int superblock_read(int metafd, superblock *sb, char **why)
{
	char buf[8192];
	ssize_t len;
	int fd = openat(metafd, SUPERBLOCK_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;
		*why = g_strdup_printf("cannot open superblock: %s", g_strerror(e));
		return -e;
	}
	len = read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	close(fd);
	if (len < 0) {
		*why = g_strdup_printf("cannot read superblock: %s", g_strerror(e));
		return -e;
	}
	if (len == 0) {
		*why = g_strdup("superblock is empty");
		return -EINVAL;
	}
	buf[len] = 0;
	if (strlen(buf) != (size_t)len) {
		*why = g_strdup("superblock contains binary garbage");
		return -EINVAL;
	}
	return superblock_parse(buf, (size_t)len, sb, why);
}

int superblock_write(volume *v, int idx, int metafd, const superblock *sb)
{
	char *text = superblock_format(sb);
	size_t len = strlen(text);
	int rc = 0;
	int fd = mop_openat(v, idx, metafd, SUPERBLOCK_FILE ".tmp",
	                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0) {
		rc = fd;
		goto out;
	}
	ssize_t w = mop_pwrite(v, idx, fd, text, len, 0);
	if (w != (ssize_t)len)
		rc = w < 0 ? (int)w : -EIO;
	else
		rc = mop_fsync(v, idx, fd, false);
	close(fd);
	if (rc == 0)
		rc = mop_renameat2(v, idx, metafd, SUPERBLOCK_FILE ".tmp", metafd, SUPERBLOCK_FILE, 0);
	if (rc == 0)
		rc = mop_fsync(v, idx, metafd, false);
out:
	g_free(text);
	return rc;
}
