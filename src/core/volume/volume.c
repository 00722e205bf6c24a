/* SPDX-License-Identifier: MIT */
/*
 * The volume: probing and placing the member directories, creating a new
 * volume, the per-member lock, member health, path resolution beneath a
 * member root, and the caches shared by every open file (codes, checksum
 * objects, member workers, the open-file table).
 *
 * Members are probed first and judged together: the superblocks say which
 * volume each belongs to and where it goes, an empty directory among
 * formatted members is a replaced disk, an unreadable one is failed, and
 * the volume opens only if no more than m members are failed.
 */
#include "volume.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <glib.h>
#include <openssl/rand.h>

#include "checksum.h"
#include "dirstamps.h"
#include "fault.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "mounts.h"
#include "record.h"
#include "root_watch.h"
#include "superblock.h"
#include "volume_internal.h"

#define LOCK_FILE "lock"
/* Present while the online heal rebuilds the member: an unmount cuts the
 * rebuild short, and the next mount takes it up again. */
#define HEAL_FILE "heal"
#define DEFAULT_STRIP_SIZE (64 * 1024)
#define DEFAULT_PACKET_SIZE 2048

typedef struct member {
	char *path;
	int rootfd, metafd, lockfd;
	int logfd;       /* the intent log held open (volume_hold_log_fd), -1 if none */
	dev_t dev;
	ino_t ino;
	bool failed;
	char *why;
	bool warned_strip;
	bool warned_full;  /* its first ENOSPC or EDQUOT was logged */
	bool warned_unmounted; /* the heal said it will not take it */
	mount_info mi;
	uint64_t strip_failures;
	bool root_lost;  /* failed because its directory went away (heal may revive it) */
	bool healing;    /* back in service, being rebuilt by the online heal */
	bool locked;     /* its lock is this process's (lock_member) */
	bool left_open;  /* its lock file held the text of an open that never closed */
} member;

struct volume {
	mop_state mops;        /* first: what the member operations see of us */
	void (*refresh)(const char *dir); /* volume_set_refresh */
	int n, k, m;
	int format;            /* the superblock's: the version of the chunks */
	member *mem;
	uint8_t uuid[16];
	uint8_t key[CHECKSUM_KEY_SIZE];
	volume_options defaults;
	char *checksum_name;
	bool read_only;
	bool journals_none;    /* journal_census: no member holds a journal */
	pthread_mutex_t lock;       /* member health; order: before dirstamps', log_lock */
	pthread_mutex_t cache_lock; /* codes and checksums; order: a leaf */
	GHashTable *codes;     /* "kind:k:m:w:packet" -> ec_code* */
	checksum *sums[8];
	pthread_mutex_t files_lock; /* files, ecfile.refs; after heal's, before cache_lock */
	GHashTable *files;     /* file id -> ecfile* */
	memberio *mio;
	space *room;           /* the members' free space and reserves */
	size_cache *sizes;     /* closed files' sizes, for stat */
	root_watch *watch;     /* members whose roots are known unchanged */
	int64_t roots_checked; /* monotonic seconds of the last root check */
	uint64_t changes_at_open; /* mops.made once the locks were written */
	uint64_t decoded;      /* atomics */
	uint64_t hedged;
	uint64_t listed_saved;
	uint64_t strip_failures;
	uint64_t strips_healed;
	GArray *old_fds;       /* replaced member fds (struct old_fd), closed at the end */
	char *(*health_hook)(void *); /* extra health lines (the online heal) */
	void *health_arg;
	void (*left_out_hook)(void *, const char *, const uint8_t *, uint64_t);
	void *left_out_arg;           /* the online heal's: files to catch up */
	int xattr_marks[2];    /* xattrs.c: what its markers say (atomic) */
	bool names_unsettled;  /* volume_settled.c */
};

/* A member fd replaced while mounted (keep_old_fd). */
struct old_fd {
	int idx, fd;
};

_Static_assert(offsetof(struct volume, mops) == 0, "memberops.c finds mop_state at a volume");

static struct fault_rules *fault_setup(void);

/* ---- probing members ---- */

/* P_UNMOUNTED: not a mount point where the others are (judge_mounts). */
enum probe_state { P_OK, P_EMPTY, P_MISSING, P_BROKEN, P_FOREIGN, P_UNMOUNTED };

typedef struct probe {
	const char *path;
	int rootfd, metafd;
	enum probe_state state;
	int err;
	superblock sb;
	char *why;
	int slot;
	mount_info mi;
} probe;

static gint by_name(gconstpointer a, gconstpointer b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What a member root holds but for the names reserved there (the
 * lost+found of a fresh filesystem is no content): the count of entries,
 * and in *found (g_malloc'd, if any) a sentence naming the first few in
 * order.  -1 if the directory cannot be read. */
static int root_content(int fd, char **found)
{
	int dup_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	struct dirent *e;

	*found = NULL;
	if (!d) {
		int err = errno;
		if (dup_fd >= 0)
			close(dup_fd);
		g_ptr_array_free(names, TRUE);
		errno = err;
		return -1;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    !volume_root_name_reserved(e->d_name))
			g_ptr_array_add(names, g_strdup(e->d_name));
	closedir(d);
	int count = (int)names->len;
	if (count) {
		GString *s = g_string_new(NULL);
		g_ptr_array_sort(names, by_name);
		g_string_printf(s, "%d entr%s: ", count, count == 1 ? "y" : "ies");
		for (int i = 0; i < count && i < 3; i++)
			g_string_append_printf(s, "%s%s", i ? ", " : "", (char *)names->pdata[i]);
		g_string_append(s, count > 3 ? ", ..." : "");
		*found = g_string_free(s, FALSE);
	}
	g_ptr_array_free(names, TRUE);
	return count;
}

static void probe_member(probe *p)
{
	p->metafd = -1;
	p->slot = -1;
	p->rootfd = open(p->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->rootfd < 0) {
		p->state = P_MISSING;
		p->err = errno;
		p->why = g_strdup_printf("cannot open: %s", g_strerror(errno));
		return;
	}
	p->mi = mount_info_of_root(p->rootfd);
	p->metafd = openat(p->rootfd, ECFS_META_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p->metafd < 0) {
		bool absent = errno == ENOENT;
		int count = absent ? root_content(p->rootfd, &p->why) : -1;
		if (count < 0) {
			p->state = P_BROKEN;
			p->why = g_strdup_printf("cannot %s: %s", absent ? "list it"
			                         : "open " ECFS_META_DIR, g_strerror(errno));
		} else if (count == 0) {
			p->state = P_EMPTY;
			p->why = g_strdup("empty: replaced disk, needs rebuild");
		} else {
			p->state = P_FOREIGN; /* why: what it holds */
		}
		return;
	}
	p->err = -superblock_read(p->metafd, &p->sb, &p->why);
	p->state = p->err ? P_BROKEN : P_OK;
}

static void probe_free(probe *p)
{
	if (p->rootfd >= 0)
		close(p->rootfd);
	if (p->metafd >= 0)
		close(p->metafd);
	g_free(p->why);
}

/* ---- option defaults ---- */

/* The code's own w for k and m (libec's rule); 8 when none works, so that
 * the check of the defaults says why. */
static int default_w(ec_kind kind, int k, int m)
{
	int w = ec_kind_default_w(kind, k, m);

	return w > 0 ? w : 8;
}

/* The refusal of code parameters libec does not accept, g_malloc'd. */
static char *invalid_code_message(const ec_params *p)
{
	return g_strdup_printf("code %s with k=%d m=%d w=%d packet_size=%zu is not valid",
	                       ec_kind_name(p->kind), p->k, p->m, p->w, p->packet_size);
}

/* A strip size must be a multiple of the code's block alignment: one the
 * user gave is refused, a defaulted one is rounded up. */
static int fit_strip(size_t *strip_size, size_t align, bool strip_given, ec_kind kind,
                     char **message)
{
	if (*strip_size % align == 0)
		return 0;
	if (strip_given) {
		*message = g_strdup_printf("strip_size=%zu is not a multiple of %zu, the block "
		                           "alignment of code %s", *strip_size, align,
		                           ec_kind_name(kind));
		return -EINVAL;
	}
	*strip_size = (*strip_size + align - 1) / align * align;
	return 0;
}

/* Checks that files can be created with defaults d (creating the code) and
 * rounds a defaulted strip size up to the code's alignment. */
static int check_defaults(volume *v, volume_options *d, bool strip_given, char **message)
{
	ec_params p = { .kind = d->code, .k = v->k, .m = v->m, .w = d->w,
	                .packet_size = d->packet_size };
	const ec_code *code = volume_code(v, &p);

	if (!code) {
		*message = invalid_code_message(&p);
		return -EINVAL;
	}
	int rc = fit_strip(&d->strip_size, ec_block_align(code), strip_given, d->code, message);
	if (rc < 0)
		return rc;
	if (!checksum_alg_from_name(d->checksum) ||
	    !volume_checksum(v, checksum_alg_from_name(d->checksum))) {
		*message = g_strdup_printf("unknown or unavailable checksum '%s' (choose sha256, "
		                           "blake2b, blake2s, gmac or poly1305)", d->checksum);
		return -EINVAL;
	}
	return 0;
}

/* Mount options over the superblock's defaults. */
static int set_defaults(volume *v, const superblock *sb, const volume_options *o,
                        char **message)
{
	volume_options *d = &v->defaults;

	d->k = v->k;
	d->m = v->m;
	d->code = o->code ? o->code : (ec_kind)sb->code;
	if (o->w)
		d->w = o->w;
	else if (d->code == (ec_kind)sb->code)
		d->w = sb->w;
	else
		d->w = default_w(d->code, v->k, v->m);
	d->packet_size = o->packet_size ? o->packet_size
	                 : d->code == (ec_kind)sb->code ? sb->packet_size
	                 : ec_kind_is_bitmatrix(d->code) ? DEFAULT_PACKET_SIZE : 0;
	if (!ec_kind_is_bitmatrix(d->code))
		d->packet_size = 0;
	else if (!d->packet_size)
		d->packet_size = DEFAULT_PACKET_SIZE;
	d->strip_size = o->strip_size ? o->strip_size : sb->strip_size;
	v->checksum_name = g_strdup(o->checksum ? o->checksum : checksum_alg_name(sb->checksum));
	d->checksum = v->checksum_name;
	d->read_only = o->read_only;
	d->no_read_around = o->no_read_around;
	d->no_hedge = o->no_hedge;
	d->write_quorum = o->write_quorum == v->n ? 0 : o->write_quorum;
	if (o->write_quorum && (o->write_quorum <= v->k || o->write_quorum > v->n)) {
		*message = g_strdup_printf("write_quorum=%d: give all or a number of members "
		                           "from k+1 = %d to n = %d", o->write_quorum,
		                           v->k + 1, v->n);
		return -EINVAL;
	}
	return check_defaults(v, d, o->strip_size != 0, message);
}

/* ---- creating a volume ---- */

static int create_volume(probe *pr, int n, const volume_options *o, superblock *sb,
                         char **message)
{
	if (o->read_only) {
		*message = g_strdup("all members are empty and the mount is read-only: "
		                    "nothing to open");
		return -EROFS;
	}
	if (o->k <= 0 || o->m <= 0) {
		*message = g_strdup_printf("all %d members are empty: to create a volume give "
		                           "-o k=K,m=M with K+M=%d", n, n);
		return -EINVAL;
	}
	if (o->k + o->m != n) {
		*message = g_strdup_printf("k=%d + m=%d must equal the number of members (%d)",
		                           o->k, o->m, n);
		return -EINVAL;
	}
	if (n > 64) {
		*message = g_strdup_printf("at most 64 members are supported, %d given", n);
		return -EINVAL;
	}
	memset(sb, 0, sizeof(*sb));
	sb->version = SUPERBLOCK_VERSION;
	sb->n = n;
	sb->k = o->k;
	sb->m = o->m;
	sb->code = o->code ? o->code : ec_default_kind(o->k, o->m);
	sb->w = o->w ? o->w : default_w(sb->code, o->k, o->m);
	sb->packet_size = ec_kind_is_bitmatrix(sb->code)
	                  ? (o->packet_size ? o->packet_size : DEFAULT_PACKET_SIZE) : 0;
	sb->strip_size = o->strip_size ? o->strip_size : DEFAULT_STRIP_SIZE;
	sb->checksum = checksum_alg_from_name(o->checksum ? o->checksum : CHECKSUM_DEFAULT);
	if (!sb->checksum) {
		*message = g_strdup_printf("unknown checksum '%s' (choose sha256, blake2b, "
		                           "blake2s, gmac or poly1305)", o->checksum);
		return -EINVAL;
	}
	/* Refuse a code or strip size that cannot work before any member is
	 * touched: bad options must leave empty members empty. */
	ec_params p = { .kind = sb->code, .k = sb->k, .m = sb->m, .w = sb->w,
	                .packet_size = sb->packet_size };
	ec_code *code;
	int crc = ec_create(&p, &code);
	if (crc < 0) {
		*message = invalid_code_message(&p);
		return -EINVAL;
	}
	size_t strip = sb->strip_size;
	crc = fit_strip(&strip, ec_block_align(code), o->strip_size != 0, sb->code, message);
	ec_destroy(code);
	if (crc < 0)
		return crc;
	sb->strip_size = strip;
	sb->created = time(NULL);
	if (RAND_bytes(sb->uuid, 16) != 1 || RAND_bytes(sb->key, sizeof(sb->key)) != 1) {
		*message = g_strdup("cannot get random bytes for the volume identity");
		return -EIO;
	}
	sb->uuid[6] = (sb->uuid[6] & 0x0f) | 0x40; /* RFC 4122 version 4 */
	sb->uuid[8] = (sb->uuid[8] & 0x3f) | 0x80;
	for (int i = 0; i < n; i++) {
		sb->index = i;
		/* No volume yet (v NULL): creation is not faulted, but counted and
		 * recorded (ECFS_RECORD) as member i. */
		int rc = mop_mkdirat(NULL, i, pr[i].rootfd, ECFS_META_DIR, 0700);
		if (rc == -EEXIST)
			rc = 0;
		if (rc == 0 && (pr[i].metafd = openat(pr[i].rootfd, ECFS_META_DIR,
		                                      O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		                                      O_CLOEXEC)) < 0)
			rc = -errno;
		if (rc == 0)
			rc = superblock_write(NULL, i, pr[i].metafd, sb);
		if (rc < 0) {
			*message = g_strdup_printf("cannot write the superblock of member %s: %s",
			                           pr[i].path, g_strerror(-rc));
			return rc;
		}
		pr[i].sb = *sb;
		pr[i].state = P_OK;
		pr[i].slot = i;
	}
	char uuid[37];
	uuid_format(sb->uuid, uuid);
	ecfs_log(LOG_INFO, "created volume %s: k=%d m=%d code=%s w=%d strip_size=%llu checksum=%s",
	         uuid, sb->k, sb->m, ec_kind_name(sb->code), sb->w,
	         (unsigned long long)sb->strip_size, checksum_alg_name(sb->checksum));
	return 0;
}

/* ---- judging probed members ---- */

/* Picks the reference superblock (the UUID most members carry) and refuses
 * any member that contradicts it.  Sets *ref to the reference probe (-1 if
 * no member is formatted); returns 0 or a negative errno with *message. */
static int check_superblocks(probe *pr, int n, const volume_options *o, int *ref,
                             char **message)
{
	int best = -1, best_votes = 0;

	*ref = -1;
	for (int i = 0; i < n; i++) {
		if (pr[i].state == P_FOREIGN) {
			*message = g_strdup_printf(
				"member %s is not empty (%s) and holds no ecfs volume (no " ECFS_META_DIR
				"/superblock): refusing to use it.  Give an empty directory or a freshly "
				"formatted disk; a member of this volume that lost its " ECFS_META_DIR
				" is rebuilt once emptied, or kept with mkdir %s/" ECFS_META_DIR
				" and ecfs-fsck -y", pr[i].path, pr[i].why,
				pr[i].path);
			return -EINVAL;
		}
		if (pr[i].state == P_BROKEN && pr[i].err == EPROTO) {
			*message = g_strdup_printf("member %s: %s", pr[i].path, pr[i].why);
			return -EPROTO;
		}
		if (pr[i].state != P_OK)
			continue;
		int votes = 0;
		for (int j = 0; j < n; j++)
			votes += pr[j].state == P_OK && !memcmp(pr[j].sb.uuid, pr[i].sb.uuid, 16);
		if (votes > best_votes) {
			best = i;
			best_votes = votes;
		}
	}
	if (best < 0)
		return 0;
	const superblock *r = &pr[best].sb;
	for (int i = 0; i < n; i++) {
		char ua[37], ub[37];
		if (pr[i].state != P_OK)
			continue;
		if (memcmp(pr[i].sb.uuid, r->uuid, 16)) {
			uuid_format(pr[i].sb.uuid, ua);
			uuid_format(r->uuid, ub);
			*message = g_strdup_printf("member %s belongs to another volume (uuid %s, "
			                           "not %s): refusing to use it", pr[i].path, ua, ub);
			return -EINVAL;
		}
		if (pr[i].sb.n != n || pr[i].sb.k != r->k || pr[i].sb.m != r->m) {
			*message = g_strdup_printf("member %s belongs to a volume of %d members "
			                           "(k=%d m=%d) but %d members were given",
			                           pr[i].path, pr[i].sb.n, pr[i].sb.k, pr[i].sb.m, n);
			return -EINVAL;
		}
		if (pr[i].sb.version != r->version) {
			*message = g_strdup_printf("member %s has format version %d, the others %d: "
			                           "refusing to mix them", pr[i].path, pr[i].sb.version,
			                           r->version);
			return -EINVAL;
		}
		for (int j = 0; j < i; j++)
			if (pr[j].state == P_OK && pr[j].sb.index == pr[i].sb.index) {
				*message = g_strdup_printf("members %s and %s both claim index %d of the "
				                           "volume", pr[j].path, pr[i].path, pr[i].sb.index);
				return -EINVAL;
			}
	}
	if ((o->k && o->k != r->k) || (o->m && o->m != r->m)) {
		*message = g_strdup_printf("the volume has k=%d m=%d; k and m cannot change "
		                           "(given k=%d m=%d)", r->k, r->m, o->k, o->m);
		return -EINVAL;
	}
	*ref = best;
	return 0;
}

/* Puts each formatted member in its slot and the others in the free slots. */
static void place_members(probe *pr, int n, probe **slot)
{
	bool moved = false;

	for (int i = 0; i < n; i++)
		slot[i] = NULL;
	for (int i = 0; i < n; i++)
		if (pr[i].state == P_OK) {
			slot[pr[i].sb.index] = &pr[i];
			moved |= pr[i].sb.index != i;
		}
	for (int i = 0, s = 0; i < n; i++) {
		if (pr[i].state == P_OK)
			continue;
		while (slot[s])
			s++;
		slot[s] = &pr[i];
	}
	if (moved)
		for (int i = 0; i < n; i++)
			if (slot[i]->state == P_OK)
				ecfs_log(LOG_INFO, "member %s is index %d of the volume", slot[i]->path, i);
}

/* ---- the lock ---- */

/* Locks member idx through its metadata directory metafd: *lockfd gets
 * the lock file's descriptor (-1 if it did not open). */
static int lock_member(volume *v, int idx, int metafd, int *lockfd, char **message)
{
	member *mb = &v->mem[idx];
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char info[256];

	int fd = mop_openat(v, idx, metafd, LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	                    0600);
	*lockfd = fd < 0 ? -1 : fd;
	if (fd < 0) {
		*message = g_strdup_printf("cannot open the lock of member %s: %s", mb->path,
		                           g_strerror(-fd));
		return fd;
	}
	/* An open-file-description lock: held for the life of the daemon and
	 * dropped by the kernel when it dies, so nothing stale is left. */
	if (MIO_CALL(fcntl(fd, F_OFD_SETLK, &fl)) < 0) {
		int e = errno;
		ssize_t len = mop_pread(v, idx, fd, info, sizeof(info) - 1, 0);
		long pid = 0;
		char host[200] = "?";
		if (len > 0) {
			info[len] = 0;
			sscanf(info, "pid=%ld host=%199s", &pid, host);
		}
		if (e == EAGAIN || e == EACCES) {
			*message = g_strdup_printf("volume is in use by pid %ld on %s (lock %s/"
			                           ECFS_META_DIR "/" LOCK_FILE ")", pid, host, mb->path);
			return -EBUSY;
		}
		*message = g_strdup_printf("cannot lock member %s: %s", mb->path, g_strerror(e));
		return -e;
	}
	mb->locked = true;
	/* volume_close empties the text: one still there is the mark of an
	 * open that never closed (a crash, a power loss; volume_settled.c).
	 * It is synced, so that a power loss cannot take the mark away. */
	mb->left_open = mop_pread(v, idx, fd, info, 1, 0) > 0;
	char host[128] = "";
	gethostname(host, sizeof(host) - 1);
	int len = snprintf(info, sizeof(info), "pid=%ld host=%s\n", (long)getpid(), host);
	if (mop_ftruncate(v, idx, fd, 0) < 0 || mop_pwrite(v, idx, fd, info, (size_t)len, 0) != len ||
	    mop_fsync(v, idx, fd, true) < 0)
		ecfs_log(LOG_WARNING, "cannot record the lock owner on %s", mb->path);
	return 0;
}

/* The lock text of member idx, if the lock is ours, emptied: the volume
 * was closed, not cut short.  Also on a member failed meanwhile (unless
 * it hung): it may come back at the next open, and a failure is no crash.
 * Not synced: a power loss that undoes it only makes the next open take
 * the names for unsettled. */
struct lock_call {
	volume *v;
	int idx;
};

static int clear_lock_text(void *arg)
{
	const struct lock_call *c = arg;
	return mop_ftruncate(c->v, c->idx, c->v->mem[c->idx].lockfd, 0);
}

static void clear_lock_texts(volume *v)
{
	for (int i = 0; i < v->n; i++) {
		struct lock_call c = { v, i };
		if (v->mem[i].locked && !(v->mio && memberio_lost(v->mio, i)))
			volume_on_member(v, i, clear_lock_text, &c);
	}
}

/* A read-only open takes no lock: whether a lock text is there (an open
 * that never closed, or one in use now). */
static bool lock_text_left(volume *v, int idx)
{
	char c;
	int fd = openat(v->mem[idx].metafd, LOCK_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	bool left = fd >= 0 && mop_pread(v, idx, fd, &c, 1, 0) > 0;
	if (fd >= 0)
		close(fd);
	return left;
}

static int take_lock(volume *v, int idx, char **message)
{
	return lock_member(v, idx, v->mem[idx].metafd, &v->mem[idx].lockfd, message);
}

/* ---- open / close ---- */

static guint id_hash(gconstpointer p)
{
	const uint8_t *b = p;
	return (guint)b[4] | (guint)b[5] << 8 | (guint)b[6] << 16 | (guint)b[7] << 24;
}

static gboolean id_equal(gconstpointer a, gconstpointer b)
{
	return memcmp(a, b, 16) == 0;
}

/* Member idx's syncs are skipped if it is on tmpfs or ramfs (mop_fsync). */
static void note_memory_only(volume *v, int idx)
{
	uint64_t bit = 1ull << idx;
	if (mounts_memory_only(&v->mem[idx].mi))
		__atomic_or_fetch(&v->mops.memory_only, bit, __ATOMIC_RELAXED);
	else
		__atomic_and_fetch(&v->mops.memory_only, ~bit, __ATOMIC_RELAXED);
}

static volume *volume_alloc(int n)
{
	volume *v = g_new0(volume, 1);

	v->n = n;
	v->mem = g_new0(member, n);
	for (int i = 0; i < n; i++)
		v->mem[i].rootfd = v->mem[i].metafd = v->mem[i].lockfd = v->mem[i].logfd = -1;
	pthread_mutex_init(&v->lock, NULL);
	pthread_mutex_init(&v->cache_lock, NULL);
	pthread_mutex_init(&v->files_lock, NULL);
	v->codes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
	                                 (GDestroyNotify)ec_destroy);
	v->files = g_hash_table_new(id_hash, id_equal);
	return v;
}

static char *failed_list(volume *v)
{
	GString *s = g_string_new(NULL);

	for (int i = 0; i < v->n; i++)
		if (v->mem[i].failed)
			g_string_append_printf(s, "%s%s (%s)", s->len ? ", " : "", v->mem[i].path,
			                       v->mem[i].why);
	return g_string_free(s, FALSE);
}

static void fail_member(volume *v, int idx, const char *why);

/* The watchdog of the member I/O gave up on member idx (memberio.h). */
static void member_timed_out(void *ctx, int idx, unsigned timeout_ms)
{
	char why[96];

	snprintf(why, sizeof(why), "no answer in %u.%u s (a member call hangs)",
	         timeout_ms / 1000, timeout_ms % 1000 / 100);
	fail_member(ctx, idx, why);
}

/* No member holds a readable volume and not every one is empty: refused,
 * naming the first member that is not empty (or not mounted). */
static int refuse_unformatted(const probe *pr, int n, char **message)
{
	bool any_broken = false;

	for (int i = 0; i < n; i++) {
		any_broken |= pr[i].state == P_BROKEN;
		if (pr[i].state == P_UNMOUNTED && !*message)
			*message = g_strdup_printf("member %s is %s: refusing to create a volume on "
			                           "it (mount its disk first)", pr[i].path, pr[i].why);
	}
	if (*message)
		return -EINVAL;
	for (int i = 0; i < n && !*message; i++)
		if (pr[i].state != P_EMPTY)
			*message = g_strdup_printf("no member holds a readable volume and member %s %s",
			                           pr[i].path, pr[i].why ? pr[i].why : "is unusable");
	return any_broken ? -EINVAL : -ENOENT;
}

/* Fails the members that are not mount points where the others are: a
 * disk that did not mount leaves its empty mount point, which would be
 * taken for a replaced disk and filled on the filesystem beneath. */
static void judge_mounts(probe *pr, int n)
{
	mount_info mi[64];

	for (int i = 0; i < n; i++)
		mi[i] = pr[i].mi;
	for (int i = 0; i < n; i++) {
		int j = mounts_unmounted_beside(mi, n, i);
		if (j < 0)
			continue;
		g_free(pr[i].why);
		pr[i].why = g_strdup_printf("not a mount point while %s is: its disk may not "
		                            "have mounted", pr[j].path);
		pr[i].state = P_UNMOUNTED;
	}
}

/* Members of a new volume that share a filesystem fill up together, and
 * one failure of it fails them all: said once, at creation (and in the
 * health report while mounted). */
static void warn_same_filesystem(const probe *pr, int n, const char *const *paths)
{
	mount_info mi[64];

	for (int i = 0; i < n; i++)
		mi[i] = pr[i].mi;
	char *groups = mounts_same_filesystem(mi, n, ~0ull, paths);
	if (groups)
		ecfs_log(LOG_WARNING, "members on one filesystem: %s; they fill up together, and "
		         "one failure of it fails them all (give each member its own disk)", groups);
	g_free(groups);
}

static void probe_run(void *p)
{
	probe_member(p);
}

static void probe_late(void *p)
{
	probe_free(p);
	g_free(p);
}

/* Probes the members at once, each on a thread of its own, and gives up
 * on one that has not answered within the I/O timeout (there are no
 * member workers yet): it is broken, "no answer", and its thread is left
 * to it.  A member that hangs does not hold the open. */
static void probe_all(probe *pr, const char *const *paths, int n, unsigned timeout_ms)
{
	mio_bounded *b[64];
	probe *p[64];

	for (int i = 0; i < n; i++) {
		p[i] = g_new0(probe, 1);
		p[i]->path = paths[i];
		b[i] = mio_bounded_start(probe_run, probe_late, p[i]);
	}
	int64_t deadline = mio_deadline_ms(timeout_ms);
	for (int i = 0; i < n; i++) {
		if (mio_bounded_wait(b[i], deadline)) {
			pr[i] = *p[i];
			g_free(p[i]);
			continue;
		}
		pr[i] = (probe){ .path = paths[i], .rootfd = -1, .metafd = -1, .slot = -1,
		                 .state = P_BROKEN, .err = ETIMEDOUT };
		pr[i].why = g_strdup_printf("no answer in %u.%u s (a member call hangs)",
		                            timeout_ms / 1000, timeout_ms % 1000 / 100);
	}
}

/* Probes the member directories paths[0..n-1] into pr and judges them
 * together; n empty ones become a new volume.  Returns the index of the
 * probe whose superblock is the reference, or a negative errno with
 * *message. */
static int probe_members(probe *pr, const char *const *paths, int n, const volume_options *o,
                         char **message)
{
	int ref, rc, empty = 0;
	superblock sb;

	probe_all(pr, paths, n, o->timeout_ms);
	judge_mounts(pr, n);
	for (int i = 0; i < n; i++)
		empty += pr[i].state == P_EMPTY;
	rc = check_superblocks(pr, n, o, &ref, message);
	if (rc < 0 || ref >= 0)
		return rc < 0 ? rc : ref;
	if (empty != n)
		return refuse_unformatted(pr, n, message);
	for (int i = 0; i < n; i++)
		record_set_root(i, pr[i].rootfd); /* creation is recorded */
	rc = create_volume(pr, n, o, &sb, message);
	if (rc == 0)
		warn_same_filesystem(pr, n, paths);
	return rc < 0 ? rc : 0; /* every probe now holds the new superblock */
}

/* A volume of the placed members (slot[i] is member i) with the identity
 * of superblock sb, taking over their descriptors; a member that holds
 * no superblock of it is failed. */
static volume *volume_assemble(probe **slot, int n, const superblock *sb, bool read_only)
{
	volume *v = volume_alloc(n);

	v->k = sb->k;
	v->m = sb->m;
	v->format = sb->version;
	v->read_only = read_only;
	memcpy(v->uuid, sb->uuid, 16);
	memcpy(v->key, sb->key, sizeof(v->key));
	for (int i = 0; i < n; i++) {
		member *mb = &v->mem[i];
		probe *p = slot[i];
		struct stat st;
		mb->path = g_strdup(p->path);
		mb->mi = p->mi;
		note_memory_only(v, i);
		if (p->state == P_UNMOUNTED) {
			/* nothing may write to the filesystem beneath (ecfs-fsck -y would) */
			close(p->rootfd);
			if (p->metafd >= 0)
				close(p->metafd);
			p->rootfd = p->metafd = -1;
		}
		mb->rootfd = p->rootfd;
		mb->metafd = p->metafd;
		p->rootfd = p->metafd = -1;
		if (p->state != P_OK) {
			mb->failed = true;
			mb->root_lost = true;
			mb->why = g_strdup(p->why ? p->why : "unusable");
			ecfs_log(LOG_WARNING, "member %d (%s) is failed: %s", i, mb->path, mb->why);
		} else if (fstat(mb->rootfd, &st) == 0) {
			mb->dev = st.st_dev;
			mb->ino = st.st_ino;
		}
	}
	return v;
}

/* Refuses a volume with more than m members failed, naming them. */
static int check_quorum(volume *v, char **message)
{
	if (volume_failed_count(v) <= v->m)
		return 0;
	char *list = failed_list(v);
	*message = g_strdup_printf("%d of %d members are unusable, more than m=%d: %s",
	                           volume_failed_count(v), v->n, v->m, list);
	g_free(list);
	return -EIO;
}

/* Takes the lock of every member in service (unless read-only), and marks
 * healing the members whose online rebuild a stop cut short. */
static int lock_members(volume *v, bool read_only, char **message)
{
	int rc;

	if (!read_only)
		for (int i = 0; i < v->n; i++)
			if (!v->mem[i].failed && (rc = take_lock(v, i, message)) < 0)
				return rc;
	bool left_open = false;
	for (int i = 0; i < v->n; i++)
		if (!v->mem[i].failed)
			left_open |= read_only ? lock_text_left(v, i) : v->mem[i].left_open;
	volume_settle_open(v, left_open, read_only);
	int by[64];
	uint64_t stale = volume_missed_stale(v, by);
	v->changes_at_open = v->mops.made; /* the locks are no change to miss */
	for (int i = 0; i < v->n; i++) {
		struct stat st;
		if (!v->mem[i].failed &&
		    fstatat(v->mem[i].metafd, HEAL_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			v->mem[i].healing = true;
			ecfs_log(LOG_WARNING, "member %d (%s): its online rebuild was cut short; it "
			         "answers no lookup until the rebuild is done", i, v->mem[i].path);
		} else if (stale >> i & 1) {
			v->mem[i].healing = true;
			ecfs_log(LOG_WARNING, "member %d (%s) is back with an older copy (member %d "
			         "saw it fail): it answers no lookup until the online heal has "
			         "rebuilt it", i, v->mem[i].path, by[i]);
		}
	}
	return 0;
}

/* A member's root, for a task on its worker. */
struct root_check {
	volume *v;
	int idx;
};

static int watch_root_call(void *arg)
{
	struct root_check *rc = arg;
	member *mb = &rc->v->mem[rc->idx];

	root_watch_member(rc->v->watch, rc->idx, mb->path, mb->rootfd, ECFS_META_DIR,
	                  mounts_local(&mb->mi));
	return 0;
}

/* Member idx's root watched from now on, if it is in service (on its
 * worker: the calls ask the member). */
static void watch_root(volume *v, int idx)
{
	struct root_check rc = { v, idx };

	if (volume_member_ok(v, idx))
		volume_on_member(v, idx, watch_root_call, &rc);
}

/* Starts the member workers; the fault rules (*faults, taken over) apply
 * from here on: the lock files are no member operation a rule counts. */
static int start_members(volume *v, struct fault_rules **faults, const volume_options *opts,
                         char **message)
{
	v->mops.faults = *faults;
	*faults = NULL;
	v->mio = memberio_new(v->n, opts->timeout_ms, member_timed_out, v);
	if (v->mio) {
		memberio_force_slow(v->mio, MIO_WRITE, fault_slow(v->mops.faults, FAULT_WRITE));
		memberio_set_spin(v->mio, opts->spin_us);
	}
	v->room = space_new(v->n);
	v->sizes = size_cache_new();
	if (!v->mio) {
		*message = g_strdup("cannot start the member I/O threads");
		return -ENOMEM;
	}
	v->watch = root_watch_new(v->n);
	for (int i = 0; i < v->n; i++)
		watch_root(v, i);
	return 0;
}

int volume_open(const char *const *paths, int n, const volume_options *opts,
                volume **out, char **message)
{
	static const volume_options none;
	struct fault_rules *faults = fault_setup();
	volume *v = NULL;
	int ref, rc;

	*out = NULL;
	*message = NULL;
	if (!opts)
		opts = &none;
	if (n < 2 || n > 64) {
		*message = g_strdup_printf("a volume needs 2 to 64 members, %d given", n);
		fault_free(faults);
		return -EINVAL;
	}
	probe *pr = g_new0(probe, n);
	probe **slot = g_new0(probe *, n);
	ref = probe_members(pr, paths, n, opts, message);
	rc = ref < 0 ? ref : 0;
	if (rc == 0) {
		place_members(pr, n, slot);
		for (int i = 0; i < n; i++)
			record_set_root(i, slot[i]->rootfd);
		v = volume_assemble(slot, n, &pr[ref].sb, opts->read_only);
		rc = check_quorum(v, message);
	}
	if (rc == 0)
		rc = lock_members(v, opts->read_only, message);
	if (rc == 0)
		rc = set_defaults(v, &pr[ref].sb, opts, message);
	if (rc == 0)
		rc = start_members(v, &faults, opts, message);
	if (rc == 0 && volume_failed_count(v))
		ecfs_log(LOG_WARNING, "volume opened degraded: %d of %d members failed",
		         volume_failed_count(v), n);
	for (int i = 0; i < n; i++)
		probe_free(&pr[i]);
	g_free(pr);
	g_free(slot);
	fault_free(faults);
	if (rc < 0) {
		volume_close(v);
		return rc;
	}
	*out = v;
	return 0;
}

void volume_member_close(volume *v, int idx, int fd)
{
	/* closing a file on a FUSE or network member asks the member (a
	 * flush), and one given up would never answer */
	if (fd >= 0 && !(v->mio && memberio_lost(v->mio, idx)))
		close(fd);
}

struct member_call {
	int (*fn)(void *);
	void *arg;
	int rc;
};

static void member_call_run(void *p)
{
	struct member_call *c = p;
	c->rc = c->fn(c->arg);
}

bool volume_parse_timeout(const char *s, unsigned *ms)
{
	char *end;
	double secs = strtod(s, &end);

	if (end == s || *end || !(secs >= 0 && secs <= 86400) || (secs > 0 && secs < 0.01))
		return false;
	*ms = (unsigned)(secs * 1000 + 0.5);
	return true;
}

bool volume_hands_off(const volume *v)
{
	return v->mio && memberio_timeout(v->mio) && !memberio_on_worker();
}

bool volume_all_relayed(const volume *v)
{
	if (!volume_hands_off(v))
		return false;
	for (int i = 0; i < v->n; i++)
		if (volume_member_ok(v, i) && !memberio_relays(v->mio, i))
			return false;
	return true;
}

void volume_set_refresh(volume *v, void (*refresh)(const char *dir))
{
	v->refresh = refresh;
}

/* refresh for the directory holding path. */
static void refresh_parent(volume *v, const char *path, size_t dirlen)
{
	char *dir = dirlen ? g_strndup(path, dirlen) : g_strdup("/");
	v->refresh(dir);
	g_free(dir);
}

/* The length of path's directory part ("/a/b" -> 2, "/b" -> 0: the root). */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? (size_t)(slash - path) : 0;
}

void volume_refresh_parents(volume *v, const char *path, const char *path2)
{
	if (!v->refresh || !volume_usable(v))
		return;
	size_t len = dir_len(path);
	refresh_parent(v, path, len);
	if (path2) {
		size_t len2 = dir_len(path2);
		if (len2 != len || strncmp(path, path2, len) != 0)
			refresh_parent(v, path2, len2);
	}
}

int volume_refresh_member(volume *v, uint64_t mask)
{
	for (int i = 0; i < v->n; i++)
		if ((mask >> i & 1) && volume_member_answers(v, i))
			return i;
	return -1;
}

int volume_on_member(volume *v, int idx, int (*fn)(void *), void *arg)
{
	struct member_call c = { fn, arg, -EIO };
	mio_batch b;

	if (!volume_hands_off(v))
		return fn(arg);
	mio_batch_init_small(v->mio, &b);
	memberio_submit(v->mio, idx, &b, member_call_run, &c);
	return mio_batch_wait(&b) ? -ETIMEDOUT : c.rc;
}

static void on_members(volume *v, uint64_t mask, int (*fn)(void *), void *const *args,
                       int *rcs, bool small)
{
	struct member_call calls[64];
	bool on_workers = volume_hands_off(v);
	mio_batch b;

	if (small)
		mio_batch_init_small(v->mio, &b);
	else
		mio_batch_init(&b);
	for (int idx = 0; idx < v->n; idx++) {
		if (!(mask >> idx & 1))
			continue;
		calls[idx] = (struct member_call){ fn, args[idx], -EIO };
		if (on_workers)
			memberio_submit(v->mio, idx, &b, member_call_run, &calls[idx]);
		else
			member_call_run(&calls[idx]);
	}
	uint64_t lost = on_workers ? mio_batch_wait(&b) : 0;
	for (int idx = 0; idx < v->n; idx++)
		if (mask >> idx & 1)
			rcs[idx] = lost >> idx & 1 ? -ETIMEDOUT : calls[idx].rc;
}

void volume_on_members(volume *v, uint64_t mask, int (*fn)(void *), void *const *args,
                       int *rcs)
{
	on_members(v, mask, fn, args, rcs, true);
}

uint64_t volume_members_where(volume *v, const char *path, int (*fn)(void *))
{
	member_at p[64];
	void *args[64];
	int rcs[64];
	uint64_t ask = 0, where = 0;

	for (int mb = 0; mb < v->n; mb++) {
		p[mb] = (member_at){ v, mb, path };
		args[mb] = &p[mb];
		if (volume_member_ok(v, mb))
			ask |= 1ull << mb;
	}
	volume_on_members(v, ask, fn, args, rcs);
	for (int mb = 0; mb < v->n; mb++)
		if ((ask >> mb & 1) && rcs[mb] == 1)
			where |= 1ull << mb;
	return where;
}

void volume_on_members_apart(volume *v, uint64_t mask, int (*fn)(void *),
                             void *const *args, int *rcs)
{
	on_members(v, mask, fn, args, rcs, false);
}

void volume_close(volume *v)
{
	if (!v)
		return;
	fault_release(v->mops.faults); /* no join waits on a hung member */
	clear_lock_texts(v);
	/* The workers are idle by now (every batch was waited for), or lost,
	 * and then these descriptors stay open. */
	for (int i = 0; i < v->n; i++) {
		member *mb = &v->mem[i];
		volume_member_close(v, i, mb->lockfd); /* releases the OFD lock */
		volume_member_close(v, i, mb->logfd);
		volume_member_close(v, i, mb->metafd);
		volume_member_close(v, i, mb->rootfd);
	}
	for (guint i = 0; v->old_fds && i < v->old_fds->len; i++) {
		const struct old_fd *o = &g_array_index(v->old_fds, struct old_fd, i);
		volume_member_close(v, o->idx, o->fd);
	}
	memberio_free(v->mio);
	dirstamps_free(v->mops.dirstamps);
	space_free(v->room);
	size_cache_free(v->sizes);
	root_watch_free(v->watch);
	for (int i = 0; i < v->n; i++) {
		g_free(v->mem[i].path);
		g_free(v->mem[i].why);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(v->sums); i++)
		checksum_free(v->sums[i]);
	g_hash_table_destroy(v->codes);
	g_hash_table_destroy(v->files);
	pthread_mutex_destroy(&v->lock);
	pthread_mutex_destroy(&v->cache_lock);
	pthread_mutex_destroy(&v->files_lock);
	if (v->old_fds)
		g_array_free(v->old_fds, TRUE);
	g_free(v->checksum_name);
	g_free(v->mem);
	fault_free(v->mops.faults);
	g_free(v);
#ifdef ECFS_FAULT_INJECTION
	record_close(); /* "member writes: W" */
#endif
}

/* ---- accessors ---- */

int volume_k(const volume *v) { return v->k; }
uint32_t volume_chunk_version(const volume *v) { return (uint32_t)v->format; }
int volume_m(const volume *v) { return v->m; }
int volume_n(const volume *v) { return v->n; }
const volume_options *volume_defaults(const volume *v) { return &v->defaults; }
const char *volume_member_path(const volume *v, int idx) { return v->mem[idx].path; }
const uint8_t *volume_uuid(const volume *v) { return v->uuid; }
memberio *volume_memberio(volume *v) { return v->mio; }
space *volume_space(volume *v) { return v->room; }
size_cache *volume_sizes(volume *v) { return v->sizes; }
int *volume_xattr_marks(volume *v) { return v->xattr_marks; }
bool *volume_unsettled_flag(volume *v) { return &v->names_unsettled; }
int volume_root_fd(const volume *v, int idx) { return v->mem[idx].rootfd; }
int volume_meta_fd(const volume *v, int idx) { return v->mem[idx].metafd; }

/* Under v->lock: fd, member idx's, stays open until volume_close (which
 * closes it unless the member was given up, like the member's own fds). */
static void keep_old_fd(volume *v, int idx, int fd)
{
	struct old_fd o = { idx, fd };
	if (fd < 0)
		return;
	if (!v->old_fds)
		v->old_fds = g_array_new(FALSE, FALSE, sizeof(struct old_fd));
	g_array_append_val(v->old_fds, o);
}

int volume_log_fd(volume *v, int idx)
{
	return __atomic_load_n(&v->mem[idx].logfd, __ATOMIC_ACQUIRE);
}

/* The log fd is owned by the member, like its root fd, and never closed
 * while mounted: the simplest design that is right under the I/O
 * timeout.  A call on it may be given up and left stuck in the kernel
 * (DESIGN.md section 5) and may still write a record when it returns, so
 * the fd must not be closed (its number then reused for another file)
 * while such a call may exist; a reference count would never drop for a
 * stuck call either, so it would keep the fd open all the same, at the
 * cost of a count on every operation.  So one replaced (its member's
 * directory replaced, or its log made again) joins the old fds, closed
 * at volume_close, and the operations find the new one at their next
 * volume_log_fd (a thread that read the old one writes to the old file,
 * which nothing reads any more). */
int volume_hold_log_fd(volume *v, int idx, int root, int fd, bool replace)
{
	member *mb = &v->mem[idx];
	int use = fd, spare = -1;

	pthread_mutex_lock(&v->lock);
	if (mb->rootfd != root) {
		keep_old_fd(v, idx, fd); /* the root was replaced meanwhile: this call's only */
	} else if (mb->logfd < 0 || replace) {
		keep_old_fd(v, idx, mb->logfd);
		__atomic_store_n(&mb->logfd, fd, __ATOMIC_RELEASE);
	} else {
		use = mb->logfd; /* another thread's came first */
		spare = fd;
	}
	pthread_mutex_unlock(&v->lock);
	if (spare >= 0)
		MIO_CALL(close(spare));
	return use;
}

bool volume_member_ok(const volume *v, int idx)
{
	return !__atomic_load_n(&v->mem[idx].failed, __ATOMIC_ACQUIRE);
}

int volume_failed_count(const volume *v)
{
	int c = 0;
	for (int i = 0; i < v->n; i++)
		c += !volume_member_ok(v, i);
	return c;
}

uint64_t volume_failed_mask(volume *v)
{
	uint64_t mask = 0;
	for (int i = 0; i < v->n; i++)
		if (!volume_member_ok(v, i))
			mask |= 1ull << i;
	return mask;
}

bool volume_usable(const volume *v)
{
	return volume_failed_count(v) <= v->m;
}

/* ---- member health ---- */

static void fail_member(volume *v, int idx, const char *why)
{
	member *mb = &v->mem[idx];

	pthread_mutex_lock(&v->lock);
	if (!mb->failed) {
		mb->why = g_strdup(why);
		__atomic_store_n(&mb->failed, true, __ATOMIC_RELEASE);
		dirstamps_forget_member(v->mops.dirstamps, idx); /* it misses what is made now */
		ecfs_log(LOG_ERR, "member %d (%s) failed: %s; %d of %d members failed%s", idx,
		         mb->path, why, volume_failed_count(v), v->n,
		         volume_usable(v) ? "" : ", more than m: the volume is unusable");
	}
	pthread_mutex_unlock(&v->lock);
}

/* The member root still the directory we opened, and still ours?  Asked
 * of the member unless its watch saw nothing since it last was (a
 * local member: root_watch.h). */
static const char *root_changed(volume *v, int idx)
{
	member *mb = &v->mem[idx];
	struct stat st, now;
	uint64_t epoch;

	if (root_watch_quiet(v->watch, idx, &epoch))
		return NULL;
	if (fstat(mb->rootfd, &st) < 0) /* a dead mount: not a removal */
		return "the member directory does not answer";
	if (st.st_nlink == 0)
		return "the member directory was removed";
	if (stat(mb->path, &now) < 0 || now.st_dev != mb->dev || now.st_ino != mb->ino)
		return "the member directory was replaced";
	if (fstatat(mb->rootfd, ECFS_META_DIR "/" SUPERBLOCK_FILE, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return "the member's superblock vanished";
	root_watch_verified(v->watch, idx, epoch);
	return NULL;
}

/* The root check of one member, on its worker: the calls are timed
 * (memberio.h), so a member that stopped answering is failed by the
 * watchdog instead of holding the thread that asked. */
static void check_root(void *arg)
{
	struct root_check *rc = arg;
	member *mb = &rc->v->mem[rc->idx];
	struct stat st;

	mio_io_begin();
	int err = fstat(mb->rootfd, &st) < 0 ? errno : 0;
	bool removed = !err && st.st_nlink == 0;
	bool replaced = !err && !removed && stat(mb->path, &st) == 0 &&
	                (st.st_dev != mb->dev || st.st_ino != mb->ino);
	mio_io_end();
	/* A root that cannot be asked (ENOTCONN: the member's FUSE or network
	 * mount died) fails the member with that error, idle or not. */
	if (err) {
		volume_member_error(rc->v, rc->idx, err, "the member directory");
		return;
	}
	/* Open chunks keep working in a deleted tree, so without this a
	 * member removed under us would be noticed only by path lookups.
	 * Another directory at the member's path is a disk swapped in (the
	 * online heal takes the new one). */
	if (removed || replaced) {
		__atomic_store_n(&mb->root_lost, true, __ATOMIC_RELAXED);
		fail_member(rc->v, rc->idx, removed ? "the member directory was removed"
		                                    : "the member directory was replaced");
	}
}

void volume_check_roots(volume *v)
{
	struct root_check rc[64];
	struct timespec ts;
	int64_t last;
	mio_batch batch;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	last = __atomic_load_n(&v->roots_checked, __ATOMIC_RELAXED);
	if (ts.tv_sec == last ||
	    !__atomic_compare_exchange_n(&v->roots_checked, &last, (int64_t)ts.tv_sec, false,
	                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	mio_batch_init_caller(v->mio, &batch);
	for (int i = 0; i < v->n; i++) {
		rc[i] = (struct root_check){ v, i };
		if (volume_member_ok(v, i))
			memberio_submit(v->mio, i, &batch, check_root, &rc[i]);
	}
	mio_batch_wait(&batch); /* a lost member was failed by the watchdog */
}

/* A full member is not a broken one (space.h): said once per mount. */
static void member_full(volume *v, int idx, int err, const char *what)
{
	member *mb = &v->mem[idx];

	pthread_mutex_lock(&v->lock);
	bool first = !mb->warned_full;
	mb->warned_full = true;
	pthread_mutex_unlock(&v->lock);
	if (first)
		ecfs_log(LOG_WARNING, "member %d (%s) is out of space (%s: %s): the operation gets "
		         "that error and the member stays in service", idx, mb->path, what,
		         g_strerror(err));
}

bool volume_member_error(volume *v, int idx, int err, const char *what)
{
	const char *why = NULL;
	char *msg;

	if (err < 0)
		err = -err;
	if (!volume_member_ok(v, idx))
		return true;
	switch (err) {
	case ENOSPC: case EDQUOT:
		member_full(v, idx, err, what);
		return false;
	case EIO: case EROFS: case ENOTCONN: case ESTALE:
	case ENXIO: case ENODEV: case EBADF: case ETIMEDOUT: case ENOMEM:
	/* a network member's link or server gone (CIFS, 9p, FUSE clients) */
	case ECONNABORTED: case ECONNRESET: case EHOSTDOWN: case EHOSTUNREACH:
	case ENETDOWN: case ENETUNREACH: case ENOLINK:
		break;
	default:
		/* An answer (ENOENT, EEXIST, ...) unless the root itself is gone. */
		why = root_changed(v, idx);
		if (!why)
			return false;
	}
	msg = why ? g_strdup_printf("%s (%s: %s)", why, what, g_strerror(err))
	          : g_strdup_printf("%s: %s", what, g_strerror(err));
	if (why)
		__atomic_store_n(&v->mem[idx].root_lost, true, __ATOMIC_RELAXED);
	fail_member(v, idx, msg);
	g_free(msg);
	return true;
}

void volume_strip_failure(volume *v, int idx, const char *path, uint64_t stripe,
                          const char *why)
{
	member *mb = &v->mem[idx];
	bool first;

	__atomic_add_fetch(&v->strip_failures, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&v->lock);
	mb->strip_failures++;
	first = !mb->warned_strip;
	mb->warned_strip = true;
	pthread_mutex_unlock(&v->lock);
	ecfs_log(first ? LOG_WARNING : LOG_DEBUG,
	         "member %d (%s): %s, stripe %llu: %s; decoding around it%s", idx, mb->path,
	         path, (unsigned long long)stripe, why,
	         first ? " (further bad strips on this member are logged at debug level)" : "");
}

void volume_count_decoded(volume *v, uint64_t stripes)
{
	__atomic_add_fetch(&v->decoded, stripes, __ATOMIC_RELAXED);
}

void volume_count_hedged(volume *v)
{
	__atomic_add_fetch(&v->hedged, 1, __ATOMIC_RELAXED);
}

void volume_count_listed_saved(volume *v)
{
	__atomic_add_fetch(&v->listed_saved, 1, __ATOMIC_RELAXED);
}

void volume_count_checksum_failure(volume *v, int idx)
{
	__atomic_add_fetch(&v->strip_failures, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&v->lock);
	v->mem[idx].strip_failures++;
	pthread_mutex_unlock(&v->lock);
}

/* ---- paths ---- */

static const char *const root_reserved[] = { ECFS_META_DIR, "lost+found" };

bool volume_root_name_reserved(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(root_reserved); i++)
		if (!strcmp(name, root_reserved[i]))
			return true;
	return false;
}

bool volume_path_reserved(const char *path)
{
	while (*path == '/')
		path++;
	for (size_t i = 0; i < G_N_ELEMENTS(root_reserved); i++) {
		size_t l = strlen(root_reserved[i]);
		if (strncmp(path, root_reserved[i], l) == 0 && (path[l] == 0 || path[l] == '/'))
			return true;
	}
	return false;
}

static int walk_beneath(int root, const char *dir)
{
	int fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char *copy = g_strdup(dir), *save = NULL;

	for (char *c = strtok_r(copy, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
		int next;
		if (!strcmp(c, "..") || !strcmp(c, "."))
			next = -1, errno = EACCES;
		else
			next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		fd = next < 0 ? -e : next;
		if (next < 0)
			break;
	}
	g_free(copy);
	return fd;
}

/* -ENAMETOOLONG if a component of path is longer than a name may be, as
 * a local filesystem answers before it looks anything up: the answer of
 * every member alike, never taken for a member's loss of the name. */
static int check_names(const char *path)
{
	for (const char *c = path; *c;) {
		size_t len = strcspn(c, "/");
		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		c += len;
		c += strspn(c, "/");
	}
	return 0;
}

/* What every path on a member goes through first: the member in service,
 * no component too long; *path loses its leading slashes. */
static int path_usable(volume *v, int idx, const char **path)
{
	if (!volume_member_ok(v, idx))
		return -EIO;
	int rc = check_names(*path);
	while (**path == '/')
		(*path)++;
	return rc;
}

int volume_parent_fd(volume *v, int idx, const char *path, const char **leaf)
{
	const char *slash;
	char *dir;
	int fd;

	int rc = path_usable(v, idx, &path);
	if (rc < 0)
		return rc;
	slash = strrchr(path, '/');
	*leaf = *path ? (slash ? slash + 1 : path) : ".";
	dir = slash ? g_strndup(path, (size_t)(slash - path)) : g_strdup(".");
	/* openat2 keeps the walk beneath the member root with no symlink
	 * followed, in one system call. */
	fd = MIO_CALL(mop_openat2_beneath(v->mem[idx].rootfd, dir,
	                                  O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
	if (fd < 0) {
		fd = -errno;
		if (fd == -ENOSYS || fd == -E2BIG)
			fd = walk_beneath(v->mem[idx].rootfd, dir);
		else if (fd == -ELOOP || fd == -EXDEV)
			fd = -ENOTDIR; /* a symlink where a directory should be */
	}
	g_free(dir);
	return fd;
}

/* Where the kernel has no openat2: the parent walked beneath the root
 * (volume_parent_fd), then the leaf opened there (mop_openat). */
static int open_by_parent(volume *v, int idx, const char *path, int flags, mode_t mode)
{
	const char *leaf;
	int pfd = volume_parent_fd(v, idx, path, &leaf);
	if (pfd < 0)
		return pfd;
	int fd = mop_openat(v, idx, pfd, leaf, flags, mode);
	MIO_CALL(close(pfd));
	return fd;
}

int volume_object_fd(volume *v, int idx, const char *path)
{
	int rc = path_usable(v, idx, &path);
	if (rc < 0)
		return rc;
	/* O_PATH with O_NOFOLLOW opens a trailing symlink itself, even under
	 * RESOLVE_NO_SYMLINKS; only the components before it must not be. */
	int fd = MIO_CALL(mop_openat2_beneath(v->mem[idx].rootfd, *path ? path : ".",
	                                      O_PATH | O_NOFOLLOW | O_CLOEXEC, 0));
	if (fd >= 0)
		return fd;
	fd = -errno;
	if (fd == -ELOOP || fd == -EXDEV)
		return -ENOTDIR; /* a symlink where a directory should be */
	if (fd != -ENOSYS && fd != -E2BIG)
		return fd;
	return open_by_parent(v, idx, path, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
}

int volume_open_beneath(volume *v, int idx, const char *path, int flags, mode_t mode)
{
	int rc = path_usable(v, idx, &path);
	if (rc < 0)
		return rc;
	int fd = mop_openat_beneath(v, idx, v->mem[idx].rootfd, *path ? path : ".", flags, mode);
	if (fd != -ENOSYS && fd != -E2BIG)
		return fd;
	return open_by_parent(v, idx, path, flags, mode);
}

/* ---- caches ---- */

const checksum *volume_checksum(volume *v, checksum_alg alg)
{
	checksum *c;

	if (alg <= 0 || (size_t)alg >= G_N_ELEMENTS(v->sums))
		return NULL;
	pthread_mutex_lock(&v->cache_lock);
	if (!v->sums[alg])
		v->sums[alg] = checksum_new(alg, v->key);
	c = v->sums[alg];
	pthread_mutex_unlock(&v->cache_lock);
	return c;
}

const ec_code *volume_code(volume *v, const ec_params *p)
{
	char *key = g_strdup_printf("%d:%d:%d:%d:%zu", p->kind, p->k, p->m, p->w, p->packet_size);
	ec_code *code;

	pthread_mutex_lock(&v->cache_lock);
	code = g_hash_table_lookup(v->codes, key);
	if (!code && ec_create(p, &code) == 0) {
		g_hash_table_insert(v->codes, key, code);
		key = NULL;
	}
	pthread_mutex_unlock(&v->cache_lock);
	g_free(key);
	return code;
}

void volume_files_lock(volume *v) { pthread_mutex_lock(&v->files_lock); }
void volume_files_unlock(volume *v) { pthread_mutex_unlock(&v->files_lock); }
void *volume_files_lookup(volume *v, const uint8_t id[16])
{
	return g_hash_table_lookup(v->files, id);
}
void volume_files_insert(volume *v, const uint8_t *id, void *f)
{
	g_hash_table_insert(v->files, (gpointer)id, f);
}
void volume_files_remove(volume *v, const uint8_t id[16])
{
	g_hash_table_remove(v->files, id);
}
void *volume_files_any(volume *v)
{
	GHashTableIter it;
	gpointer id, f = NULL;

	g_hash_table_iter_init(&it, v->files);
	return g_hash_table_iter_next(&it, &id, &f) ? f : NULL;
}

void *volume_files_find(volume *v, bool (*match)(void *f, void *arg), void *arg)
{
	GHashTableIter it;
	gpointer id, f;

	g_hash_table_iter_init(&it, v->files);
	while (g_hash_table_iter_next(&it, &id, &f))
		if (match(f, arg))
			return f;
	return NULL;
}

/* ---- fault injection (test builds) ---- */

/* The rules of ECFS_FAULT, and the record started (ECFS_RECORD,
 * abort_after) before the volume's first member operation; a build
 * without the hooks says once that it ignores both. */
static struct fault_rules *fault_setup(void)
{
#ifdef ECFS_FAULT_INJECTION
	struct fault_rules *r = fault_parse(getenv("ECFS_FAULT"));
	record_start(fault_abort_after(r));
	return r;
#else
	static bool warned;
	if (!warned && (getenv("ECFS_FAULT") || getenv("ECFS_RECORD"))) {
		warned = true;
		ecfs_log(LOG_WARNING, "ECFS_FAULT and ECFS_RECORD are ignored: this build has no "
		         "fault injection (meson -Dfault_injection=true)");
	}
	return NULL;
#endif
}

/* ---- health ---- */

char *volume_same_filesystem(volume *v)
{
	uint64_t ok = ~volume_failed_mask(v);

	pthread_mutex_lock(&v->lock);
	mount_info mi[64];
	for (int i = 0; i < v->n; i++)
		mi[i] = v->mem[i].mi;
	pthread_mutex_unlock(&v->lock);
	return mounts_same_filesystem(mi, v->n, ok, NULL);
}

char *volume_health_text(volume *v)
{
	GString *s = g_string_new(NULL);
	int failed = volume_failed_count(v);
	bool healing = volume_healing_mask(v) != 0; /* not whole yet either */

	g_string_append_printf(s, "state=%s\n", failed == 0 && !healing ? "healthy"
	                       : failed <= v->m ? "degraded" : "failed");
	g_string_append_printf(s, "k=%d\nm=%d\nn=%d\nmembers_failed=%d\n", v->k, v->m, v->n, failed);
	pthread_mutex_lock(&v->lock);
	for (int i = 0; i < v->n; i++) {
		if (v->mem[i].failed)
			g_string_append_printf(s, "member.%d=failed %s: %s\n", i, v->mem[i].path,
			                       v->mem[i].why);
		else
			g_string_append_printf(s, "member.%d=%s %s\n", i,
			                       __atomic_load_n(&v->mem[i].healing, __ATOMIC_ACQUIRE)
			                       ? "healing" : "up", v->mem[i].path);
	}
	pthread_mutex_unlock(&v->lock);
	uint64_t up = 0;
	for (int i = 0; i < v->n; i++)
		if (volume_member_ok(v, i))
			up |= 1ull << i;
	int spare = __builtin_popcountll(up) - v->k;
	uint64_t slow = volume_defaults(v)->no_read_around ? 0
	                : memberio_slow_of(v->mio, MIO_READ, up, spare);
	int quorum = volume_defaults(v)->write_quorum;
	uint64_t wslow = quorum ? memberio_slow_of(v->mio, MIO_WRITE, up,
	                                        __builtin_popcountll(up) - quorum) : 0;
	for (int i = 0; i < v->n; i++)
		g_string_append_printf(s, "member.%d.latency_us=%llu\nmember.%d.read_us=%llu%s\n"
		                       "member.%d.write_us=%llu%s\n",
		                       i, (unsigned long long)memberio_latency_us(v->mio, i), i,
		                       (unsigned long long)memberio_cost_us(v->mio, i, MIO_READ),
		                       slow >> i & 1 ? " slow" : "", i,
		                       (unsigned long long)memberio_cost_us(v->mio, i, MIO_WRITE),
		                       wslow >> i & 1 ? " slow" : "");
	g_string_append_printf(s, "strips_decoded=%llu\nreads_hedged=%llu\nchecksum_failures=%llu\n",
	                       (unsigned long long)__atomic_load_n(&v->decoded, __ATOMIC_RELAXED),
	                       (unsigned long long)__atomic_load_n(&v->hedged, __ATOMIC_RELAXED),
	                       (unsigned long long)__atomic_load_n(&v->strip_failures,
	                                                            __ATOMIC_RELAXED));
	g_string_append_printf(s, "strips_healed=%llu\nlistings_from_last_mount=%llu\n",
	                       (unsigned long long)__atomic_load_n(&v->strips_healed,
	                                                            __ATOMIC_RELAXED),
	                       (unsigned long long)__atomic_load_n(&v->listed_saved,
	                                                            __ATOMIC_RELAXED));
	char *shared = volume_same_filesystem(v);
	if (shared)
		g_string_append_printf(s, "same_filesystem=%s\n", shared);
	g_free(shared);
	if (v->health_hook) {
		char *extra = v->health_hook(v->health_arg);
		g_string_append(s, extra);
		g_free(extra);
	}
	return g_string_free(s, FALSE);
}

/* ---- online heal (heal.c) ---- */

void volume_set_health_hook(volume *v, char *(*fn)(void *), void *arg)
{
	v->health_arg = arg;
	v->health_hook = fn;
}

void volume_set_left_out_hook(volume *v,
                              void (*fn)(void *, const char *, const uint8_t *, uint64_t),
                              void *arg)
{
	__atomic_store_n(&v->left_out_arg, arg, __ATOMIC_RELEASE);
	__atomic_store_n(&v->left_out_hook, fn, __ATOMIC_RELEASE);
}

void volume_left_out(volume *v, const char *path, const uint8_t file_id[16], uint64_t members)
{
	void (*fn)(void *, const char *, const uint8_t *, uint64_t) =
		__atomic_load_n(&v->left_out_hook, __ATOMIC_ACQUIRE);

	if (fn)
		fn(__atomic_load_n(&v->left_out_arg, __ATOMIC_ACQUIRE), path, file_id, members);
}

void volume_count_healed(volume *v, uint64_t strips)
{
	__atomic_add_fetch(&v->strips_healed, strips, __ATOMIC_RELAXED);
}

uint64_t volume_healing_mask(volume *v)
{
	uint64_t mask = 0;

	pthread_mutex_lock(&v->lock);
	for (int i = 0; i < v->n; i++)
		if (__atomic_load_n(&v->mem[i].healing, __ATOMIC_ACQUIRE) && !v->mem[i].failed)
			mask |= 1ull << i;
	pthread_mutex_unlock(&v->lock);
	return mask;
}

uint64_t volume_missed_changes(volume *v)
{
	/* Since the open, not since the failure: a change the member missed
	 * may have been made on the others before its own call failed (or
	 * hung until the timeout). */
	if (__atomic_load_n(&v->mops.made, __ATOMIC_RELAXED) == v->changes_at_open)
		return 0;
	return volume_failed_mask(v);
}

bool volume_member_answers(volume *v, int idx)
{
	return volume_member_ok(v, idx) && !__atomic_load_n(&v->mem[idx].healing, __ATOMIC_ACQUIRE);
}

/* A member, for a call on its worker (volume_on_member). */
typedef struct member_arg {
	volume *v;
	int idx;
} member_arg;

static int unlink_heal_file(void *arg)
{
	const member_arg *a = arg;
	return mop_unlinkat(a->v, a->idx, a->v->mem[a->idx].metafd, HEAL_FILE, 0);
}

void volume_member_healed(volume *v, int idx)
{
	member_arg a = { v, idx };
	/* on the member's worker: the heal thread never waits on a member */
	int rc = volume_on_member(v, idx, unlink_heal_file, &a);
	if (rc < 0 && rc != -ENOENT)
		ecfs_log(LOG_WARNING, "member %d (%s): cannot remove " ECFS_META_DIR "/" HEAL_FILE
		         ": %s", idx, v->mem[idx].path, g_strerror(-rc));
	__atomic_store_n(&v->mem[idx].healing, false, __ATOMIC_RELEASE);
}

/* Gives an empty directory the volume's superblock with index idx (copied
 * from a member in service).  Returns the .ecfs fd or a negative errno. */
static int format_member(volume *v, int idx, int rootfd)
{
	superblock sb;
	char *why = NULL;
	int rc = -EIO, metafd;

	for (int j = 0; j < v->n && rc < 0; j++) {
		if (j == idx || !volume_member_ok(v, j))
			continue;
		mio_io_begin(); /* on member idx's worker (revive_format) */
		rc = superblock_read(v->mem[j].metafd, &sb, &why);
		mio_io_end();
		if (rc < 0)
			g_clear_pointer(&why, g_free);
	}
	if (rc < 0)
		return rc;
	sb.index = idx;
	rc = mop_mkdirat(v, idx, rootfd, ECFS_META_DIR, 0700);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	metafd = MIO_CALL(openat(rootfd, ECFS_META_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                                                O_CLOEXEC));
	if (metafd < 0)
		return -errno;
	rc = superblock_write(v, idx, metafd, &sb);
	if (rc < 0) {
		close(metafd);
		return rc;
	}
	return metafd;
}

/* A directory that is not a mount point where the other members are is
 * never taken (its disk did not mount: the rebuild would fill the
 * filesystem beneath); said once until it is a mount point again. */
static bool revive_unmounted(volume *v, int idx, const probe *p)
{
	member *mb = &v->mem[idx];
	mount_info mi[64];

	for (int j = 0; j < v->n; j++)
		mi[j] = volume_member_ok(v, j) ? v->mem[j].mi : (mount_info){ 0 };
	mi[idx] = p->mi;
	int j = mounts_unmounted_beside(mi, v->n, idx);
	if (j >= 0 && !mb->warned_unmounted) {
		char *why = g_strdup_printf("not a mount point while %s is: its disk may not have "
		                            "mounted", v->mem[j].path);
		ecfs_log(LOG_WARNING, "member %d (%s) is %s; not taken back until it is a mount "
		         "point", idx, mb->path, why);
		pthread_mutex_lock(&v->lock);
		g_free(mb->why);
		mb->why = why; /* what the health report says */
		pthread_mutex_unlock(&v->lock);
	}
	mb->warned_unmounted = j >= 0;
	return j >= 0;
}

bool volume_journals_none(volume *v)
{
	return __atomic_load_n(&v->journals_none, __ATOMIC_ACQUIRE);
}

void volume_set_journals_none(volume *v, bool none)
{
	__atomic_store_n(&v->journals_none, none, __ATOMIC_RELEASE);
}

/* A revive's calls on the member run on its worker (volume_on_member):
 * one that hangs is given up after the I/O timeout, rather than holding
 * the heal thread and the unmount that joins it. */
typedef struct revive_call {
	volume *v;
	int idx;
	probe p;
	struct stat st;
	int st_rc;
	int old_lockfd, lockfd, heal_rc; /* revive_lock */
	char *msg;
} revive_call;

static int revive_probe(void *arg)
{
	revive_call *r = arg;
	probe p = r->p;
	struct stat st;

	mio_io_begin(); /* the probe's few calls, as one member call */
	probe_member(&p);
	int st_rc = p.rootfd >= 0 ? fstat(p.rootfd, &st) : -1;
	mio_io_end();
	r->p = p;
	r->st = st;
	r->st_rc = st_rc;
	return 0;
}

static int revive_format(void *arg)
{
	revive_call *r = arg;
	struct stat st;
	int fd = format_member(r->v, r->idx, r->p.rootfd);
	int st_rc = fd >= 0 ? MIO_CALL(fstat(r->p.rootfd, &st)) : -1;

	if (st_rc == 0)
		r->st = st;
	r->st_rc = st_rc;
	return fd;
}

/* Takes the lock of the member's new directory (the old lock goes first:
 * it would conflict with the new one if the directory is the same) and
 * leaves the heal marker there. */
static int revive_lock(void *arg)
{
	revive_call *r = arg;

	if (r->old_lockfd >= 0)
		MIO_CALL(close(r->old_lockfd));
	int rc = lock_member(r->v, r->idx, r->p.metafd, &r->lockfd, &r->msg);
	r->heal_rc = rc == 0 ? mop_touchat(r->v, r->idx, r->p.metafd, HEAL_FILE, false) : 0;
	return rc;
}

/* A member given up while a revive asked it: already failed, so said here. */
static int revive_lost(volume *v, int idx)
{
	ecfs_log(LOG_WARNING, "member %d (%s): no answer while probed for the online heal; it "
	         "stays failed until the next mount", idx, v->mem[idx].path);
	return 0;
}

/* Under v->lock: member idx takes the revived directory's root and
 * metadata fds (p's, p left without them) and its lock.  The old root,
 * metadata and intent log fds stay open until the end: a thread that read
 * them before the member failed must not find them reused.  The new
 * directory's log is opened (or made) by the next logged operation
 * (intent.c). */
static void take_new_fds(volume *v, int idx, probe *p, int lockfd)
{
	member *mb = &v->mem[idx];

	keep_old_fd(v, idx, mb->rootfd);
	keep_old_fd(v, idx, mb->metafd);
	keep_old_fd(v, idx, mb->logfd);
	__atomic_store_n(&mb->logfd, -1, __ATOMIC_RELEASE);
	mb->rootfd = p->rootfd;
	mb->metafd = p->metafd;
	mb->lockfd = lockfd;
	p->rootfd = p->metafd = -1;
}

int volume_member_revive(volume *v, int idx)
{
	volume_set_journals_none(v, false); /* it may bring journals back */
	member *mb = &v->mem[idx];
	probe p = { .path = mb->path };
	struct stat st;
	char *msg = NULL;
	int rc = 0;

	/* A member given up after the I/O timeout is not probed: that would
	 * hang this thread too. */
	if (volume_member_ok(v, idx) || v->read_only || memberio_lost(v->mio, idx))
		return 0;
	revive_call r = { v, idx, p, { 0 }, -1, -1, -1, 0, NULL };
	if (volume_on_member(v, idx, revive_probe, &r) < 0)
		return revive_lost(v, idx); /* its fds are the stuck worker's */
	p = r.p;
	if (p.state == P_OK && (memcmp(p.sb.uuid, v->uuid, 16) || p.sb.index != idx))
		goto out; /* another volume's or another member's: never ours to take */
	if (revive_unmounted(v, idx, &p))
		goto out;
	if (p.state == P_OK) {
		/* The same directory that failed by an I/O error stays failed;
		 * one that went away and is back (or a new one) is taken. */
		st = r.st;
		if (r.st_rc < 0 ||
		    (!__atomic_load_n(&mb->root_lost, __ATOMIC_RELAXED) && st.st_dev == mb->dev &&
		     st.st_ino == mb->ino))
			goto out;
	} else if (p.state == P_EMPTY) {
		p.metafd = volume_on_member(v, idx, revive_format, &r);
		if (p.metafd == -ETIMEDOUT && memberio_lost(v->mio, idx)) {
			p.rootfd = -1; /* the stuck worker's */
			revive_lost(v, idx);
			goto out;
		}
		if (p.metafd < 0) {
			ecfs_log(LOG_WARNING, "member %d (%s): cannot format the replacement: %s", idx,
			         mb->path, g_strerror(-p.metafd));
			goto out;
		}
	} else {
		goto out;
	}
	if (r.st_rc < 0)
		goto out;
	st = r.st;
	/* The lock on the member's worker too, before v->lock is taken: a
	 * member that hangs there is given up, rather than the heal thread
	 * holding v->lock for ever. */
	pthread_mutex_lock(&v->lock);
	r.old_lockfd = mb->lockfd;
	mb->lockfd = -1;
	pthread_mutex_unlock(&v->lock);
	r.p = p;
	rc = volume_on_member(v, idx, revive_lock, &r);
	msg = r.msg;
	if (rc == -ETIMEDOUT && memberio_lost(v->mio, idx)) {
		p.rootfd = p.metafd = -1; /* the stuck worker's */
		rc = revive_lost(v, idx);
		goto out;
	}
	if (r.heal_rc < 0)
		ecfs_log(LOG_WARNING, "member %d (%s): cannot create " ECFS_META_DIR "/" HEAL_FILE
		         " (a rebuild cut short is not resumed at the next mount): %s", idx,
		         mb->path, g_strerror(-r.heal_rc));
	pthread_mutex_lock(&v->lock);
	take_new_fds(v, idx, &p, r.lockfd);
	if (rc == 0) {
		mb->dev = st.st_dev;
		mb->ino = st.st_ino;
		mb->mi = p.mi;
		note_memory_only(v, idx);
		__atomic_store_n(&mb->root_lost, false, __ATOMIC_RELAXED);
		mb->warned_strip = false;
		__atomic_store_n(&mb->healing, true, __ATOMIC_RELEASE);
		g_clear_pointer(&mb->why, g_free);
		__atomic_store_n(&mb->failed, false, __ATOMIC_RELEASE);
		rc = 1;
	}
	pthread_mutex_unlock(&v->lock);
	if (rc == 1) {
		watch_root(v, idx);
		ecfs_log(LOG_WARNING, "member %d (%s) is back in service: rebuilding it online", idx,
		         mb->path);
	} else {
		ecfs_log(LOG_WARNING, "member %d (%s): %s", idx, mb->path, msg);
	}
	g_free(msg);
out:
	probe_free(&p);
	return rc;
}
