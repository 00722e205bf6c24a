# SPDX-License-Identifier: MIT
"""ecfs-bench-calls (src/bench/calls/member_calls.c): every way of making
the calls runs and is reported, so do the logged operations on a volume, and where io_uring_setup is refused (here
by a seccomp filter, as a container runtime or the kernel.io_uring_disabled
sysctl would) the io_uring ways are left out with the reason and the
others still run.  The numbers are not judged: performance is not a test.

usage: test_bench_calls.py ECFS_BENCH_CALLS"""

import ctypes
import os
import struct
import subprocess
import sys
import tempfile
import unittest

BENCH = None
THREADS = ["inline", "threads, serial", "threads, all", "threads, 1 + rest", "relay, all",
           "relay, 1 + rest"]
URING = ["io_uring, all", "io_uring, 1 + rest", "io_uring, no timeout"]


def refuse_io_uring():
    """In the child before exec: io_uring_setup (425) fails with EPERM."""
    libc = ctypes.CDLL(None, use_errno=True)

    def stmt(code, k, jt=0, jf=0):
        return struct.pack("HBBI", code, jt, jf, k)
    prog = b"".join([stmt(0x20, 0),                # ld the syscall number
                     stmt(0x15, 425, 0, 1),        # io_uring_setup?
                     stmt(0x06, 0x00050000 | 1),   # return ERRNO(EPERM)
                     stmt(0x06, 0x7fff0000)])      # allow
    buf = ctypes.create_string_buffer(prog)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
        os._exit(99)  # PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP


class BenchCallsTest(unittest.TestCase):
    def run_bench(self, *args, **kw):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([BENCH, *args, "-i", "50", "-r", "1", d], capture_output=True,
                               text=True, timeout=60, **kw)
            self.assertEqual(os.listdir(d), [], "members left behind")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout

    def ways(self, out):
        return [line.strip().rsplit(None, 2)[0] for line in out.splitlines()
                if line.endswith(" us") and not line.lstrip().startswith("timeout")]

    def test_logged_operations(self):
        """-v: the five logged operations on a volume, timeout on and off."""
        out = self.run_bench("-v")
        rows = [line.split() for line in out.splitlines() if line.lstrip().startswith("timeout")]
        self.assertEqual([r[1] for r in rows], ["on", "off"], out)
        for r in rows:
            self.assertEqual(r[2::2][:5], ["rename", "link", "unlink", "mkdir", "rmdir"], out)

    def test_every_way(self):
        out = self.run_bench()
        if "without liburing" in out or "io_uring unavailable" in out:
            self.assertEqual(self.ways(out), THREADS, out)
        else:
            self.assertEqual(self.ways(out), THREADS + URING, out)

    def test_io_uring_refused(self):
        out = self.run_bench(preexec_fn=refuse_io_uring)
        if "without liburing" not in out:
            self.assertIn("io_uring unavailable (Operation not permitted)", out)
        self.assertEqual(self.ways(out), THREADS, out)


if __name__ == "__main__":
    BENCH = sys.argv.pop(1)
    unittest.main()
