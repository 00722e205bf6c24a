#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the libFuzzer harnesses of tests/fuzz/ (clang, with ASan and UBSan,
# in a build directory of their own) and runs each in turn for SECONDS
# (default 600), from its seed corpus in tests/fuzz/corpus/<parser>/.
#   scripts/fuzz.sh [SECONDS] [PARSER...]
# The parsers are the folders of tests/fuzz/corpus/.  Prints one line per
# fuzzer: its executions and its result.  Anything found (a crash, a
# sanitizer report, a timeout, running out of memory) is kept as
# $build/crashes/<parser>-*, with the fuzzer's output in
# $build/logs/<parser>.log, and makes the exit status 1.  Inputs the
# fuzzer adds go to $build/corpus/<parser>/, not to the committed seeds.
set -eu
cd "$(dirname "$0")/.."
secs=${1:-600}
[ $# -gt 0 ] && shift
build=${ECFS_FUZZ_BUILD_DIR:-build-fuzz}

if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz.sh: clang not found (scripts/install-deps.sh installs it)" >&2
	exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=true >/dev/null
fi
parsers=${*:-$(ls tests/fuzz/corpus)}
targets=
for p in $parsers; do
	targets="$targets fuzz_$p"
done
# shellcheck disable=SC2086
if ! meson compile -C "$build" $targets >"$build/compile.log" 2>&1; then
	cat "$build/compile.log" >&2
	echo "fuzz.sh: the fuzzers did not build" >&2
	exit 1
fi

mkdir -p "$build/crashes" "$build/logs"
failed=0
for p in $parsers; do
	mkdir -p "$build/corpus/$p"
	log="$build/logs/$p.log"
	set +e
	"$build/tests/fuzz/fuzz_$p" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$build/crashes/$p-" \
		"$build/corpus/$p" "tests/fuzz/corpus/$p" >"$log" 2>&1
	rc=$?
	set -e
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		result=ok
	else
		failed=1
		found=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
		result="FOUND SOMETHING (exit $rc): ${found:-see $log}"
	fi
	printf 'fuzz_%-15s %12s executions in %ss: %s\n' "$p" "${execs:-?}" "$secs" "$result"
done
if [ "$failed" -ne 0 ]; then
	echo "fuzz.sh: a fuzzer found an input that fails: see the files named above" >&2
fi
exit $failed
