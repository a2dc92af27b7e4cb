"""The grid (bid, num_blocks), tile-space loads and stores through partition views, num_tiles.

A load or store of `shape` at tile-space `index` of an array becomes a `partition_view` of the
array's `tensor_view` (built once, in the kernel prologue) and a `load_view_tko` /
`store_view_tko`. Memory ops are threaded on one token chain in program order, so the Tile IR
program keeps the order the user wrote.
"""
from __future__ import annotations

from ...errors import TileTypeError, TileValueError
from ...types import dtype as D
from .. import api
from ..promotion import can_cast_implicitly
from ..values import Array, Tile, type_name
from .registry import impl, require_constant
from .semantics import as_tile, broadcast, convert, emit, reshape, tile_shape


def _axis(axis, what="axis") -> int:
    axis = require_constant(axis, what)
    if axis not in (0, 1, 2):
        raise TileValueError(f"{what} must be 0, 1 or 2 (got {axis})")
    return axis


@impl(api.bid)
def bid(ctx, axis):
    a = _axis(axis)
    return Tile(ctx.b.create("get_tile_block_id").results[a], D.int32)


@impl(api.num_blocks)
def num_blocks(ctx, axis):
    a = _axis(axis)
    return Tile(ctx.b.create("get_num_tile_blocks").results[a], D.int32)


@impl(api.cdiv)
def cdiv(ctx, x, y):
    if isinstance(x, int) and isinstance(y, int):
        return -((-x) // y)
    from .semantics import operands
    (a, b), d = operands(ctx, x, y)
    if not d.is_int:
        raise TileTypeError(f"cdiv() needs integer operands (got {d.name})")
    return emit(ctx, "divi", a, b, dtype=d, signedness="signed" if d.signed else "unsigned",
                rounding="positive_inf")


def _array(x, fn: str) -> Array:
    if not isinstance(x, Array):
        raise TileTypeError(f"{fn}() expects an array argument of the kernel (got {type_name(x)})")
    return x


def _order(order, ndim: int, fn: str) -> tuple[int, ...] | None:
    if order == "C" or order is None:
        return None
    if order == "F":
        return tuple(reversed(range(ndim)))
    if isinstance(order, tuple) and sorted(order) == list(range(ndim)):
        return None if order == tuple(range(ndim)) else order
    lead = f'Invalid argument "order" of {fn}(): '         # cuTile's words, then tilepy's
    rule = f"(order must be 'C', 'F' or a permutation of {tuple(range(ndim))}, got {order!r})"
    if isinstance(order, tuple):
        twice = [a for i, a in enumerate(order) if a in order[:i]]
        if twice:
            raise TileTypeError(f"{fn}(): Axis order must be a permutation, but axis {twice[0]} is "
                                f"used at least twice (got {order!r})")
        out = [a for a in order if not (isinstance(a, int) and -ndim <= a < ndim)]
        if out:
            raise TileTypeError(f"{lead}Axis {out[0]} is out of range for rank {ndim} {rule}")
        raise TileTypeError(f"{lead}Expected a permutation of {tuple(range(ndim))} {rule}")
    raise TileTypeError(f"{lead}Expected 'C' or 'F', got {order!r} {rule}")


def _shape_for(array: Array, shape, fn: str, allow_0d: bool = False) -> tuple[int, ...]:
    shape = tile_shape(shape, f"{fn}() shape")
    if allow_0d and shape == ():         # one element: a (1, ..., 1) tile read as a 0-d tile
        return (1,) * array.ndim
    if len(shape) != array.ndim:
        raise TileTypeError(f'Invalid argument "shape" of {fn}(): Expected shape length to be '
                            f'{array.ndim}, got {len(shape)} (shape {shape} has {len(shape)} '
                            f'dimensions but the array has {array.ndim})')
    return shape


def index_of_rank(index, ndim: int, fn: str, what: str = "array") -> tuple:
    """A load/store index as a tuple of `ndim` entries (of an array, a tiled view)."""
    index = index if isinstance(index, tuple) else (index,)
    if len(index) != ndim:
        raise TileTypeError(f"{fn}(): Index size {len(index)} does not match the {what} rank "
                            f"{ndim}")
    return index


def _index(ctx, index, ndim: int, fn: str, dt=D.int32, what: str = "array") -> list:
    """The tile-space index of a load/store: integer scalars, widened to `dt` (int32; an
    IndexedWithInt64 array's int64, as cuTile: tile index * tile size stays exact)."""
    index = index_of_rank(index, ndim, fn, what)
    out = []
    for i in index:
        t = as_tile(ctx, i, dt)
        if t.ndim != 0 or not (t.dtype.is_int or t.dtype.is_bool):
            raise TileTypeError(f"{fn}(): index elements must be integer scalars (got {t})")
        if t.dtype.bits < dt.bits:
            t = convert(ctx, t, dt)
        out.append(t.value)
    return out


def _memory_attrs(memory_order, memory_scope, fn, allowed):
    if memory_order not in allowed:
        op = "tile_store" if "store" in fn else "tile_load"
        raise TileTypeError(f"{fn}(): Invalid memory order for {op}. Got {memory_order}, "
                            f"expected one of {', '.join(str(m) for m in allowed)}")
    if not isinstance(memory_scope, api.MemoryScope):
        raise TileValueError(f"{fn}(): memory_scope must be a tilepy.MemoryScope")
    if memory_order == api.MemoryOrder.WEAK and memory_scope != api.MemoryScope.NONE:
        raise TileValueError(f"{fn}(): a weak access takes no memory_scope")
    return {"memory_ordering_semantics": memory_order.value,
            "memory_scope": memory_scope.value}


def _check_latency(latency, fn):
    if latency is not None and not (isinstance(latency, int) and 1 <= latency <= 10):
        raise TileValueError(f"{fn}(): latency must be an int in [1, 10] (got {latency!r})")


@impl(api.load)
def load(ctx, array, index, shape, *, order, padding_mode, check_bounds, latency, allow_tma,
         memory_order, memory_scope):
    a = _array(array, "load")
    with ctx.arg("shape"):
        shp = _shape_for(a, shape, "load", allow_0d=True)
    dim_map = _order(order, a.ndim, "load")
    if not isinstance(padding_mode, api.PaddingMode):
        raise TileTypeError(f"load(): padding_mode must be a tilepy.PaddingMode (got "
                            f"{type_name(padding_mode)})")
    if a.dtype.is_int or a.dtype.is_bool:
        if padding_mode in (api.PaddingMode.NAN, api.PaddingMode.POS_INF, api.PaddingMode.NEG_INF,
                            api.PaddingMode.NEG_ZERO):
            raise TileValueError(f"load(): padding_mode {padding_mode.name} needs a floating-point "
                                 f"array (got {a.dtype.name})")
    _check_latency(latency, "load")
    attrs = _memory_attrs(memory_order, memory_scope, "load",
                          (api.MemoryOrder.WEAK, api.MemoryOrder.RELAXED, api.MemoryOrder.ACQUIRE))
    pad = None if padding_mode == api.PaddingMode.UNDETERMINED else padding_mode.value
    pv = ctx.partition_view(a, shp, dim_map, pad)
    with ctx.arg("index"):
        idx = _index(ctx, index, a.ndim, "load", a.index_dtype)
    op = ctx.b.create("load_view_tko", pv, idx, ctx.token, **attrs)
    ctx.token = op.results[1]
    t = Tile(op.results[0], a.dtype)
    return reshape(ctx, t, ()) if shape == () else t


@impl(api.store)
def store(ctx, array, index, tile, *, order, check_bounds, latency, allow_tma, memory_order,
          memory_scope):
    a = _array(array, "store")
    _check_latency(latency, "store")
    attrs = _memory_attrs(memory_order, memory_scope, "store",
                          (api.MemoryOrder.WEAK, api.MemoryOrder.RELAXED, api.MemoryOrder.RELEASE))
    with ctx.arg("tile"):
        t = as_tile(ctx, tile, a.dtype)
        if t.dtype != a.dtype:
            if not can_cast_implicitly(t.dtype, a.dtype):
                raise TileTypeError(f"store(): the tile's dtype {t.dtype.name} cannot be implicitly "
                                    f"cast to the array's dtype {a.dtype.name}; use "
                                    f".astype(tilepy.{a.dtype.name})")
            t = convert(ctx, t, a.dtype)
        if t.ndim == 0:
            t = broadcast(ctx, t, (1,) * a.ndim)
        if t.ndim != a.ndim:
            raise TileTypeError(f"store(): a tile of rank {t.ndim} {t.shape} cannot be stored into "
                                f"an array of rank {a.ndim}")
    dim_map = _order(order, a.ndim, "store")
    pv = ctx.partition_view(a, t.shape, dim_map, None)
    with ctx.arg("index"):
        idx = _index(ctx, index, a.ndim, "store", a.index_dtype)
    op = ctx.b.create("store_view_tko", t.value, pv, idx, ctx.token, **attrs)
    ctx.token = op.results[0]
    return None


@impl(api.num_tiles)
def num_tiles(ctx, array, axis, shape, order):
    a = _array(array, "num_tiles")
    axis = require_constant(axis, "num_tiles() axis")
    if not -a.ndim <= axis < a.ndim:
        raise TileValueError(f"num_tiles(): axis {axis} is out of range for a {a.ndim}-d array")
    axis %= a.ndim
    if isinstance(shape, int) and a.ndim == 1:
        shape = (shape,)
    shp = _shape_for(a, shape, "num_tiles", allow_0d=True)
    dim_map = _order(order, a.ndim, "num_tiles") or tuple(range(a.ndim))
    extent = a.shape[dim_map[axis]]
    t = shp[axis]
    if isinstance(extent, int):
        return -((-extent) // t)
    return cdiv(ctx, a.index(extent), t)
