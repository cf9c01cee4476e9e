#!/usr/bin/env python3
"""check-layers.py: every #include of the daemon's sources points down.

scripts/layers lists the source folders in layers, the lowest first (a
folder may be nested: lib/base, proxy/core): a file
may include headers of its own folder and of folders on lower lines, never
of its line's other folders or of a higher line. Within a folder, no
modules (folder/name, a .c and its .h together) may include each other in
a ring, directly or through others: each module's includes point down too.

Prints every finding; exit status 1 if there is any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_layers(path):
    """{folder: rank} from scripts/layers."""
    rank = {}
    for line in open(path, encoding="utf-8"):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        level = len(set(rank.values()))
        for folder in words:
            rank[folder] = level
    return rank


def module_includes(rank):
    """{module: {included module}} over every .c and .h of the layered folders
    (a module is its path without .c or .h: proxy/core/client)."""
    graph = {}
    for folder in rank:
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not name.endswith((".c", ".h")):
                continue
            path = f"{folder}/{name}"
            module = path[:-2]
            text = open(os.path.join(ROOT, path), encoding="utf-8").read()
            targets = graph.setdefault(module, {})
            for included in INCLUDE.findall(text):
                if "/" in included and included.endswith(".h"):
                    targets.setdefault(included[:-2], path)
    return graph


def folder_of(module):
    """"proxy/core" of "proxy/core/client", "cluster" of "cluster/node"."""
    return module.rsplit("/", 1)[0]


def upward(rank, graph):
    """An include of a folder of the same line or a higher one."""
    found = []
    for module, targets in graph.items():
        here = folder_of(module)
        for target, path in targets.items():
            there = folder_of(target)
            if there == here:
                continue
            if there not in rank:
                found.append(f"{path}: includes {target}.h, of a folder scripts/layers does not list")
            elif rank[there] >= rank[here]:
                found.append(f"{path}: includes {target}.h: {there}/ is not below {here}/ "
                             "in scripts/layers")
    return found


def rings_of(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, rings = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            ring = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                ring.add(w)
                if w == v:
                    break
            if len(ring) > 1:
                rings.append(ring)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return rings


def main():
    rank = read_layers(os.path.join(ROOT, "scripts", "layers"))
    graph = module_includes(rank)
    findings = upward(rank, graph) + [
        "modules including each other in a ring: " + " ".join(sorted(ring))
        for ring in rings_of(graph)]
    for f in findings:
        print("FAIL", f)
    if not findings:
        print(f"ok   {len(graph)} modules in {len(rank)} folders: every include points down, "
              "no ring")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
