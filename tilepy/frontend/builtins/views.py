"""cuTile's array views in kernels: `array.slice(axis, start, stop)` and
`array.tiled_view(tile_shape, padding_mode=..., traversal_steps=...)` with its `load`, `store`
and `num_tiles`.

- A slice is an Array of the same memory: its base pointer offset by `start * stride[axis]`
  (64-bit), `stop - start` elements along `axis`, the same strides; its tensor view is made
  where the slice is (`Array.local`), as a list item chosen at run time is.
- A tiled view whose steps equal its tile shape is a partition: its loads and stores are
  `tilepy.load`/`store` of that shape (partition views). Other steps make Tile IR's
  `strided_view` (NVIDIA's dialect 13.3: the tile at index I starts at element I * step), which
  the interpreter and tileiras take as it is and the C++ backend rewrites into pointer loads and
  stores (lowering/view_pointers.py). A 0-d tile shape is a (1, ..., 1) tile read as 0-d.
"""
from __future__ import annotations

from ...errors import TileTypeError, TileValueError
from ...types import StridedViewType, TensorViewType
from ...types import dtype as D
from .. import api
from ..promotion import can_cast_implicitly
from ..values import Array, Tile, TiledView, type_name
from .memory import _array, _check_latency, _index, cdiv, index_of_rank
from .pointer import ATOMIC_MODES, BITWISE, FLOAT_TYPES, _value
from .registry import call_builtin, impl, require_constant
from .semantics import as_tile, broadcast, broadcasts_to, constant, convert, emit, reshape


def _const_dims(x, what: str) -> tuple[int, ...]:
    dims = (x,) if isinstance(x, int) else x
    if not isinstance(dims, tuple) or any(isinstance(d, bool) or not isinstance(d, int)
                                          for d in dims):
        raise TileTypeError(f"{what} must be an int or a tuple of constant ints (got {x!r})")
    return dims


def _full_shape(v: TiledView) -> tuple[int, ...]:
    """The tile shape as loaded: a 0-d tile is a (1, ..., 1) one."""
    return v.tile_shape or (1,) * v.array.ndim


def _partition(v: TiledView) -> bool:
    return v.traversal_steps == _full_shape(v)


@impl(api._array_tiled_view)
def tiled_view(ctx, array, tile_shape, *, padding_mode, traversal_steps):
    a = _array(array, "tiled_view")
    with ctx.arg("tile_shape"):
        shape = _const_dims(tile_shape, "tiled_view() tile_shape")
        if shape and len(shape) != a.ndim:
            raise TileTypeError(f"Expected shape length to be {a.ndim}, got {len(shape)}")
        if any(d <= 0 for d in shape):
            raise TileValueError(f"tiled_view(): tile_shape {shape} must be positive")
    if not isinstance(padding_mode, api.PaddingMode):
        raise TileTypeError(f"tiled_view(): padding_mode must be a tilepy.PaddingMode (got "
                            f"{type_name(padding_mode)})")
    if (a.dtype.is_int or a.dtype.is_bool) and padding_mode not in (
            api.PaddingMode.UNDETERMINED, api.PaddingMode.ZERO):
        raise TileValueError(f"tiled_view(): padding_mode {padding_mode.name} needs a "
                             f"floating-point array (got {a.dtype.name})")
    view = TiledView(a, shape, padding_mode, ())
    if traversal_steps is None:
        view.traversal_steps = _full_shape(view)
        return view
    with ctx.arg("traversal_steps"):
        steps = _const_dims(traversal_steps, "tiled_view() traversal_steps")
        if len(steps) != a.ndim:
            raise TileTypeError(f"Expected traversal_steps length to be {a.ndim}, got {len(steps)}")
        for i, s in enumerate(steps):
            if s <= 0:
                raise TileTypeError(f"element {i} of traversal_steps ({s}) is not positive")
    view.traversal_steps = steps
    return view


def _strided(ctx, v: TiledView):
    a = v.array
    pad = None if v.padding_mode == api.PaddingMode.UNDETERMINED else v.padding_mode.value
    t = StridedViewType(_full_shape(v), v.traversal_steps, a.view.type, pad)
    return ctx.b.value("make_strided_view", a.view, result_types=[t])


def _view(v, fn: str) -> TiledView:
    if not isinstance(v, TiledView):
        raise TileTypeError(f"{fn}() expects a tiled view (got {type_name(v)})")
    return v


@impl(api._tiled_view_load)
def tiled_view_load(ctx, view, index, *, check_bounds, latency, allow_tma):
    v = _view(view, "load")
    with ctx.arg("index"):
        index = index_of_rank(index, v.array.ndim, "load", "tiled view")
    if _partition(v):
        return call_builtin(ctx, api.load, [v.array, index, v.tile_shape],
                            {"padding_mode": v.padding_mode, "check_bounds": check_bounds,
                             "latency": latency, "allow_tma": allow_tma})
    _check_latency(latency, "load")
    with ctx.arg("index"):
        idx = _index(ctx, index, v.array.ndim, "load", v.array.index_dtype)
    op = ctx.b.create("load_view_tko", _strided(ctx, v), idx, ctx.token,
                      memory_ordering_semantics="weak")
    ctx.token = op.results[1]
    t = Tile(op.results[0], v.array.dtype)
    return reshape(ctx, t, ()) if v.tile_shape == () else t


@impl(api._tiled_view_store)
def tiled_view_store(ctx, view, index, tile, *, check_bounds, latency, allow_tma):
    v = _view(view, "store")
    a, shape = v.array, _full_shape(v)
    with ctx.arg("tile"):
        t = as_tile(ctx, tile, a.dtype)
        if t.dtype != a.dtype:
            if not can_cast_implicitly(t.dtype, a.dtype):
                raise TileTypeError(f"store(): the tile's dtype {t.dtype.name} cannot be "
                                    f"implicitly cast to the array's dtype {a.dtype.name}; use "
                                    f".astype(tilepy.{a.dtype.name})")
            t = convert(ctx, t, a.dtype)
        if not broadcasts_to(t.shape, shape):
            raise TileTypeError(f"Tile shape {t.shape} is not broadcastable to the tiled view's "
                                f"tile shape {v.tile_shape}")
        t = broadcast(ctx, t, shape)
    if _partition(v):
        return call_builtin(ctx, api.store, [a, index, t],
                            {"check_bounds": check_bounds, "latency": latency,
                             "allow_tma": allow_tma})
    _check_latency(latency, "store")
    with ctx.arg("index"):
        idx = _index(ctx, index, a.ndim, "store", a.index_dtype)
    op = ctx.b.create("store_view_tko", t.value, _strided(ctx, v), idx, ctx.token,
                      memory_ordering_semantics="weak")
    ctx.token = op.results[0]
    return None


def _make_tv_atomic(stub, modes):
    """`tv.atomic_store_<op>(index, update)`: atomic_red_view_tko (dialect 13.3) of the update,
    broadcast to the tile shape, into the view's tile at `index` (cuTile's dtypes per op: add
    on 32/64-bit ints and f16/bf16/f32/f64, the others on 32/64-bit ints)."""
    fn = stub.__name__[len("_tiled_view_"):]

    def atomic(ctx, view, index, update):
        v = _view(view, fn)
        a, shape = v.array, _full_shape(v)
        d = a.dtype
        mode = modes[2] if d.is_float else modes[0] if d.signed else modes[1]
        if mode is None or not (d in FLOAT_TYPES.get(mode, ()) if d.is_float else
                                d.is_int and d.bits in (32, 64)):
            raise TileTypeError(f"{fn}(): Unsupported tiled view dtype: {d.name}")
        with ctx.arg("update"):
            t = _value(ctx, a, update, fn, "update", modes[0] in BITWISE)
            if not broadcasts_to(t.shape, shape):
                raise TileTypeError(f"{fn}(): Update shape {t.shape} is not broadcastable to the "
                                    f"tiled view's tile shape {v.tile_shape}")
            t = broadcast(ctx, t, shape)
        with ctx.arg("index"):
            idx = _index(ctx, index, a.ndim, fn, a.index_dtype)
        target = ctx.partition_view(a, shape, tuple(range(a.ndim)), None) if _partition(v) \
            else _strided(ctx, v)
        op = ctx.b.create("atomic_red_view_tko", target, idx, t.value, ctx.token,
                          memory_ordering_semantics="relaxed", memory_scope="device", mode=mode)
        ctx.token = op.results[0]
        return None
    return atomic


for _name in ("add", "max", "min", "and", "or", "xor"):
    _stub = getattr(api, f"_tiled_view_atomic_store_{_name}")
    impl(_stub)(_make_tv_atomic(_stub, ATOMIC_MODES[getattr(api, f"atomic_{_name}")]))


@impl(api._tiled_view_num_tiles)
def tiled_view_num_tiles(ctx, view, axis):
    v = _view(view, "num_tiles")
    if _partition(v):
        return call_builtin(ctx, api.num_tiles, [v.array, axis, _full_shape(v)], {})
    axis = require_constant(axis, "num_tiles() axis")
    nd = v.array.ndim
    if not -nd <= axis < nd:
        raise TileValueError(f"num_tiles(): axis {axis} is out of range for a {nd}-d tiled view")
    extent, step = v.array.shape[axis % nd], v.traversal_steps[axis % nd]
    if isinstance(extent, int):
        return -((-extent) // step)
    return cdiv(ctx, v.array.index(extent), step)


# ------------------------------------------------------------------------------- slices
def _i64(ctx, x, what: str) -> Tile:
    t = as_tile(ctx, x, D.int32)
    if t.ndim != 0 or not (t.dtype.is_int and t.dtype.signed or t.dtype.is_bool):
        raise TileTypeError(f"slice(): {what} must be a signed integer scalar (got {t}): "
                            f"Expected a signed integer scalar")
    return convert(ctx, t, D.int64)


def _as(ctx, x, dt) -> Tile:
    t = as_tile(ctx, x, dt)
    return t if t.dtype == dt else convert(ctx, t, dt)


@impl(api._array_slice)
def array_slice(ctx, array, axis, start, stop):
    a = _array(array, "slice")
    with ctx.arg("axis"):
        axis = require_constant(axis, "slice() axis")
        if isinstance(axis, bool) or not isinstance(axis, int) or not -a.ndim <= axis < a.ndim:
            raise TileTypeError(f"slice(): 'Axis {axis!r} is out of range for rank {a.ndim}' "
                                f"(axis must be a constant in [{-a.ndim}, {a.ndim}))")
        axis %= a.ndim
    for name, v in (("start", start), ("stop", stop)):
        if isinstance(v, int) and v < 0:
            with ctx.arg(name):
                raise TileTypeError(f"slice(): Slice {name} must be non-negative (got {v})")
    if isinstance(start, int) and isinstance(stop, int) and stop < start:
        raise TileTypeError(f"slice(): Slice stop must be greater than or equal to start (got "
                            f"start={start}, stop={stop})")
    with ctx.arg("start"):
        lo = _i64(ctx, start, "start")
    with ctx.arg("stop"):
        _i64(ctx, stop, "stop")                           # checks the type
    stride = a.strides[axis]
    if isinstance(stride, int):
        step = lo if stride == 1 else emit(ctx, "muli", lo, constant(ctx, stride, D.int64),
                                          dtype=D.int64)
    else:
        step = emit(ctx, "muli", lo, _as(ctx, a.index(stride), D.int64), dtype=D.int64)
    base = ctx.b.value("offset", a.base, step.value)
    if isinstance(start, int) and isinstance(stop, int):       # constant bounds: a static extent
        extent = stop - start
    else:
        it = a.index_dtype
        extent = emit(ctx, "subi", _as(ctx, stop, it), _as(ctx, start, it), dtype=it).value
    shape = tuple(extent if d == axis else a.shape[d] for d in range(a.ndim))
    dyn = [constant(ctx, s, a.index_dtype).value if isinstance(s, int) else s for s in shape]
    unit = tuple(s == 1 for s in a.strides)
    tv = TensorViewType(a.dtype.elem, (None,) * a.ndim, tuple(1 if u else None for u in unit))
    view = ctx.b.value("make_tensor_view", base, dyn, [s for s in a.strides if s != 1],
                       result_types=[tv])
    return Array(f"{a.name}_slice", a.dtype, a.ndim, base, shape, a.strides, view, local=True,
                 index_dtype=a.index_dtype)
