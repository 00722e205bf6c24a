# SPDX-License-Identifier: MIT
"""Crash-consistent namespace operations: intents (docs/FORMAT.md section 8).

Started by meson as `python3 test_intents.py ECFS ECFS_FSCK [unittest args]`.

A crash in the middle of a mirrored rename, link, unlink or rmdir leaves
the members disagreeing.  Each case here builds such a state on a k=4, m=2
volume directly in the member directories, as the daemon leaves it: the
intent record (written in the documented byte format, with the inode
numbers the members hold) on every member, and the operation done on only
some of them.  Then it mounts WITHOUT running ecfs-fsck first and checks
that every name shows its new state (the operation is finished), every file
reads back byte-exact, no record is left, ecfs-fsck -y then -n end clean,
and the files still read back with two members hidden.  Further cases: a
record torn or on a few members only, a stale record whose name was taken
by a newer object (identity check), what the daemon does with partial
mkdir and create (not logged), and ecfs-fsck with pending intents and with
orphans.
"""

import ctypes
import hashlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

import ecfs_harness as h

FSCK = None
K, M = 4, 2
N = K + M
OPTS = f"k={K},m={M},strip=4096"
OPS = {"rename": 1, "link": 2, "unlink": 3, "rmdir": 4, "mkdir": 5}
RENAME_EXCHANGE = 2
HALF = [0, 1, 2]  # the members a crash let the operation reach


def encode_intent(op, frm, to, flags, id_from, id_to, ident, mode=0,
                  owner=(0xFFFFFFFF, 0xFFFFFFFF)):
    """An intent record, byte for byte as docs/FORMAT.md section 8 says."""
    f, t = os.fsencode(frm), os.fsencode(to or "")
    b = b"ECFSINT1" + struct.pack("<IIQIIIIII", OPS[op], flags, ident, len(id_from),
                                  len(f), len(t), mode, *owner)
    for a, c in zip(id_from, id_to):
        b += struct.pack("<QQQQ", *a, *c)
    b += f + t
    return b + hashlib.sha256(b).digest()


_statx = ctypes.CDLL(None, use_errno=True).statx


def ident(v, i, rel):
    """(inode number, birth time in ns) of rel on member i, (0, 0) if none."""
    buf = ctypes.create_string_buffer(256)
    path = os.fsencode(os.path.join(v.members[i], rel.lstrip("/")))
    # AT_FDCWD, AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME
    if _statx(-100, path, 0x100, 0x100 | 0x800, buf) != 0:
        return (0, 0)
    mask, = struct.unpack_from("<I", buf, 0)
    ino, = struct.unpack_from("<Q", buf, 32)
    sec, nsec = struct.unpack_from("<qI", buf, 80)
    return (ino, sec * 10**9 + nsec if mask & 0x800 else 0)


NONE = (0, 0)


def intent_dir(v, i):
    return os.path.join(v.members[i], ".ecfs", "intent")


SLOTS, SLOT_SIZE = 64, 16384


def log_path(v, i):
    return os.path.join(intent_dir(v, i), "log")


def write_record(v, i, ident, data):
    """Writes a record into slot ident % 64 of member i's log (made by
    every read-write mount)."""
    fd = os.open(log_path(v, i), os.O_WRONLY)
    try:
        os.pwrite(fd, data, ident % SLOTS * SLOT_SIZE)
    finally:
        os.close(fd)


def member_op(v, i, op, frm, to, flags):
    """The operation as the daemon does it on member i."""
    p1 = os.path.join(v.members[i], frm.lstrip("/"))
    p2 = to and os.path.join(v.members[i], to.lstrip("/"))
    if op == "rename":
        h.renameat2(p1, p2, flags)
    elif op == "link":
        os.link(p1, p2, follow_symlinks=False)
    elif op == "unlink":
        os.unlink(p1)
    elif op == "mkdir":
        os.mkdir(p1, 0o750)
        os.chown(p1, 1234, 5678)
    else:
        os.rmdir(p1)


def crash(v, op, frm, to=None, flags=0, done=HALF, recorded=range(N),
          ident_=None, apply=True, **kw):
    """Leaves the state of a crash: the record on `recorded`, the
    operation done on `done`.  Returns the record's id."""
    ident_ = ident_ or int(time.time() * 1e6)
    id_from = [ident(v, i, frm) if op != "mkdir" else NONE for i in range(N)]
    id_to = [ident(v, i, to) if flags & RENAME_EXCHANGE else NONE for i in range(N)]
    data = encode_intent(op, frm, to, flags, id_from, id_to, ident_, **kw)
    for i in recorded:
        write_record(v, i, ident_, data)
    for i in done if apply else ():
        member_op(v, i, op, frm, to, flags)
    return ident_


def leave_lock_text(v):
    """What a daemon killed while mounted leaves besides its members'
    state: the text of its locks, which a clean close empties (the next
    mount then lists names from every member, FORMAT.md section 3)."""
    for m in v.members:
        with open(os.path.join(m, ".ecfs", "lock"), "w") as f:
            f.write("pid=1 host=killed\n")


def brief(t):
    """A tree with each file's bytes as length and digest (for messages)."""
    return {k: f"{len(v)} bytes {hashlib.sha256(v).hexdigest()[:12]}"
            if isinstance(v, bytes) else v for k, v in t.items()}


def tree(mnt):
    """{relative path: bytes for a file, "dir" for a directory}."""
    out = {}
    for dirpath, dirs, files in os.walk(mnt):
        for d in dirs:
            out[os.path.relpath(os.path.join(dirpath, d), mnt)] = "dir"
        for f in files:
            p = os.path.join(dirpath, f)
            got, err = h.read_all(p)
            out[os.path.relpath(p, mnt)] = got if err == 0 else f"errno {err}"
    return out


class IntentCase(h.MountedCase):

    def build(self, files, dirs=()):
        """A volume holding `files` ({rel: bytes}) and the empty `dirs`."""
        v = self.volume(N)
        mnt = self.mount(v, OPTS)
        for d in dirs:
            os.makedirs(os.path.join(mnt, d), exist_ok=True)
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(mnt, rel)), exist_ok=True)
            h.write_file(os.path.join(mnt, rel), data)
        self.assert_clean_unmount(v)
        return v

    def fsck(self, v, *args):
        return subprocess.run([FSCK, "--no-progress", *args, ":".join(v.members)],
                              capture_output=True, text=True, timeout=120)

    def records_left(self, v):
        """{member: [slots whose magic is not cleared]}, where any."""
        out = {}
        for i in range(N):
            with open(log_path(v, i), "rb") as f:
                log = f.read()
            self.assertEqual(len(log), SLOTS * SLOT_SIZE)
            busy = [s for s in range(SLOTS) if log[s * SLOT_SIZE:s * SLOT_SIZE + 8] != bytes(8)]
            if busy:
                out[i] = busy
        return out

    def check_after_crash(self, v, want):
        """Mount without fsck: the tree is exactly `want`; no record left;
        fsck -y then -n clean; the files read back with 2 members hidden."""
        mnt = self.mount(v)
        self.assertEqual(brief(tree(mnt)), brief(want), v.log())
        self.assertEqual(self.records_left(v), {})
        self.assert_clean_unmount(v)
        r = self.fsck(v, "-y")
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for hidden in ((0, 1), (2, 3), (1, 5)):
            moved = []
            try:
                for i in hidden:
                    os.rename(v.members[i], v.members[i] + ".away")
                    moved.append(i)
                mnt = self.mount(v)
                self.assertEqual(brief(tree(mnt)), brief(want), f"members {hidden} hidden")
                self.assert_clean_unmount(v)
            finally:
                v.unmount()
                for i in moved:
                    os.rename(v.members[i] + ".away", v.members[i])


A, B, C = h.pattern(40000, 1), h.pattern(70000, 2), h.pattern(5000, 3)


class ReplayTest(IntentCase):
    """A crash after the operation reached members 0-2 of 6."""

    def test_rename_file_over_existing(self):
        v = self.build({"a": A, "b": B, "c": C})
        crash(v, "rename", "/a", "/b")
        self.check_after_crash(v, {"b": A, "c": C})

    def test_rename_across_directories(self):
        v = self.build({"x/a": A, "y/b": B})
        crash(v, "rename", "/x/a", "/y/b")
        self.check_after_crash(v, {"x": "dir", "y": "dir", "y/b": A})

    def test_rename_directory_over_empty_directory(self):
        v = self.build({"d/a": A, "d/sub/b": B}, dirs=["e"])
        crash(v, "rename", "/d", "/e")
        self.check_after_crash(v, {"e": "dir", "e/a": A, "e/sub": "dir", "e/sub/b": B})

    def test_rename_directory(self):
        v = self.build({"d/a": A, "d/sub/b": B, "c": C})
        crash(v, "rename", "/d", "/n", done=[3, 4, 5])
        self.check_after_crash(v, {"n": "dir", "n/a": A, "n/sub": "dir", "n/sub/b": B,
                                   "c": C})

    def test_exchange(self):
        v = self.build({"a": A, "b": B})
        crash(v, "rename", "/a", "/b", flags=RENAME_EXCHANGE)
        self.check_after_crash(v, {"a": B, "b": A})

    def test_link(self):
        v = self.build({"a": A})
        crash(v, "link", "/a", "/l")
        self.check_after_crash(v, {"a": A, "l": A})

    def test_unlink(self):
        v = self.build({"a": A, "b": B})
        crash(v, "unlink", "/a")
        self.check_after_crash(v, {"b": B})

    def test_rmdir(self):
        v = self.build({"b": B}, dirs=["e"])
        crash(v, "rmdir", "/e")
        self.check_after_crash(v, {"b": B})

    def test_mkdir(self):
        v = self.build({"b": B})
        crash(v, "mkdir", "/d", mode=0o750, owner=(1234, 5678), done=[5])
        self.check_after_crash(v, {"b": B, "d": "dir"})
        for m in v.members:
            st = os.lstat(os.path.join(m, "d"))
            self.assertEqual((st.st_mode & 0o7777, st.st_uid, st.st_gid), (0o750, 1234, 5678))

    def test_rmdir_refused(self):
        # rmdir of a non-empty directory: the members refuse again.
        v = self.build({"d/a": A})
        crash(v, "rmdir", "/d", apply=False)
        self.check_after_crash(v, {"d": "dir", "d/a": A})


class RecordTest(IntentCase):
    """Crashes around the record itself."""

    def test_record_on_some_members_only(self):
        # The crash came while the record was written: the operation had
        # not started; it is done now (the new state).
        v = self.build({"a": A, "b": B})
        crash(v, "rename", "/a", "/b", done=[], recorded=[4, 5])
        self.check_after_crash(v, {"b": A})

    def test_first_member_ahead_of_the_records(self):
        # With a member timeout the first member applies the operation as
        # soon as its own copy is synced: the crash came before the others
        # had theirs.  Its copy is enough: the operation is done now.
        v = self.build({"a": A, "b": B})
        crash(v, "rename", "/a", "/b", done=[0], recorded=[0, 3])
        self.check_after_crash(v, {"b": A})

    def test_record_cleared_where_done(self):
        # Each member clears its copy once its own part is durable: the
        # crash came when members 0-2 had, and 3-5 had not started.
        v = self.build({"a": A, "b": B, "c": C})
        crash(v, "rename", "/a", "/b", done=[0, 1, 2], recorded=[3, 4, 5])
        self.check_after_crash(v, {"b": A, "c": C})

    def test_torn_record(self):
        v = self.build({"a": A, "b": B})
        t = int(time.time() * 1e6)
        data = encode_intent("rename", "/a", "/b", 0, [ident(v, i, "/a") for i in range(N)],
                             [NONE] * N, t)
        # All torn, each before its checksum: a record cut inside its
        # SHA-256 is whole again if the bytes cut were zeros, as the
        # slot's are (a torn last byte: 1 run in 256).
        for i in range(N):
            write_record(v, i, t, data[:len(data) - 32 - 1 - i])
        self.check_after_crash(v, {"a": A, "b": B})

    def test_stale_record_never_touches_a_newer_object(self):
        # The rename finished everywhere, but the removal of its record was
        # lost; meanwhile a new "a" was made.  Replay must leave it alone.
        v = self.build({"a": A, "b": B})
        t = crash(v, "rename", "/a", "/b", done=[], recorded=[], apply=False)
        id_from = [ident(v, i, "/a") for i in range(N)]
        for i in range(N):
            member_op(v, i, "rename", "/a", "/b", 0)
        mnt = self.mount(v)
        h.write_file(os.path.join(mnt, "a"), C)
        self.assert_clean_unmount(v)
        data = encode_intent("rename", "/a", "/b", 0, id_from, [NONE] * N, t)
        for i in range(N):
            write_record(v, i, t, data)
        self.check_after_crash(v, {"a": C, "b": A})

    def test_stale_record_and_a_reused_inode_number(self):
        # An unlink finished, its record's removal lost, and a new "a"
        # got the old inode number: its birth time tells it apart.
        v = self.build({"a": C, "b": B})
        t = int(time.time() * 1e6)
        id_from = [(ident(v, i, "/a")[0], ident(v, i, "/a")[1] - 10**9) for i in range(N)]
        data = encode_intent("unlink", "/a", None, 0, id_from, [NONE] * N, t)
        for i in range(N):
            write_record(v, i, t, data)
        self.check_after_crash(v, {"a": C, "b": B})

    def test_record_naming_the_metadata_folder(self):
        # Only orphans are ever moved in /.ecfs: anything else is no record.
        v = self.build({"a": A})
        sb = [ident(v, i, "/.ecfs/superblock") for i in range(N)]
        t = int(time.time() * 1e6)
        data = encode_intent("rename", "/.ecfs/superblock", "/x", 0, sb, [NONE] * N, t)
        for i in range(N):
            write_record(v, i, t, data)
        self.check_after_crash(v, {"a": A})
        self.assertTrue(all(os.path.exists(os.path.join(m, ".ecfs", "superblock"))
                            for m in v.members))

    def test_orphan_move_cut_short(self):
        # unlink of an open file = a rename into the orphan folder: done at
        # the next mount, whose orphan sweep then removes it.
        v = self.build({"a": A, "b": B})
        crash(v, "rename", "/a", "/.ecfs/orphans/.fuse_hidden0000000100000001")
        self.check_after_crash(v, {"b": B})
        self.assertEqual([os.listdir(os.path.join(m, ".ecfs", "orphans")) for m in v.members],
                         [[]] * N)

    def test_two_records_replay_in_order(self):
        # rename a -> b, then b -> c, both cut short after 3 members.
        v = self.build({"a": A})
        t = int(time.time() * 1e6)
        crash(v, "rename", "/a", "/b", ident_=t, done=range(N))
        crash(v, "rename", "/b", "/c", ident_=t + 1)
        self.check_after_crash(v, {"c": A})

    def test_operations_leave_no_record(self):
        v = self.build({"a": A, "b": B}, dirs=["e"])
        mnt = self.mount(v)
        os.rename(os.path.join(mnt, "a"), os.path.join(mnt, "b"))
        os.link(os.path.join(mnt, "b"), os.path.join(mnt, "l"))
        os.unlink(os.path.join(mnt, "l"))
        os.rmdir(os.path.join(mnt, "e"))
        with self.assertRaises(OSError):  # refused by the primary
            os.rmdir(os.path.join(mnt, "b"))
        self.assertEqual(self.records_left(v), {})
        self.assert_clean_unmount(v)
        self.check_after_crash(v, {"b": A})


class UnloggedTest(IntentCase):
    """Operations without intents, cut short: the daemon still serves."""

    def test_create_cut_short(self):
        # A create makes the chunk files on every member at once, then
        # writes their headers: a crash leaves some missing, some empty.
        # The empty file has nothing to lose: the open finishes the create.
        # "late" is on members past the first m + 1 only: listed because
        # the crash left its lock text.
        states = {
            "early": {0: "empty", 1: "empty", 2: "empty", 3: "gone", 4: "gone", 5: "gone"},
            "late": {0: "gone", 1: "gone", 2: "gone"},
            "headers": {2: "empty", 3: "empty", 4: "empty", 5: "empty"},
        }
        v = self.build({"a": A, **{name: b"" for name in states}})
        for name, state in states.items():
            for i, what in state.items():
                p = os.path.join(v.members[i], name)
                if what == "gone":
                    os.unlink(p)
                else:
                    os.truncate(p, 0)
        leave_lock_text(v)
        mnt = self.mount(v)
        self.assertEqual(tree(mnt), {"a": A, "early": b"", "late": b"", "headers": b""})
        h.write_file(os.path.join(mnt, "late"), C)
        self.assert_clean_unmount(v)
        for name in states:
            sizes = [os.path.getsize(os.path.join(m, name)) for m in v.members]
            self.assertTrue(all(sz >= h.CHUNK_HEADER_SIZE for sz in sizes), (name, sizes))
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_after_crash(v, {"a": A, "early": b"", "late": C, "headers": b""})


def snapshot(v):
    """Copies of the member directories, to start every crash run from."""
    snap = os.path.join(v.base, "snap")
    for i, m in enumerate(v.members):
        shutil.copytree(m, os.path.join(snap, str(i)), symlinks=True)
    return snap


def restore(v, snap):
    for i, m in enumerate(v.members):
        shutil.rmtree(m)
        shutil.copytree(os.path.join(snap, str(i)), m, symlinks=True)


def record_count(rec):
    try:
        with open(os.path.join(rec, "ops.jsonl"), "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return None


class CrashLoopTest(IntentCase):
    """The daemon itself killed after its N-th member write, for every N
    inside one operation (ECFS_FAULT=abort_after=N, docs/RECORD.md); in CI
    every fifth N and the last two, all of them with ECFS_SLOW=1."""

    def loop(self, files, dirs, op, old, new):
        v = self.build(files, dirs)
        snap = snapshot(v)
        rec = os.path.join(v.base, "rec")
        os.mkdir(rec)
        os.environ["ECFS_RECORD"] = rec
        try:
            mnt = self.mount(v)
            start = record_count(rec)
            if start is None:
                self.skipTest("this build does not record member operations (ECFS_RECORD)")
            op(mnt)
            end = record_count(rec)
            self.assert_clean_unmount(v)
        finally:
            del os.environ["ECFS_RECORD"]
        self.assertEqual(tree(self.mount(v)), new)
        self.assert_clean_unmount(v)
        points = list(range(start + 1, end + 1))
        if not os.environ.get("ECFS_SLOW"):
            points = sorted(set(points[::5] + points[-2:]))
        h.log(f"{self.id()}: member writes {start + 1}..{end}, crashing at {points}")
        self.assertGreater(end, start)
        for n in points:
            restore(v, snap)
            os.environ["ECFS_FAULT"] = f"abort_after={n}"
            try:
                mnt = self.mount(v)
            finally:
                del os.environ["ECFS_FAULT"]
            if "ignoring 'abort_after" in v.output():
                v.unmount()
                self.skipTest("this build has no ECFS_FAULT=abort_after")
            try:
                op(mnt)
            except OSError:
                pass  # the daemon died under it
            self.assertIsNotNone(v.proc.wait(timeout=20), f"abort_after={n}")
            v.unmount()
            mnt = self.mount(v)  # no fsck first
            got = tree(mnt)
            self.assertIn(brief(got), (brief(old), brief(new)),
                          f"after a crash at member write {n}\n" + v.log())
            self.assertEqual(self.records_left(v), {})
            self.assert_clean_unmount(v)
            hidden = (0, 1) if n % 2 else (4, 5)
            for i in hidden:
                os.rename(v.members[i], v.members[i] + ".away")
            try:
                self.assertEqual(brief(tree(self.mount(v))), brief(got),
                                 f"crash at {n}, {hidden} hidden")
                self.assert_clean_unmount(v)
            finally:
                v.unmount()
                for i in hidden:
                    os.rename(v.members[i] + ".away", v.members[i])
            r = self.fsck(v, "-y")
            self.assertIn(r.returncode, (0, 1), f"crash at {n}: " + r.stdout + r.stderr)
            r = self.fsck(v, "-n")
            self.assertEqual(r.returncode, 0, f"crash at {n}: " + r.stdout + r.stderr)

    def test_rename_over_existing(self):
        self.loop({"a": A, "b": B}, [],
                  lambda mnt: os.rename(os.path.join(mnt, "a"), os.path.join(mnt, "b")),
                  {"a": A, "b": B}, {"b": A})

    def test_rename_directory_over_empty_directory(self):
        self.loop({"d/a": A, "d/s/b": B}, ["e"],
                  lambda mnt: os.rename(os.path.join(mnt, "d"), os.path.join(mnt, "e")),
                  {"d": "dir", "d/a": A, "d/s": "dir", "d/s/b": B, "e": "dir"},
                  {"e": "dir", "e/a": A, "e/s": "dir", "e/s/b": B})

    def test_link(self):
        self.loop({"a": A}, [],
                  lambda mnt: os.link(os.path.join(mnt, "a"), os.path.join(mnt, "l")),
                  {"a": A}, {"a": A, "l": A})

    def test_unlink(self):
        self.loop({"a": A, "b": B}, [], lambda mnt: os.unlink(os.path.join(mnt, "a")),
                  {"a": A, "b": B}, {"b": B})

    def test_rmdir(self):
        self.loop({"b": B}, ["e"], lambda mnt: os.rmdir(os.path.join(mnt, "e")),
                  {"b": B, "e": "dir"}, {"b": B})

    def test_mkdir(self):
        self.loop({"b": B}, [], lambda mnt: os.mkdir(os.path.join(mnt, "d")),
                  {"b": B}, {"b": B, "d": "dir"})


class FsckPendingTest(IntentCase):

    def member_state(self, v):
        out = {}
        for i, root in enumerate(v.members):
            for dirpath, dirs, files in os.walk(root):
                for name in files + dirs:
                    p = os.path.join(dirpath, name)
                    out[os.path.relpath(p, root)] = os.lstat(p).st_ino
        return out

    def test_pending_intent(self):
        v = self.build({"a": A, "b": B})
        crash(v, "rename", "/a", "/b")
        before = self.member_state(v)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn("intent: /a: a rename to /b interrupted by a crash", r.stdout)
        self.assertIn("[repairable]", r.stdout)
        self.assertEqual(self.member_state(v), before, "fsck -n changed the members")
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("[repaired]", r.stdout)
        self.assertEqual(self.records_left(v), {})
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        mnt = self.mount(v)
        self.assertEqual(tree(mnt), {"b": A})
        self.assert_clean_unmount(v)

    def test_orphans(self):
        v = self.build({"a": A, "b": B})
        mnt = self.mount(v)
        fd = os.open(os.path.join(mnt, "a"), os.O_RDONLY)
        try:
            os.unlink(os.path.join(mnt, "a"))  # open: kept as an orphan
            self.assertEqual(os.pread(fd, 10, 0), A[:10])
            orphans = [os.listdir(os.path.join(m, ".ecfs", "orphans")) for m in v.members]
            self.assertTrue(all(len(o) == 1 for o in orphans), orphans)
            v.proc.send_signal(signal.SIGKILL)
            v.proc.wait()
        finally:
            try:
                os.close(fd)
            except OSError:  # ENOTCONN: the daemon is gone
                pass
            v.unmount()
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("orphan: volume: member"), N, r.stdout)
        r = self.fsck(v, "-y")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual([os.listdir(os.path.join(m, ".ecfs", "orphans")) for m in v.members],
                         [[]] * N)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        mnt = self.mount(v)
        self.assertEqual(tree(mnt), {"b": B})
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = h.take_fsck_argument()
    sys.exit(h.main())
