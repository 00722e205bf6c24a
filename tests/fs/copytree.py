# SPDX-License-Identifier: MIT
"""A tree that copying tools must carry whole, and its full description.

build() makes, beneath a directory, what `rsync -aHAX` and `cp -a` promise
to copy: regular files (empty, small, several MiB, sparse, odd names up to
255 bytes), modes with setuid, setgid and sticky bits, owners, times to the
nanosecond on files, directories and symlinks, hard links across
directories, symlinks (relative, absolute, dangling, to a directory),
a fifo and a device node, user, trusted and security xattrs (a file
capability among them) and POSIX ACLs (access and default ones, and what a
default ACL gave the objects made beneath it).

describe() is every such fact of a tree, keyed by relative path, and
differences() compares two descriptions.  Hard links are described
twice: each file's link count, and the groups of names that share an inode
(as `links`), so a copy that splits a hard link is caught either way.

Needs root (owners, device nodes, trusted.* and capabilities) and a
filesystem that keeps ACLs, xattrs and nanosecond times.
"""

import hashlib
import os
import random
import stat
import subprocess

# security.capability, version 2: effective, CAP_NET_BIND_SERVICE permitted
CAPABILITY = (bytes.fromhex("01000002") + (1 << 10).to_bytes(4, "little")
              + bytes(12))
OWNERS = [(0, 0), (1234, 5678), (65534, 65534), (0, 4242)]


def _data(n, seed):
    return random.Random(seed).randbytes(n)


def _put(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def _acl(path, spec, default=False):
    cmd = ["setfacl"] + (["-d"] if default else []) + ["-m", spec, path]
    subprocess.run(cmd, check=True)


def build(root):
    """Fills root (an existing, empty directory)."""
    p = lambda rel: os.path.join(root, rel)  # noqa: E731
    for d, mode in [("docs", 0o755), ("docs/deep/er/still", 0o750),
                    ("private", 0o700), ("shared", 0o2775), ("tmp", 0o1777),
                    ("acl", 0o770), ("acl/inherit", 0o755), ("empty", 0o555)]:
        os.makedirs(p(d), exist_ok=True)
    # inherit first: what is made in it takes its default ACL
    _acl(p("acl/inherit"), "u:1234:rwx,g:4321:rx", default=True)
    _acl(p("acl/inherit"), "u:1234:rwx")
    files = {
        "docs/empty": (b"", 0o644),
        "docs/small.txt": (b"hello, ecfs\n", 0o644),
        "docs/big.bin": (_data(3 << 20 | 12345, 1), 0o640),
        "docs/deep/er/still/leaf": (_data(70000, 2), 0o600),
        "private/secret": (b"secret", 0o600),
        "shared/setuid": (b"#!/bin/sh\n", 0o4755),
        "shared/setgid": (b"#!/bin/sh\n", 0o2755),
        "shared/none": (b"nothing", 0o000),
        "tmp/anyone": (b"sticky dir", 0o666),
        "acl/inherit/made": (b"inherits", 0o666),
        "acl/file": (_data(5000, 3), 0o640),
        "cap/tool": (b"\x7fELF not really", 0o755),
        "names/" + "n" * 255: (b"longest name", 0o644),
        "names/sp ace ünï\ncode": (b"odd name", 0o644),
    }
    os.makedirs(p("cap"))
    os.makedirs(p("names"))
    for rel, (data, mode) in files.items():
        _put(p(rel), data, mode)
    os.mkdir(p("acl/inherit/sub"))
    # sparse: a hole between two runs of data
    with open(p("docs/sparse"), "wb") as f:
        f.write(b"head")
        f.seek(2 << 20)
        f.write(b"tail")
    # hard links: three names in two directories, and a pair
    os.link(p("docs/small.txt"), p("docs/deep/small-link"))
    os.link(p("docs/small.txt"), p("private/small-link"))
    os.link(p("acl/file"), p("acl/file-link"))
    os.symlink("small.txt", p("docs/rel-link"))
    os.symlink("/etc/hostname", p("docs/abs-link"))
    os.symlink("../nowhere/at/all", p("docs/dangling"))
    os.symlink("deep", p("docs/dir-link"))
    os.mkfifo(p("docs/fifo"), 0o620)
    os.mknod(p("docs/null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
    # owners, then the attributes a chown would clear
    for i, rel in enumerate(["docs/small.txt", "private", "private/secret",
                             "docs/rel-link", "docs/fifo", "acl/file",
                             "shared/setgid", "docs/deep"]):
        os.chown(p(rel), *OWNERS[i % len(OWNERS)], follow_symlinks=False)
    os.chmod(p("shared/setgid"), 0o2755)
    os.chown(p("shared"), 0, 4242)
    os.chmod(p("shared"), 0o2775)
    # xattrs of every kept namespace, and ACLs
    os.setxattr(p("docs/small.txt"), "user.text", b"plain")
    os.setxattr(p("docs/big.bin"), "user.binary", bytes(range(256)))
    os.setxattr(p("docs/big.bin"), "user.empty", b"")
    os.setxattr(p("docs"), "user.on-dir", b"dir value")
    os.setxattr(p("private/secret"), "trusted.note", b"root only")
    os.setxattr(p("acl/file"), "security.ecfs_test", b"security ns")
    os.setxattr(p("cap/tool"), "security.capability", CAPABILITY)
    _acl(p("acl/file"), "u:1234:rw,g:4321:r,m::rw")
    _acl(p("acl"), "u:65534:rx,g:4242:rwx")
    _acl(p("acl"), "u:65534:rx", default=True)
    # times last, deepest first, with nanoseconds
    rels = []
    for dirpath, dirs, names in os.walk(root):
        for name in dirs + names:
            rels.append(os.path.relpath(os.path.join(dirpath, name), root))
    for i, rel in enumerate(sorted(rels, key=lambda r: -r.count("/"))):
        ns = 1_500_000_000_000_000_000 + i * 1_000_000_123
        os.utime(p(rel), ns=(ns + 7, ns), follow_symlinks=False)


def _xattrs(path):
    out = {}
    for name in sorted(os.listxattr(path, follow_symlinks=False)):
        if name.startswith("user.ecfs."):
            continue
        value = os.getxattr(path, name, follow_symlinks=False)
        out[name] = value if len(value) <= 64 else hashlib.sha256(value).hexdigest()
    return out


def describe(root, top=True):
    """Every fact of the tree below root that a full copy keeps."""
    out, inodes = {}, {}
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + names):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            e = {"mode": oct(st.st_mode), "uid": st.st_uid, "gid": st.st_gid,
                 "mtime_ns": st.st_mtime_ns}
            if stat.S_ISLNK(st.st_mode):
                e["target"] = os.readlink(full)
            else:
                e["xattrs"] = _xattrs(full)
            if not stat.S_ISDIR(st.st_mode):
                e["nlink"] = st.st_nlink
                inodes.setdefault(st.st_ino, []).append(rel)
            if stat.S_ISREG(st.st_mode):
                e["size"] = st.st_size
                with open(full, "rb") as f:
                    e["sha256"] = hashlib.sha256(f.read()).hexdigest()
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                e["rdev"] = st.st_rdev
            out[rel] = e
    out["links"] = sorted(sorted(g) for g in inodes.values() if len(g) > 1)
    return out


def differences(got, want, skip=()):
    """Readable lines for every fact of want that got does not match
    (keys in skip left out)."""
    lines = []
    for rel in sorted(set(got) | set(want)):
        a, b = got.get(rel), want.get(rel)
        if isinstance(a, dict) and isinstance(b, dict):
            a = {k: v for k, v in a.items() if k not in skip}
            b = {k: v for k, v in b.items() if k not in skip}
        if rel in skip or a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                if a.get(k) != b.get(k):
                    lines.append(f"{rel!r} {k}: copy {a.get(k)!r}, source {b.get(k)!r}")
        else:
            lines.append(f"{rel!r}: copy {a!r}, source {b!r}")
    return lines
