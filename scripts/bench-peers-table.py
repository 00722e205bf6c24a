#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Joins runs of `ecfs-bench --grid --csv` and of ecfs-peer-klauspost into
the table of scripts/bench-peers.sh.

  bench-peers-table.py [--isal-label TEXT] CSV...

Every CSV has ecfs-bench's columns (impl,op,code,k,m,w,strip,...,gbps,...).
Rows kept: libec ('ecfs') and ISA-L ('isal') with code rs-cauchy, and
'klauspost'.  A cell is (op, k, m, strip); its figure for each coder is the
best over the files given (one file per run).  Prints per cell the three
GB/s and libec's ratio to the faster peer, then a summary: cells where
libec leads, the worst ratio, the geometric mean.  Exits 1 if a cell lacks
a coder.
"""
import argparse
import csv
import math
import sys

CODERS = ("ecfs", "isal", "klauspost")


def size_name(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10}K"
    return str(n)


def read_best(paths):
    """{(op, k, m, strip): {coder: best GB/s}} and {coder: kernel}."""
    best, kernels, order = {}, {}, []
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                impl = row["impl"]
                if impl not in CODERS or row["op"] not in ("encode", "decode"):
                    continue
                if impl != "klauspost" and row["code"] != "rs-cauchy":
                    continue
                key = (row["op"], int(row["k"]), int(row["m"]), int(row["strip"]))
                if key not in best:
                    best[key] = {}
                    order.append(key)
                gbps = float(row["gbps"])
                best[key][impl] = max(best[key].get(impl, 0.0), gbps)
                if row.get("kernel"):
                    kernels[impl] = row["kernel"]
    # Grid order: [k,m] as first seen, then encode before decode, then strip.
    km_order = []
    for _, k, m, _ in order:
        if (k, m) not in km_order:
            km_order.append((k, m))
    order.sort(key=lambda c: (km_order.index((c[1], c[2])), c[0] != "encode", c[3]))
    return best, kernels, order


def table(best, order, isal_label):
    """The lines of the table and the per-cell ratios; raises KeyError naming
    a cell that lacks a coder."""
    lines = [f"{'cell':<22} {'libec':>7} {isal_label:>13} {'klauspost':>10} {'ratio':>6}  faster peer"]
    ratios = []
    for key in order:
        op, k, m, strip = key
        got = best[key]
        missing = [c for c in CODERS if got.get(c, 0) <= 0]
        if missing:
            raise KeyError(f"{op} [{k},{m}] {size_name(strip)}: no figure from {', '.join(missing)}")
        peer = "isal" if got["isal"] >= got["klauspost"] else "klauspost"
        ratio = got["ecfs"] / got[peer]
        ratios.append((ratio, key))
        name = f"{op} [{k},{m}] {size_name(strip)}"
        lines.append(f"{name:<22} {got['ecfs']:7.2f} {got['isal']:13.2f} {got['klauspost']:10.2f} "
                     f"{ratio:6.2f}  {'ISA-L' if peer == 'isal' else 'klauspost'}")
    return lines, ratios


def summary(ratios):
    leads = sum(1 for r, _ in ratios if r >= 1.0)
    worst, (op, k, m, strip) = min(ratios)
    gmean = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    return [f"libec leads the faster peer in {leads} of {len(ratios)} cells; "
            f"worst {worst:.2f}x ({op} [{k},{m}] {size_name(strip)}); "
            f"geometric mean {gmean:.2f}x"]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--isal-label", default="ISA-L")
    ap.add_argument("csv", nargs="+")
    args = ap.parse_args(argv)
    best, kernels, order = read_best(args.csv)
    if not order:
        print("bench-peers-table: no grid rows in the input", file=sys.stderr)
        return 1
    try:
        lines, ratios = table(best, order, args.isal_label)
    except KeyError as e:
        print(f"bench-peers-table: {e.args[0]}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    print()
    print("\n".join(summary(ratios)))
    print("kernels: libec " + kernels.get("ecfs", "?") + ", klauspost " + kernels.get("klauspost", "?"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
