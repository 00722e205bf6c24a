#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds ecfs and runs every test suite (the README's test command).
#   scripts/test.sh                 unit, func and external suites
#   ECFS_SLOW=1 scripts/test.sh     also the slow suites (long fsx, every crash state)
# Extra arguments go to `meson test` (for example: --suite unit).
set -eu
cd "$(dirname "$0")/.."
build=${ECFS_BUILD_DIR:-build}
slow=false
[ "${ECFS_SLOW:-0}" = 1 ] && slow=true

if [ -f "$build/build.ninja" ]; then
	meson configure "$build" -Dslow_tests=$slow >/dev/null
else
	meson setup "$build" -Dslow_tests=$slow -Dfault_injection=true
fi
meson compile -C "$build"

set +e
meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" "$@"
rc=$?
set -e

# One closing line in the plain form CI reads: "N passed, N failed, N skipped".
log="$build/meson-logs/testlog.json"
if [ -f "$log" ]; then
	passed=$(grep -c '"result": "OK"' "$log" || true)
	failed=$(grep -cE '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
	skipped=$(grep -c '"result": "SKIP"' "$log" || true)
	echo "tests: $passed passed, $failed failed, $skipped skipped"
fi
exit $rc
