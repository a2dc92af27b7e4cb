"""Reductions (sum, prod, max, min) as Tile IR `reduce` ops with a combiner region, and mma."""
from __future__ import annotations

import numpy as np

from ...errors import TileTypeError, TileValueError
from ...ir import Block, DenseValue, Region
from ...ir.ops import MMAF_TYPES
from ...ir.ops_core import SCALED_KINDS, scale_block
from ...types import DType, scalar_tile
from ...types import dtype as D
from .. import api
from ..values import Tile, type_name
from .arith import _float_modifiers
from .registry import impl, require_constant
from ..promotion import promote
from .semantics import (arithmetic_tile, as_tile, broadcast, broadcast_shapes, constant, convert,
                        emit, literal_array, reshape)


def reduce_dim(ctx, t: Tile, dim: int, combine, identity) -> Tile:
    """One `reduce` op over `dim`; `combine(elem, acc)` builds the combiner on 0-d tiles."""
    blk = Block([scalar_tile(t.dtype.elem)] * 2, ["x", "acc"])
    with ctx.b.at_end(blk), ctx.combiner_body("reduction"):
        r = combine(Tile(blk.args[0], t.dtype), Tile(blk.args[1], t.dtype))
        ctx.b.create("yield", [r.value])
    op = ctx.b.create("reduce", [t.value], dim=dim,
                      identities=[DenseValue(t.dtype.elem, literal_array(identity, t.dtype))],
                      regions=[Region([blk])])
    return Tile(op.results[0], t.dtype)


def _axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        a = require_constant(a, "axis")
        if not -ndim <= a < ndim:
            raise TileValueError(f"axis {a} is out of range for a tile of rank {ndim}")
        out.append(a % ndim)
    for i, a in enumerate(out):
        if a in out[:i]:
            raise TileTypeError(f"Repeated reduction axis {a} in axis={axis}")
    return tuple(sorted(out))


def reduce_axes(ctx, x, axis, keepdims, combine, identity_of, fn: str = "reduction") -> Tile:
    require_constant(keepdims, f"{fn}() keepdims", (bool,))
    t = as_tile(ctx, x)
    shape = t.shape
    axes = _axes(axis, t.ndim)
    if not axes:
        return t
    for a in reversed(axes):                   # highest first keeps lower axis numbers valid
        t = reduce_dim(ctx, t, a, combine, identity_of(t.dtype))
    if keepdims:
        t = reshape(ctx, t, tuple(1 if i in axes else d for i, d in enumerate(shape)))
    return t


def _extreme(dtype: DType, largest: bool):
    if dtype.is_float:
        return float("inf") if largest else float("-inf")
    info = np.iinfo(dtype.numpy)
    return int(info.max if largest else info.min)


@impl(api.sum)
def sum_(ctx, x, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
    t = arithmetic_tile(ctx, x, "reduction")
    def add(a, b):
        if a.dtype.is_float:
            return emit(ctx, "addf", a, b, dtype=a.dtype,
                        **_float_modifiers("addf", a.dtype, rounding_mode, flush_to_zero))
        return emit(ctx, "addi", a, b, dtype=a.dtype)
    return reduce_axes(ctx, t, axis, keepdims, add, lambda d: 0, "sum")


@impl(api.prod)
def prod(ctx, x, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
    t = arithmetic_tile(ctx, x, "reduction")
    def mul(a, b):
        if a.dtype.is_float:
            return emit(ctx, "mulf", a, b, dtype=a.dtype,
                        **_float_modifiers("mulf", a.dtype, rounding_mode, flush_to_zero))
        return emit(ctx, "muli", a, b, dtype=a.dtype)
    return reduce_axes(ctx, t, axis, keepdims, mul, lambda d: 1, "prod")


def _minmax(ctx, x, axis, keepdims, flush_to_zero, propagate_nan, largest):
    t = arithmetic_tile(ctx, x, "reduction")
    fop, iop = ("maxf", "maxi") if largest else ("minf", "mini")
    def comb(a, b):
        if a.dtype.is_float:
            return emit(ctx, fop, a, b, dtype=a.dtype, **_float_modifiers(
                fop, a.dtype, None, flush_to_zero, propagate_nan))
        return emit(ctx, iop, a, b, dtype=a.dtype,
                    signedness="signed" if a.dtype.signed else "unsigned")
    return reduce_axes(ctx, t, axis, keepdims, comb, lambda d: _extreme(d, not largest),
                       "max" if largest else "min")


@impl(api.max)
def max_(ctx, x, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):
    return _minmax(ctx, x, axis, keepdims, flush_to_zero, propagate_nan, True)


@impl(api.min)
def min_(ctx, x, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):
    return _minmax(ctx, x, axis, keepdims, flush_to_zero, propagate_nan, False)


# ---------------------------------------------------------------------------------- matmul
def _mm_tile(x, what, min_rank=2) -> Tile:
    if not isinstance(x, Tile):
        raise TileTypeError(f"mma(): {what} must be a tile (got {type_name(x)})")
    if not min_rank <= x.ndim <= 3:
        ranks = "2D or 3D" if min_rank == 2 else f"{min_rank}D to 3D"
        raise TileTypeError(f"Expect shape of `{what}` to be {ranks}, got {x.shape}")
    return x


def _mm_shapes(xs, ys):
    """cuTile's matmul shape rule: 1-d x is (1, K), 1-d y is (K, 1); the batch dimensions
    broadcast. (x shape, y shape, accumulator shape) after broadcasting; None if they do not
    form a product or the batch has more than one dimension (Tile IR mma is 2-d or 3-d)."""
    xs = (1,) + xs if len(xs) == 1 else xs
    ys = ys + (1,) if len(ys) == 1 else ys
    if xs[-1] != ys[-2]:
        return None
    try:
        batch = broadcast_shapes(xs[:-2], ys[:-2])
    except TileTypeError:
        return None
    if len(batch) > 1:
        return None
    return batch + xs[-2:], batch + ys[-2:], batch + (xs[-2], ys[-1])


def _mm_operands(ctx, a, b, c_shape=None):
    shapes = _mm_shapes(a.shape, b.shape)
    if shapes is None or (c_shape is not None and shapes[2] != c_shape):
        acc = "" if c_shape is None else f" + {c_shape}"
        raise TileTypeError(f"mma(): shapes {a.shape} @ {b.shape}{acc} do not form a matrix "
                            f"multiplication (expected [B]xMxK @ [B]xKxN + [B]xMxN, the batch "
                            f"dimension broadcast)")
    if b.ndim == 1:
        b = reshape(ctx, b, b.shape + (1,))
    return broadcast(ctx, a, shapes[0]), broadcast(ctx, b, shapes[1]), shapes[2]


@impl(api.mma)
def mma(ctx, x, y, acc, *, use_fast_acc=False):
    a, b, c = _mm_tile(x, "x"), _mm_tile(y, "y"), _mm_tile(acc, "acc")
    a, b, _ = _mm_operands(ctx, a, b, c.shape)
    # use_fast_acc: cuTile's rule (fp8 inputs only); on fp8 it permits a less precise sum, and
    # tilepy sums as without it
    if require_constant(use_fast_acc, "mma() use_fast_acc", (bool,)) and \
            a.dtype not in (D.float8_e4m3fn, D.float8_e5m2):
        raise TileTypeError(f"mma(): use_fast_acc is only supported for fp8 input dtypes "
                            f"(float8_e4m3fn, float8_e5m2), got {a.dtype.name}")
    if a.dtype.is_int and b.dtype.is_int and a.dtype.bits == b.dtype.bits == 8:
        if c.dtype != D.int32:
            raise TileTypeError(f"mma(): int8 inputs accumulate into int32 (got {c.dtype.name})")
        v = ctx.b.value("mmai", a.value, b.value, c.value,
                        signedness_lhs="signed" if a.dtype.signed else "unsigned",
                        signedness_rhs="signed" if b.dtype.signed else "unsigned")
        return Tile(v, c.dtype)
    if a.dtype != b.dtype:
        raise TileTypeError(f"mma(): x and y must have the same dtype (got {a.dtype.name} and "
                            f"{b.dtype.name})")
    allowed = MMAF_TYPES.get(a.dtype.elem)
    if allowed is None or not a.dtype.is_float:
        raise TileTypeError(f"mma(): {a.dtype.name} inputs are not supported")
    if c.dtype.elem not in allowed:
        names = " or ".join(str(D.default_signed(e)) for e in allowed)
        raise TileTypeError(f"mma(): {a.dtype.name} inputs accumulate into {names} "
                            f"(got acc of {c.dtype.name})")
    return Tile(ctx.b.value("mmaf", a.value, b.value, c.value), c.dtype)


@impl(api.mma_scaled)
def mma_scaled(ctx, x, x_scale, y, y_scale, acc):
    """cuTile's table (ir/ops_core.SCALED_KINDS): fp8 with e8m0 scales per 32 elements of K,
    fp4 with e8m0 (16, 32), e4m3 (16) or e5m3 (16, 32) scales; the block size is K / the scales'
    K extent."""
    a, b, c = _mm_tile(x, "x"), _mm_tile(y, "y"), _mm_tile(acc, "acc")
    sa, sb = _mm_tile(x_scale, "x_scale"), _mm_tile(y_scale, "y_scale")
    if b.dtype != a.dtype:
        raise TileTypeError(f"x and y must have the same dtype, got {a.dtype} and {b.dtype}")
    if sb.dtype != sa.dtype:
        raise TileTypeError(f"x_scale and y_scale must have the same dtype, got {sa.dtype} and "
                            f"{sb.dtype}")
    kinds = SCALED_KINDS.get(a.dtype.elem)
    if kinds is None:
        names = ", ".join(str(D.default_signed(e)) for e in SCALED_KINDS)
        raise TileTypeError(f"Unsupported input dtype {a.dtype} for mma_scaled, supported input "
                            f"dtypes are {names}")
    blocks = kinds.get(sa.dtype.elem)
    if blocks is None:
        names = ", ".join(str(D.default_signed(e)) for e in kinds)
        raise TileTypeError(f"Unsupported scale dtype {sa.dtype} for input dtype {a.dtype}, "
                            f"supported scale dtypes are {names}")
    if c.dtype != D.float32:
        raise TileTypeError(f"Unsupported acc dtype {c.dtype} for mma_scaled, expected "
                            f"{D.float32}")
    block = None
    for t, s, ax, name in ((a, sa, -1, "x"), (b, sb, -2, "y")):
        k_axis = ax % len(t.shape)
        if len(s.shape) != len(t.shape) or \
                any(i != k_axis and m != n for i, (m, n) in enumerate(zip(t.shape, s.shape))):
            raise TileTypeError(f"{name}_scale shape {s.shape} is not compatible with {name} "
                                f"shape {t.shape}. All dimensions except K axis {k_axis} must "
                                f"match")
        size = scale_block(t.shape[k_axis], s.shape[k_axis])
        if size not in blocks or block not in (None, size):
            sizes = blocks if block is None else (block,)
            want = " or ".join(str(t.shape[:k_axis] + (t.shape[k_axis] // bs,) +
                                   t.shape[k_axis + 1:]) for bs in sizes)
            raise TileTypeError(
                f"For mma_scaled with dtype={a.dtype}, scale_dtype={sa.dtype}: {name}.shape"
                f"[{k_axis}] must be an exact multiple of {name}_scale.shape[{k_axis}] with "
                f"scaling block size B = K // K_s in {set(sizes)}, got {name}.shape[{k_axis}] "
                f"= {t.shape[k_axis]} and {name}_scale.shape[{k_axis}] = {s.shape[k_axis]} "
                f"(expected {name}_scale shape {want})")
        block = size
    a, b, _ = _mm_operands(ctx, a, b, c.shape)
    batch = a.shape[:-2]
    sa, sb = broadcast(ctx, sa, batch + sa.shape[-2:]), broadcast(ctx, sb, batch + sb.shape[-2:])
    return Tile(ctx.b.value("mmaf_scaled", a.value, b.value, c.value, sa.value, sb.value), c.dtype)


@impl(api.matmul)
def matmul(ctx, x, y):
    """x @ y (cuTile's rule: 1-d operands, broadcast batch), accumulated as mma() does."""
    a, b = _mm_tile(x, "x", 1), _mm_tile(y, "y", 1)
    d = promote(a.dtype, b.dtype)
    if not d.is_float and d not in (D.int8, D.uint8):
        raise TileTypeError(f"matmul(): Unsupported input dtype {d.name} (matmul takes float, int8 "
                            f"and uint8 tiles; convert with astype())")
    a2, b2, acc_shape = _mm_operands(ctx, convert(ctx, a, d), convert(ctx, b, d))
    if not d.is_float:            # int8/uint8: summed in int32, converted back (wrapping), as cuTile
        acc_dtype = D.int32
    else:
        acc_dtype = d if d.elem in MMAF_TYPES.get(d.elem, ()) else D.float32
    acc = broadcast(ctx, constant(ctx, 0, acc_dtype), acc_shape)
    r = convert(ctx, mma(ctx, a2, b2, acc), d)
    out = acc_shape[:-2] + (() if a.ndim == 1 else acc_shape[-2:-1]) + \
        (() if b.ndim == 1 else acc_shape[-1:])
    return r if r.shape == out else reshape(ctx, r, out)
