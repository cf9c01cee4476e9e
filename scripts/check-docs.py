#!/usr/bin/env python3
"""check-docs.py: the docs hold together.

1. The rules syntax is written the same everywhere users read it. Every
   shipped rules file (conf/layouts/*.rules) opens with the syntax of rules
   files, between its line "# Syntax ..." and its line "# * keep: ...". That
   block must be the same in every file, and the "Writing rules" section of
   docs/key-layouts.md must hold it too, as a code block of the same lines
   without their "# " (so a change of the syntax is made in all of them or
   fails `make test`).
2. Every link resolves inside the repository. In README.md and every
   docs/*.md, each markdown link [text](target) whose target is not
   http(s):// or mailto: must name a file or folder of the repository
   (resolved from the linking file's folder, never escaping the repository
   root), and a #anchor must be the GitHub slug of a heading of the target
   markdown file (of the linking file itself for a bare #anchor).

Prints one "ok" or "FAIL" line per file checked, and what fails; exit
status 1 if anything does.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES_DOC = os.path.join("docs", "key-layouts.md")


# ---- 1. the rules syntax ----

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


def doc_has(block, doc):
    """Whether doc holds block as consecutive lines."""
    n = len(block)
    return any(doc[i:i + n] == block for i in range(len(doc) - n + 1))


def writing_rules_section(lines):
    """The lines of the "Writing rules" section (its heading to the next
    heading of the same or a higher level), or [] without one."""
    start = level = None
    for i, line in enumerate(lines):
        m = re.match(r"(#{1,6})\s+(.*)", line)
        if not m:
            continue
        if start is None and m.group(2).strip().lower() == "writing rules":
            start, level = i, len(m.group(1))
        elif start is not None and len(m.group(1)) <= level:
            return lines[start:i]
    return lines[start:] if start is not None else []


def check_rules_syntax():
    failed = 0
    files = sorted(glob.glob(os.path.join(ROOT, "conf", "layouts", "*.rules")))
    path = os.path.join(ROOT, RULES_DOC)
    if not os.path.exists(path):
        print("FAIL %s: missing (it holds the rules syntax in 'Writing rules')" % RULES_DOC)
        return 1
    section = writing_rules_section(open(path, encoding="utf-8").read().splitlines())
    first = None
    for path in files:
        name = os.path.relpath(path, ROOT)
        block = syntax_block(path)
        if block is None:
            print("FAIL %s: no '# Syntax' ... '# * keep:' header" % name)
            failed += 1
            continue
        if first is None:
            first = (name, block)
            if not doc_has(block, section):
                print("FAIL %s's 'Writing rules' lacks %s's syntax header" % (RULES_DOC, name))
                failed += 1
        elif block != first[1]:
            print("FAIL %s: its syntax header differs from %s's" % (name, first[0]))
            failed += 1
        else:
            print("ok   %s: the same syntax header as %s" % (name, first[0]))
    if not files:
        print("FAIL conf/layouts/*.rules: none")
        failed += 1
    if first and failed == 0:
        print("ok   %s's 'Writing rules': the syntax header of %s" % (RULES_DOC, first[0]))
    return failed


# ---- 2. links ----

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) or ![alt](target); text may hold brackets one level deep
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SPAN_IN_PARAGRAPH = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.S)


def prose_lines(text):
    """(line number, line) of every line outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield n, line


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # links: their text
    text = CODE_SPAN.sub(lambda m: m.group(2), text)             # code: its content
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)                         # punctuation but - and _
    return text.replace(" ", "-")


anchors_cache = {}


def anchors(path):
    """The anchors of a markdown file's headings (duplicates numbered)."""
    if path not in anchors_cache:
        seen, found = {}, set()
        for _, line in prose_lines(open(path, encoding="utf-8").read()):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            if s in seen:
                seen[s] += 1
                s = "%s-%d" % (s, seen[s])
            else:
                seen[s] = 0
            found.add(s)
        anchors_cache[path] = found
    return anchors_cache[path]


def links(text):
    """(line number, target) of every markdown link outside code: fenced
    blocks, and code spans, which may run over lines of a paragraph."""
    lines = text.splitlines()
    kept = dict(prose_lines(text))
    prose = "\n".join(kept.get(n, "") for n in range(1, len(lines) + 1))
    prose = SPAN_IN_PARAGRAPH.sub(
        lambda m: m.group(1) + re.sub(r"[^\n]", "x", m.group(2)) + m.group(1), prose)
    for n, line in enumerate(prose.split("\n"), 1):
        for m in LINK.finditer(line):
            yield n, m.group(1)


def check_link(doc, target):
    """None when target, linked from doc (a path under ROOT), resolves; else why not."""
    if re.match(r"(https?:|mailto:)", target, re.I):
        return None
    if not target:
        return "an empty target"
    if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
        return "a link of another scheme: only http(s), mailto and repository paths"
    path, _, anchor = target.partition("#")
    if path:
        base = ROOT if path.startswith("/") else os.path.dirname(doc)
        dest = os.path.normpath(os.path.join(base, path.lstrip("/")))
        if os.path.commonpath([dest, ROOT]) != ROOT:
            return "outside the repository"
        if not os.path.exists(dest):
            return "no such file or folder"
    else:
        dest = doc
    if anchor:
        if not dest.endswith(".md") or os.path.isdir(dest):
            return "an anchor into a file that is not markdown"
        if anchor not in anchors(dest):
            return "no heading with the anchor #%s in %s" % (anchor, os.path.relpath(dest, ROOT))
    return None


def check_links():
    failed = 0
    docs = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    for doc in docs:
        name = os.path.relpath(doc, ROOT)
        if not os.path.exists(doc):
            print("FAIL %s: missing" % name)
            failed += 1
            continue
        bad, count = [], 0
        for n, target in links(open(doc, encoding="utf-8").read()):
            count += 1
            why = check_link(doc, target)
            if why:
                bad.append("     %s:%d: (%s): %s" % (name, n, target, why))
        if bad:
            print("FAIL %s: %d of %d links do not resolve" % (name, len(bad), count))
            print("\n".join(bad))
            failed += 1
        else:
            print("ok   %s: %d links resolve inside the repository" % (name, count))
    return failed


def main():
    failed = check_rules_syntax() + check_links()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
