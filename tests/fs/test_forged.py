# SPDX-License-Identifier: MIT
"""Forged chunk headers: on one member, a chunk header rewritten with
fields no chunk of the volume can hold, sealed with a good SHA-256 (the
header's sum is unkeyed: anyone who can write a member can seal one).
Each is an erasure of that chunk: the daemon stays up, every file reads
back exact with its true size, the log names each refused chunk once
(not once per read), ecfs-fsck -n reports it and -y rewrites it.

The forgeries, each on one member of a 4+2 volume:
- k=1, m=63: a code any header may name (k+m <= 64) but not this
  volume's (k+m = n = 6);
- size 2^63: no file of the volume can be that long (a chunk offset of it
  does not fit an off_t), on member 0, whose header a reader would take
  first among equals;
- a strip size of 128 MiB: valid for the code, above the largest strip the
  volume allows its files (64 MiB, its superblock's being smaller).

Started by meson as `python3 test_forged.py ECFS ECFS_FSCK [unittest args]`."""

import hashlib
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ecfs_harness as H  # noqa: E402

K, M = 4, 2
# rs-cauchy takes k=1, m=63: that forgery is refused for the volume's
# sake, not the code's
OPTS = f"k={K},m={M},code=rs-cauchy"
FSCK = None
DATA = {"a": H.pattern(300000, 1), "b": H.pattern(250000, 2), "c": H.pattern(70000, 3)}

# The chunk header of format versions 2 and 3 (docs/FORMAT.md section 4.1):
# name, offset, struct format; little-endian; sealed by the SHA-256 of
# the bytes before the last 32.
HEADER_SIZE = 192
FIELDS = [
    ("magic", 0, "8s"), ("version", 8, "I"), ("header_size", 12, "I"),
    ("volume_uuid", 16, "16s"), ("file_id", 32, "16s"), ("position", 48, "I"),
    ("rotation", 52, "I"), ("kind", 56, "I"), ("k", 60, "H"), ("m", 62, "H"),
    ("w", 64, "H"), ("checksum", 66, "H"), ("packet_size", 72, "Q"),
    ("strip_size", 80, "Q"), ("size", 88, "Q"), ("generation", 96, "Q"),
    ("missed", 104, "Q"), ("record_size", 112, "I"), ("group_size", 116, "I"),
    ("durable", 120, "Q"),
]


def decode_header(b):
    assert b[:8] == b"ECFSCHNK" and struct.unpack_from("<I", b, 8)[0] in (2, 3), b[:16]
    assert hashlib.sha256(b[:HEADER_SIZE - 32]).digest() == b[HEADER_SIZE - 32:HEADER_SIZE]
    return {name: struct.unpack_from("<" + fmt, b, off)[0] for name, off, fmt in FIELDS}


def encode_header(h):
    b = bytearray(HEADER_SIZE)
    for name, off, fmt in FIELDS:
        struct.pack_into("<" + fmt, b, off, h[name])
    b[HEADER_SIZE - 32:] = hashlib.sha256(bytes(b[:HEADER_SIZE - 32])).digest()
    return bytes(b)


def read_header(path):
    with open(path, "rb") as f:
        return decode_header(f.read(HEADER_SIZE))


def forge(path, **fields):
    """Rewrites the header of the chunk at path with fields changed, sealed."""
    h = read_header(path)
    h.update(fields)
    with open(path, "r+b") as f:
        f.write(encode_header(h))


# which file's chunk on which member, forged how, and what the log says
FORGERIES = [
    ("a", 1, {"k": 1, "m": 63}, "k and m are not the volume's"),
    ("b", 0, {"size": 1 << 63}, "size out of range"),
    ("c", 2, {"strip_size": 128 << 20}, "strip size is above the volume's largest"),
]


class ForgedTest(H.MountedCase):
    def fsck(self, v, *args):
        return subprocess.run([FSCK, "--no-progress", *args, ":".join(v.members)],
                              capture_output=True, text=True, timeout=120)

    def read_bounded(self, path, want):
        """The file's bytes, read in pieces from one open, never more than
        one byte past what it should hold (a forged size must not make the
        read endless); twice, to see that the log does not grow per read."""
        with open(path, "rb") as f:
            for _ in range(2):
                f.seek(0)
                got = b""
                while len(got) <= len(want):
                    piece = f.read(min(65536, len(want) + 1 - len(got)))
                    if not piece:
                        break
                    got += piece
                if got != want:
                    self.fail(f"{path}: {H.describe_mismatch(got, want)}")

    def test_forged_headers(self):
        v = self.volume(K + M)
        mnt = self.mount(v, OPTS)
        for name, data in DATA.items():
            H.write_file(os.path.join(mnt, name), data, fsync=True)
        self.assert_clean_unmount(v)
        for name, mb, fields, _ in FORGERIES:
            forge(v.chunk_path(mb, name), **fields)

        mnt = self.mount(v, OPTS)
        for name, data in DATA.items():
            path = os.path.join(mnt, name)
            self.assertEqual(os.stat(path).st_size, len(data), name)
            self.read_bounded(path, data)
            self.assertEqual(os.stat(path).st_size, len(data), name)
        self.assertTrue(v.alive(), "daemon died:\n" + v.log())
        out = v.output()
        for name, mb, _, why in FORGERIES:
            lines = [l for l in out.splitlines()
                     if re.search(rf"\b{name}: the chunk on member {mb} \(.*\) is refused: ", l)]
            self.assertEqual(len(lines), 1, f"{name} on member {mb}:\n{out}")
            self.assertIn(why, lines[0])
        self.assertEqual(out.count("is refused"), len(FORGERIES), out)
        self.assert_clean_unmount(v)

        r = self.fsck(v, "-n")
        self.assertNotEqual(r.returncode, 0, "fsck -n found nothing:\n" + r.stdout)
        for name, mb, _, _ in FORGERIES:
            self.assertRegex(r.stdout, rf"chunk-header: /?{name}: member {mb} ", r.stdout)
        r = self.fsck(v, "-y")
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        r = self.fsck(v, "-n")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for name, mb, _, _ in FORGERIES:
            h = read_header(v.chunk_path(mb, name))
            self.assertEqual((h["k"], h["m"], h["size"], h["strip_size"]),
                             (K, M, len(DATA[name]), 65536), f"{name} on member {mb}")

        mnt = self.mount(v, OPTS)
        for name, data in DATA.items():
            self.assert_exact(os.path.join(mnt, name), data, name)
        self.assertNotIn("is refused", v.output())
        self.assert_clean_unmount(v)


if __name__ == "__main__":
    FSCK = H.take_fsck_argument()
    sys.exit(H.main())
