"""Values made of other values, as control flow sees them (cuTile's aggregates): a tuple (its
items), a list of arrays (its arrays; its length is part of the specialization), a tiled view
(its array), a dataclass object (its fields: records.py) and a def/lambda of the kernel (the
values it captures and its defaults). An `if` merges two aggregates of one kind part by part
(control_flow.Merge) and a loop carries an aggregate as its parts (loops.py); arrays, whose
parts are IR values, are in array_list.py.

`split(v)` gives `(kind, parts)`: two aggregates can meet only when their kinds are equal (the
same tuple or list length, the same tile shape, padding and steps of a view, the same dataclass,
the same `def`), and
`join(v, parts)` rebuilds one like `v` from new parts.
"""
from __future__ import annotations

import ast
import dataclasses

from .names import LocalFunction
from .records import fields_of, is_record
from .records import make as make_record
from .values import ArrayList, TiledView


def split(v):
    """(kind, parts) of an aggregate, None for any other value."""
    if type(v) is tuple:
        return ("tuple", len(v)), list(v)
    if isinstance(v, ArrayList):
        return ("list", len(v)), list(v)
    if isinstance(v, TiledView):
        return ("view", v.tile_shape, v.padding_mode, v.traversal_steps), [v.array]
    if is_record(v):
        return ("dataclass", type(v)), fields_of(v)
    if isinstance(v, LocalFunction):
        names = captured_names(v)
        return ("function", id(v.node), names, len(v.defaults), len(v.kw_defaults)), \
            [v.scope.get(n, _ABSENT) for n in names] + list(v.defaults) + list(v.kw_defaults)
    return None


def join(v, parts):
    """An aggregate like `v` made of `parts` (in `split`'s order)."""
    if type(v) is tuple:
        return tuple(parts)
    if isinstance(v, ArrayList):
        return ArrayList(parts)
    if isinstance(v, TiledView):
        return dataclasses.replace(v, array=parts[0])
    if is_record(v):
        return make_record(type(v), parts)
    names = captured_names(v)
    f = LocalFunction.__new__(LocalFunction)
    f.node, f.tracer = v.node, v.tracer
    f.scope = {**v.scope, **{n: p for n, p in zip(names, parts) if p is not _ABSENT}}
    rest = parts[len(names):]
    f.defaults, f.kw_defaults = rest[:len(v.defaults)], rest[len(v.defaults):]
    return f


def kind_name(v, other=None) -> str:
    """How an aggregate's kind is named when it does not match `other`'s."""
    if type(v) is tuple:
        return f"a tuple of length {len(v)}"
    if isinstance(v, ArrayList):
        return f"a list of {len(v)} arrays"
    if isinstance(v, TiledView):
        same = isinstance(other, TiledView) and repr(other) == repr(v)
        return f"{v!r} (steps {v.traversal_steps}, padding {v.padding_mode.name})" if same \
            else repr(v)
    if is_record(v):
        return f"a dataclass {type(v).__qualname__}"
    return f"the function '{getattr(v.node, 'name', 'lambda')}' of line {v.node.lineno}"


_ABSENT = object()       # a captured name the defining scope does not have (a global)


def captured_names(f: LocalFunction) -> tuple[str, ...]:
    """The names a def/lambda's body reads from its defining scope (sorted), not its own
    parameters."""
    node = f.node
    body = [node.body] if isinstance(node, ast.Lambda) else node.body
    a = node.args
    own = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    used = {n.id for b in body for n in ast.walk(b) if isinstance(n, ast.Name)}
    return tuple(sorted(n for n in used - own if n in f.scope and not (    # not itself
        isinstance(f.scope[n], LocalFunction) and f.scope[n].node is node)))
