#!/bin/sh
# SPDX-License-Identifier: MIT
# Random, small and in-place I/O: fio and sqlite3 on raw tmpfs, on mergerfs
# (cache.files=off) and on ecfs (k=4, m=2) in the same run, both FUSE file
# systems over six member directories on one tmpfs (as scripts/bench-fs.sh
# mounts them), so that the members cost nothing and what is measured is
# the file system itself.
#
#   sudo scripts/bench-randio.sh                  1 GiB file, 15 s per fio job
#   sudo BENCH_MIB=256 BENCH_SECS=5 scripts/bench-randio.sh   smaller, shorter
#   sudo BENCH_RUNS=3 scripts/bench-randio.sh     3 runs and the medians
#   sudo BENCH_RT=1 scripts/bench-randio.sh       daemons, fio, sqlite3 at real-time priority
#   sudo EC_SIMD=avx2 scripts/bench-randio.sh     ecfs with libec's AVX2 kernels
#   ECFS_BUILD_DIR=build-rel ECFS_OPTS=... BENCH_WARM=0 BENCH_SQL_ROWS=N
#                                                 as in bench-fs.sh; N rows
#                                                 (a multiple of 1,000)
#
# fio (psync, one job at a time) on each target, BENCH_MIB MiB per file:
#   prep       a file f written once, 1 MiB writes from start to end (not
#              timed): the data the random jobs read and overwrite;
#   randread   4 KiB random reads of f, IOPS;
#   randwrite  4 KiB random writes into f, end_fsync, IOPS;
#   mix        4 KiB random reads and writes of f, 70/30, an fsync every 32
#              writes, read + write IOPS;
#   append     1 MiB sequential writes into a new file (fallocate=none, so
#              the file grows with each write), unlinked and written again
#              (loops, unlink_each_loop) until BENCH_SECS are up, MB/s:
#              every loop takes new room on the tmpfs, where the later
#              passes of seq and four write over room taken;
#   seq        1 MiB sequential writes into a new file that fio lays out
#              first, time_based, end_fsync, MB/s;
#   four       four such writers at once, BENCH_MIB/2 each, their sum.
# Every job but append runs BENCH_SECS (default 15); the file f exists with
# its size, so fio leaves it as it is.  How fio lays out a new file for a
# write-only job (fio 3.33, strace): unlink, open O_CREAT, fallocate(fd, 0,
# 0, size), and nothing written: no data reaches the file before the job's
# own writes (for a job that reads, fio does write the whole file first).
# On ecfs that fallocate only sets the size (no stripe is written), so the
# first pass of seq and four writes into a file that has its size but no
# stripes; time_based then wraps around, and every later pass overwrites
# the stripes the pass before wrote (the passes are printed).  Both are
# whole-stripe overwrites in the sense of the bar against append.
#
# sqlite3 on each target: BENCH_SQL_ROWS (default 100,000) rows inserted
# into a new database in 1,000 transactions (`INSERT ... hex(randomblob(50))`
# into a rowid table; the sqlite3 defaults, synchronous=FULL), timed, once
# with the rollback journal (journal_mode=delete) and once in WAL mode, and
# the rows counted afterwards.  mergerfs with cache.files=off cannot run
# WAL (the -shm file needs a shared mmap, which direct I/O does not give),
# so a second mergerfs mount with cache.files=partial runs both modes, and
# WAL is compared with that one (and with raw tmpfs).
#
# Prints, per run and as medians over the runs: each job's figure per
# target, ecfs/mergerfs (the median of the runs' ratios; for sqlite the
# ratio of speeds, mergerfs's time over ecfs's), each bar random and
# in-place I/O is held to, with met or not met, and the daemons' CPU seconds per job
# (utime + stime from /proc/PID/stat).  The load average is printed before
# and after each run.  Needs root (tmpfs mount, FUSE mounts), fio, sqlite3
# and mergerfs (scripts/install-deps.sh).  What it shares with bench-fs.sh
# (build, BENCH_RT, the warm-up, the mounts) is in scripts/bench-lib.sh.
set -eu
cd "$(dirname "$0")/.."
bench=bench-randio
. scripts/bench-lib.sh
mib=${BENCH_MIB:-1024}
secs=${BENCH_SECS:-15}
rows=${BENCH_SQL_ROWS:-100000}
[ $((rows % 1000)) -eq 0 ] && [ "$rows" -gt 0 ] || die "BENCH_SQL_ROWS must be a multiple of 1,000"
[ "$mib" -ge 2 ] || die "BENCH_MIB must be at least 2"
for tool in fio sqlite3; do
	command -v $tool >/dev/null || die "$tool not installed (scripts/install-deps.sh)"
done

# Room for: ecfs members of the four writers (1.5x twice the file), or of
# f plus the warm-up file; the SQL; slack.  A limit, not memory taken:
# during the four writers ecfs's members held up to 4.5 times the file
# (4.6 GiB for a 1 GiB file), more than the 3 GiB of their stripes.
bench_init $((mib * 8 + 2048))

scripts/cpu-class.sh
awk -v n="$rows" 'BEGIN {
	print "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL);"
	per = n / 1000
	for (i = 0; i < n; i++) {
		if (i % per == 0)
			print "BEGIN;"
		print "INSERT INTO t (v) VALUES (hex(randomblob(50)));"
		if (i % per == per - 1)
			print "COMMIT;"
	}
}' >"$tmpfs/insert.sql"

# Results, a line each: run, key, target (tmpfs, merger, partial, ecfs or
# ratio), figure.
rec() { echo "$run $1 $2 $3" >>"$work/res"; }
ticks() { if [ -n "$pid" ]; then cpu_ticks "$pid"; else echo 0; fi; }
cpu_since() { echo "$1 $(ticks) $hz" | awk '{ printf "%.1f", ($2 - $1) / $3 }'; }

# Runs fio in $dir with the options every job shares and "$@"; sets $line,
# its terse result (version 3): field 8 read IOPS, 47 KiB written, 48
# write KiB/s, 49 write IOPS.
fio_job() {
	if ! $rt fio --output-format=terse --terse-version=3 --directory="$dir" \
		--ioengine=psync --group_reporting "$@" >"$work/fio.out" 2>&1; then
		cat "$work/fio.out" >&2
		die "fio failed on $target: $*"
	fi
	line=$(grep '^3;' "$work/fio.out" | tail -n 1)
	[ -n "$line" ] || { cat "$work/fio.out" >&2; die "no result from fio on $target: $*"; }
}
field() { echo "$line" | cut -d';' -f"$1"; }
mbs() { awk -v k="$(field 48)" 'BEGIN { printf "%.0f", k * 1024 / 1e6 }'; }
# timed KEY MIB OPTIONS: one timed fio job over MIB MiB of files, after
# a warm-up of what such files can take of fresh memory (on ecfs 1.5x on
# the members, 1x of page cache for fio's read-write opens, and the
# journal's and log's copies: 2.5x, measured as the drop of MemFree during
# seq and four); records the daemon's CPU seconds as cpu_KEY.  Sized
# to the job: with one size for all, the four writers (twice the data of
# seq) met 2.7 GiB of untouched memory to seq's 0.7, and on the Zen 3 VM
# measured that alone took them from about 1.0x of seq to 0.4x.
timed() {
	key=$1
	warm $(($2 * 5 / 2 + 256))
	shift 2
	c0=$(ticks)
	fio_job --name="$key" "$@"
	rec "cpu_$key" "$target" "$(cpu_since "$c0")"
}

# The fio jobs on $target, mounted at $dir, its daemon $pid.
fio_jobs() {
	one="--size=${mib}m"
	tb="--time_based --runtime=$secs"
	fio_job --name=prep --filename=f --rw=write --bs=1m $one --fallocate=none
	timed randread "$mib" --filename=f --rw=randread --bs=4k $one $tb
	rec randread "$target" "$(field 8)"
	timed randwrite "$mib" --filename=f --rw=randwrite --bs=4k $one $tb --end_fsync=1
	rec randwrite "$target" "$(field 49)"
	timed mix "$mib" --filename=f --rw=randrw --rwmixread=70 --fsync=32 --bs=4k $one $tb
	rec mix_r "$target" "$(field 8)"
	rec mix_w "$target" "$(field 49)"
	rec mix "$target" $(($(field 8) + $(field 49)))
	rm -f "$dir/f"
	timed append "$mib" --filename=a --rw=write --bs=1m $one --fallocate=none \
		--loops=1000000 --unlink_each_loop=1 --runtime="$secs" --end_fsync=1
	rec append "$target" "$(mbs)"
	rm -f "$dir/a"
	timed seq "$mib" --filename=s --rw=write --bs=1m $one $tb --end_fsync=1
	rec seq "$target" "$(mbs)"
	rec seq_passes "$target" "$(awk -v k="$(field 47)" -v m="$mib" \
		'BEGIN { printf "%.1f", k / 1024 / m }')"
	rm -f "$dir/s"
	timed four $((mib * 2)) --rw=write --bs=1m --size=$((mib / 2))m --numjobs=4 $tb --end_fsync=1
	rec four "$target" "$(mbs)"
	rm -f "$dir"/four.*
}

# sql MODE: the inserts into a new database in $dir, journal_mode=MODE
# (delete or wal); records sql_MODE, the seconds, and cpu_sql_MODE.
sql() {
	rm -f "$dir/db" "$dir/db-journal" "$dir/db-wal" "$dir/db-shm"
	warm 256
	c0=$(ticks)
	t0=$(now)
	$rt sqlite3 -cmd "PRAGMA journal_mode=$1" "$dir/db" <"$tmpfs/insert.sql" >"$work/sql.out" 2>&1 ||
		{ cat "$work/sql.out" >&2; die "sqlite3 failed on $target, journal_mode=$1"; }
	t1=$(now)
	rec "cpu_sql_$1" "$target" "$(cpu_since "$c0")"
	[ "$(cat "$work/sql.out")" = "$1" ] || die "$target: journal_mode $1 refused: $(cat "$work/sql.out")"
	n=$(sqlite3 "$dir/db" 'SELECT count(*) FROM t')
	[ "$n" = "$rows" ] || die "$target: $n rows, not $rows"
	rec "sql_$1" "$target" "$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')"
	rm -f "$dir/db" "$dir/db-journal" "$dir/db-wal" "$dir/db-shm"
}

members() { for i in 0 1 2 3 4 5; do mkdir "$tmpfs/$1$i"; done; }

one_run() {
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	target=tmpfs dir=$tmpfs/plain pid=""
	mkdir "$dir"
	fio_jobs
	sql delete
	sql wal
	rm -rf "$dir"

	members g
	merger_mount cache.files=off
	target=merger dir=$work/mergerfs pid=$merger_pid
	fio_jobs
	sql delete
	merger_umount
	merger_mount cache.files=partial
	target=partial pid=$merger_pid
	sql delete
	sql wal
	merger_umount
	rm -rf "$tmpfs"/g?

	members e
	ecfs_mount "k=4,m=2${ecfs_opts:+,$ecfs_opts}"
	target=ecfs dir=$work/ecfs pid=$ecfs_pid
	fio_jobs
	sql delete
	sql wal
	ecfs_umount
	rm -rf "$tmpfs"/e?
	load1=$(cut -d' ' -f1-3 /proc/loadavg)
	echo "run $run: load average $load0 before, $load1 after" >>"$work/loads"

	# This run's ratios, whose medians the tables print.
	sel=$run
	for k in randread randwrite mix append seq four; do
		rec "$k" ratio "$(ratio "$(med "$k" ecfs)" "$(med "$k" merger)")"
	done
	rec sql_delete ratio "$(ratio "$(med sql_delete merger)" "$(med sql_delete ecfs)")"
	rec sql_wal ratio "$(ratio "$(med sql_wal partial)" "$(med sql_wal ecfs)")"
	rec seq_append ratio "$(ratio "$(med seq ecfs)" "$(med append ecfs)")"
	rec four_one ratio "$(ratio "$(med four ecfs)" "$(med seq ecfs)")"
}

# med KEY TARGET: the median of the figure (the lower middle for an even
# count) over run $sel, or over every run if $sel is "all"; "-" if none.
med() {
	awk -v k="$1" -v t="$2" -v s="$sel" '$2 == k && $3 == t && (s == "all" || $1 == s) { print $4 }' \
		"$work/res" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}
row() { printf '| %-52s | %13s | %11s | %10s | %11s | %7s |\n' "$@"; }
# fio_row LABEL KEY: a job's figures and ratio.
fio_row() {
	row "$1" "$(med "$2" tmpfs)" "$(med "$2" merger)" "" "$(med "$2" ecfs)" "$(med "$2" ratio)x"
}
mix() { echo "$(med mix_r "$1")+$(med mix_w "$1")"; }
# bar LABEL FIGURE MINIMUM
bar() {
	printf '  %-62s %6sx  %s\n' "$1" "$2" "$(echo "$2 $3" |
		awk '{ print ($1 != "-" && $1 + 0 >= $2 + 0) ? "met" : "NOT MET" }')"
}

table() {
	echo
	row "job ($mib MiB file, ${secs} s)" "raw tmpfs" "mergerfs" "m. partial" "ecfs 4+2" "ecfs/m."
	row "---" "---" "---" "---" "---" "---"
	fio_row "4 KiB random read, IOPS" randread
	fio_row "4 KiB random write, IOPS (end_fsync)" randwrite
	row "70/30 random r/w, fsync per 32 writes, IOPS r+w" "$(mix tmpfs)" "$(mix merger)" "" \
		"$(mix ecfs)" "$(med mix ratio)x"
	fio_row "sequential 1 MiB append to a new file, MB/s" append
	fio_row "seq. 1 MiB write, laid-out file (fallocate), MB/s" seq
	row "  its passes over the file" "$(med seq_passes tmpfs)" "$(med seq_passes merger)" "" \
		"$(med seq_passes ecfs)" ""
	fio_row "4 writers, $((mib / 2)) MiB each, laid out, MB/s" four
	row "sqlite3 $rows rows, 1,000 transactions, rollback, s" "$(med sql_delete tmpfs)" \
		"$(med sql_delete merger)" "$(med sql_delete partial)" "$(med sql_delete ecfs)" \
		"$(med sql_delete ratio)x"
	row "  the same in WAL mode, s (ecfs/m. partial)" "$(med sql_wal tmpfs)" "n/a" \
		"$(med sql_wal partial)" "$(med sql_wal ecfs)" "$(med sql_wal ratio)x"
	echo "(mergerfs: cache.files=off, which cannot run WAL (no shared mmap); m. partial:"
	echo " mergerfs cache.files=partial, run for sqlite3 only; the sqlite3 ratios are of"
	echo " speeds: mergerfs's time over ecfs's, WAL against m. partial)"
	echo
	echo "daemons' CPU seconds per job (utime + stime):"
	for k in randread randwrite mix append seq four sql_delete sql_wal; do
		printf '  %-12s mergerfs %6s  m. partial %6s  ecfs %6s\n' "$k" "$(med "cpu_$k" merger)" \
			"$(med "cpu_$k" partial)" "$(med "cpu_$k" ecfs)"
	done
	echo
	echo "the bars of random and in-place I/O (ecfs against mergerfs, same run):"
	bar "random read >= 0.8x mergerfs" "$(med randread ratio)" 0.8
	bar "random write >= 0.5x mergerfs" "$(med randwrite ratio)" 0.5
	bar "70/30 mix with fsync >= 0.5x mergerfs" "$(med mix ratio)" 0.5
	bar "sequential write into a laid-out file >= 0.5x mergerfs" "$(med seq ratio)" 0.5
	bar "  and >= 0.9x ecfs's own append" "$(med seq_append ratio)" 0.9
	bar "four writers >= one writer (ecfs, laid out)" "$(med four_one ratio)" 1.0
	bar "sqlite3 rollback journal >= 0.5x mergerfs (cache.files=off)" "$(med sql_delete ratio)" 0.5
	bar "sqlite3 WAL >= 0.5x mergerfs (cache.files=partial)" "$(med sql_wal ratio)" 0.5
	echo "  large sequential reads and writes no slower than before: scripts/bench-fs.sh"
}

echo "ecfs $ecfs -o k=4,m=2${ecfs_opts:+,$ecfs_opts}${EC_SIMD:+, EC_SIMD=$EC_SIMD}; mergerfs" \
	"-o cache.files=off (and partial); $(fio --version), sqlite3 $(sqlite3 --version | cut -d' ' -f1)"
[ -z "$rt" ] || echo "daemons, fio and sqlite3 under $rt"
for run in $(seq "$runs"); do
	one_run
	echo
	tail -n 1 "$work/loads"
	table
done
[ "$runs" -gt 1 ] || exit 0
echo
echo "medians of the $runs runs (ratios: the median of the runs' ratios):"
cat "$work/loads"
sel=all
table
