/* SPDX-License-Identifier: MIT */
/*
 * -o events=PROGRAM: the queue of the volume's events, the rate limit
 * and the thread that runs the program (events.h).
 */
#include "events.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"
#include "ratelimit.h"

/* Events waiting for the thread, at most: a program slower than the
 * events loses the newest, counted in the next one's detail. */
#define QUEUE_MAX 64
/* How long a program may run, and how long it gets at unmount. */
#define RUN_LIMIT_US (60 * G_USEC_PER_SEC)
#define STOP_GRACE_US (3 * G_USEC_PER_SEC)

struct event {
	volume_event ev;
	int member;
	char *path, *detail;
	uint64_t held;
};

struct events {
	char *program, *mountpoint;
	volume *v;
	pthread_t thread;
	pthread_mutex_t lock; /* a leaf: events are posted under any other lock */
	pthread_cond_t wake;
	GQueue queue;         /* struct event */
	ratelimit *limit;
	uint64_t dropped;     /* queue full since the last event queued */
	bool stop;
	int64_t stop_us;      /* when stop was asked */
};

static void event_free(struct event *e)
{
	g_free(e->path);
	g_free(e->detail);
	g_free(e);
}

void events_post(events *e, volume_event ev, int member, const char *path, const char *detail)
{
	uint64_t held;

	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	/* one key per kind and member (-1: the volume's) */
	if (ratelimit_allow(e->limit, (uint64_t)ev << 32 | (uint32_t)(member + 1),
	                    g_get_monotonic_time(), &held)) {
		if (e->queue.length >= QUEUE_MAX) {
			e->dropped++;
		} else {
			struct event *q = g_new0(struct event, 1);
			*q = (struct event){ ev, member, g_strdup(path), g_strdup(detail),
			                     held + e->dropped };
			e->dropped = 0;
			g_queue_push_tail(&e->queue, q);
			pthread_cond_signal(&e->wake);
		}
	}
	pthread_mutex_unlock(&e->lock);
}

/* The program's environment for q, g_strfreev'd by the caller. */
static char **environment(events *e, const struct event *q)
{
	GPtrArray *env = g_ptr_array_new();
	char *detail = q->held ? g_strdup_printf("%s (%llu more held back)", q->detail ? q->detail : "",
	                                         (unsigned long long)q->held)
	                       : g_strdup(q->detail ? q->detail : "");

	g_ptr_array_add(env, g_strdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	                              "/sbin:/bin"));
	g_ptr_array_add(env, g_strconcat("ECFS_EVENT=", volume_event_name(q->ev), NULL));
	g_ptr_array_add(env, q->member >= 0 ? g_strdup_printf("ECFS_MEMBER=%d", q->member)
	                                    : g_strdup("ECFS_MEMBER="));
	g_ptr_array_add(env, g_strconcat("ECFS_MEMBER_DIR=", q->member >= 0
	                                 ? volume_member_path(e->v, q->member) : "", NULL));
	g_ptr_array_add(env, g_strconcat("ECFS_PATH=", q->path ? q->path : "", NULL));
	g_ptr_array_add(env, g_strconcat("ECFS_DETAIL=", detail, NULL));
	g_ptr_array_add(env, g_strconcat("ECFS_MOUNTPOINT=", e->mountpoint, NULL));
	g_ptr_array_add(env, NULL);
	g_free(detail);
	return (char **)g_ptr_array_free(env, FALSE);
}

/* Waits for the program's exit (e->lock not held), killing it when it
 * runs too long or the mount ends; it is always reaped. */
static void reap(events *e, pid_t pid, const char *what)
{
	int64_t start = g_get_monotonic_time();
	bool killed = false;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			break;
		int64_t now = g_get_monotonic_time();
		pthread_mutex_lock(&e->lock);
		bool late = e->stop && now - e->stop_us > STOP_GRACE_US;
		pthread_mutex_unlock(&e->lock);
		if (!killed && (late || now - start > RUN_LIMIT_US)) {
			ecfs_log(LOG_WARNING, "events: %s for %s runs too long: killed", e->program, what);
			kill(pid, SIGKILL);
			killed = true;
		}
		g_usleep(10000);
	}
	if (!killed && WIFEXITED(status) && WEXITSTATUS(status) != 0)
		ecfs_log(LOG_WARNING, "events: %s for %s exited with status %d", e->program, what,
		         WEXITSTATUS(status));
	else if (!killed && WIFSIGNALED(status))
		ecfs_log(LOG_WARNING, "events: %s for %s was killed by signal %d", e->program, what,
		         WTERMSIG(status));
}

/* Runs the program for q: stdin /dev/null, no other descriptor of the
 * daemon's but stdout and stderr, the usual umask (the daemon's is 0),
 * the signals' default actions.  The child of a threaded process makes
 * only async-signal-safe calls before execve. */
static void run(events *e, const struct event *q)
{
	char **env = environment(e, q);
	char *argv[] = { e->program, NULL };
	const char *what = volume_event_name(q->ev);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sigset_t none;

	sigemptyset(&none);
	pid_t pid = null < 0 ? -1 : fork();
	if (pid == 0) {
		for (int s = 1; s < NSIG; s++)
			signal(s, SIG_DFL);
		pthread_sigmask(SIG_SETMASK, &none, NULL);
		umask(022);
		if (dup2(null, 0) < 0 || close_range(3, ~0u, 0) < 0)
			_exit(127);
		execve(e->program, argv, env);
		_exit(127);
	}
	int err = errno;
	if (null >= 0)
		close(null);
	g_strfreev(env);
	if (pid < 0) {
		ecfs_log(LOG_WARNING, "events: cannot run %s for %s: %s", e->program, what,
		         g_strerror(err));
		return;
	}
	reap(e, pid, what);
}

static void *event_thread(void *arg)
{
	events *e = arg;

	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		struct event *q = g_queue_pop_head(&e->queue);
		if (!q) {
			pthread_cond_wait(&e->wake, &e->lock);
			continue;
		}
		pthread_mutex_unlock(&e->lock);
		run(e, q);
		event_free(q);
		pthread_mutex_lock(&e->lock);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* Frees e, its thread joined or never started. */
static void events_free(events *e)
{
	if (e->queue.length)
		ecfs_log(LOG_INFO, "events: %u not run at unmount", e->queue.length);
	g_queue_clear_full(&e->queue, (GDestroyNotify)event_free);
	ratelimit_free(e->limit);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->wake);
	g_free(e->program);
	g_free(e->mountpoint);
	g_free(e);
}

events *events_start(const char *program, volume *v, const char *mountpoint)
{
	events *e = g_new0(events, 1);

	e->program = g_strdup(program);
	e->mountpoint = g_strdup(mountpoint);
	e->v = v;
	e->limit = ratelimit_new((int64_t)EVENTS_INTERVAL_S * G_USEC_PER_SEC);
	g_queue_init(&e->queue);
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->wake, NULL);
	if (access(program, X_OK) < 0)
		ecfs_log(LOG_WARNING, "events: %s: %s (events will fail to run it)", program,
		         g_strerror(errno));
	int rc = pthread_create(&e->thread, NULL, event_thread, e);
	if (rc != 0) {
		ecfs_log(LOG_ERR, "events: cannot start the thread: %s", g_strerror(rc));
		events_free(e);
		return NULL;
	}
	return e;
}

void events_stop(events *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	e->stop_us = g_get_monotonic_time();
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->thread, NULL);
	events_free(e);
}
