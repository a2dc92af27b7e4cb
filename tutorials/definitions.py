"""A tutorial's kernels and helper functions, without running its cells.

The tutorials are notebook-style scripts: importing one would run every cell (launches, timing
sweeps, figures). Tests and benchmarks that want a tutorial's kernels use

    load("03_matmul").matmul                 # a tilepy kernel
    load("03_matmul", ct=cuda.tile).matmul   # the same source, decorated by cuTile

which compiles only the tutorial's top-level `def`s (kernels and helpers such as a numpy
reference) and its imports of standard and numeric modules, keeping their line numbers: the
kernels' source is found in the tutorial file, like any kernel's. `ct` is bound to the module
given (tilepy by default).
"""
from __future__ import annotations

import ast
import os
import types

HERE = os.path.dirname(os.path.abspath(__file__))
_MODULES = {"math", "numpy", "time", "inspect", "difflib", "os", "sys", "tempfile"}


def _kept(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return all(a.name in _MODULES for a in node.names)
    return isinstance(node, ast.FunctionDef)


def load(name: str, ct=None) -> types.SimpleNamespace:
    """The functions of `tutorials/<name>.py` (name with or without `.py`) as attributes."""
    if ct is None:
        import tilepy as ct
    path = os.path.join(HERE, name if name.endswith(".py") else name + ".py")
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    module = ast.Module([n for n in tree.body if _kept(n)], type_ignores=[])
    namespace = {"ct": ct, "__name__": f"tutorial_{os.path.basename(path)[:-3]}", "__file__": path}
    exec(compile(module, path, "exec"), namespace)
    return types.SimpleNamespace(**{n.name: namespace[n.name] for n in module.body
                                    if isinstance(n, ast.FunctionDef)})
