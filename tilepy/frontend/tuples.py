"""Tuples inside kernels: indexing, comparison and `in`.

A tuple is a compile-time structure: it is indexed with constants, and compares element by
element. Elements may be runtime 0-d tiles (`(bid(0), 1) == (0, 1)`), which makes the result a
runtime bool tile; a tuple of constants compares in Python.
"""
from __future__ import annotations

import ast

from ..errors import TileTypeError
from . import api
from .builtins import call_builtin
from .builtins.semantics import is_number
from .values import Array, ArrayList, RawArrayMemory, Tile, TiledView, type_name

ORDER = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _runtime(v) -> bool:
    """Whether `v` (a tuple's element, nested tuples included) is a runtime value: a tile, or an
    array or a view of one (compile-time objects of the kernel that Python cannot compare)."""
    if isinstance(v, tuple):
        return any(_runtime(x) for x in v)
    return isinstance(v, (Tile, Array, ArrayList, TiledView, RawArrayMemory))


def starred(v) -> tuple:
    """The items of `*v` in a call or a tuple display."""
    if not isinstance(v, tuple):
        raise TileTypeError(f"Expected a tuple after * (got {type_name(v)}): only tuples can be "
                            f"unpacked with *")
    return v


def getitem(tup: tuple, index):
    """`tup[index]`: the index is a constant int or slice."""
    if isinstance(index, Tile):
        if index.shape != () or not index.dtype.is_int:
            raise TileTypeError(f"Tuple indices must be integers or slices, not "
                                f"{type_name(index)}")
        raise TileTypeError("Tuple indices must be constant (a tuple is indexed at compile time; "
                            "select among tiles with tilepy.where())")
    if not isinstance(index, (int, slice)):
        raise TileTypeError(f"Tuple indices must be integers or slices, not {type_name(index)}")
    try:
        return tup[index]
    except IndexError:
        raise TileTypeError(f"Index {index} is out of range for a tuple of length "
                            f"{len(tup)}") from None


def equal(ctx, a: tuple, b: tuple, negate: bool):
    """`a == b` (`a != b` when `negate`) of two tuples: a constant, or a runtime bool tile when
    an element is a runtime scalar."""
    if not (_runtime(a) or _runtime(b)):
        return (a == b) != negate
    if len(a) != len(b):
        return negate
    for item in (*a, *b):
        if isinstance(item, Tile):
            if item.shape != ():
                raise TileTypeError(f"Tuple comparison is not supported for non-scalar elements "
                                    f"(got {type_name(item)}); compare the tiles themselves")
        elif _runtime(item) and not isinstance(item, tuple):
            raise TileTypeError(f"Tuple comparison is not supported for elements of type "
                                f"{type_name(item)}")
    result = True
    for x, y in zip(a, b):
        same = equal(ctx, x, y, False) if isinstance(x, tuple) and isinstance(y, tuple) else \
            scalar_equal(ctx, x, y)
        result = both(ctx, result, same)
    if negate:
        return (not result) if not isinstance(result, Tile) else \
            call_builtin(ctx, api.bitwise_not, [result], {})
    return result


def compare(ctx, op: type, left, right):
    """`left <op> right` (`op` an ast.cmpop class) when a tuple is involved; NotImplemented
    otherwise. Only == and != compare tuples (as in cuTile, constants included)."""
    if op in (ast.In, ast.NotIn):
        return contains(ctx, left, right, op is ast.NotIn) if isinstance(right, tuple) else \
            NotImplemented
    if not (isinstance(left, tuple) or isinstance(right, tuple)) or op in (ast.Is, ast.IsNot):
        return NotImplemented
    if op in ORDER:
        raise TileTypeError(f"Operator '{ORDER[op]}' is not supported for tuples (only == and != "
                            f"compare tuples, element by element)")
    if not (isinstance(left, tuple) and isinstance(right, tuple)):
        return NotImplemented
    return equal(ctx, left, right, op is ast.NotEq)


def contains(ctx, needle, tup: tuple, negate: bool):
    """`needle in tup`: each element compared with ==, stopping at the first that is constantly
    equal; a runtime scalar makes the answer a runtime bool tile."""
    result = False
    for item in tup:
        same = equal(ctx, needle, item, False) if isinstance(needle, tuple) and \
            isinstance(item, tuple) else scalar_equal(ctx, needle, item)
        if isinstance(same, Tile) and same.shape != ():
            raise TileTypeError(f"'in' requires scalar operands, but got shape {same.shape} "
                                f"(comparing {type_name(needle)} with {type_name(item)})")
        if same is True:
            result = True
            break
        if isinstance(same, Tile):
            result = same if result is False else \
                call_builtin(ctx, api.bitwise_or, [result, same], {})
    if negate:
        return (not result) if not isinstance(result, Tile) else \
            call_builtin(ctx, api.bitwise_not, [result], {})
    return result


def scalar_equal(ctx, x, y):
    """`x == y` of two non-tuple values: a tile comparison when either is a tile."""
    if isinstance(x, Tile) or isinstance(y, Tile):
        if all(isinstance(v, Tile) or is_number(v) for v in (x, y)):
            return call_builtin(ctx, api.equal, [x, y], {})
        return False
    return x == y


def both(ctx, a, b):
    """`a and b` of two comparison results (constants or bool tiles)."""
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return call_builtin(ctx, api.bitwise_and, [a, b], {})
