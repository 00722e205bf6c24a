#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Times namespace operations through an ecfs mount (k=4, m=2).

    scripts/bench-namespace.py ECFS_BINARY     (as root; FUSE)

Environment: DIR (where the members go, default /dev/shm), N (files and
directories, default 1000), R (rename rounds over the N files, default 10).
Prints seconds and microseconds per operation for N creates, R*N renames, N
links, N unlinks, N mkdirs and N rmdirs.  Used for the cost of the intent
log (docs/FORMAT.md section 8): run it with the binaries before and after.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time


def main():
    ecfs = sys.argv[1]
    n = int(os.environ.get("N", "1000"))
    rounds = int(os.environ.get("R", "10"))
    base = tempfile.mkdtemp(prefix="nsbench-", dir=os.environ.get("DIR", "/dev/shm"))
    members = [os.path.join(base, f"m{i}") for i in range(6)]
    for m in members:
        os.mkdir(m)
    mnt = os.path.join(base, "mnt")
    os.mkdir(mnt)
    p = subprocess.Popen([ecfs, "-f", "-o", "k=4,m=2", ":".join(members), mnt],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if os.path.ismount(mnt):
                break
            time.sleep(0.02)
        d = os.path.join(mnt, "d")
        os.mkdir(d)
        steps = [
            ("create", n, lambda j, r: os.close(os.open(f"{d}/f{j}.0", os.O_CREAT | os.O_WRONLY,
                                                        0o644))),
            ("rename", n * rounds, lambda j, r: os.rename(f"{d}/f{j % n}.{j // n}",
                                                          f"{d}/f{j % n}.{j // n + 1}")),
            ("link", n, lambda j, r: os.link(f"{d}/f{j}.{rounds}", f"{d}/l{j}")),
            ("unlink", n, lambda j, r: os.unlink(f"{d}/l{j}")),
            ("mkdir", n, lambda j, r: os.mkdir(f"{d}/d{j}")),
            ("rmdir", n, lambda j, r: os.rmdir(f"{d}/d{j}")),
        ]
        for name, count, fn in steps:
            t = time.perf_counter()
            for j in range(count):
                fn(j, None)
            t = time.perf_counter() - t
            print(f"{name:8s} x{count:<6d} {t:7.3f} s  {t / count * 1e6:8.1f} us/op", flush=True)
    finally:
        subprocess.run(["fusermount3", "-u", mnt])
        p.wait()
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
