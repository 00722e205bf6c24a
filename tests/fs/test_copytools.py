# SPDX-License-Identifier: MIT
"""Real copying tools through ecfs: `rsync -aHAX` and `cp -a` from a plain
directory into ecfs and back out to another plain directory.  Both must
exit 0 without a word on stderr, and every copy must equal the source
byte for byte and attribute for attribute (copytree.py: modes, owners,
times, hard links, symlinks, special files, xattrs of every kept namespace,
file capabilities, ACLs).  The hard links inside ecfs are checked on a
member, where the chunk files of one file share an inode.  A second rsync
after the source changed (xattrs removed and added, an ACL changed, a file
rewritten) must bring the copy in ecfs up to date, as rsync removes what
the source no longer has.

usage: test_copytools.py ECFS_BINARY [unittest args]"""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import copytree as C  # noqa: E402
import ecfs_harness as H  # noqa: E402

RSYNC = ["rsync", "-aHAX"]
CP = ["cp", "-a"]


class CopyToolsTest(H.MountedCase):
    def setUp(self):
        for tool in ("rsync", "cp", "setfacl"):
            if not shutil.which(tool):
                self.fail(f"{tool} is not installed (scripts/install-deps.sh)")
        self.v = self.volume(6)
        self.mnt = self.mount(self.v, "k=4,m=2")
        self.src = os.path.join(self.v.base, "src")
        os.mkdir(self.src)
        C.build(self.src)
        self.want = C.describe(self.src)

    def run_tool(self, cmd, src, dst):
        r = subprocess.run(cmd + [src, dst], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        self.assertEqual((r.returncode, r.stderr), (0, ""),
                         f"{' '.join(cmd)} {src} {dst} failed")

    def assert_same(self, root, what, skip=()):
        diff = C.differences(C.describe(root), self.want, skip)
        if diff:
            self.fail(f"{what} differs from the source:\n" + "\n".join(diff[:30]))

    def assert_links_on_member(self, rel_root):
        """The hard links of the source, as the chunk files of member 0."""
        got = C.describe(os.path.join(self.v.members[0], rel_root))["links"]
        self.assertEqual(got, self.want["links"], "hard links on member 0")

    def round_trip(self, cmd, name, skip_out=()):
        inside = os.path.join(self.mnt, name)
        out = os.path.join(self.v.base, name + "-out")
        os.mkdir(inside)
        self.run_tool(cmd, self.src + "/.", inside)
        # the links themselves are checked on a member, their counts
        # through the mount
        self.assert_same(inside, f"{name}: the copy in ecfs", skip=("links",))
        self.assert_links_on_member(name)
        self.run_tool(cmd, inside + "/.", out)
        self.assert_same(out, f"{name}: the copy out of ecfs", skip=skip_out)
        return inside

    def test_rsync_round_trip(self):
        self.round_trip(RSYNC, "rsync", skip_out=("links", "nlink"))
        self.assert_clean_unmount(self.v)

    def test_cp_round_trip(self):
        self.round_trip(CP, "cp", skip_out=("links", "nlink"))
        self.assert_clean_unmount(self.v)

    def test_hard_links_survive_the_way_out(self):
        """Every name of a file reports one st_ino, so rsync -H and cp -a
        out of ecfs keep hard links, and a second rsync -H into ecfs finds
        the names of a link together."""
        for cmd, name in ((RSYNC, "rsync"), (CP, "cp")):
            inside = os.path.join(self.mnt, name)
            out = os.path.join(self.v.base, name + "-out")
            os.mkdir(inside)
            self.run_tool(cmd, self.src + "/.", inside)
            self.run_tool(cmd, inside + "/.", out)
            self.assertEqual(C.describe(out)["links"], self.want["links"], name)
        self.run_tool(RSYNC, self.src + "/.", os.path.join(self.mnt, "rsync"))
        self.assert_same(os.path.join(self.mnt, "rsync"), "a second rsync -H",
                         skip=("links",))

    def test_rsync_updates_what_changed(self):
        """A second rsync into ecfs removes the xattrs and ACL entries the
        source dropped and adds the new ones.  Without -H: with it, rsync
        relinks the names of a hard link that ecfs reports apart (see
        test_hard_links_survive_the_way_out)."""
        inside = self.round_trip(RSYNC, "rsync", skip_out=("links", "nlink"))
        p = lambda rel: os.path.join(self.src, rel)  # noqa: E731
        os.removexattr(p("docs/big.bin"), "user.binary")
        os.setxattr(p("docs/big.bin"), "user.added", b"new")
        os.removexattr(p("cap/tool"), "security.capability")
        subprocess.run(["setfacl", "-x", "u:1234", p("acl/file")], check=True)
        subprocess.run(["setfacl", "-k", p("acl/inherit")], check=True)
        with open(p("docs/deep/er/still/leaf"), "r+b") as f:
            f.write(b"changed")
        os.utime(p("docs/deep/er/still/leaf"), ns=(1, 2_000_000_000_000_000_003))
        self.want = C.describe(self.src)
        self.run_tool(["rsync", "-aAX", "--delete"], self.src + "/.", inside)
        self.assert_same(inside, "the updated copy in ecfs", skip=("links",))
        self.assert_links_on_member("rsync")
        self.assert_clean_unmount(self.v)


if __name__ == "__main__":
    sys.exit(H.main())
