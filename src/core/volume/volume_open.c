/* SPDX-License-Identifier: MIT */
/*
 * Opening and closing a volume: the members probed and placed
 * (volume_probe.c), assembled into a volume, locked (volume_lock.c), the
 * defaults set (volume_create.c) and the member workers started; the
 * accessors, the members' descriptors, and the caches shared by every
 * open file (codes, checksum objects, the open-file table).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "checksum.h"
#include "dirstamps.h"
#include "fault.h"
#include "fdpool.h"
#include "log.h"
#include "memberio.h"
#include "memberops.h"
#include "mounts.h"
#include "reader_rules.h"
#include "record.h"
#include "root_watch.h"
#include "superblock.h"
#include "volume_private.h"

/* A member fd replaced while mounted (vol_keep_old_fd). */
struct old_fd {
	int idx, fd;
};

static struct fault_rules *fault_setup(void);

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
void vol_note_memory_only(volume *v, int idx)
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

/* The watchdog of the member I/O gave up on member idx (memberio.h). */
static void member_timed_out(void *ctx, int idx, unsigned timeout_ms)
{
	char why[96];

	snprintf(why, sizeof(why), "no answer in %u.%u s (a member call hangs)",
	         timeout_ms / 1000, timeout_ms % 1000 / 100);
	vol_fail_member(ctx, idx, why);
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
		vol_note_memory_only(v, i);
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
void vol_watch_root(volume *v, int idx)
{
	struct root_check rc = { v, idx };

	if (volume_member_ok(v, idx))
		volume_on_member(v, idx, watch_root_call, &rc);
}

/* Starts the member workers; the fault rules (*faults, taken over) apply
 * from here on: the lock files are no member operation a rule counts. */
/* The descriptors open files may hold on the members: the open-file limit
 * now (raised at start, fdlimit.h) less the headroom fdpool_cap_for_limit
 * leaves for the rest of the daemon. */
static int open_files_cap(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = 1024;
	return fdpool_cap_for_limit(rl.rlim_cur);
}

static int start_members(volume *v, struct fault_rules **faults, const volume_options *opts,
                         char **message)
{
	v->mops.faults = *faults;
	*faults = NULL;
	v->mio = memberio_new(v->n, opts->run.timeout_ms, member_timed_out, v);
	if (v->mio) {
		memberio_force_slow(v->mio, MIO_WRITE, fault_slow(v->mops.faults, FAULT_WRITE));
		memberio_set_spin(v->mio, opts->run.spin_us);
		if (opts->run.give_up_at_bound)
			memberio_give_up_at_bound(v->mio);
	}
	v->room = space_new(v->n);
	v->sizes = size_cache_new();
	v->fds = fdpool_new(open_files_cap());
	if (!v->mio) {
		*message = g_strdup("cannot start the member I/O threads");
		return -ENOMEM;
	}
	v->watch = root_watch_new(v->n);
	for (int i = 0; i < v->n; i++)
		vol_watch_root(v, i);
	return 0;
}

/* A member root is kept 0700 and the daemon's (rootattrs.h), which keeps
 * local users out of the member tree; a directory above it that only root
 * can search also hides the members' names and sizes, and guards a
 * member an older build left open, or one mounted read-only, which no
 * mount closes (docs/SECURITY.md). */
static void warn_reachable(probe *const *slot, int n)
{
	for (int i = 0; i < n; i++)
		if (slot[i]->state != P_MISSING && !slot[i]->guarded)
			ecfs_log(LOG_NOTICE, "member %d (%s) is in a directory local users can "
			         "search: ecfs keeps its root %04o, out of their reach; a "
			         "directory above it of mode 0700 owned by root is still advised "
			         "(docs/SECURITY.md)", i, slot[i]->path, VOLUME_MEMBER_ROOT_MODE);
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
	ref = vol_probe_members(pr, paths, n, opts, message);
	rc = ref < 0 ? ref : 0;
	if (rc == 0) {
		vol_place_members(pr, n, slot);
		for (int i = 0; i < n; i++)
			record_set_root(i, slot[i]->rootfd);
		v = volume_assemble(slot, n, &pr[ref].sb, opts->run.read_only);
		rc = check_quorum(v, message);
	}
	if (rc == 0)
		rc = vol_lock_members(v, opts->run.read_only, opts->run.timeout_ms, message);
	if (rc == 0)
		rc = vol_set_defaults(v, &pr[ref].sb, opts, message);
	if (rc == 0)
		rc = start_members(v, &faults, opts, message);
	if (rc == 0 && volume_failed_count(v))
		ecfs_log(LOG_WARNING, "volume opened degraded: %d of %d members failed",
		         volume_failed_count(v), n);
	if (rc == 0) {
		vol_find_standin(v);
		warn_reachable(slot, n);
	}
	for (int i = 0; i < n; i++)
		vol_probe_free(&pr[i]);
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

void volume_close(volume *v)
{
	if (!v)
		return;
	fault_release(v->mops.faults); /* no join waits on a hung member */
	vol_clear_lock_texts(v);
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
	fdpool_free(v->fds);
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
	if (v->damaged)
		g_ptr_array_free(v->damaged, TRUE);
	if (v->lost)
		g_ptr_array_free(v->lost, TRUE);
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
const volume_file_defaults *volume_defaults(const volume *v) { return &v->defaults; }
const volume_runtime *volume_settings(const volume *v) { return &v->settings; }
const char *volume_member_path(const volume *v, int idx) { return v->mem[idx].path; }
const uint8_t *volume_uuid(const volume *v) { return v->uuid; }

const char *volume_header_misfit(const volume *v, const chunk_header *h, int mb)
{
	rules_volume r = { .uuid = v->uuid, .k = v->k, .m = v->m, .strip_max = v->strip_max };
	return rules_header_misfit(h, &r, mb);
}
memberio *volume_memberio(volume *v) { return v->mio; }
space *volume_space(volume *v) { return v->room; }
size_cache *volume_sizes(volume *v) { return v->sizes; }
fdpool *volume_fd_pool(volume *v) { return v->fds; }
bool *volume_unsettled_flag(volume *v) { return &v->names_unsettled; }
uint64_t *volume_wrong_copies(volume *v) { return &v->wrong_copies; }
int volume_root_fd(const volume *v, int idx) { return v->mem[idx].rootfd; }
int volume_meta_fd(const volume *v, int idx) { return v->mem[idx].metafd; }

/* Under v->lock: fd, member idx's, stays open until volume_close (which
 * closes it unless the member was given up, like the member's own fds). */
void vol_keep_old_fd(volume *v, int idx, int fd)
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
		vol_keep_old_fd(v, idx, fd); /* the root was replaced meanwhile: this call's only */
	} else if (mb->logfd < 0 || replace) {
		vol_keep_old_fd(v, idx, mb->logfd);
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
	bool full = !code && g_hash_table_size(v->codes) >= VOLUME_CODES_MAX;
	if (!code && !full && ec_create(p, &code) == 0) {
		g_hash_table_insert(v->codes, key, code);
		key = NULL;
	}
	bool warn = full && !v->warned_codes;
	v->warned_codes |= full;
	pthread_mutex_unlock(&v->cache_lock);
	if (warn)
		ecfs_log(LOG_ERR, "files of more than %d sets of code parameters: those of code "
		         "%s are not read (the first refused)", VOLUME_CODES_MAX, key);
	g_free(key);
	return full ? NULL : code;
}

void volume_files_lock(volume *v) { pthread_mutex_lock(&v->files_lock); }
void volume_files_unlock(volume *v) { pthread_mutex_unlock(&v->files_lock); }
void *volume_files_lookup(volume *v, const uint8_t id[16])
{
	return g_hash_table_lookup(v->files, id);
}
void volume_files_insert(volume *v, const uint8_t *id, void *f)
{
	assert(!g_hash_table_contains(v->files, id));
	g_hash_table_insert(v->files, (gpointer)id, f);
}
void volume_files_remove(volume *v, const uint8_t id[16])
{
	memcpy(v->gone_ids[v->files_gone % VOLUME_FILES_GONE], id, 16);
	v->files_gone++;
	g_hash_table_remove(v->files, id);
}
uint64_t volume_files_gone_count(volume *v)
{
	volume_files_lock(v);
	uint64_t count = v->files_gone;
	volume_files_unlock(v);
	return count;
}
bool volume_files_gone_since(volume *v, const uint8_t id[16], uint64_t count)
{
	if (v->files_gone - count > VOLUME_FILES_GONE)
		return true;
	for (uint64_t i = count; i < v->files_gone; i++)
		if (!memcmp(v->gone_ids[i % VOLUME_FILES_GONE], id, 16))
			return true;
	return false;
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

bool volume_file_is_open(volume *v, const uint8_t file_id[16])
{
	volume_files_lock(v);
	bool is_open = volume_files_lookup(v, file_id) != NULL;
	volume_files_unlock(v);
	return is_open;
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

bool volume_journals_none(volume *v)
{
	return __atomic_load_n(&v->journals_none, __ATOMIC_ACQUIRE);
}

void volume_set_journals_none(volume *v, bool none)
{
	__atomic_store_n(&v->journals_none, none, __ATOMIC_RELEASE);
}
