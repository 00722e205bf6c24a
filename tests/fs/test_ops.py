# SPDX-License-Identifier: MIT
"""Differential test of every file-system operation ecfs passes through:
each scenario of differential.py runs on an ecfs mount and on a plain
directory beside its members, and the outcomes (values, errno) and the
resulting trees must be the same.  As root with the full list, then as
uid/gid 65534 with the permission checks (-o allow_other,
default_permissions) and the POSIX ACLs, on k/m in {2+1, 4+2, 6+3} with two codes each.

usage: test_ops.py ECFS_BINARY [unittest args]"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import differential as D  # noqa: E402
import ecfs_harness as H  # noqa: E402

CONFIGS = [(2, 1, "rs-vandermonde"), (4, 2, "rs-cauchy"),
           (6, 3, "rs-vandermonde"), (2, 1, "rs-cauchy"),
           (4, 2, "rs-vandermonde"), (6, 3, "rs-cauchy")]


class DifferentialTest(H.MountedCase):
    def run_as_nobody(self, roots, setup, scenario, top, wrote, why):
        """setup as root, then scenario as uid/gid 65534, on both roots:
        the transcripts and the trees below top must agree, and one of
        the unprivileged writes must have returned `wrote`."""
        logs = []
        for r in roots:
            D.run_scenario(r, setup)
            logs.append(H.run_as(H.NOBODY, H.NOBODY, D.run_scenario, r,
                                 scenario))
        diff = D.transcript_diff(*logs)
        if diff:
            self.fail(f"{scenario.__name__} as uid 65534: {diff}")
        writes = [out for what, out in logs[0] if what.startswith("pwrite")]
        self.assertIn(wrote, writes, f"{why} {logs[0][:4]}")
        diff = D.snapshot_diff(D.snapshot(os.path.join(roots[0], top)),
                               D.snapshot(os.path.join(roots[1], top)))
        if diff:
            self.fail(f"trees differ after {scenario.__name__}:\n{diff}")

    def run_config(self, k, m, code):
        v = self.volume(k + m)
        self.mount(v, f"k={k},m={m},code={code}")
        ref = os.path.join(v.base, "reference")
        os.mkdir(ref, 0o755)
        roots = [os.path.join(v.mnt, "work"), os.path.join(ref, "work")]
        for r in roots:
            os.mkdir(r, 0o755)

        for sc in D.ROOT_SCENARIOS:
            with self.subTest(scenario=sc.__name__, user="root"):
                logs = [D.run_scenario(r, sc) for r in roots]
                diff = D.transcript_diff(*logs)
                if diff:
                    self.fail(f"{sc.__name__}: {sc.__doc__}\n{diff}")
        with self.subTest(check="tree after root scenarios"):
            diff = D.snapshot_diff(D.snapshot(roots[0]), D.snapshot(roots[1]))
            if diff:
                self.fail("trees differ:\n" + diff)

        with self.subTest(user="nobody"):
            # both sides refusing everything would agree too: make sure the
            # unprivileged user got in at all
            self.run_as_nobody(roots, D.perm_setup, D.perm_as_nobody, "perm",
                               ("ok", 70000), "uid 65534 could not write in "
                               "its own directory: is every directory above "
                               "the test tree searchable by others?")
        with self.subTest(user="nobody", check="ACLs"):
            self.run_as_nobody(roots, D.acl_setup, D.acl_as_nobody, "aclp",
                               ("ok", 1), "uid 65534 could not write through "
                               "the ACL that lets it")

        with self.subTest(check="volume root hides .ecfs"):
            self.assertEqual(sorted(os.listdir(v.mnt)), ["work"])
        self.assert_clean_unmount(v)


def _add(k, m, code):
    def test(self):
        self.run_config(k, m, code)
    test.__doc__ = f"differential ops on k={k} m={m} {code}"
    setattr(DifferentialTest, f"test_{code.replace('-', '_')}_{k}_{m}", test)


for _k, _m, _code in CONFIGS:
    _add(_k, _m, _code)


if __name__ == "__main__":
    sys.exit(H.main())
