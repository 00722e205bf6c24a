// SPDX-License-Identifier: MIT
/* Fault injection rules (fault.h): the ECFS_FAULT grammar and the
 * matching of member operations against it. */
#include "fault.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "log.h"

typedef struct rule {
	int member;          /* -1: any */
	int ops;             /* FAULT_* bits */
	long after, count;   /* count -1: all the rest */
	int err;             /* -1: none given */
	long delay_ms;
	bool hang;
	bool slow;           /* no fault: the member is judged slow (fault_slow) */
	char *armed;         /* NULL, or the file that must exist for the rule to count */
	long seen;           /* atomic: matching operations so far */
} rule;

struct fault_rules {
	rule *rules;
	int n;
	long abort_after;
	pthread_mutex_t lock; /* guards released, hung calls wait on cond; order: a
	                      * leaf, taken inside a member call */
	pthread_cond_t cond;
	bool released;
};

static const struct { const char *name; int err; } errnos[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EROFS", EROFS }, { "EDQUOT", EDQUOT },
	{ "EFBIG", EFBIG }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM },
	{ "ETIMEDOUT", ETIMEDOUT },
};

static const struct { const char *name; int ops; } kinds[] = {
	{ "read", FAULT_READ }, { "write", FAULT_WRITE }, { "sync", FAULT_SYNC },
	{ "meta", FAULT_META }, { "any", FAULT_ANY }, { "data", FAULT_DATA },
};

/* A decimal number >= 0 that fits a long, the whole string. */
static bool parse_num(const char *s, long *out)
{
	char *end;
	long x;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	x = strtol(s, &end, 10);
	if (errno || *end)
		return false;
	*out = x;
	return true;
}

static bool parse_errno(const char *s, int *out)
{
	long x;

	for (size_t i = 0; i < G_N_ELEMENTS(errnos); i++)
		if (!strcmp(s, errnos[i].name)) {
			*out = errnos[i].err;
			return true;
		}
	if (!parse_num(s, &x) || x > 4095)
		return false;
	*out = (int)x;
	return true;
}

static bool parse_kind(const char *s, int *out)
{
	for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++)
		if (!strcmp(s, kinds[i].name)) {
			*out = kinds[i].ops;
			return true;
		}
	return false;
}

/* One key=value (or "hang") of a rule; false if unknown or bad. */
static bool parse_item(const char *item, rule *r, long *abort_after, bool *any)
{
	const char *eq = strchr(item, '=');
	g_autofree char *key = eq ? g_strndup(item, (size_t)(eq - item)) : g_strdup(item);
	const char *val = eq ? eq + 1 : NULL;
	long x;

	if (!strcmp(key, "hang") && !val)
		return r->hang = *any = true;
	if (!strcmp(key, "slow") && !val)
		return r->slow = *any = true;
	if (!val)
		return false;
	if (!strcmp(key, "op"))
		return parse_kind(val, &r->ops) && (*any = true);
	if (!strcmp(key, "errno"))
		return parse_errno(val, &r->err) && (*any = true);
	if (!strcmp(key, "armed") && *val && !r->armed) {
		r->armed = g_strdup(val);
		return true;
	}
	if (!parse_num(val, &x))
		return false;
	if (!strcmp(key, "member") && x < 64)
		r->member = (int)x;
	else if (!strcmp(key, "after"))
		r->after = x;
	else if (!strcmp(key, "count"))
		r->count = x;
	else if (!strcmp(key, "delay") && x <= INT_MAX)
		r->delay_ms = x;
	else if (!strcmp(key, "abort_after") && x > 0) {
		*abort_after = x;
		return true; /* global: makes no rule by itself */
	} else
		return false;
	*any = true;
	return true;
}

static char *describe(const rule *r)
{
	GString *s = g_string_new("fault injection: ");
	const char *kind = "any";

	for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++)
		if (kinds[i].ops == r->ops)
			kind = kinds[i].name;
	if (r->member >= 0)
		g_string_append_printf(s, "member %d, ", r->member);
	else
		g_string_append(s, "every member, ");
	g_string_append_printf(s, "%s operations after %ld", kind, r->after);
	if (r->armed)
		g_string_append_printf(s, " once %s exists", r->armed);
	if (r->count >= 0)
		g_string_append_printf(s, " (%ld of them)", r->count);
	if (r->delay_ms)
		g_string_append_printf(s, " wait %ld ms", r->delay_ms);
	if (r->slow) {
		g_string_append(s, ": judged slow, whatever their times");
		return g_string_free(s, FALSE);
	}
	if (r->hang)
		g_string_append(s, " hang");
	if (r->err > 0)
		g_string_append_printf(s, "%s fail with errno %d (%s)",
		                       r->delay_ms || r->hang ? ", then" : "", r->err,
		                       g_strerror(r->err));
	else if (r->err == 0)
		g_string_append(s, " report writes and syncs done without doing them");
	else if (!r->hang)
		g_string_append(s, ", then run");
	return g_string_free(s, FALSE);
}

fault_rules *fault_parse(const char *spec)
{
	fault_rules *fr;
	GArray *rules;
	long abort_after = 0;

	if (!spec || !*spec)
		return NULL;
	rules = g_array_new(FALSE, TRUE, sizeof(rule));
	g_auto(GStrv) parts = g_strsplit(spec, ";", -1);
	for (char **p = parts; *p; p++) {
		rule r = { .member = -1, .ops = FAULT_ANY, .count = -1, .err = -1 };
		bool any = false;
		g_auto(GStrv) items = g_strsplit(*p, ",", -1);
		for (char **it = items; *it; it++) {
			g_strstrip(*it);
			if (**it && !parse_item(*it, &r, &abort_after, &any))
				ecfs_log(LOG_WARNING, "ECFS_FAULT: ignoring '%s'", *it);
		}
		if (!any) {
			g_free(r.armed);
			continue;
		}
		if (r.err < 0 && !r.delay_ms && !r.hang && !r.slow)
			r.err = EIO; /* a rule that only says which operations fails them */
		g_autofree char *text = describe(&r);
		ecfs_log(LOG_WARNING, "%s", text);
		g_array_append_val(rules, r);
	}
	if (abort_after)
		ecfs_log(LOG_WARNING, "fault injection: abort (SIGKILL) after member write %ld",
		         abort_after);
	if (!rules->len && !abort_after) {
		g_array_free(rules, TRUE);
		return NULL;
	}
	fr = g_new0(fault_rules, 1);
	fr->n = (int)rules->len;
	fr->rules = (rule *)(void *)g_array_free(rules, FALSE);
	fr->abort_after = abort_after;
	pthread_mutex_init(&fr->lock, NULL);
	pthread_cond_init(&fr->cond, NULL);
	return fr;
}

void fault_free(fault_rules *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	for (int i = 0; i < r->n; i++)
		g_free(r->rules[i].armed);
	g_free(r->rules);
	g_free(r);
}

int fault_count(const fault_rules *r)
{
	return r ? r->n : 0;
}

long fault_abort_after(const fault_rules *r)
{
	return r ? r->abort_after : 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Blocks until fault_release(). */
static void hang(fault_rules *r)
{
	pthread_mutex_lock(&r->lock);
	while (!r->released)
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

bool fault_check(fault_rules *r, int idx, int kind, int *err)
{
	bool hit_err = false;
	int saved = errno;

	if (!r)
		return false;
	for (int i = 0; i < r->n; i++) {
		rule *u = &r->rules[i];
		if ((u->member >= 0 && u->member != idx) || !(u->ops & kind) || u->slow ||
		    (u->armed && access(u->armed, F_OK) != 0))
			continue;
		long n = __atomic_add_fetch(&u->seen, 1, __ATOMIC_RELAXED);
		if (n <= u->after || (u->count >= 0 && n - u->after > u->count))
			continue;
		if (u->delay_ms)
			sleep_ms(u->delay_ms);
		if (u->hang) {
			hang(r);
			if (!hit_err) {
				*err = EIO;
				hit_err = true;
			}
			continue;
		}
		if (u->err < 0 || hit_err)
			continue;
		/* errno 0 is a lost write or sync; on anything else no fault */
		if (u->err == 0 && !(kind & (FAULT_WRITE | FAULT_SYNC)))
			continue;
		*err = u->err;
		hit_err = true;
	}
	errno = saved;
	return hit_err;
}

bool fault_may_block(const fault_rules *r, int idx, int kind)
{
	for (int i = 0; r && i < r->n; i++) {
		const rule *u = &r->rules[i];
		if ((u->member < 0 || u->member == idx) && (u->ops & kind) && !u->slow &&
		    (u->delay_ms || u->hang))
			return true;
	}
	return false;
}

uint64_t fault_slow(const fault_rules *r, int kind)
{
	uint64_t members = 0;

	for (int i = 0; r && i < r->n; i++)
		if (r->rules[i].slow && (r->rules[i].ops & kind))
			members |= r->rules[i].member >= 0 ? 1ull << r->rules[i].member : ~0ull;
	return members;
}

void fault_release(fault_rules *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->released = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}
