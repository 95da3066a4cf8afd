#!/usr/bin/env python3
"""Prints the import graph of crates/cohort/src as layers, and every import that goes upward.

Reads every `crate::...` path outside comments (in `use` lines and inline paths alike), maps
each file and each imported path to its top-level module, and places the modules in the layers
of docs/internals.md ("Module layers"). Run from the repository root:

    python3 scripts/import-graph.py            # layers, edges, upward imports
    python3 scripts/import-graph.py --upward   # only the upward imports (exit 1 if any)
"""
import os
import re
import sys
from collections import defaultdict

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "cohort", "src")

# Bottom to top; a module may import from its own layer or below.
LAYERS = [
    ("leaves", ["message", "error", "defaults", "sync", "panic"]),
    ("queue", ["queue"]),
    ("agents and mailboxes", ["agent", "mailbox", "trace", "stats"]),
    ("dispatchers", ["dispatcher"]),
    ("runtime", ["runtime", "timer", "mchain"]),
    ("supervision", ["supervision"]),
    ("test kit", ["testing"]),
]
LAYER_OF = {m: i for i, (_, ms) in enumerate(LAYERS) for m in ms}

PATH = re.compile(r"\bcrate::([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*(?:::\{[^}]*\})?)")


def module_of(rel):
    """Top-level module of a source file (`lib` for lib.rs)."""
    parts = rel.split(os.sep)
    return "lib" if parts == ["lib.rs"] else parts[0].removesuffix(".rs")


def code_lines(text):
    """The file's lines with comments removed (`//` to end of line; block comments)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    for n, line in enumerate(text.splitlines(), 1):
        yield n, re.sub(r"//.*", "", line)


def main():
    upward_only = "--upward" in sys.argv[1:]
    edges = defaultdict(set)  # module -> imported modules
    upward = []  # (file, line, path, from, to)
    for root, _, files in os.walk(SRC):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            full = os.path.join(root, f)
            rel = os.path.relpath(full, SRC)
            src = module_of(rel)
            with open(full, encoding="utf-8") as fh:
                text = fh.read()
            seen = set()
            for n, line in code_lines(text):
                for m in PATH.finditer(line):
                    path = m.group(1)
                    dst = path.split("::")[0]
                    path = re.sub(r"\s+", " ", path)
                    if dst not in LAYER_OF or dst == src:
                        continue  # a root re-export (`crate::Mbox`) or a self-import
                    edges[src].add(dst)
                    if src in LAYER_OF and LAYER_OF[dst] > LAYER_OF[src] and (rel, n, dst) not in seen:
                        seen.add((rel, n, dst))
                        upward.append((rel, n, path, src, dst))
    if not upward_only:
        print("Layers, bottom to top (a module may import from its own layer or below):")
        for i, (name, ms) in enumerate(LAYERS, 1):
            print(f"  {i}. {name}: {', '.join(ms)}")
        print()
        print("Imports by module (same layer or below; ^ marks an upward one):")
        for i, (_, ms) in reversed(list(enumerate(LAYERS))):
            for m in ms:
                deps = sorted(edges.get(m, ()), key=lambda d: (LAYER_OF[d], d))
                shown = [d + ("^" if LAYER_OF[d] > i else "") for d in deps]
                print(f"  [{i + 1}] {m:<10} -> {', '.join(shown) if shown else '(none)'}")
        print()
    print(f"Upward imports ({len(upward)}):")
    for rel, n, path, src, dst in sorted(upward):
        print(f"  {rel}:{n}: crate::{path}  ({src} [{LAYER_OF[src] + 1}] -> {dst} [{LAYER_OF[dst] + 1}])")
    if upward_only and upward:
        sys.exit(1)


if __name__ == "__main__":
    main()
