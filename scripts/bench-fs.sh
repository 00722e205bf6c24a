#!/bin/sh
# SPDX-License-Identifier: MIT
# Filesystem benchmark: ecfs (k=4, m=2) against mergerfs in the same run,
# both over six member directories on one tmpfs, so that the members cost
# nothing and what is measured is the FUSE file system itself.
#
#   sudo scripts/bench-fs.sh                 2 GiB file, 1 MiB requests
#   sudo BENCH_MIB=512 scripts/bench-fs.sh   smaller file
#   ECFS_OPTS=code=rs-vandermonde,checksum=sha256 ...   other ecfs options
#   sudo BENCH_RUNS=3 scripts/bench-fs.sh    3 runs and the median ratios
#   sudo BENCH_RT=1 scripts/bench-fs.sh      daemons and dd at real-time priority
#
#   sudo BENCH_WARM=0 scripts/bench-fs.sh    no memory warm-up before a dd
#
# Per run, on each file system: sequential write (dd bs=1M conv=fsync from
# a random source file on tmpfs), then the sequential read right after it
# (dd bs=1M to /dev/null: same mount, no cache dropped, the first read of
# the file).  Then, still in the same mount, the cold read: the file is
# removed and written again (dd bs=1M, not timed), then `sync; echo 3 >
# /proc/sys/vm/drop_caches`, then read (dd bs=1M), the same steps for
# ecfs and mergerfs.  Then ecfs alone: the read after a remount (page
# cache dropped), and after another remount with 2 of its 6 members
# replaced by empty directories (-o noheal: they stay failed, every
# stripe decodes).  Reports MB/s and the ratios (the bars: read right
# after the write and cold read >= 1.0x mergerfs, cold read >= 1.0x
# ecfs's read after a remount, write >= 0.9x, degraded >= 0.8x the
# healthy read after a remount), and the daemons' CPU seconds (utime +
# stime from /proc/PID/stat across each dd) per GiB written and read,
# ecfs's and mergerfs's.  On a machine shared with other jobs, BENCH_RT=1
# runs both daemons and every timed dd under `chrt -f 10` (SCHED_FIFO),
# ahead of the other jobs, as on an idle machine.  Needs root (tmpfs
# mount, drop_caches).  scripts/bench-lib.sh holds what it shares with
# bench-randio.sh: the build, BENCH_RT, the warm-up, the mounts.
set -eu
cd "$(dirname "$0")/.."
bench=bench-fs
. scripts/bench-lib.sh
mib=${BENCH_MIB:-2048}

# Room for: source, ecfs members (1.5x), the warm-up file, and slack.
bench_init $((mib * 4 + 1024))
warm_write=$((mib * 3 / 2 + 256)) warm_read=$((mib + 256))

scripts/cpu-class.sh
echo "making a ${mib} MiB random source file..."
head -c $((mib << 20)) /dev/urandom >"$tmpfs/source"

# MB/s (10^6 bytes) of one dd run
timed_dd() {
	t0=$(now)
	$rt dd "$@" bs=1M status=none
	t1=$(now)
	echo "$t0 $t1 $mib" | awk '{ printf "%.0f", $3 * 1048576 / ($2 - $1) / 1e6 }'
}
# The CPU seconds (utime + stime) of process $2 since its tick count $1,
# per GiB of the file.
cpu_per_gib() {
	echo "$1 $(cpu_ticks "$2") $hz $mib" |
		awk '{ printf "%.2f", ($2 - $1) / $3 / ($4 / 1024) }'
}
# timed read of $1 by the daemon $2: sets rd_mbs and rd_cpu (per GiB)
timed_read() {
	warm $warm_read
	c0=$(cpu_ticks "$2")
	rd_mbs=$(timed_dd if="$1" of=/dev/null)
	rd_cpu=$(cpu_per_gib "$c0" "$2")
}
# The cold read of a file written in the same mount ($1, a file system
# mounted by the daemon $2): written again, the caches dropped, read.
# Sets rd_mbs and rd_cpu, as timed_read.
cold_read() {
	rm -f "$1"
	dd if="$tmpfs/source" of="$1" bs=1M status=none
	drop
	timed_read "$1" "$2"
}
row() { printf '%-40s %10s %10s %8s\n' "$@"; }

# One run of every test, ecfs then mergerfs; prints its table and appends
# its ratios to $work/ratios.
one_run() {
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	for i in 0 1 2 3 4 5; do mkdir "$tmpfs/e$i" "$tmpfs/g$i"; done

	# ---- ecfs ----
	ecfs_mount "k=4,m=2${ecfs_opts:+,$ecfs_opts}"
	drop
	warm $warm_write
	c0=$(cpu_ticks "$ecfs_pid")
	ecfs_write=$(timed_dd if="$tmpfs/source" of="$work/ecfs/file" conv=fsync)
	cpu_write=$(cpu_per_gib "$c0" "$ecfs_pid")
	timed_read "$work/ecfs/file" "$ecfs_pid"
	ecfs_first=$rd_mbs cpu_first=$rd_cpu
	cold_read "$work/ecfs/file" "$ecfs_pid"
	ecfs_cold=$rd_mbs cpu_cold=$rd_cpu
	ecfs_umount
	drop
	ecfs_mount noheal
	timed_read "$work/ecfs/file" "$ecfs_pid"
	ecfs_read=$rd_mbs cpu_read=$rd_cpu
	ecfs_umount
	rm -rf "$tmpfs/e1" "$tmpfs/e4"
	mkdir "$tmpfs/e1" "$tmpfs/e4" # replaced disks, left failed
	drop
	ecfs_mount noheal
	timed_read "$work/ecfs/file" "$ecfs_pid"
	ecfs_degraded=$rd_mbs cpu_degraded=$rd_cpu
	drop
	cmp -s "$tmpfs/source" "$work/ecfs/file" || die "ecfs: degraded read differs from the source"
	ecfs_umount
	rm -rf "$tmpfs"/e?

	# ---- mergerfs, page cache off (as ecfs has none of its own) ----
	merger_mount cache.files=off
	drop
	warm $warm_write
	c0=$(cpu_ticks "$merger_pid")
	merger_write=$(timed_dd if="$tmpfs/source" of="$work/mergerfs/file" conv=fsync)
	mcpu_write=$(cpu_per_gib "$c0" "$merger_pid")
	timed_read "$work/mergerfs/file" "$merger_pid"
	merger_read=$rd_mbs mcpu_read=$rd_cpu
	cold_read "$work/mergerfs/file" "$merger_pid"
	merger_cold=$rd_mbs mcpu_cold=$rd_cpu
	merger_umount
	rm -rf "$tmpfs"/g?

	echo
	echo "ecfs (k=4,m=2${ecfs_opts:+,$ecfs_opts}) vs mergerfs (cache.files=off,minfreespace=0), 6 members on tmpfs,"
	echo "${mib} MiB file, 1 MiB sequential requests; $(lscpu | sed -n 's/^Model name: *//p'),"
	[ -z "$rt" ] || echo "daemons and dd under $rt,"
	echo "load average $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after"
	echo
	row "test" "ecfs MB/s" "peer MB/s" "ratio"
	row "sequential write (conv=fsync)" "$ecfs_write" "$merger_write" "$(ratio "$ecfs_write" "$merger_write")"
	row "read right after the write" "$ecfs_first" "$merger_read" "$(ratio "$ecfs_first" "$merger_read")"
	row "cold read, same mount" "$ecfs_cold" "$merger_cold" "$(ratio "$ecfs_cold" "$merger_cold")"
	row "  against ecfs after a remount" "$ecfs_cold" "$ecfs_read" "$(ratio "$ecfs_cold" "$ecfs_read")"
	row "read after a remount" "$ecfs_read" "$merger_read" "$(ratio "$ecfs_read" "$merger_read")"
	row "read after a remount, 2 of 6 lost" "$ecfs_degraded" "$ecfs_read" "$(ratio "$ecfs_degraded" "$ecfs_read")"
	echo "  (the peer of the read after a remount is mergerfs's read right after its"
	echo "   write; of the degraded read, ecfs's own read after a remount)"
	row "daemon CPU s per GiB" "ecfs" "mergerfs" ""
	row "  written" "$cpu_write" "$mcpu_write" ""
	row "  read right after the write" "$cpu_first" "$mcpu_read" ""
	row "  cold read, same mount" "$cpu_cold" "$mcpu_cold" ""
	row "  read after a remount" "$cpu_read" "" ""
	row "  read after a remount, 2 of 6 lost" "$cpu_degraded" "" ""
	echo "$(ratio "$ecfs_write" "$merger_write") $(ratio "$ecfs_first" "$merger_read")" \
		"$(ratio "$ecfs_degraded" "$ecfs_read") $cpu_write $cpu_first $cpu_read $cpu_degraded" \
		"$mcpu_write $mcpu_read $(ratio "$ecfs_read" "$merger_read")" \
		"$(ratio "$ecfs_cold" "$merger_cold") $(ratio "$ecfs_cold" "$ecfs_read")" \
		"$cpu_cold $mcpu_cold" >>"$work/ratios"
}

for _ in $(seq "$runs"); do
	one_run
done
[ "$runs" -gt 1 ] || exit 0
# Median of column $1 of the ratios (the middle value; the lower middle
# for an even count).
median() { sort -n -k"$1","$1" "$work/ratios" | awk -v c="$1" '{ v[NR] = $c }
	END { print v[int((NR + 1) / 2)] }'; }
echo
echo "ratios of the $runs runs (write, read right after the write, degraded read"
echo "after a remount over healthy after a remount; ecfs daemon CPU s per GiB written,"
echo "read right after the write, after a remount, after a remount 2 lost; mergerfs"
echo "CPU s per GiB written, read; read after a remount over mergerfs; cold read,"
echo "same mount, over mergerfs's, over ecfs's read after a remount; ecfs and"
echo "mergerfs daemon CPU s per GiB of the cold read):"
sed 's/^/  /' "$work/ratios"
printf 'medians: write %s, read right after the write %s, degraded read %s of healthy\n' \
	"$(median 1)" "$(median 2)" "$(median 3)"
printf '  cold read, same mount: %s of mergerfs, %s of ecfs after a remount\n' \
	"$(median 11)" "$(median 12)"
printf 'ecfs daemon CPU s per GiB (medians): written %s, read right after the write %s,\n' \
	"$(median 4)" "$(median 5)"
printf '  after a remount %s, with 2 members lost %s; mergerfs: written %s, read %s\n' \
	"$(median 6)" "$(median 7)" "$(median 8)" "$(median 9)"
printf '  cold read, same mount: ecfs %s, mergerfs %s\n' "$(median 13)" "$(median 14)"
