#!/bin/bash
# SPDX-License-Identifier: MIT
# Rebuild benchmark: ecfs-fsck rebuilding one
# replaced member of a k=4, m=2 volume against `snapraid fix` restoring one
# lost data disk of a 4 data + 2 parity array, the same data set in the same
# run, everything on tmpfs so that what is measured is the tools themselves.
# ecfs-fsck runs twice per run: `--rebuild` (what is lost, from k strips per
# stripe: the counterpart of `snapraid fix`) and `-y` (the same rebuild
# inside a check of every strip of every member).
#
#   sudo scripts/bench-rebuild.sh                  2 GiB data set, 3 runs each
#   sudo BENCH_MIB=512 scripts/bench-rebuild.sh    smaller data set
#   sudo ECFS_BUILD_DIR=/tmp/b scripts/bench-rebuild.sh   another build
#   sudo BENCH_RT=1 scripts/bench-rebuild.sh       both tools at real-time priority
#
# Steps:
# 1. A data set of BENCH_MIB MiB from /dev/urandom, a mix of sizes: per data
#    disk one large file (3/4 of its share), 8 medium files (1/8) and many
#    small ones in pairs summing to 1 MiB (1/8, 4 KiB to 1000 KiB each).  It
#    is made directly in SnapRAID's 4 data disks, so each holds BENCH_MIB/4.
# 2. ecfs: a k=4, m=2 volume on 6 member directories, mounted, the data set
#    copied in, unmounted.  The member holding the most data-strip bytes
#    (chunk position < k) is the one that is lost.
# 3. SnapRAID: `snapraid sync` over d1..d4 with parity and 2-parity; disk
#    d1 is the one that is lost (a copy of it is kept to compare against).
# 4. Memory pre-touch (write and delete BENCH_PRETOUCH_MIB, default
#    BENCH_MIB, on the tmpfs): the first touch of fresh memory is slow on
#    these VMs.
# 5. BENCH_RUNS times (default 3), interleaved so that both tools see the
#    same background load: replace the ecfs member by an empty directory and
#    time `ecfs-fsck --rebuild`, then `ecfs-fsck -n` must exit 0; the same
#    with `ecfs-fsck -y`; empty d1 and time `snapraid -d d1 fix`, then d1
#    must equal the kept copy.
# 6. Final verification: the volume mounted and compared with the data set,
#    `snapraid -d d1 check`.
#
# SnapRAID refuses to sync disks that share a device, so each of its six
# disks is its own tmpfs mount (the same RAM as the ecfs members' tmpfs).
#
# On a machine shared with other jobs, the two tools do not get the same
# share of it: snapraid is one thread, ecfs-fsck several, and what other
# jobs leave them changes from run to run.  BENCH_RT=1 runs both timed
# commands under `chrt -f 10` (SCHED_FIFO), ahead of every other job, as on
# an otherwise idle machine; the load average is printed either way.
#
# Reported: the medians of the runs (wall seconds, and CPU seconds user +
# system from /usr/bin/time), data restored (ecfs: the bytes written to the
# replaced member, the sizes of its chunk files; SnapRAID: the bytes of the
# lost disk's files), MB/s of data restored and MB/s of the data set made
# whole again (10^6 bytes), and ecfs/SnapRAID ratios.  Needs root (mounts),
# snapraid and /usr/bin/time (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
	sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	echo "Environment: ECFS_BUILD_DIR (default build-release, made with"
	echo "--buildtype=release if missing), BENCH_MIB (default 2048, a multiple"
	echo "of 64), BENCH_RUNS (default 3), BENCH_PRETOUCH_MIB (default BENCH_MIB),"
	echo "BENCH_RT (1: both tools under chrt -f 10)."
}
case ${1:-} in
-h | --help) usage; exit 0 ;;
"") ;;
*) echo "bench-rebuild: no arguments expected (see --help)" >&2; exit 16 ;;
esac

die() { printf 'bench-rebuild: %s\n' "$*" >&2; exit 1; }
build=${ECFS_BUILD_DIR:-build-release}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
mib=${BENCH_MIB:-2048}
runs=${BENCH_RUNS:-3}
pretouch_mib=${BENCH_PRETOUCH_MIB:-$mib}
rt=()
case ${BENCH_RT:-0} in
0) ;;
1) rt=(chrt -f 10) ;;
*) die "BENCH_RT must be 0 or 1" ;;
esac
[[ $mib =~ ^[0-9]+$ ]] && ((mib >= 64 && mib % 64 == 0)) ||
	die "BENCH_MIB must be a multiple of 64, at least 64"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive number"
[ "$(id -u)" -eq 0 ] || die "needs root (tmpfs mounts)"
command -v snapraid >/dev/null || die "snapraid not installed (scripts/install-deps.sh)"
[ -x /usr/bin/time ] || die "/usr/bin/time not installed (package time)"

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" --buildtype=release >/dev/null
fi
meson compile -C "$build" >/dev/null || die "build failed"
buildtype=$(meson introspect --buildoptions "$build" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))')
[ "$buildtype" = release ] ||
	echo "bench-rebuild: warning: $build is a '$buildtype' build, not release" >&2
ecfs=$build/src/ecfs
fsck=$build/src/ecfs-fsck
[ -x "$ecfs" ] && [ -x "$fsck" ] || die "ecfs or ecfs-fsck not built in $build"

# Memory: data set (SnapRAID disks) + 1.5x in ecfs members + 0.5x parity +
# the kept copy of the lost disk + chunk headers; the pre-touch comes and goes.
need_mib=$((mib * 13 / 4 + 512))
avail_mib=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
((avail_mib > need_mib + pretouch_mib)) ||
	die "needs about $((need_mib + pretouch_mib)) MiB of memory, $avail_mib available"

work=$(mktemp -d /tmp/ecfs-bench-rebuild.XXXXXX)
tmpfs=$work/tmpfs # ecfs members, SnapRAID disks (nested mounts), logs
mnt=$work/mnt     # the ecfs mount point, outside the tmpfs
mkdir "$tmpfs" "$mnt"
ecfs_pid=""
cleanup() {
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" || true
	fi
	[ -z "$ecfs_pid" ] || wait "$ecfs_pid" 2>/dev/null || true
	if mountpoint -q "$tmpfs"; then umount -R "$tmpfs" || umount -R -l "$tmpfs"; fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount -t tmpfs -o "size=$((need_mib + pretouch_mib + 1024))m" tmpfs "$tmpfs"
sr=$tmpfs/snapraid
for d in d1 d2 d3 d4 p1 p2; do
	mkdir -p "$sr/$d"
	mount -t tmpfs -o "size=${mib}m" tmpfs "$sr/$d"
done
logs=$tmpfs/logs
mkdir "$logs"
scripts/cpu-class.sh

# ---- 1. the data set, made in SnapRAID's data disks ----
echo "making a ${mib} MiB data set from /dev/urandom..."
share=$((mib / 4 << 20)) # bytes per data disk
small_pairs=$((share / 8 >> 20))
nfiles=0
for d in d1 d2 d3 d4; do
	mkdir "$sr/$d/medium" "$sr/$d/small"
	head -c $((share * 3 / 4)) /dev/urandom >"$sr/$d/large"
	for i in 0 1 2 3 4 5 6 7; do
		head -c $((share / 64)) /dev/urandom >"$sr/$d/medium/m$i"
	done
	for ((j = 0; j < small_pairs; j++)); do
		a=$((4096 + (j * 7919 + ${d#d} * 104729) % 1000 * 1019))
		head -c "$a" /dev/urandom >"$sr/$d/small/s${j}a"
		head -c $((1048576 - a)) /dev/urandom >"$sr/$d/small/s${j}b"
	done
	nfiles=$((nfiles + 9 + 2 * small_pairs))
done
dataset_bytes=$((mib << 20))

# ---- 2. ecfs: create, fill, unmount ----
members=""
for i in 0 1 2 3 4 5; do
	mkdir "$tmpfs/e$i"
	members="$members${members:+:}$tmpfs/e$i"
done
ecfs_mount() {
	"$ecfs" -f "$@" "$members" "$mnt" 2>>"$logs/daemon.log" &
	ecfs_pid=$!
	for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
	die "ecfs did not mount: $(cat "$logs/daemon.log")"
}
ecfs_umount() {
	fusermount3 -u "$mnt"
	wait "$ecfs_pid" || die "ecfs exited with an error"
	ecfs_pid=""
}
echo "writing it into an ecfs k=4,m=2 volume..."
ecfs_mount -o k=4,m=2
for d in d1 d2 d3 d4; do cp -r "$sr/$d" "$mnt/$d"; done
ecfs_umount

# The member with the most bytes of data-strip chunks (position < k in the
# chunk header, docs/FORMAT.md 4.1): its loss costs decoding, not only
# re-encoding.  Prints: index, data-chunk files, data-chunk bytes.
read -r lost data_files data_bytes < <(python3 - "$tmpfs" <<'EOF'
import os, struct, sys
best = None
for i in range(6):
    files = size = 0
    root = os.path.join(sys.argv[1], f"e{i}")
    for top, dirs, names in os.walk(root):
        if top == root:
            dirs.remove(".ecfs")
        for n in names:
            p = os.path.join(top, n)
            with open(p, "rb") as f:
                h = f.read(64)
            if h[:8] == b"ECFSCHNK":
                pos, k = struct.unpack_from("<I", h, 48)[0], struct.unpack_from("<H", h, 60)[0]
                if pos < k:
                    files += 1
                    size += os.path.getsize(p)
    if best is None or size > best[2]:
        best = (i, files, size)
print(*best)
EOF
)
lost_member=$tmpfs/e$lost
# Bytes in the regular files under $1, less an ecfs member's .ecfs (its
# superblock, and a lock whose size varies with the holder's pid).
file_bytes() {
	find "$1" -path "$1/.ecfs" -prune -o -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}
ecfs_lost_bytes=$(file_bytes "$lost_member")
echo "ecfs: losing member $lost ($((ecfs_lost_bytes >> 20)) MiB; data chunks of" \
	"$data_files of $nfiles files, $((data_bytes >> 20)) MiB)"

# ---- 3. SnapRAID: sync, keep a copy of the disk to lose ----
conf=$tmpfs/snapraid.conf
cat >"$conf" <<EOF
parity $sr/p1/snapraid.parity
2-parity $sr/p2/snapraid.2-parity
content $tmpfs/snapraid.content
content $sr/p1/snapraid.content
content $sr/p2/snapraid.content
data d1 $sr/d1
data d2 $sr/d2
data d3 $sr/d3
data d4 $sr/d4
EOF
echo "snapraid sync..."
snapraid -c "$conf" sync >"$logs/sync.log" 2>&1 || die "snapraid sync failed: $logs/sync.log"
sr_lost_bytes=$(file_bytes "$sr/d1")
mkdir "$tmpfs/d1.orig"
cp -a "$sr/d1/." "$tmpfs/d1.orig/"
echo "snapraid: losing data disk d1 ($((sr_lost_bytes >> 20)) MiB in its files)"

# ---- 4. pre-touch ----
echo "pre-touching ${pretouch_mib} MiB of memory..."
dd if=/dev/zero of="$tmpfs/pretouch" bs=1M count="$pretouch_mib" status=none
rm -f "$tmpfs/pretouch"

# ---- 5. the timed runs ----
now() { date +%s.%N; }
# timed NAME CMD...: runs CMD; appends "wall cpu" to $logs/NAME.times;
# its output goes to $logs/NAME.log; returns CMD's exit status.
timed() {
	local name=$1 t0 t1 rc=0
	shift
	t0=$(now)
	/usr/bin/time -f '%U %S' -o "$logs/$name.cpu" "${rt[@]}" "$@" >"$logs/$name.log" 2>&1 ||
		rc=$?
	t1=$(now)
	echo "$t0 $t1 $(tail -n1 "$logs/$name.cpu")" |
		awk '{ printf "%.3f %.2f\n", $2 - $1, $3 + $4 }' >>"$logs/$name.times"
	return $rc
}
# rebuild NAME FSCK-OPTION: replaces the lost member by an empty directory,
# times ecfs-fsck with the option (as NAME), checks what it restored.
rebuild() {
	local name=$1 opt=$2 rc=0 restored
	rm -rf "$lost_member"
	mkdir "$lost_member"
	timed "$name" "$fsck" "$opt" -q --no-progress "$members" || rc=$?
	[ "$rc" -eq 1 ] || die "ecfs-fsck $opt exited $rc, expected 1: $(cat "$logs/$name.log")"
	restored=$(file_bytes "$lost_member")
	[ "$restored" -eq "$ecfs_lost_bytes" ] ||
		die "ecfs-fsck $opt wrote $restored bytes of files to the member, it had $ecfs_lost_bytes"
	rc=0
	"$fsck" -n -q --no-progress "$members" >"$logs/check.log" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || die "ecfs-fsck -n after ecfs-fsck $opt exited $rc: $(cat "$logs/check.log")"
}
for ((r = 1; r <= runs; r++)); do
	rebuild rebuild --rebuild
	rebuild repair -y

	find "$sr/d1" -mindepth 1 -delete
	timed snapraid snapraid -c "$conf" -d d1 fix ||
		die "snapraid fix failed: $(tail "$logs/snapraid.log")"
	diff -r "$tmpfs/d1.orig" "$sr/d1" >/dev/null || die "snapraid fix: d1 differs from the original"
	echo "run $r: ecfs-fsck --rebuild $(tail -n1 "$logs/rebuild.times" | awk '{ print $1 " s" }')," \
		"-y $(tail -n1 "$logs/repair.times" | awk '{ print $1 " s" }')," \
		"snapraid $(tail -n1 "$logs/snapraid.times" | awk '{ print $1 " s" }')"
done

# ---- 6. final verification ----
ecfs_mount -o ro
for d in d1 d2 d3 d4; do
	[ "$d" = d1 ] && ref=$tmpfs/d1.orig || ref=$sr/$d
	diff -r "$ref" "$mnt/$d" >/dev/null || die "ecfs: $d read back differs from the data set"
done
ecfs_umount
snapraid -c "$conf" -d d1 check >"$logs/check-sr.log" 2>&1 ||
	die "snapraid check failed: $(tail "$logs/check-sr.log")"
echo "verified: ecfs-fsck -n clean after each rebuild, the volume reads back the data set;"
echo "          d1 equal to its copy after each fix, snapraid check clean"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- report ----
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# field NAME COLUMN: the median of the runs' wall (1) or CPU (2) seconds.
field() { cut -d' ' -f"$2" "$logs/$1.times" | median; }
walls() { cut -d' ' -f1 "$logs/$1.times" | tr '\n' ' '; }
s_s=$(field snapraid 1)
row() { # tool restored_bytes seconds cpu
	awk -v t="$1" -v b="$2" -v s="$3" -v c="$4" -v l="$dataset_bytes" 'BEGIN {
		printf "%-24s %12.0f %8.2f %8.0f %12.0f %8.2f\n", t, b / 1048576, s, b / s / 1e6, l / s / 1e6, c }'
}
ratio() { # label ecfs-name
	awk -v t="$1" -v eb="$ecfs_lost_bytes" -v sb="$sr_lost_bytes" -v es="$(field "$2" 1)" \
		-v ss="$s_s" -v ec="$(field "$2" 2)" -v sc="$(field snapraid 2)" 'BEGIN {
		printf "%-24s %12s %8.2f %8.2f %12.2f %8.2f\n", t, "", es / ss, (eb / es) / (sb / ss),
			ss / es, ec / sc }'
}
echo
echo "Rebuild of one lost member/disk, ${mib} MiB data set ($nfiles files), tmpfs,"
echo "$(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs${rt[*]:+, both tools under ${rt[*]}},"
echo "median of $runs runs (wall s: ecfs-fsck --rebuild $(walls rebuild)/ -y $(walls repair)/"
echo "snapraid fix $(walls snapraid))"
echo
printf '%-24s %12s %8s %8s %12s %8s\n' tool "restored MiB" seconds "MB/s" "data set MB/s" "CPU s"
row "ecfs-fsck --rebuild" "$ecfs_lost_bytes" "$(field rebuild 1)" "$(field rebuild 2)"
row "ecfs-fsck -y" "$ecfs_lost_bytes" "$(field repair 1)" "$(field repair 2)"
row "snapraid fix" "$sr_lost_bytes" "$s_s" "$(field snapraid 2)"
ratio "ratio --rebuild/snapraid" rebuild
ratio "ratio -y/snapraid" repair
echo "(all 4+2; MB/s = 10^6 bytes/s; the seconds and CPU ratios are ecfs over"
echo " snapraid, lower is better; the MB/s ratios higher is better)"
