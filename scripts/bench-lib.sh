# SPDX-License-Identifier: MIT
# Sourced (not run) by the sh benchmarks that measure ecfs (k=4, m=2) and
# mergerfs over six member directories on one tmpfs: bench-fs.sh and
# bench-randio.sh.  The caller sets `bench` (its name, for messages) and
# runs from the top of the tree.  What they share:
#   ECFS_BUILD_DIR  the build (default build/, set up as a release build if
#                   missing), compiled before the run; sets $ecfs;
#   BENCH_RUNS      $runs, how many runs (default 1);
#   ECFS_OPTS       $ecfs_opts, ecfs's options after k=4,m=2;
#   BENCH_RT=1      $rt is `chrt -f 10`: the daemons and the timed programs
#                   run under SCHED_FIFO, ahead of other jobs on a shared
#                   machine, as on an idle one;
#   BENCH_WARM=0    no memory warm-up (warm) before a timed run;
#   bench_init MIB  checks root and mergerfs, makes $work with a tmpfs of
#                   MIB MiB at $tmpfs, and the trap that always unmounts
#                   and removes it all;
#   ecfs_mount OPTS / ecfs_umount, merger_mount OPTS / merger_umount: the
#                   daemons in the foreground on $work/ecfs and
#                   $work/mergerfs, over $tmpfs/e0..e5 and $tmpfs/g0..g5
#                   (made by the caller); $ecfs_pid, $merger_pid; their
#                   messages but info ones shown after the unmount.
# ecfs inherits the environment (EC_SIMD=avx2 forces libec's AVX2 kernels).

die() { printf '%s: %s\n' "$bench" "$*" >&2; exit 1; }

build=${ECFS_BUILD_DIR:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
case ${BENCH_RT:-0} in
0) rt="" ;;
1) rt="chrt -f 10" ;;
*) die "BENCH_RT must be 0 or 1" ;;
esac
runs=${BENCH_RUNS:-1}
ecfs_opts=${ECFS_OPTS:-}
warm_on=${BENCH_WARM:-1}
case $warm_on in 0 | 1) ;; *) die "BENCH_WARM must be 0 or 1" ;; esac

ecfs_pid="" merger_pid=""
bench_cleanup() {
	for m in "$work/ecfs" "$work/mergerfs"; do
		if mountpoint -q "$m"; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m" || true
		fi
	done
	[ -z "$ecfs_pid" ] || wait "$ecfs_pid" 2>/dev/null || true
	[ -z "$merger_pid" ] || wait "$merger_pid" 2>/dev/null || true
	mountpoint -q "$tmpfs" && umount "$tmpfs"
	rm -rf "$work"
}

bench_init() {
	[ "$(id -u)" -eq 0 ] || die "needs root (tmpfs mount, drop_caches)"
	command -v mergerfs >/dev/null || die "mergerfs not installed (scripts/install-deps.sh)"
	if [ ! -f "$build/build.ninja" ]; then
		meson setup "$build" --buildtype=release >/dev/null
	fi
	meson compile -C "$build" >/dev/null || die "build failed"
	ecfs=$build/src/ecfs
	[ -x "$ecfs" ] || die "$ecfs not built"

	work=$(mktemp -d "/tmp/ecfs-$bench.XXXXXX")
	tmpfs=$work/tmpfs
	mkdir "$tmpfs" "$work/ecfs" "$work/mergerfs"
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	mount -t tmpfs -o "size=${1}m" tmpfs "$tmpfs"
	ecfs_members="" merger_members=""
	for i in 0 1 2 3 4 5; do
		ecfs_members="$ecfs_members${ecfs_members:+:}$tmpfs/e$i"
		merger_members="$merger_members${merger_members:+:}$tmpfs/g$i"
	done
}

# First touch of memory the guest has not used lately is slow on these
# VMs (about 1.5 s/GiB against 0.5), and free memory goes back to the host
# within seconds (free page reporting), so a warm-up long before the test
# does not last.  warm MIB writes and deletes MIB of tmpfs just before each
# timed run, the same for both file systems, so that what that run
# allocates (member files, page cache) comes from memory touched just now.
# BENCH_WARM=0 leaves that out, to see what it hides: after drop_caches,
# ecfs's reads fill the kernel's page cache of the mount from memory just
# freed, where mergerfs (cache.files=off, direct I/O) needs none.
warm() {
	[ "$warm_on" -eq 1 ] || return 0
	dd if=/dev/zero of="$tmpfs/warm" bs=1M count="$1" status=none 2>/dev/null || true
	rm -f "$tmpfs/warm"
}

now() { date +%s.%N; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
ratio() { echo "$1 $2" | awk '{ printf "%.2f", $1 / $2 }'; }

# The daemons write to $work/daemon.log; what is not info shows after
# each unmount, but for ecfs's warning that the members share a file
# system, which they do here by design.
daemon_log() {
	grep -v -e ': info: ' -e ': warning: members on one filesystem: ' "$work/daemon.log" >&2 ||
		true
	: >"$work/daemon.log"
}
# Waits for the FUSE mount $1 of the daemon called $2.
mounted() {
	for _ in $(seq 100); do mountpoint -q "$1" && return 0; sleep 0.05; done
	cat "$work/daemon.log" >&2
	die "$2 did not mount"
}
ecfs_mount() {
	$rt "$ecfs" -f -o "$1" "$ecfs_members" "$work/ecfs" >>"$work/daemon.log" 2>&1 &
	ecfs_pid=$!
	mounted "$work/ecfs" ecfs
}
ecfs_umount() {
	fusermount3 -u "$work/ecfs"
	wait "$ecfs_pid" || true
	ecfs_pid=""
	daemon_log
}
# mergerfs, options $1 added to category.create=mfs,minfreespace=0 (its
# default 4G reserve refused creates now and then on the tmpfs, shared
# with the source file and the warm-up file).
merger_mount() {
	$rt mergerfs -f -o "$1,category.create=mfs,minfreespace=0" "$merger_members" \
		"$work/mergerfs" >>"$work/daemon.log" 2>&1 &
	merger_pid=$!
	mounted "$work/mergerfs" mergerfs
}
merger_umount() {
	fusermount3 -u "$work/mergerfs"
	wait "$merger_pid" || true
	merger_pid=""
	daemon_log
}
