# SPDX-License-Identifier: MIT
"""An operation acts on the object the kernel checked, on real FUSE mounts.

Started by meson as `python3 test_identity.py ECFS [unittest args]`; runs
as root and switches to two unprivileged users.

- The race: user A swaps two of its directories with
  renameat2(RENAME_EXCHANGE) in a loop while it chmods, truncates, opens
  for writing and creates through both names.  Under one of them lies
  user B's directory with B's files of the same names.  The kernel checks
  each request against A's own objects; none of them may land on B's
  files (their mode, size, data and names stay as they were).
- A create that finds an object at the name (there behind the daemon's
  back, after the kernel's lookup found none) does not open it: the
  kernel looks again and checks it.
- A chunk copied on the members behind the daemon's back carries another
  file's identity: it is refused (its lookup fails, once logged), never
  made the other file's node.
"""

import errno
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

USER_A = 60101
USER_B = 60102
B_DATA = b"B" * 5000
RACE_SECONDS = 4.0


def as_user(uid, fn, *args):
    """A child running fn(*args) as uid (H.start_as); its pid."""
    return H.start_as(uid, uid, fn, *args)


def swap_loop(a, b, stop):
    while not os.path.exists(stop):
        for _ in range(50):
            try:
                H.renameat2(a, b, H.RENAME_EXCHANGE)
            except OSError:
                pass


def attempt(fn, *args):
    try:
        fn(*args)
        return 1
    except OSError:
        return 0


def write_open(path, flags):
    fd = os.open(path, os.O_WRONLY | flags, 0o600)
    try:
        os.write(fd, b"A")
    finally:
        os.close(fd)


def act_loop(dirs, stop, count):
    """A's requests through both of its names: chmod, truncate, an open
    for writing (with and without O_TRUNC), and a create of a name only
    B's directory has (removed again where A made it).  The number of
    those that succeeded goes to the file count."""
    modes = (0o640, 0o660)
    i = done = 0
    while not os.path.exists(stop):
        for d in dirs:
            x, y = os.path.join(d, "sub", "x"), os.path.join(d, "sub", "y")
            done += attempt(os.chmod, x, modes[i % 2])
            done += attempt(os.truncate, x, i % 7)
            done += attempt(write_open, x, os.O_TRUNC if i % 2 else 0)
            done += attempt(write_open, y, os.O_CREAT | os.O_TRUNC)
            done += attempt(os.unlink, y)
            i += 1
    with open(count, "w") as f:
        f.write(str(done))


def make(path, uid, data=None, mode=0o755):
    if data is None:
        os.mkdir(path)
    else:
        with open(path, "wb") as f:
            f.write(data)
    os.chmod(path, mode)
    os.chown(path, uid, uid)


class RenameRaceTest(H.MountedCase):
    def test_exchange_of_an_ancestor_never_reaches_another_user(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        a = os.path.join(mnt, "a")
        make(a, USER_A)
        d1, d2 = os.path.join(a, "d1"), os.path.join(a, "d2")
        make(d1, USER_A)
        make(d2, USER_A)
        make(os.path.join(d1, "sub"), USER_A)
        make(os.path.join(d1, "sub", "x"), USER_A, b"a" * 100, 0o640)
        make(os.path.join(d2, "sub"), USER_B)
        make(os.path.join(d2, "sub", "x"), USER_B, B_DATA, 0o644)
        make(os.path.join(d2, "sub", "y"), USER_B, B_DATA, 0o644)
        # B's chunks, held on every member by descriptors that follow
        # them wherever the swaps put them
        held = []
        for i in range(3):
            for leaf in ("x", "y"):
                p = v.chunk_path(i, f"a/d2/sub/{leaf}")
                fd = os.open(p, os.O_PATH | os.O_NOFOLLOW)
                self.addCleanup(os.close, fd)
                held.append((p, fd, os.fstat(fd)))

        def changed():
            out = []
            for p, fd, was in held:
                st = os.fstat(fd)
                if st.st_nlink != was.st_nlink:
                    out.append(f"{p}: unlinked")
                elif st.st_mode != was.st_mode:
                    out.append(f"{p}: mode {oct(was.st_mode)} -> {oct(st.st_mode)}")
                elif (st.st_size, st.st_mtime_ns) != (was.st_size, was.st_mtime_ns):
                    out.append(f"{p}: size {was.st_size} -> {st.st_size}, data written")
            return out

        stop = os.path.join(v.base, "stop")
        count = os.path.join(v.base, "count")
        os.chmod(v.base, 0o777)  # A writes its count there
        pids = [as_user(USER_A, swap_loop, d1, d2, stop),
                as_user(USER_A, act_loop, (d1, d2), stop, count)]
        deadline = time.monotonic() + RACE_SECONDS
        found = []
        try:
            while not found and time.monotonic() < deadline:
                time.sleep(0.05)
                found = changed()
        finally:
            with open(stop, "w"):
                pass
            for pid in pids:
                os.waitpid(pid, 0)
            os.chmod(v.base, 0o755)
        found = found or changed()
        self.assertEqual(found, [], "user A's requests reached user B's files")
        with open(count) as f:
            done = int(f.read())
        # the race ran: A's requests went through between the swaps
        self.assertGreater(done, 20, "too few of A's requests succeeded")
        # and through the mount: B's files as B made them
        for d in (d1, d2):
            sub = os.path.join(d, "sub")
            if os.stat(sub).st_uid != USER_B:
                continue
            for leaf in ("x", "y"):
                p = os.path.join(sub, leaf)
                st = os.stat(p)
                self.assertEqual((st.st_uid, st.st_mode & 0o7777), (USER_B, 0o644), p)
                self.assert_exact(p, B_DATA)
        self.assert_clean_unmount(v)


def create_errno(path):
    """open(O_CREAT | O_WRONLY | O_TRUNC) of path: 0, or its errno."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644))
        return 0
    except OSError as e:
        return e.errno


class CreateTest(H.MountedCase):
    def test_create_never_opens_an_object_the_kernel_did_not_check(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        pub = os.path.join(mnt, "pub")
        make(pub, 0, mode=0o777)  # made here: the daemon holds its names
        make(os.path.join(mnt, "other"), USER_B)
        make(os.path.join(mnt, "other", "f"), USER_B, B_DATA, 0o600)
        # the kernel forgets other/f, the node table with it (so that it
        # holds no stale name of it); then, behind the daemon's back, B's
        # file comes into pub: the kernel's lookup finds no name there,
        # and sends CREATE
        if not H.drop_caches():
            self.skipTest("cannot write /proc/sys/vm/drop_caches")
        time.sleep(0.2)
        for i in range(3):
            os.rename(v.chunk_path(i, "other/f"), v.chunk_path(i, "pub/f"))
        got = H.run_as(USER_A, USER_A, create_errno, os.path.join(pub, "f"))
        self.assertEqual(got, errno.EACCES, "user A opened user B's file for writing")
        self.assert_exact(os.path.join(pub, "f"), B_DATA)
        self.assert_clean_unmount(v)


CLAIMED = "is claimed by"


class PlantedIdentityTest(H.MountedCase):
    def test_a_copied_chunk_does_not_become_the_victims_node(self):
        v = self.volume(3)
        mnt = self.mount(v, "k=2,m=1")
        victim = os.path.join(mnt, "victim")
        want = H.pattern(70000, 3)
        H.write_file(victim, want)
        os.mkdir(os.path.join(mnt, "pub"))
        # behind the daemon's back (unmounted: it holds pub's names whole
        # while mounted): a copy of each chunk, a new object on every
        # member with the victim's file id in its headers
        v.unmount()
        for i in range(3):
            shutil.copyfile(v.chunk_path(i, "victim"), v.chunk_path(i, "pub/planted"))
        mnt = self.mount(v, "k=2,m=1")
        victim_ino = os.stat(victim).st_ino
        planted = os.path.join(mnt, "pub", "planted")
        self.assertEqual(os.listdir(os.path.join(mnt, "pub")), ["planted"])
        for _ in range(3):
            with self.assertRaises(OSError, msg="the copy was given a node") as cm:
                st = os.stat(planted)
                self.assertNotEqual(st.st_ino, victim_ino, "the copy is the victim's node")
            self.assertEqual(cm.exception.errno, errno.EIO)
        with self.assertRaises(OSError):
            with open(planted, "r+b") as f:
                f.write(b"planted")
        self.assertEqual(os.stat(victim).st_ino, victim_ino)
        self.assert_exact(victim, want)
        self.assertEqual(v.output().count(CLAIMED), 1, v.output())
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    sys.exit(H.main())
