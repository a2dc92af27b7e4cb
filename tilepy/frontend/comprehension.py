"""Tuple comprehensions: `tuple(expr for x in static_iter(...) if cond ...)`, unrolled at
compile time (cuTile's rule: every iterable is a `static_iter`, every `if` a constant).

Python's generator-expression scoping holds: the first iterable is evaluated in the enclosing
scope, everything else in the comprehension's own scope, where the targets of all its
generators are local (read before their generator binds them, they are undefined) and do not
leak out; a `lambda` of the element closes over that scope (late binding, as in Python).
"""
from __future__ import annotations

import ast

from ..errors import TileSyntaxError, TileTypeError, at
from . import api
from .names import Undefined, truth
from .values import Tile, type_name


def target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple):
        return [n for e in target.elts for n in target_names(e)]
    raise TileSyntaxError("Tuple comprehension target must be a name or tuple unpacking")


def _undefined(name: str) -> str:
    return (f"Undefined variable {name} used: '{name}' is a variable of the comprehension, bound "
            f"by a later generator")


def build(tr, node: ast.GeneratorExp) -> tuple:
    """The tuple `tuple(node)` builds."""
    from .static import check_direct, static_items
    gens = node.generators
    bound = []
    for g in gens:
        with at(tr.loc(g.target)):
            bound.append(target_names(g.target))
    names = {n for b in bound for n in b}
    for i, g in enumerate(gens):
        later = names - {n for b in bound[:i] for n in b} if i else set()
        for n in ast.walk(g.iter):
            if isinstance(n, ast.Name) and n.id in later:
                with at(tr.loc(n)):
                    raise TileSyntaxError(_undefined(n.id))
        fn = tr.expr(g.iter.func) if isinstance(g.iter, ast.Call) else None
        with at(tr.loc(g.iter)):
            if g.is_async:
                raise TileSyntaxError("async in tuple comprehension is not supported")
            if fn is not api.static_iter:
                raise TileSyntaxError("All iterables in a tuple comprehension must be wrapped in "
                                      "ct.static_iter(), e.g. tuple(... for x in "
                                      "ct.static_iter(...)): a comprehension is unrolled at "
                                      "compile time")
            check_direct(tr, fn, g.iter.func)
    outer = tr.scope
    inner = dict(outer)
    for n in names:
        inner[n] = Undefined(f"is not bound yet ({_undefined(n)})")
    out: list = []

    def run(i: int):
        if i == len(gens):
            out.append(tr.expr(node.elt))
            return
        g = gens[i]
        tr.scope = outer if i == 0 else inner
        try:
            with at(tr.loc(g.iter)):
                items = static_items(tr, g.iter)
        finally:
            tr.scope = inner
        for item in items:
            tr.assign(g.target, item, g.iter)
            if all(_condition(tr, c) for c in g.ifs):
                run(i + 1)

    try:
        run(0)
    finally:
        tr.scope = outer
    return tuple(out)


def _condition(tr, node) -> bool:
    cond = tr.expr(node)
    if isinstance(cond, Tile):
        with at(tr.loc(node)):
            raise TileTypeError(f"Tuple comprehension if-conditions must be statically known "
                                f"(this one is a runtime {type_name(cond)}): the comprehension "
                                f"is unrolled at compile time")
    return truth(cond)
