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

    first = items[0]
    base = choose([a.base for a in items])
    it = first.index_dtype                  # one annotation (ListAnnotation) for every item
    shape = tuple(choose([_value(ctx, a.shape[d], it) for a in items]) for d in range(first.ndim))
    unit = [all(a.strides[d] == 1 for a in items) for d in range(first.ndim)]
    strides = tuple(1 if unit[d] else choose([_value(ctx, a.strides[d], it) for a in items])
                    for d in range(first.ndim))
    tv_type = TensorViewType(first.dtype.elem, (None,) * first.ndim,
                             tuple(1 if u else None for u in unit))
    view = ctx.b.value("make_tensor_view", base, list(shape),
                       [s for s in strides if s != 1], result_types=[tv_type])
    return Array(f"{first.name.rsplit('_', 1)[0]}[i]", first.dtype, first.ndim, base, shape,
                 strides, view, local=True, index_dtype=it)


def _value(ctx, v, dt):
    """An extent or stride as a value of dtype `dt` (static ones, such as a unit stride, as
    constants)."""
    return constant(ctx, v, dt).value if isinstance(v, int) else v
