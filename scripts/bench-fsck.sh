#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ecfs-fsck on a tree of small files: the check and the rebuild of one
emptied member, against `cp -a` of one member's tree, in the same run.

    sudo TREE=synthetic:100000 scripts/bench-fsck.sh   100,000 files of 1-8 KiB,
                                100 per directory (as scripts/bench-smallfiles.sh)
    sudo scripts/bench-fsck.sh                         the running python3's stdlib
    sudo TREE=/usr/include BENCH_RUNS=3 scripts/bench-fsck.sh  3 runs and the medians
    ECFS_BUILD_DIR=build-rel ECFS_OPTS=checksum=sha256 ...    which ecfs (default
                                build/, set up as a release build if missing), its options
    FSCK_WRAP="perf record -g -o /tmp/p.data" ...      a command put before each
                                timed ecfs-fsck (a profiler, strace -c -f)
    FSCK_BASE=/tmp/old/ecfs-fsck ...                  also time that ecfs-fsck in
                                each run, right after the built one (before/after)

The tree is made and packed as scripts/bench-smallfiles.sh does, untarred
on ecfs (k=4, m=2) over six member directories on a tmpfs, compared with
the tar (`tar d`) and unmounted.  Then the members' space, taken apart by
kind with `du --block-size=1`: the chunk files (the regular files of the
namespace), the directories of the namespace, and each entry of .ecfs
(superblock, intent log, listings, ...), against the per-file limit of
scripts/bench-smallfiles.sh.  Then BENCH_RUNS times, interleaved, page
cache, dentries and inodes dropped before each step:
  - `cp -a` of one member's tree to a fresh directory on the same tmpfs,
    timed (the copy is removed afterwards);
  - `ecfs-fsck -n` timed (it must exit 0): files per second;
  - that member emptied (its directory removed and made again) and
    `ecfs-fsck --rebuild` timed (it must exit 1: errors corrected), then
    `ecfs-fsck -n` must exit 0 again (not timed).
Prints the seconds of each step, the ratio --rebuild / cp -a, files/s of
the check, the load average, and the CPU class.  Needs root (tmpfs mount,
drop_caches, FUSE mount).
"""
import importlib.machinery
import importlib.util
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_smallfiles():
    """scripts/bench-smallfiles.sh as a module: the tree, the tmpfs, the
    mount and the per-file limit are its own."""
    path = os.path.join(HERE, "bench-smallfiles.sh")
    loader = importlib.machinery.SourceFileLoader("bench_smallfiles", path)
    spec = importlib.util.spec_from_loader("bench_smallfiles", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


sf = load_smallfiles()
MIB = sf.MIB


def du_bytes(paths):
    paths = [p for p in paths if os.path.lexists(p)]
    if not paths:
        return 0
    out = subprocess.run(["du", "-sc", "--block-size=1", *paths],
                         capture_output=True, text=True, check=True).stdout
    return int(out.splitlines()[-1].split()[0])


def space_by_kind(member):
    """{kind: bytes} of one member directory."""
    kinds = {"chunk files": 0, "directories": 0}
    for top, dirs, files in os.walk(member):
        if top == member and ".ecfs" in dirs:
            dirs.remove(".ecfs")
        kinds["directories"] += os.lstat(top).st_blocks * 512
        for name in files:
            kinds["chunk files"] += os.lstat(os.path.join(top, name)).st_blocks * 512
    meta = os.path.join(member, ".ecfs")
    for name in sorted(os.listdir(meta)) if os.path.isdir(meta) else ():
        kinds[f".ecfs/{name}"] = du_bytes([os.path.join(meta, name)])
    kinds[".ecfs (the directory)"] = os.lstat(meta).st_blocks * 512 if os.path.isdir(meta) else 0
    return kinds


def print_space(dirs, files, data, limit):
    total = sf.du(dirs)
    print(f"\nmembers' space: {total / MIB:.1f} MiB, {total / data:.2f}x the data, "
          f"{total / limit:.2f}x the per-file limit ({limit / MIB:.1f} MiB)")
    kinds = {}
    for d in dirs:
        for kind, n in space_by_kind(d).items():
            kinds[kind] = kinds.get(kind, 0) + n
    print("| kind (all members) | MiB | x limit | bytes per file |")
    print("|---|---|---|---|")
    for kind, n in kinds.items():
        print(f"| {kind} | {n / MIB:.2f} | {n / limit:.3f}x | {n / files:.0f} |")


def timed(bench, argv, want, env=None):
    """Drops the caches, runs ARGV; returns its seconds.  WANT: the exit
    status it must have."""
    bench.drop()
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    t = time.perf_counter() - t0
    if p.returncode != want:
        sf.die(f"{' '.join(argv)} exited {p.returncode}, expected {want}:\n{p.stdout[-4000:]}")
    return t


def check_and_rebuild(bench, fsck, dirs):
    """(seconds of ecfs-fsck -n, of --rebuild of the emptied first member)."""
    wrap = os.environ.get("FSCK_WRAP", "").split()
    members = ":".join(dirs)
    check = timed(bench, wrap + [fsck, "-n", "-q", "--no-progress", members], 0)
    subprocess.run(["rm", "-rf", dirs[0]], check=True)
    os.mkdir(dirs[0])
    rebuild = timed(bench, wrap + [fsck, "--rebuild", "-q", "--no-progress", members], 1)
    timed(bench, [fsck, "-n", "-q", "--no-progress", members], 0)
    return check, rebuild


def one_run(bench, fsck, dirs, files):
    load = open("/proc/loadavg").read().split()[:3]
    copy_to = os.path.join(bench.tmpfs, "copy")
    copy = timed(bench, ["cp", "-a", dirs[0], copy_to], 0)
    subprocess.run(["rm", "-rf", copy_to], check=True)
    check, rebuild = check_and_rebuild(bench, fsck, dirs)
    r = {"-n s": check, "files/s": files / check, "cp -a s": copy, "--rebuild s": rebuild,
         "--rebuild / cp -a": rebuild / copy}
    base = os.environ.get("FSCK_BASE")
    if base:
        check, rebuild = check_and_rebuild(bench, base, dirs)
        r.update({"base -n s": check, "base files/s": files / check, "base --rebuild s": rebuild,
                  "base --rebuild / cp -a": rebuild / copy})
    after = open("/proc/loadavg").read().split()[:3]
    print(f"load average {' '.join(load)} before, {' '.join(after)} after: " +
          ", ".join(f"{k} {v:.0f}" if k.endswith("files/s") else f"{k} {v:.2f}" for k, v in r.items()))
    return r


def main():
    if os.geteuid() != 0:
        sf.die("needs root (tmpfs mount, drop_caches, FUSE mount)")
    runs = int(os.environ.get("BENCH_RUNS", "1"))
    ecfs, buildtype = sf.build_ecfs()
    fsck = os.path.join(os.path.dirname(ecfs), "ecfs-fsck")
    bench = sf.Bench()
    try:
        tar = os.path.join(bench.work, "tree.tar")
        tree = sf.pack(tar)
        files, data, limit = sf.tree_stats(tar)
        if not data:
            sf.die(f"{tree}: no data")
        mib = data // MIB + 1
        bench.mount_tmpfs(8 * mib + 1024)
        sf.run("mv", tar, bench.tmpfs)
        tar = os.path.join(bench.tmpfs, "tree.tar")
        sf.header(tree, files, data, limit, ecfs, buildtype)
        bench.start_run()
        dst, dirs = sf.mount_target(bench, f"ecfs {sf.K}+{sf.M}", ecfs)
        sf.run("tar", "-xf", tar, "-C", dst)
        sf.verify(bench, tar, dst)
        bench.stop()
        print_space(dirs, files, data, limit)
        print(f"\necfs-fsck {fsck}; one member ({dirs[0]}) emptied and rebuilt per run\n")
        results = [one_run(bench, fsck, dirs, files) for _ in range(runs)]
        if runs > 1:
            print(f"\nmedians of the {runs} runs: " + ", ".join(
                f"{k} {statistics.median_low(r[k] for r in results):.2f}" for k in results[0]))
    finally:
        bench.cleanup()


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    main()
