/* SPDX-License-Identifier: MIT */
/*
 * Stat and identity of any object by its path (objects.h).  Each member
 * asked runs a probe on its worker: its lstat and, for a regular file
 * whose size is not remembered (size_cache.h) nor known to an open file,
 * the chunk header.  A regular file's answer is the trusted header's
 * (ecfile_trusted_header), with the open file's size when it is open.
 */
#include "objects.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <glib.h>
#include <openssl/rand.h>

#include "chunk.h"
#include "ecfile.h"
#include "memberio.h"
#include "memberops.h"
#include "reader_rules.h"
#include "stripe.h"
#include "volume_internal.h"

/* What one member says about a path, for objects_stat. */
struct stat_probe {
	volume *v;
	int mb;
	const char *path;
	int rc;          /* 0, or -errno of the member's lstat */
	bool from_dir;   /* rc, not ENOENT, came from opening the object: an
	                  * answer (ENOTDIR, ENAMETOOLONG) or breakage */
	struct stat s;
	bool cached;     /* s is a chunk whose size is known (the size cache, an open file): size */
	uint64_t size;
	uint64_t ident;  /* and its identity (ecfile_ident) */
	bool want_ident; /* a directory's identity is asked for too */
	bool have_header;
	chunk_header h;
	/* Asked in the same relay batch as the first member's probe (lead),
	 * which runs before: skipped once the lead has answered it all. */
	struct stat_probe *lead;
	bool whole;      /* this probe answers it all (atomic, for the others) */
};

/* On the member's worker (volume_on_member): its lstat and, for a regular
 * file, the chunk header. */
static int stat_probe_run(void *arg)
{
	struct stat_probe *p = arg;
	struct stat s;
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h;

	if (p->lead && __atomic_load_n(&p->lead->whole, __ATOMIC_ACQUIRE))
		return p->rc = 0; /* not taken: the lead answered it all */
	int ofd = volume_object_fd(p->v, p->mb, p->path);
	if (ofd < 0) {
		/* ENOENT: the name or a directory above it is missing here;
		 * another error is the answer (ENOTDIR, ENAMETOOLONG) or the
		 * member's breakage, judged as a directory's (take_probe). */
		p->from_dir = ofd != -ENOENT;
		return p->rc = ofd;
	}
	int r = MIO_CALL(fstat(ofd, &s)) < 0 ? -errno : 0;
	uint64_t size;
	bool cached = r == 0 && S_ISREG(s.st_mode) &&
	              size_cache_get(volume_sizes(p->v), p->mb, &s, &size, &p->ident);
	int fd = -1;
	if (r == 0 && S_ISREG(s.st_mode) && !cached) {
		/* The very inode just stat'ed, opened for reading: no second walk. */
		char self[32];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", ofd);
		fd = mop_openat(p->v, p->mb, AT_FDCWD, self, O_RDONLY | O_CLOEXEC, 0);
	}
	if (r == 0 && p->want_ident && S_ISDIR(s.st_mode))
		p->ident = objects_dir_ident(ofd, ".", s.st_mode);
	MIO_CALL(close(ofd));
	ssize_t got = fd >= 0 ? mop_pread(p->v, p->mb, fd, buf, sizeof(buf), 0) : -1;
	if (fd >= 0)
		MIO_CALL(close(fd));
	bool valid = got >= 0 && chunk_header_decode(buf, (size_t)got, &h, NULL) == 0 &&
	             !volume_header_misfit(p->v, &h, p->mb);
	if (valid) {
		/* A chunk of a file open in the daemon: that file knows its size
		 * best (buffered writes included), and no other member need say
		 * which file the name is. */
		if (ecfile_open_size(p->v, h.file_id, &size)) {
			p->ident = chunk_file_ident(h.file_id);
			cached = true;
		}
	}
	p->s = s;
	p->cached = cached;
	if (cached)
		p->size = size;
	p->have_header = valid;
	if (valid)
		p->h = h;
	__atomic_store_n(&p->whole, r == 0 && (!S_ISREG(s.st_mode) || cached), __ATOMIC_RELEASE);
	return p->rc = r;
}

uint64_t objects_dir_ident(int dirfd, const char *leaf, mode_t mode)
{
	char path[PATH_MAX];
	uint8_t b[8];

	if (!S_ISDIR(mode))
		return 0;
	/* lgetxattr beneath the directory's fd: one call, no symlink followed */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd, leaf);
	if (MIO_CALL(lgetxattr(path, OBJECTS_IDENT_XATTR, b, sizeof(b))) != (ssize_t)sizeof(b))
		return 0;
	uint64_t id = 0;
	for (int i = 7; i >= 0; i--)
		id = id << 8 | b[i];
	return id;
}

void objects_store_dir_ident(volume *v, int idx, int dirfd, const char *leaf,
                             uint64_t ident)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(ident >> (8 * i));
	mop_lsetxattrat(v, idx, dirfd, leaf, OBJECTS_IDENT_XATTR, b, sizeof(b), 0);
}

uint64_t objects_new_ident(void)
{
	uint64_t id = 0;
	while (id == 0)
		if (RAND_bytes((unsigned char *)&id, sizeof(id)) != 1)
			id = (uint64_t)g_get_real_time() ^ (uint64_t)g_random_int() << 32;
	return id;
}

int objects_stat(volume *v, const char *path, struct stat *st)
{
	return objects_stat_ident(v, path, st, NULL);
}

/* The probes of the members in mask (volume_on_members): with a member
 * timeout at once, without one inline. */
static void stat_probes_run(volume *v, uint64_t mask, struct stat_probe *p, int *rcs)
{
	void *args[STRIPE_MAX_N];
	for (int mb = 0; mb < volume_n(v); mb++)
		args[mb] = &p[mb];
	volume_on_members(v, mask, stat_probe_run, args, rcs);
}

/* What objects_stat_ident gathers from the members' probes, in member order. */
struct stat_answer {
	struct stat *st;
	uint64_t *ident;
	int rc;          /* -ENOENT until a member has the name */
	bool whole;      /* *st and *ident are one member's whole answer */
	int first;       /* the first member with a regular file there */
	const chunk_header *hs[STRIPE_MAX_N]; /* their valid headers */
};

/* Takes member mb's probe (which returned r) into the answer: a->whole
 * once one member answers it all (not a regular file, or its size known). */
static void take_probe(volume *v, int mb, const struct stat_probe *p, int r,
                       struct stat_answer *a)
{
	if (r < 0 && (p->from_dir || r == -ETIMEDOUT)) {
		volume_member_error(v, mb, -r, "opening a directory");
		if (volume_member_ok(v, mb))
			a->rc = r;
		return;
	}
	if (r < 0) {
		/* ENOENT: the name, or a directory above it, is not there.  The
		 * member may have lost its directory: volume_member_error checks
		 * its root, also when no member holds the name, since a
		 * directory unmounted lazily under the volume still answers
		 * through its descriptor, and the lookup before a create is
		 * where that is seen first. */
		volume_member_error(v, mb, -r, "stat");
		return;
	}
	if (!S_ISREG(p->s.st_mode) || p->cached) {
		*a->st = p->s; /* not ours to interpret, or its size known */
		*a->ident = p->ident; /* a directory's, or the cached file's */
		if (p->cached)
			ecfile_fill_size(a->st, p->size, volume_k(v));
		a->whole = true;
		return;
	}
	if (a->first < 0)
		a->first = mb;
	if (p->have_header)
		a->hs[mb] = &p->h;
}

/* A regular file's answer from the probes taken: the lstat of the first
 * member holding the trusted file's header (else of the first with a
 * chunk), its size from that header or from the open file, which knows it
 * best (buffered writes included); remembered in the size cache. */
static void finish_stat(volume *v, const struct stat_probe *p, struct stat_answer *a,
                        uint64_t epoch)
{
	int ref = ecfile_trusted_header(a->hs, volume_n(v)), from = a->first;
	uint64_t size = 0;

	*a->ident = 0;
	for (int mb = 0; ref >= 0 && mb < volume_n(v); mb++)
		if (a->hs[mb] && rules_same_file(a->hs[mb], a->hs[ref])) {
			from = mb;
			break;
		}
	*a->st = p[from].s;
	if (ref >= 0) {
		size = a->hs[ref]->size;
		*a->ident = chunk_file_ident(a->hs[ref]->file_id);
		if (!ecfile_open_size(v, a->hs[ref]->file_id, &size))
			size_cache_put(volume_sizes(v), from, a->st, epoch, size, *a->ident);
	}
	ecfile_fill_size(a->st, size, volume_k(v));
}

int objects_stat_ident(volume *v, const char *path, struct stat *st, uint64_t *ident)
{
	uint64_t unasked, epoch = size_cache_epoch(volume_sizes(v));
	struct stat_answer a = { .st = st, .ident = ident ? ident : &unasked, .rc = -ENOENT,
	                         .first = -1 };
	struct stat_probe p[STRIPE_MAX_N];
	int rcs[STRIPE_MAX_N];

	if (!volume_usable(v))
		return -EIO;
	/* The first member most often answers alone (a directory, a file whose
	 * size is cached); else the others are asked at once: a name that is
	 * not there, or a regular file's headers. */
	uint64_t rest = 0;
	int first = -1;
	for (int mb = 0; mb < volume_n(v); mb++) {
		p[mb] = (struct stat_probe){ .v = v, .mb = mb, .path = path, .want_ident = !!ident };
		/* a member being rebuilt may hold a name removed meanwhile */
		if (!volume_member_answers(v, mb))
			continue;
		if (first < 0)
			first = mb;
		else
			rest |= 1ull << mb;
	}
	/* On the relay, in order, both steps take one hand-off: the others'
	 * probes come after the first's and skip once it answered it all. */
	bool together = first >= 0 && rest && volume_all_relayed(v);
	if (together) {
		for (int mb = 0; mb < volume_n(v); mb++)
			if (rest >> mb & 1)
				p[mb].lead = &p[first];
		stat_probes_run(v, rest | 1ull << first, p, rcs);
	} else if (first >= 0) {
		rcs[first] = volume_on_member(v, first, stat_probe_run, &p[first]);
	}
	if (first >= 0)
		take_probe(v, first, &p[first], rcs[first], &a);
	if (!a.whole && rest) {
		if (!together)
			stat_probes_run(v, rest, p, rcs);
		for (int mb = 0; mb < volume_n(v) && !a.whole; mb++)
			if (rest >> mb & 1)
				take_probe(v, mb, &p[mb], rcs[mb], &a);
	}
	if (a.whole)
		return 0;
	if (a.first < 0)
		return a.rc;
	finish_stat(v, p, &a, epoch);
	return 0;
}

uint64_t objects_stat_epoch(volume *v)
{
	return size_cache_epoch(volume_sizes(v));
}

bool objects_stat_from(volume *v, int mb, struct stat *st, uint64_t *ident)
{
	uint64_t size;

	*ident = 0;
	if (!S_ISREG(st->st_mode))
		return true;
	if (!size_cache_get(volume_sizes(v), mb, st, &size, ident))
		return false;
	ecfile_fill_size(st, size, volume_k(v));
	return true;
}
