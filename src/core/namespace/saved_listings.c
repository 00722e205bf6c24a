/* SPDX-License-Identifier: MIT */
#include "saved_listings.h"

#include <errno.h>
#include <string.h>

#include <glib.h>

#include "checksum.h"
#include "log.h"
#include "volume_internal.h"

#define MAGIC "ECFSLST1"
#define HEADER_SIZE 48
#define SUM_SIZE 32
/* A file larger than this is no file of ours (DIRNAMES_MAX names of 255
 * bytes fit in it). */
#define FILE_MAX (96u << 20)
#define STAMP_FIELDS 7
#define NAME_MAX_BYTES 255
/* Where a record keeps how many mounts since passed it on unused: after
 * its directory and member mask. */
#define UNUSED_AT 16

struct saved_listings {
	uint8_t uuid[16];
	uint32_t n;
	uint64_t dirs;
	uint64_t names;     /* in all the records */
	GByteArray *body;   /* the records */
	GHashTable *index;  /* dir -> offset of its record in body + 1 */
};

/* ---- little-endian fields ---- */

static void put_le(GByteArray *b, uint64_t x, int bytes)
{
	uint8_t buf[8];
	for (int i = 0; i < bytes; i++)
		buf[i] = (uint8_t)(x >> (8 * i));
	g_byte_array_append(b, buf, (guint)bytes);
}

struct cursor {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static uint64_t get_le(struct cursor *c, int bytes)
{
	uint64_t x = 0;
	if (c->left < (size_t)bytes) {
		c->bad = true;
		c->left = 0;
		return 0;
	}
	for (int i = 0; i < bytes; i++)
		x |= (uint64_t)c->p[i] << (8 * i);
	c->p += bytes;
	c->left -= (size_t)bytes;
	return x;
}

static const uint8_t *get_bytes(struct cursor *c, size_t len)
{
	if (c->left < len) {
		c->bad = true;
		c->left = 0;
		return NULL;
	}
	const uint8_t *at = c->p;
	c->p += len;
	c->left -= len;
	return at;
}

/* ---- a set being made ---- */

saved_listings *saved_listings_new(const uint8_t uuid[16], int n)
{
	saved_listings *s = g_new0(saved_listings, 1);
	memcpy(s->uuid, uuid, sizeof s->uuid);
	s->n = (uint32_t)n;
	s->body = g_byte_array_new();
	s->index = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
	return s;
}

saved_listings *saved_listings_for(volume *v)
{
	return saved_listings_new(volume_uuid(v), volume_n(v));
}

void saved_listings_add(saved_listings *s, const saved_dir *d)
{
	uint64_t members = d->members & (s->n < 64 ? (1ull << s->n) - 1 : ~0ull);
	if (!members || g_hash_table_contains(s->index, &d->dir))
		return;
	g_hash_table_replace(s->index, g_memdup2(&d->dir, sizeof d->dir),
	                     GSIZE_TO_POINTER(s->body->len + 1));
	put_le(s->body, d->dir, 8);
	put_le(s->body, members, 8);
	put_le(s->body, 0, 4); /* mounts that passed it on unused */
	for (int i = 0; i < SAVED_MEMBERS_MAX; i++) {
		if (!(members >> i & 1))
			continue;
		const dirstamp *t = &d->stamps[i];
		uint64_t f[STAMP_FIELDS] = { t->ino, t->size, t->nlink,
			                     (uint64_t)t->ctime_sec, (uint64_t)t->ctime_nsec,
			                     (uint64_t)t->mtime_sec, (uint64_t)t->mtime_nsec };
		for (int j = 0; j < STAMP_FIELDS; j++)
			put_le(s->body, f[j], 8);
	}
	put_le(s->body, listing_len(d->names), 4);
	for (guint i = 0; i < listing_len(d->names); i++) {
		const struct listing_entry *e = listing_at(d->names, i);
		size_t len = strlen(e->name);
		put_le(s->body, e->type, 1);
		put_le(s->body, len, 2);
		g_byte_array_append(s->body, (const guint8 *)e->name, (guint)len);
	}
	s->dirs++;
	s->names += listing_len(d->names);
}

static int sum_of(const uint8_t *bytes, size_t len, uint8_t out[CHECKSUM_MAX])
{
	checksum *c = checksum_new(CHECKSUM_SHA256, NULL);
	if (!c)
		return -EIO;
	struct iovec iov = { (void *)bytes, len };
	int rc = checksum_compute(c, &iov, 1, out);
	checksum_free(c);
	return rc;
}

uint8_t *saved_listings_encode(const saved_listings *s, size_t *len)
{
	GByteArray *b = g_byte_array_sized_new(HEADER_SIZE + s->body->len + SUM_SIZE);
	g_byte_array_append(b, (const guint8 *)MAGIC, 8);
	g_byte_array_append(b, s->uuid, sizeof s->uuid);
	put_le(b, s->n, 4);
	put_le(b, 0, 4);
	put_le(b, s->dirs, 8);
	put_le(b, s->body->len, 8);
	g_byte_array_append(b, s->body->data, s->body->len);
	uint8_t sum[CHECKSUM_MAX];
	if (sum_of(b->data, b->len, sum) < 0) {
		g_byte_array_free(b, TRUE);
		return NULL;
	}
	g_byte_array_append(b, sum, SUM_SIZE);
	*len = b->len;
	return g_byte_array_free(b, FALSE);
}

/* ---- reading ---- */

/* Skips one record at c, checking every field; its dir in *dir, how
 * many names it holds in *names. */
static bool skip_record(struct cursor *c, uint32_t n, uint64_t *dir, uint64_t *names)
{
	*dir = get_le(c, 8);
	uint64_t members = get_le(c, 8);
	get_le(c, 4);
	if (c->bad || !members || (n < 64 && members >> n))
		return false;
	get_bytes(c, (size_t)__builtin_popcountll(members) * STAMP_FIELDS * 8);
	uint64_t count = get_le(c, 4);
	/* every name takes 4 bytes at least */
	if (c->bad || count > c->left / 4)
		return false;
	*names = count;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t type = get_le(c, 1), len = get_le(c, 2);
		const uint8_t *name = get_bytes(c, len);
		if (c->bad || type > 15 || len == 0 || len > NAME_MAX_BYTES ||
		    memchr(name, '/', len) || memchr(name, '\0', len))
			return false;
	}
	return true;
}

saved_listings *saved_listings_decode(const uint8_t *bytes, size_t len,
                                      const uint8_t uuid[16], int n, char **why)
{
	*why = NULL;
	if (len < HEADER_SIZE + SUM_SIZE || memcmp(bytes, MAGIC, 8)) {
		*why = g_strdup("not a file of saved listings");
		return NULL;
	}
	uint8_t sum[CHECKSUM_MAX];
	if (sum_of(bytes, len - SUM_SIZE, sum) < 0 ||
	    memcmp(sum, bytes + len - SUM_SIZE, SUM_SIZE)) {
		*why = g_strdup("checksum mismatch");
		return NULL;
	}
	struct cursor c = { bytes + 8, len - 8 - SUM_SIZE, false };
	const uint8_t *id = get_bytes(&c, 16);
	uint32_t members = (uint32_t)get_le(&c, 4);
	get_le(&c, 4);
	uint64_t dirs = get_le(&c, 8), body = get_le(&c, 8);
	if (memcmp(id, uuid, 16) || members != (uint32_t)n) {
		*why = g_strdup("of another volume");
		return NULL;
	}
	if (body != c.left) {
		*why = g_strdup("its length does not match its header");
		return NULL;
	}
	saved_listings *s = saved_listings_new(uuid, n);
	g_byte_array_append(s->body, c.p, (guint)c.left);
	struct cursor r = { s->body->data, s->body->len, false };
	for (uint64_t i = 0; i < dirs; i++) {
		size_t at = s->body->len - r.left;
		uint64_t dir, names = 0;
		if (!skip_record(&r, s->n, &dir, &names)) {
			*why = g_strdup_printf("record %" G_GUINT64_FORMAT " is damaged", i);
			break;
		}
		g_hash_table_replace(s->index, g_memdup2(&dir, sizeof dir), GSIZE_TO_POINTER(at + 1));
		s->names += names;
	}
	if (!*why && r.left)
		*why = g_strdup("bytes past its last record");
	if (*why) {
		saved_listings_free(s);
		return NULL;
	}
	s->dirs = dirs;
	return s;
}

unsigned saved_listings_count(const saved_listings *s)
{
	return g_hash_table_size(s->index);
}

void saved_listings_carry(saved_listings *to, const saved_listings *from, uint64_t max_names)
{
	GHashTableIter it;
	gpointer key, at;
	g_hash_table_iter_init(&it, from->index);
	while (g_hash_table_iter_next(&it, &key, &at)) {
		size_t off = GPOINTER_TO_SIZE(at) - 1;
		struct cursor c = { from->body->data + off, from->body->len - off, false };
		uint64_t dir, names = 0;
		skip_record(&c, from->n, &dir, &names); /* checked when read */
		struct cursor u = { from->body->data + off + UNUSED_AT, 4, false };
		uint64_t unused = get_le(&u, 4) + 1;
		if (unused > SAVED_UNUSED_MAX || g_hash_table_contains(to->index, &dir) ||
		    to->names + names > max_names)
			continue;
		size_t start = to->body->len;
		g_hash_table_replace(to->index, g_memdup2(&dir, sizeof dir),
		                     GSIZE_TO_POINTER(start + 1));
		g_byte_array_append(to->body, from->body->data + off,
		                    (guint)(from->body->len - off - c.left));
		for (int i = 0; i < 4; i++)
			to->body->data[start + UNUSED_AT + i] = (uint8_t)(unused >> (8 * i));
		to->dirs++;
		to->names += names;
	}
}

bool saved_listings_take(saved_listings *s, uint64_t dir, saved_dir *d)
{
	gpointer at = g_hash_table_lookup(s->index, &dir);
	if (!at)
		return false;
	g_hash_table_remove(s->index, &dir);
	/* decode checked every field of the record */
	size_t off = GPOINTER_TO_SIZE(at) - 1;
	struct cursor c = { s->body->data + off, s->body->len - off, false };
	memset(d, 0, sizeof *d);
	d->dir = get_le(&c, 8);
	d->members = get_le(&c, 8);
	get_le(&c, 4);
	for (int i = 0; i < SAVED_MEMBERS_MAX; i++) {
		if (!(d->members >> i & 1))
			continue;
		uint64_t f[STAMP_FIELDS];
		for (int j = 0; j < STAMP_FIELDS; j++)
			f[j] = get_le(&c, 8);
		d->stamps[i] = (dirstamp){ f[0], f[1], f[2], (int64_t)f[3], (int64_t)f[4],
			                   (int64_t)f[5], (int64_t)f[6] };
	}
	guint count = (guint)get_le(&c, 4);
	struct cursor names = c;
	size_t bytes = 0;
	for (guint i = 0; i < count; i++) {
		get_le(&c, 1);
		size_t len = get_le(&c, 2);
		get_bytes(&c, len);
		bytes += len + 1;
	}
	d->names = listing_new(count, bytes);
	char name[NAME_MAX_BYTES + 1];
	for (guint i = 0; i < count; i++) {
		unsigned char type = (unsigned char)get_le(&names, 1);
		size_t len = get_le(&names, 2);
		memcpy(name, get_bytes(&names, len), len);
		name[len] = '\0';
		listing_append(d->names, name, type);
	}
	return true;
}

void saved_listings_free(saved_listings *s)
{
	if (!s)
		return;
	g_byte_array_free(s->body, TRUE);
	g_hash_table_destroy(s->index);
	g_free(s);
}

/* ---- on the members ---- */

int saved_listings_write(volume *v, const saved_listings *s)
{
	size_t len;
	uint8_t *bytes = saved_listings_encode(s, &len);
	int took = 0;
	for (int mb = 0; bytes && mb < volume_n(v); mb++) {
		if (!volume_member_ok(v, mb))
			continue;
		/* No sync: a file cut short by a power loss is refused by its sum. */
		int rc = volume_metafile_put(v, mb, SAVED_LISTINGS_FILE, bytes, len, false);
		if (rc < 0)
			ecfs_log(LOG_WARNING, "member %d: listings not saved: %s", mb, g_strerror(-rc));
		else
			took++;
	}
	g_free(bytes);
	return took;
}

saved_listings *saved_listings_read(volume *v)
{
	for (int mb = 0; mb < volume_n(v); mb++) {
		if (!volume_member_ok(v, mb))
			continue;
		uint8_t *read;
		size_t len;
		int rc = volume_metafile_get(v, mb, SAVED_LISTINGS_FILE, FILE_MAX, &read, &len);
		char *why = NULL;
		saved_listings *s = NULL;
		if (rc == 0)
			s = saved_listings_decode(read, len, volume_uuid(v), volume_n(v), &why);
		else if (rc == -EINVAL)
			why = g_strdup("not a regular file");
		else if (rc == -EFBIG)
			why = g_strdup("larger than any file of saved listings");
		else if (rc != -ENOENT)
			why = g_strdup(g_strerror(-rc));
		g_free(read);
		if (why)
			ecfs_log(LOG_WARNING, "member %d: saved listings refused (%s); its "
			         "directories are listed from the members", mb, why);
		g_free(why);
		if (s)
			return s;
	}
	return NULL;
}
