#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Times namespace operations through ecfs (k=4, m=2) and mergerfs in the
same run (issue 15, item 7).

    scripts/bench-namespace.py ECFS_BINARY [LABEL=ECFS_BINARY ...]   (as root)

Each ecfs binary (a label names it in the table; "ecfs" by default) mounts
a volume of six member directories; mergerfs (cache.files=off and
category.create=mfs, as scripts/bench-smallfiles.sh mounts it, other
caches at their defaults) mounts six more.  Every member is on DIR
(default /dev/shm, a tmpfs).  Each run mounts every target in turn on
fresh members and times, one call after the other: N creates, N stats,
R*N renames, N links, N unlinks (of the links), N mkdirs, N rmdirs, and
L listings (os.listdir) of a directory of D entries made for it (not
timed).  ecfs runs with its default member timeout unless ECFS_OPTS adds
options.

Environment: DIR, N (default 1000), R (rename rounds, default 3), D
(default 10000), L (default 5), RUNS (default 3), ECFS_OPTS.  Prints each
run's table, then the medians over the runs of the mean latency of each
operation (microseconds; a listing in milliseconds) and each ecfs's
ratio to mergerfs, and the load average before and after.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

K, M = 4, 2
OPS = ("create", "stat", "rename", "link", "unlink", "mkdir", "rmdir", "readdir")


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


def timed(count, fn):
    """Mean seconds per call of fn(0..count-1)."""
    t = time.perf_counter()
    for j in range(count):
        fn(j)
    return (time.perf_counter() - t) / count


def workload(top, n, rounds, entries, listings):
    """{operation: mean seconds per call} on the mounted tree TOP."""
    d = os.path.join(top, "d")
    os.mkdir(d)
    flags = os.O_CREAT | os.O_WRONLY
    res = {}
    res["create"] = timed(n, lambda j: os.close(os.open(f"{d}/f{j}.0", flags, 0o644)))
    res["stat"] = timed(n, lambda j: os.stat(f"{d}/f{j}.0"))
    res["rename"] = timed(n * rounds, lambda j: os.rename(f"{d}/f{j % n}.{j // n}",
                                                          f"{d}/f{j % n}.{j // n + 1}"))
    res["link"] = timed(n, lambda j: os.link(f"{d}/f{j}.{rounds}", f"{d}/l{j}"))
    res["unlink"] = timed(n, lambda j: os.unlink(f"{d}/l{j}"))
    res["mkdir"] = timed(n, lambda j: os.mkdir(f"{d}/d{j}"))
    res["rmdir"] = timed(n, lambda j: os.rmdir(f"{d}/d{j}"))
    big = os.path.join(top, "big")
    os.mkdir(big)
    for j in range(entries):
        os.close(os.open(f"{big}/e{j}", flags, 0o644))

    def listing(_):
        if len(os.listdir(big)) != entries:
            die(f"{big}: a listing did not give {entries} names")
    res["readdir"] = timed(listings, listing)
    return res


def run_target(base, label, argv, cfg):
    """Mounts one target over six fresh member directories, runs the
    workload, unmounts and removes everything."""
    root = tempfile.mkdtemp(prefix=f"{label}.", dir=base)
    dirs = [os.path.join(root, f"m{i}") for i in range(K + M)]
    for m in dirs:
        os.mkdir(m)
    mnt = os.path.join(root, "mnt")
    os.mkdir(mnt)
    p = mount(argv + [":".join(dirs)], mnt)
    try:
        return workload(mnt, *cfg)
    finally:
        unmount(p, mnt)
        shutil.rmtree(root)


def fmt(op, secs):
    return f"{secs * 1e3:.2f} ms" if op == "readdir" else f"{secs * 1e6:.0f} us"


def print_table(results, labels):
    """RESULTS: {label: {op: seconds}}, mergerfs first."""
    ecfs = [lb for lb in labels if lb != "mergerfs"]
    head = ["op"] + [lb for lb in labels] + [f"{lb}/mergerfs" for lb in ecfs]
    print("| " + " | ".join(head) + " |")
    print("|---" * len(head) + "|")
    for op in OPS:
        cells = [op] + [fmt(op, results[lb][op]) for lb in labels]
        cells += [f"{results[lb][op] / results['mergerfs'][op]:.2f}x" for lb in ecfs]
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
    cfg = (env_int("N", 1000), env_int("R", 3), env_int("D", 10000), env_int("L", 5))
    runs = env_int("RUNS", 3)
    labels = [t[0] for t in targets]
    base = tempfile.mkdtemp(prefix="nsbench-", dir=os.environ.get("DIR", "/dev/shm"))
    print(f"N={cfg[0]} R={cfg[1]} D={cfg[2]} L={cfg[3]} RUNS={runs} ECFS_OPTS={opts!r}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n", flush=True)
    every = {lb: {op: [] for op in OPS} for lb in labels}
    try:
        for r in range(runs):
            results = {}
            for label, argv in targets:
                results[label] = run_target(base, label, argv, cfg)
                for op in OPS:
                    every[label][op].append(results[label][op])
            print(f"run {r + 1}:")
            print_table(results, labels)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"medians of {runs} runs:")
    print_table({lb: {op: statistics.median(every[lb][op]) for op in OPS} for lb in labels},
                labels)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
