/* SPDX-License-Identifier: MIT */
/*
 * Stat and identity of any object by its path (objects.h).  Each member
 * asked runs a probe on its worker: its lstat and, for a regular file
 * whose size is not remembered (size_cache.h) nor known to an open file,
 * the chunk header.  A regular file's answer is the trusted header's
 * (ecfile_trusted_header), with the open file's size when it is open;
 * every object's mode and owner are those most members hold (votes.h).
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
#include "dirstamps.h"
#include "ecfile.h"
#include "memberio.h"
#include "memberops.h"
#include "reader_rules.h"
#include "stripe.h"
#include "volume_internal.h"
#include "votes.h"

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
	 * which runs before: only the lstat, for the vote, once the lead has
	 * answered it all. */
	struct stat_probe *lead;
	bool whole;      /* this probe answers it all (atomic, for the others) */
	const char *attrs; /* the volume root's stand-in (volume_attrs_path), or NULL */
	bool votes;      /* s's mode and owner are this member's word (settle_attrs) */
	struct timespec ctime; /* of the copy that holds them */
};

/* The volume root's mode and owner in s, from its stand-in on the
 * member; a member without one (not yet rebuilt) does not vote. */
static void take_standin(struct stat_probe *p, struct stat *s)
{
	struct stat a;
	int fd = volume_object_fd(p->v, p->mb, p->attrs);
	p->votes = fd >= 0 && MIO_CALL(fstat(fd, &a)) == 0 && S_ISDIR(a.st_mode);
	if (fd >= 0)
		MIO_CALL(close(fd));
	if (!p->votes)
		return;
	s->st_mode = (s->st_mode & S_IFMT) | (a.st_mode & 07777);
	s->st_uid = a.st_uid;
	s->st_gid = a.st_gid;
	p->ctime = a.st_ctim;
}

/* On the member's worker (volume_on_member): its lstat and, for a regular
 * file, the chunk header. */
static int stat_probe_run(void *arg)
{
	struct stat_probe *p = arg;
	struct stat s;
	uint8_t buf[CHUNK_HEADER_MAX];
	chunk_header h;

	/* the lead answered it all: this member's lstat only, for the vote */
	bool light = p->lead && __atomic_load_n(&p->lead->whole, __ATOMIC_ACQUIRE);
	int ofd = volume_object_fd(p->v, p->mb, p->path);
	if (ofd < 0) {
		/* ENOENT: the name or a directory above it is missing here;
		 * another error is the answer (ENOTDIR, ENAMETOOLONG) or the
		 * member's breakage, judged as a directory's (take_probe). */
		p->from_dir = ofd != -ENOENT;
		return p->rc = ofd;
	}
	int r = MIO_CALL(fstat(ofd, &s)) < 0 ? -errno : 0;
	p->votes = r == 0;
	p->ctime = s.st_ctim;
	if (r == 0 && p->attrs)
		take_standin(p, &s);
	if (light) {
		MIO_CALL(close(ofd));
		p->s = s;
		return p->rc = r;
	}
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

/* Members cut past their bound (volume_ask_members) say nothing: the
 * others answer, the lowest of them in the first's place if it was cut
 * (whose probes were whole, since the first's never ended). */
static void first_of_the_rest(uint64_t cut, int *first, uint64_t *rest)
{
	*rest &= ~cut;
	if (*first >= 0 && (cut >> *first & 1)) {
		*first = *rest ? __builtin_ctzll(*rest) : -1;
		if (*first >= 0)
			*rest &= ~(1ull << *first);
	}
}

/* The probes of the members in mask (volume_ask_members): with a member
 * timeout at once, without one inline.  Returns the members cut past
 * their bound. */
static uint64_t stat_probes_run(volume *v, uint64_t mask, struct stat_probe *p, int *rcs)
{
	void *args[STRIPE_MAX_N];
	for (int mb = 0; mb < volume_n(v); mb++)
		args[mb] = &p[mb];
	return volume_ask_members(v, mask, stat_probe_run, args, rcs, true);
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

/* The mode bits or the owner of the members' copies, for votes_winner. */
static bool same_perm(const void *ctx, int a, int b)
{
	const struct stat_probe *p = ctx;
	return (p[a].s.st_mode & 07777) == (p[b].s.st_mode & 07777);
}

static bool same_owner(const void *ctx, int a, int b)
{
	const struct stat_probe *p = ctx;
	return p[a].s.st_uid == p[b].s.st_uid && p[a].s.st_gid == p[b].s.st_gid;
}

/* The mode bits and owner of the answer (st), settled by majority among
 * the members whose probe answered (asked) with an object of st's type
 * (votes.h): a member that differs holds a wrong copy, never believed
 * (votes_wrong_copy). */
static void settle_attrs(volume *v, const char *path, const struct stat_probe *p,
                         const int *rcs, uint64_t asked, struct stat *st)
{
	struct timespec ctimes[STRIPE_MAX_N];
	uint64_t voters = 0;

	for (int mb = 0; mb < volume_n(v); mb++) {
		if (asked >> mb & 1 && rcs[mb] == 0 && p[mb].rc == 0 && p[mb].votes &&
		    (p[mb].s.st_mode & S_IFMT) == (st->st_mode & S_IFMT))
			voters |= 1ull << mb;
		ctimes[mb] = p[mb].ctime;
	}
	if (__builtin_popcountll(voters) < 2)
		return;
	int perm = votes_winner(volume_n(v), voters, ctimes, same_perm, p);
	int owner = votes_winner(volume_n(v), voters, ctimes, same_owner, p);
	st->st_mode = (st->st_mode & S_IFMT) | (p[perm].s.st_mode & 07777);
	st->st_uid = p[owner].s.st_uid;
	st->st_gid = p[owner].s.st_gid;
	for (int mb = 0; mb < volume_n(v); mb++) {
		if (!(voters >> mb & 1) || (same_perm(p, mb, perm) && same_owner(p, mb, owner)))
			continue;
		char held[64], majority[64];
		snprintf(held, sizeof(held), "mode %04o owned by %u:%u",
		         (unsigned)(p[mb].s.st_mode & 07777), (unsigned)p[mb].s.st_uid,
		         (unsigned)p[mb].s.st_gid);
		snprintf(majority, sizeof(majority), "%04o %u:%u", (unsigned)(st->st_mode & 07777),
		         (unsigned)st->st_uid, (unsigned)st->st_gid);
		votes_wrong_copy(v, mb, path, held, majority);
	}
}

/* The answer for path from its members' probes (p, their calls' rcs): the
 * first member's whole answer, else the regular file's from the others'
 * headers; the mode and owner by majority of all asked (first and rest). */
static int conclude(volume *v, const char *path, const struct stat_probe *p, const int *rcs,
                    int first, uint64_t rest, uint64_t epoch, struct stat *st, uint64_t *ident)
{
	struct stat_answer a = { .st = st, .ident = ident, .rc = -ENOENT, .first = -1 };

	if (first >= 0)
		take_probe(v, first, &p[first], rcs[first], &a);
	bool whole = a.whole; /* the others' lstats only, then: their errors still told */
	for (int mb = 0; mb < volume_n(v); mb++)
		if (rest >> mb & 1 && (!a.whole || (whole && rcs[mb] < 0)))
			take_probe(v, mb, &p[mb], rcs[mb], &a);
	if (!a.whole && a.first < 0)
		return a.rc;
	if (!a.whole)
		finish_stat(v, p, &a, epoch);
	settle_attrs(v, path, p, rcs, first >= 0 ? rest | 1ull << first : 0, st);
	return 0;
}

/* The probes of path on every member a query asks (volume_query_members:
 * *first the first of them, *rest the others). */
static void probes_prepare(volume *v, const char *path, bool want_ident, struct stat_probe *p,
                           int *first, uint64_t *rest)
{
	const char *attrs = volume_attrs_path(v, path);
	/* a member being rebuilt may hold a name removed meanwhile, and one
	 * stuck in a call would hold the stat until the member timeout */
	uint64_t ask = volume_query_members(v);

	*first = -1;
	*rest = 0;
	for (int mb = 0; mb < volume_n(v); mb++) {
		p[mb] = (struct stat_probe){ .v = v, .mb = mb, .path = path, .want_ident = want_ident,
		                             .attrs = attrs != path ? attrs : NULL };
		if (!(ask >> mb & 1))
			continue;
		if (*first < 0)
			*first = mb;
		else
			*rest |= 1ull << mb;
	}
}

int objects_stat_ident(volume *v, const char *path, struct stat *st, uint64_t *ident)
{
	uint64_t unasked, rest, epoch = size_cache_epoch(volume_sizes(v));
	struct stat_probe p[STRIPE_MAX_N];
	int rcs[STRIPE_MAX_N], first;

	if (!volume_usable(v))
		return -EIO;
	/* The first member most often answers alone (a directory, a file whose
	 * size is cached), the others giving their lstat for the vote; else
	 * they are asked in full: a name that is not there, or a regular
	 * file's headers. */
	probes_prepare(v, path, !!ident, p, &first, &rest);
	/* Every member answering is asked, for the vote on the mode and owner
	 * (settle_attrs): once the first answered it all, the others' probes
	 * are their lstat alone.  On the relay, in order, both steps take one
	 * hand-off: the others' probes come after the first's. */
	for (int mb = 0; mb < volume_n(v); mb++)
		if (rest >> mb & 1)
			p[mb].lead = &p[first];
	bool together = first >= 0 && rest && volume_all_relayed(v);
	uint64_t cut = 0;
	if (together) {
		cut = stat_probes_run(v, rest | 1ull << first, p, rcs);
	} else if (first >= 0) {
		bool gone;
		rcs[first] = volume_ask_member(v, first, stat_probe_run, &p[first], &gone);
		cut = gone ? 1ull << first : 0;
	}
	if (rest && !together)
		cut |= stat_probes_run(v, rest, p, rcs);
	first_of_the_rest(cut, &first, &rest);
	return conclude(v, path, p, rcs, first, rest, epoch, st, ident ? ident : &unasked);
}

/* True with *st if member mb's fstat taken after the change (at) is still
 * the directory's stamp the daemon knows there. */
static bool seen_stands(volume *v, int mb, const volume_dir_at *at, struct stat *st)
{
	dirstamp seen, known;
	if (!(at->seen_mask >> mb & 1))
		return false;
	dirstamp_of(&at->seen[mb], &seen);
	if (!dirstamps_last(mop_dirstamps(v), mb, seen.ino, &known) ||
	    !dirstamp_same(&known, &seen))
		return false;
	*st = at->seen[mb];
	return true;
}

int objects_dir_stat_at(volume *v, const char *path, const volume_dir_at *at, struct stat *st)
{
	uint64_t rest, unasked, epoch = size_cache_epoch(volume_sizes(v));
	struct stat_probe p[STRIPE_MAX_N];
	int rcs[STRIPE_MAX_N], first;

	if (!volume_usable(v) || volume_attrs_path(v, path) != path)
		return -EAGAIN;
	probes_prepare(v, path, false, p, &first, &rest);
	uint64_t asked = first >= 0 ? rest | 1ull << first : 0;
	if (!asked || (asked & ~at->held))
		return -EAGAIN;
	for (int mb = 0; mb < volume_n(v); mb++) {
		if (!(asked >> mb & 1))
			continue;
		int r = 0;
		if (!seen_stands(v, mb, at, &p[mb].s) && MIO_CALL(fstat(at->fds[mb], &p[mb].s)) < 0)
			r = -errno;
		if (r == 0 && !S_ISDIR(p[mb].s.st_mode))
			return -EAGAIN;
		p[mb].rc = rcs[mb] = r;
		p[mb].votes = r == 0;
		p[mb].ctime = p[mb].s.st_ctim;
	}
	return conclude(v, path, p, rcs, first, rest, epoch, st, &unasked);
}

/* One member's probes of many paths, on its worker (objects_stat_many). */
struct many_probes {
	struct stat_probe *p; /* count rows of volume_n probes */
	int *rcs;             /* the same shape */
	size_t count;
	int n, mb;
};

static int many_probes_run(void *arg)
{
	struct many_probes *m = arg;
	for (size_t i = 0; i < m->count; i++) {
		size_t at = i * (size_t)m->n + (size_t)m->mb;
		m->rcs[at] = stat_probe_run(&m->p[at]);
	}
	return 0;
}

void objects_stat_many(volume *v, const char *const *paths, size_t count, struct stat *st,
                       uint64_t *ident, int *rc)
{
	int n = volume_n(v), first = -1, mrcs[STRIPE_MAX_N];
	uint64_t rest = 0, epoch = size_cache_epoch(volume_sizes(v));
	struct stat_probe *p = g_new(struct stat_probe, count * (size_t)n);
	int *rcs = g_new(int, count * (size_t)n);
	struct many_probes m[STRIPE_MAX_N];
	void *args[STRIPE_MAX_N];

	for (size_t i = 0; i < count; i++) {
		rc[i] = -EIO;
		probes_prepare(v, paths[i], true, &p[i * (size_t)n], &first, &rest);
	}
	uint64_t asked = first >= 0 ? rest | 1ull << first : 0;
	for (size_t i = 0; i < count && first >= 0; i++)
		for (int mb = 0; mb < n; mb++)
			if (rest >> mb & 1)
				p[i * (size_t)n + (size_t)mb].lead = &p[i * (size_t)n + (size_t)first];
	for (int mb = 0; mb < n; mb++) {
		m[mb] = (struct many_probes){ p, rcs, count, n, mb };
		args[mb] = &m[mb];
	}
	/* The first member's probes, then the others' at once (their lstat
	 * alone where the first answered it all, as in objects_stat_ident),
	 * each member's one after the other on its own worker: two hand-offs
	 * for all the names, not one each. */
	if (count && asked && volume_usable(v)) {
		uint64_t cut = volume_ask_members(v, 1ull << first, many_probes_run, args, mrcs,
		                                  false);
		/* the first cut past its bound: the others answer in full */
		for (size_t i = 0; i < count * (size_t)n && cut; i++)
			p[i].lead = NULL;
		if (rest)
			cut |= volume_ask_members(v, rest, many_probes_run, args, mrcs, false);
		first_of_the_rest(cut, &first, &rest);
		asked = first >= 0 ? rest | 1ull << first : 0;
	}
	for (size_t i = 0; i < count && asked && volume_usable(v); i++) {
		size_t at = i * (size_t)n;
		for (int mb = 0; mb < n; mb++)
			if (asked >> mb & 1 && mrcs[mb] < 0)
				rcs[at + (size_t)mb] = mrcs[mb]; /* the member's worker lost */
		rc[i] = conclude(v, paths[i], &p[at], &rcs[at], first, rest, epoch, &st[i],
		                 &ident[i]);
	}
	g_free(p);
	g_free(rcs);
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
