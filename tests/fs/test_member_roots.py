# SPDX-License-Identifier: MIT
"""The member trees belong to the daemon, on real FUSE mounts.

Started by meson as `python3 test_member_roots.py ECFS ECFS_FSCK [unittest args]`.

- Every member root is mode 0700 and the daemon's (root's): a local user
  cannot walk into a member tree, not even into a directory they own
  through the mount.
- The volume root's mode, owner, ACL and xattrs live on a stand-in under
  each member's .ecfs (docs/FORMAT.md section 1): a chmod or chown of the
  volume root survives a remount and leaves the member roots alone.
- A volume made by an older build (member roots 0755, the volume root's
  attributes on them) mounts with its root's attributes carried over.
- ecfs-fsck reports a member root others can reach, and -y fixes it;
  ecfs-fsck -y and the online heal rebuild a lost stand-in.
- A mode or an ACL changed behind the daemon's back on one member is
  outvoted.
"""

import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

FSCK = None
NOBODY = 65534
STANDIN = os.path.join(".ecfs", "root")


def mode_owner(path):
    st = os.lstat(path)
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def touch(path):
    with open(path, "w"):
        pass


def read(path):
    with open(path, "rb") as f:
        return f.read()


class MemberRootsTest(H.MountedCase):
    def fsck(self, v, *args):
        cmd = [FSCK, "--no-progress", *args, ":".join(v.members)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def assert_members_private(self, v):
        for m in v.members:
            self.assertEqual(mode_owner(m), (0o700, 0, 0), m)

    def test_nobody_cannot_plant_in_a_member(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        os.mkdir(os.path.join(mnt, "pub"))
        os.chown(os.path.join(mnt, "pub"), NOBODY, NOBODY)
        # through the mount the directory is nobody's to write in
        H.run_as(NOBODY, NOBODY, touch, os.path.join(mnt, "pub", "mine"))
        for m in v.members:
            target = os.path.join(m, "pub", "planted")
            with self.assertRaises(RuntimeError, msg=f"nobody planted {target}") as cm:
                H.run_as(NOBODY, NOBODY, touch, target)
            self.assertIn("PermissionError", str(cm.exception))
            self.assertFalse(os.path.exists(target))
        self.assert_members_private(v)
        self.assert_clean_unmount(v)

    def test_root_attributes_survive_a_remount(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        os.chmod(mnt, 0o1777)
        os.chown(mnt, 1234, 5678)
        os.setxattr(mnt, "user.color", b"green")
        self.assertEqual(mode_owner(mnt), (0o1777, 1234, 5678))
        self.assert_members_private(v)
        self.assert_clean_unmount(v)
        mnt = self.mount(v)
        self.assertEqual(mode_owner(mnt), (0o1777, 1234, 5678))
        self.assertEqual(os.getxattr(mnt, "user.color"), b"green")
        # a sticky, world-writable root through the mount: nobody writes there
        H.run_as(NOBODY, NOBODY, touch, os.path.join(mnt, "by-nobody"))
        self.assertEqual(os.stat(os.path.join(mnt, "by-nobody")).st_uid, NOBODY)
        self.assert_members_private(v)
        for m in v.members:
            self.assertEqual(mode_owner(os.path.join(m, STANDIN)), (0o1777, 1234, 5678))
            self.assertNotIn("user.color", os.listxattr(m))
        self.assert_clean_unmount(v)

    def test_older_volume_is_carried_over(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        H.write_file(os.path.join(mnt, "f"), b"data")
        self.assert_clean_unmount(v)
        # what an older build left: no stand-in, the volume root's
        # attributes on the member roots themselves
        for m in v.members:
            os.rmdir(os.path.join(m, STANDIN))
            os.chmod(m, 0o755)
            os.chown(m, 1234, 5678)
            os.chmod(m, 0o2775)
            os.setxattr(m, "user.color", b"red")
        mnt = self.mount(v)
        out = v.output()
        self.assertIn("carried over from the member root", out)
        self.assertIn("now 0700", out)
        self.assertEqual(mode_owner(mnt), (0o2775, 1234, 5678))
        self.assertEqual(os.getxattr(mnt, "user.color"), b"red")
        self.assert_exact(os.path.join(mnt, "f"), b"data")
        self.assert_members_private(v)
        for m in v.members:
            self.assertNotIn("user.color", os.listxattr(m))
        self.assert_clean_unmount(v)
        # once only
        self.mount(v)
        self.assertNotIn("carried over", v.output())
        self.assertEqual(mode_owner(v.mnt), (0o2775, 1234, 5678))
        self.assert_clean_unmount(v)

    def test_fsck_reports_and_fixes_a_reachable_member_root(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        os.chmod(mnt, 0o755)
        self.assert_clean_unmount(v)
        os.chmod(v.members[1], 0o755)
        r = self.fsck(v, "-n")
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("other users can reach", r.stdout + r.stderr)
        self.assertEqual(mode_owner(v.members[1])[0], 0o755)
        r = self.fsck(v, "-y")
        self.assertIn("other users can reach", r.stdout + r.stderr)
        self.assert_members_private(v)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        mnt = self.mount(v)
        self.assertEqual(mode_owner(mnt)[0], 0o755)
        self.assert_clean_unmount(v)

    def test_fsck_rebuilds_a_lost_standin(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        os.chmod(mnt, 0o1777)
        self.assert_clean_unmount(v)
        os.rmdir(os.path.join(v.members[2], STANDIN))
        r = self.fsck(v, "-y")
        self.assertIn(STANDIN, r.stdout + r.stderr)
        self.assertEqual(mode_owner(os.path.join(v.members[2], STANDIN))[0], 0o1777)

    def test_heal_rebuilds_the_standin(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1,heal_rate=100")
        os.chmod(mnt, 0o1777)
        os.chown(mnt, 1234, 5678)
        # a new disk in place of member 2, as an administrator makes it
        os.rename(v.members[2], v.members[2] + ".old")
        os.mkdir(v.members[2], 0o755)
        H.write_file(os.path.join(mnt, "f"), b"after")  # the member is noticed
        self.wait_healed(mnt)
        self.assertEqual(mode_owner(os.path.join(v.members[2], STANDIN)),
                         (0o1777, 1234, 5678))
        self.assert_members_private(v)
        self.assertEqual(mode_owner(mnt), (0o1777, 1234, 5678))
        self.assert_clean_unmount(v)
        self.assertEqual(self.fsck(v, "-n").returncode, 0)

    def test_majority_mode_wins(self):
        v = self.volume(6)
        mnt = self.mount(v, "k=4,m=2")
        H.write_file(os.path.join(mnt, "f"), b"x" * 5000)
        os.mkdir(os.path.join(mnt, "d"))
        os.chmod(os.path.join(mnt, "f"), 0o640)
        os.chmod(os.path.join(mnt, "d"), 0o750)
        self.assert_clean_unmount(v)
        # behind the daemon's back, on the member that answers first
        os.chmod(os.path.join(v.members[0], "f"), 0o666)
        os.chmod(os.path.join(v.members[0], "d"), 0o777)
        mnt = self.mount(v)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(mnt, "f")).st_mode), 0o640)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(mnt, "d")).st_mode), 0o750)
        self.assertIn("not believed", v.output())
        self.assert_clean_unmount(v)

    def test_listing_gives_no_attributes_one_member_alone_holds(self):
        """A listing hands the kernel the names' attributes (readdirplus),
        which its permission checks then use: a mode that one member holds
        alone, whichever answers first, is not among them."""
        v = self.volume(6)
        mnt = self.mount(v, "k=4,m=2")
        for i in range(8):
            os.makedirs(os.path.join(mnt, "d", f"s{i}"), 0o700)
        self.assert_clean_unmount(v)
        for liar in range(6):
            for i in range(8):
                os.chmod(os.path.join(v.members[liar], "d", f"s{i}"), 0o777)
            mnt = self.mount(v)
            out = subprocess.run(["ls", "-ln", os.path.join(mnt, "d")], check=True,
                                 capture_output=True, text=True).stdout  # readdirplus
            modes = sorted(line.split()[0] for line in out.splitlines()[1:])
            self.assertEqual(modes, ["drwx------"] * 8, f"member {liar} alone:\n{out}")
            self.assert_clean_unmount(v)
            for i in range(8):
                os.chmod(os.path.join(v.members[liar], "d", f"s{i}"), 0o700)

    def test_majority_privileged_xattrs_win(self):
        """trusted.* and security.* values grant what root's tools rely on
        (security.capability: privileges at exec): the majority's, never
        one member's, whichever answers first."""
        v = self.volume(6)
        mnt = self.mount(v, "k=4,m=2")
        H.write_file(os.path.join(mnt, "f"), b"x")
        os.setxattr(os.path.join(mnt, "f"), "trusted.ecfs-test", b"majority")
        self.assert_clean_unmount(v)
        for liar in range(6):
            chunk = os.path.join(v.members[liar], "f")
            os.setxattr(chunk, "trusted.ecfs-test", b"one member's")
            mnt = self.mount(v)
            self.assertEqual(os.getxattr(os.path.join(mnt, "f"), "trusted.ecfs-test"),
                             b"majority", f"member {liar} alone")
            self.assert_clean_unmount(v)
            os.setxattr(chunk, "trusted.ecfs-test", b"majority")
        self.assertIn("a value of trusted.ecfs-test", v.output())

    def test_majority_acl_wins(self):
        if not shutil.which("setfacl"):
            self.skipTest("setfacl is not installed")
        v = self.volume(6)
        mnt = self.mount(v, "k=4,m=2")
        H.write_file(os.path.join(mnt, "f"), b"x")
        subprocess.run(["setfacl", "-m", f"u:{NOBODY}:r", os.path.join(mnt, "f")], check=True)
        acl = os.getxattr(os.path.join(mnt, "f"), "system.posix_acl_access")
        self.assert_clean_unmount(v)
        # behind the daemon's back, on the member that answers first
        os.removexattr(os.path.join(v.members[0], "f"), "system.posix_acl_access")
        mnt = self.mount(v)
        self.assertEqual(os.getxattr(os.path.join(mnt, "f"), "system.posix_acl_access"), acl)
        self.assertIn("no system.posix_acl_access where the majority holds a different one",
                      v.output())
        # the root's default ACL stays on the member roots, and is listed
        subprocess.run(["setfacl", "-d", "-m", f"u:{NOBODY}:rx", mnt], check=True)
        self.assertIn("system.posix_acl_default", os.listxattr(mnt))
        os.mkdir(os.path.join(mnt, "inherits"))
        self.assertIn("system.posix_acl_access", os.listxattr(os.path.join(mnt, "inherits")))
        self.assert_members_private(v)
        # the permission it grants holds through the mount
        self.assertEqual(H.run_as(NOBODY, NOBODY, read, os.path.join(mnt, "f")), b"x")
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main())
