#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds ecfs and runs every test (the README's test command), in three
# parts:
#   1. build/: the unit, func, external, crash and pkg suites (with
#      ECFS_SLOW=1 also the slow ones), each fuzz harness once over its
#      seeds among them; pkg builds, installs and removes the Debian
#      package (root).  Extra arguments go to this `meson test` (for
#      example: --suite unit).
#   2. every fuzzer of tests/fuzz/ for ECFS_FUZZ_SECONDS (default 10) from
#      its seed corpus (scripts/fuzz.sh, build-fuzz/; needs clang).
#   3. build-sanitize/ (-Dsanitize=true: ASan and UBSan, any report fatal):
#      the suites of ECFS_SANITIZE_SUITES (default: unit and func) once.
# ECFS_HARDEN=0 leaves parts 2 and 3 out (named as skipped: a quick run
# while working, never CI's).  README.md, "Tests", gives their times.
# ECFS_TEST_SLOW (default 2) multiplies every test's time limit and the
# watchdog inside it that cleans up before the limit: on a shared machine
# a suite of members on loop disks can take several times its usual time.
#
# The build it uses always has the options the tests need (fault injection
# for the fault and crash suites), whoever configured it first.  Every test
# runs: a skipped test or part (ECFS_FUZZ_SECONDS=0, ECFS_SANITIZE=0, no
# clang) is named with its reason at the end, and under CI (CI=true) a skip
# fails the run.
set -eu
cd "$(dirname "$0")/.."
build=${ECFS_BUILD_DIR:-build}
san_build=${ECFS_SANITIZE_BUILD_DIR:-build-sanitize}
fuzz_secs=${ECFS_FUZZ_SECONDS:-10}
san_suites=${ECFS_SANITIZE_SUITES:-unit func}
slow=false
[ "${ECFS_SLOW:-0}" = 1 ] && slow=true
harden=true
[ "${ECFS_HARDEN:-1}" = 0 ] && harden=false
ECFS_TEST_SLOW=${ECFS_TEST_SLOW:-2}
export ECFS_TEST_SLOW

# configure DIR OPTION...: the build directory with these options, made or kept.
configure() {
	dir=$1
	shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@"
	fi
}

configure "$build" -Dslow_tests=$slow -Dfault_injection=true
meson compile -C "$build"
set +e
meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" \
	--timeout-multiplier "$ECFS_TEST_SLOW" "$@"
rc=$?
set -e
log="$build/meson-logs/testlog.json"
[ -f "$log" ] || { echo "test.sh: no test log at $log" >&2; exit 1; }

# Parts 2 and 3 report into these: a line per fuzzer ("name ok" or
# "name failed"), a line per part skipped ("name: reason").
fuzzed="$build/test-fuzzers.txt"
parts_skipped="$build/test-parts-skipped.txt"
: >"$fuzzed"
: >"$parts_skipped"

if ! $harden; then
	echo "fuzzers: ECFS_HARDEN=0" >>"$parts_skipped"
elif [ "$fuzz_secs" = 0 ]; then
	echo "fuzzers: ECFS_FUZZ_SECONDS=0" >>"$parts_skipped"
elif ! command -v clang >/dev/null 2>&1; then
	echo "fuzzers: clang not found (scripts/install-deps.sh installs it)" >>"$parts_skipped"
else
	{
		if scripts/fuzz.sh "$fuzz_secs"; then r=0; else r=1; fi
		echo $r >"$build/test-fuzz.rc"
	} 2>&1 |
		tee "$build/test-fuzz.out"
	[ "$(cat "$build/test-fuzz.rc")" -eq 0 ] || rc=1
	sed -n 's/^\(fuzz_[a-z_]*\) .*: ok$/\1 ok/p; s/^\(fuzz_[a-z_]*\) .*: FOUND.*/\1 failed/p' \
		"$build/test-fuzz.out" >"$fuzzed"
fi

san_log=
if ! $harden; then
	echo "sanitizer suites: ECFS_HARDEN=0" >>"$parts_skipped"
elif [ "${ECFS_SANITIZE:-1}" = 0 ]; then
	echo "sanitizer suites: ECFS_SANITIZE=0" >>"$parts_skipped"
else
	configure "$san_build" -Dsanitize=true -Dfault_injection=true
	meson compile -C "$san_build"
	suites=
	for s in $san_suites; do
		suites="$suites --suite $s"
	done
	set +e
	# shellcheck disable=SC2086
	meson test -C "$san_build" --print-errorlogs --num-processes "$(nproc)" \
	--timeout-multiplier "$ECFS_TEST_SLOW" $suites
	[ "$?" -eq 0 ] || rc=1
	set -e
	san_log="$san_build/meson-logs/testlog.json"
fi

python3 - "$fuzzed" "$parts_skipped" "$log" $san_log <<'PY'
import json, sys
passed = failed = 0
skipped = []
for line in open(sys.argv[1]):
    name, result = line.split()
    passed += result == "ok"
    failed += result != "ok"
for line in open(sys.argv[2]):
    name, why = line.rstrip("\n").split(": ", 1)
    skipped.append((name, why))
for n, path in enumerate(sys.argv[3:]):
    prefix = "sanitize:" if n else ""
    for line in open(path):
        t = json.loads(line)
        r = t["result"]
        if r == "OK":
            passed += 1
        elif r == "SKIP":
            why = [l for l in (t.get("stdout") or "").splitlines() if "skip" in l.lower()]
            skipped.append((prefix + t["name"], why[-1].strip() if why else "(no reason printed)"))
        else:
            failed += 1
for name, why in skipped:
    print(f"SKIPPED {name}: {why}")
# One closing line in the plain form CI reads.
print(f"tests: {passed} passed, {failed} failed, {len(skipped)} skipped")
PY
skipped=$(cat "$log" $san_log | grep -c '"result": "SKIP"' || true)
skipped=$((skipped + $(wc -l <"$parts_skipped")))
if [ "$rc" -eq 0 ] && [ "$skipped" -gt 0 ] && [ "${CI:-false}" = true ]; then
	echo "test.sh: $skipped test(s) or part(s) skipped under CI: every suite must run here" >&2
	exit 1
fi
exit $rc
