#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds ecfs and runs every test suite (the README's test command).
#   scripts/test.sh                 unit, func, external and crash suites
#   ECFS_SLOW=1 scripts/test.sh     also the slow suites (long fsx, every crash state)
# Extra arguments go to `meson test` (for example: --suite unit).
#
# The build it uses always has the options the tests need (fault injection
# for the fault and crash suites), whoever configured it first.  Every test
# runs: a skipped test is named with its reason at the end, and under CI
# (CI=true) a skip fails the run.
set -eu
cd "$(dirname "$0")/.."
build=${ECFS_BUILD_DIR:-build}
slow=false
[ "${ECFS_SLOW:-0}" = 1 ] && slow=true

if [ -f "$build/build.ninja" ]; then
	meson configure "$build" -Dslow_tests=$slow -Dfault_injection=true >/dev/null
else
	meson setup "$build" -Dslow_tests=$slow -Dfault_injection=true
fi
meson compile -C "$build"

set +e
meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" "$@"
rc=$?
set -e

log="$build/meson-logs/testlog.json"
[ -f "$log" ] || { echo "test.sh: no test log at $log" >&2; exit 1; }
python3 - "$log" <<'PY'
import json, sys
passed = failed = 0
skipped = []
for line in open(sys.argv[1]):
    t = json.loads(line)
    r = t["result"]
    if r == "OK":
        passed += 1
    elif r == "SKIP":
        why = [l for l in (t.get("stdout") or "").splitlines() if "skip" in l.lower()]
        skipped.append((t["name"], why[-1].strip() if why else "(no reason printed)"))
    else:
        failed += 1
for name, why in skipped:
    print(f"SKIPPED {name}: {why}")
# One closing line in the plain form CI reads.
print(f"tests: {passed} passed, {failed} failed, {len(skipped)} skipped")
PY
skipped=$(grep -c '"result": "SKIP"' "$log" || true)
if [ "$rc" -eq 0 ] && [ "$skipped" -gt 0 ] && [ "${CI:-false}" = true ]; then
	echo "test.sh: $skipped test(s) skipped under CI: every suite must run here" >&2
	exit 1
fi
exit $rc
