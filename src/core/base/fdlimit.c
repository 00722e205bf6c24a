/* SPDX-License-Identifier: MIT */
/*
 * Raising the open-file limit to the hard limit (fdlimit.h).
 */
#include "fdlimit.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "log.h"

void ecfs_raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		ecfs_log(LOG_WARNING, "cannot read the open-file limit: %s", strerror(errno));
		return;
	}
	if (rl.rlim_cur == rl.rlim_max)
		return;
	rlim_t was = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		ecfs_log(LOG_WARNING, "cannot raise the open-file limit from %llu to %llu: %s; "
		         "each open file holds a descriptor on every member",
		         (unsigned long long)was, (unsigned long long)rl.rlim_max, strerror(errno));
}
