#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Small-file benchmark: a real tree on ecfs (k=4, m=2), on mergerfs and on
a plain tmpfs directory, in the same run.

    sudo scripts/bench-smallfiles.sh                      the running python3's stdlib
    sudo TREE=/usr/lib/python3.11 scripts/bench-smallfiles.sh  another tree
    sudo TREE=synthetic:100000 scripts/bench-smallfiles.sh  100,000 files of 1-8 KiB,
                                100 per directory, made by the script
    sudo BENCH_RUNS=3 scripts/bench-smallfiles.sh         3 runs and the medians
    ECFS_BUILD_DIR=build-rel ECFS_OPTS=checksum=sha256 ...    which ecfs (default
                                build/, set up as a release build if missing), its options

The tree (by default the standard library of the python3 running this
script, without site-packages) is packed once into a tar on a tmpfs.  Each
target keeps its files on that tmpfs: ecfs and mergerfs (cache.files=off,
as scripts/bench-fs.sh mounts it) over six member directories, the plain
target in one directory.  On each target, timed: `tar x` of the tree,
`ls -lR` (to /dev/null), reading every file (`find -exec cat` to
/dev/null), `rm -rf`.  Page cache, dentries and inodes are dropped before
every phase.  After the untar the tar is compared with the target (`tar d`,
not timed) and the members' block usage is taken (`du -s --block-size=1`
of the member directories, less what they held right after the mount: for
ecfs, its empty volume's .ecfs files).  "x data" is that use over the sum
of the regular files' sizes.  A run during which another job dropped the
caches (counted in /proc/vmstat) is thrown away and run again: the drop
adds lookups to the phase it falls in, and may fail tar x (mergerfs
gives a directory the kernel forgets a new inode number, and tar x checks
it).

The per-file limit is the least a per-file layout can take on members with
4 KiB blocks: each regular file of the tree stored either as n strips of
ceil(size/k) bytes, or as m+1 whole copies, each piece with a 128-byte
header, each rounded up to whole blocks; whichever takes fewer.  Prints
seconds per phase, the members' use against the data and that limit, the
ecfs/mergerfs ratios, and each daemon's CPU seconds per phase.  Needs root
(tmpfs mount, drop_caches, FUSE mounts).
"""
import os
import random
import signal
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time

K, M = 4, 2
BLOCK, HEADER = 4096, 128
MIB = 1 << 20
PHASES = ("untar", "ls -lR", "read all", "rm -rf")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def die(msg):
    print(f"bench-smallfiles: {msg}", file=sys.stderr)
    sys.exit(1)


def run(*argv, quiet=False):
    out = subprocess.DEVNULL if quiet else None
    if subprocess.run(argv, stdout=out).returncode != 0:
        die(f"failed: {' '.join(argv)}")


def blocks(nbytes):
    return -(-nbytes // BLOCK)


def file_limit(size):
    """Blocks the least per-file layout takes for a file of SIZE bytes."""
    strips = (K + M) * blocks(-(-size // K) + HEADER)
    copies = (M + 1) * blocks(size + HEADER)
    return min(strips, copies)


def tree_stats(tar):
    """(regular files, their bytes, the per-file limit in bytes) of TAR."""
    files = data = limit = 0
    with tarfile.open(tar) as t:
        for member in t:
            if member.isreg():
                files += 1
                data += member.size
                limit += file_limit(member.size) * BLOCK
    return files, data, limit


def make_synthetic(top, count):
    """COUNT files of 1-8 KiB of random bytes, 100 per directory, under TOP:
    the same tree every time (a fixed seed)."""
    rng = random.Random(count)
    for i in range(count):
        d = os.path.join(top, f"d{i // 100:05d}")
        if i % 100 == 0:
            os.makedirs(d)
        with open(os.path.join(d, f"f{i % 100:02d}"), "wb") as f:
            f.write(rng.randbytes(rng.randint(1024, 8192)))


def pack(tar):
    """Packs $TREE or the stdlib into TAR; returns the tree's path."""
    tree = os.environ.get("TREE") or sysconfig.get_paths()["stdlib"]
    if tree.startswith("synthetic:"):
        count = int(tree.split(":", 1)[1])
        tree = os.path.join(os.path.dirname(tar), f"synthetic-{count}")
        make_synthetic(tree, count)
    tree = os.path.abspath(tree)
    if not os.path.isdir(tree):
        die(f"{tree}: not a directory")
    run("tar", "-cf", tar, "--exclude=site-packages", "--exclude=dist-packages",
        "-C", os.path.dirname(tree) or "/", os.path.basename(tree))
    return tree


def build_ecfs():
    build = os.environ.get("ECFS_BUILD_DIR", "build")
    build = os.path.join(ROOT, build)
    if not os.path.exists(os.path.join(build, "build.ninja")):
        run("meson", "setup", build, "--buildtype=release", quiet=True)
    run("meson", "compile", "-C", build, quiet=True)
    ecfs = os.path.join(build, "src", "ecfs")
    if not os.access(ecfs, os.X_OK):
        die(f"{ecfs} not built")
    out = subprocess.run(["meson", "configure", build], capture_output=True, text=True).stdout
    buildtype = next((line.split()[1] for line in out.splitlines()
                      if line.split()[:1] == ["buildtype"]), "?")
    return ecfs, buildtype


class Bench:
    """The work directory, its tmpfs and the FUSE daemons, all undone by
    cleanup() on every exit."""

    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="ecfs-bench-small.")
        self.tmpfs = os.path.join(self.work, "tmpfs")
        self.mnt = os.path.join(self.work, "mnt")
        self.log = os.path.join(self.work, "daemon.log")
        os.mkdir(self.tmpfs)
        os.mkdir(self.mnt)
        self.daemon = None

    def mount_tmpfs(self, mib):
        run("mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", self.tmpfs)

    def start(self, argv):
        """Starts a FUSE daemon in the foreground on self.mnt, its messages
        to self.log."""
        with open(self.log, "w") as log:
            self.daemon = subprocess.Popen(argv + [self.mnt], stdout=log, stderr=log)
        for _ in range(200):
            if os.path.ismount(self.mnt):
                return
            if self.daemon.poll() is not None:
                die(f"{argv[0]} exited with {self.daemon.returncode}:\n" + open(self.log).read())
            time.sleep(0.025)
        die(f"{argv[0]} did not mount")

    def stop(self):
        if os.path.ismount(self.mnt):
            if subprocess.run(["fusermount3", "-u", self.mnt]).returncode != 0:
                subprocess.run(["fusermount3", "-u", "-z", self.mnt])
        if self.daemon:
            try:
                self.daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
            self.daemon = None

    def cpu(self):
        """CPU seconds (user + system) of the daemon so far; 0 without one."""
        if not self.daemon:
            return 0.0
        with open(f"/proc/{self.daemon.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def reset(self):
        """Unmounts and removes every target, keeping the tar."""
        self.stop()
        for name in os.listdir(self.tmpfs):
            if name != "tree.tar":
                subprocess.run(["rm", "-rf", os.path.join(self.tmpfs, name)])

    def drop(self):
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        self.own_drops += 1

    def start_run(self):
        self.own_drops, self.drops0 = 0, drops_so_far()

    def foreign_drops(self):
        """Cache drops by other jobs since start_run()."""
        return drops_so_far() - self.drops0 - self.own_drops

    def cleanup(self):
        self.stop()
        if os.path.ismount(self.tmpfs):
            subprocess.run(["umount", self.tmpfs])
        subprocess.run(["rm", "-rf", self.work])


def drops_so_far():
    """drop_caches writes since boot, by anyone (0 if not counted)."""
    with open("/proc/vmstat") as f:
        return next((int(line.split()[1]) for line in f
                     if line.startswith("drop_slab ")), 0)


def warm(bench, mib):
    """Writes and deletes MIB of tmpfs: on these VMs memory not touched
    lately is slow to touch again (see scripts/bench-fs.sh)."""
    path = os.path.join(bench.tmpfs, "warm")
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}",
                    "status=none"], stderr=subprocess.DEVNULL)
    os.unlink(path)


def du(dirs):
    out = subprocess.run(["du", "-sc", "--block-size=1", *dirs],
                         capture_output=True, text=True, check=True).stdout
    return int(out.splitlines()[-1].split()[0])


def members(bench, prefix):
    dirs = [os.path.join(bench.tmpfs, f"{prefix}{i}") for i in range(K + M)]
    for d in dirs:
        os.mkdir(d)
    return dirs


def mount_target(bench, name, ecfs):
    """Mounts (or makes) target NAME; returns (directory, its members)."""
    if name == "plain tmpfs":
        dirs = [os.path.join(bench.tmpfs, "plain")]
        os.mkdir(dirs[0])
        return dirs[0], dirs
    if name == "mergerfs":
        dirs = members(bench, "g")
        bench.start(["mergerfs", "-f", "-o", "cache.files=off,category.create=mfs",
                     ":".join(dirs)])
    else:
        dirs = members(bench, "e")
        opts = os.environ.get("ECFS_OPTS", "")
        bench.start([ecfs, "-f", "-o", f"k={K},m={M}" + (f",{opts}" if opts else ""),
                     ":".join(dirs)])
    return bench.mnt, dirs


class Interfered(Exception):
    """Another job dropped the caches during a run."""


def failed(bench, argv, err):
    """A command of a run failed: Interfered if another job dropped the
    caches during the run, else fatal."""
    sys.stderr.write(err)
    if bench.foreign_drops():
        raise Interfered()
    die(f"failed: {' '.join(argv)}")


def phase(bench, argv, warm_mib=0):
    """Runs one timed phase; returns (seconds, daemon CPU seconds)."""
    bench.drop()
    if warm_mib:
        warm(bench, warm_mib)
    c0 = bench.cpu()
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t = time.perf_counter() - t0
    if p.returncode:
        failed(bench, argv, p.stderr)
    return t, bench.cpu() - c0


def verify(bench, tar, dst):
    """Compares the tree extracted in DST with TAR (tar d), not timed."""
    bench.drop()
    argv = ["tar", "-df", tar, "-C", dst]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode:
        failed(bench, argv, p.stdout + p.stderr)


def run_target(bench, name, ecfs, tar, top, warm_mib):
    """The four phases on target NAME: {phase: (s, cpu s)}, and 'use'."""
    dst, dirs = mount_target(bench, name, ecfs)
    empty = du(dirs)
    tree = os.path.join(dst, top)
    r = {"untar": phase(bench, ["tar", "-xf", tar, "-C", dst], warm_mib)}
    verify(bench, tar, dst)
    os.sync()
    r["use"] = du(dirs) - empty
    r["empty"] = empty
    r["ls -lR"] = phase(bench, ["ls", "-lR", tree])
    r["read all"] = phase(bench, ["find", tree, "-type", "f", "-exec", "cat", "{}", "+"],
                          warm_mib // 8)
    r["rm -rf"] = phase(bench, ["rm", "-rf", tree])
    if os.listdir(dst):
        die(f"{name}: not empty after rm -rf")
    bench.stop()
    run("rm", "-rf", *dirs)
    return r


TARGETS = ("plain tmpfs", "mergerfs", f"ecfs {K}+{M}")


def print_table(res, data, limit, ratios=None):
    """RES: {target: run result}; prints the table with the ecfs/mergerfs
    RATIOS (by default those of RES) and returns them."""
    print("| | " + " | ".join(f"{p} s" for p in PHASES) + " | members use MiB | x data | x limit |")
    print("|---" * (len(PHASES) + 4) + "|")
    for name in TARGETS:
        r = res[name]
        print(f"| {name} | " + " | ".join(f"{r[p][0]:.2f}" for p in PHASES) +
              f" | {r['use'] / MIB:.0f} | {r['use'] / data:.2f}x | {r['use'] / limit:.2f}x |")
    e, g = res[TARGETS[2]], res["mergerfs"]
    ratios = ratios or [e[p][0] / g[p][0] for p in PHASES]
    print("| ecfs / mergerfs | " + " | ".join(f"{x:.1f}x" for x in ratios) + " | | | |")
    print("\ndaemon CPU s: " + "; ".join(
        f"{name} " + ", ".join(f"{res[name][p][1]:.2f}" for p in PHASES)
        for name in TARGETS[1:]) + f"  ({', '.join(PHASES)})")
    return ratios


def median_result(runs):
    """The median of every figure over RUNS (lists of {target: result})."""
    med = {}
    for name in TARGETS:
        rs = [r[name] for r in runs]
        med[name] = {p: (statistics.median_low(x[p][0] for x in rs),
                         statistics.median_low(x[p][1] for x in rs)) for p in PHASES}
        med[name]["use"] = statistics.median_low(x["use"] for x in rs)
    return med


def describe_machine():
    model = "?"
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    simd = [x for x in ("avx2", "avx512f", "gfni") if x in flags]
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip() or "?"
    return (f"{time.strftime('%Y-%m-%d')}, commit {commit}, CPU {model} "
            f"({', '.join(simd) or 'no avx2'}), {os.cpu_count()} CPUs")


def header(tree, files, data, limit, ecfs, buildtype):
    print(subprocess.run([os.path.join(ROOT, "scripts", "cpu-class.sh")], capture_output=True, text=True).stdout.strip())
    print(f"tree {tree}: {files} regular files, {data / MIB:.1f} MiB")
    print(f"per-file limit ({K}+{M}, {BLOCK}-byte blocks, {HEADER}-byte header): "
          f"{limit / MIB:.1f} MiB, {limit / data:.2f}x the data")
    print(f"ecfs {ecfs} ({buildtype}), -o k={K},m={M}"
          + (f",{os.environ['ECFS_OPTS']}" if os.environ.get("ECFS_OPTS") else "")
          + "; mergerfs -o cache.files=off,category.create=mfs")
    print(describe_machine())


def one_run(bench, ecfs, tar, top, data, limit, warm_mib):
    load = open("/proc/loadavg").read().split()[:3]
    bench.start_run()
    res = {name: run_target(bench, name, ecfs, tar, top, warm_mib) for name in TARGETS}
    if bench.foreign_drops():
        raise Interfered()
    after = open("/proc/loadavg").read().split()[:3]
    print(f"\nload average {' '.join(load)} before, {' '.join(after)} after; "
          f"ecfs empty volume {res[TARGETS[2]]['empty'] // 1024} KiB on the members "
          "(subtracted)\n")
    res["ratios"] = print_table(res, data, limit)
    return res


def main():
    if os.geteuid() != 0:
        die("needs root (tmpfs mount, drop_caches, FUSE mounts)")
    for tool in ("mergerfs", "fusermount3", "tar", "du"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"],
                          stdout=subprocess.DEVNULL).returncode != 0:
            die(f"{tool} not installed (scripts/install-deps.sh)")
    runs = int(os.environ.get("BENCH_RUNS", "1"))
    ecfs, buildtype = build_ecfs()
    bench = Bench()
    try:
        tar = os.path.join(bench.work, "tree.tar")
        tree = pack(tar)
        files, data, limit = tree_stats(tar)
        if not data:
            die(f"{tree}: no data")
        # The tar moves onto the tmpfs, out of reach of drop_caches.
        mib = data // MIB + 1
        bench.mount_tmpfs(24 * mib + 5120)   # mergerfs wants 4 GiB free (minfreespace)
        run("mv", tar, bench.tmpfs)
        tar = os.path.join(bench.tmpfs, "tree.tar")
        header(tree, files, data, limit, ecfs, buildtype)
        results, retries = [], 0
        while len(results) < runs:
            try:
                results.append(one_run(bench, ecfs, tar, os.path.basename(tree), data, limit,
                                       16 * mib))
            except Interfered:
                retries += 1
                if retries > 10:
                    die("other jobs keep dropping the caches")
                print("(another job dropped the caches during this run: run again)")
                bench.reset()
        if runs > 1:
            print(f"\nmedians of the {runs} runs (the ratios: the median of the runs' ratios):\n")
            print_table(median_result(results), data, limit,
                        [statistics.median_low(r) for r in zip(*(x["ratios"] for x in results))])
    finally:
        bench.cleanup()


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(130))
    main()
