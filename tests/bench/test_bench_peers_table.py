#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/bench-peers-table.py on made-up CSV runs: best of the runs per
cell and coder, only rs-cauchy rows of libec and ISA-L, the ratio to the
faster peer, the summary, and exit 1 when a coder lacks a cell."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), "..", ".."),
                      "scripts", "bench-peers-table.py")
HEADER = "impl,op,code,k,m,w,strip,erasures,gbps,normalized,vs_isal,kernel\n"


def row(impl, op, k, m, strip, gbps, code="rs-cauchy", kernel=""):
    return f"{impl},{op},{code},{k},{m},8,{strip},,{gbps},,,{kernel}\n"


class PeersTable(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, rows):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(HEADER + "".join(rows))
        return path

    def run_table(self, *paths):
        return subprocess.run([sys.executable, SCRIPT, "--isal-label", "ISA-L 2.32.1", *paths],
                              capture_output=True, text=True)

    def test_best_of_runs_and_ratios(self):
        ecfs1 = self.write("ecfs.1.csv", [
            row("ecfs", "encode", 6, 2, 4096, 30.0, kernel="gfni"),
            row("isal", "encode", 6, 2, 4096, 20.0),
            row("ecfs", "encode", 6, 2, 4096, 99.0, code="rs-vandermonde"),
            row("isal", "encode", 6, 2, 4096, 99.0, code="rs-vandermonde"),
            row("memcpy", "copy", 6, 2, 4096, 99.0, code=""),
            row("ecfs", "decode", 6, 2, 4096, 10.0, kernel="gfni"),
            row("isal", "decode", 6, 2, 4096, 12.0),
        ])
        ecfs2 = self.write("ecfs.2.csv", [
            row("ecfs", "encode", 6, 2, 4096, 36.0, kernel="gfni"),
            row("isal", "encode", 6, 2, 4096, 18.0),
            row("ecfs", "decode", 6, 2, 4096, 9.0, kernel="gfni"),
            row("isal", "decode", 6, 2, 4096, 11.0),
        ])
        go = self.write("klauspost.1.csv", [
            row("klauspost", "encode", 6, 2, 4096, 24.0, code="reedsolomon", kernel="avx512+gfni"),
            row("klauspost", "decode", 6, 2, 4096, 8.0, code="reedsolomon", kernel="avx512+gfni"),
        ])
        out = self.run_table(ecfs1, ecfs2, go)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("ISA-L 2.32.1", lines[0])
        # encode: libec 36 (best of 30, 36), ISA-L 20, klauspost 24: 1.50 over klauspost.
        self.assertEqual(lines[1].split(), ["encode", "[6,2]", "4K", "36.00", "20.00", "24.00",
                                            "1.50", "klauspost"])
        # decode: libec 10, ISA-L 12: 0.83 over ISA-L.
        self.assertEqual(lines[2].split(), ["decode", "[6,2]", "4K", "10.00", "12.00", "8.00",
                                            "0.83", "ISA-L"])
        self.assertIn("leads the faster peer in 1 of 2 cells", out.stdout)
        self.assertIn("worst 0.83x (decode [6,2] 4K)", out.stdout)
        self.assertIn("geometric mean 1.12x", out.stdout)  # sqrt(1.5 * 0.8333)
        self.assertIn("kernels: libec gfni, klauspost avx512+gfni", out.stdout)

    def test_missing_coder_fails(self):
        ecfs = self.write("ecfs.1.csv", [row("ecfs", "encode", 10, 4, 65536, 30.0),
                                         row("isal", "encode", 10, 4, 65536, 20.0)])
        out = self.run_table(ecfs)
        self.assertEqual(out.returncode, 1)
        self.assertIn("encode [10,4] 64K: no figure from klauspost", out.stderr)

    def test_no_rows_fails(self):
        out = self.run_table(self.write("empty.csv", []))
        self.assertEqual(out.returncode, 1)
        self.assertIn("no grid rows", out.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
