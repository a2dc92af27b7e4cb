"""Reductions and scans with combiner regions: `reduce`/`scan` with a Python combiner,
`argmax`/`argmin` (one `reduce` over a value tile and an index tile), `cumsum`/`cumprod`.

A combiner runs on 0-d tiles inside the op's region; a Python combiner is traced there (it may
read 0-d tiles of the kernel, as cuTile's, but not its arrays). Combiners are called as
`func(*accumulators, *elements)` (a left fold: `func(func(identity, x0), x1)`).
"""
from __future__ import annotations

import ast

import numpy as np

from ...errors import TileTypeError, TileValueError, at
from ...ir import Block, DenseValue, Region
from ...types import TileType, scalar_tile
from ...types import dtype as D
from .. import api
from ..promotion import can_cast_implicitly
from ..values import Tile, type_name
from .arith import _float_modifiers
from .registry import impl, require_constant
from .semantics import arithmetic_tile, as_tile, broadcast, broadcast_shapes, constant, convert, emit, \
    literal_array, reshape


def _identity(t: Tile, value) -> DenseValue:
    if isinstance(value, Tile) or not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise TileTypeError(f"the identity must be a constant number (got {type_name(value)})")
    return DenseValue(t.dtype.elem, literal_array(value, t.dtype))


def _fit_result(ctx, r, like: Tile, what: str) -> Tile:
    """A combiner's result as a 0-d tile of the operand's dtype."""
    if not isinstance(r, Tile):
        if isinstance(r, (bool, int, float)):
            return constant(ctx, r, like.dtype)
        raise TileTypeError(f"the combiner of {what}() must return 0-d tiles (got {type_name(r)})")
    if r.ndim != 0:
        raise TileTypeError(f"the combiner of {what}() must return 0-d tiles (got {r})")
    if r.dtype != like.dtype:
        if not can_cast_implicitly(r.dtype, like.dtype):
            raise TileTypeError(f"the combiner of {what}() returns {r.dtype.name} for "
                                f"{like.dtype.name} operands; convert it with astype()")
        r = convert(ctx, r, like.dtype)
    return r


def region_op(ctx, name, tiles, combine, identities, what, **attrs) -> list[Tile]:
    """A `reduce` or `scan` op over same-shaped `tiles`; `combine(accs, elems)` builds the region."""
    types, hints = [], []
    for i, t in enumerate(tiles):
        types += [scalar_tile(t.dtype.elem)] * 2
        hints += [f"x{i}", f"acc{i}"] if len(tiles) > 1 else ["x", "acc"]
    blk = Block(types, hints)
    with ctx.b.at_end(blk), ctx.combiner_body("reduction" if name == "reduce" else name):
        elems = [Tile(blk.args[2 * i], t.dtype) for i, t in enumerate(tiles)]
        accs = [Tile(blk.args[2 * i + 1], t.dtype) for i, t in enumerate(tiles)]
        rs = combine(accs, elems)
        for o in blk.ops:
            if o.opdef.memory_effect:
                with at(o.loc):
                    ctx.refuse_in_body("memory", f" (got '{o.name}')")
        rs = list(rs) if isinstance(rs, (tuple, list)) else [rs]
        with at(getattr(combine, "loc", None)):      # a lambda's errors point at its body
            if len(rs) != len(tiles):
                raise TileTypeError(f"the combiner of {what}() must return {len(tiles)} value(s) "
                                    f"(got {len(rs)})")
            rs = [_fit_result(ctx, r, t, what) for r, t in zip(rs, tiles)]
        for o in blk.ops:
            shaped = [r.type for r in o.results if isinstance(r.type, TileType) and r.type.rank]
            if shaped:          # it read a tile of the kernel, not one element of it
                with at(o.loc):
                    raise TileTypeError(f"the combiner of {what}() computes on 0-d tiles only "
                                        f"(got '{o.name}' -> {shaped[0]})")
        ctx.b.create("yield", [r.value for r in rs])
    op = ctx.b.create(name, [t.value for t in tiles], identities=identities,
                      regions=[Region([blk])], **attrs)
    return [Tile(r, t.dtype) for r, t in zip(op.results, tiles)]


def _axis(axis, ndim: int, what: str) -> int:
    a = require_constant(axis, f"{what}() axis")
    if not -ndim <= a < ndim:
        raise TileValueError(f"{what}(): axis {a} is out of range for a tile of rank {ndim}")
    return a % ndim


def _tiles(ctx, x, what: str) -> tuple[list[Tile], bool]:
    single = not isinstance(x, tuple)
    xs = [x] if single else list(x)
    if not xs:
        raise TileTypeError(f"{what}() needs at least one tile")
    tiles = [as_tile(ctx, v) for v in xs]
    shape = broadcast_shapes(*(t.shape for t in tiles))
    return [broadcast(ctx, t, shape) for t in tiles], single


def _identities(tiles, identity, what):
    ids = identity if isinstance(identity, tuple) else (identity,)
    if len(ids) != len(tiles):
        raise TileTypeError(f"{what}(): {len(tiles)} tile(s) need {len(tiles)} identities "
                            f"(got {len(ids)})")
    return [_identity(t, i) for t, i in zip(tiles, ids)]


def _user_combiner(ctx, func, what):
    from ..names import LocalFunction

    def combine(accs, elems):
        return ctx.tracer.call_combiner(func, [*accs, *elems], what)
    if isinstance(func, LocalFunction) and isinstance(func.node, ast.Lambda):
        combine.loc = func.tracer.loc(func.node.body)
    return combine


@impl(api.reduce)
def reduce_(ctx, x, axis, func, identity, *, keepdims=False):
    tiles, single = _tiles(ctx, x, "reduce")
    dim = _axis(axis, tiles[0].ndim, "reduce")
    ids = _identities(tiles, identity, "reduce")
    out = region_op(ctx, "reduce", tiles, _user_combiner(ctx, func, "reduce"), ids, "reduce",
                    dim=dim)
    if keepdims:
        shape = tiles[0].shape[:dim] + (1,) + tiles[0].shape[dim + 1:]
        out = [reshape(ctx, t, shape) for t in out]
    return out[0] if single else tuple(out)


@impl(api.scan)
def scan(ctx, x, axis, func, identity, *, reverse=False):
    tiles, single = _tiles(ctx, x, "scan")
    dim = _axis(axis, tiles[0].ndim, "scan")
    ids = _identities(tiles, identity, "scan")
    out = region_op(ctx, "scan", tiles, _user_combiner(ctx, func, "scan"), ids, "scan", dim=dim,
                    reverse=bool(require_constant(reverse, "scan() reverse", (bool,))))
    return out[0] if single else tuple(out)


def _cumulative(ctx, x, axis, reverse, rounding_mode, flush_to_zero, fop, iop, ident, what):
    t = arithmetic_tile(ctx, x, "prefix scans")
    if t.ndim == 0:
        return t
    dim = _axis(axis, t.ndim, what)

    def comb(accs, elems):
        a, e = accs[0], elems[0]
        if a.dtype.is_float:
            return emit(ctx, fop, a, e, dtype=a.dtype,
                        **_float_modifiers(fop, a.dtype, rounding_mode, flush_to_zero))
        return emit(ctx, iop, a, e, dtype=a.dtype)
    rev = bool(require_constant(reverse, f"{what}() reverse", (bool,)))
    return region_op(ctx, "scan", [t], comb, [_identity(t, ident)], what, dim=dim, reverse=rev)[0]


@impl(api.cumsum)
def cumsum(ctx, x, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False):
    return _cumulative(ctx, x, axis, reverse, rounding_mode, flush_to_zero, "addf", "addi", 0,
                       "cumsum")


@impl(api.cumprod)
def cumprod(ctx, x, axis=0, *, reverse=False, rounding_mode=None, flush_to_zero=False):
    return _cumulative(ctx, x, axis, reverse, rounding_mode, flush_to_zero, "mulf", "muli", 1,
                       "cumprod")


# ------------------------------------------------------------------------------ argmax/argmin
def _isnan(ctx, t):
    return emit(ctx, "cmpf", t, t, dtype=D.bool_, comparison_predicate="not_equal",
                comparison_ordering="unordered")


def _arg_combiner(ctx, largest: bool, propagate_nan: bool):
    """Combine (value, index) pairs: the better value wins, ties go to the smaller index.
    NaN ranks above everything with propagate_nan, below everything without."""
    pred = "greater_than" if largest else "less_than"

    def b(op, *xs):
        return emit(ctx, op, *xs, dtype=D.bool_)

    def comb(accs, elems):
        (av, ai), (xv, xi) = accs, elems
        if xv.dtype.is_float:
            nx, na = _isnan(ctx, xv), _isnan(ctx, av)
            wins = emit(ctx, "cmpf", xv, av, dtype=D.bool_, comparison_predicate=pred,
                        comparison_ordering="ordered")
            not_a = b("xori", na, constant(ctx, True, D.bool_))
            not_x = b("xori", nx, constant(ctx, True, D.bool_))
            nan_wins = b("andi", nx, not_a) if propagate_nan else b("andi", not_x, na)
            better = b("ori", wins, nan_wins)
            same = b("ori", emit(ctx, "cmpf", xv, av, dtype=D.bool_, comparison_predicate="equal",
                                 comparison_ordering="ordered"), b("andi", nx, na))
        else:
            sign = "signed" if xv.dtype.signed else "unsigned"
            better = emit(ctx, "cmpi", xv, av, dtype=D.bool_, comparison_predicate=pred,
                          signedness=sign)
            same = emit(ctx, "cmpi", xv, av, dtype=D.bool_, comparison_predicate="equal",
                        signedness=sign)
        first = emit(ctx, "cmpi", xi, ai, dtype=D.bool_, comparison_predicate="less_than",
                     signedness="signed")
        take = b("ori", better, b("andi", same, first))
        return (emit(ctx, "select", take, xv, av, dtype=av.dtype),
                emit(ctx, "select", take, xi, ai, dtype=ai.dtype))
    return comb


def _worst(dtype, largest: bool, propagate_nan: bool):
    if dtype.is_float:
        return float("nan") if not propagate_nan else float("-inf") if largest else float("inf")
    info = np.iinfo(dtype.numpy)
    return int(info.min if largest else info.max)


def _argext(ctx, x, axis, keepdims, propagate_nan, largest, what):
    t = as_tile(ctx, x)
    if t.dtype.is_bool:
        t = convert(ctx, t, D.int8)
    shape = t.shape
    if axis is None:
        t = reshape(ctx, t, (t.type.numel,))
        dim = 0
    else:
        if isinstance(axis, tuple):
            raise TileTypeError(f"{what}() reduces over one axis (a tuple of axes is not supported)")
        dim = _axis(axis, t.ndim, what)
    if t.ndim == 0:
        return constant(ctx, 0, D.int32)
    n = t.shape[dim]
    iota = Tile(ctx.b.value("iota", result_types=[TileType((n,), D.int32.elem)]), D.int32)
    idx = broadcast(ctx, reshape(ctx, iota, tuple(n if i == dim else 1 for i in range(t.ndim))),
                    t.shape)
    ids = [DenseValue(t.dtype.elem, literal_array(_worst(t.dtype, largest, propagate_nan), t.dtype)),
           DenseValue(D.int32.elem, literal_array(2**31 - 1, D.int32))]
    _, out = region_op(ctx, "reduce", [t, idx], _arg_combiner(ctx, largest, bool(propagate_nan)),
                       ids, what, dim=dim)
    if keepdims:
        out = reshape(ctx, out, (1,) * len(shape) if axis is None else
                      shape[:dim] + (1,) + shape[dim + 1:])
    return out


@impl(api.argmax)
def argmax(ctx, x, axis=None, *, keepdims=False, propagate_nan=False):
    return _argext(ctx, x, axis, keepdims, propagate_nan, True, "argmax")


@impl(api.argmin)
def argmin(ctx, x, axis=None, *, keepdims=False, propagate_nan=False):
    return _argext(ctx, x, axis, keepdims, propagate_nan, False, "argmin")
