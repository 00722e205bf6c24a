# SPDX-License-Identifier: MIT
"""Members on real disks: whole ext4 file systems on loop devices, made as
a new user makes them (mkfs.ext4 with its defaults), 4+2.

  FullTest        the volume filled until the writer gets ENOSPC: no member
                  fails, the files written before read back exact, new names
                  and xattrs get ENOSPC, the file that filled it is cut and
                  removed without a remount and new files fit again; statfs
                  says what is left before and after.
                  Also with one member much smaller than the others.
  LostDiskTest    a member disk unmounted (umount -l) under the running
                  volume: failed, not replaced by its empty mount point,
                  rebuilt online once mounted again; and one that turns
                  read-only (EROFS): failed, the volume reads and writes on.
  XattrTest       an xattr larger than the member file system takes is
                  refused with the member's own errno, and fails no member.

usage: test_disks.py ECFS_BINARY ECFS_FSCK [unittest args]"""

import errno
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2
N = K + M
OPTS = f"k={K},m={M}"
MIB = 1 << 20
FSCK = None
# Files written before the volume fills: sizes around strips and stripes.
OLD = {"one": 1, "small": 5000, "mid": 300000, "dir/big": 3 * MIB + 17}


def errname(e):
    return errno.errorcode.get(e, str(e))


def avail(path):
    """What statfs says an unprivileged writer can still put at path."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(path, limit):
    """Writes one file in 1 MiB pieces until a call fails (or limit bytes
    are in); returns (bytes written, errno of the failing call or 0)."""
    piece = H.pattern(MIB, 77)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    done, err = 0, 0
    try:
        while done < limit:
            done += os.write(fd, piece)
        os.fsync(fd)
    except OSError as e:
        err = e.errno
    finally:
        try:
            os.close(fd)
        except OSError as e:
            err = err or e.errno
    return done, err


class DiskCase(H.MountedCase):
    def disks(self, mib=64):
        v = self.volume(N, member_fs="ext4", member_mib=mib)
        mnt = self.mount(v, OPTS)
        return v, mnt

    def write_old(self, mnt):
        data = {}
        os.mkdir(os.path.join(mnt, "dir"))
        for rel, size in OLD.items():
            data[rel] = H.pattern(size, len(rel) * 1000 + size)
            H.write_file(os.path.join(mnt, rel), data[rel], fsync=True)
        return data

    def check_old(self, mnt, data, what):
        H.drop_caches()
        for rel, want in data.items():
            self.assert_exact(os.path.join(mnt, rel), want, what)

    def assert_healthy(self, v, what):
        h = H.health(v.mnt)
        self.assertEqual((h.get("state"), h.get("members_failed")),
                         ("healthy", "0"), f"{what}: {h}\n{v.log()}")

    def member_avail(self, v):
        return min(avail(p) for p in v.members)

    def fill_volume(self, v, mnt, what):
        """Fills the volume with one file: the writer gets ENOSPC, the
        volume stays healthy and says it is full.  Returns (bytes that
        fit, what statfs offered before)."""
        before = avail(mnt)
        done, err = fill(os.path.join(mnt, "filler"), 4 * before + 64 * MIB)
        self.assertEqual(err, errno.ENOSPC,
                         f"{what}: filling gave {errname(err)} after "
                         f"{done >> 20} MiB (statfs offered "
                         f"{before >> 20} MiB):\n{v.log()}")
        self.assert_healthy(v, f"{what}, full")
        self.assertGreater(done, before // 2,
                           f"{what}: only {done >> 20} MiB fit, statfs "
                           f"offered {before >> 20} MiB")
        after = avail(mnt)
        H.log(f"{what}: statfs offered {before >> 20} MiB, {done >> 20} MiB "
              f"fit, then ENOSPC; statfs offers {after >> 20} MiB")
        self.assertLess(after, max(before // 20, 4 * MIB),
                        f"{what}: statfs offers {after >> 20} MiB on a full "
                        f"volume (it offered {before >> 20} MiB empty)")
        return done, before

    def refused_when_full(self, v, mnt, what):
        """On the full volume new files fit only into what the last data
        write left over: creating empty files runs into ENOSPC soon (each
        takes a chunk header per member; none may eat into the members'
        reserve), and a mkdir and an xattr then give ENOSPC or fit.  Never
        EIO, no member fails, and the files go again with rm."""
        made, err = [], 0
        while len(made) < 5000:
            p = os.path.join(mnt, f"full-{len(made)}")
            try:
                os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
            except OSError as e:
                err = e.errno
                break
            made.append(p)
        self.assertEqual(errname(err), "ENOSPC",
                         f"{what}: creating files on a full volume "
                         f"({len(made)} fitted)")
        for name, call in (
                ("mkdir", lambda: os.mkdir(os.path.join(mnt, "full-dir"))),
                ("setxattr", lambda: os.setxattr(os.path.join(mnt, "one"),
                                                 "user.k", b"v" * 100))):
            try:
                call()
            except OSError as e:
                self.assertEqual(errname(e.errno), "ENOSPC",
                                 f"{what}: {name} on a full volume")
        self.assert_healthy(v, f"{what}, after creations on a full volume")
        for p in made:
            os.unlink(p)
        H.log(f"{what}: {len(made)} empty files fitted on the full volume")

    def empty_and_reuse(self, v, mnt, data, what):
        """The filler is cut to half, then removed, without a remount,
        and a new file fits."""
        filler = os.path.join(mnt, "filler")
        os.truncate(filler, os.stat(filler).st_size // 2)
        self.assert_healthy(v, f"{what}, after truncating the filler")
        os.unlink(filler)
        self.assertFalse(os.path.exists(os.path.join(mnt, "filler")))
        new = H.pattern(8 * MIB + 5, 91)
        H.write_file(os.path.join(mnt, "new"), new, fsync=True)
        data["new"] = new
        self.check_old(mnt, data, f"{what}, after rm and a new file:")
        self.assert_healthy(v, f"{what}, after rm")


class FullTest(DiskCase):
    def test_fill_rm_write(self):
        """The bar: 4+2 disks of 64 MiB filled to ENOSPC, the filler
        removed, a new file written, all without a remount."""
        v, mnt = self.disks()
        data = self.write_old(mnt)
        offered = avail(mnt)
        members = self.member_avail(v)
        self.assertGreater(offered, K * members // 2,
                           f"statfs offers {offered >> 20} MiB on members "
                           f"with {members >> 20} MiB free each")
        self.assertLessEqual(offered, K * members)
        self.fill_volume(v, mnt, "4+2 on 64 MiB disks")
        self.check_old(mnt, data, "full volume:")
        self.refused_when_full(v, mnt, "4+2 on 64 MiB disks")
        self.empty_and_reuse(v, mnt, data, "4+2 on 64 MiB disks")
        self.assertGreater(avail(mnt), offered // 2)
        self.assert_clean_unmount(v)
        mnt = self.mount(v)
        self.check_old(mnt, data, "remounted:")
        self.assert_healthy(v, "remounted")
        self.assert_clean_unmount(v)

    def test_one_small_member(self):
        """Member 3 is a 40 MiB disk among 96 MiB ones: statfs is bounded
        by it, and it is what fills; no member fails."""
        sizes = [96] * N
        sizes[3] = 40
        v = self.volume(N, member_fs="ext4", member_mib=sizes)
        mnt = self.mount(v, OPTS)
        small = avail(v.members[3])
        offered = avail(mnt)
        self.assertLessEqual(offered, K * small)
        self.assertGreater(offered, K * small // 2)
        data = self.write_old(mnt)
        self.fill_volume(v, mnt, "one small member")
        self.assertGreater(min(avail(v.members[i]) for i in (0, 1, 2, 4, 5)),
                           20 * MIB, "the big members filled up too")
        self.check_old(mnt, data, "full volume:")
        self.empty_and_reuse(v, mnt, data, "one small member")
        self.assert_clean_unmount(v)


class LostDiskTest(DiskCase):
    def assert_failed(self, v, idx, why):
        h = H.health(v.mnt)
        self.assertEqual(h.get("members_failed"), "1", h)
        self.assertEqual(h.get("state"), "degraded", h)
        state = h.get(f"member.{idx}", "")
        self.assertTrue(state.startswith("failed") and why in state,
                        f"member {idx}: {state!r}, expected failed ({why})")

    def test_disk_unmounted(self):
        """Disk 2 unmounted lazily under the running volume; its mount
        point stays, empty, on the file system below.  Reads and writes go
        on and the member fails; the online heal does not take the empty
        mount point (the disk did not mount), and takes the disk back,
        rebuilding what it missed, once it is mounted again."""
        v, mnt = self.disks()
        data = self.write_old(mnt)
        subprocess.run(["umount", "-l", v.members[2]], check=True)
        self.check_old(mnt, data, "disk 2 unmounted:")
        more = H.pattern(2 * MIB + 3, 5)
        H.write_file(os.path.join(mnt, "more"), more, fsync=True)
        data["more"] = more
        self.check_old(mnt, data, "disk 2 unmounted, after a write:")
        self.assert_failed(v, 2, "")
        time.sleep(2.5)    # the heal looks once a second
        self.assert_failed(v, 2, "not a mount point")
        self.assertEqual(os.listdir(v.members[2]), [],
                         "written below the mount point")
        v.disks[2].mount()
        h = self.wait_heal(v, mnt)
        self.assertEqual((h.get("state"), h.get("heals_completed")),
                         ("healthy", "1"), f"{h}\n{v.log()}")
        self.assertTrue(os.path.exists(v.chunk_path(2, "more")))
        self.check_old(mnt, data, "disk 2 back:")
        self.assert_clean_unmount(v)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        mnt = self.mount(v)
        self.check_old(mnt, data, "remounted:")
        self.assert_healthy(v, "remounted")
        self.assert_clean_unmount(v)

    def fsck(self, v, *args):
        return subprocess.run([FSCK, "--no-progress", *args, ":".join(v.members)],
                              capture_output=True, text=True, timeout=120)

    def wait_heal(self, v, mnt, limit=30):
        """Health once no heal is running (or after limit seconds)."""
        deadline = time.monotonic() + limit
        h = H.health(mnt)
        while time.monotonic() < deadline:
            if h.get("state") == "healthy" and h.get("heal") == "idle":
                break
            time.sleep(0.2)
            h = H.health(mnt)
        return h

    def test_disk_read_only(self):
        """Disk 1 turns read-only under the running volume: it fails with
        EROFS, the volume reads and writes on."""
        v, mnt = self.disks()
        data = self.write_old(mnt)
        r = subprocess.run(["mount", "-o", "remount,ro", v.members[1]],
                           capture_output=True, text=True)
        H.log("remount,ro:", r.returncode, r.stderr)
        if r.returncode != 0:
            # The kernel refuses (busy): ecfs holds files open for writing
            # there, the lock at least.  A disk turns read-only under a
            # running volume the way ext4 does it after an error
            # (errors=remount-ro), which `abort` triggers.
            v.disks[1].remount("abort")
        new = H.pattern(3 * MIB + 1, 6)
        H.write_file(os.path.join(mnt, "new"), new, fsync=True)
        data["new"] = new
        self.check_old(mnt, data, "disk 1 read-only:")
        self.assert_failed(v, 1, os.strerror(errno.EROFS))
        os.mkdir(os.path.join(mnt, "d2"))
        H.write_file(os.path.join(mnt, "d2/f"), new, fsync=True)
        data["d2/f"] = new
        self.check_old(mnt, data, "disk 1 read-only, after more writes:")
        self.assert_clean_unmount(v)


class XattrTest(DiskCase):
    def test_xattr_too_large(self):
        """A value larger than an ext4 block (no ea_inode by default):
        the member's errno, and no member fails."""
        v, mnt = self.disks()
        path = os.path.join(mnt, "f")
        H.write_file(path, b"x" * 1000, fsync=True)
        os.setxattr(path, "user.small", b"s" * 200)
        big = b"b" * 8000
        try:
            os.setxattr(v.chunk_path(0, "f"), "user.big", big)
            os.removexattr(v.chunk_path(0, "f"), "user.big")
            self.fail("ext4 took an 8000-byte xattr value")
        except OSError as e:
            want = e.errno
        with self.assertRaises(OSError) as cm:
            os.setxattr(path, "user.big", big)
        self.assertEqual(errname(cm.exception.errno), errname(want))
        self.assert_healthy(v, "after the refused xattr")
        self.assertEqual(os.getxattr(path, "user.small"), b"s" * 200)
        self.assertNotIn("user.big", os.listxattr(path))
        os.setxattr(path, "user.other", b"o" * 100)
        self.assertEqual(os.getxattr(path, "user.other"), b"o" * 100)
        self.assert_healthy(v, "after another xattr")
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main(needs_disks=True))
