/* SPDX-License-Identifier: MIT */
/*
 * Member roots watched by inotify and the mount table (root_watch.h).
 */
#include "root_watch.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "superblock.h"

/* The watches' masks: a directory on the way to the root (or the root)
 * removed, moved, or its permissions changed (a member made unreadable
 * fails the check); in .ecfs also an entry removed or moved away (only
 * the superblock's counts, see drain_events). */
#define PATH_EVENTS (IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB | IN_MASK_ADD | IN_ONLYDIR)
#define META_EVENTS (PATH_EVENTS | IN_DELETE | IN_MOVED_FROM)

struct root_watch {
	pthread_mutex_t lock; /* guards all below; order: a leaf */
	int inotify;          /* -1 without inotify */
	int mounts;           /* /proc/self/mountinfo, -1 without it */
	uint64_t epoch;       /* events read so far that could change a root */
	int n;
	bool *watched;
	uint64_t *verified;   /* epoch + 1 of the last good check, 0 for none */
};

root_watch *root_watch_new(int n)
{
	root_watch *w = g_new0(root_watch, 1);

	pthread_mutex_init(&w->lock, NULL);
	w->n = n;
	w->watched = g_new0(bool, n);
	w->verified = g_new0(uint64_t, n);
	w->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	w->mounts = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	return w;
}

void root_watch_free(root_watch *w)
{
	if (!w)
		return;
	if (w->inotify >= 0)
		close(w->inotify);
	if (w->mounts >= 0)
		close(w->mounts);
	pthread_mutex_destroy(&w->lock);
	g_free(w->watched);
	g_free(w->verified);
	g_free(w);
}

/* Watches path and every directory above it for removal or a move: each
 * would make the path lead elsewhere. */
static bool watch_path(root_watch *w, const char *path)
{
	char dir[PATH_MAX];

	g_strlcpy(dir, path, sizeof(dir));
	for (;;) {
		if (inotify_add_watch(w->inotify, dir, PATH_EVENTS) < 0)
			return false;
		char *slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return true; /* "/" itself cannot be removed or moved */
		*slash = '\0';
	}
}

void root_watch_member(root_watch *w, int idx, const char *path, int rootfd,
                       const char *meta_dir, bool local)
{
	char real[PATH_MAX], meta[PATH_MAX];
	struct stat a, b;

	assert(idx >= 0 && idx < w->n);
	pthread_mutex_lock(&w->lock);
	w->watched[idx] = false;
	w->verified[idx] = 0;
	pthread_mutex_unlock(&w->lock);
	/* The path the root checks stat must be the one watched: absolute, no
	 * symbolic link on the way, leading to rootfd's directory.  These ask
	 * the member, so they are made without the lock. */
	bool ok = w->inotify >= 0 && w->mounts >= 0 && rootfd >= 0 && local &&
	          path[0] == '/' && realpath(path, real) && strcmp(real, path) == 0 &&
	          stat(path, &a) == 0 && fstat(rootfd, &b) == 0 && a.st_dev == b.st_dev &&
	          a.st_ino == b.st_ino;
	snprintf(meta, sizeof(meta), "%s/%s", path, meta_dir);
	ok = ok && watch_path(w, path) && inotify_add_watch(w->inotify, meta, META_EVENTS) >= 0;
	pthread_mutex_lock(&w->lock);
	w->watched[idx] = ok;
	pthread_mutex_unlock(&w->lock);
}

/* True if the inotify events queued include one that could change a
 * root: a directory's own event (they come without a name), or the
 * superblock's.  Entries of watched directories come and go and change
 * their attributes (files at the volume root, journals and heal markers
 * in .ecfs) without touching any root.  A read that does not fill the
 * buffer took every event queued. */
static bool drain_events(int fd)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool relevant = false;
	ssize_t len;

	do {
		len = read(fd, buf, sizeof(buf));
		for (char *p = buf; len > 0 && p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (!ev->len || strcmp(ev->name, SUPERBLOCK_FILE) == 0)
				relevant = true; /* also IN_Q_OVERFLOW, IN_IGNORED, IN_UNMOUNT */
			p += sizeof(*ev) + ev->len;
		}
	} while (len > (ssize_t)(sizeof(buf) - sizeof(struct inotify_event) - NAME_MAX - 1));
	return relevant;
}

/* Reads what happened since the last look (under w->lock). */
static void look(root_watch *w)
{
	struct pollfd fds[2] = { { .fd = w->inotify, .events = POLLIN },
	                         { .fd = w->mounts, .events = POLLPRI } };

	assert(pthread_mutex_trylock(&w->lock) == EBUSY); /* held, by some thread */
	if (poll(fds, 2, 0) <= 0)
		return;
	bool changed = (fds[1].revents & (POLLPRI | POLLERR)) != 0;
	if ((fds[0].revents & POLLIN) && drain_events(w->inotify))
		changed = true;
	if (changed)
		w->epoch++;
}

bool root_watch_quiet(root_watch *w, int idx, uint64_t *epoch)
{
	*epoch = 0;
	if (!w)
		return false;
	assert(idx >= 0 && idx < w->n);
	pthread_mutex_lock(&w->lock);
	bool watched = w->watched[idx];
	if (watched)
		look(w);
	*epoch = w->epoch;
	bool quiet = watched && w->verified[idx] == w->epoch + 1;
	pthread_mutex_unlock(&w->lock);
	return quiet;
}

void root_watch_verified(root_watch *w, int idx, uint64_t epoch)
{
	if (!w)
		return;
	assert(idx >= 0 && idx < w->n);
	pthread_mutex_lock(&w->lock);
	assert(epoch <= w->epoch); /* root_watch_quiet's, which only grows */
	/* An event read during the check leaves the member unverified. */
	if (w->watched[idx] && epoch == w->epoch)
		w->verified[idx] = epoch + 1;
	pthread_mutex_unlock(&w->lock);
}
