#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the shape of the source tree (test 'tree', suite 'unit').

  - src/ holds folders only: every source file lives in the folder of its
    layer or program (src/core, src/fs, src/fsck, src/bench), and src/core/
    holds folders only, one per layer;
  - the layers include downwards only: a file of src/core/LAYER includes
    headers of its own folder and of the layers before it in CORE_LAYERS,
    src/fsck includes the core, src/fs the core and src/fsck; no file in
    src/fs includes a core header named *_internal.h;
  - no file in src/ is longer than MAX_FILE_LINES lines;
  - no function in src/, lib/ or tests/ is longer than 100 lines;
  - no include cycle between modules (a module is a .c and its .h; a
    _internal.h header belongs to its module);
  - every repository path named in README.md, docs/, man/ and in the
    comments of src/ and lib/ exists.

Prints one line per finding and exits 1 if there is any.
"""
import os
import re
import subprocess
import sys

MAX_FUNCTION_LINES = 100
MAX_FILE_LINES = 1000
# src/core/'s folders, lowest layer first (src/core/meson.build says what
# each holds).
CORE_LAYERS = ["base", "format", "member", "volume", "data", "namespace"]
# The programs' folders above the core, each above the ones before it.
PROGRAM_LAYERS = ["fsck", "fs"]
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))


def tracked(*patterns):
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--cached", "--others",
                          "--exclude-standard", *patterns],
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if os.path.exists(os.path.join(ROOT, f))]


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def loose_sources():
    found = [f"{f}: source file at the top of src/ (put it in its layer's folder)"
             for f in tracked("src/*.c", "src/*.h") if f.count("/") == 1]
    found += [f"{f}: source file at the top of src/core/ (put it in its layer's folder)"
              for f in tracked("src/core/*.c", "src/core/*.h") if f.count("/") == 2]
    return found


def long_files():
    found = []
    for path in tracked("src/*.[ch]"):
        lines = read(path).count("\n")
        if lines > MAX_FILE_LINES:
            found.append(f"{path}: {lines} lines (at most {MAX_FILE_LINES}: split it by concern)")
    return found


def layer_rank(path):
    """The rank of the layer a file of src/ belongs to (None outside the
    ordered layers): the core's folders in order, then fsck, then fs."""
    parts = path.split("/")
    if len(parts) >= 4 and parts[:2] == ["src", "core"] and parts[2] in CORE_LAYERS:
        return CORE_LAYERS.index(parts[2])
    if len(parts) >= 3 and parts[0] == "src" and parts[1] in PROGRAM_LAYERS:
        return len(CORE_LAYERS) + PROGRAM_LAYERS.index(parts[1])
    return None


def layer_order():
    """Each include resolved by the header's name to the folder that holds
    it: a header of a higher layer is a finding."""
    sources = tracked("src/*.[ch]")
    home = {}
    for path in sources:
        if path.endswith(".h") and layer_rank(path) is not None:
            home.setdefault(os.path.basename(path), path)
    found = []
    for path in sources:
        rank = layer_rank(path)
        if rank is None:
            continue
        for inc in re.findall(r'^#\s*include\s+"([^"]+)"', read(path), re.M):
            target = home.get(os.path.basename(inc))
            if target is None:
                continue
            trank = layer_rank(target)
            if trank > rank:
                found.append(f"{path}: includes {target}, a layer above its own")
            elif (target.endswith("_internal.h") and target.startswith("src/core/")
                  and path.startswith("src/fs/")):
                found.append(f"{path}: includes {target}, which is the core's own")
            elif (target.endswith("_private.h")
                  and os.path.dirname(target) != os.path.dirname(path)):
                found.append(f"{path}: includes {target}, private to its folder")
    return found


def long_functions():
    """Functions whose body (from the '{' in column 0 to the '}' in column 0)
    spans more than MAX_FUNCTION_LINES lines: the project's style puts both
    braces of a function definition in column 0."""
    found = []
    for path in tracked("src/*.c", "lib/*.c", "tests/*.c"):
        lines = read(path).split("\n")
        i = 0
        while i < len(lines):
            if lines[i].startswith("{") and i > 0:
                end = i + 1
                while end < len(lines) and not lines[end].startswith("}"):
                    end += 1
                length = end - i + 1
                if length > MAX_FUNCTION_LINES:
                    head = " ".join(lines[max(0, i - 3):i])
                    names = re.findall(r"(\w+)\s*\(", head)
                    name = names[-1] if names else "?"
                    found.append(f"{path}:{i + 1}: {name} is {length} lines "
                                 f"(at most {MAX_FUNCTION_LINES})")
                i = end
            i += 1
    return found


def module_of(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    return re.sub(r"_internal$", "", stem)


def include_cycles():
    edges = {}
    for path in tracked("src/*.[ch]", "lib/*.[ch]"):
        mod = module_of(path)
        for inc in re.findall(r'^#\s*include\s+"([^"]+)"', read(path), re.M):
            target = module_of(inc)
            if target != mod:
                edges.setdefault(mod, set()).add(target)
    # Tarjan's strongly connected components, iteratively.
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    cycles.append(sorted(comp))
    found = []
    for comp in cycles:
        links = ", ".join(f"{a} -> {b}" for a in comp
                          for b in sorted(edges[a] & set(comp)))
        found.append(f"include cycle between {', '.join(comp)}: {links}")
    return found


PATH_RE = re.compile(r"(?<![\w./-])((?:src|lib|tests|scripts|docs|man)/[\w./-]*\w)")


def dangling_references():
    found = []
    docs = tracked("README.md", "docs/*.md", "man/*")
    code = tracked("src/*.[ch]", "lib/*.[ch]")
    for path in docs + code:
        text = read(path)
        for m in PATH_RE.finditer(text):
            ref = m.group(1)
            if "*" in ref or "{" in ref or "XXXX" in ref:
                continue
            if not os.path.exists(os.path.join(ROOT, ref)):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path}:{line}: names {ref}, which does not exist")
        if "../shared" in text:
            found.append(f"{path}: points outside the repository (../shared)")
    return found


def main():
    findings = loose_sources() + long_files() + layer_order() + long_functions() + include_cycles() + dangling_references()
    for f in findings:
        print(f)
    print(f"check-tree: {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
