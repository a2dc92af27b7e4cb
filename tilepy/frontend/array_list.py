"""Indexing a list of arrays (an `ArrayList` argument) with a runtime index.

The items are kernel parameters of their own (params.ArrayListParam), so `xs[i]` with a
runtime `i` (a loop index) chooses among them with `select` ops: the base pointers, the extents
and the strides, then a tensor view made where the index is known. Its partition views are made
there too (`Array.local`). An index outside [0, len) reads the last item (undefined in cuTile).
"""
from __future__ import annotations

from ..errors import TileTypeError
from ..types import TensorViewType
from ..types import dtype as D
from .builtins import call_builtin
from .builtins.semantics import constant, convert
from . import api
from .values import Array, ArrayList, Tile


def select_array(ctx, items: ArrayList, index: Tile) -> Array:
    if index.ndim != 0 or not index.dtype.is_int:
        raise TileTypeError(f"a list of arrays is indexed with an integer scalar (got {index})")
    index = convert(ctx, index, D.int32)
    hits = [call_builtin(ctx, api.equal, [index, j], {}).value for j in range(len(items) - 1)]

    def choose(values):
        """values[j] where index == j (the last one otherwise)."""
        out = values[-1]
        for hit, v in zip(reversed(hits), reversed(values[:-1])):
            out = ctx.b.value("select", hit, v, out)
        return out

    parts = [array_parts(ctx, a, items) for a in items]
    return array_of_parts(ctx, items[0], [choose(list(p)) for p in zip(*parts)], items,
                          f"{items[0].name.rsplit('_', 1)[0]}[i]")


def array_parts(ctx, a: Array, among) -> list:
    """The values an array is made of (base pointer, extents, the strides not 1 in every array
    `among`), as values (static ones as constants, made where the builder is)."""
    it = a.index_dtype
    return [a.base, *(_value(ctx, s, it) for s in a.shape),
            *(_value(ctx, a.strides[d], it) for d in range(a.ndim)
              if not all(b.strides[d] == 1 for b in among))]


def array_of_parts(ctx, first: Array, parts, among, name) -> Array:
    """An array of `array_parts` values chosen among the arrays `among` (one dtype and rank),
    with its tensor view made here."""
    nd = first.ndim
    base, shape, rest = parts[0], tuple(parts[1:1 + nd]), iter(parts[1 + nd:])
    unit = [all(a.strides[d] == 1 for a in among) for d in range(nd)]
    strides = tuple(1 if unit[d] else next(rest) for d in range(nd))
    tv_type = TensorViewType(first.dtype.elem, (None,) * nd, tuple(1 if u else None for u in unit))
    view = ctx.b.value("make_tensor_view", base, list(shape),
                       [s for s in strides if s != 1], result_types=[tv_type])
    return Array(name, first.dtype, nd, base, shape, strides, view, local=True,
                 index_dtype=first.index_dtype)


def _value(ctx, v, dt):
    """An extent or stride as a value of dtype `dt` (static ones, such as a unit stride, as
    constants)."""
    return constant(ctx, v, dt).value if isinstance(v, int) else v
