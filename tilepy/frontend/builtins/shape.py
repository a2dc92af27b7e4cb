"""Tile factories (full, zeros, ones, arange, astile) and shape manipulation (reshape, permute,
transpose, broadcast_to, expand_dims, extract, cat, bitcast, item)."""
from __future__ import annotations

import numpy as np

from ...errors import TileTypeError, TileValueError
from ...types import TileType
from ...types import dtype as D
from .. import api
from ..values import Array, Tile, type_name, value_type
from .registry import call_builtin, impl, require_constant
from .semantics import (as_tile, broadcast, check_dtype, constant, convert, is_number,
                        reshape as reshape_to, shape_tuple, tile_shape)


def _filled(ctx, fn: str, shape, value, dtype) -> Tile:
    with ctx.arg("shape"):
        shp = tile_shape(shape, f"{fn}() shape")
    dtype = check_dtype(ctx, dtype, f"{fn}() dtype")
    if isinstance(value, Tile):
        return broadcast(ctx, convert(ctx, value, dtype), shp)
    if not is_number(value):
        raise TileTypeError(f'Invalid argument "fill_value" of {fn}(): Expected a scalar '
                            f'(fill_value must be a number or a scalar tile, got {type_name(value)})')
    return broadcast(ctx, constant(ctx, value, dtype), shp)


@impl(api.full)
def full(ctx, shape, fill_value, dtype):
    return _filled(ctx, "full", shape, fill_value, dtype)


@impl(api.zeros)
def zeros(ctx, shape, dtype):
    return _filled(ctx, "zeros", shape, 0, dtype)


@impl(api.ones)
def ones(ctx, shape, dtype):
    return _filled(ctx, "ones", shape, 1, dtype)


@impl(api.arange)
def arange(ctx, size, *, dtype, start=0, step=1):
    with ctx.arg("size"):
        n = require_constant(size, "arange() size")
        tile_shape((n,), "arange() size")
    dtype = check_dtype(ctx, dtype, "arange() dtype")
    idt = dtype if dtype.is_int else D.int32
    it = Tile(ctx.b.value("iota", result_types=[TileType((n,), idt.elem)]), idt)
    it = convert(ctx, it, dtype)
    if not (isinstance(step, int) and step == 1):
        it = call_builtin(ctx, api.mul, [it, step], {})
    if not (isinstance(start, int) and start == 0):
        it = call_builtin(ctx, api.add, [it, start], {})
    return it


def _tile(ctx, x, fn, arg: int | None = 1) -> Tile:
    """`x` as a tile (a number is a 0-d one); anything else refused, for argument #`arg` in
    cuTile's words first."""
    if not isinstance(x, Tile):
        if is_number(x):
            return as_tile(ctx, x)
        lead = f"Invalid argument #{arg} of {fn}(): Expected a tile, but given value has type " \
               f"{value_type(x)}: " if arg is not None else ""
        if lead and isinstance(x, Array):
            raise TileTypeError(f"{lead[:-2]}; load a tile from the array first")
        raise TileTypeError(f"{lead}{fn}() expects a tile (got {type_name(x)})")
    return x


@impl(api.reshape)
def reshape(ctx, x, shape):
    t = _tile(ctx, x, "reshape")
    with ctx.arg("shape"):
        shp = list(shape_tuple(shape, "reshape() shape"))
        if shp.count(-1) > 1:
            raise TileTypeError(f"reshape(): Only one dimension can be -1 (got {tuple(shp)})")
        if -1 in shp:
            rest = int(np.prod([d for d in shp if d != -1])) if len(shp) > 1 else 1
            numel = t.type.numel
            if rest == 0 or numel % rest:
                raise TileValueError(f"reshape(): cannot reshape {t.shape} into {tuple(shape)}")
            shp[shp.index(-1)] = numel // rest
        shp = tile_shape(tuple(shp), "reshape() shape")
        if int(np.prod(shp)) != t.type.numel:
            raise TileValueError(f"reshape(): cannot reshape a tile of shape {t.shape} "
                                 f"({t.type.numel} elements) into {shp}")
    return reshape_to(ctx, t, shp)


@impl(api.permute)
def permute(ctx, x, axes):
    t = _tile(ctx, x, "permute")
    axes = shape_tuple(axes, "permute() axes")
    if sorted(a % t.ndim if t.ndim else a for a in axes) != list(range(t.ndim)):
        raise TileValueError(f"permute(): axes {axes} is not a permutation of {tuple(range(t.ndim))}")
    axes = tuple(a % t.ndim for a in axes)
    if axes == tuple(range(t.ndim)):
        return t
    return Tile(ctx.b.value("permute", t.value, permutation=axes), t.dtype)


@impl(api.transpose)
def transpose(ctx, x, axis0=None, axis1=None):
    t = _tile(ctx, x, "transpose")
    if t.ndim < 2:
        raise TileTypeError(f"transpose(): Cannot transpose a tile with fewer than 2 dimensions "
                            f"(got shape {t.shape})")
    if axis0 is None and axis1 is None:
        if t.ndim != 2:      # cuTile's rule: the default is for matrices only
            raise TileTypeError(f"transpose(): `axes` must be specified for tile with more than 2 "
                                f"dimensions (got shape {t.shape}; pass axis0 and axis1)")
        axis0, axis1 = 0, 1
    elif axis0 is None or axis1 is None:
        raise TileTypeError("transpose(): transpose axes must either both be specified or both be "
                            "None")
    a0 = require_constant(axis0, "transpose() axis0") % t.ndim
    a1 = require_constant(axis1, "transpose() axis1") % t.ndim
    perm = list(range(t.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return permute(ctx, t, tuple(perm))


@impl(api.broadcast_to)
def broadcast_to(ctx, x, shape):
    t = _tile(ctx, x, "broadcast_to")
    with ctx.arg("shape"):
        shp = tile_shape(shape, "broadcast_to() shape")
    return broadcast(ctx, t, shp)


@impl(api.expand_dims)
def expand_dims(ctx, x, axis):
    t = _tile(ctx, x, "expand_dims")
    axis = require_constant(axis, "expand_dims() axis")
    if not -t.ndim - 1 <= axis <= t.ndim:
        raise TileValueError(f"expand_dims(): axis {axis} is out of range for a {t.ndim}-d tile")
    axis %= t.ndim + 1
    return reshape_to(ctx, t, t.shape[:axis] + (1,) + t.shape[axis:])


@impl(api.extract)
def extract(ctx, x, index, shape):
    t = _tile(ctx, x, "extract")
    with ctx.arg("shape"):
        shp = tile_shape(shape, "extract() shape")
        if shp == () and t.ndim:          # one element (cuTile): a (1, ..., 1) tile read as 0-d
            return reshape(ctx, extract(ctx, x, index, (1,) * t.ndim), ())
        if len(shp) != t.ndim:
            raise TileTypeError(f"extract(): shape {shp} has rank {len(shp)} but the tile has rank "
                                f"{t.ndim}")
        for d, (a, b) in enumerate(zip(t.shape, shp)):
            if a % b:
                raise TileValueError(f"extract(): shape {shp} does not divide the tile's shape "
                                     f"{t.shape} (dimension {d})")
    vals = _subtile_index(ctx, "extract", t, shp, index)
    v = ctx.b.value("extract", t.value, vals, result_types=[t.type.with_shape(shp)])
    return Tile(v, t.dtype)


def _subtile_index(ctx, name, t: Tile, shp, index) -> list:
    """The i32 values of a sub-tile-grid index of t for sub-tiles of shape shp."""
    idx = index if isinstance(index, tuple) else (index,)
    with ctx.arg("index"):
        if len(idx) != t.ndim:
            raise TileTypeError(f"{name}(): index has {len(idx)} element(s) but the tile has rank "
                                f"{t.ndim}")
        vals = []
        for d, i in enumerate(idx):
            if isinstance(i, int) and not 0 <= i < t.shape[d] // shp[d]:
                raise TileTypeError(f"{name}(): index {i} is out of bounds for dimension {d} "
                                    f"({t.shape[d] // shp[d]} sub-tiles)")
            it = as_tile(ctx, i, D.int32)
            if it.ndim != 0 or not (it.dtype.is_int or it.dtype.is_bool):
                raise TileTypeError(f"{name}(): index elements must be integer scalars (got {it})")
            vals.append(convert(ctx, it, D.int32).value)
    return vals


@impl(api.insert)
def insert(ctx, x, index, value):
    """Tile IR's `insert` (dialect 13.4): x with one sub-tile replaced."""
    t = _tile(ctx, x, "insert")
    with ctx.arg("value"):
        v = as_tile(ctx, value, t.dtype)
        if v.dtype != t.dtype:
            raise TileTypeError(f"insert(): Cannot insert a tile of dtype {v.dtype.name} into a "
                                f"tile of dtype {t.dtype.name}; convert it with astype()")
        if v.ndim == 0 and t.ndim:
            v = reshape_to(ctx, v, (1,) * t.ndim)
        if v.ndim != t.ndim:
            raise TileTypeError(f"insert(): the value's rank {v.ndim} does not match the tile rank "
                                f"{t.ndim}")
        for d, (a, b) in enumerate(zip(t.shape, v.shape)):
            if a % b:
                raise TileTypeError(f"insert(): the tile's shape {t.shape} is not divisible by the "
                                    f"value's shape {v.shape} (dimension {d})")
    vals = _subtile_index(ctx, "insert", t, v.shape, index)
    return Tile(ctx.b.value("insert", v.value, t.value, vals), t.dtype)


@impl(api.cat)
def cat(ctx, tiles, axis):
    if not isinstance(tiles, tuple):
        raise TileTypeError(f"cat() takes a tuple of tiles (got {type_name(tiles)})")
    if not tiles:
        raise TileTypeError("cat() received an empty tuple")
    if len(tiles) > 2:
        raise TileTypeError(f"cat() supports at most 2 tiles, got {len(tiles)} (Tile IR's cat "
                            f"joins two; nest the calls)")
    ts = [_tile(ctx, x, "cat", None) for x in tiles]
    a = ts[0]
    if a.ndim == 0:
        raise TileTypeError("cat() needs tiles of rank >= 1")
    ax = require_constant(axis, "cat() axis")
    if not -a.ndim <= ax < a.ndim:
        raise TileTypeError(f"cat(): axis {ax} is out of range for tiles of rank {a.ndim}")
    ax %= a.ndim
    if len(ts) == 1:
        return a
    b = ts[1]
    if b.ndim != a.ndim:
        raise TileTypeError(f"cat(): Expected tiles to have the same rank: {a.ndim} != {b.ndim}")
    if b.dtype != a.dtype:
        raise TileTypeError(f"cat(): Expected tiles to have the same dtype: {a.dtype.name} != "
                            f"{b.dtype.name} (convert one with astype())")
    if any(i != ax and x != y for i, (x, y) in enumerate(zip(a.shape, b.shape))):
        raise TileTypeError(f"cat(): Expected tiles to have the same shape for non axis "
                            f"dimensions, got {a.shape} and {b.shape}")
    shape = tuple(x + y if i == ax else x for i, (x, y) in enumerate(zip(a.shape, b.shape)))
    if any(d & (d - 1) for d in shape):
        raise TileTypeError(f"cat(): Result tile shape must be power of 2, got {shape}: join tiles "
                            f"of the same shape (got {a.shape} and {b.shape})")
    v = ctx.b.value("cat", a.value, b.value, dim=ax, result_types=[a.type.with_shape(shape)])
    return Tile(v, a.dtype)


def _tuple_shape(value, path: str = "value") -> tuple:
    """The shape of a nested tuple of scalars under cuTile's rules: each tuple's length a power
    of 2, the same shape below every item, numbers or 0-d tiles at the leaves."""
    if not isinstance(value, tuple):
        if isinstance(value, Tile) and value.ndim:
            raise TileTypeError(f"astile(): Expected scalar elements at {path}; got a tile of "
                                f"shape {value.shape}")
        if not (isinstance(value, Tile) or is_number(value)):
            raise TileTypeError(f"astile(): Expected scalar elements at {path}; got element of "
                                f"type {type_name(value)}")
        return ()
    n = len(value)
    if n == 0 or n & (n - 1):
        raise TileTypeError(f"astile(): Tuple length {n} at {path} is not a power of 2 (a tile's "
                            f"extents are powers of 2)")
    inner = {_tuple_shape(v, f"{path}[{i}]") for i, v in enumerate(value)}
    if len(inner) != 1:
        raise TileTypeError(f"astile(): Tuple has non-uniform inner shapes at {path} (got "
                            f"{sorted(inner)}): the nested tuples must be rectangular")
    return (n,) + inner.pop()


def _leaves(value) -> list:
    return [x for v in value for x in _leaves(v)] if isinstance(value, tuple) else [value]


def _join(ctx, tiles: list) -> Tile:
    """1-element tiles joined into one 1-D tile by cat, halves first (len a power of 2)."""
    if len(tiles) == 1:
        return tiles[0]
    mid = len(tiles) // 2
    return cat(ctx, (_join(ctx, tiles[:mid]), _join(ctx, tiles[mid:])), 0)


@impl(api.astile)
def astile(ctx, value, *, dtype=None):
    """A scalar, or a nested tuple of scalars (numbers or 0-d tiles) as a tile of its shape:
    constants make one constant; run-time scalars are converted to `dtype` and joined by cat."""
    if dtype is not None:
        dtype = check_dtype(ctx, dtype, "astile() dtype")
    if isinstance(value, Tile) and value.ndim == 0:
        return value if dtype is None else convert(ctx, value, dtype)
    if is_number(value):
        return as_tile(ctx, value) if dtype is None else constant(ctx, value, dtype)
    if not isinstance(value, tuple):
        what = f"a tile of shape {value.shape}" if isinstance(value, Tile) else type_name(value)
        raise TileTypeError(f"astile(): Expected a scalar or (possibly nested) tuple of scalars; "
                            f"got {what}")
    shape = _tuple_shape(value)
    leaves = _leaves(value)
    if dtype is None:
        from ..promotion import literal_dtype, promote
        for v in leaves:
            d = v.dtype if isinstance(v, Tile) else literal_dtype(v, None)
            dtype = d if dtype is None else promote(dtype, d)
    with ctx.arg("value"):
        shp = tile_shape(shape, "astile() shape")
    if any(isinstance(v, Tile) for v in leaves):
        ones = [reshape_to(ctx, convert(ctx, v, dtype) if isinstance(v, Tile)
                           else constant(ctx, v, dtype), (1,)) for v in leaves]
        return reshape_to(ctx, _join(ctx, ones), shp)
    from ...ir import DenseValue
    from .semantics import literal_array
    data = np.array([literal_array(v, dtype) for v in leaves]).reshape(shape)
    v = ctx.b.value("constant", value=DenseValue(dtype.elem, data),
                    result_types=[TileType(shp, dtype.elem)])
    return Tile(v, dtype)


@impl(api.bitcast)
def bitcast(ctx, x, dtype):
    t = _tile(ctx, x, "bitcast")
    dtype = check_dtype(ctx, dtype, "bitcast() dtype")
    if t.dtype.bits != dtype.bits or t.dtype.is_bool or dtype.is_bool:
        raise TileTypeError(f"bitcast() needs dtypes of the same bit width (got {t.dtype.name} and "
                            f"{dtype.name})")
    if t.dtype.elem == dtype.elem:
        return Tile(t.value, dtype)
    return Tile(ctx.b.value("bitcast", t.value, result_types=[t.type.with_elem(dtype.elem)]), dtype)


@impl(api.pack_to_bytes)
def pack_to_bytes(ctx, x):
    t = _tile(ctx, x, "pack_to_bytes")
    if t.dtype.is_bool:
        raise TileTypeError(f"pack_to_bytes from a {t.dtype.name} tile is not supported")
    flat = reshape_to(ctx, t, (t.type.numel,))
    bits = t.type.numel * t.dtype.bits
    if bits % 8:
        raise TileTypeError(f"pack_to_bytes() of a tile of shape {t.shape} and dtype "
                            f"{t.dtype.name}: its {t.type.numel} * {t.dtype.bits} bits are not a "
                            f"whole number of bytes (not divisible by 8)")
    if t.dtype.bits == 8:
        return bitcast(ctx, flat, D.uint8)
    return Tile(ctx.b.value("pack", flat.value, result_types=[TileType((bits // 8,), D.uint8.elem)]),
                D.uint8)


@impl(api.unpack_from_bytes)
def unpack_from_bytes(ctx, x, dtype):
    t = _tile(ctx, x, "unpack_from_bytes")
    dtype = check_dtype(ctx, dtype, "unpack_from_bytes() dtype")
    if len(t.shape) != 1:
        raise TileTypeError(f"unpack_from_bytes requires a 1D tile (got shape {t.shape})")
    if t.dtype != D.uint8:
        raise TileTypeError(f"unpack_from_bytes requires uint8 tile (got {t.dtype.name})")
    if dtype.is_bool:
        raise TileTypeError(f"unpack_from_bytes to a {dtype.name} tile is not supported")
    n, rem = divmod(t.shape[0] * 8, dtype.bits)
    if rem:
        raise TileTypeError(f"unpack_from_bytes() of {t.shape[0]} bytes to {dtype.name}: "
                            f"{t.shape[0]} * 8 bits are not divisible by {dtype.bits}")
    if dtype.bits == 8:
        return bitcast(ctx, t, dtype)
    return Tile(ctx.b.value("unpack", t.value, result_types=[TileType((n,), dtype.elem)]), dtype)


@impl(api._tile_item)
def tile_item(ctx, x):
    t = _tile(ctx, x, "item")
    if t.type.numel != 1:
        raise TileTypeError(f"item() needs a tile with one element: Cannot reshape {t.shape} to ()")
    return reshape_to(ctx, t, ())
