"""`python -m tilepy.tools.import_graph [path]`: every import between tilepy's parts, counted.

Counts import statements (those inside functions too, as grimp reads them) plus
`importlib.import_module("tilepy...")` calls with a literal name, between the parts (the
subpackages and top-level modules of tilepy), and lists the parts that reach each other in a
cycle. `path`: the folder holding the `tilepy` package to read (default: the one imported).
"""
from __future__ import annotations

import argparse
import ast
import collections
import os
import sys


def part(module: str) -> str:
    names = module.split(".")
    return "tilepy" if len(names) == 1 else names[1]


def _dynamic_imports(root: str):
    """(importer module, imported module) for import_module("tilepy...") calls."""
    for folder, _, files in os.walk(os.path.join(root, "tilepy")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            mod = os.path.relpath(path, root)[:-3].replace(os.sep, ".").removesuffix(".__init__")
            with open(path) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                        node.func, "id", "")) == "import_module" and node.args and \
                        isinstance(node.args[0], ast.Constant) and \
                        str(node.args[0].value).startswith("tilepy"):
                    yield mod, node.args[0].value


def edges(root: str) -> collections.Counter:
    import grimp
    sys.path.insert(0, root)
    graph = grimp.build_graph("tilepy", cache_dir=None)
    out = collections.Counter()
    for m in graph.modules:
        for t in graph.find_modules_directly_imported_by(m):
            if part(m) != part(t):
                out[part(m), part(t)] += max(1, len(graph.get_import_details(importer=m, imported=t)))
    for m, t in _dynamic_imports(root):
        if part(m) != part(t):
            out[part(m), part(t)] += 1
    return out


def cycles(counts) -> list[list[str]]:
    """The groups of parts that reach each other (strongly connected, more than one part)."""
    adj = collections.defaultdict(set)
    for a, b in counts:
        adj[a].add(b)
    reach = {}
    for a in list(adj):
        seen, todo = set(), [a]
        while todo:
            for b in adj[todo.pop()]:
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        reach[a] = seen
    groups = {frozenset(b for b in reach[a] if a in reach.get(b, ())) | {a} for a in reach}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilepy.tools.import_graph", description=__doc__)
    ap.add_argument("path", nargs="?", default=os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    counts = edges(ap.parse_args(argv).path)
    print("| importer | imported | imports |\n|---|---|---|")
    for (a, b), n in sorted(counts.items()):
        print(f"| {a} | {b} | {n} |")
    print(f"\n{sum(counts.values())} imports between parts, {len(counts)} pairs; cycles: "
          f"{cycles(counts) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
