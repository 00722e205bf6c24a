# SPDX-License-Identifier: MIT
"""What the daemon's process may hold, on real FUSE mounts.

Started by meson as `python3 test_access.py ECFS [unittest args]`.

- Each open file holds a descriptor on every member (and its journal's),
  so the daemon raises its soft limit of open files (RLIMIT_NOFILE) to the
  hard limit at start: a daemon started with the common soft limit of
  1024 runs with its hard limit.
- A member in a directory local users can search is named in a notice
  at mount (its root is kept 0700: test_member_roots.py); members inside
  a directory only root can search are not.
"""

import os
import resource
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402


def open_files_limits(pid):
    """(soft, hard) of "Max open files" in /proc/PID/limits."""
    with open(f"/proc/{pid}/limits", encoding="ascii") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line[len("Max open files"):].split()[:2]
                return int(soft), int(hard)
    raise AssertionError(f"no 'Max open files' line in /proc/{pid}/limits")


class FdLimitTest(H.MountedCase):
    def test_daemon_runs_with_the_hard_limit(self):
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard != resource.RLIM_INFINITY and hard <= 1024:
            self.skipTest(f"the hard limit of open files is {hard}: nothing to raise")
        v = self.volume(3)
        # the soft limit most sessions start with; prlimit execs the daemon
        v.wrapper = ["prlimit", f"--nofile=1024:{hard}", "--"]
        self.mount(v, "k=2,m=1")
        soft_now, hard_now = open_files_limits(v.proc.pid)
        self.assertEqual(hard_now, hard, "the hard limit changed")
        self.assertEqual(soft_now, hard, "the soft limit of open files was not raised")
        self.assertNotIn("open-file limit", v.output())
        self.assert_clean_unmount(v)


REACHABLE = "is in a directory local users can search"


class MemberReachTest(H.MountedCase):
    def test_reachable_members_are_named(self):
        # the harness's volumes sit in a 0755 directory under /tmp (1777)
        v = self.volume(3)
        self.mount(v, "k=2,m=1")
        out = v.output()
        for i in range(3):
            self.assertIn(f"member {i} ({v.members[i]}) {REACHABLE}", out)
        self.assert_clean_unmount(v)

    def test_members_in_a_private_directory_are_not(self):
        private = tempfile.mkdtemp(prefix="ecfs-private-")  # 0700, root's
        self.addCleanup(shutil.rmtree, private, True)
        self.assertEqual(os.stat(private).st_mode & 0o777, 0o700)
        v = self.volume(3, tmpdir=private)
        self.mount(v, "k=2,m=1")
        self.assertNotIn(REACHABLE, v.output())
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
