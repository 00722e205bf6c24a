# SPDX-License-Identifier: MIT
"""Checks the differential runner itself, without ecfs: every scenario run
beneath two plain directories must agree (else the scenarios depend on
something other than the file system, and a difference on ecfs would mean
nothing), and a planted difference must be reported (else the comparison
could never fail).  Needs root for the chown/mknod steps and to act as
uid 65534."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import differential as D  # noqa: E402
from ecfs_harness import NOBODY, SKIP, run_as  # noqa: E402


def fresh_root(base, name):
    p = os.path.join(base, name)
    os.mkdir(p, 0o755)
    return p


class HarnessTest(unittest.TestCase):
    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="ecfs-harness-")
        os.chmod(self.base, 0o755)
        self.addCleanup(shutil.rmtree, self.base, True)
        self.a = fresh_root(self.base, "a")
        self.b = fresh_root(self.base, "b")

    def test_root_scenarios_agree_on_two_plain_dirs(self):
        for sc in D.ROOT_SCENARIOS:
            with self.subTest(scenario=sc.__name__):
                la = D.run_scenario(self.a, sc)
                lb = D.run_scenario(self.b, sc)
                self.assertTrue(la)
                self.assertTrue(any(out[0] == "ok" for _, out in la))
                self.assertIsNone(D.transcript_diff(la, lb))
        self.assertIsNone(D.snapshot_diff(D.snapshot(self.a),
                                          D.snapshot(self.b)))

    def nobody_outcomes(self, setup, scenario):
        """setup as root, scenario as uid 65534, on both plain roots, which
        must agree; the outcomes."""
        logs = []
        for root in (self.a, self.b):
            D.run_scenario(root, setup)
            logs.append(run_as(NOBODY, NOBODY, D.run_scenario, root, scenario))
        self.assertIsNone(D.transcript_diff(logs[0], logs[1]))
        self.assertIsNone(D.snapshot_diff(D.snapshot(self.a),
                                          D.snapshot(self.b)))
        return [out for _, out in logs[0]]

    def test_nobody_scenario_agrees_and_is_unprivileged(self):
        outcomes = self.nobody_outcomes(D.perm_setup, D.perm_as_nobody)
        self.assertIn(("err", "EACCES"), outcomes)
        self.assertIn(("err", "EPERM"), outcomes)

    def test_acl_scenario_agrees_and_is_unprivileged(self):
        outcomes = self.nobody_outcomes(D.acl_setup, D.acl_as_nobody)
        self.assertIn(("err", "EACCES"), outcomes)
        self.assertIn(("ok", 1), outcomes)      # wrote through a named-user ACL

    def test_planted_differences_are_reported(self):
        def write(o, data):
            o.open("f", "f", D.CREAT)
            o.pwrite("f", data, 0)
            o.pread("f", 10, 0)
            o.close("f")
        la = D.run_scenario(self.a, lambda o: write(o, b"0123456789"))
        lb = D.run_scenario(self.b, lambda o: write(o, b"0123456789"))
        self.assertIsNone(D.transcript_diff(la, lb))
        lc = D.run_scenario(self.b, lambda o: write(o, b"0123X56789"))
        self.assertIn("first difference at call 2", D.transcript_diff(la, lc))
        D.run_scenario(self.b, lambda o: write(o, b"0123456789"))
        self.assertIsNone(D.snapshot_diff(D.snapshot(self.a),
                                          D.snapshot(self.b)))
        os.chmod(os.path.join(self.b, "f"), 0o600)
        self.assertIn("mode", D.snapshot_diff(D.snapshot(self.a),
                                              D.snapshot(self.b)))
        os.chmod(os.path.join(self.b, "f"), 0o644)
        os.setxattr(os.path.join(self.b, "f"), "user.extra", b"1")
        self.assertIn("user.extra", D.snapshot_diff(D.snapshot(self.a),
                                                    D.snapshot(self.b)))
        os.mkdir(os.path.join(self.b, ".ecfs"))
        self.assertIn(".ecfs", D.snapshot_diff(D.snapshot(self.a),
                                               D.snapshot(self.b)))


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("SKIP: the differential harness test needs root", file=sys.stderr)
        sys.exit(SKIP)
    prog = unittest.main(exit=False, verbosity=2)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
