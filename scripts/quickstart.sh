#!/bin/sh
# SPDX-License-Identifier: MIT
# A five-minute tour of ecfs: build, make a volume of six member
# directories (k=4 data + m=2 parity), store a file, destroy a member,
# read the file back byte-exact, look at the health report, and repair.
#
#   scripts/quickstart.sh            demo under a fresh /tmp/ecfs-demo.XXXXXX
#   ECFS_DEMO_DIR=./demo scripts/quickstart.sh
#   ECFS_KEEP=1 ...                  leave the member directories for a look
#
# Exits non-zero on any mismatch.  Everything it mounts is unmounted at exit.
set -eu
cd "$(dirname "$0")/.."
build=${ECFS_BUILD_DIR:-build}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
die() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }

say "Building (meson + ninja) in $build/"
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" >/dev/null || die "meson setup failed (run scripts/install-deps.sh?)"
fi
meson compile -C "$build" >/dev/null || die "build failed: run 'meson compile -C $build' to see why"
ecfs=$build/src/ecfs
fsck=$build/src/ecfs-fsck
[ -x "$ecfs" ] || die "$ecfs was not built"
[ -x "$fsck" ] || die "$fsck was not built"

if [ -n "${ECFS_DEMO_DIR:-}" ]; then
	demo=$ECFS_DEMO_DIR
	mkdir -p "$demo"
	[ -z "$(ls -A "$demo")" ] || die "$demo is not empty"
else
	demo=$(mktemp -d /tmp/ecfs-demo.XXXXXX)
fi
demo=$(cd "$demo" && pwd)
mnt=$demo/mnt
members=""
for i in 0 1 2 3 4 5; do
	mkdir "$demo/disk$i"
	members="$members${members:+:}$demo/disk$i"
done
mkdir "$mnt"

cleanup() {
	if mountpoint -q "$mnt" 2>/dev/null; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" || true
	fi
	if [ "${ECFS_KEEP:-0}" = 1 ]; then
		echo "kept $demo"
	else
		rm -rf "$demo"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_volume() {
	"$ecfs" "$@" "$members" "$mnt" || die "ecfs failed to mount"
	mountpoint -q "$mnt" || die "ecfs returned but $mnt is not mounted"
}
unmount_volume() {
	fusermount3 -u "$mnt" || die "could not unmount $mnt"
	# the daemon exits right after the unmount; give it a moment
	sleep 0.3
}
# Reads must reach the daemon, not the page cache (possible as root only;
# otherwise the remount further down proves it as well).
drop_caches() { [ "$(id -u)" -ne 0 ] || echo 3 >/proc/sys/vm/drop_caches; }
check() {
	got=$(sha256sum <"$mnt/$1" | cut -d' ' -f1) || die "reading $1 failed"
	[ "$got" = "$2" ] || die "$1: sha256 $got, expected $2: MISMATCH"
	echo "   $1: sha256 $got  OK (byte-exact)"
}

say "Creating a volume: 6 member directories, k=4 data + m=2 parity"
echo "   $ ecfs -o k=4,m=2 $demo/disk0:...:disk5 $mnt"
mount_volume -o k=4,m=2
echo "   mounted; each member got a .ecfs/ folder:"
ls -A "$demo/disk0" | sed 's/^/     disk0\//'

say "Writing 20 MiB of random data and a small text file"
head -c $((20 << 20)) /dev/urandom >"$demo/source.bin"
cp "$demo/source.bin" "$mnt/data.bin"
echo "ecfs keeps this sentence readable with any two disks gone." >"$mnt/hello.txt"
sum_data=$(sha256sum <"$demo/source.bin" | cut -d' ' -f1)
sum_text=$(printf '%s\n' "ecfs keeps this sentence readable with any two disks gone." |
	sha256sum | cut -d' ' -f1)
rm "$demo/source.bin"
check data.bin "$sum_data"
check hello.txt "$sum_text"
echo "   every member holds a chunk file of each (1/4 of the data, plus parity):"
du -sh "$demo"/disk*/data.bin | sed 's/^/     /'

say "The file's layout (xattr user.ecfs.layout)"
getfattr --absolute-names --only-values -n user.ecfs.layout "$mnt/data.bin" | sed 's/^/   /'

# Lose a member that holds data of data.bin (position 0 lives on member
# `rotation`), so that reading it really decodes from parity.
lost=$(getfattr --absolute-names --only-values -n user.ecfs.layout "$mnt/data.bin" |
	sed -n 's/^rotation=//p')
lost=${lost:-2}
say "Disaster: rm -rf one member directory (disk$lost, which holds data of data.bin)"
rm -rf "$demo/disk$lost"
drop_caches
check data.bin "$sum_data"
check hello.txt "$sum_text"

say "Volume health (xattr user.ecfs.health on the mount root)"
getfattr --absolute-names --only-values -n user.ecfs.health "$mnt" | sed 's/^/   /'

say "Replacing the lost disk by an empty directory"
unmount_volume
mkdir "$demo/disk$lost"
echo "   $ ecfs-fsck --rebuild $demo/disk0:...:disk5"
# exit status 0: clean, 1: errors corrected, 4 and up: not repaired
rc=0
"$fsck" --rebuild --no-progress "$members" >"$demo/fsck.out" 2>&1 || rc=$?
sed 's/^/   /' "$demo/fsck.out"
[ "$rc" -le 1 ] || die "ecfs-fsck --rebuild exited with $rc"
say "A full check afterwards: every strip of every member"
echo "   $ ecfs-fsck -n $demo/disk0:...:disk5"
rc=0
"$fsck" -n --no-progress "$members" >"$demo/fsck.out" 2>&1 || rc=$?
sed 's/^/   /' "$demo/fsck.out"
[ "$rc" -eq 0 ] || die "ecfs-fsck -n exited with $rc after the rebuild"
mount_volume
drop_caches
check data.bin "$sum_data"
check hello.txt "$sum_text"
say "Health after repair"
getfattr --absolute-names --only-values -n user.ecfs.health "$mnt" | sed 's/^/   /'
state=$(getfattr --absolute-names --only-values -n user.ecfs.health "$mnt" | sed -n 's/^state=//p')
[ "$state" = healthy ] || die "volume is $state after ecfs-fsck, not healthy"

say "Unmounting: fusermount3 -u $mnt"
unmount_volume
echo
echo "Done: every byte survived the loss of a member."
