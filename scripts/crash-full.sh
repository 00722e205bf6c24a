#!/bin/sh
# SPDX-License-Identifier: MIT
# The full crash-consistency sets (tests/crash), which CI only samples:
# the daemon killed after every member operation N = 1..W of every workload
# with every m-subset of members hidden, every power-loss state of every
# workload (every prefix of the record; drop/reorder/tear states at each
# barrier round), and 40 SIGKILL rounds under fsx.  Hours rather than
# minutes; prints one summary line per test at the end.
#   scripts/crash-full.sh                  everything
#   scripts/crash-full.sh crash-points-overwrite ...   chosen tests
# Builds in ${ECFS_BUILD_DIR:-build} with -Dfault_injection=true (needed).
set -eu
cd "$(dirname "$0")/.."
build=${ECFS_BUILD_DIR:-build}

if [ -f "$build/build.ninja" ]; then
	meson configure "$build" -Dfault_injection=true >/dev/null
else
	meson setup "$build" -Dfault_injection=true
fi
meson compile -C "$build"

set +e
# no time limit: the full sets are long (and the watchdog is off, crashlib)
ECFS_CRASH_FULL=1 meson test -C "$build" --suite crash --timeout-multiplier 0 \
	--print-errorlogs "$@"
rc=$?
set -e

echo "crash-full summary:"
grep -hoE "(crash points|power loss|SIGKILL loop) [^:]*: .*" \
	"$build/meson-logs/testlog.txt" | sed 's/^/  /'
exit $rc
