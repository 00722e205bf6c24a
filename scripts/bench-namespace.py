#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Times namespace operations through ecfs (k=4, m=2) and mergerfs in the
same run.

    scripts/bench-namespace.py ECFS_BINARY [LABEL=ECFS_BINARY ...]   (as root)

Each ecfs binary (a label names it in the table; "ecfs" by default) mounts
a volume of six member directories; mergerfs (cache.files=off and
category.create=mfs, as scripts/bench-smallfiles.sh mounts it, its other
caches at their defaults) mounts six more.  Every member is on DIR
(default /dev/shm, a tmpfs).  All targets are mounted at once, and each
operation goes to them in turns, B calls at a time (the order of the
targets turning too), so that what else the machine does weighs on all
of them alike: N creates, N stats, R*N renames, N links, N unlinks (of
the links), N mkdirs, N rmdirs, then L listings (os.listdir) of a
directory of D entries made for it (not timed), one listing per turn:
the first ("first readdir", right after the entries were made, which
the kernel has not cached: ecfs lists it from the names its daemon holds)
and the others ("readdir", which the kernel may serve from what it kept
of the first) are reported apart.  Then, three times, every target is
unmounted and mounted again over the same members and the directory
listed once more ("readdir after remount": nothing kept in memory, ecfs
lists it from what its unmount saved once the first m + 1 members show
they have not changed, DESIGN.md section 4).
ecfs runs with its default member timeout unless ECFS_OPTS adds options.

Environment: DIR, N (default 1000), R (rename rounds, default 3), B
(default 50), D (default 10000), L (default 10), RUNS (fresh mounts,
default 3), ECFS_OPTS.  Prints, per operation and target, the median
over all turns of all runs of the mean latency of a turn (microseconds;
a listing in milliseconds) and its quartiles, each ecfs's ratio of
medians to mergerfs, and the load average before and after.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

K, M = 4, 2
OPS = ("create", "stat", "rename", "link", "unlink", "mkdir", "rmdir", "first readdir",
       "readdir", "readdir after remount")
FLAGS = os.O_CREAT | os.O_WRONLY
REMOUNTS = 3  # per run, each followed by one listing
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def die(msg):
    print(f"bench-namespace: {msg}", file=sys.stderr)
    sys.exit(1)


def env_int(name, default):
    return int(os.environ.get(name, str(default)))


def mount(argv, mnt):
    """Starts a FUSE daemon in the foreground on MNT; returns its process."""
    p = subprocess.Popen(argv + [mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        if os.path.ismount(mnt):
            return p
        if p.poll() is not None:
            die(f"{argv[0]} exited with {p.returncode} before mounting")
        time.sleep(0.02)
    p.kill()
    die(f"{argv[0]} did not mount {mnt}")


def unmount(p, mnt):
    subprocess.run(["fusermount3", "-u", mnt], check=False)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def steps(n, rounds):
    """(operation, number of calls, call j on the tree d)."""
    return [
        ("create", n, lambda d, j: os.close(os.open(f"{d}/f{j}.0", FLAGS, 0o644))),
        ("stat", n, lambda d, j: os.stat(f"{d}/f{j}.0")),
        ("rename", n * rounds, lambda d, j: os.rename(f"{d}/f{j % n}.{j // n}",
                                                      f"{d}/f{j % n}.{j // n + 1}")),
        ("link", n, lambda d, j: os.link(f"{d}/f{j}.{rounds}", f"{d}/l{j}")),
        ("unlink", n, lambda d, j: os.unlink(f"{d}/l{j}")),
        ("mkdir", n, lambda d, j: os.mkdir(f"{d}/d{j}")),
        ("rmdir", n, lambda d, j: os.rmdir(f"{d}/d{j}")),
    ]


def listing(big, entries):
    if len(os.listdir(big)) != entries:
        die(f"{big}: a listing did not give {entries} names")


def timed_listings(trees, entries, first, turns, op):
    """One listing of each tree's big directory, in turns from first."""
    labels = list(trees)
    for label in labels[first % len(labels):] + labels[:first % len(labels)]:
        t = time.perf_counter()
        listing(os.path.join(trees[label], "big"), entries)
        turns[label][op].append(time.perf_counter() - t)


def one_run(trees, cfg, turns):
    """Every operation on every tree ({label: mount point}), in turns;
    appends each turn's mean seconds per call to turns[label][op]."""
    n, rounds, batch, entries, listings = cfg
    labels = list(trees)
    k = 0
    for op, count, fn in steps(n, rounds):
        for start in range(0, count, batch):
            k += 1
            for label in labels[k % len(labels):] + labels[:k % len(labels)]:
                d = os.path.join(trees[label], "d")
                t = time.perf_counter()
                for j in range(start, min(start + batch, count)):
                    fn(d, j)
                turns[label][op].append((time.perf_counter() - t) / (min(start + batch, count)
                                                                      - start))
    for label in labels:
        big = os.path.join(trees[label], "big")
        os.mkdir(big)
        for j in range(entries):
            os.close(os.open(f"{big}/e{j}", FLAGS, 0o644))
    for i in range(listings):
        timed_listings(trees, entries, i, turns, "first readdir" if i == 0 else "readdir")


def mount_all(base, targets):
    """Mounts every target over six fresh member directories; returns
    ({label: mount point}, [(process, mount point, argv)])."""
    trees, procs = {}, []
    for label, argv in targets:
        root = tempfile.mkdtemp(prefix=f"{label}.", dir=base)
        dirs = [os.path.join(root, f"m{i}") for i in range(K + M)]
        for m in dirs:
            os.mkdir(m)
        mnt = os.path.join(root, "mnt")
        os.mkdir(mnt)
        argv = argv + [":".join(dirs)]
        procs.append((mount(argv, mnt), mnt, argv))
        trees[label] = mnt
        os.mkdir(os.path.join(mnt, "d"))
    return trees, procs


def remount_all(procs):
    """Unmounts every target and mounts it again over its members."""
    for i, (p, mnt, argv) in enumerate(procs):
        unmount(p, mnt)
        procs[i] = (mount(argv, mnt), mnt, argv)


def fmt(op, secs, unit=True):
    if "readdir" in op:
        return f"{secs * 1e3:.1f}" + (" ms" if unit else "")
    return f"{secs * 1e6:.0f}" + (" us" if unit else "")


def print_table(turns, labels):
    """The medians (quartiles) of each operation's turns, and ratios."""
    ecfs = [lb for lb in labels if lb != "mergerfs"]
    head = ["op"] + labels + [f"{lb}/mergerfs" for lb in ecfs]
    print("| " + " | ".join(head) + " |")
    print("|---" * len(head) + "|")
    for op in OPS:
        med = {lb: statistics.median(turns[lb][op]) for lb in labels}
        cells = [op]
        for lb in labels:
            q = statistics.quantiles(turns[lb][op], n=4) if len(turns[lb][op]) > 1 else [med[lb]] * 3
            cells.append(f"{fmt(op, med[lb])} ({fmt(op, q[0], False)}-{fmt(op, q[2], False)})")
        cells += [f"{med[lb] / med['mergerfs']:.2f}x" for lb in ecfs]
        print("| " + " | ".join(cells) + " |")
    print(flush=True)


def main():
    if len(sys.argv) < 2:
        die("usage: bench-namespace.py ECFS_BINARY [LABEL=ECFS_BINARY ...]")
    targets = [("mergerfs", ["mergerfs", "-f", "-o", "cache.files=off,category.create=mfs"])]
    opts = os.environ.get("ECFS_OPTS", "")
    for arg in sys.argv[1:]:
        label, _, path = arg.rpartition("=")
        label = label or "ecfs"
        if not os.access(path, os.X_OK):
            die(f"{path}: not an executable")
        if label in (t[0] for t in targets):
            die(f"label {label} given twice")
        targets.append((label, [path, "-f", "-o", f"k={K},m={M}" + (f",{opts}" if opts else "")]))
    cfg = (env_int("N", 1000), env_int("R", 3), env_int("B", 50), env_int("D", 10000),
           env_int("L", 10))
    runs = env_int("RUNS", 3)
    labels = [t[0] for t in targets]
    base = tempfile.mkdtemp(prefix="nsbench-", dir=os.environ.get("DIR", "/dev/shm"))
    print(subprocess.run([os.path.join(ROOT, "scripts", "cpu-class.sh")], capture_output=True, text=True).stdout.strip())
    print(f"N={cfg[0]} R={cfg[1]} B={cfg[2]} D={cfg[3]} L={cfg[4]} RUNS={runs} "
          f"ECFS_OPTS={opts!r}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
          flush=True)
    turns = {lb: {op: [] for op in OPS} for lb in labels}
    try:
        for _ in range(runs):
            trees, procs = mount_all(base, targets)
            try:
                one_run(trees, cfg, turns)
                for i in range(REMOUNTS):
                    remount_all(procs)
                    timed_listings(trees, cfg[3], i, turns, "readdir after remount")
            finally:
                for p, mnt, _ in procs:
                    unmount(p, mnt)
                for entry in os.listdir(base):
                    shutil.rmtree(os.path.join(base, entry))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"\nmedian over the turns of {runs} runs (quartiles):")
    print_table(turns, labels)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
