#!/usr/bin/env python3
"""Checks that every test docs/runtime-semantics.md cites still exists.

Each guarantee in that document ends with a "Tests:" paragraph (also "Test:" or
"Tests (where):"; a paragraph or a list item, often over several lines, sometimes after
prose in the same item) naming the tests that check it in backticks. Tests get merged and
renamed, and a stale name makes a guarantee look checked when nothing checks it. So every
backticked name from such a marker to the end of its paragraph or list item must exist as
`fn <name>` in some .rs file under crates/ (a plain fn that a test runs on every dispatcher
kind counts too). Prints each missing name with its line and exits 1, else a count.

Only snake_case spans are names (Rust test fns are snake_case): CamelCase types, CONSTANTS
and spans with `(`, `/`, `-` or spaces are code references. A module path
(`phase::gone_direct`) is checked by its last segment, which may also name a module
(`dispatcher::reuse::spin`).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join("docs", "runtime-semantics.md")
# A line that starts a new paragraph or list item (a blank line ends one too).
BREAK = re.compile(r"\s*(?:[-*+]|\d+\.)\s|#|\|")
MARKER = re.compile(r"\bTests?(?:\s*\([^)]*\))?:")
NAME = re.compile(r"[a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*")


def definitions():
    """Names of every fn, and of every module (mod item, file, directory), under crates/."""
    fns, mods = set(), set()
    for top, dirs, files in os.walk(os.path.join(ROOT, "crates")):
        dirs[:] = [d for d in dirs if d != "target" and not d.startswith(".")]
        mods.update(dirs)
        for f in files:
            if f.endswith(".rs"):
                mods.add(f[:-3])
                text = open(os.path.join(top, f), encoding="utf-8", errors="replace").read()
                fns.update(re.findall(r"\bfn\s+([A-Za-z_]\w*)", text))
                mods.update(re.findall(r"\bmod\s+([A-Za-z_]\w*)", text))
    return fns, mods


def blocks(lines):
    """(first line number, text) of each paragraph or list item."""
    start, cur = 0, []
    for number, line in enumerate(lines, 1):
        if not line.strip() or BREAK.match(line):
            if cur:
                yield start, "\n".join(cur)
            start, cur = number, ([line] if line.strip() else [])
        else:
            start, cur = (start if cur else number), cur + [line]
    if cur:
        yield start, "\n".join(cur)


def main():
    lines = open(os.path.join(ROOT, DOC), encoding="utf-8").read().split("\n")
    fns, mods = definitions()
    checked, missing = 0, []
    for start, text in blocks(lines):
        marker = MARKER.search(text)
        if not marker:
            continue
        for span in re.finditer(r"`([^`]+)`", text[marker.end():]):
            if not NAME.fullmatch(name := span.group(1)):
                continue
            checked += 1
            last = name.split("::")[-1]
            if last not in fns and not ("::" in name and last in mods):
                line = start + text.count("\n", 0, marker.end() + span.start())
                missing.append(f"{DOC}:{line}: `{name}` is not a fn under crates/")
    print("\n".join(missing) or f"doc_tests: all {checked} test names cited in {DOC} exist")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
