#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon's -o options as its table defines them
(src/core/volume/volume_options.c, printed by print_options) against what
man/ecfs.8, README.md and docs/TUNING.md say: the same names, the same
defaults.  The user's options are in the man page and the README, the
tune.* switches in docs/TUNING.md and in man/ecfs-fsck.8's --tune, which
takes them too.  Needs no mount.

usage: test_options.py PRINT_OPTIONS MAN README TUNING FSCK_MAN [unittest args]"""
import re
import subprocess
import sys
import unittest

PRINT_OPTIONS, MAN, README, TUNING, FSCK_MAN = sys.argv[1:6]


def option_table():
    """{name: default or None} of the user's options, and of the tune.*
    switches."""
    out = subprocess.run([PRINT_OPTIONS], capture_output=True, text=True,
                         check=True).stdout
    user, tuning = {}, {}
    for line in out.splitlines():
        name, _value, default, _superblock, kind = line.split("\t")
        (tuning if kind == "tuning" else user)[name] = None if default == "-" else default
    return user, tuning


def man_text(line):
    """A man page line as it reads: no macro, no quotes, no font escapes."""
    if line.startswith("."):
        line = line.split(None, 1)[1] if " " in line else ""
        line = line.replace('"', "")
    line = re.sub(r"\\f[BIRP]", "", line)
    return line.replace("\\-", "-").replace("\\ ", " ")


def man_options(path):
    """{name: the text of its entry} of the options in man/ecfs.8's
    sections "ecfs options" and "Kernel cache options"."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    entries, section, names = {}, None, []
    for i, line in enumerate(lines):
        if line.startswith((".SS ", ".SH ")):
            section, names = line[4:].strip(), []
        elif section not in ("ecfs options", "Kernel cache options"):
            continue
        elif line == ".TP":
            names = re.findall(r"\\-o ([a-z_.]+)", lines[i + 1])
            for n in names:
                entries[n] = ""
        else:
            for n in names:
                entries[n] += " " + man_text(line)
    return entries


def markdown_table(path, first_cell):
    """{name: default or None} of the rows of the first table in path whose
    first cell matches first_cell (a regex with the name as its group), its
    second cell being the default."""
    rows = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("|"):
                if rows:
                    break
                continue
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            m = re.match(first_cell, cells[0]) if len(cells) >= 3 else None
            if m:
                rows[m.group(1)] = cells[1].strip("`") or None
    return rows


def says_default(text, default):
    """Whether an entry's text gives default as the default."""
    d = re.escape(default)
    end = r"(?!\w)(?!\.\d)"
    return bool(re.search(r"\b[Dd]efault:?\s+" + d + end, text) or
                re.search(r"(?<![\w.])" + d + r"\s+\((the )?default\)", text))


class OptionsTest(unittest.TestCase):
    def setUp(self):
        self.user, self.tuning = option_table()

    def test_table(self):
        self.assertGreater(len(self.user), 10)
        self.assertTrue(self.tuning)
        for name in self.tuning:
            self.assertTrue(name.startswith("tune."), name)
        for name in self.user:
            self.assertFalse(name.startswith("tune."), name)

    def test_man_page(self):
        entries = man_options(MAN)
        documented = {n for n in entries if not n.endswith(".")}
        self.assertEqual(documented, set(self.user),
                         "man/ecfs.8 and the option table name different options")
        self.assertIn("tune.", entries, "man/ecfs.8 does not point to the tune.* switches")
        for name, default in self.user.items():
            if default is not None:
                self.assertTrue(says_default(entries[name], default),
                                f"man/ecfs.8: -o {name} does not say its default is "
                                f"{default}: {entries[name]}")

    def test_readme(self):
        rows = markdown_table(README, r"`-o ([a-z_]+)")
        self.assertEqual(set(rows), set(self.user),
                         "README.md's option table and the option table name different "
                         "options")
        for name, default in self.user.items():
            self.assertEqual(rows[name], default, f"README.md: the default of -o {name}")
        with open(README, encoding="utf-8") as f:
            readme = f.read()
        for name in self.tuning:
            self.assertNotIn(name, readme, "README.md names a tuning switch")

    def test_tuning_page(self):
        rows = markdown_table(TUNING, r"`(tune\.[a-z_]+)")
        self.assertEqual(rows, self.tuning,
                         "docs/TUNING.md and the option table disagree on the tune.* "
                         "switches or their defaults")

    def test_fsck_tune(self):
        with open(FSCK_MAN, encoding="utf-8") as f:
            lines = f.read().split("\n.TP\n")
        entry = [e for e in lines if e.startswith(".BI \\-\\-tune=")]
        self.assertEqual(len(entry), 1, "man/ecfs-fsck.8 has no --tune entry")
        text = " ".join(man_text(line) for line in entry[0].splitlines())
        for name in self.tuning:
            self.assertRegex(text, r"\b" + re.escape(name[len("tune."):]) + r"\b",
                             f"man/ecfs-fsck.8's --tune does not name {name}")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[6:])
