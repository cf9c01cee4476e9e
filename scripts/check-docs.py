#!/usr/bin/env python3
"""check-docs.py: the rules syntax is written the same everywhere users read it.

Every shipped rules file (conf/layouts/*.rules) opens with the syntax of
rules files, between its line "# Syntax ..." and its line "# * keep: ...".
That block must be the same in every file, and the README's "Writing rules"
section must hold it too, as a code block of the same lines without their
"# " (so a change of the syntax is made in all of them or fails `make test`).
Prints what differs; exit status 1 if anything does.
"""
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def syntax_block(path):
    """The header's syntax lines, without their '#' and one space."""
    lines = open(path, encoding="utf-8").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("# Syntax")), None)
    if start is None:
        return None
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("# * keep:")), None)
    if end is None:
        return None
    return [l[2:] if l.startswith("# ") else l[1:] for l in lines[start:end + 1]]


def readme_has(block, readme):
    """Whether the README holds block as consecutive lines."""
    n = len(block)
    return any(readme[i:i + n] == block for i in range(len(readme) - n + 1))


def main():
    failed = 0
    files = sorted(glob.glob(os.path.join(ROOT, "conf", "layouts", "*.rules")))
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().splitlines()
    first = None
    for path in files:
        name = os.path.relpath(path, ROOT)
        block = syntax_block(path)
        if block is None:
            print("check-docs: %s has no '# Syntax' ... '# * keep:' header" % name)
            failed += 1
            continue
        if first is None:
            first = (name, block)
            if not readme_has(block, readme):
                print("check-docs: README.md's 'Writing rules' lacks %s's syntax header" % name)
                failed += 1
        elif block != first[1]:
            print("check-docs: the syntax header of %s differs from %s's" % (name, first[0]))
            failed += 1
        else:
            print("ok   %s: the same syntax header as %s" % (name, first[0]))
    if not files:
        print("check-docs: no conf/layouts/*.rules")
        failed += 1
    if first and failed == 0:
        print("ok   README.md's 'Writing rules': the syntax header of %s" % first[0])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
