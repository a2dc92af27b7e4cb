"""Shared meaning of the kernel language: literals, conversions, broadcasting, promotion.

Tile IR has no implicit conversion or broadcast (spec 8.2.1); these helpers insert the explicit
`constant`, `exti`/`itof`/`ftof`/..., `reshape` and `broadcast` ops that user expressions imply.
"""
from __future__ import annotations

import numpy as np

from ...errors import TileTypeError, TileValueError
from ...ir import DenseValue
from ...types import DType, TileType
from ...types.convert import has_encoded_bits, round_float
from ...types.dtype import foreign, int32 as _INT32
from ..promotion import literal_dtype, promote
from ..values import Tile, type_name, value_type
from .registry import invalid_argument

Number = (bool, int, float, np.number, np.bool_)


# ------------------------------------------------------------------------------ constants
def literal_array(value, dtype: DType) -> np.ndarray:
    """`value` as a 0-d array of dtype's signless storage type, checking integer range."""
    if isinstance(value, (np.number, np.bool_)):
        value = value.item()
    if dtype.is_bool:
        return np.array(bool(value))
    if dtype.is_int:
        if isinstance(value, float):
            if not np.isfinite(value):
                raise TileValueError(f"cannot convert {value} to {dtype.name}")
            value = int(value)
        info = np.iinfo(dtype.numpy)
        if not info.min <= int(value) <= info.max:
            raise TileValueError(f"Integer constant {value} is out of range of {dtype.name} "
                                 f"[{info.min}, {info.max}]")
        return np.array(int(value), dtype=dtype.numpy).view(np.dtype(f"i{dtype.itemsize}"))
    if dtype.is_float:
        v = float(value)
        e = dtype.elem
        if np.signbit(v) and (not e.signed or e.mant_bits == 0):     # e5m3, e8m0: no sign bit
            raise TileValueError(f"Negative values cannot be represented in an unsigned float "
                                 f"format ({dtype.name}; got {value})")
        if np.isnan(v) and not e.has_nan:
            raise TileValueError(f"NaN cannot be represented in a finite-only float format "
                                 f"({dtype.name}; got {value})")
    if has_encoded_bits(dtype.elem):          # e2m1, e5m3: float32 values, rounded here
        return np.array(round_float(float(value), dtype.elem), dtype=np.float32)
    return np.array(value, dtype=dtype.numpy)


def constant(ctx, value, dtype: DType, shape=()) -> Tile:
    arr = literal_array(value, dtype)
    v = ctx.b.value("constant", value=DenseValue(dtype.elem, arr),
                    result_types=[TileType(tuple(shape), dtype.elem)])
    return Tile(v, dtype)


def is_number(x) -> bool:
    return isinstance(x, Number)


def as_tile(ctx, x, like: DType | None = None) -> Tile:
    """A Tile for `x`: tiles pass through, Python numbers become 0-d constants."""
    if isinstance(x, Tile):
        return x
    if is_number(x):
        return constant(ctx, x, literal_dtype(_py(x), like))
    raise TileTypeError(f"expected a tile or a number (got {type_name(x)})")


ARITHMETIC_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


def arithmetic_tile(ctx, x, what: str) -> Tile:
    """`x` as a tile a reduction or scan can add and compare (`what`: "reduction", "prefix
    scans"): a bool tile becomes int32 (cuTile's rule), an fp8/fp4/tf32 tile is refused."""
    t = as_tile(ctx, x)
    if t.dtype.is_bool:
        return convert(ctx, t, _INT32)
    if t.dtype.is_float and t.dtype.name not in ARITHMETIC_FLOATS:
        raise TileTypeError(f"Non-arithmetic dtype {t.dtype.name} is unsupported for {what} "
                            f"(convert it with astype() to float16, bfloat16 or float32 first)")
    return t


def _py(x):
    return x.item() if isinstance(x, (np.number, np.bool_)) else x


# ---------------------------------------------------------------------------- conversions
def convert(ctx, t: Tile, dtype: DType, rounding_mode: str | None = None) -> Tile:
    """Numeric conversion of a tile to `dtype` (Python/numpy `astype` meaning)."""
    src = t.dtype
    if src == dtype:
        return t
    b = ctx.b
    out_t = t.type.with_elem(dtype.elem)
    se, de = src.elem, dtype.elem
    if dtype.is_bool:
        zero = (constant(ctx, 0, src, t.shape) if t.shape == ()
                else broadcast(ctx, constant(ctx, 0, src), t.shape))
        if src.is_float:
            v = b.value("cmpf", t.value, zero.value, comparison_predicate="not_equal",
                        comparison_ordering="unordered")
        else:
            v = b.value("cmpi", t.value, zero.value, comparison_predicate="not_equal",
                        signedness="signed")
        return Tile(v, dtype)
    if src.is_float and dtype.is_float:
        v = b.value("ftof", t.value, rounding_mode=rounding_mode, result_types=[out_t])
    elif src.is_float:
        v = b.value("ftoi", t.value, signedness=_sign(dtype), result_types=[out_t])
    elif dtype.is_float:
        v = b.value("itof", t.value, signedness=_sign(src), rounding_mode=rounding_mode,
                    result_types=[out_t])
    elif se == de:
        return Tile(t.value, dtype)            # signedness change only: same bits
    elif de.bits > se.bits:
        v = b.value("exti", t.value, signedness=_sign(src), result_types=[out_t])
    else:
        v = b.value("trunci", t.value, result_types=[out_t])
    return Tile(v, dtype)


def _sign(d: DType) -> str:
    return "signed" if d.signed and not d.is_bool else "unsigned"


def signedness(d: DType) -> str:
    return _sign(d)


# --------------------------------------------------------------------------- broadcasting
def broadcast_shapes(*shapes) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            raise TileTypeError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be "
                                f"broadcast together")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcasts_to(src, shape) -> bool:
    """Does a tile of shape `src` broadcast to `shape` (numpy's rule, never widening it)?"""
    try:
        return len(src) <= len(shape) and broadcast_shapes(src, shape) == tuple(shape)
    except TileTypeError:
        return False


def reshape(ctx, t: Tile, shape) -> Tile:
    shape = tuple(shape)
    if t.shape == shape:
        return t
    v = ctx.b.value("reshape", t.value, result_types=[t.type.with_shape(shape)])
    return Tile(v, t.dtype)


def broadcast(ctx, t: Tile, shape) -> Tile:
    """numpy-style broadcast of `t` to `shape`: reshape to the rank, then `broadcast`."""
    shape = tuple(shape)
    if t.shape == shape:
        return t
    if not broadcasts_to(t.shape, shape):
        raise TileTypeError(f"Shape {t.shape} is not broadcastable to {shape}")
    t = reshape(ctx, t, (1,) * (len(shape) - len(t.shape)) + t.shape)
    if t.shape == shape:
        return t
    v = ctx.b.value("broadcast", t.value, result_types=[t.type.with_shape(shape)])
    return Tile(v, t.dtype)


# ------------------------------------------------------------------------------ operands
def constant_scalar(t):
    """The number a 0-d tile made by a `constant` op holds (a strictly typed constant such as
    `ct.int16(2)`: types whose storage is the value), else None."""
    op = getattr(getattr(t, "value", None), "op", None) if isinstance(t, Tile) else None
    if op is None or op.name != "constant" or t.ndim != 0 or \
            t.dtype.elem.name not in ("i1", "i8", "i16", "i32", "i64", "f16", "f32", "f64"):
        return None
    v = op.attrs["value"].array
    return v.item() if v.ndim == 0 else None


def common_dtype(xs) -> DType:
    """Promotion of the operands: tiles by the table, literals adapt to the tiles (cuTile)."""
    tiles = [x for x in xs if isinstance(x, Tile)]
    if not tiles:
        d = None
        for x in xs:
            ld = literal_dtype(_py(x), None)
            d = ld if d is None else promote(d, ld)
        return d
    d = tiles[0].dtype
    for t in tiles[1:]:
        d = promote(d, t.dtype)
    for x in xs:
        if not isinstance(x, Tile):
            d = promote(d, literal_dtype(_py(x), d))
    return d


def operands(ctx, *xs, dtype: DType | None = None) -> tuple[list[Tile], DType]:
    """Promote and broadcast `xs` to a common dtype (or `dtype`) and shape."""
    for x in xs:
        if not isinstance(x, Tile) and not is_number(x):
            raise TileTypeError(f"expected a tile or a number (got {type_name(x)})")
    d = dtype or common_dtype(xs)
    tiles = [convert(ctx, x, d) if isinstance(x, Tile) else constant(ctx, x, d) for x in xs]
    shape = broadcast_shapes(*(t.shape for t in tiles))
    return [broadcast(ctx, t, shape) for t in tiles], d


def emit(ctx, opname: str, *tiles: Tile, dtype: DType, **attrs) -> Tile:
    v = ctx.b.value(opname, *(t.value for t in tiles), **attrs)
    return Tile(v, dtype)


def _what_dtype(x) -> str:
    if isinstance(x, (type, np.dtype)) or type(x).__module__ == "torch":
        return f"{x!s}, which has no tilepy dtype"
    return type_name(x)


def check_dtype(ctx, x, what: str) -> DType:
    """A builtin's `dtype` argument: a tilepy dtype, or a numpy/torch dtype object (as cuTile
    takes them); an error points at the argument."""
    d = foreign(x)
    if d is None:
        with ctx.arg("dtype"):
            lead = f"{invalid_argument(what)}Expected a dtype constant: " \
                if invalid_argument(what) else ""
            raise TileTypeError(f"{lead}{what} must be a dtype such as tilepy.float32, np.float32 "
                                f"or torch.float32 (got {_what_dtype(x)})")
    return d


def shape_tuple(x, what: str = "shape") -> tuple[int, ...]:
    """A constant shape: an int or a tuple of ints. `what`: "fn() param" or a description."""
    if isinstance(x, int) and not isinstance(x, bool):
        x = (x,)
    if not isinstance(x, tuple):
        kind = "a runtime tile" if isinstance(x, Tile) else type_name(x)
        raise TileTypeError(_not_constant(what, isinstance(x, Tile)) +
                            f"{what} must be a compile-time constant tuple of ints (got {kind})")
    for i, d in enumerate(x):
        if not isinstance(d, int) or isinstance(d, bool):
            kind = "a runtime tile" if isinstance(d, Tile) else f"{d!r} ({type_name(d)})"
            lead = _not_constant(what, True) if isinstance(d, Tile) else \
                f"{invalid_argument(what)}Expected a tuple of integers, but element #{i} has " \
                f"type {value_type(d)}: " if invalid_argument(what) else ""
            raise TileTypeError(lead +
                                f"{what} must be a compile-time constant tuple of ints (element "
                                f"{i} is {kind})")
    return x


def _not_constant(what: str, runtime: bool) -> str:
    """cuTile's lead for a shape that is a run-time value ('Invalid argument "shape" of full():
    Expected a constant integer tuple, ...'); "" for other kinds of bad shapes."""
    if not runtime or not invalid_argument(what):
        return ""
    return f"{invalid_argument(what)}Expected a constant integer tuple, but given value is not " \
           f"constant: "


def tile_shape(x, what: str = "shape") -> tuple[int, ...]:
    """A constant shape for a tile: ints, powers of two (cuTile's words, then tilepy's)."""
    shape = shape_tuple(x, what)
    for i, d in enumerate(shape):
        if d <= 0 or d & (d - 1):
            rule = "positive" if d <= 0 else "a power of two"
            raise TileTypeError(f"{invalid_argument(what)}Dimension #{i} of shape {shape} is not "
                                f"{rule} ({what} {shape} is not a valid tile shape: Result tile "
                                f"shape must be power of 2)")
    return shape

