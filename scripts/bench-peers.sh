#!/bin/sh
# SPDX-License-Identifier: MIT
# The coding library against the fastest open coders, on this CPU: libec
# beside ISA-L 2.32.1 built from its source and klauspost/reedsolomon (Go),
# on the cells of `ecfs-bench --grid`: [6,2] [14,2] [12,4] [10,6] [10,4] x
# 4K 64K 1M strips, encode and decode with m data blocks erased, one thread.
#
#   scripts/bench-peers.sh ISA_L_CLONE       a clone of github.com/intel/isa-l
#                                            (or a bare repository, or the
#                                            tree of v2.32.1); or ISAL_SRC=...
#   BENCH_RUNS=3 scripts/bench-peers.sh ...  runs per coder (default 2)
#   BENCH_SIMD=avx2 scripts/bench-peers.sh ... every coder on AVX2 alone (libec
#                                            EC_SIMD=avx2, ISA-L's AVX2 kernel
#                                            called directly, klauspost -simd
#                                            avx2): a CPU with AVX-512 and GFNI
#                                            standing in for one without
#
# What it does, each step skipped when its result is already there:
#   1. builds ISA-L v2.32.1 (autotools and nasm; installed with apt-get when
#      missing) into $ISAL_PREFIX (default /tmp/ecfs-isal-2.32.1);
#   2. configures a release build of ecfs-bench linked to it through
#      PKG_CONFIG_PATH in $PEERS_BUILD_DIR (default build-peers), and checks
#      with ldd that the binary loads that library and not Debian's;
#   3. builds src/bench/peers/klauspost (Go; modules from the Go proxy) into
#      $PEERS_GO_BIN (default /tmp/ecfs-peer-klauspost);
#   4. runs `ecfs-bench --grid --csv --peers isal` (libec and ISA-L timed
#      round-robin in each cell) and the klauspost harness alternately,
#      BENCH_RUNS times each, and prints per cell the best GB/s of each coder
#      and libec's ratio to the faster peer (scripts/bench-peers-table.py).
# GB/s are 10^9 bytes of data (k x strip) per second of the thread's CPU.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
isal_tag=v2.32.1
src=${1:-${ISAL_SRC:-}}
prefix=${ISAL_PREFIX:-/tmp/ecfs-isal-2.32.1}
build=${PEERS_BUILD_DIR:-build-peers}
case $build in /*) ;; *) build=$root/$build ;; esac
gobin=${PEERS_GO_BIN:-/tmp/ecfs-peer-klauspost}
runs=${BENCH_RUNS:-2}
simd=${BENCH_SIMD:-}
case $simd in
"" | avx2) ;;
*) printf 'bench-peers: BENCH_SIMD takes only avx2\n' >&2; exit 2 ;;
esac

die() { printf 'bench-peers: %s\n' "$*" >&2; exit 1; }
say() { printf 'bench-peers: %s\n' "$*" >&2; }

go=${GO:-}
[ -n "$go" ] || go=$(command -v go || true)
[ -n "$go" ] || [ ! -x /usr/local/go/bin/go ] || go=/usr/local/go/bin/go
[ -n "$go" ] || die "go not found (set GO=/path/to/go)"

# ---- 1. ISA-L from source ----
need_tools() {
	missing=""
	for t in nasm autoreconf automake libtoolize make; do
		command -v "$t" >/dev/null || missing="$missing $t"
	done
	[ -z "$missing" ] && return 0
	say "installing nasm autoconf automake libtool (missing:$missing)"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nasm autoconf automake libtool make \
		>/dev/null || die "apt-get install failed"
}

# Copies the v2.32.1 tree from $src (a git repository or a plain tree of
# that release) into $1.
isal_tree() {
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$src" rev-parse -q --verify "$isal_tag^{commit}" >/dev/null ||
			die "$src has no tag $isal_tag"
		git -C "$src" archive "$isal_tag" | tar -x -C "$1"
	else
		grep -A1 'AC_INIT' "$src/configure.ac" 2>/dev/null | grep -q "\[${isal_tag#v}\]" ||
			die "$src is neither a git repository nor the tree of ISA-L $isal_tag"
		cp -R "$src"/. "$1"
	fi
}

build_isal() {
	[ -n "$src" ] || die "usage: scripts/bench-peers.sh ISA_L_CLONE (or ISAL_SRC=...); a clone of github.com/intel/isa-l"
	[ -d "$src" ] || die "$src: no such directory"
	need_tools
	w=$(mktemp -d /tmp/ecfs-isal-src.XXXXXX)
	isal_tree "$w"
	say "building ISA-L $isal_tag into $prefix (log: $prefix.log)"
	if ! (cd "$w" && ./autogen.sh && ./configure --prefix="$prefix" &&
		make -j"$(nproc)" && make install) >"$prefix.log" 2>&1; then
		tail -20 "$prefix.log" >&2
		rm -rf "$w"
		die "ISA-L build failed"
	fi
	rm -rf "$w"
}

pc=$prefix/lib/pkgconfig
if [ "$(PKG_CONFIG_PATH=$pc pkg-config --modversion libisal 2>/dev/null)" != "${isal_tag#v}" ] ||
	[ ! -f "$pc/libisal.pc" ]; then
	build_isal
fi
[ -f "$pc/libisal.pc" ] || die "no $pc/libisal.pc after the build"

# ---- 2. ecfs-bench against it ----
if [ ! -f "$build/build.ninja" ]; then
	log=$(mktemp /tmp/ecfs-bench-peers-setup.XXXXXX)
	PKG_CONFIG_PATH=$pc meson setup "$build" --buildtype=release -Disal=enabled >"$log" 2>&1 ||
		{ tail -20 "$log" >&2; die "meson setup failed (log: $log)"; }
	rm -f "$log"
fi
meson compile -C "$build" src/ecfs-bench >/dev/null || die "ecfs-bench build failed"
bench=$build/src/ecfs-bench
lib=$(ldd "$bench" | awk '/libisal/ { print $3 }')
case $lib in
"$prefix"/*) ;;
*) die "$bench loads ISA-L from '${lib:-nowhere}', not $prefix (remove $build and rerun)" ;;
esac

# ---- 3. the klauspost harness ----
(cd src/bench/peers/klauspost && "$go" build -o "$gobin" .) || die "go build failed"

# ---- 4. the runs ----
cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
flags=$(awk -F': ' '/^flags/ { print $2; exit }' /proc/cpuinfo)
has() { case " $flags " in *" $1 "*) echo yes ;; *) echo no ;; esac; }
# ISA-L's dispatcher picks its kernel at the first call; a breakpoint on
# the AVX-512 GFNI one tells whether this CPU gets it.
isal_gfni="not checked (no gdb)"
if [ -n "$simd" ]; then
	isal_gfni="ec_encode_data_avx2, called directly"
elif command -v gdb >/dev/null; then
	if gdb -batch -nx -ex 'set breakpoint pending on' -ex 'break ec_encode_data_avx512_gfni' \
		-ex run -ex 'info symbol $pc' --args "$bench" -k 6 -m 2 --strip 4K --encode \
		--peers isal --no-baselines --seconds 0.01 --rounds 1 2>/dev/null |
		grep -q '^ec_encode_data_avx512_gfni'; then
		isal_gfni="avx512_gfni"
	else
		isal_gfni="not avx512_gfni"
	fi
fi

work=$(mktemp -d /tmp/ecfs-bench-peers.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
EC_SIMD=$simd scripts/cpu-class.sh
echo "CPU: $cpu_model; AVX2 $(has avx2), AVX-512 (F/BW/VL) $(has avx512f)/$(has avx512bw)/$(has avx512vl), GFNI $(has gfni), $(nproc) CPUs"
echo "libec: $("$bench" --version | head -1) ($(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "ISA-L: $(PKG_CONFIG_PATH=$pc pkg-config --modversion libisal) from $lib; ec_encode_data kernel: $isal_gfni"
echo "klauspost: $("$gobin" ${simd:+-simd "$simd"} -version)"
[ -z "$simd" ] || echo "every coder on AVX2 alone (BENCH_SIMD=avx2)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$runs"); do
	say "run $r of $runs: ecfs-bench --grid"
	if [ -n "$simd" ]; then
		EC_SIMD=avx2 ECFS_BENCH_ISAL_KERNEL=avx2 "$bench" --grid --csv --peers isal \
			--no-baselines >"$work/ecfs.$r.csv" || die "ecfs-bench failed"
	else
		"$bench" --grid --csv --peers isal --no-baselines >"$work/ecfs.$r.csv" ||
			die "ecfs-bench failed"
	fi
	say "run $r of $runs: klauspost"
	"$gobin" ${simd:+-simd "$simd"} >"$work/klauspost.$r.csv" ||
		die "the klauspost harness failed"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "GB/s of data, best of $runs runs per cell; ratio = libec / the faster peer"
python3 scripts/bench-peers-table.py --isal-label "ISA-L ${isal_tag#v}" "$work"/*.csv
