#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Members on other hosts: ecfs 4+2 over six sshfs members, each
served by sshd in a network namespace of its own on a veth link (the hosts
of tests/fs/ecfs_harness.py), against one sshfs mount of one such host.

    sudo scripts/bench-remote.py OUTDIR              one run
    sudo BENCH_RUNS=3 scripts/bench-remote.py OUTDIR  3 runs: medians of the
                                throughputs, the latencies of all runs pooled
    BENCH_MIB=128 (file size), BENCH_LAT_KIB=64 (request size of the latency
    workload), BENCH_SLOW=10 (how much slower the slow host is),
    BENCH_SLOW_RATE=50mbit (its link rate, instead of the measured one),
    BENCH_SYNC_MIB=4 (the write fsyncs every 4 MiB too, not only at its end),
    ECFS_BUILD_DIR=build-rel (which ecfs; set up as a release build if missing)

Workloads, on each case: a file of BENCH_MIB MiB written with 1 MiB writes
and fsync (and one every BENCH_SYNC_MIB MiB if set) ("write"), read with 1 MiB reads after a cache drop ("read"), and
read again after a cache drop by one pread of BENCH_LAT_KIB KiB at each
aligned offset of the file in random order, readahead off (FADV_RANDOM),
each pread timed ("p50/p99/p99.9").  Cases, each on a fresh mount:

  one sshfs       the file on one sshfs mount of one host (what a user
                  would pick otherwise), every link fast;
  all fast        ecfs 4+2, -o tune.slow_readaround=on and =off;
  one slow        the same with the link of one host limited (tc tbf, both
                  ways; this kernel has no netem) to 1/BENCH_SLOW of the
                  rate "one sshfs" reads at in the first run.  The slow
                  host is the one that holds data position 0 of the file
                  (read from its chunk header before the write), so that
                  reads need it.
  write quorum 5  all fast and one slow, read-around on, -o write_quorum=5:
                  writes may leave the slow host out (the online heal
                  catches the file up after it is closed, during the reads).
  hedge off       one slow, read-around on, -o tune.hedge=off: reads around the
                  slow host never ask a spare member when their k are late.

Prints a table, the ratios that have a bar, the CPU model; writes
OUTDIR/latency-<case>.dat (sorted latencies and their cumulative share)
and OUTDIR/latency-cdf.png (gnuplot).  Every mount, namespace and process
is undone on exit, on failure and on SIGINT/SIGTERM.  Needs root.
"""
import os
import random
import re
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fs"))
import ecfs_harness as H  # noqa: E402

K, M = 4, 2
N = K + M
MIB = 1 << 20
REQ = MIB
SYNC_EVERY = int(os.environ.get("BENCH_SYNC_MIB", "0")) * MIB
SIZE = int(os.environ.get("BENCH_MIB", "128")) * MIB
LAT_REQ = int(os.environ.get("BENCH_LAT_KIB", "64")) * 1024
RUNS = int(os.environ.get("BENCH_RUNS", "1"))
SLOW = float(os.environ.get("BENCH_SLOW", "10"))
NAME = "bench"
CASES = ("one sshfs", "fast on", "fast off", "slow on", "slow off", "fast q5", "slow q5",
         "slow nohedge")
LABEL = {"one sshfs": "one sshfs mount, fast",
         "fast on": "ecfs, all fast, read-around on",
         "fast off": "ecfs, all fast, read-around off",
         "slow on": "ecfs, one host slow, read-around on",
         "slow off": "ecfs, one host slow, read-around off",
         "fast q5": "ecfs, all fast, write_quorum=5",
         "slow q5": "ecfs, one host slow, write_quorum=5",
         "slow nohedge": "ecfs, one host slow, tune.hedge=off"}


def die(msg):
    print(f"bench-remote: {msg}", file=sys.stderr)
    sys.exit(1)


def ecfs_binary():
    build = os.path.join(ROOT, os.environ.get("ECFS_BUILD_DIR", "build-rel"))
    if not os.path.isdir(build):
        subprocess.run(["meson", "setup", build, "--buildtype=release"],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["meson", "compile", "-C", build], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(build, "src", "ecfs")


def timed_write(path):
    """MB/s of writing SIZE bytes in REQ writes, fsync included."""
    blocks = [H.pattern(REQ, i) for i in range(8)]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t0 = time.perf_counter()
        for i in range(SIZE // REQ):
            if os.write(fd, blocks[i % 8]) != REQ:
                die(f"{path}: short write")
            if SYNC_EVERY and (i + 1) * REQ % SYNC_EVERY == 0:
                os.fsync(fd)
        os.fsync(fd)
        t1 = time.perf_counter()
    finally:
        os.close(fd)
    return SIZE / (t1 - t0) / 1e6


def timed_read(path):
    """MB/s of reading the file in REQ reads after a cache drop."""
    H.drop_caches()
    fd = os.open(path, os.O_RDONLY)
    got = 0
    try:
        t0 = time.perf_counter()
        while True:
            n = len(os.read(fd, REQ))
            if not n:
                break
            got += n
        t1 = time.perf_counter()
    finally:
        os.close(fd)
    if got != SIZE:
        die(f"{path}: read {got} bytes of {SIZE}")
    return SIZE / (t1 - t0) / 1e6


def pread_latencies(path, seed):
    """Milliseconds of each LAT_REQ pread, one at every aligned offset of
    the file in random order, after a cache drop, readahead off."""
    H.drop_caches()
    offsets = [i * LAT_REQ for i in range(SIZE // LAT_REQ)]
    random.Random(seed).shuffle(offsets)
    fd = os.open(path, os.O_RDONLY)
    lat = []
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        for off in offsets:
            t0 = time.perf_counter_ns()
            n = len(os.pread(fd, LAT_REQ, off))
            lat.append((time.perf_counter_ns() - t0) / 1e6)
            if n != LAT_REQ:
                die(f"{path}: pread at {off} returned {n} bytes")
    finally:
        os.close(fd)
    return lat


def workload(path, seed):
    w = timed_write(path)
    r = timed_read(path)
    return {"write": w, "read": r, "lat": pread_latencies(path, seed)}


def tc_clear(host):
    """Takes the slow host's tbf off both ends of its link."""
    subprocess.run(["tc", "qdisc", "del", "dev", host.veth, "root"],
                   capture_output=True)
    subprocess.run(host.in_ns("tc", "qdisc", "del", "dev", "eth0", "root"),
                   capture_output=True)


def position0_member(v, mnt):
    """Creates the (empty) bench file; the member that holds its data
    position 0 (the rotation in its chunk header, FORMAT.md 4.1)."""
    open(os.path.join(mnt, NAME), "wb").close()
    with open(v.chunk_path(0, NAME), "rb") as f:
        hdr = f.read(56)
    return struct.unpack_from("<I", hdr, 52)[0] % N


def ecfs_case(v, readaround, slow_rate, seed, quorum="all", hedge="on"):
    mnt = v.mount(f"k={K},m={M},tune.slow_readaround={readaround},"
                  f"write_quorum={quorum},tune.hedge={hedge}")
    slow = None
    try:
        if slow_rate:
            slow = v.hosts[position0_member(v, mnt)]
            slow.slow(slow_rate)
        res = workload(os.path.join(mnt, NAME), seed)
        h = H.health(mnt)
        res["decoded"] = int(h.get("strips_decoded", 0))
        lat = [h.get(f"member.{i}.latency_us", "?") for i in range(N)]
        cost = [h.get(f"member.{i}.read_us", "-").replace(" ", "") for i in range(N)]
        wcost = [h.get(f"member.{i}.write_us", "-").replace(" ", "") for i in range(N)]
        left = sorted(set(re.findall(r"writing past slow members \((0x[0-9a-f]+)\)",
                                     v.output())))
        print(f"bench-remote:   member latencies (us) at the end: {' '.join(lat)}"
              + f"; read us/64KiB: {' '.join(cost)}"
              + f"; write us/64KiB: {' '.join(wcost)}"
              + (f"; slow: member {v.hosts.index(slow)}" if slow else "")
              + (f"; left out: {' '.join(left)}" if left else "")
              + f"; strips decoded: {res['decoded']}"
              + f", reads hedged: {h.get('reads_hedged', '-')}", file=sys.stderr)
        if h.get("members_failed") != "0":
            why = [ln for ln in v.output().splitlines() if "member" in ln]
            die(f"a member failed during the run: {h}\n" + "\n".join(why[-20:]))
    finally:
        if slow is not None:
            tc_clear(slow)
    os.unlink(os.path.join(mnt, NAME))
    rc = v.unmount()
    if rc != 0:
        die(f"ecfs exited with {rc}:\n{v.log()}")
    return res


def single_case(host, seed):
    path = os.path.join(host.path, NAME)
    res = workload(path, seed)
    os.unlink(path)
    res["decoded"] = None
    return res


def one_run(v, single, run, rate, results):
    seed = 1000 * run
    r = single_case(single, seed)
    results["one sshfs"].append(r)
    if rate is None:
        rate = f"{max(1, int(r['read'] * 8000 / SLOW))}kbit"
    # on/off alternate in order from run to run
    order = ("on", "off") if run % 2 == 0 else ("off", "on")
    for slow in (None, rate):
        for ra in order:
            case = ("slow " if slow else "fast ") + ra
            print(f"bench-remote: run {run + 1}/{RUNS}: {LABEL[case]}"
                  + (f" ({slow})" if slow else ""), file=sys.stderr)
            results[case].append(ecfs_case(v, ra, slow, seed + len(results[case])))
    for slow in (None, rate):
        case = ("slow" if slow else "fast") + " q5"
        print(f"bench-remote: run {run + 1}/{RUNS}: {LABEL[case]}"
              + (f" ({slow})" if slow else ""), file=sys.stderr)
        results[case].append(ecfs_case(v, "on", slow, seed + len(results[case]), "5"))
    print(f"bench-remote: run {run + 1}/{RUNS}: {LABEL['slow nohedge']} ({rate})",
          file=sys.stderr)
    results["slow nohedge"].append(ecfs_case(v, "on", rate, seed + len(results["slow nohedge"]),
                                             hedge="off"))
    return rate


def pct(sorted_lat, p):
    i = min(len(sorted_lat) - 1, max(0, int(round(p / 100 * len(sorted_lat) + 0.5)) - 1))
    return sorted_lat[i]


def summarize(results):
    s = {}
    for case, runs in results.items():
        lat = sorted(x for r in runs for x in r["lat"])
        s[case] = {"write": statistics.median(r["write"] for r in runs),
                   "read": statistics.median(r["read"] for r in runs),
                   "range": {k: (min(r[k] for r in runs), max(r[k] for r in runs))
                             for k in ("write", "read")},
                   "p50": pct(lat, 50), "p99": pct(lat, 99),
                   "p99.9": pct(lat, 99.9), "lat": lat,
                   "decoded": runs[0]["decoded"] if runs[0]["decoded"] is None
                   else statistics.median(r["decoded"] for r in runs)}
    return s


def print_table(s, rate):
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    print(f"ecfs {head}, {H.ECFS}")
    print(subprocess.run([os.path.join(ROOT, "scripts", "cpu-class.sh")], capture_output=True, text=True).stdout.strip())
    sync = f", fsync every {SYNC_EVERY // MIB} MiB" if SYNC_EVERY else ""
    print(f"file {SIZE // MIB} MiB, 1 MiB writes (fsync{sync}) and reads, "
          f"{LAT_REQ // 1024} KiB preads x {SIZE // LAT_REQ} per run, "
          f"{RUNS} run(s); slow host's link: {rate} (tc tbf"
          + (")" if os.environ.get("BENCH_SLOW_RATE")
             else f", 1/{SLOW:g} of what one sshfs mount read in run 1)"))
    print()
    print("| case | write MB/s (range) | read MB/s (range) | pread p50 ms | p99 ms | p99.9 ms | strips decoded |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        c = s[case]
        dec = "-" if c["decoded"] is None else f"{c['decoded']:.0f}"
        rng = {k: "" if RUNS == 1 else " ({:.3g}-{:.3g})".format(*c["range"][k])
               for k in ("write", "read")}
        print(f"| {LABEL[case]} | {c['write']:.1f}{rng['write']} | "
              f"{c['read']:.1f}{rng['read']} | "
              f"{c['p50']:.2f} | {c['p99']:.2f} | {c['p99.9']:.2f} | {dec} |")
    print()

    def ratio(a, b, key):
        return s[a][key] / s[b][key]
    print("| ratio | read-around on | read-around off | bar |")
    print("|---|---|---|---|")
    print(f"| read, one slow / all fast | {ratio('slow on', 'fast on', 'read'):.2f} | "
          f"{ratio('slow off', 'fast off', 'read'):.2f} | on >= 0.8 |")
    print(f"| p99, one slow / all fast | {ratio('slow on', 'fast on', 'p99'):.2f} | "
          f"{ratio('slow off', 'fast off', 'p99'):.2f} | on <= 1.5 |")
    print(f"| write, one slow / all fast | {ratio('slow on', 'fast on', 'write'):.2f} | "
          f"{ratio('slow off', 'fast off', 'write'):.2f} | |")
    print()
    print("| ratio (read-around on) | write_quorum=all | write_quorum=5 |")
    print("|---|---|---|")
    print(f"| write, one slow / all fast (all) | {ratio('slow on', 'fast on', 'write'):.2f} | "
          f"{ratio('slow q5', 'fast on', 'write'):.2f} |")
    print(f"| write, all fast / all fast (all) | 1.00 | "
          f"{ratio('fast q5', 'fast on', 'write'):.2f} |")
    print(f"| read, one slow / all fast (all) | {ratio('slow on', 'fast on', 'read'):.2f} | "
          f"{ratio('slow q5', 'fast on', 'read'):.2f} |")
    print()
    print("| ratio | write | read | p50 | p99 | bar |")
    print("|---|---|---|---|---|---|")
    for a, b, bar in (("fast on", "fast off", "read >= 0.95"),
                      ("slow on", "slow off", ""),
                      ("slow on", "slow nohedge", ""),
                      ("fast on", "one sshfs", "")):
        print(f"| {a} / {b} | " + " | ".join(
            f"{ratio(a, b, k):.2f}" for k in ("write", "read", "p50", "p99"))
            + f" | {bar} |")


def plot(s, outdir):
    os.makedirs(outdir, exist_ok=True)
    plots = []
    for case in CASES:
        lat = s[case]["lat"]
        name = os.path.join(outdir, f"latency-{case.replace(' ', '-')}.dat")
        with open(name, "w") as f:
            for i, x in enumerate(lat):
                f.write(f"{x:.4f} {(i + 1) / len(lat):.6f}\n")
        plots.append(f"'{name}' using 1:2 with lines lw 2 title '{LABEL[case]}'")
    png = os.path.join(outdir, "latency-cdf.png")
    script = (f"set terminal pngcairo size 900,560\nset output '{png}'\n"
              "set logscale x\nset grid\nset key bottom right\n"
              f"set xlabel '{LAT_REQ // 1024} KiB pread latency (ms)'\n"
              "set ylabel 'share of preads'\nset yrange [0:1]\n"
              "set title 'ecfs 4+2 over six sshfs hosts, and one sshfs mount'\n"
              "plot " + ", ".join(plots) + "\n")
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        print(f"bench-remote: gnuplot: {r.stderr.strip()}", file=sys.stderr)
    else:
        print(f"\nlatency CDF: {png}")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    outdir = os.path.abspath(sys.argv[1])
    why = H.remote_unusable_reason() or H.fuse_unusable_reason()
    if why:
        die(why)
    H.ECFS = ecfs_binary()
    rfd, wfd = os.pipe()
    os.set_blocking(wfd, False)
    signal.set_wakeup_fd(wfd)
    # a signal while the main thread waits in FUSE: the watcher detaches all
    threading.Thread(target=H._signal_watcher, args=(rfd,), daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, H._on_signal)
    v = single = None
    try:
        v = H.Volume(N, member_fs="sshfs")
        single = H.Host(v.base, N, os.path.join(v.base, "single"))
        results = {c: [] for c in CASES}
        rate = os.environ.get("BENCH_SLOW_RATE")
        for run in range(RUNS):
            rate = one_run(v, single, run, rate, results)
        s = summarize(results)
        print_table(s, rate)
        plot(s, outdir)
    finally:
        if single is not None:
            single.release()
        if v is not None:
            v.cleanup()
        H.release_all_hosts()


if __name__ == "__main__":
    main()
