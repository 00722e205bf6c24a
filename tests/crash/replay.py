# SPDX-License-Identifier: MIT
"""Power-loss states from a record of member operations (docs/RECORD.md).

A daemon run with ECFS_RECORD=DIR leaves DIR/ops.jsonl (every mutating
member operation that succeeded, in completion order) and DIR/data.bin
(the bytes written).  This module rebuilds what the members could hold
after a power loss at any point P of that record (the first P operations
were issued), in the model of a journaling local file system on each
member disk:

  * metadata operations (create, mkdir, rename, unlink, truncate, chmod,
    setxattr, ...) of one member reach its disk in order: a prefix of them
    survives (a journal commits in order);
  * data writes are cut in 4 KiB pages of the file; each page survives
    with the writes of a prefix of its own history (a page is written
    back whole, with its content of some moment), independently of other
    pages, other files and other members: so unsynced writes can be
    dropped, reordered with each other, and torn at page boundaries;
  * an fsync (or fdatasync) that completed before P is a barrier: the
    file's data written before it survives, and so does the member's
    metadata up to the file's own last metadata operation (its create,
    its truncates); for a directory, up to the last operation on an entry
    in it (its creates, renames, unlinks).  The members are different
    disks: nothing orders one member's operations against another's.

A state is (P, mode, seed): mode "prefix" keeps everything issued (the
state a process kill at P leaves), "drop" keeps only what barriers force,
"random" chooses each page's and each member's surviving prefix at random
between the two.  apply() writes a state onto copies of the initial
member directories.

Intent records (docs/FORMAT.md section 8) name the objects they act on by
inode number and birth time, which a replay on copies cannot reproduce:
apply() rewrites the identities in a record it writes to those of the
same paths in the replayed members at that moment (and its checksum), so
that the record means on the copy what it meant on the original.
"""

import ctypes
import hashlib
import json
import os
import random
import struct

PAGE = 4096
META_KINDS = {"truncate", "fallocate", "create", "mkdir", "mknod", "symlink",
              "link", "unlink", "rmdir", "rename", "chmod", "chown",
              "utimens", "setxattr", "removexattr"}


def _b(s):
    return s.encode("latin-1")


def _parent(path):
    return path.rpartition("/")[0]


def _under(path, top):
    return path == top or path.startswith(top + "/")


class Record:
    def __init__(self, recdir, initial_members):
        with open(os.path.join(recdir, "ops.jsonl"), encoding="utf-8") as f:
            self.ops = [json.loads(line) for line in f if line.strip()]
        with open(os.path.join(recdir, "data.bin"), "rb") as f:
            self.data = f.read()
        for i, op in enumerate(self.ops):
            if op["seq"] != i + 1:
                raise ValueError(f"ops.jsonl line {i + 1} has seq {op['seq']}")
        self.initial = initial_members
        self._units()

    # -- units and their groups ------------------------------------------------
    def _units(self):
        """Cuts the record into units (a metadata operation, or one page of
        a write), each in a group whose units survive as a prefix, and notes
        for each fsync the units it forces: (op index, {group: count})."""
        names = [dict() for _ in self.initial]  # member -> path -> object id
        kinds = {}
        counter = [0]

        def obj(j, path):
            if path not in names[j]:
                counter[0] += 1
                oid = counter[0]
                names[j][path] = oid
                full = os.path.join(self.initial[j], _b(path).decode("utf-8", "surrogateescape"))
                kinds[oid] = "dir" if path == "" or os.path.isdir(full) else "file"
            return names[j][path]

        def new_obj(j, path, kind):
            counter[0] += 1
            names[j][path] = counter[0]
            kinds[counter[0]] = kind
            return counter[0]

        def move(j, src, dst):
            moved = {p: o for p, o in names[j].items() if _under(p, src)}
            for p in [p for p in names[j] if _under(p, dst)]:
                del names[j][p]
            for p in moved:
                del names[j][p]
            for p, o in moved.items():
                names[j][dst + p[len(src):]] = o

        self.units = []          # (op index, group, piece offset, length)
        self.group_len = {}      # group -> units so far (at the end: all)
        self.barriers = []       # (op index, {group: forced count})
        pages = {}               # (member, object) -> set of pages
        last_meta = {}           # (member, object) -> position in its group
        last_entry = {}          # (member, dir path) -> position
        for i, op in enumerate(self.ops):
            j, path, kind = op["member"], op["path"], op["op"]
            if op.get("deleted") or path.startswith("/"):
                continue
            if kind == "write":
                oid = obj(j, path)
                off, end = op["off"], op["off"] + op["len"]
                while off < end:
                    page = off // PAGE
                    stop = min(end, (page + 1) * PAGE)
                    g = ("d", j, oid, page)
                    self.units.append((i, g, off, stop - off))
                    self.group_len[g] = self.group_len.get(g, 0) + 1
                    pages.setdefault((j, oid), set()).add(page)
                    off = stop
                continue
            if kind == "fsync":
                oid = obj(j, path)
                forced = {g: self.group_len[g] for g in
                          (("d", j, oid, p) for p in pages.get((j, oid), ()))}
                pos = last_meta.get((j, oid), -1)
                if kinds[oid] == "dir":
                    pos = max(pos, last_entry.get((j, path), -1))
                if pos >= 0:
                    forced[("m", j)] = pos + 1
                self.barriers.append((i, forced))
                continue
            if kind not in META_KINDS:
                raise ValueError(f"unknown operation in the record: {op}")
            g = ("m", j)
            pos = self.group_len.get(g, 0)
            if kind in ("create", "mkdir", "mknod", "symlink"):
                oid = new_obj(j, path, "dir" if kind == "mkdir" else "file")
            elif kind == "rename":
                if op["flags"] == 2:
                    a = {p: o for p, o in names[j].items() if _under(p, path)}
                    b = {p: o for p, o in names[j].items() if _under(p, op["to"])}
                    for p in list(a) + list(b):
                        names[j].pop(p, None)
                    for p, o in a.items():
                        names[j][op["to"] + p[len(path):]] = o
                    for p, o in b.items():
                        names[j][path + p[len(op["to"]):]] = o
                else:
                    obj(j, path)
                    move(j, path, op["to"])
                oid = names[j].get(op["to"])
            elif kind == "link":
                oid = obj(j, path)
                names[j][op["to"]] = oid
            elif kind in ("unlink", "rmdir"):
                oid = names[j].pop(path, None)
            else:
                oid = obj(j, path)
            # A file's own metadata (its create, truncates, modes) is forced
            # by its fsync; entries changed in a directory (renames, links,
            # unlinks) only by the directory's
            if oid is not None and kind not in ("rename", "link", "unlink", "rmdir"):
                last_meta[(j, oid)] = pos
            for p in (path, op.get("to")):
                if p is not None:
                    last_entry[(j, _parent(p))] = pos
            self.units.append((i, g, 0, 0))
            self.group_len[g] = pos + 1

    # -- states --------------------------------------------------------------------
    def choose(self, point, mode, seed=0):
        """{group: surviving count} for state (point, mode, seed)."""
        total, forced = {}, {}
        for i, g, _, _ in self.units:
            if i >= point:
                break
            total[g] = total.get(g, 0) + 1
        for i, f in self.barriers:
            if i >= point:
                break
            for g, c in f.items():
                forced[g] = max(forced.get(g, 0), c)
        if mode == "prefix":
            return total
        if mode == "drop":
            return {g: forced.get(g, 0) for g in total}
        rng = random.Random(seed * 1000003 + point)
        out = {}
        for g in sorted(total, key=repr):
            lo, hi = forced.get(g, 0), total[g]
            r = rng.random()
            out[g] = hi if r < 0.3 else lo if r < 0.6 else rng.randint(lo, hi)
        return out

    def states(self, rng, budget, randoms_per_barrier=3):
        """The crash states: every prefix; at each barrier round (a run of
        fsyncs) and at the end the "drop" state and random ones.  With a
        budget, a seeded sample of that many (always with the end)."""
        end = len(self.ops)
        out = [(p, "prefix", 0) for p in range(end + 1)]
        rounds = [i for i, op in enumerate(self.ops)
                  if op["op"] == "fsync" and (i == 0 or self.ops[i - 1]["op"] != "fsync")]
        for p in rounds + [end]:
            out.append((p, "drop", 0))
            out += [(p, "random", s) for s in range(randoms_per_barrier)]
        if budget is None or len(out) <= budget:
            return out
        keep = [(end, "prefix", 0), (end, "drop", 0)]
        rest = [s for s in out if s not in keep]
        return keep + sorted(rng.sample(rest, budget - len(keep)))

    # -- applying a state ----------------------------------------------------------
    def apply(self, counts, members, translate=True):
        """Replays the surviving units on `members` (copies of the initial
        member directories, same order).  Operations whose object a dropped
        operation never made are skipped, as on the disk.  translate=False
        writes intent records as recorded (byte-exact replay)."""
        self.translate = translate
        seen = {}
        skipped = 0
        for i, g, off, ln in self.units:
            n = seen.get(g, 0)
            seen[g] = n + 1
            if n >= counts.get(g, 0):
                continue
            try:
                self._apply(self.ops[i], members, off, ln)
            except OSError:
                skipped += 1
        return skipped

    def _apply(self, op, members, off, ln):
        root = os.fsencode(members[op["member"]])
        p = os.path.join(root, _b(op["path"])) if op["path"] else root
        kind = op["op"]
        if kind == "write":
            fd = os.open(p, os.O_WRONLY)
            try:
                start = op["data"] + off - op["off"]
                buf = self.data[start:start + ln]
                if self.translate and op["path"].startswith(".ecfs/intent/") \
                        and off == op["off"]:
                    buf = translate_intent(buf, members)
                os.pwrite(fd, buf, off)
            finally:
                os.close(fd)
        elif kind == "truncate":
            os.truncate(p, op["len"])
        elif kind == "fallocate":
            fd = os.open(p, os.O_WRONLY)
            try:
                _fallocate(fd, op["mode"], op["off"], op["len"])
            finally:
                os.close(fd)
        elif kind == "create":
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT, op["mode"]))
            os.chmod(p, op["mode"])
        elif kind == "mkdir":
            os.mkdir(p, op["mode"])
            os.chmod(p, op["mode"])
        elif kind == "mknod":
            os.mknod(p, op["mode"], op["rdev"])
        elif kind == "symlink":
            os.symlink(_b(op["target"]), p)
        elif kind in ("link", "rename"):
            q = os.path.join(root, _b(op["to"]))
            if kind == "link":
                os.link(p, q)
            elif op["flags"] == 0:
                os.rename(p, q)
            else:
                _renameat2(p, q, op["flags"])
        elif kind == "unlink":
            os.unlink(p)
        elif kind == "rmdir":
            os.rmdir(p)
        elif kind == "chmod":
            os.chmod(p, op["mode"], follow_symlinks=False)
        elif kind == "chown":
            os.chown(p, op["uid"], op["gid"], follow_symlinks=False)
        elif kind == "utimens":
            os.utime(p, ns=(op["atime_ns"], op["mtime_ns"]), follow_symlinks=False)
        elif kind == "setxattr":
            os.setxattr(p, _b(op["name"]), bytes.fromhex(op["hex"]),
                        follow_symlinks=False)
        elif kind == "removexattr":
            os.removexattr(p, _b(op["name"]), follow_symlinks=False)


def _fallocate(fd, mode, off, ln):
    import ecfs_harness as H
    H.fallocate(fd, mode, off, ln)


def _renameat2(p, q, flags):
    import ecfs_harness as H
    H.renameat2(p, q, flags)


_libc = ctypes.CDLL(None, use_errno=True)
STATX_TYPE, STATX_INO, STATX_BTIME = 0x1, 0x100, 0x800
AT_FDCWD, AT_SYMLINK_NOFOLLOW = -100, 0x100


def identity(path):
    """(inode number, birth time in ns; 0 if not kept) of path, as
    src/core/namespace/intent.c records it; None if there is no such object."""
    buf = ctypes.create_string_buffer(256)
    fn = _libc.statx
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint,
                   ctypes.c_void_p]
    if fn(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW,
          STATX_TYPE | STATX_INO | STATX_BTIME, buf) != 0:
        return None
    mask, = struct.unpack_from("<I", buf, 0)
    ino, = struct.unpack_from("<Q", buf, 32)
    sec, nsec = struct.unpack_from("<qI", buf, 80)
    btime = (sec * 1000000000 + nsec) % (1 << 64) if mask & STATX_BTIME else 0
    return ino, btime


def translate_intent(buf, members):
    """buf (a write at the start of an intent record, docs/FORMAT.md
    section 8) with the identities of the record's objects taken on the
    replayed members; other bytes (and torn records) unchanged."""
    head, ident, sumlen = 48, 32, 32
    if len(buf) < head + sumlen or buf[:8] != b"ECFSINT1":
        return buf
    n, l1, l2 = struct.unpack_from("<III", buf, 24)
    names = head + ident * n
    end = names + l1 + l2 + sumlen     # the record; the rest of buf stays
    if n != len(members) or len(buf) < end or \
            hashlib.sha256(buf[:end - sumlen]).digest() != buf[end - sumlen:end]:
        return buf
    paths = (buf[names:names + l1], buf[names + l1:names + l1 + l2])
    out = bytearray(buf[:end])
    for i in range(n):
        for field, path in ((0, paths[0]), (16, paths[1])):
            at = head + ident * i + field
            if struct.unpack_from("<Q", out, at)[0] == 0 or not path:
                continue
            now = identity(os.path.join(os.fsencode(members[i]),
                                        path.lstrip(b"/")))
            if now is not None:
                struct.pack_into("<QQ", out, at, *now)
    out[-sumlen:] = hashlib.sha256(bytes(out[:-sumlen])).digest()
    return bytes(out) + buf[end:]
