#!/bin/sh
# SPDX-License-Identifier: MIT
# Reproduces the XOR-code figures of the seed papers on this machine:
#   scripts/paper-figures.sh [OUTDIR] [ecfs-bench options...]
# runs `ecfs-bench --figures` (CSV into OUTDIR, default figures/), measures
# ISA-L's RS and the plain XOR/memcpy references for each [k,m] with the
# regular benchmark, and draws PNGs with scripts/plot-xor-figures.sh.
# Extra options go to --figures (for example --seconds 0.2, --quick).
# ECFS_BUILD_DIR picks the build directory (default build/).
set -eu
cd "$(dirname "$0")/.."
build=${ECFS_BUILD_DIR:-build}
out=${1:-figures}
[ $# -gt 0 ] && shift

if [ ! -x "$build/src/ecfs-bench" ]; then
	[ -f "$build/build.ninja" ] || meson setup "$build"
	meson compile -C "$build"
fi
bench="$build/src/ecfs-bench"

"$bench" --figures --out "$out" "$@"

# References from the same machine, same run: ISA-L (when built in), XOR
# and memcpy rows of the regular benchmark at 64 KiB strips.
for km in "6 2" "14 2" "12 4" "10 6"; do
	set -- $km
	"$bench" --code rs-cauchy -k "$1" -m "$2" --strip 64K --csv --seconds 0.2 \
		> "$out/ref_$1_$2.csv"
done

sh scripts/plot-xor-figures.sh "$out"
