"""load_advanced_indexing / store_advanced_indexing (cuTile's names): rows picked by a 1-d
index tile along one dimension, contiguous `Slice`s along the others, through Tile IR's
`gather_scatter_view` (NVIDIA's dialect 13.3) and load_view_tko / store_view_tko."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import TileTypeError, TileValueError
from ...types import GatherScatterViewType, is_power_of_two
from ...types import dtype as D
from .. import api
from ..promotion import can_cast_implicitly
from ..values import Tile, type_name
from .memory import _array, _check_latency
from .registry import impl, require_constant
from .semantics import as_tile, convert


@dataclass(frozen=True)
class IndexSlice:
    start: object             # an int or a 0-d integer Tile
    length: int


@impl(api.Slice)
def slice_(ctx, start, length):
    with ctx.arg("length"):
        n = require_constant(length, "Slice() length")
        if not is_power_of_two(n):
            raise TileTypeError(f"Slice() length must be a power of two (got {n!r})")
    return IndexSlice(start, n)


def _indices(ctx, a, indices, fn: str):
    """(sparse dim, tile shape, index values) of an advanced index of array a."""
    items = indices if isinstance(indices, tuple) else (indices,)
    if len(items) != a.ndim:
        raise TileTypeError(f"{fn}(): the index has {len(items)} entries, which does not match "
                            f"array rank {a.ndim}")
    sparse = [d for d, x in enumerate(items) if isinstance(x, Tile)]
    if len(sparse) != 1:
        raise TileTypeError(f"{fn}(): exactly one index must be a 1D integer Tile (the sparse "
                            f"dimension; got {len(sparse)}), the others Slice(start, length)")
    shape, values = [], []
    for d, x in enumerate(items):
        if isinstance(x, Tile):
            if x.ndim != 1 or not x.dtype.is_int or not is_power_of_two(x.shape[0]):
                raise TileTypeError(f"{fn}(): the sparse index must be a 1D integer tile of "
                                    f"power-of-two length (got {x})")
            shape.append(x.shape[0])
            values.append(convert(ctx, x, D.int32).value if x.dtype.bits < 32 else x.value)
        elif isinstance(x, IndexSlice):
            start = as_tile(ctx, x.start, D.int32)
            if start.ndim != 0 or not start.dtype.is_int:
                raise TileTypeError(f"{fn}(): a Slice start must be an integer scalar (got {start})")
            shape.append(x.length)
            values.append(convert(ctx, start, D.int32).value)
        else:
            raise TileTypeError(f"{fn}(): index {d} must be a 1-d integer tile or a Slice (got "
                                f"{type_name(x)})")
    return sparse[0], tuple(shape), values


def _begin(ctx, array, indices, latency, fn):
    """(array, sparse dim, tile shape, index values) of a load/store with advanced indexing."""
    a = _array(array, fn)
    _check_latency(latency, fn)
    with ctx.arg("indices"):
        return (a, *_indices(ctx, a, indices, fn))


def _view(ctx, a, shape, sparse, padding):
    gv = GatherScatterViewType(shape, a.view.type, sparse, padding)
    return ctx.b.value("make_gather_scatter_view", a.view, result_types=[gv])


@impl(api.load_advanced_indexing)
def load_advanced_indexing(ctx, array, indices, padding_mode, latency, allow_tma):
    a, sparse, shape, idx = _begin(ctx, array, indices, latency, "load_advanced_indexing")
    if not isinstance(padding_mode, api.PaddingMode):
        raise TileTypeError(f"load_advanced_indexing(): padding_mode must be a tilepy.PaddingMode "
                            f"(got {type_name(padding_mode)})")
    pad = None if padding_mode == api.PaddingMode.UNDETERMINED else padding_mode.value
    gv = _view(ctx, a, shape, sparse, pad)
    op = ctx.b.create("load_view_tko", gv, idx, ctx.token, memory_ordering_semantics="weak")
    ctx.token = op.results[1]
    return Tile(op.results[0], a.dtype)


@impl(api.store_advanced_indexing)
def store_advanced_indexing(ctx, array, indices, tile, latency, allow_tma):
    a, sparse, shape, idx = _begin(ctx, array, indices, latency, "store_advanced_indexing")
    with ctx.arg("tile"):
        t = as_tile(ctx, tile, a.dtype)
        if t.dtype != a.dtype:
            if not can_cast_implicitly(t.dtype, a.dtype):
                raise TileTypeError(f"store_advanced_indexing(): the tile's dtype {t.dtype.name} "
                                    f"cannot be implicitly cast to {a.dtype.name}")
            t = convert(ctx, t, a.dtype)
        if t.shape != shape:
            raise TileTypeError(f"store_advanced_indexing(): the tile's shape {t.shape} is not the "
                                f"indexed shape {shape}")
    gv = _view(ctx, a, shape, sparse, None)
    op = ctx.b.create("store_view_tko", t.value, gv, idx, ctx.token,
                      memory_ordering_semantics="weak")
    ctx.token = op.results[0]
